"""Vectorised catalog synthesis: product families expanded into sellable variants.

All sampling is numpy over index arrays; strings are assembled by polars from the vocabularies
in `taxonomy.py` / `vocab.py`. One million variants take a few seconds on one core.

Deliberate traps that make filters matter:
* variants of a family share brand, category, title body and price band but differ in colour/size;
* near-duplicate families copy another family's title body under a different brand;
* some variants are out of stock.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import polars as pl

from ecomrlve.catalogs import vocab
from ecomrlve.catalogs.taxonomy import ADJECTIVES, CATEGORIES

# SeedSequence stream ids: each consumer of the seed gets its own stream.
CATALOG_STREAM = 1
NEAR_DUPLICATE_SHARE = 0.10
OUT_OF_STOCK_SHARE = 0.12
BRANDS_PER_CATEGORY = 48
DESCRIPTION_WORDS = 8

ProgressFn = Callable[[str, float], None]


def _concat_vocab(groups: list[tuple[str, ...]]) -> tuple[np.ndarray, np.ndarray, pl.Series]:
    """Flatten per-category vocabularies: returns (offsets, lengths, flat series)."""
    lengths = np.array([len(g) for g in groups], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    flat = pl.Series([w for g in groups for w in g], dtype=pl.String)
    return offsets, lengths, flat


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
    report = progress or (lambda stage, frac: None)
    rng = np.random.default_rng(np.random.SeedSequence([seed, CATALOG_STREAM]))
    colors = vocab.colors()
    brands = vocab.brand_names()
    words = vocab.description_words()
    n_cat = len(CATEGORIES)

    # ---- families -------------------------------------------------------------------------
    n_fam = n // 3 + 16
    weights = np.array([3 if c.department in ("apparel", "footwear") else 2 for c in CATEGORIES])
    cat = rng.choice(n_cat, size=n_fam, p=weights / weights.sum())
    noun_off, noun_len, noun_flat = _concat_vocab([c.nouns for c in CATEGORIES])
    mat_off, mat_len, mat_flat = _concat_vocab([c.materials for c in CATEGORIES])
    size_off, size_len, size_flat = _concat_vocab([c.sizes for c in CATEGORIES])

    noun = noun_off[cat] + _pick_local(rng, noun_len[cat])
    material = mat_off[cat] + _pick_local(rng, mat_len[cat], skew=1.5)
    adjective = rng.integers(0, len(ADJECTIVES), n_fam)
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

    # ---- variants per family: colours x a window of sizes ------------------------------------
    n_colors = 1 + rng.binomial(2, 0.45, n_fam)
    n_sizes = np.minimum(size_len[cat], 1 + rng.binomial(3, 0.5, n_fam))
    size_start = _pick_local(rng, size_len[cat] - n_sizes + 1)
    simple = len(colors) if len(colors) < 15 else 15
    color_base = np.where(
        rng.random(n_fam) < 0.6, rng.integers(0, simple, n_fam), rng.integers(0, len(colors), n_fam)
    )
    color_stride = rng.integers(1, 8, n_fam)
    per_family = n_colors * n_sizes
    ends = np.cumsum(per_family)
    if ends[-1] < n:  # the expected count is ~4 per family; top up in the rare short case
        raise RuntimeError("internal: too few families sampled")
    n_fam_used = int(np.searchsorted(ends, n) + 1)
    fam = np.repeat(np.arange(n_fam_used), per_family[:n_fam_used])[:n]
    within = np.arange(n) - np.concatenate([[0], ends[:-1]])[fam]
    color = (color_base[fam] + (within // n_sizes[fam]) * color_stride[fam]) % len(colors)
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
    desc_words = rng.integers(0, len(words), (n_fam_used, DESCRIPTION_WORDS))
    report("numbers", 0.6)

    # ---- strings, assembled column-wise by polars -----------------------------------------
    cat_names = pl.Series([c.name for c in CATEGORIES])
    departments = pl.Series([c.department for c in CATEGORIES])
    systems = pl.Series([c.size_system for c in CATEGORIES])
    adjs = pl.Series(ADJECTIVES)
    brand_s = pl.Series(brands)
    word_s = pl.Series(words)
    fam_cat = cat[:n_fam_used]
    families = pl.DataFrame(
        {
            "family_id": pl.Series(np.arange(n_fam_used)),
            "department": departments.gather(fam_cat),
            "category": cat_names.gather(fam_cat),
            "brand": brand_s.gather(brand[:n_fam_used]),
            "adjective": adjs.gather(adjective[:n_fam_used]),
            "material": mat_flat.gather(material[:n_fam_used]),
            "noun": noun_flat.gather(noun[:n_fam_used]),
            "size_system": systems.gather(fam_cat),
            **{f"w{i}": word_s.gather(desc_words[:, i]) for i in range(DESCRIPTION_WORDS)},
        }
    ).with_columns(
        title_body=pl.concat_str(
            [pl.col("brand"), pl.col("adjective"), pl.col("material"), pl.col("noun")],
            separator=" ",
        ),
        blurb=pl.concat_str([pl.col(f"w{i}") for i in range(DESCRIPTION_WORDS)], separator=" "),
    )
    report("strings", 0.75)
    items = pl.DataFrame(
        {
            "idx": np.arange(n),
            "family_id": fam,
            "color": pl.Series(colors).gather(color),
            "size": size_flat.gather(size),
            "price": price,
            "rating": rating,
            "review_count": reviews,
            "stock": stock.astype(np.int64),
            "ship_days": ship.astype(np.int64),
        }
    )
    fam_cols = families.select(
        "family_id",
        "department",
        "category",
        "brand",
        "material",
        "size_system",
        "title_body",
        "blurb",
        "adjective",
        "noun",
    )
    df = items.join(fam_cols, on="family_id", how="left", maintain_order="left")
    df = df.select(
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
                pl.when(pl.col("size_system") == "one")
                .then(pl.lit(""))
                .otherwise(pl.lit(", size ") + pl.col("size")),
            ]
        ),
        description=pl.concat_str(
            [
                pl.col("adjective").str.to_titlecase(),
                pl.lit(" "),
                pl.col("noun"),
                pl.lit(" made of "),
                pl.col("material"),
                pl.lit(". "),
                pl.col("blurb").str.to_titlecase(),
                pl.lit("."),
            ]
        ),
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
    )
    report("assembled", 1.0)
    return df
