"""Catalog synthesis: determinism, schema and value invariants."""

from __future__ import annotations

import re

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ecomrlve.catalogs import (
    CLASSIC_SHOP,
    build_catalog,
    build_policies,
    build_products,
    catalog_hash,
)
from ecomrlve.catalogs.policies import PolicyBook, Shop
from ecomrlve.catalogs.taxonomy import CATEGORIES, CATEGORY_BY_NAME
from ecomrlve.env.shop.products import Catalog
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
    assert DataPaths.of(a).policies.read_bytes() != DataPaths.of(c).policies.read_bytes()


def test_catalog_hash_covers_the_policy_book(tmp_path) -> None:
    """Same products, another book: another world, so another catalog_hash (tasks, caches and
    curricula keyed by it must not mix two shops)."""
    a, b = tmp_path / "a", tmp_path / "b"
    build_catalog(a, 800, seed=3)
    build_catalog(b, 800, seed=3)
    assert catalog_hash(a) == catalog_hash(b)
    build_policies(Shop.for_seed(4)).write_parquet(DataPaths.of(b).policies)
    (DataPaths.of(b).catalog_meta).unlink()  # the recorded hash is gone: computed from files
    assert catalog_hash(b) != catalog_hash(a)
    products = build_products(300, 1)
    one = Catalog.from_frames(products, build_policies(Shop.for_seed(1)))
    two = Catalog.from_frames(products, build_policies(Shop.for_seed(2)))
    assert one.catalog_hash != two.catalog_hash


def test_two_catalog_seeds_give_two_shops_read_from_the_book() -> None:
    """The book varies with the seed (windows, fees, thresholds, final-sale categories, refund
    days, Plus price) and `PolicyBook` reads every rule from the rows, not from constants."""
    shops = [Shop.for_seed(seed) for seed in range(12)]
    assert len({tuple(sorted(s.final_sale)) for s in shops}) > 3
    assert len({s.free_shipping_threshold for s in shops}) > 2
    assert len({s.refund_days for s in shops}) > 2
    assert len({tuple(sorted(s.windows.items())) for s in shops}) == len(shops)
    assert Shop.for_seed(5) == Shop.for_seed(5)
    for shop in shops[:4]:
        book = PolicyBook(build_policies(shop))
        assert book.refund_days == shop.refund_days
        assert book.free_shipping_threshold == shop.free_shipping_threshold
        assert book.express_fee == shop.express_fee and book.plus_price == shop.plus_price
        below = shop.free_shipping_threshold - 0.01
        assert book.shipping_fee(below, "standard") == shop.shipping_fee
        assert book.shipping_fee(shop.free_shipping_threshold, "standard") == 0.0
        assert book.shipping_fee(below, "plus") == 0.0
        for category in CATEGORIES:
            base, extra, fee = shop.windows[category.department]
            final = category.name in shop.final_sale or base == 0
            std = book.return_rule(category.name, "standard")
            plus = book.return_rule(category.name, "plus")
            assert std.returnable == plus.returnable == (not final)
            if not final:
                assert (std.window_days, plus.window_days) == (base, base + extra)
                assert std.restocking_fee == fee
                assert book.return_eligibility(category.name, "standard", base).eligible
                assert not book.return_eligibility(category.name, "standard", base + 1).eligible


def test_every_shop_writes_grammatical_policy_text() -> None:
    """Drawn books read like the hand-written one: sentences, "coffee is" / "boots are",
    whole-dollar amounts without cents, every number in the text the book's own."""
    for seed in range(20):
        shop = Shop.for_seed(seed)
        frame = build_policies(shop)
        for row in frame.iter_rows(named=True):
            text = row["text"]
            assert text[0].isupper() and text.endswith(".") and "  " not in text, text
            assert not re.search(r"\b(coffee|tea|bedding|skincare) are\b", text, re.I), text
            assert not re.search(r"\b(headphones|yoga mats) is\b", text, re.I), text
            assert ".0 " not in text and "$0." not in text, text
        shipping = frame.filter(topic="shipping", membership="standard")["text"][0]
        assert f"${shop.shipping_fee:.2f}" in shipping and f"${shop.express_fee:.2f}" in shipping
        refunds = frame.filter(topic="refunds")["text"][0]
        assert f"{shop.refund_days[0]} to {shop.refund_days[1]} business days" in refunds


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
    book = PolicyBook(build_policies(CLASSIC_SHOP))
    for category in CATEGORIES:
        for membership in ("standard", "plus"):
            rule = book.return_rule(category.name, membership)
            assert rule.returnable == (category.name not in CLASSIC_SHOP.final_sale)
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
