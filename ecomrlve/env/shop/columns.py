"""The catalog's columns as files every env worker maps read-only (one copy per machine).

`Catalog.load` keeps, next to the catalog, a folder `DIR/catalog/columns-<catalog_hash>/`:

* `products.arrow`: the products table as uncompressed Arrow IPC (polars writes string views),
  opened with `pyarrow.memory_map` and wrapped by polars without a copy;
* one `.npy` file per derived array (numeric columns, the normalised codes of the text filters
  and their display codes, the family index, the sorted ids), opened with `mmap_mode="r"`;
* `meta.json`: the small vocabularies and the id scheme.

Pages come from the OS page cache, so N workers on one machine share one copy (their PSS is
about 1/N of it). The folder is written to a temp folder and renamed, like the search index.

`IdIndex` maps an item id to its row without a per-process dict of a million strings: ids the
synthesiser writes (`I0000042`: one prefix, fixed width, consecutive numbers in row order) are
parsed; any other id set is binary-searched in a sorted fixed-width byte array.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa

log = logging.getLogger(__name__)

COLUMNS_VERSION = 2  # 2: no per-value row postings of the text filters
META = "meta.json"
PRODUCTS = "products.arrow"


class IdIndex:
    """item_id <-> row for ids sorted in row order, with no Python object per id.

    Dense ids (`prefix` + `width` digits, `first + row`) are parsed; otherwise `ids` (a sorted
    fixed-width bytes array, maybe memory-mapped) is binary-searched.
    """

    def __init__(self, size: int, scheme: dict[str, Any] | None, ids: np.ndarray | None):
        self.size = size
        self.scheme = scheme
        self._ids = ids
        if scheme is not None:
            self._prefix: str = scheme["prefix"]
            self._width: int = scheme["width"]
            self._first: int = scheme["first"]
            self._length = len(self._prefix) + self._width
            self._format = f"{self._prefix}{{:0{self._width}d}}".format

    @staticmethod
    def scheme_of(ids: pl.Series) -> dict[str, Any] | None:
        """The dense scheme `ids` (sorted, unique) follow, or None."""
        first = ids[0]
        digits = len(first) - len(first.rstrip("0123456789"))
        if not 0 < digits < 19:
            return None
        prefix = first[: len(first) - digits]
        try:
            start = int(first[len(prefix) :])
        except ValueError:
            return None
        expected = pl.Series(np.arange(start, start + len(ids), dtype=np.int64)).cast(pl.String)
        expected = prefix + expected.str.zfill(digits)
        if not (ids.cast(pl.String) == expected).all():
            return None
        return {"prefix": prefix, "width": digits, "first": start}

    def row_of(self, item_id: object) -> int | None:
        if self.scheme is not None:
            if (
                type(item_id) is not str
                or len(item_id) != self._length
                or not item_id.startswith(self._prefix)
            ):
                return None
            tail = item_id[len(self._prefix) :]
            if not (tail.isascii() and tail.isdigit()):
                return None
            row = int(tail) - self._first
            return row if 0 <= row < self.size else None
        if not isinstance(item_id, str):
            return None
        try:
            key = item_id.encode("utf-8")
        except UnicodeEncodeError:
            return None
        ids = self._ids
        if len(key) > ids.dtype.itemsize or key.endswith(b"\0"):
            return None
        row = int(np.searchsorted(ids, key))
        return row if row < self.size and ids[row] == key else None

    def item_id(self, row: int) -> str:
        if self.scheme is not None:
            return self._format(self._first + row)
        return self._ids[row].decode("utf-8")


def _write_npy(folder: Path, name: str, array: np.ndarray) -> None:
    np.save(folder / f"{name}.npy", np.ascontiguousarray(array), allow_pickle=False)


def save(folder: Path, products: pl.DataFrame, arrays: dict[str, np.ndarray], meta: dict) -> None:
    """Write the columns folder atomically (temp folder + rename); OSError if it cannot."""
    tmp = folder.with_name(f".{folder.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}")
    try:
        tmp.mkdir(parents=True)
        products.write_ipc(tmp / PRODUCTS, compression="uncompressed")
        for name, array in arrays.items():
            _write_npy(tmp, name, array)
        (tmp / META).write_text(json.dumps({**meta, "version": COLUMNS_VERSION}, sort_keys=True))
        if folder.exists():
            shutil.rmtree(folder, ignore_errors=True)
        os.replace(tmp, folder)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for sibling in folder.parent.glob("columns-*"):
        if sibling != folder and sibling.is_dir():
            # processes still reading them keep their mapped pages until they close
            log.info("removing the columns of an older catalog: %s", sibling)
            shutil.rmtree(sibling, ignore_errors=True)
            sibling.with_name(f".{sibling.name}.lock").unlink(missing_ok=True)


def open_folder(
    folder: Path, catalog_hash: str
) -> tuple[pl.DataFrame, dict[str, np.ndarray], dict] | None:
    """(products, arrays, meta) mapped read-only from `folder`; None if missing or stale."""
    try:
        meta = json.loads((folder / META).read_text())
    except (OSError, ValueError):
        return None
    if meta.get("version") != COLUMNS_VERSION or meta.get("catalog_hash") != catalog_hash:
        return None
    try:
        table = pa.ipc.open_file(pa.memory_map(str(folder / PRODUCTS))).read_all()
        products = pl.from_arrow(table)
        arrays = {
            name: np.asarray(np.load(folder / f"{name}.npy", mmap_mode="r", allow_pickle=False))
            for name in meta["arrays"]
        }
    except (OSError, ValueError, pa.ArrowException) as err:
        log.warning("rebuilding catalog columns %s: %s", folder, err)
        return None
    if not isinstance(products, pl.DataFrame) or products.height != meta.get("size"):
        return None
    return products, arrays, meta
