"""Catalog synthesis: determinism, schema and value invariants."""

from __future__ import annotations

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ecomrlve.catalogs import build_catalog, build_policies, build_products
from ecomrlve.catalogs.policies import NON_RETURNABLE, PolicyBook
from ecomrlve.catalogs.taxonomy import CATEGORIES, CATEGORY_BY_NAME
from ecomrlve.store import DataPaths

EXPECTED_COLUMNS = [
    "item_id", "family_id", "department", "category", "brand", "title", "description", "color",
    "size", "size_system", "material", "price", "rating", "review_count", "stock", "in_stock",
    "ship_days", "product_type",
]  # fmt: skip


def test_taxonomy_breadth() -> None:
    assert len(CATEGORIES) >= 12
    departments = {c.department for c in CATEGORIES}
    assert {
        "apparel",
        "footwear",
        "electronics",
        "home",
        "beauty",
        "sports",
        "grocery",
    } <= departments


def test_same_seed_same_bytes_different_seed_differs(tmp_path) -> None:
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    sa = build_catalog(a, 5_000, seed=3)
    sb = build_catalog(b, 5_000, seed=3)
    sc = build_catalog(c, 5_000, seed=4)
    pa, pb, pc = (DataPaths.of(x).products.read_bytes() for x in (a, b, c))
    assert pa == pb
    assert sa.catalog_hash == sb.catalog_hash
    assert pa != pc
    assert sa.catalog_hash != sc.catalog_hash
    assert DataPaths.of(a).policies.read_bytes() == DataPaths.of(b).policies.read_bytes()


def test_exact_count_and_schema() -> None:
    df = build_products(1_234, seed=0)
    assert df.height == 1_234
    assert df.columns == EXPECTED_COLUMNS
    assert df["item_id"].is_unique().all()
    assert df["item_id"].is_sorted()


@settings(max_examples=25, deadline=None)
@given(n=st.integers(min_value=1, max_value=4_000), seed=st.integers(0, 2**32 - 1))
def test_invariants_hold_for_any_seed(n: int, seed: int) -> None:
    df = build_products(n, seed)
    assert df.height == n
    assert (df["price"] > 0).all()
    assert df["rating"].is_between(1.0, 5.0).all()
    assert (df["review_count"] >= 0).all() and (df["stock"] >= 0).all()
    assert (df["in_stock"] == (df["stock"] > 0)).all()
    # every variant of a family shares brand, category and department
    per_family = df.group_by("family_id").agg(
        pl.col("brand").n_unique().alias("b"),
        pl.col("category").n_unique().alias("c"),
        pl.col("department").n_unique().alias("d"),
    )
    assert (per_family["b"] == 1).all() and (per_family["c"] == 1).all()
    assert (per_family["d"] == 1).all()
    # sizes valid for the category, ship days within its range
    for row in df.select("category", "size", "ship_days").unique().iter_rows(named=True):
        category = CATEGORY_BY_NAME[row["category"]]
        assert row["size"] in category.sizes
        lo, hi = category.ship_days
        assert lo <= row["ship_days"] <= hi + 1
    # variants of one family differ by colour/size: (family, colour, size) is unique
    assert df.select("family_id", "color", "size").is_unique().all()


def test_traps_exist() -> None:
    df = build_products(20_000, seed=1)
    assert 0.05 < (~df["in_stock"]).mean() < 0.2
    body = df.with_columns(body=pl.col("title").str.split(" - ").list.first())
    # near duplicates: the same title body under another brand
    bodies = body.with_columns(
        stripped=pl.col("body").str.slice(pl.col("brand").str.len_chars() + 1)
    )
    cross_brand = bodies.group_by("category", "stripped").agg(pl.col("brand").n_unique())
    assert (cross_brand["brand"] > 1).sum() > 100
    # multi-variant families (same brand, another colour or size)
    assert (df.group_by("family_id").len()["len"] > 1).mean() > 0.5


def test_bad_arguments_raise_value_error() -> None:
    with pytest.raises(ValueError, match="positive"):
        build_products(0, seed=0)
    with pytest.raises(ValueError, match="seed"):
        build_products(10, seed=-1)


def test_policy_book_rules() -> None:
    book = PolicyBook(build_policies())
    for category in CATEGORIES:
        for membership in ("standard", "plus"):
            rule = book.return_rule(category.name, membership)
            assert rule.returnable == (category.name not in NON_RETURNABLE)
    std = book.return_rule("t-shirts", "standard").window_days
    plus = book.return_rule("t-shirts", "plus").window_days
    assert plus > std
    assert book.return_eligibility("t-shirts", "standard", std).eligible
    assert not book.return_eligibility("t-shirts", "standard", std + 1).eligible
    assert not book.return_eligibility("coffee", "plus", 0).eligible
    assert book.can_cancel("pending") and not book.can_cancel("shipped")
    with pytest.raises(ValueError, match="no return policy"):
        book.return_rule("spaceships", "standard")


def test_attributes_make_sense_per_category() -> None:
    """Colours from the category's own palette (roast / flavour / scent / skin type where the
    product has no colour), sizes in its own system, the title and description built from the
    product's own attributes."""
    from ecomrlve.catalogs.taxonomy import PALETTES

    df = build_products(6_000, seed=5)
    for category in CATEGORIES:
        rows = df.filter(pl.col("category") == category.name)
        assert set(rows["color"].unique()) <= set(PALETTES[category.palette]), category.name
        assert set(rows["product_type"].unique()) <= set(category.nouns)
    assert (df.filter(pl.col("category") == "coffee")["color"].str.ends_with("roast")).all()
    checks = df.select(
        type_in_title=pl.col("title").str.contains(pl.col("product_type"), literal=True),
        type_in_text=pl.col("description").str.contains(pl.col("product_type"), literal=True),
        brand_in_text=pl.col("description").str.contains(pl.col("brand"), literal=True),
        colour_in_text=pl.col("description").str.contains(pl.col("color"), literal=True),
        size_in_text=pl.col("description").str.contains(pl.col("size"), literal=True),
    )
    assert all(checks[c].all() for c in checks.columns)
    assert not df["title"].str.contains("one size").any()
