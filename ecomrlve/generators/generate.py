"""Generate, validate and write tasks: one task, one chunk, a whole run, and the store write.

* `generate_task(ctx, key0, band)` draws plans with attempts 0, 1, 2… (each attempt its own
  `SeedSequence`) until one's core steps (`Plan.core_steps`: the calls that serve the main
  request, not an add-on beside it nor a world event's handling) land in the step band and it
  builds on this catalog; the attempt is
  part of the `task_id`, so `regenerate(task_id)` rebuilds the same task without the band.
* Every task's reference is replayed through the env's verifier (`reference_turns` + `verify`)
  before it is kept; a task that fails is counted in the report and never written.
* `generate_chunk` is the unit a flow fans out (one scenario × difficulty, an index range);
  `generate_tasks` spreads N tasks over the cells and runs chunks on `fanout.chunk_executor`
  (the processes kind: each worker loads the catalog once), as the flows do; `write_tasks`
  publishes one Parquet file per partition and run, all-or-nothing, and refreshes the views.
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from collections import Counter, deque
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from ecomrlve import store
from ecomrlve.config import EnvConfig
from ecomrlve.env import reference_turns, verify
from ecomrlve.generators.base import GenerationError, ScenarioConfig, TaskKey
from ecomrlve.generators.context import GenContext
from ecomrlve.generators.difficulty import axes_for, check_difficulty
from ecomrlve.generators.draws import seed_sequence
from ecomrlve.generators.events import EVENTS_FROM, add_events, check_events_from
from ecomrlve.generators.fanout import chunk_executor, spawn_can_import_main
from ecomrlve.generators.registry import get_scenario, scenario_names
from ecomrlve.progress import ProgressEvent, ProgressFn
from ecomrlve.store import DataPaths, StoreError
from ecomrlve.tasks import TASK_SCHEMA, Task

log = logging.getLogger(__name__)

MAX_ATTEMPTS = 400  # plans drawn per task before giving up on the step band
MAX_BUILD_FAILURES = 24  # catalog builds that may fail (e.g. nothing fits) per task
FEASIBILITY_SAMPLES = 400
MIN_BAND_PROBABILITY = 0.02  # a cell below this share of in-band plans is skipped for the band
FEASIBILITY_STREAM = 97
CHUNK_SIZE = 250
IN_FLIGHT_PER_WORKER = 3  # chunks queued per pool process (one running, two ready)


@dataclass
class GenerationReport:
    """What a run did: tasks kept, and every task given up on or rejected, by reason."""

    requested: int = 0
    generated: int = 0
    invalid: int = 0  # built but the verifier rejected the reference: never written
    gave_up: int = 0  # no plan in the step band / no buildable draw within the attempt limits
    skipped_cells: list[str] = field(default_factory=list)  # cells that cannot reach the band
    reasons: Counter = field(default_factory=Counter)
    attempts: int = 0  # plans drawn (>= generated)
    build_failures: int = 0
    seconds: float = 0.0

    def merge(self, other: GenerationReport) -> GenerationReport:
        self.requested += other.requested
        self.generated += other.generated
        self.invalid += other.invalid
        self.gave_up += other.gave_up
        self.skipped_cells += other.skipped_cells
        self.reasons.update(other.reasons)
        self.attempts += other.attempts
        self.build_failures += other.build_failures
        self.seconds = max(self.seconds, other.seconds)
        return self

    def to_json(self) -> dict[str, Any]:
        return {
            "requested": self.requested,
            "generated": self.generated,
            "invalid": self.invalid,
            "gave_up": self.gave_up,
            "skipped_cells": list(self.skipped_cells),
            "reasons": dict(self.reasons),
            "attempts": self.attempts,
            "build_failures": self.build_failures,
            "seconds": round(self.seconds, 3),
        }


# ---- one task ----------------------------------------------------------------------------------
def check_band(min_steps: int | None, max_steps: int | None) -> tuple[int, int] | None:
    """The inclusive step band, or None for no band; raises ValueError on a bad range."""
    if min_steps is None and max_steps is None:
        return None
    lo = 1 if min_steps is None else min_steps
    hi = 10_000 if max_steps is None else max_steps
    if lo < 1 or hi < 1:
        raise ValueError(f"step bounds must be >= 1, got {min_steps}-{max_steps}")
    if lo > hi:
        raise ValueError(f"--min-steps {lo} > --max-steps {hi}")
    return lo, hi


@cache
def config_of(scenario: str, difficulty: int) -> ScenarioConfig:
    return get_scenario(scenario).config_for(difficulty, axes_for(check_difficulty(difficulty)))


def generate_task(
    ctx: GenContext,
    scenario: str,
    seed: int,
    difficulty: int,
    index: int,
    band: tuple[int, int] | None = None,
    stats: GenerationReport | None = None,
    events_from: int = EVENTS_FROM,
) -> Task | None:
    """The task at (seed, scenario, difficulty, index): the first attempt whose plan is in
    `band` and builds on this catalog, with world events from difficulty `events_from` up
    (`ecomrlve.generators.events`). None when the attempt limits run out."""
    generator = get_scenario(scenario)
    config = config_of(scenario, difficulty)
    failures = 0
    for attempt in range(MAX_ATTEMPTS):
        key = TaskKey(scenario, seed, difficulty, index, attempt)
        rng = key.rng()
        plan = generator.plan_task(config, rng, key)
        if stats is not None:
            stats.attempts += 1
        if band is not None and not band[0] <= plan.core_steps <= band[1]:
            continue
        try:
            task = generator.finish(config, plan, rng, ctx, key)
        except GenerationError as err:
            failures += 1
            if stats is not None:
                stats.build_failures += 1
            log.debug("%s: %s", key.task_id, err)
            if failures >= MAX_BUILD_FAILURES:
                break
            continue
        # the calls that handle world events are no core steps: the band holds as planned
        return add_events(task, ctx, key, events_from)
    return None


def regenerate(
    task_id: str, context: GenContext | str | os.PathLike, events_from: int = EVENTS_FROM
) -> Task:
    """Rebuild a generated task from its id (same catalog and `events_from` -> the same row)."""
    ctx = _context(context)
    key = TaskKey.parse(task_id)
    generator = get_scenario(key.scenario)
    config = config_of(key.scenario, key.difficulty)
    rng = key.rng()
    plan = generator.plan_task(config, rng, key)
    return add_events(generator.finish(config, plan, rng, ctx, key), ctx, key, events_from)


def validate(task: Task, ctx: GenContext, config: EnvConfig | None = None) -> list[str]:
    """Replay the task's reference through the env's verifier; return its violations
    (empty when it succeeds)."""
    verdict = verify(task, reference_turns(task), ctx.catalog, config or _ENV_CONFIG)
    if verdict.success and task.min_steps == verdict.tool_calls:
        return []
    return verdict.violations or [
        f"reference made {verdict.tool_calls} calls, not {task.min_steps}"
    ]


_ENV_CONFIG = EnvConfig()


def task_row(task: Task) -> dict[str, Any]:
    row = task.to_row()
    row["attempt"] = TaskKey.parse(task.task_id).attempt
    return row


def rows_frame(rows: list[dict[str, Any]]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=TASK_SCHEMA, orient="row" if not rows else None)


# ---- chunks --------------------------------------------------------------------------------------
def band_probability(scenario: str, difficulty: int, band: tuple[int, int]) -> float:
    """Share of plans of this cell whose core step count is in `band` (fixed-seed estimate)."""
    return _band_probability(scenario, difficulty, band[0], band[1])


@cache
def _band_probability(scenario: str, difficulty: int, lo: int, hi: int) -> float:
    generator = get_scenario(scenario)
    config = config_of(scenario, difficulty)
    hits = 0
    for i in range(FEASIBILITY_SAMPLES):
        entropy = [FEASIBILITY_STREAM, generator.seed_id, difficulty, i]
        rng = np.random.default_rng(seed_sequence(entropy))
        hits += lo <= generator.plan(config, rng).core_steps <= hi
    return hits / FEASIBILITY_SAMPLES


def feasible_cells(
    scenarios: list[str], difficulty: tuple[int, int], band: tuple[int, int] | None
) -> tuple[list[tuple[str, int]], list[str]]:
    """(scenario, difficulty) cells that can produce tasks in `band`, and the skipped ones."""
    lo, hi = difficulty
    cells, skipped = [], []
    for d in range(lo, hi + 1):
        for scenario in scenarios:
            if band is None or band_probability(scenario, d, band) >= MIN_BAND_PROBABILITY:
                cells.append((scenario, d))
            else:
                skipped.append(f"{scenario}/d{d}")
    return cells, skipped


def _context(source: GenContext | str | os.PathLike) -> GenContext:
    return source if isinstance(source, GenContext) else GenContext.load(source)


def generate_cell(
    ctx: GenContext,
    seed: int,
    scenario: str,
    difficulty: int,
    start_index: int,
    count: int,
    band: tuple[int, int] | None,
    events_from: int = EVENTS_FROM,
) -> tuple[list[dict[str, Any]], GenerationReport]:
    """Rows of task indexes [start_index, start_index + count) of one cell, validated."""
    report = GenerationReport(requested=count)
    rows = []
    started = time.perf_counter()
    for index in range(start_index, start_index + count):
        task = generate_task(ctx, scenario, seed, difficulty, index, band, report, events_from)
        if task is None:
            report.gave_up += 1
            report.reasons["no plan in the step band or no buildable draw"] += 1
            continue
        violations = validate(task, ctx)
        if violations:
            report.invalid += 1
            report.reasons[f"{scenario}: {violations[0]}"] += 1
            log.warning("invalid %s: %s", task.task_id, "; ".join(violations))
            continue
        rows.append(task_row(task))
        report.generated += 1
    report.seconds = time.perf_counter() - started
    return rows, report


def generate_chunk(
    data_dir: GenContext | str | os.PathLike,
    seed: int,
    scenario: str,
    difficulty: int,
    start_index: int,
    count: int,
    min_steps: int | None = None,
    max_steps: int | None = None,
    events_from: int = EVENTS_FROM,
) -> tuple[pl.DataFrame, GenerationReport]:
    """Validated task rows for indexes [start_index, start_index + count) of one cell.

    With a step band, each index takes the first attempt whose plan is in the band; a cell
    that cannot reach the band returns no rows and names itself in `report.skipped_cells`.
    """
    _check_common(seed, [scenario], (difficulty, difficulty))
    if start_index < 0 or count < 0:
        raise ValueError("start_index and count must be >= 0")
    band = check_band(min_steps, max_steps)
    check_events_from(events_from)
    ctx = _context(data_dir)
    cells, skipped = feasible_cells([scenario], (difficulty, difficulty), band)
    if not cells:
        report = GenerationReport(requested=count, gave_up=count, skipped_cells=skipped)
        return rows_frame([]), report
    rows, report = generate_cell(
        ctx, seed, scenario, difficulty, start_index, count, band, events_from
    )
    return rows_frame(rows), report


def _check_common(seed: int, scenarios: list[str], difficulty: tuple[int, int]) -> None:
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be an integer >= 0, got {seed!r}")
    for scenario in scenarios:
        get_scenario(scenario)
    lo, hi = difficulty
    check_difficulty(lo)
    check_difficulty(hi)
    if lo > hi:
        raise ValueError(f"difficulty range {lo}-{hi} is empty")


def split_evenly(total: int, cells: int) -> list[int]:
    base, extra = divmod(total, cells)
    return [base + (1 if i < extra else 0) for i in range(cells)]


@dataclass(frozen=True)
class Chunk:
    scenario: str
    difficulty: int
    start_index: int
    count: int


def plan_run(
    n: int,
    scenarios: list[str],
    difficulty: tuple[int, int],
    band: tuple[int, int] | None,
    chunk_size: int = CHUNK_SIZE,
) -> tuple[list[Chunk], list[str]]:
    """Spread `n` tasks evenly over the scenarios that can reach the step band, then evenly
    over each scenario's feasible difficulties (a scenario that reaches the band at fewer
    difficulties gets more tasks per difficulty, so the mix stays balanced); cut each cell
    into index chunks."""
    cells, skipped = feasible_cells(scenarios, difficulty, band)
    if not cells:
        lo, hi = band or (0, 0)
        raise ValueError(
            f"no scenario x difficulty in the selection can produce tasks with {lo}-{hi} steps"
        )
    by_scenario: dict[str, list[int]] = {}
    for scenario, d in cells:
        by_scenario.setdefault(scenario, []).append(d)
    counts: dict[tuple[str, int], int] = {}
    for (scenario, ds), share in zip(
        by_scenario.items(), split_evenly(n, len(by_scenario)), strict=True
    ):
        for d, count in zip(ds, split_evenly(share, len(ds)), strict=True):
            counts[(scenario, d)] = count
    chunks = []
    for scenario, d in cells:
        count = counts[(scenario, d)]
        for offset in range(0, count, chunk_size):
            chunks.append(Chunk(scenario, d, offset, min(chunk_size, count - offset)))
    return chunks, skipped


def _run_chunk(
    data_dir: str, seed: int, chunk: Chunk, band: tuple[int, int] | None, events_from: int
) -> tuple[list[dict[str, Any]], GenerationReport]:
    """One chunk in a pool worker (its catalog loaded once per process)."""
    return _chunk_rows(GenContext.load(data_dir), seed, chunk, band, events_from)


def _chunk_rows(
    ctx: GenContext, seed: int, chunk: Chunk, band: tuple[int, int] | None, events_from: int
) -> tuple[list[dict[str, Any]], GenerationReport]:
    return generate_cell(
        ctx,
        seed,
        chunk.scenario,
        chunk.difficulty,
        chunk.start_index,
        chunk.count,
        band,
        events_from,
    )


@dataclass(frozen=True)
class RunOptions:
    """How `generate_tasks` and `generate_to_store` spread their `n` tasks and run the chunks
    (their keyword arguments)."""

    scenarios: list[str] | None = None  # None: every registered scenario
    difficulty: tuple[int, int] = (0, 10)
    min_steps: int | None = None  # the step band (core steps); None: no band
    max_steps: int | None = None
    workers: int = 1  # > 1: chunks in a process pool (needs a data directory)
    progress: ProgressFn | None = None
    chunk_size: int = CHUNK_SIZE
    events_from: int = EVENTS_FROM  # the first difficulty with world events


@dataclass
class _PlannedRun:
    band: tuple[int, int] | None
    chunks: list[Chunk]
    report: GenerationReport  # the skipped cells; the chunks' reports are merged into it


def _plan_checked_run(n: int, seed: int, options: RunOptions) -> _PlannedRun:
    """Check a run's inputs; return its step band, its chunks and a report of skipped cells."""
    if isinstance(n, bool) or not isinstance(n, int) or n <= 0:
        raise ValueError(f"the number of tasks must be positive, got {n!r}")
    workers = options.workers
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers!r}")
    scenarios = list(options.scenarios) if options.scenarios else list(scenario_names())
    _check_common(seed, scenarios, options.difficulty)
    band = check_band(options.min_steps, options.max_steps)
    chunks, skipped = plan_run(n, scenarios, options.difficulty, band, options.chunk_size)
    return _PlannedRun(band, chunks, GenerationReport(skipped_cells=skipped))


def _run_chunks(
    ctx_or_data: GenContext | str | os.PathLike,
    n: int,
    seed: int,
    planned: _PlannedRun,
    options: RunOptions,
) -> Iterator[tuple[Chunk, list[dict[str, Any]]]]:
    """(chunk, validated rows) as each chunk finishes; merges each chunk's report into the
    planned run's, reports progress after the caller has kept the rows, times the run."""
    report = planned.report
    report_progress = options.progress or (lambda event: None)
    started = time.perf_counter()
    done = 0
    check_events_from(options.events_from)
    for chunk, rows, part in _completed_chunks(
        ctx_or_data, planned.chunks, seed, planned.band, options.workers, options.events_from
    ):
        report.merge(part)
        done += chunk.count
        yield chunk, rows
        report_progress(
            ProgressEvent("generate", done, n, unit="tasks", metrics={"last": _cell(chunk)})
        )
    report.seconds = time.perf_counter() - started


def _completed_chunks(
    ctx_or_data: GenContext | str | os.PathLike,
    chunks: list[Chunk],
    seed: int,
    band: tuple[int, int] | None,
    workers: int,
    events_from: int = EVENTS_FROM,
) -> Iterator[tuple[Chunk, list[dict[str, Any]], GenerationReport]]:
    """(chunk, validated rows, report) for each chunk as it finishes (in a process pool when
    `workers > 1`); the caller keeps or spills the rows, so memory is one chunk at a time."""
    if workers > 1 and isinstance(ctx_or_data, GenContext):
        raise ValueError("workers > 1 needs the data directory (each worker loads it)")
    if workers > 1 and not spawn_can_import_main():
        log.warning(
            "workers=%d needs a __main__ that a new process can import; running serially", workers
        )
        workers = 1
    if workers == 1 or len(chunks) == 1:
        ctx = _context(ctx_or_data)
        for chunk in chunks:
            yield chunk, *_chunk_rows(ctx, seed, chunk, band, events_from)
        return
    data_dir = str(DataPaths.of(ctx_or_data).root)
    ctx = GenContext.load(data_dir)  # fail fast (no catalog) and build the search index once
    # This process is one of the `workers`: it runs chunks from the back of the queue while
    # `workers - 1` pool processes start (a spawned worker takes ~1 s to import and load the
    # catalog) and take chunks from the front, a few at a time.
    pending = deque(chunks)
    pool_size = workers - 1
    with chunk_executor("processes", pool_size, data_dir) as pool:
        running: dict[Future, Chunk] = {}
        while pending or running:
            while pending and len(running) < IN_FLIGHT_PER_WORKER * pool_size:
                chunk = pending.popleft()
                running[pool.submit(_run_chunk, data_dir, seed, chunk, band, events_from)] = chunk
            finished = [future for future in running if future.done()]
            for future in finished:
                rows, part = future.result()
                yield running.pop(future), rows, part  # pop: the rows are not kept by the dict
            if pending:
                chunk = pending.pop()
                yield chunk, *_chunk_rows(ctx, seed, chunk, band, events_from)
            elif running and not finished:
                wait(running, return_when=FIRST_COMPLETED)


def generate_tasks(
    ctx_or_data: GenContext | str | os.PathLike, n: int, seed: int, **options: Any
) -> tuple[pl.DataFrame, GenerationReport]:
    """`n` tasks spread evenly over scenarios x difficulties (cells that cannot reach the step
    band are skipped and reported), validated through the env's verifier. `options` are the
    fields of `RunOptions` (scenarios, difficulty, min_steps, max_steps, workers, progress,
    chunk_size, events_from).

    `workers > 1` runs chunks in a process pool (needs a data directory, not a context).
    Every row is held in memory: for large runs straight into the store, `generate_to_store`.
    """
    run = RunOptions(**options)
    planned = _plan_checked_run(n, seed, run)
    parts = [rows for _, rows in _run_chunks(ctx_or_data, n, seed, planned, run)]
    rows = [row for part in parts for row in part]
    df = rows_frame(rows)
    if df.height:
        df = df.sort("scenario", "difficulty", "index")
    return df, planned.report


SUMMARY_COLUMNS = ("task_id", "scenario", "difficulty", "min_steps")


def _cell(chunk: Any) -> str:
    return f"{chunk.scenario} d{chunk.difficulty}"


def generate_to_store(
    data_dir: str | os.PathLike, n: int, seed: int, run_name: str, **options: Any
) -> tuple[pl.DataFrame, GenerationReport, list[Path]]:
    """`generate_tasks` + `write_tasks` in memory bounded by one chunk and one partition
    (`options`: the fields of `RunOptions`, as for `generate_tasks`).

    Each finished chunk is spilled as Parquet into a hidden folder under `tasks/` (invisible to
    the views, swept by `store.recover` if this process dies); at the end the partitions are
    read back one at a time and published all-or-nothing exactly as `write_tasks` would write
    them (same bytes). Returns the `SUMMARY_COLUMNS` of every task written, the report and
    the files. Raises StoreError (nothing written) when no task is valid.
    """
    store.validate_identifier(run_name, "run name")
    run = RunOptions(**options)
    planned = _plan_checked_run(n, seed, run)
    report = planned.report
    paths = DataPaths.of(data_dir)
    if not paths.products.exists():
        raise StoreError(f"no catalog at {paths.catalog}: run `ecomrlve catalog` first")
    spill = store.temp_path_for(paths.tasks / f"spill-{run_name}")
    spilled: dict[tuple[str, int], list[Path]] = {}
    summaries: list[pl.DataFrame] = []
    try:
        spill.mkdir(parents=True)
        for chunk, rows in _run_chunks(paths.root, n, seed, planned, run):
            if rows:
                frame = rows_frame(rows)
                path = spill / f"{chunk.scenario}-d{chunk.difficulty}-i{chunk.start_index}.parquet"
                frame.write_parquet(path, compression="zstd", statistics=False)
                spilled.setdefault((chunk.scenario, chunk.difficulty), []).append(path)
                summaries.append(frame.select(SUMMARY_COLUMNS))
        if not spilled:
            raise StoreError(
                f"no valid task was generated ({report.invalid} failed validation, "
                f"{report.gave_up} found no plan in the step band); nothing written"
            )
        loaders = {
            key: (lambda files=files: pl.read_parquet(files))  # one partition in memory
            for key, files in sorted(spilled.items())
        }
        written = _publish_partitions(paths, run_name, loaders, prune=False)
    finally:
        shutil.rmtree(spill, ignore_errors=True)
    summary = pl.concat(summaries).sort("scenario", "difficulty", "task_id")
    return summary, report, written


# ---- the store -----------------------------------------------------------------------------------
def run_name_for(seed: int) -> str:
    return f"gen_s{seed}"


def write_tasks(
    data_dir: str | os.PathLike, df: pl.DataFrame, run_name: str, *, prune: bool = False
) -> list[Path]:
    """Write `df` as `tasks/scenario=S/difficulty=D/RUN.parquet`, all files or none, and refresh
    the views. A rerun of the same run replaces its files in the partitions it writes; with
    `prune`, the run's files in partitions `df` does not fill are removed in the same publish.
    A task id that another file of the store already holds is refused (StoreError, nothing
    written)."""
    store.validate_identifier(run_name, "run name")
    paths = DataPaths.of(data_dir)
    if df.height == 0:
        raise StoreError("no valid tasks to write")
    missing = [c for c in TASK_SCHEMA if c not in df.columns]
    if missing:
        raise StoreError(f"task rows lack column(s) {missing}")
    unknown = set(df["scenario"].unique()) - set(scenario_names())
    if unknown or df["difficulty"].min() < 0:
        raise StoreError(f"task rows with unknown scenario(s) {sorted(unknown)} or difficulty < 0")
    dupes = df.filter(pl.col("task_id").is_duplicated())
    if dupes.height:
        raise StoreError(f"task_id {dupes['task_id'][0]!r} appears twice in this run")
    parts = df.partition_by("scenario", "difficulty", as_dict=True, maintain_order=True)
    loaders = {(key[0], int(key[1])): (lambda part=part: part) for key, part in parts.items()}
    return _publish_partitions(paths, run_name, loaders, prune=prune)


def _publish_partitions(
    paths: DataPaths,
    run_name: str,
    loaders: dict[tuple[str, int], Callable[[], pl.DataFrame]],
    *,
    prune: bool,
) -> list[Path]:
    """Publish each (scenario, difficulty) frame as `RUN.parquet` of its partition, all files
    or none, loading one partition at a time; refuse task ids another file already holds."""
    targets = {
        key: paths.tasks / f"scenario={key[0]}" / f"difficulty={key[1]}" / f"{run_name}.parquet"
        for key in loaders
    }
    written: list[Path] = []
    with store.exclusive_lock(paths.root):
        stale = []
        if prune:
            keep = set(targets.values())
            stale = [
                p
                for p in paths.tasks.glob(f"scenario=*/difficulty=*/{run_name}.parquet")
                if p not in keep
            ]
        with store.publish(paths.root) as tx:  # a clash raises here: nothing is published
            for key, target in targets.items():
                part = loaders[key]()
                others = [p for p in target.parent.glob("*.parquet") if p != target]
                if others:
                    held = pl.scan_parquet(others).select("task_id").collect()["task_id"]
                    clash = part.filter(pl.col("task_id").is_in(held.implode()))
                    if clash.height:
                        raise StoreError(
                            f"task {clash['task_id'][0]} is already in the store "
                            f"({target.parent}); use another --seed or --run"
                        )
                tx.write_parquet(part.sort("index", "task_id"), target)
                written.append(target)
                del part
            for path in stale:
                tx.remove(path)
    return written
