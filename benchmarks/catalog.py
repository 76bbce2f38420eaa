"""Catalog synthesis throughput: vectorised builder vs one Faker call per field per row.

    python benchmarks/catalog.py [--products 1000000] [--faker-rows 20000]

Prints one table: products/s of both paths (the per-row path is measured on a sample and its
rate extrapolated, since 1M rows would take minutes), the speed-up, the Parquet write and the
DuckDB group-by latency over the written catalog.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
from faker import Faker
from rich.console import Console
from rich.table import Table

from ecomrlve import store
from ecomrlve.catalogs import build_catalog
from ecomrlve.catalogs.synth import build_products
from ecomrlve.catalogs.taxonomy import ADJECTIVES, CATEGORIES


def faker_per_row(n: int, seed: int) -> list[dict]:
    """The naive baseline: the same columns, one Faker call per field per row."""
    fake = Faker()
    fake.seed_instance(seed)
    rows = []
    for i in range(n):
        cat = CATEGORIES[fake.random_int(0, len(CATEGORIES) - 1)]
        brand = fake.last_name()
        color = fake.color_name()
        noun = fake.random_element(cat.nouns)
        material = fake.random_element(cat.materials)
        adjective = fake.random_element(ADJECTIVES)
        size = fake.random_element(cat.sizes)
        rows.append(
            {
                "item_id": f"I{i:07d}",
                "family_id": f"F{i // 4:07d}",
                "department": cat.department,
                "category": cat.name,
                "brand": brand,
                "title": f"{brand} {adjective} {material} {noun} - {color}, size {size}",
                "description": f"{adjective.title()} {noun}. {fake.sentence(nb_words=8)}",
                "color": color,
                "size": size,
                "material": material,
                "price": round(
                    float(
                        np.exp(
                            np.log(cat.price_median)
                            + cat.price_sigma * fake.pyfloat(min_value=-2, max_value=2)
                        )
                    ),
                    2,
                ),
                "rating": fake.pyfloat(min_value=1, max_value=5, right_digits=1),
                "review_count": fake.random_int(0, 5000),
                "stock": fake.random_int(0, 200),
                "ship_days": fake.random_int(*cat.ship_days),
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--products", type=int, default=1_000_000)
    parser.add_argument("--faker-rows", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    build_products(10_000, seed=0)  # warm-up: imports, vocabularies
    vec_times = []
    for r in range(args.repeats):
        t0 = time.perf_counter()
        build_products(args.products, seed=r)
        vec_times.append(time.perf_counter() - t0)
    vec_s = statistics.median(vec_times)

    t0 = time.perf_counter()
    faker_per_row(args.faker_rows, seed=0)
    faker_rate = args.faker_rows / (time.perf_counter() - t0)

    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp)
        t0 = time.perf_counter()
        build_catalog(data, args.products, seed=0)
        full_s = time.perf_counter() - t0
        con = store.connect(data)
        q = "SELECT category, count(*), avg(price) FROM products GROUP BY ALL"
        con.sql(q).fetchall()  # cold run opens the file
        lat = []
        for _ in range(20):
            t0 = time.perf_counter()
            con.sql(q).fetchall()
            lat.append(time.perf_counter() - t0)
        con.close()
        size_mb = store.DataPaths.of(data).products.stat().st_size / 1e6

    table = Table(title=f"catalog synthesis, {args.products:,} products")
    for col in ("path", "products/s", f"time for {args.products:,}", "note"):
        table.add_column(col)
    table.add_row(
        "vectorised (numpy + polars)",
        f"{args.products / vec_s:,.0f}",
        f"{vec_s:.2f} s",
        f"median of {args.repeats}",
    )
    table.add_row(
        "Faker, one call per field per row",
        f"{faker_rate:,.0f}",
        f"{args.products / faker_rate:.0f} s (extrapolated)",
        f"measured on {args.faker_rows:,} rows",
    )
    table.add_row("speed-up", f"{(args.products / vec_s) / faker_rate:,.0f}x", "", "target >= 50x")
    table.add_row(
        "build_catalog (synth + zstd Parquet + views)",
        "",
        f"{full_s:.2f} s",
        f"{size_mb:.0f} MB products.parquet; target <= 15 s",
    )
    table.add_row(
        "DuckDB GROUP BY category (warm)",
        "",
        f"{statistics.median(lat) * 1e3:.1f} ms",
        f"p50 of 20; max {max(lat) * 1e3:.1f} ms; target <= 100 ms",
    )
    Console().print(table)


if __name__ == "__main__":
    main()
