"""Vectorised catalog synthesis: product families expanded into sellable variants.

All sampling is numpy over index arrays; strings are assembled by polars from the vocabularies
in `taxonomy.py` / `vocab.py`. One million variants take a few seconds on one core.

A product reads like a shop's: the title is brand + adjective + material + product type, then
the variant and size ("Smith Labs everyday organic cotton crew neck shirt - navy, size M",
"Ruiz house arabica ground coffee - dark roast, 500 g"); the description is built from the
product's own attributes (type, brand, material, variant, size, a category feature). Phrases
that depend on a (category, value) pair are spelled once per vocabulary entry in Python and
gathered by index, so the per-row work stays columnar.

Deliberate traps that make filters matter:
* variants of a family share brand, category, title body and price band but differ in colour/size;
* near-duplicate families copy another family's title body under a different brand;
* some variants are out of stock.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from ecomrlve.catalogs import vocab
from ecomrlve.catalogs.taxonomy import (
    CATEGORIES,
    DEPARTMENT_ADJECTIVES,
    PALETTES,
    SIZE_WORDS,
    VARIANT_WORDS,
    Category,
    fix_articles,
)
from ecomrlve.progress import ProgressEvent, ProgressFn

# SeedSequence stream ids: each consumer of the seed gets its own stream.
CATALOG_STREAM = 1
NEAR_DUPLICATE_SHARE = 0.10
OUT_OF_STOCK_SHARE = 0.12
BRANDS_PER_CATEGORY = 48
# what a description says about the material, per category (default: "Made of {m}.")
MATERIAL_SENTENCES: dict[str, str] = {
    "skincare": "A {m} formula.",
    "fragrance": "Notes of {m}.",
    "coffee": "Made from {m} beans.",
    "tea": "{M} leaves.",
}


def _concat_vocab(groups: list[tuple[str, ...]]) -> tuple[np.ndarray, np.ndarray, pl.Series]:
    """Flatten per-category vocabularies: returns (offsets, lengths, flat series)."""
    lengths = np.array([len(g) for g in groups], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    flat = pl.Series([w for g in groups for w in g], dtype=pl.String)
    return offsets, lengths, flat


def _material_sentence(category: Category, material: str) -> str:
    text = MATERIAL_SENTENCES.get(category.name, "Made of {m}.")
    return text.format(m=material, M=material[:1].upper() + material[1:])


def _size_text(category: Category, size: str) -> str:
    before, after = SIZE_WORDS.get(category.size_system, ("", ""))
    if category.size_system in ("EU", "US"):
        before = f"size {category.size_system} "
    return f"{before}{size}{after}"


def _variant_text(category: Category, value: str) -> str:
    before, after = VARIANT_WORDS[category.variant]
    return fix_articles(f"{before}{value}{after}")


def _pick_local(rng: np.random.Generator, lengths: np.ndarray, skew: float = 1.0) -> np.ndarray:
    """An index in [0, lengths[i]) per row; skew > 1 favours the first entries."""
    u = rng.random(len(lengths)) ** skew
    return np.minimum((u * lengths).astype(np.int64), lengths - 1)


@dataclass(frozen=True)
class _Vocab:
    """One vocabulary of every category laid end to end: category c's entries are
    `flat[offset[c] : offset[c] + length[c]]`."""

    offset: np.ndarray
    length: np.ndarray
    flat: pl.Series

    @classmethod
    def of(cls, groups: list[tuple[str, ...]]) -> _Vocab:
        return cls(*_concat_vocab(groups))


@dataclass(frozen=True)
class _Words:
    """The flat vocabularies of `CATEGORIES`, and the phrases spelled once per (category,
    value), aligned with them."""

    nouns: _Vocab
    materials: _Vocab
    sizes: _Vocab
    palettes: _Vocab
    adjectives: _Vocab
    features: _Vocab
    material_sentence: pl.Series  # aligned with `materials`
    size_text: pl.Series  # aligned with `sizes`
    variant_text: pl.Series  # aligned with `palettes`

    @classmethod
    def of_categories(cls) -> _Words:
        return cls(
            nouns=_Vocab.of([c.nouns for c in CATEGORIES]),
            materials=_Vocab.of([c.materials for c in CATEGORIES]),
            sizes=_Vocab.of([c.sizes for c in CATEGORIES]),
            palettes=_Vocab.of([PALETTES[c.palette] for c in CATEGORIES]),
            adjectives=_Vocab.of([DEPARTMENT_ADJECTIVES[c.department] for c in CATEGORIES]),
            features=_Vocab.of([c.features or ("",) for c in CATEGORIES]),
            material_sentence=pl.Series(
                [_material_sentence(c, m) for c in CATEGORIES for m in c.materials],
                dtype=pl.String,
            ),
            size_text=pl.Series(
                [_size_text(c, v) for c in CATEGORIES for v in c.sizes], dtype=pl.String
            ),
            variant_text=pl.Series(
                [_variant_text(c, v) for c in CATEGORIES for v in PALETTES[c.palette]],
                dtype=pl.String,
            ),
        )


@dataclass(frozen=True)
class _Families:
    """Per family: its category index and its entries' indexes into the flat vocabularies."""

    cat: np.ndarray
    noun: np.ndarray
    material: np.ndarray
    adjective: np.ndarray
    feature: np.ndarray
    template: np.ndarray  # which description template
    brand: np.ndarray  # index into the brand names


@dataclass(frozen=True)
class _Variants:
    """Per item: its family, its colour and size (indexes into the flat vocabularies) and the
    size's position among its category's sizes; `used` families have at least one item."""

    fam: np.ndarray
    color: np.ndarray
    size: np.ndarray
    size_rank: np.ndarray
    used: int


def build_products(n: int, seed: int, progress: ProgressFn | None = None) -> pl.DataFrame:
    """Build `n` sellable variants (one row per item_id), a pure function of (n, seed).

    The steps draw from one generator in a fixed order (families, variants, numbers), so
    their order is part of the catalog's bytes."""
    if n <= 0:
        raise ValueError(f"number of products must be positive, got {n}")
    if seed < 0:
        raise ValueError(f"seed must be >= 0, got {seed}")

    def report(phase: str, fraction: float) -> None:
        if progress:
            progress(ProgressEvent.of(phase, fraction))

    rng = np.random.default_rng(np.random.SeedSequence([seed, CATALOG_STREAM]))
    brands = vocab.brand_names()
    words = _Words.of_categories()
    families = _draw_families(rng, words, n // 3 + 16, len(brands))
    report("families", 0.2)
    variants = _draw_variants(rng, words, families.cat, n)
    report("variants", 0.4)
    numbers = _draw_numbers(rng, families.cat, variants, n)
    report("numbers", 0.6)
    family_rows = _family_frame(words, families, brands, variants.used)
    report("strings", 0.75)
    items = pl.DataFrame(
        {
            "idx": np.arange(n),
            "family_id": variants.fam,
            "color": words.palettes.flat.gather(variants.color),
            "variant_text": words.variant_text.gather(variants.color),
            "size": words.sizes.flat.gather(variants.size),
            "size_text": words.size_text.gather(variants.size),
            **numbers,
        }
    )
    df = items.join(family_rows, on="family_id", how="left", maintain_order="left")
    df = _product_columns(df)
    report("assembled", 1.0)
    return df


def _draw_families(rng: np.random.Generator, words: _Words, n_fam: int, n_brands: int) -> _Families:
    """`n_fam` families: a category each (apparel and footwear weigh 3, the others 2), then
    its words and a Zipf-ish brand of that category; a near duplicate copies the title body of
    the previous family of its category under another brand of that category."""
    weights = np.array([3 if c.department in ("apparel", "footwear") else 2 for c in CATEGORIES])
    cat = rng.choice(len(CATEGORIES), size=n_fam, p=weights / weights.sum())
    noun = words.nouns.offset[cat] + _pick_local(rng, words.nouns.length[cat])
    material = words.materials.offset[cat] + _pick_local(rng, words.materials.length[cat], skew=1.5)
    adjective = words.adjectives.offset[cat] + _pick_local(rng, words.adjectives.length[cat])
    feature = words.features.offset[cat] + _pick_local(rng, words.features.length[cat])
    template = rng.integers(0, 3, n_fam)
    brand_rank = _pick_local(rng, np.full(n_fam, BRANDS_PER_CATEGORY), skew=2.0)  # Zipf-ish
    brand = (cat * 53 + brand_rank) % n_brands

    order = np.argsort(cat, kind="stable")
    dup = np.zeros(n_fam, dtype=bool)
    dup[order[1:]] = (rng.random(n_fam - 1) < NEAR_DUPLICATE_SHARE) & (
        cat[order[1:]] == cat[order[:-1]]
    )
    src = np.empty(n_fam, dtype=np.int64)
    src[order[1:]] = order[:-1]
    dup_idx = np.flatnonzero(dup)
    noun[dup_idx] = noun[src[dup_idx]]
    material[dup_idx] = material[src[dup_idx]]
    adjective[dup_idx] = adjective[src[dup_idx]]
    brand[dup_idx] = (brand[src[dup_idx]] + 1 + rng.integers(0, 5, dup_idx.size)) % n_brands
    return _Families(cat, noun, material, adjective, feature, template, brand)


def _draw_variants(rng: np.random.Generator, words: _Words, cat: np.ndarray, n: int) -> _Variants:
    """The first `n` items of the families in order: each family is its colours (variants) ×
    a window of its category's sizes."""
    n_fam = len(cat)
    pal_len, size_len = words.palettes.length, words.sizes.length
    n_colors = 1 + rng.binomial(2, 0.45, n_fam)
    n_sizes = np.minimum(size_len[cat], 1 + rng.binomial(3, 0.5, n_fam))
    size_start = _pick_local(rng, size_len[cat] - n_sizes + 1)
    # palette position: common colours first; a stride that never wraps onto an earlier
    # variant of the same family (n_colors <= 3, so 2 * stride < palette length)
    color_base = _pick_local(rng, pal_len[cat], skew=1.2)
    max_stride = np.maximum(np.minimum(3, (pal_len[cat] - 1) // 2), 1)
    color_stride = 1 + (rng.random(n_fam) * max_stride).astype(np.int64)
    per_family = n_colors * n_sizes
    ends = np.cumsum(per_family)
    if ends[-1] < n:  # the expected count is ~4 per family; top up in the rare short case
        raise RuntimeError("internal: too few families sampled")
    n_fam_used = int(np.searchsorted(ends, n) + 1)
    fam = np.repeat(np.arange(n_fam_used), per_family[:n_fam_used])[:n]
    within = np.arange(n) - np.concatenate([[0], ends[:-1]])[fam]
    color_local = (color_base[fam] + (within // n_sizes[fam]) * color_stride[fam]) % pal_len[
        cat[fam]
    ]
    color = words.palettes.offset[cat[fam]] + color_local
    size_rank = size_start[fam] + within % n_sizes[fam]
    size = words.sizes.offset[cat[fam]] + size_rank
    return _Variants(fam, color, size, size_rank, n_fam_used)


def _draw_numbers(
    rng: np.random.Generator, cat: np.ndarray, variants: _Variants, n: int
) -> dict[str, np.ndarray]:
    """Price, rating, review count, stock and shipping days per item (columns by name)."""
    n_fam, fam, size_rank = len(cat), variants.fam, variants.size_rank
    median = np.array([c.price_median for c in CATEGORIES])[cat]
    sigma = np.array([c.price_sigma for c in CATEGORIES])[cat]
    base_price = np.exp(np.log(median) + sigma * rng.standard_normal(n_fam))
    step = np.array([c.size_price_step for c in CATEGORIES])[cat]
    price = base_price[fam] * (1.0 + step[fam] * size_rank) * (1.0 + 0.02 * rng.random(n))
    price = np.maximum(np.round(price) - 0.01, 0.99)
    base_rating = np.clip(4.1 + 0.45 * rng.standard_normal(n_fam), 1.0, 5.0)
    rating = np.round(np.clip(base_rating[fam] + 0.08 * rng.standard_normal(n), 1.0, 5.0), 1)
    reviews = np.floor(rng.lognormal(3.5, 1.3, n)).astype(np.int64)
    stock = np.where(rng.random(n) < OUT_OF_STOCK_SHARE, 0, rng.geometric(1 / 40, n))
    ship_lo = np.array([c.ship_days[0] for c in CATEGORIES])[cat]
    ship_hi = np.array([c.ship_days[1] for c in CATEGORIES])[cat]
    ship = rng.integers(ship_lo, ship_hi + 1)[fam] + (rng.random(n) < 0.15)
    return {
        "price": price,
        "rating": rating,
        "review_count": reviews,
        "stock": stock.astype(np.int64),
        "ship_days": ship.astype(np.int64),
    }


def _family_frame(words: _Words, families: _Families, brands: list[str], used: int) -> pl.DataFrame:
    """One row per used family: its words as strings and its title body."""
    fam_cat = families.cat[:used]
    rows = slice(0, used)
    return pl.DataFrame(
        {
            "family_id": pl.Series(np.arange(used)),
            "department": pl.Series([c.department for c in CATEGORIES]).gather(fam_cat),
            "category": pl.Series([c.name for c in CATEGORIES]).gather(fam_cat),
            "brand": pl.Series(brands).gather(families.brand[rows]),
            "adjective": words.adjectives.flat.gather(families.adjective[rows]),
            "material": words.materials.flat.gather(families.material[rows]),
            "material_sentence": words.material_sentence.gather(families.material[rows]),
            "noun": words.nouns.flat.gather(families.noun[rows]),
            "feature": words.features.flat.gather(families.feature[rows]),
            "template": pl.Series(families.template[rows], dtype=pl.Int8),
            "size_system": pl.Series([c.size_system for c in CATEGORIES]).gather(fam_cat),
        }
    ).with_columns(
        title_body=pl.concat_str(
            [pl.col("brand"), pl.col("adjective"), pl.col("material"), pl.col("noun")],
            separator=" ",
        ),
    )


def _description() -> pl.Expr:
    """The description, by the family's template: the product's own attributes in one of
    three orders."""
    brand_c, noun_c, feature_c = pl.col("brand"), pl.col("noun"), pl.col("feature")
    variant_c, size_c, material_c = (
        pl.col("variant_text"),
        pl.col("size_text"),
        pl.col("material_sentence"),
    )
    adjective_cap = pl.col("adjective").str.slice(0, 1).str.to_uppercase() + pl.col(
        "adjective"
    ).str.slice(1)
    descriptions = [
        # "Everyday crew neck shirt from Smith Labs in navy, size M. Made of cotton. Soft..."
        pl.concat_str(
            [adjective_cap, pl.lit(" "), noun_c, pl.lit(" from "), brand_c, pl.lit(" "),
             variant_c, pl.lit(", "), size_c, pl.lit(". "), material_c, pl.lit(" "), feature_c]
        ),
        # "Smith Labs crew neck shirt, size M, in navy. Soft and breathable. Made of cotton."
        pl.concat_str(
            [brand_c, pl.lit(" "), noun_c, pl.lit(", "), size_c, pl.lit(", "), variant_c,
             pl.lit(". "), feature_c, pl.lit(" "), material_c]
        ),
        # "Soft and breathable. Made of cotton. The everyday crew neck shirt by Smith Labs, ..."
        pl.concat_str(
            [feature_c, pl.lit(" "), material_c, pl.lit(" The "), pl.col("adjective"),
             pl.lit(" "), noun_c, pl.lit(" by "), brand_c, pl.lit(", "), variant_c, pl.lit(", "),
             size_c, pl.lit(".")]
        ),
    ]  # fmt: skip
    return (
        pl.when(pl.col("template") == 0)
        .then(descriptions[0])
        .when(pl.col("template") == 1)
        .then(descriptions[1])
        .otherwise(descriptions[2])
        .str.strip_chars()
    )


def _product_columns(df: pl.DataFrame) -> pl.DataFrame:
    """The catalog's columns, in their order, from the joined item and family rows."""
    return df.select(
        item_id=pl.format("I{}", pl.col("idx").cast(pl.String).str.zfill(7)),
        family_id=pl.format("F{}", pl.col("family_id").cast(pl.String).str.zfill(7)),
        department="department",
        category="category",
        brand="brand",
        title=pl.concat_str(
            [
                pl.col("title_body"),
                pl.lit(" - "),
                pl.col("color"),
                pl.lit(", "),
                pl.col("size_text"),
            ]
        ),
        description=_description(),
        color="color",
        size="size",
        size_system="size_system",
        material="material",
        price="price",
        rating="rating",
        review_count="review_count",
        stock="stock",
        in_stock=pl.col("stock") > 0,
        ship_days="ship_days",
        product_type="noun",
    )
