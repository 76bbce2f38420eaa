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


def build_products(n: int, seed: int, progress: ProgressFn | None = None) -> pl.DataFrame:
    """Build `n` sellable variants (one row per item_id), a pure function of (n, seed)."""
    if n <= 0:
        raise ValueError(f"number of products must be positive, got {n}")
    if seed < 0:
        raise ValueError(f"seed must be >= 0, got {seed}")

    def report(phase: str, fraction: float) -> None:
        if progress:
            progress(ProgressEvent.of(phase, fraction))

    rng = np.random.default_rng(np.random.SeedSequence([seed, CATALOG_STREAM]))
    brands = vocab.brand_names()
    n_cat = len(CATEGORIES)

    # ---- families -------------------------------------------------------------------------
    n_fam = n // 3 + 16
    weights = np.array([3 if c.department in ("apparel", "footwear") else 2 for c in CATEGORIES])
    cat = rng.choice(n_cat, size=n_fam, p=weights / weights.sum())
    noun_off, noun_len, noun_flat = _concat_vocab([c.nouns for c in CATEGORIES])
    mat_off, mat_len, mat_flat = _concat_vocab([c.materials for c in CATEGORIES])
    size_off, size_len, size_flat = _concat_vocab([c.sizes for c in CATEGORIES])
    pal_off, pal_len, pal_flat = _concat_vocab([PALETTES[c.palette] for c in CATEGORIES])
    adj_off, adj_len, adj_flat = _concat_vocab(
        [DEPARTMENT_ADJECTIVES[c.department] for c in CATEGORIES]
    )
    feat_off, feat_len, feat_flat = _concat_vocab([c.features or ("",) for c in CATEGORIES])
    # phrases spelled once per (category, value), aligned with the flat vocabularies
    mat_sentence = pl.Series(
        [_material_sentence(c, m) for c in CATEGORIES for m in c.materials], dtype=pl.String
    )
    size_text = pl.Series([_size_text(c, v) for c in CATEGORIES for v in c.sizes], dtype=pl.String)
    variant_text = pl.Series(
        [_variant_text(c, v) for c in CATEGORIES for v in PALETTES[c.palette]], dtype=pl.String
    )

    noun = noun_off[cat] + _pick_local(rng, noun_len[cat])
    material = mat_off[cat] + _pick_local(rng, mat_len[cat], skew=1.5)
    adjective = adj_off[cat] + _pick_local(rng, adj_len[cat])
    feature = feat_off[cat] + _pick_local(rng, feat_len[cat])
    template = rng.integers(0, 3, n_fam)
    brand_rank = _pick_local(rng, np.full(n_fam, BRANDS_PER_CATEGORY), skew=2.0)  # Zipf-ish
    brand = (cat * 53 + brand_rank) % len(brands)

    # Near duplicates: copy the title body of the previous family of the same category,
    # under another brand of that category.
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
    brand[dup_idx] = (brand[src[dup_idx]] + 1 + rng.integers(0, 5, dup_idx.size)) % len(brands)
    report("families", 0.2)

    # ---- variants per family: colours (variants) x a window of sizes -------------------------
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
    color = pal_off[cat[fam]] + color_local
    size_rank = size_start[fam] + within % n_sizes[fam]
    size = size_off[cat[fam]] + size_rank
    report("variants", 0.4)

    # ---- numbers: price, rating, reviews, stock, shipping ----------------------------------
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
    report("numbers", 0.6)

    # ---- strings, assembled column-wise by polars -----------------------------------------
    cat_names = pl.Series([c.name for c in CATEGORIES])
    departments = pl.Series([c.department for c in CATEGORIES])
    systems = pl.Series([c.size_system for c in CATEGORIES])
    brand_s = pl.Series(brands)
    fam_cat = cat[:n_fam_used]
    used = slice(0, n_fam_used)
    families = pl.DataFrame(
        {
            "family_id": pl.Series(np.arange(n_fam_used)),
            "department": departments.gather(fam_cat),
            "category": cat_names.gather(fam_cat),
            "brand": brand_s.gather(brand[used]),
            "adjective": adj_flat.gather(adjective[used]),
            "material": mat_flat.gather(material[used]),
            "material_sentence": mat_sentence.gather(material[used]),
            "noun": noun_flat.gather(noun[used]),
            "feature": feat_flat.gather(feature[used]),
            "template": pl.Series(template[used], dtype=pl.Int8),
            "size_system": systems.gather(fam_cat),
        }
    ).with_columns(
        title_body=pl.concat_str(
            [pl.col("brand"), pl.col("adjective"), pl.col("material"), pl.col("noun")],
            separator=" ",
        ),
    )
    report("strings", 0.75)
    items = pl.DataFrame(
        {
            "idx": np.arange(n),
            "family_id": fam,
            "color": pal_flat.gather(color),
            "variant_text": variant_text.gather(color),
            "size": size_flat.gather(size),
            "size_text": size_text.gather(size),
            "price": price,
            "rating": rating,
            "review_count": reviews,
            "stock": stock.astype(np.int64),
            "ship_days": ship.astype(np.int64),
        }
    )
    df = items.join(families, on="family_id", how="left", maintain_order="left")
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
    description = (
        pl.when(pl.col("template") == 0)
        .then(descriptions[0])
        .when(pl.col("template") == 1)
        .then(descriptions[1])
        .otherwise(descriptions[2])
        .str.strip_chars()
    )
    df = df.select(
        item_id=pl.format("I{}", pl.col("idx").cast(pl.String).str.zfill(7)),
        family_id=pl.format("F{}", pl.col("family_id").cast(pl.String).str.zfill(7)),
        department="department",
        category="category",
        brand="brand",
        title=pl.concat_str(
            [pl.col("title_body"), pl.lit(" - "), pl.col("color"), pl.lit(", "), size_c]
        ),
        description=description,
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
    report("assembled", 1.0)
    return df
