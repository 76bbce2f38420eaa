"""The store: atomic writes, views, read-only connections, identifier validation."""

from __future__ import annotations

import os
from pathlib import Path

import duckdb
import polars as pl
import pytest

from ecomrlve import store
from ecomrlve.store import DataPaths, StoreError


def test_atomic_write_leaves_old_file_when_interrupted(tmp_path: Path, monkeypatch) -> None:
    target = tmp_path / "x.parquet"
    old = pl.DataFrame({"a": [1, 2, 3]})
    store.atomic_write_parquet(old, target)

    real_replace = os.replace

    def crash_after_temp_written(src, dst):  # the temp file exists, the rename never happens
        assert Path(src).exists()
        raise KeyboardInterrupt("killed")

    monkeypatch.setattr(os, "replace", crash_after_temp_written)
    with pytest.raises(KeyboardInterrupt):
        store.atomic_write_parquet(pl.DataFrame({"a": [9] * 1000}), target)
    monkeypatch.setattr(os, "replace", real_replace)

    assert pl.read_parquet(target).equals(old)
    assert [p.name for p in tmp_path.iterdir()] == ["x.parquet"]  # temp file cleaned up


def test_temp_files_are_invisible_to_view_globs(tmp_path: Path) -> None:
    part = tmp_path / "tasks" / "scenario=cart" / "difficulty=1"
    part.mkdir(parents=True)
    tmp = store.temp_path_for(part / "part-0.parquet")
    pl.DataFrame({"task_id": ["t"]}).write_parquet(tmp)
    assert not list(part.glob("*.parquet"))


def test_views_and_read_only_connection(small_catalog_dir: Path) -> None:
    con = store.connect(small_catalog_dir)
    try:
        n = con.sql("SELECT count(*) FROM products").fetchall()[0][0]
        assert n == 3_000
        rows = con.execute("SELECT count(*) FROM policies WHERE topic = ?", ["returns"]).fetchall()
        assert rows[0][0] > 0
        with pytest.raises(duckdb.Error):
            con.execute("CREATE TABLE evil AS SELECT 1")
    finally:
        con.close()


def test_write_table_append_and_replace(tmp_path: Path) -> None:
    store.write_table(tmp_path, "results", pl.DataFrame({"run_id": ["a"], "x": [1.0]}), append=True)
    store.write_table(tmp_path, "results", pl.DataFrame({"run_id": ["b"], "x": [2.0]}), append=True)
    with store.connect(tmp_path) as con:
        assert con.sql("SELECT count(*) FROM results").fetchall()[0][0] == 2
    store.write_table(
        tmp_path, "results", pl.DataFrame({"run_id": ["c"], "x": [3.0]}), append=False
    )
    with store.connect(tmp_path) as con:
        assert con.sql("SELECT run_id FROM results").fetchall() == [("c",)]


@pytest.mark.parametrize("bad", ["1abc", "a;drop table x", "", "a b", "x" * 80, "naïve"])
def test_identifier_validation(bad: str) -> None:
    with pytest.raises(StoreError):
        store.validate_identifier(bad)


def test_missing_store_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="no store"):
        store.connect(tmp_path / "nothing")


def test_paths_quote_safely_in_views(tmp_path: Path) -> None:
    from ecomrlve.catalogs import build_catalog

    odd = tmp_path / "it's a dir"
    build_catalog(odd, 100, seed=0)
    with store.connect(odd) as con:
        assert con.sql("SELECT count(*) FROM products").fetchall()[0][0] == 100
    assert DataPaths.of(odd).db.exists()
