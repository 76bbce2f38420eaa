"""Curriculum shards: a DuckDB selection of tasks, ordered easy → hard, cut into Parquet shards.

`build_curriculum(data, name, where=..., order=..., shard_size=...)` writes::

    DIR/curricula/NAME/shard-NNNNN.parquet       task fields + prompt messages + tool schemas
    DIR/curricula/NAME/verl/shard-NNNNN.parquet  the same tasks as verl / TRL dataset rows
    DIR/curricula/NAME/manifest.json             counts per shard, source query, seeds, hash
    DIR/curricula/NAME/README.md                 dataset card: `datasets.load_dataset(DIR/
                                                 curricula/NAME)` gives the verl rows' splits

The default order is difficulty, then, within a difficulty, each scenario's tasks by min_steps
spread evenly over the difficulty's span (scenario A's 3rd of 10 sits beside scenario B's 6th
of 20). So min_steps rises within every scenario and no shard is single-scenario unless the
selection is; `interleave=False` gives the plain (difficulty, min_steps) order instead.

The whole folder is built under a hidden temp name and renamed into place, so a killed build
never leaves a half curriculum (the temp folder is swept by `store.recover`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import shutil
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from ecomrlve import store
from ecomrlve.catalogs import catalog_hash as current_catalog_hash
from ecomrlve.integrations.verl.rows import (
    ABILITY,
    AGENT_NAME,
    DATA_SOURCE,
    VERL_DIR,
    VERL_VAL_DIR,
    VERL_VAL_FILE,
    chat_messages,
    verl_rows,
    verl_validation_ids,
    with_verl_columns,
)
from ecomrlve.progress import ProgressEvent, ProgressFn
from ecomrlve.read_sql import ReadOnlySQLError, check_read_query
from ecomrlve.tasks import SHARD_COLUMNS, Task, step_band, with_column_defaults
from ecomrlve.train.curriculum import CurriculumError  # one class: building and reading

log = logging.getLogger(__name__)

MANIFEST = "manifest.json"
# Without a card `datasets.load_dataset(folder)` guesses splits from folder names and finds only
# `verl_val/` (a validation split of a few rows, no train split); the card names both.
DATASET_CARD = "README.md"
MANIFEST_FORMAT = 1

# Columns of a trainer shard, in order (the task schema of `ecomrlve.tasks`)
TASK_COLUMNS = SHARD_COLUMNS


@dataclass(frozen=True)
class CurriculumResult:
    name: str
    path: Path
    tasks: int
    shards: int
    manifest: dict[str, Any]


def shard_name(index: int) -> str:
    return f"shard-{index:05d}.parquet"


def selection_sql(where: str | None, order: str | None, interleave: bool = True) -> str:
    """The query that selects and orders a curriculum (kept verbatim in the manifest)."""
    predicate = f"WHERE ({where})" if where and where.strip() else ""
    if order and order.strip():
        return f"SELECT * FROM tasks {predicate} ORDER BY {order}, task_id"
    if not interleave:
        return f"SELECT * FROM tasks {predicate} ORDER BY difficulty, min_steps, scenario, task_id"
    return (
        f"WITH selected AS (SELECT * FROM tasks {predicate}), "
        "placed AS (SELECT *, (row_number() OVER (PARTITION BY difficulty, scenario "
        "ORDER BY min_steps, task_id) - 0.5) / count(*) OVER (PARTITION BY difficulty, scenario) "
        "AS _position FROM selected) "
        "SELECT * EXCLUDE (_position) FROM placed "
        "ORDER BY difficulty, _position, scenario, task_id"
    )


def _require_tasks_view(con: duckdb.DuckDBPyConnection, data: str | os.PathLike) -> None:
    views = {r[0] for r in con.execute("SELECT view_name FROM duckdb_views()").fetchall()}
    if "tasks" not in views:
        raise CurriculumError(
            f"no tasks in the store at {store.DataPaths.of(data).root}: run `ecomrlve pipeline` "
            "(or `ecomrlve generate`) first"
        )


def _sql_message(where: str | None, order: str | None, err: Exception) -> str:
    return f"cannot select tasks (--where {where!r}, --order {order!r}): {str(err).splitlines()[0]}"


def select_tasks(
    data: str | os.PathLike, where: str | None, order: str | None, interleave: bool = True
) -> tuple[pl.DataFrame, str]:
    """Run the selection on a read-only connection (the predicate is trusted, not writable)."""
    query = selection_sql(where, order, interleave)
    con = store.connect(data, read_only=True)
    try:
        _require_tasks_view(con, data)
        df = con.sql(check_read_query(query)).pl()
    except (duckdb.Error, ReadOnlySQLError) as err:
        raise CurriculumError(_sql_message(where, order, err)) from None
    finally:
        con.close()
    df = with_column_defaults(df)  # rows of stores written before a column existed
    missing = [c for c in TASK_COLUMNS if c not in df.columns]
    if missing:
        raise CurriculumError(f"the tasks view lacks columns {missing}")
    # hive partition columns may come back loosely typed; the shard schema is fixed
    df = df.select(TASK_COLUMNS).with_columns(
        pl.col("difficulty").cast(pl.Int64), pl.col("min_steps").cast(pl.Int64)
    )
    return df, query


def catalog_predicate(catalog_hash: str) -> str:
    """`catalog_hash = '...'` for a --where (tasks of another catalog cannot run in this world)."""
    if not re.fullmatch(r"[0-9a-f]{1,64}", catalog_hash):
        raise CurriculumError(f"catalog_hash {catalog_hash!r} is not a hex digest")
    return f"catalog_hash = '{catalog_hash}'"


def _prompt_builders() -> tuple[Callable[[Task], list[dict[str, Any]]], list[dict[str, Any]]]:
    from ecomrlve.env import initial_messages, tool_schemas

    return initial_messages, tool_schemas()


def with_prompts(df: pl.DataFrame) -> tuple[pl.DataFrame, list[dict[str, Any]]]:
    """Add `messages` (the env's opening chat) and `tools` (JSON tool schemas) to task rows."""
    initial_messages, tools = _prompt_builders()
    messages = [
        chat_messages(initial_messages(Task.from_row(row))) for row in df.iter_rows(named=True)
    ]
    tools_json = json.dumps(tools, sort_keys=True)
    message_type = pl.List(pl.Struct({"role": pl.String, "content": pl.String}))
    out = df.with_columns(
        pl.Series("messages", messages, dtype=message_type),
        pl.lit(tools_json).alias("tools"),
    )
    return out, tools


def _counts(df: pl.DataFrame) -> dict[str, dict[str, dict[str, int]]]:
    """scenario -> difficulty -> step band -> tasks."""
    grouped = (
        df.select("scenario", "difficulty", "min_steps")
        .with_columns(pl.col("min_steps").map_elements(step_band, return_dtype=pl.String))
        .group_by("scenario", "difficulty", "min_steps")
        .len()
        .sort("scenario", "difficulty", "min_steps")
    )
    counts: dict[str, dict[str, dict[str, int]]] = {}
    for scenario, difficulty, band, n in grouped.iter_rows():
        counts.setdefault(scenario, {}).setdefault(str(difficulty), {})[band] = int(n)
    return counts


def _totals(df: pl.DataFrame, column: str) -> dict[str, int]:
    if column == "step_band":
        series = df["min_steps"].map_elements(step_band, return_dtype=pl.String)
    else:
        series = df[column]
    return {str(k): int(v) for k, v in sorted(series.value_counts().iter_rows())}


def _check_catalog(data: str | os.PathLike, per_hash: dict[str, int]) -> str:
    """The selection's one catalog_hash, which must be the store's current catalog."""
    current = current_catalog_hash(data)
    if sorted(per_hash) != [current]:
        stale = {h: n for h, n in per_hash.items() if h != current}
        raise CurriculumError(
            f"the selection holds tasks of another catalog ({stale} tasks by catalog_hash; the "
            f"store's catalog is {current}): add `{catalog_predicate(current)}` to --where"
        )
    return current


def preflight(data: str | os.PathLike, where: str | None, order: str | None) -> int:
    """Check a selection before any flow starts: valid SQL, not empty, one current catalog.

    Returns the number of selected tasks. Read-only; raises CurriculumError.
    """
    con = store.connect(data, read_only=True)
    try:
        _require_tasks_view(con, data)
        query = selection_sql(where, order, interleave=False)
        counts = check_read_query(f"SELECT catalog_hash, count(*) FROM ({query}) GROUP BY ALL")
        per_hash = dict(con.sql(counts).fetchall())
    except (duckdb.Error, ReadOnlySQLError) as err:
        raise CurriculumError(_sql_message(where, order, err)) from None
    finally:
        con.close()
    if not per_hash:
        raise CurriculumError(f"no tasks match --where {where!r}: nothing to shard")
    _check_catalog(data, per_hash)
    return sum(per_hash.values())


def _swap_in(built: Path, final: Path) -> None:
    """Put `built` at `final`; any previous curriculum moves aside first and is then removed."""
    old = None
    if final.exists():
        old = final.with_name(f".{final.name}.tmp-old-{os.getpid()}-{uuid.uuid4().hex[:8]}")
        os.replace(final, old)
    os.replace(built, final)
    store.fsync_dir(final.parent)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def build_curriculum(
    data: str | os.PathLike,
    name: str,
    *,
    where: str | None = None,
    order: str | None = None,
    shard_size: int = 256,
    interleave: bool = True,
    progress: ProgressFn | None = None,
) -> CurriculumResult:
    """Select, order and shard tasks into `DIR/curricula/NAME` (replacing a previous build).

    The caller holds the data directory's writer lock (`store.exclusive_lock`).
    """
    name = store.validate_identifier(name, "curriculum name")
    if shard_size < 1:
        raise CurriculumError(f"--shard-size must be >= 1, got {shard_size}")
    paths = store.DataPaths.of(data)
    df, query, chash = _selected(paths.root, where, order, interleave)
    df, tools = with_prompts(df)

    final = paths.curricula / name
    build = final.with_name(f".{name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}")
    (build / VERL_DIR).mkdir(parents=True)
    (build / VERL_VAL_DIR).mkdir()
    verl_df = with_verl_columns(df)
    val_ids = pl.Series(sorted(verl_validation_ids(df)), dtype=pl.String)
    is_val = pl.col("task_id").is_in(val_ids.implode())
    try:
        shards = _write_shards(build, df, verl_df, is_val, shard_size, progress)
        manifest = _manifest(
            name,
            df,
            shards,
            source_query=query,
            selection={"where": where, "order": order, "interleave": interleave},
            shard_size=shard_size,
            catalog_hash=chash,
            val_tasks=len(val_ids),
            tools=tools,
        )
        verl_rows(verl_df.filter(is_val), split="val").write_parquet(
            build / VERL_VAL_FILE, compression="zstd"
        )
        text = json.dumps(manifest, indent=2, sort_keys=False) + "\n"
        (build / MANIFEST).write_text(text)
        (build / DATASET_CARD).write_text(dataset_card(name, df.height, len(val_ids)))
        _fsync_files(build)
        _swap_in(build, final)
    except BaseException:
        shutil.rmtree(build, ignore_errors=True)
        raise
    log.info("curriculum %s: %d tasks in %d shards at %s", name, df.height, len(shards), final)
    return CurriculumResult(name, final, df.height, len(shards), manifest)


def _selected(
    root: Path, where: str | None, order: str | None, interleave: bool
) -> tuple[pl.DataFrame, str, str]:
    """The tasks `where` selects in curriculum order, the query that read them and their one
    catalog hash; `CurriculumError` when none match, a task_id repeats or catalogs mix."""
    df, query = select_tasks(root, where, order, interleave)
    if df.height == 0:
        raise CurriculumError(f"no tasks match --where {where!r}: nothing to shard")
    if df["task_id"].n_unique() != df.height:
        raise CurriculumError("the selection holds duplicate task_ids; the store is inconsistent")
    chash = _check_catalog(root, dict(df["catalog_hash"].value_counts().iter_rows()))
    return df, query, chash


def _write_shards(
    build: Path,
    df: pl.DataFrame,
    verl_df: pl.DataFrame,
    is_val: pl.Expr,
    shard_size: int,
    progress: ProgressFn | None,
) -> list[dict[str, Any]]:
    """Write shard i of `df` (the trainer's rows) and of `verl_df` (the same tasks as verl rows,
    less the validation ones `is_val` marks), `shard_size` tasks each; the manifest's entry of
    each shard."""
    shards: list[dict[str, Any]] = []
    n_shards = (df.height + shard_size - 1) // shard_size
    for i in range(n_shards):
        shard = df.slice(i * shard_size, shard_size)
        shard.write_parquet(build / shard_name(i), compression="zstd", statistics=True)
        verl_part = verl_df.slice(i * shard_size, shard_size).filter(~is_val)
        verl_rows(verl_part).write_parquet(build / VERL_DIR / shard_name(i), compression="zstd")
        shards.append(
            {
                "file": shard_name(i),
                "verl_file": f"{VERL_DIR}/{shard_name(i)}",
                "tasks": shard.height,
                "first_task_id": shard["task_id"][0],
                "difficulty": [int(shard["difficulty"].min()), int(shard["difficulty"].max())],
                "min_steps": [int(shard["min_steps"].min()), int(shard["min_steps"].max())],
                "counts": _counts(shard),
            }
        )
        if progress:
            progress(ProgressEvent("shards", i + 1, n_shards, unit="shard"))
    return shards


def _manifest(
    name: str,
    df: pl.DataFrame,
    shards: list[dict[str, Any]],
    *,
    source_query: str,
    selection: dict[str, Any],
    shard_size: int,
    catalog_hash: str,
    val_tasks: int,
    tools: list[dict[str, Any]],
) -> dict[str, Any]:
    """`manifest.json` of a curriculum: how it was selected, what it holds, its shards.
    `selection`: its `where`, `order` and `interleave`, in that order."""
    return {
        "format": MANIFEST_FORMAT,
        "name": name,
        "source_query": source_query,
        **selection,
        "shard_size": shard_size,
        "tasks": df.height,
        "catalog_hash": catalog_hash,
        "seeds": sorted(int(s) for s in df["seed"].unique()),
        "scenarios": _totals(df, "scenario"),
        "difficulties": _totals(df, "difficulty"),
        "step_bands": _totals(df, "step_band"),
        "counts": _counts(df),
        "columns": df.columns,
        "verl": {
            "dir": VERL_DIR,
            "data_source": DATA_SOURCE,
            "ability": ABILITY,
            "agent_name": AGENT_NAME,
            "val_file": VERL_VAL_FILE,
            "val_tasks": val_tasks,
        },
        "tools": tools,
        "shards": shards,
    }


def _fsync_files(folder: Path) -> None:
    """Flush every file below `folder` to disk (before it is swapped in)."""
    for file in folder.rglob("*"):
        if file.is_file():
            with open(file, "rb+") as fh:
                os.fsync(fh.fileno())


def dataset_card(name: str, tasks: int, val_tasks: int) -> str:
    """The curriculum folder's dataset card: its YAML names the train and validation files."""
    return (
        "---\n"
        "configs:\n"
        "- config_name: default\n"
        "  data_files:\n"
        "  - split: train\n"
        f"    path: {VERL_DIR}/shard-*.parquet\n"
        "  - split: validation\n"
        f"    path: {VERL_VAL_FILE}\n"
        "---\n"
        f"# Curriculum `{name}`\n\n"
        f"{tasks - val_tasks} training and {val_tasks} validation tasks as verl / TRL rows, "
        "easy to hard (no shuffle). The trainer's shards (`shard-*.parquet`) and "
        f"`{MANIFEST}` sit beside them.\n"
    )


def manifest_fingerprint(data: str | os.PathLike, name: str) -> str | None:
    """A short hash of the manifest (cache key of the training stage), None if absent."""
    path = store.DataPaths.of(data).curricula / name / MANIFEST
    with contextlib.suppress(FileNotFoundError):
        return store.file_hash(path)
    return None
