"""The pipeline's stages as small typed Prefect tasks.

Deterministic stages are cached on their inputs + their source (`INPUTS + TASK_SOURCE`), with
results persisted under the data directory (`DIR/.prefect/results`), so a rerun with the same
config skips finished work and a run killed mid-way resumes from the last finished task. Inputs
include a fingerprint of the code a stage calls into (generators, env), so editing a generator
invalidates its chunks too. Stages whose outputs are files return what they wrote; the flows
re-check that on a cache hit (`outputs_intact`) and recompute when the files are gone.

Retries happen only on I/O errors (`OSError`): a deterministic stage that failed on its inputs
would fail the same way again.

Tests call the plain functions through `.fn`, e.g. `generate_chunk_stage.fn(...)`.
"""

from __future__ import annotations

import ast
import hashlib
import io
import json
import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl
from prefect import get_run_logger, task
from prefect.cache_policies import TASK_SOURCE, CachePolicy
from prefect.exceptions import MissingContextError
from prefect.utilities.hashing import hash_objects

from ecomrlve import store
from ecomrlve.config import EVENTS_FROM, EcomConfig
from ecomrlve.flows.progress import ProgressArtifact, report
from ecomrlve.flows.publishing import PublishResult, publish_run
from ecomrlve.generators.generate import Chunk
from ecomrlve.progress import ProgressEvent

log = logging.getLogger(__name__)

RESULTS_DIR = Path(".prefect") / "results"


def results_dir(data_dir: str | os.PathLike) -> Path:
    """Where cached stage results live: inside the data directory they describe."""
    return store.DataPaths.of(data_dir).root / RESULTS_DIR


def stage_logger() -> Any:
    """The run logger inside a flow/task run (its lines reach the Prefect UI); the module
    logger when a stage function is called directly (`stage.fn(...)` in tests and scripts)."""
    try:
        return get_run_logger()
    except MissingContextError:
        return log


def retry_on_io(task: Any, task_run: Any, state: Any) -> bool:
    """Prefect retry condition: retry only when the failure was an OSError (disk, network FS)."""
    try:
        state.result()
    except OSError:
        return True
    except BaseException:
        return False
    return False


IO_RETRIES: dict[str, Any] = {
    "retries": 2,
    "retry_delay_seconds": 1,
    "retry_condition_fn": retry_on_io,
}


PACKAGE_ROOT = Path(__file__).resolve().parents[1]  # the ecomrlve package folder


def code_modules(*entries: str, package_root: Path = PACKAGE_ROOT) -> dict[str, Path]:
    """The ecomrlve modules that running `entries` can execute: the entries, every ecomrlve
    module they import (at module top or inside functions), transitively, and the packages
    above each one (importing `a.b` runs `a/__init__.py`). Maps module name to its file.
    An entry `a.b.*` stands for every module of the package `a.b` (one that is imported by
    discovery at run time, as the scenario registry imports `generators/scenarios/`).

    Derived from the source with `ast`, so it never lags behind an added import, and nothing
    is imported to find it (`package_root` may be a copy of the package).
    """
    package = package_root.name
    found: dict[str, Path] = {}
    pending = list(entries)
    while pending:
        name = pending.pop()
        if name.endswith(".*"):
            folder = package_root.parent.joinpath(*name[:-2].split("."))
            modules = sorted(p.stem for p in folder.glob("*.py") if p.stem != "__init__")
            pending += [name[:-2], *(f"{name[:-2]}.{m}" for m in modules)]
            continue
        if name in found:
            continue
        path = _module_file(name, package_root)
        if path is None:
            continue
        found[name] = path
        parts = name.split(".")
        pending += [".".join(parts[:i]) for i in range(1, len(parts))]
        is_package = path.name == "__init__.py"
        for node in ast.walk(_parse(path)):
            if isinstance(node, ast.Import):
                pending += [a.name for a in node.names if a.name.split(".")[0] == package]
            elif isinstance(node, ast.ImportFrom):
                if node.level:  # relative: from the module's own package upward
                    base = parts if is_package else parts[:-1]
                    base = base[: len(base) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                if target.split(".")[0] == package:
                    pending.append(target)
                    pending += [f"{target}.{a.name}" for a in node.names]  # submodules, if any
    return found


def _parse(path: Path, attempts: int = 3) -> ast.Module:
    """`ast.parse` of a file, tried again on CPython 3.11's spurious "AST constructor recursion
    depth mismatch" SystemError (CPython gh-106905: the AST builder's depth counter lives in
    interpreter-wide state, so another thread building an AST at the same moment trips the
    check). Seen in `pytest -m "not slow"` with Prefect's threads alive; a retry parses it."""
    source = path.read_bytes()
    for attempt in range(attempts):
        try:
            return ast.parse(source, filename=str(path))
        except SystemError as err:
            if "recursion depth mismatch" not in str(err) or attempt == attempts - 1:
                raise
    raise AssertionError("unreachable")


def _module_file(name: str, package_root: Path) -> Path | None:
    base = package_root.parent.joinpath(*name.split("."))
    for path in (base / "__init__.py", base.with_suffix(".py")):
        if path.is_file():
            return path
    return None


def source_fingerprint(*entries: str, package_root: Path = PACKAGE_ROOT) -> str:
    """sha256 prefix over the source of every ecomrlve module `entries` can run
    (`code_modules`): a cache input that changes with the code a stage calls into, which
    TASK_SOURCE (the stage function's own lines) does not see.
    """
    digest = hashlib.sha256()
    for name, path in sorted(code_modules(*entries, package_root=package_root).items()):
        digest.update(f"{name}\n".encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


@dataclass(frozen=True)
class PackedRows:
    """Task rows as zstd Parquet bytes: compact as a persisted result and across processes.

    Cache keys see `digest`, not the bytes: binary bytes are hashed through pickle, whose output
    depends on object identity, so two equal inputs could key differently (`StableInputs`).
    """

    parquet: bytes
    digest: str
    rows: int

    @classmethod
    def of(cls, df: pl.DataFrame) -> PackedRows:
        buffer = io.BytesIO()
        df.write_parquet(buffer, compression="zstd", statistics=False)
        data = buffer.getvalue()
        return cls(data, hashlib.sha256(data).hexdigest()[:24], df.height)

    def frame(self) -> pl.DataFrame:
        return pl.read_parquet(io.BytesIO(self.parquet))


@dataclass
class StableInputs(CachePolicy):
    """Prefect's INPUTS policy, with packed rows (also inside lists) keyed by their digest."""

    def compute_key(
        self,
        task_ctx: Any,
        inputs: dict[str, Any] | None,
        flow_parameters: dict[str, Any] | None,
        **kwargs: Any,
    ) -> str | None:
        if not inputs:
            return None
        return hash_objects({k: _stable(v) for k, v in inputs.items()}, raise_on_failure=True)


def _stable(value: Any) -> Any:
    if isinstance(value, PackedRows):
        return ("rows", value.digest, value.rows)
    if isinstance(value, TaskChunk | ValidatedChunk):
        return (type(value).__name__, value.chunk, _stable(value.packed))
    if isinstance(value, list | tuple):
        return [_stable(v) for v in value]
    return value


CACHED = StableInputs() + TASK_SOURCE


def chunk_label(chunk: Any) -> str:
    return f"{chunk.scenario}-d{chunk.difficulty}-i{chunk.start_index}"


# ---- catalog ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CatalogResult:
    products: int
    seed: int
    catalog_hash: str
    families: int
    brands: int


@task(name="build_catalog", cache_policy=CACHED, persist_result=True, **IO_RETRIES)
def build_catalog_stage(data_dir: str, products: int, seed: int) -> CatalogResult:
    """Synthesize the catalog (same products + seed, same bytes) and refresh the views."""
    from ecomrlve.catalogs import build_catalog

    logger = stage_logger()
    with store.exclusive_lock(data_dir):
        summary = build_catalog(data_dir, products, seed)
    logger.info(
        "catalog: %d products, %d families, %d brands, catalog_hash %s",
        summary.products,
        summary.families,
        summary.brands,
        summary.catalog_hash,
    )
    return CatalogResult(
        summary.products, seed, summary.catalog_hash, summary.families, summary.brands
    )


def catalog_intact(data_dir: str, result: CatalogResult) -> bool:
    """True when the catalog on disk is still the one the cached result describes."""
    from ecomrlve.catalogs import catalog_hash

    paths = store.DataPaths.of(data_dir)
    if not (paths.products.exists() and paths.policies.exists()):
        return False
    try:
        return catalog_hash(paths.root) == result.catalog_hash
    except store.StoreError:
        return False


# ---- generation ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class ChunkRows:
    """A chunk's task rows as a stage passes them on (generated, then validated)."""

    chunk: Chunk
    packed: PackedRows

    @property
    def rows(self) -> int:
        return self.packed.rows

    def frame(self) -> pl.DataFrame:
        return self.packed.frame()


@dataclass(frozen=True)
class TaskChunk(ChunkRows):
    """One generated chunk: its rows, the generator's time and report."""

    seconds: float
    report: dict[str, Any] = field(default_factory=dict)


@task(name="generate_chunk", cache_policy=CACHED, persist_result=True, **IO_RETRIES)
def generate_chunk_stage(
    data_dir: str,
    seed: int,
    chunk: Chunk,
    min_steps: int | None,
    max_steps: int | None,
    catalog_hash: str,
    code_version: str,
    events_from: int = EVENTS_FROM,
) -> TaskChunk:
    """Generate task indexes [start, start + count) of one scenario × difficulty (the
    generators replay every reference through the verifier and keep only passing tasks), with
    world events from difficulty `events_from` up (`NO_EVENTS`: none).

    `catalog_hash` and `code_version` are not used here but are cache inputs: a new catalog or
    edited generator code makes these rows stale. `events_from` is an input too, so a changed
    threshold regenerates.
    """
    from ecomrlve.generators import generate_chunk
    from ecomrlve.generators.fanout import run_on_executor

    started = time.perf_counter()
    # computed on the flow's open `chunk_executor` (here when none is open)
    df, report = run_on_executor(
        data_dir,
        generate_chunk,
        data_dir,
        seed,
        chunk.scenario,
        chunk.difficulty,
        chunk.start_index,
        chunk.count,
        min_steps,
        max_steps,
        events_from,
    )
    seconds = time.perf_counter() - started
    stage_logger().info("%s: %d tasks in %.2f s", chunk_label(chunk), df.height, seconds)
    return TaskChunk(chunk, PackedRows.of(df), seconds, report.to_json())


# ---- validation ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class ValidatedChunk(ChunkRows):
    """The rows of a chunk that passed validation, and the others counted by reason."""

    rejected: dict[str, int] = field(default_factory=dict)


@task(name="validate_tasks", cache_policy=CACHED, persist_result=True)
def validate_tasks_stage(
    generated: TaskChunk,
    min_steps: int | None,
    max_steps: int | None,
    catalog_hash: str,
    code_version: str,
) -> ValidatedChunk:
    """Keep the rows that meet the store's contract (columns, cell, step band, catalog, unique
    ids); count the others by reason."""
    from ecomrlve.flows.validation import validate_frame

    chunk = generated.chunk
    valid, rejected = validate_frame(
        generated.frame(),
        scenario=chunk.scenario,
        difficulty=chunk.difficulty,
        min_steps=min_steps,
        max_steps=max_steps,
        catalog_hash=catalog_hash,
    )
    if rejected:
        stage_logger().warning("%s: rejected %s", chunk_label(chunk), rejected)
    return ValidatedChunk(chunk, PackedRows.of(valid), rejected)


# ---- publish ------------------------------------------------------------------------------------


@task(name="publish", cache_policy=CACHED, persist_result=True, **IO_RETRIES)
def publish_stage(data_dir: str, run: str, chunks: list[ValidatedChunk]) -> PublishResult:
    """Write the run as one Parquet file per scenario × difficulty, all-or-nothing.

    A rerun of the same run replaces its files (no duplicate rows); files of the run that the
    new chunks no longer fill are removed.
    """
    frames = [c.frame() for c in chunks if c.rows]
    if not frames:
        raise store.StoreError(f"run {run}: no valid tasks to publish")
    result = publish_run(data_dir, run, pl.concat(frames, how="vertical_relaxed"))
    stage_logger().info(
        "published %d tasks in %d files (run %s)", result.tasks, len(result.files), run
    )
    return result


# ---- curriculum, plots --------------------------------------------------------------------------


@dataclass(frozen=True)
class CurriculumSummary:
    name: str
    path: str
    tasks: int
    shards: int
    manifest_hash: str


@task(name="build_curriculum", cache_policy=CACHED, persist_result=True, **IO_RETRIES)
def build_curriculum_stage(
    data_dir: str,
    name: str,
    where: str | None,
    order: str | None,
    shard_size: int,
    interleave: bool,
    tasks_version: str,
    code_version: str,
) -> CurriculumSummary:
    """Shards for `name`. `tasks_version` (hash of the published files) keys the cache."""
    from ecomrlve.flows.shards import build_curriculum, manifest_fingerprint

    with store.exclusive_lock(data_dir):
        result = build_curriculum(
            data_dir, name, where=where, order=order, shard_size=shard_size, interleave=interleave
        )
    stage_logger().info(
        "curriculum %s: %d tasks in %d shards at %s", name, result.tasks, result.shards, result.path
    )
    return CurriculumSummary(
        name, str(result.path), result.tasks, result.shards, manifest_fingerprint(data_dir, name)
    )


def curriculum_intact(data_dir: str, summary: CurriculumSummary) -> bool:
    from ecomrlve.flows.shards import manifest_fingerprint

    return manifest_fingerprint(data_dir, summary.name) == summary.manifest_hash


@task(name="plot_dataset", cache_policy=CACHED, persist_result=True, **IO_RETRIES)
def plot_stage(data_dir: str, tasks_version: str, code_version: str) -> list[str]:
    """PNG plots of the published tasks (heatmap, min_steps histograms) under DIR/plots."""
    from ecomrlve.flows.plots import plot_dataset
    from ecomrlve.generators.registry import scenario_names

    paths = plot_dataset(data_dir, order=scenario_names())
    stage_logger().info("plots: %s", ", ".join(str(p) for p in paths))
    return [str(p) for p in paths]


# ---- training -----------------------------------------------------------------------------------


@task(name="train", cache_policy=CACHED, persist_result=True)
def train_stage(
    config: EcomConfig,
    data_dir: str,
    output: str,
    curriculum: str,
    curriculum_hash: str,
    code_version: str,
) -> dict[str, Any]:
    """SFT warm-start → DAPO → held-out evaluation on the curriculum's shards.

    Cached like the other stages (same config, same shards, same training code: the finished
    run is reused, and its rows are not appended to the results tables twice); the flow checks
    that `OUTPUT/summary.json` still names the cached run.
    """
    from ecomrlve.train.run import train_from_config, train_with_torchrun

    logger = stage_logger()

    artifact = ProgressArtifact("train-progress")

    def on_progress(event: ProgressEvent) -> None:
        report(event.replace(stage="train"))
        artifact(event)

    if config.training.scale.gpus > 1:  # FSDP2 over that many ranks, one torchrun per stage run
        result = train_with_torchrun(
            config, Path(data_dir), Path(output), curriculum, config.training.scale.gpus
        )
    else:
        summary = train_from_config(
            config, Path(data_dir), Path(output), curriculum=curriculum, progress=on_progress
        )
        result = summary.to_json()
    logger.info(
        "training run %s: %d SFT steps, %d RL steps, held-out %s, output %s",
        result["run_id"],
        result["sft_steps"],
        result["rl_steps"],
        {k: round(v.get("pass_at_1", 0.0), 3) for k, v in result["held_out"].items()},
        result["output"],
    )
    return result


def training_intact(result: dict[str, Any]) -> bool:
    """True while the run folder still holds the cached run's summary."""
    path = Path(result["output"]) / "summary.json"
    try:
        return json.loads(path.read_text()).get("run_id") == result["run_id"]
    except (OSError, json.JSONDecodeError):
        return False
