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
    wider = pl.DataFrame({"run_id": ["b"], "x": [2.0], "y": [1]})
    with pytest.raises(StoreError, match=r"lacks column\(s\) \['y'\]"):
        store.write_table(tmp_path, "results", wider, append=True)
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


def _part(root: Path, scenario: str, name: str) -> Path:
    return root / "tasks" / f"scenario={scenario}" / "difficulty=0" / name


def test_publish_is_all_or_nothing(tmp_path: Path) -> None:
    frame = pl.DataFrame({"task_id": ["a"], "scenario": ["cart"], "difficulty": [0]})
    with store.publish(tmp_path) as tx:
        tx.write_parquet(frame, _part(tmp_path, "cart", "p0.parquet"))
    assert _part(tmp_path, "cart", "p0.parquet").exists()

    with pytest.raises(RuntimeError), store.publish(tmp_path) as tx:
        tx.write_parquet(frame, _part(tmp_path, "cancel", "p1.parquet"))
        raise RuntimeError("killed mid-publish")
    assert not _part(tmp_path, "cancel", "p1.parquet").exists()
    assert not list((tmp_path / "tasks").rglob(".*tmp-*"))  # staged files cleaned
    with store.connect(tmp_path) as con:
        assert con.sql("SELECT task_id FROM tasks").fetchall() == [("a",)]


def test_recover_rolls_a_journaled_publish_forward(tmp_path: Path, monkeypatch) -> None:
    frame = pl.DataFrame({"task_id": ["a"], "scenario": ["cart"], "difficulty": [0]})
    old = _part(tmp_path, "cart", "old.parquet")
    store.atomic_write_parquet(frame, old)
    calls = {"n": 0}
    real_replace = os.replace

    def die_after_first_rename(src, dst):
        if str(dst).endswith(".publish-journal.json"):
            return real_replace(src, dst)
        calls["n"] += 1
        if calls["n"] == 2:
            raise SystemExit("killed between renames")
        return real_replace(src, dst)

    monkeypatch.setattr(os, "replace", die_after_first_rename)
    with pytest.raises(SystemExit), store.publish(tmp_path) as tx:
        tx.write_parquet(
            frame.with_columns(task_id=pl.lit("b")), _part(tmp_path, "cart", "b.parquet")
        )
        tx.write_parquet(
            frame.with_columns(task_id=pl.lit("c")), _part(tmp_path, "cart", "c.parquet")
        )
        tx.remove(old)
    monkeypatch.setattr(os, "replace", real_replace)
    assert (tmp_path / store.JOURNAL_NAME).exists()
    assert store.recover(tmp_path)
    names = sorted(p.name for p in (tmp_path / "tasks").rglob("*.parquet"))
    assert names == ["b.parquet", "c.parquet"]
    assert not (tmp_path / store.JOURNAL_NAME).exists()


def test_second_writer_is_refused_with_a_clear_message(tmp_path: Path) -> None:
    with (
        store.exclusive_lock(tmp_path),
        pytest.raises(StoreError, match="another ecomrlve writer holds the lock"),
        store.exclusive_lock(tmp_path),
    ):
        pass
    with store.exclusive_lock(tmp_path):  # released on exit
        pass


@pytest.mark.slow  # a subprocess
def test_reader_waits_for_a_short_writer_in_another_process(small_catalog_dir: Path) -> None:
    import subprocess
    import sys

    hold = (
        "import duckdb, sys, time; con = duckdb.connect(sys.argv[1]); print('held', flush=True);"
        " time.sleep(1.0); con.close()"
    )
    db = str(store.DataPaths.of(small_catalog_dir).db)
    writer = subprocess.Popen([sys.executable, "-c", hold, db], stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout.readline().strip() == "held"
        reader = store.connect(small_catalog_dir, wait_s=20)  # raises if it never gets in
        try:
            assert reader.sql("SELECT count(*) FROM products").fetchall()[0][0] == 3_000
        finally:
            reader.close()
    finally:
        writer.wait(timeout=30)


def _store_with_a_truncated_part(data: Path) -> Path:
    """A catalog, two task parts, one of them cut short by a crash, and a publish journal
    left over from a killed publish of that part."""
    from typer.testing import CliRunner

    from ecomrlve.cli import app

    built = CliRunner().invoke(app, ["catalog", "--data", str(data), "--products", "300"])
    assert built.exit_code == 0, built.output
    frame = pl.DataFrame({"task_id": ["a"], "scenario": ["cart"], "difficulty": [0]})
    store.atomic_write_parquet(frame, _part(data, "cart", "good.parquet"))
    damaged = _part(data, "return", "cut.parquet")
    store.atomic_write_parquet(frame.with_columns(task_id=pl.lit("b")), damaged)
    store.refresh_views(data)
    os.truncate(damaged, 100)
    staged = damaged.with_name(".cut.parquet.tmp-1-dead")  # renamed before the crash
    (data / store.JOURNAL_NAME).write_text(
        f'{{"moves": [["{staged}", "{damaged}"]], "removals": []}}'
    )
    return damaged


def test_a_writer_quarantines_a_truncated_file_a_journal_points_at(tmp_path: Path) -> None:
    """A truncated Parquet file plus a leftover journal used to make every writer, even
    `ecomrlve catalog`, fail with DuckDB's 47-line traceback: the file is moved aside now."""
    from typer.testing import CliRunner

    from ecomrlve.cli import app

    damaged = _store_with_a_truncated_part(tmp_path)
    assert store.parquet_damage(damaged) == "truncated (no footer at its end)"
    result = CliRunner().invoke(app, ["catalog", "--data", str(tmp_path), "--products", "300"])
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    assert not damaged.exists() and not (tmp_path / store.JOURNAL_NAME).exists()
    [moved] = (tmp_path / store.QUARANTINE_DIR).rglob("cut.parquet.*")
    assert moved.relative_to(tmp_path / store.QUARANTINE_DIR).parts[:2] == (
        "tasks",
        "scenario=return",
    )
    with store.connect(tmp_path) as con:
        assert con.sql("SELECT task_id FROM tasks").fetchall() == [("a",)]


def test_a_reader_names_the_damaged_file_in_one_line(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from ecomrlve.cli import app

    damaged = _store_with_a_truncated_part(tmp_path)
    (tmp_path / store.JOURNAL_NAME).unlink()
    result = CliRunner().invoke(
        app, ["play", "--data", str(tmp_path), "--task", "a"], input=":quit\n"
    )
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and f"damaged Parquet file {damaged}: truncated" in lines[0]
    assert damaged.exists()  # a reader holds no writer lock: it moves nothing


def test_a_store_from_an_older_release_gains_the_new_view_columns(tmp_path: Path) -> None:
    """An older release's `tasks` view has no `core_steps`; a step band's SQL reads it
    (`coalesce(core_steps, min_steps)`), so the next reader that may write updates the views
    (`read_store_tasks`, which training and evaluation select with, does it first)."""
    frame = pl.DataFrame(
        {
            "task_id": ["a", "b"],
            "scenario": ["cart"] * 2,
            "difficulty": [0] * 2,
            "min_steps": [2, 5],
        }
    )
    with store.publish(tmp_path) as tx:
        tx.write_parquet(frame, _part(tmp_path, "cart", "p0.parquet"))
    with store.writer(tmp_path) as con:  # the view as the older release wrote it: no mark
        con.execute(
            "CREATE OR REPLACE VIEW tasks AS SELECT * FROM "
            "read_parquet('tasks/scenario=*/difficulty=*/*.parquet', hive_partitioning=true)"
        )
    band = "coalesce(core_steps, min_steps) <= 3"
    with store.connect(tmp_path) as con, pytest.raises(duckdb.BinderException):
        con.sql(f"SELECT * FROM tasks WHERE {band}").fetchall()

    store.update_views(tmp_path)
    with store.connect(tmp_path) as con:
        assert con.sql(f"SELECT task_id FROM tasks WHERE {band}").fetchall() == [("a",)]
        marks = con.sql("SELECT comment FROM duckdb_views() WHERE view_name = 'tasks'").fetchall()
    assert marks == [(store.VIEWS_MARK,)]
