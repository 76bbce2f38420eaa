"""Publishing generated tasks as a named run, and reading what the store already holds.

The generators' `write_tasks(data, df, run)` writes `tasks/scenario=S/difficulty=D/RUN.parquet`
all-or-nothing and refuses task ids another file holds; a rerun of the same run replaces its
files. The pipeline republishes its run (`pipeline`) with every config, so files of that run in
partitions the new config no longer fills are removed here afterwards: the tasks view then
shows exactly the last config's tasks plus any other runs (regenerations, `ecomrlve generate`).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

import duckdb
import polars as pl

from ecomrlve import store
from ecomrlve.store import DataPaths


@dataclass(frozen=True)
class PublishResult:
    """The task files a run owns after publishing, with their content hashes."""

    run: str
    files: dict[str, str]  # path -> store.file_hash
    tasks: int
    removed: tuple[str, ...] = ()

    def intact(self) -> bool:
        """True while every file is still there with the content that was published."""
        return all(
            Path(p).exists() and store.file_hash(Path(p)) == h for p, h in self.files.items()
        )


def _task_files(paths: DataPaths) -> str | None:
    """The glob over every task file, or None when the store holds no tasks yet."""
    if not any(paths.tasks.glob("scenario=*/difficulty=*/*.parquet")):
        return None
    return str(paths.tasks / "scenario=*" / "difficulty=*" / "*.parquet")


def publish_run(data: str | os.PathLike, run: str, df: pl.DataFrame) -> PublishResult:
    """Publish `df` as run `run` and drop the run's files that `df` no longer fills.

    Takes the writer lock itself (through `write_tasks` and for the clean-up).
    """
    from ecomrlve.generators import write_tasks

    paths = DataPaths.of(data)
    written = write_tasks(paths.root, df, run)
    keep = {p.resolve() for p in written}
    stale = sorted(
        p
        for p in paths.tasks.glob(f"scenario=*/difficulty=*/{run}.parquet")
        if p.resolve() not in keep
    )
    if stale:
        with store.exclusive_lock(paths.root), store.publish(paths.root) as tx:
            for path in stale:
                tx.remove(path)
    files = {str(p): store.file_hash(p) for p in sorted(written)}
    return PublishResult(run, files, df.height, tuple(str(p) for p in stale))


def existing_task_ids(data: str | os.PathLike, task_ids: list[str]) -> set[str]:
    """Which of `task_ids` the store already holds (read from the task files directly)."""
    pattern = _task_files(DataPaths.of(data))
    if not task_ids or pattern is None:
        return set()
    con = duckdb.connect()
    try:
        con.register("incoming", pl.DataFrame({"task_id": task_ids}).to_arrow())
        rows = con.sql(
            "SELECT DISTINCT t.task_id FROM read_parquet(?, union_by_name = true) t "
            "SEMI JOIN incoming USING (task_id)",
            params=[pattern],
        ).fetchall()
    finally:
        con.close()
    return {r[0] for r in rows}


def store_seeds(data: str | os.PathLike) -> set[int]:
    """Every seed the store's tasks were generated with."""
    pattern = _task_files(DataPaths.of(data))
    if pattern is None:
        return set()
    with duckdb.connect() as con:
        rows = con.sql(
            "SELECT DISTINCT seed FROM read_parquet(?, union_by_name = true)", params=[pattern]
        ).fetchall()
    return {int(r[0]) for r in rows}


def tasks_version(data: str | os.PathLike) -> str:
    """One hash over every task file's name and content: changes whenever the tasks view does."""
    paths = DataPaths.of(data)
    digest = hashlib.sha256()
    for path in sorted(paths.tasks.glob("scenario=*/difficulty=*/*.parquet")):
        digest.update(f"{path.relative_to(paths.tasks)}={store.file_hash(path)};".encode())
    return digest.hexdigest()[:16]
