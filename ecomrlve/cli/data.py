"""The data commands: `catalog` (synthesize products and policies into the store) and `sql`
(a read-only query over it)."""

from __future__ import annotations

import json
import sys
from enum import StrEnum
from pathlib import Path

import duckdb
import polars as pl
import typer

from ecomrlve import store
from ecomrlve.cli.common import (
    DataOpt,
    console,
    data_default,
    fail,
    frame_table,
    progress_bar,
    user_errors,
)
from ecomrlve.read_sql import check_read_query


def register(app: typer.Typer) -> None:
    app.command()(catalog)
    app.command()(sql)


def catalog(
    products: int = typer.Option(
        data_default("products"), "--products", "-n", help="number of sellable variants"
    ),
    seed: int = typer.Option(
        data_default("seed"), "--seed", help="random seed; same seed, same bytes"
    ),
    data: Path = DataOpt,
) -> None:
    """Synthesize a product catalog and store policies into DIR/catalog and DuckDB."""
    from ecomrlve.catalogs import build_catalog
    from ecomrlve.catalogs.build import category_summary

    if products <= 0:
        fail(f"--products must be a positive number, got {products}")
    if seed < 0:
        fail(f"--seed must be >= 0, got {seed}")
    with user_errors(), store.exclusive_lock(data), progress_bar("catalog") as update:
        summary = build_catalog(data, products, seed, progress=update)
        df = store.read_products(data)
    console.print(frame_table(category_summary(df), title="catalog by category"))
    console.print(
        f"{summary.products:,} products in {summary.families:,} families, "
        f"{summary.brands:,} brands, {summary.out_of_stock:,} out of stock; "
        f"catalog_hash {summary.catalog_hash}; store {store.DataPaths.of(data).db}"
    )


class OutputFormat(StrEnum):
    table = "table"
    csv = "csv"
    json = "json"


def csv_ready(df: pl.DataFrame) -> pl.DataFrame:
    """`df` with every column CSV cannot hold (lists, arrays, structs, objects) as one JSON
    text cell per row, so `sql --format csv` never fails on a nested column.

    >>> csv_ready(pl.DataFrame({"ids": [["I1", "I2"]], "n": [1]})).row(0)
    ('["I1", "I2"]', 1)
    """
    nested = [
        name
        for name, dtype in df.schema.items()
        if isinstance(dtype, pl.List | pl.Array | pl.Struct | pl.Object)
    ]
    if not nested:
        return df
    return df.with_columns(
        pl.Series(
            name,
            [None if v is None else json.dumps(v, default=str) for v in df[name].to_list()],
            dtype=pl.String,
        )
        for name in nested
    )


def sql(
    query: str = typer.Argument(..., help="a SQL query over products, policies, tasks, …"),
    data: Path = DataOpt,
    fmt: OutputFormat = typer.Option(OutputFormat.table, "--format", help="table, csv or json"),
    max_rows: int = typer.Option(200, "--max-rows", help="rows shown in table format"),
) -> None:
    """Run a read-only SQL query against the store (one SELECT statement; nothing that writes)."""
    with user_errors():
        if not query.strip():
            fail("empty query")
        check_read_query(query)
        con = store.connect(data, read_only=True)
    try:
        df = con.sql(query).pl()
    except duckdb.Error as err:
        fail(f"SQL error: {str(err).splitlines()[0]}")
    finally:
        con.close()
    if df is None:
        fail("the statement returned no result set")
    store.freshen_init_script(data)  # DIR/ecomrlve.sql names this folder (it may have moved)
    if fmt is OutputFormat.csv:
        sys.stdout.write(csv_ready(df).write_csv())
    elif fmt is OutputFormat.json:
        sys.stdout.write(json.dumps(df.to_dicts(), default=str) + "\n")
    else:
        console.print(frame_table(df, max_rows=max_rows))
