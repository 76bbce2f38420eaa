"""A store that travels: views name files relative to the data folder, and the DuckDB file is
written in a storage version DuckDB 1.x clients open."""

from __future__ import annotations

import csv
import io
import json
import shutil
import struct
from pathlib import Path

import duckdb
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


# ---- any DuckDB client from any folder; nested columns as CSV (issue 31) ------------------------


def _plain_client(script: Path):
    """A fresh in-memory DuckDB (what any client starts with) that ran the init script."""
    con = duckdb.connect()
    con.execute(script.read_text(encoding="utf-8"))
    return con


def test_the_init_script_opens_the_views_from_another_folder(
    store_dir: Path, tmp_path: Path, monkeypatch
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    paths = DataPaths.of(store_dir)
    bare = duckdb.connect(str(paths.db), read_only=True)  # the problem: paths cwd-relative
    with bare, pytest.raises(duckdb.IOException, match="No files found"):
        bare.sql("SELECT count(*) FROM products").fetchall()
    with _plain_client(paths.init_script) as con:
        assert con.sql("SELECT count(*) FROM products").fetchall() == [(100,)]
        assert con.sql("SELECT count(*) FROM tasks").fetchall() == [(2,)]
        assert con.sql("SELECT count(*) > 0 FROM policies").fetchall() == [(True,)]

    # a moved folder: its next `ecomrlve sql` rewrites the script to name the new place
    moved = tmp_path / "moved"
    shutil.move(store_dir, moved)
    assert _sql(moved, "SELECT 1 AS one") == "one\n1\n"
    script = DataPaths.of(moved).init_script
    assert str(store_dir) not in script.read_text()
    with _plain_client(script) as con:
        assert con.sql("SELECT count(*) FROM tasks").fetchall() == [(2,)]


def test_csv_of_nested_columns_is_json_per_cell(store_dir: Path) -> None:
    query = (
        "SELECT [1, 2] AS ids, {'a': 1, 'b': ['x, y']} AS info, NULL::INT[] AS empty, "
        "'plain' AS word, [DATE '2025-01-02'] AS days"
    )
    result = runner.invoke(app, ["sql", query, "--data", str(store_dir), "--format", "csv"])
    assert result.exit_code == 0, result.output
    [row] = list(csv.DictReader(io.StringIO(result.stdout)))
    assert json.loads(row["ids"]) == [1, 2]
    assert json.loads(row["info"]) == {"a": 1, "b": ["x, y"]}
    assert row["empty"] == "" and row["word"] == "plain"
    assert json.loads(row["days"]) == ["2025-01-02"]
    # a real list column of the store, too
    listed = _sql(store_dir, "SELECT list(task_id ORDER BY task_id) AS ids FROM tasks")
    assert json.loads(next(csv.DictReader(io.StringIO(listed)))["ids"]) == ["t1", "t2"]
