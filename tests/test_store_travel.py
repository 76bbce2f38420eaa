"""A store that travels: views name files relative to the data folder, and the DuckDB file is
written in a storage version DuckDB 1.x clients open."""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from ecomrlve import store
from ecomrlve.cli import app
from ecomrlve.store import DataPaths

runner = CliRunner()

# DuckDB 1.5 reads storage versions 64-68 ("we can only read versions between 64 and 68");
# DuckDB 2.0's own default writes a newer one.
DUCKDB_1_READS = range(64, 69)


def _sql(data: Path, query: str) -> str:
    result = runner.invoke(app, ["sql", query, "--data", str(data), "--format", "csv"])
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.fixture()
def store_dir(tmp_path: Path) -> Path:
    from ecomrlve.catalogs import build_catalog

    data = tmp_path / "original"
    build_catalog(data, 100, seed=0)
    frame = pl.DataFrame({"task_id": ["t1", "t2"], "prompt": ["a", "b"]})
    with store.publish(data) as tx:
        tx.write_parquet(frame, data / "tasks" / "scenario=cart" / "difficulty=0" / "p.parquet")
    return data


def test_views_hold_no_absolute_path(store_dir: Path) -> None:
    with store.connect(store_dir) as con:
        sqls = [
            r[0] for r in con.sql("SELECT sql FROM duckdb_views() WHERE NOT internal").fetchall()
        ]
    assert len(sqls) == 3
    assert not any(str(store_dir) in text for text in sqls)


def test_a_moved_folder_answers_sql(store_dir: Path, tmp_path: Path) -> None:
    moved = tmp_path / "elsewhere" / "moved"
    moved.parent.mkdir()
    shutil.move(store_dir, moved)
    assert _sql(moved, "SELECT count(*) AS n FROM products") == "n\n100\n"
    assert _sql(moved, "SELECT count(*) AS n FROM tasks WHERE scenario = 'cart'") == "n\n2\n"


def test_a_copied_folder_reads_its_own_files(store_dir: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(store_dir, copy)
    products = pl.read_parquet(DataPaths.of(copy).products)
    store.atomic_write_parquet(products.head(7), DataPaths.of(copy).products)
    assert _sql(copy, "SELECT count(*) AS n FROM products") == "n\n7\n"
    assert _sql(store_dir, "SELECT count(*) AS n FROM products") == "n\n100\n"


def test_the_file_is_in_a_storage_version_duckdb_1_reads(store_dir: Path) -> None:
    header = DataPaths.of(store_dir).db.read_bytes()[:20]
    assert header[8:12] == b"DUCK"
    (version,) = struct.unpack("<Q", header[12:20])
    assert version in DUCKDB_1_READS
