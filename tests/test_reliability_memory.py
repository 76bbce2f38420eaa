"""Bounded memory: `generate_to_store` (what `ecomrlve generate` runs) never holds more than one
chunk of new rows and one partition at a time, writes the very bytes `generate_tasks` +
`write_tasks` write, and leaves nothing behind when it refuses to publish. Peak RSS at 100k-1M
tasks is measured by `benchmarks/memory.py`, not here."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import polars as pl
import pytest

from ecomrlve import store
from ecomrlve.generators import generate as gen

pytestmark = pytest.mark.slow  # generation at scale, measured

PRODUCTS = 2000
TASKS = 300
CHUNK = 10


@pytest.fixture(scope="module")
def catalog_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from ecomrlve.catalogs import build_catalog

    data = tmp_path_factory.mktemp("memory") / "data"
    build_catalog(data, PRODUCTS, seed=0)
    return data


def _fresh(template: Path, to: Path) -> Path:
    shutil.copytree(template, to)
    store.refresh_views(to)
    return to


def _hashes(paths: list[Path], root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in paths}


def test_rows_are_held_one_chunk_and_one_partition_at_a_time(
    catalog_dir: Path, tmp_path: Path, monkeypatch
) -> None:
    frames: list[int] = []  # rows of every frame built from generated rows
    loaded: list[int] = []  # rows of every partition read back for publishing
    real_rows_frame, real_publish = gen.rows_frame, gen._publish_partitions

    def counting_rows_frame(rows):
        frames.append(len(rows))
        return real_rows_frame(rows)

    def counting_publish(paths, run_name, loaders, *, prune):
        def wrap(load):
            def counted():
                frame = load()
                loaded.append(frame.height)
                return frame

            return counted

        return real_publish(paths, run_name, {k: wrap(v) for k, v in loaders.items()}, prune=prune)

    monkeypatch.setattr(gen, "rows_frame", counting_rows_frame)
    monkeypatch.setattr(gen, "_publish_partitions", counting_publish)
    streamed = _fresh(catalog_dir, tmp_path / "streamed")
    summary, report, written = gen.generate_to_store(
        streamed, TASKS, seed=4, run_name="gen_s4", chunk_size=CHUNK
    )
    cells = len({(s, d) for s, d in summary.select("scenario", "difficulty").iter_rows()})
    assert report.generated == summary.height == sum(loaded) > 0
    assert frames and max(frames) <= CHUNK, "a frame held more than one chunk of rows"
    assert len(frames) >= TASKS // CHUNK
    assert len(loaded) == len(written) == cells
    assert max(loaded) <= -(-TASKS // cells), "a partition read back more than its own rows"
    assert set(summary.columns) == set(gen.SUMMARY_COLUMNS)
    assert not list((streamed / "tasks").glob(".*")), "the spill folder was left behind"
    monkeypatch.undo()

    # the same bytes as the all-in-memory path, and the same rows in the tasks view
    in_memory = _fresh(catalog_dir, tmp_path / "in_memory")
    df, _ = gen.generate_tasks(in_memory, TASKS, seed=4)
    reference = gen.write_tasks(in_memory, df, "gen_s4")
    assert _hashes(written, streamed) == _hashes(reference, in_memory)
    con = store.connect(streamed)
    try:
        ids = [r[0] for r in con.execute("SELECT task_id FROM tasks").fetchall()]
    finally:
        con.close()
    assert sorted(ids) == sorted(df["task_id"].to_list()) == sorted(summary["task_id"])


def test_a_refused_publish_leaves_nothing(catalog_dir: Path, tmp_path: Path) -> None:
    data = _fresh(catalog_dir, tmp_path / "data")
    gen.generate_to_store(data, 40, seed=4, run_name="first", chunk_size=CHUNK)
    before = sorted(p.name for p in (data / "tasks").rglob("*"))
    with pytest.raises(store.StoreError, match="already in the store"):
        gen.generate_to_store(data, 40, seed=4, run_name="second", chunk_size=CHUNK)
    assert sorted(p.name for p in (data / "tasks").rglob("*")) == before
    with pytest.raises(ValueError, match="can produce tasks"):  # refused before any work
        gen.generate_to_store(
            data, 9, seed=5, run_name="none", scenarios=["cart"], difficulty=(0, 0), max_steps=1
        )
    assert sorted(p.name for p in (data / "tasks").rglob("*")) == before


def test_the_cli_streams(catalog_dir: Path, tmp_path: Path, monkeypatch) -> None:
    """`ecomrlve generate` goes through generate_to_store, never through the all-rows path."""
    from typer.testing import CliRunner

    from ecomrlve.cli import app

    def refuse(*args, **kwargs):
        raise AssertionError("the CLI held every row in memory")

    monkeypatch.setattr(gen, "generate_tasks", refuse)
    data = _fresh(catalog_dir, tmp_path / "data")
    result = CliRunner().invoke(
        app, ["generate", "--tasks", "30", "--seed", "6", "--workers", "1", "--data", str(data)]
    )
    assert result.exit_code == 0, result.output
    assert pl.read_parquet(list((data / "tasks").rglob("gen_s6.parquet"))).height == 30
