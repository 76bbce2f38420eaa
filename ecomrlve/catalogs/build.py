"""Build a catalog into a data directory: products + policies Parquet, metadata, views."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass

import polars as pl

from ecomrlve.catalogs.policies import Shop, build_policies
from ecomrlve.catalogs.synth import build_products
from ecomrlve.progress import ProgressFn
from ecomrlve.store import DataPaths, StoreError, ensure_writable, files_hash, publish


@dataclass(frozen=True)
class CatalogSummary:
    products: int
    families: int
    categories: int
    brands: int
    out_of_stock: int
    seed: int
    catalog_hash: str


def catalog_hash(data: str | os.PathLike) -> str:
    """The hash recorded when the catalog was built: sha256 prefix of products.parquet and
    policies.parquet together (the policy book is part of the world a task runs in)."""
    paths = DataPaths.of(data)
    try:
        return json.loads(paths.catalog_meta.read_text())["catalog_hash"]
    except (OSError, KeyError, json.JSONDecodeError):
        if not paths.products.exists():
            raise StoreError(f"no catalog at {paths.catalog}: run `ecomrlve catalog`") from None
        return files_hash(paths.products, paths.policies)


def build_catalog(
    data: str | os.PathLike, products: int, seed: int, progress: ProgressFn | None = None
) -> CatalogSummary:
    """Synthesize `products` variants with `seed` into `data`; same inputs, same bytes."""
    if products <= 0:
        raise StoreError(f"--products must be a positive number, got {products}")
    if seed < 0:
        raise StoreError(f"--seed must be >= 0, got {seed}")
    paths = DataPaths.of(data)
    ensure_writable(paths.catalog)
    df = build_products(products, seed, progress=progress)
    # products, policies and their metadata become visible together (or not at all)
    with publish(paths.root) as tx:
        tx.write_parquet(df, paths.products)
        # the policy book varies with the seed: policy answers are read, not memorised
        tx.write_parquet(build_policies(Shop.for_seed(seed)), paths.policies)
        summary = CatalogSummary(
            products=df.height,
            families=df["family_id"].n_unique(),
            categories=df["category"].n_unique(),
            brands=df["brand"].n_unique(),
            out_of_stock=int((~df["in_stock"]).sum()),
            seed=seed,
            catalog_hash=files_hash(tx.moves[0][0], tx.moves[1][0]),
        )
        tx.write_bytes(
            json.dumps(asdict(summary), indent=2, sort_keys=True).encode(), paths.catalog_meta
        )
    return summary


def category_summary(df: pl.DataFrame) -> pl.DataFrame:
    return (
        df.group_by("department", "category")
        .agg(
            items=pl.len(),
            families=pl.col("family_id").n_unique(),
            brands=pl.col("brand").n_unique(),
            median_price=pl.col("price").median(),
            in_stock=pl.col("in_stock").mean(),
        )
        .sort("department", "category")
    )
