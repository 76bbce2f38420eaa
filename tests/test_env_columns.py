"""The memory-mapped catalog columns and the id index without a dict."""

from __future__ import annotations

import numpy as np
import polars as pl

from ecomrlve.catalogs import CLASSIC_SHOP, build_policies, build_products
from ecomrlve.env import Catalog
from ecomrlve.env.shop.columns import IdIndex
from ecomrlve.store import DataPaths

PROBES = ("", "I", "I000000", "I00000001", "i0000001", "I000000a", "I-000001", "I０００００01",
          "X0000001", "I9999999", "\ud800", "I0000001\0", 7, None)  # fmt: skip


def _products(n: int = 400) -> pl.DataFrame:
    return build_products(n, 3)


def test_dense_ids_are_parsed_and_other_ids_binary_searched() -> None:
    products = _products()
    dense = Catalog.from_frames(products, build_policies(CLASSIC_SHOP))
    assert dense._ids.scheme is not None
    sparse = Catalog.from_frames(products.gather_every(3), build_policies(CLASSIC_SHOP))
    assert sparse._ids.scheme is None
    for catalog in (dense, sparse):
        ids = catalog.products["item_id"].to_list()
        assert catalog.item_ids == ids
        for row, item_id in enumerate(ids):
            assert catalog.row_of(item_id) == row
            assert catalog.item_id(row) == item_id
            assert item_id in catalog
        for probe in PROBES:
            assert catalog.row_of(probe) is None, probe
            assert probe not in catalog
    missing = products["item_id"][1]  # left out of the sparse catalog
    assert sparse.row_of(missing) is None and missing in dense


def test_scheme_needs_consecutive_numbers() -> None:
    assert IdIndex.scheme_of(pl.Series(["A01", "A02", "A03"])) == {
        "prefix": "A",
        "width": 2,
        "first": 1,
    }
    assert IdIndex.scheme_of(pl.Series(["A01", "A03"])) is None
    assert IdIndex.scheme_of(pl.Series(["x", "y"])) is None


def test_load_maps_the_columns_and_agrees_with_frames(small_catalog_dir, tmp_path) -> None:
    import shutil

    data = tmp_path / "data"
    shutil.copytree(small_catalog_dir, data)
    Catalog._cache.clear()
    built = Catalog.load(data)  # builds the columns folder
    Catalog._cache.clear()
    mapped = Catalog.load(data)  # maps it
    folders = list(DataPaths.of(data).catalog.glob("columns-*"))
    assert [f.name for f in folders] == [f"columns-{mapped.catalog_hash}"]
    assert isinstance(mapped.price.base, np.memmap) or not mapped.price.flags.owndata
    paths = DataPaths.of(data)
    frames = Catalog.from_frames(pl.read_parquet(paths.products), pl.read_parquet(paths.policies))
    for catalog in (built, mapped):
        assert catalog.products.equals(frames.products)
        assert catalog.item_ids == frames.item_ids
        for query, filters in (("boots", {"in_stock": True}), ("", {"category": "coffee"})):
            assert catalog.search(query, filters, 10) == frames.search(query, filters, 10)
        row = 17
        assert catalog.result(row) == frames.result(row)
        assert catalog.row(frames.item_ids[row]) == frames.row(frames.item_ids[row])
        assert list(catalog.family_rows(row)) == list(frames.family_rows(row))
    Catalog._cache.clear()
