"""The flows: `pipeline`, `generate_tasks`, `curriculum` and `regenerate_curriculum`.

Each flow only sequences the typed stages of `ecomrlve.flows.stages`; the work and the checks
live there and in the plain modules they call. Every stage that writes takes the data
directory's writer lock for its own write (one writer at a time).

Progress: a CLI registers a listener with `progress.progress_listener(fn)`; the flows report
(stage, fraction) as stages and generation chunks finish.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
from prefect import flow, get_run_logger
from prefect.futures import as_completed
from prefect.runtime import flow_run as prefect_flow_run
from prefect.task_runners import ThreadPoolTaskRunner
from pydantic import BaseModel, Field

from ecomrlve import store
from ecomrlve.config import EVENTS_FROM, NO_EVENTS, DataConfig
from ecomrlve.flows.artifacts import publish_artifacts_stage
from ecomrlve.flows.params import (
    CurriculumParams,
    PipelineParams,
    RegenerateParams,
    TaskRunnerKind,
    with_overrides,
)
from ecomrlve.flows.progress import report
from ecomrlve.flows.publishing import PublishResult, existing_task_ids, store_seeds, tasks_version
from ecomrlve.flows.regenerate import (
    RegenerationError,
    allocate,
    curriculum_where,
    failure_weights,
    fresh_seeds,
    preflight,
    resolve_run_id,
    run_success,
    weakest_axes,
)
from ecomrlve.flows.shards import catalog_predicate
from ecomrlve.flows.stages import (
    CatalogResult,
    CurriculumSummary,
    PackedRows,
    ValidatedChunk,
    build_catalog_stage,
    build_curriculum_stage,
    catalog_intact,
    chunk_label,
    curriculum_intact,
    generate_chunk_stage,
    plot_stage,
    publish_stage,
    results_dir,
    source_fingerprint,
    train_stage,
    training_intact,
    validate_tasks_stage,
)
from ecomrlve.generators import feasible_cells
from ecomrlve.generators.fanout import open_executor
from ecomrlve.generators.generate import Chunk, check_band, plan_run
from ecomrlve.generators.registry import scenario_names
from ecomrlve.integrations.verl.stage import verl_train_stage
from ecomrlve.progress import ProgressEvent

PIPELINE_RUN = "pipeline"
# Each stage's entry module: its cache key hashes every ecomrlve module that one imports,
# transitively (`source_fingerprint`), so an edit anywhere a stage reaches reruns it.
# the registry imports the scenario modules by discovery, which no import statement shows
GENERATOR_CODE = ("ecomrlve.generators", "ecomrlve.generators.scenarios.*")
VALIDATOR_CODE = ("ecomrlve.flows.validation",)
CURRICULUM_CODE = ("ecomrlve.flows.shards",)
PLOT_CODE = ("ecomrlve.flows.plots",)
TRAIN_CODE = ("ecomrlve.train.run",)
WAITING_PER_WORKER = 2  # Prefect threads per executor slot: one chunk running, one queued


class StageRecord(BaseModel):
    """One row of the run summary table."""

    stage: str
    status: str = Field(description="ran, cached, partly cached or skipped")
    seconds: float
    detail: str = ""


class GenerationStats(BaseModel):
    chunks: int
    chunks_cached: int
    generated: int
    valid: int
    rejected: dict[str, int]
    skipped_cells: list[str] = Field(default_factory=list)
    generation_s: float = Field(description="sum of the chunks' own generation time")

    @classmethod
    def of(
        cls, generated: list[Any], validated: list[ValidatedChunk], cached: int
    ) -> GenerationStats:
        """The stats of a run: `generated` and `validated` chunk results, `cached` of them
        read from the cache."""
        rejected: dict[str, int] = {}
        for chunk in validated:
            for reason, n in chunk.rejected.items():
                rejected[reason] = rejected.get(reason, 0) + n
        return cls(
            chunks=len(generated),
            chunks_cached=cached,
            generated=sum(c.rows for c in generated),
            valid=sum(c.rows for c in validated),
            rejected=rejected,
            skipped_cells=sorted({s for c in generated for s in c.report.get("skipped_cells", [])}),
            generation_s=round(sum(c.seconds for c in generated), 3),
        )


class PipelineSummary(BaseModel):
    data_dir: str
    db: str
    tasks: int
    curriculum: str
    shards: int
    plots: list[str]
    stages: list[StageRecord]
    generation: GenerationStats
    train: dict[str, Any] | None = None
    # scenarios asked for that the store has no task of, with why (never silent)
    missing_scenarios: dict[str, str] = Field(default_factory=dict)
    flow_run: str | None = None  # the Prefect flow run's name
    flow_run_url: str | None = None  # its page in the UI, when a Prefect server is configured


class RegenerateSummary(BaseModel):
    data_dir: str
    curriculum: str
    shards: int
    tasks: int
    seeds: list[int]
    per_scenario: dict[str, int]
    rounds: int
    run: str
    from_run: str | None = None
    weights: dict[str, float] = Field(default_factory=dict)
    weakest_axes: list[dict[str, Any]] = Field(default_factory=list)
    stages: list[StageRecord] = Field(default_factory=list)


def _bound(stage: Any, data_dir: str) -> Any:
    """`stage` persisting its results (and cache keys) under the data directory."""
    return stage.with_options(result_storage=results_dir(data_dir))


def _run_verified(
    stage: Any, results_in: str, intact: Callable[[Any], bool], /, **kwargs: Any
) -> tuple[Any, bool]:
    """Run a cached stage (results under `results_in`); if the cache hit describes files that
    are gone or changed, recompute it."""
    bound = _bound(stage, results_in)
    state = bound(**kwargs, return_state=True)
    result = state.result()
    if state.name == "Cached" and not intact(result):
        get_run_logger().warning("%s: cached result no longer matches disk; rerunning", stage.name)
        state = bound.with_options(refresh_cache=True)(**kwargs, return_state=True)
        result = state.result()
    return result, state.name == "Cached"


class _Clock:
    """Times stages and collects the rows of the run summary."""

    def __init__(self) -> None:
        self.records: list[StageRecord] = []

    @contextlib.contextmanager
    def stage(self, name: str) -> Iterator[StageRecord]:
        record = StageRecord(stage=name, status="ran", seconds=0.0)
        started = time.perf_counter()
        report(ProgressEvent.of(name, 0.0))
        yield record
        record.seconds = round(time.perf_counter() - started, 3)
        self.records.append(record)
        report(ProgressEvent.of(name, 1.0))


def _status(cached: bool) -> str:
    return "cached" if cached else "ran"


# ---- generation -------------------------------------------------------------------------------


@flow(name="generate_tasks", persist_result=False)
def generate_tasks(
    data_dir: str,
    seed: int,
    chunks: list[Chunk],
    min_steps: int | None,
    max_steps: int | None,
    catalog_hash: str,
    events_from: int = EVENTS_FROM,
) -> tuple[list[ValidatedChunk], GenerationStats]:
    """Fan out one generate → validate pair per chunk on this flow's task runner; tasks from
    difficulty `events_from` up carry world events (`NO_EVENTS`: none)."""
    checked = {"min_steps": min_steps, "max_steps": max_steps, "catalog_hash": catalog_hash}
    generated = _submit_per_chunk(
        generate_chunk_stage,
        data_dir,
        "generate",
        chunks,
        [{"chunk": c} for c in chunks],
        data_dir=data_dir,
        seed=seed,
        code_version=source_fingerprint(*GENERATOR_CODE),
        events_from=events_from,
        **checked,
    )
    validated = _submit_per_chunk(
        validate_tasks_stage,
        data_dir,
        "validate",
        chunks,
        [{"generated": g} for g in generated],
        code_version=source_fingerprint(*VALIDATOR_CODE),
        **checked,
    )
    for done, _ in enumerate(as_completed(validated), start=1):
        report(ProgressEvent("generate", done, len(validated), unit="chunk"))
    raw = [f.result() for f in generated]  # a failed chunk raises its own error here
    results = [f.result() for f in validated]
    stats = GenerationStats.of(
        raw, results, cached=sum(f.state.name == "Cached" for f in generated)
    )
    get_run_logger().info(
        "generated %d tasks in %d chunks (%d cached), %d valid, rejected %s",
        stats.generated,
        stats.chunks,
        stats.chunks_cached,
        stats.valid,
        stats.rejected or "none",
    )
    return results, stats


def _submit_per_chunk(
    stage: Any,
    results_in: str,
    step: str,
    chunks: list[Chunk],
    own: list[dict[str, Any]],
    /,
    **shared: Any,
) -> list[Any]:
    """Submit `stage` (results under `results_in`) once per chunk (task run `STEP-CHUNK`), with
    that chunk's `own` arguments and the `shared` ones; the futures, in chunk order."""
    bound = _bound(stage, results_in)
    return [
        bound.with_options(task_run_name=f"{step}-{chunk_label(c)}").submit(**mine, **shared)
        for c, mine in zip(chunks, own, strict=True)
    ]


@contextlib.contextmanager
def _generation(
    kind: TaskRunnerKind, workers: int, dask_address: str | None, data_dir: str
) -> Iterator[Any]:
    """The `generate_tasks` subflow, its chunks computed on one `chunk_executor` of `kind`
    (`ecomrlve.generators.fanout`, the executor `ecomrlve generate` uses). Prefect's own
    threads only wait on chunks, look up the cache and validate."""
    with open_executor(kind, workers, data_dir, dask_address):
        yield generate_tasks.with_options(
            task_runner=ThreadPoolTaskRunner(max_workers=WAITING_PER_WORKER * workers)
        )


# ---- pipeline ---------------------------------------------------------------------------------


@flow(name="ecomrlve-pipeline", persist_result=False)
def pipeline(params: PipelineParams, overrides: dict[str, Any] | None = None) -> PipelineSummary:
    """catalog → tasks (fanned out) → validate → publish → curriculum shards → plots → train.

    `overrides` is merged into `params` (nested keys kept), so a deployment run can change a
    few fields: `prefect deployment run ... --params '{"overrides": {"skip_train": true}}'`.
    Each stage waits on the stage whose data it reads (the UI draws those edges); the plots,
    the manifest summary and the held-out table become Prefect artifacts.
    """
    params = with_overrides(params, overrides)
    logger = get_run_logger()
    clock = _Clock()
    logger.info("pipeline on %s with %s", params.data_dir, params.config_source)

    catalog = _catalog_step(params, clock)
    generated = _generate_step(params, catalog, clock)
    published = _publish_step(params, catalog, generated, clock)
    curriculum, training_shards = _curriculum_step(params, catalog, published, clock)
    plots = _plots_step(params, published, clock)
    train = _train_step(params, training_shards, clock)
    publish_artifacts_stage(
        curriculum.path, plots, train, params.data_dir, wait_for=[curriculum, plots, train]
    )

    logger.info("pipeline finished: %s", {r.stage: r.status for r in clock.records})
    return PipelineSummary(
        missing_scenarios=published.missing,
        flow_run=prefect_flow_run.name,
        flow_run_url=_flow_run_ui_url(),
        data_dir=params.data_dir,
        db=str(store.DataPaths.of(params.data_dir).db),
        tasks=published.result.tasks,
        curriculum=curriculum.path,
        shards=curriculum.shards,
        plots=plots,
        stages=clock.records,
        generation=generated.stats,
        train=train,
    )


@dataclass(frozen=True)
class _Generated:
    """The generate stage's plan and its validated chunks."""

    chunks: list[Chunk]
    skipped: list[str]  # the cells no difficulty of which reaches the step band
    validated: list[ValidatedChunk]
    stats: GenerationStats


@dataclass(frozen=True)
class _Published:
    """The publish stage's files, the store's tasks version after it, and the scenarios asked
    for that got no task (with why)."""

    result: PublishResult
    version: str
    missing: dict[str, str]


def _catalog_step(params: PipelineParams, clock: _Clock) -> CatalogResult:
    data_dir, data = params.data_dir, params.config.data
    with clock.stage("catalog") as rec:
        catalog, cached = _run_verified(
            build_catalog_stage,
            data_dir,
            lambda r: catalog_intact(data_dir, r),
            data_dir=data_dir,
            products=data.products,
            seed=data.seed,
        )
        rec.status = _status(cached)
        rec.detail = f"{catalog.products:,} products, catalog_hash {catalog.catalog_hash}"
    return catalog


def _generate_step(params: PipelineParams, catalog: CatalogResult, clock: _Clock) -> _Generated:
    data_dir, data = params.data_dir, params.config.data
    with clock.stage("generate") as rec:
        band = check_band(data.min_steps, data.max_steps)
        chunks, skipped = plan_run(
            data.tasks, params.scenarios, data.difficulty, band, data.chunk_size
        )
        with _generation(data.task_runner, data.workers, data.dask_address, data_dir) as generation:
            validated, stats = generation(
                data_dir=data_dir,
                seed=data.seed,
                chunks=chunks,
                min_steps=data.min_steps,
                max_steps=data.max_steps,
                catalog_hash=catalog.catalog_hash,
                events_from=data.events_threshold,
            )
        rec.status = _chunks_status(stats)
        rec.detail = _generation_detail(stats, data)
    return _Generated(chunks, skipped, validated, stats)


def _chunks_status(stats: GenerationStats) -> str:
    """`cached`, `K/N cached` or `ran`, by how many of the chunks came from the cache."""
    if stats.chunks_cached == stats.chunks:
        return "cached"
    if stats.chunks_cached:
        return f"{stats.chunks_cached}/{stats.chunks} cached"
    return "ran"


def _generation_detail(stats: GenerationStats, data: DataConfig) -> str:
    detail = (
        f"{stats.valid:,} valid of {stats.generated:,} in {stats.chunks} chunks "
        f"({data.task_runner} × {data.workers}); " + events_text(data.events_threshold)
    )
    if stats.rejected:
        detail += f"; rejected {stats.rejected}"
    return detail


def _publish_step(
    params: PipelineParams, catalog: CatalogResult, generated: _Generated, clock: _Clock
) -> _Published:
    data_dir = params.data_dir
    with clock.stage("publish") as rec:
        published, cached = _publish(data_dir, PIPELINE_RUN, generated.validated, [catalog])
        rec.status = _status(cached)
        rec.detail = f"{published.tasks:,} tasks in {len(published.files)} files"
        version = tasks_version(data_dir)
        missing = missing_scenarios(
            data_dir,
            catalog.catalog_hash,
            params.scenarios,
            generated.chunks,
            generated.skipped,
            params.config.data.tasks,
        )
        for scenario, why in missing.items():
            get_run_logger().warning("scenario %s has no tasks: %s", scenario, why)
        if missing:
            rec.detail += "; no tasks for " + ", ".join(f"{s} ({w})" for s, w in missing.items())
    return _Published(published, version, missing)


def _curriculum_step(
    params: PipelineParams, catalog: CatalogResult, published: _Published, clock: _Clock
) -> tuple[CurriculumSummary, CurriculumSummary]:
    """The curriculum's shards, and the ones training reads (the same unless
    `data.train_where` narrows them to a second curriculum `NAME_train`)."""
    data_dir, data = params.data_dir, params.config.data
    with clock.stage("curriculum") as rec:
        current = catalog_predicate(catalog.catalog_hash)

        def shards(name: str, where: str) -> tuple[CurriculumSummary, bool]:
            return _shards(
                data_dir,
                name,
                where,
                shard_size=data.shard_size,
                tasks_version=published.version,
                wait_for=[published.result],
            )

        curriculum, cached = shards(data.curriculum, data.curriculum_where or current)
        rec.detail = f"{curriculum.tasks:,} tasks in {curriculum.shards} shards"
        training_shards = curriculum
        if data.train_where:
            training_shards, cached_too = shards(
                f"{data.curriculum}_train", f"({data.train_where}) AND {current}"
            )
            cached = cached and cached_too
            rec.detail += (
                f"; {training_shards.name}: {training_shards.tasks:,} tasks ({data.train_where})"
            )
        rec.status = _status(cached)
    return curriculum, training_shards


def _plots_step(params: PipelineParams, published: _Published, clock: _Clock) -> list[str]:
    with clock.stage("plots") as rec:
        plots, cached = _run_verified(
            plot_stage,
            params.data_dir,
            lambda paths: all(Path(p).exists() for p in paths),
            data_dir=params.data_dir,
            tasks_version=published.version,
            code_version=source_fingerprint(*PLOT_CODE),
            wait_for=[published.result],
        )
        rec.status = _status(cached)
        rec.detail = ", ".join(Path(p).name for p in plots)
    return plots


def _train_step(
    params: PipelineParams, training_shards: CurriculumSummary, clock: _Clock
) -> dict[str, Any] | None:
    """Train on `training_shards` with the configured engine (none with `skip_train`)."""
    cfg, data_dir = params.config, params.data_dir
    train: dict[str, Any] | None = None
    with clock.stage("train") as rec:
        if params.skip_train:
            rec.status, rec.detail = "skipped", "--skip-train"
        elif cfg.training.engine == "verl":
            train = verl_train_stage(
                cfg,
                data_dir,
                str(params.training_output()),
                training_shards.name,
                wait_for=[training_shards],
            )
            rec.detail = f"verl run in {train['output']}"
        else:
            train, cached = _run_verified(
                train_stage,
                data_dir,
                training_intact,
                config=cfg,
                data_dir=data_dir,
                output=str(params.training_output()),
                curriculum=training_shards.name,
                curriculum_hash=training_shards.manifest_hash,
                code_version=source_fingerprint(*TRAIN_CODE),
                wait_for=[training_shards],
            )
            rec.status = _status(cached)
            rec.detail = f"run {train['run_id']}: " + held_out_text(train)
    return train


def _publish(
    data_dir: str, run: str, chunks: list[ValidatedChunk], wait_for: list[Any] | None = None
) -> tuple[PublishResult, bool]:
    """Publish `chunks` as `run` (cached; republished if its files changed on disk)."""
    return _run_verified(
        publish_stage,
        data_dir,
        PublishResult.intact,
        data_dir=data_dir,
        run=run,
        chunks=chunks,
        wait_for=wait_for,
    )


def _shards(
    data_dir: str,
    name: str,
    where: str | None,
    *,
    shard_size: int,
    tasks_version: str,
    order: str | None = None,
    interleave: bool = True,
    wait_for: list[Any] | None = None,
) -> tuple[CurriculumSummary, bool]:
    """Build curriculum `name`'s shards from the tasks `where` selects (cached by the store's
    `tasks_version`; rebuilt if its files changed on disk)."""
    return _run_verified(
        build_curriculum_stage,
        data_dir,
        lambda r: curriculum_intact(data_dir, r),
        data_dir=data_dir,
        name=name,
        where=where,
        order=order,
        shard_size=shard_size,
        interleave=interleave,
        tasks_version=tasks_version,
        code_version=source_fingerprint(*CURRICULUM_CODE),
        wait_for=wait_for,
    )


def events_text(events_from: int) -> str:
    """How a run's tasks meet world events, for a stage's detail."""
    return "no world events" if events_from >= NO_EVENTS else f"world events from d{events_from}"


def _flow_run_ui_url() -> str | None:
    """This flow run's UI page when a Prefect server is configured (`PREFECT_API_URL`); None
    under the temporary server a plain run starts (it ends with the command, and Prefect's
    own `ui_url` then reads "None/flow-runs/...")."""
    from prefect.settings import get_current_settings

    url = prefect_flow_run.ui_url
    if not get_current_settings().api.url or not url or not url.startswith("http"):
        return None
    return url


def missing_scenarios(
    data_dir: str,
    catalog_hash: str,
    scenarios: list[str],
    chunks: list[Any],
    skipped: list[str],
    tasks: int,
) -> dict[str, str]:
    """The scenarios asked for that the store holds no task of (for this catalog), each with
    the reason: no difficulty reaches the step band, no share of `data.tasks`, or every task
    generated for it was rejected."""
    con = store.connect(data_dir, read_only=True)
    try:
        present = {
            row[0]
            for row in con.execute(
                "SELECT DISTINCT scenario FROM tasks WHERE catalog_hash = ?", [catalog_hash]
            ).fetchall()
        }
    finally:
        con.close()
    planned: dict[str, int] = {}
    for chunk in chunks:
        planned[chunk.scenario] = planned.get(chunk.scenario, 0) + chunk.count
    missing = {}
    for scenario in scenarios:
        if scenario in present:
            continue
        if scenario not in planned and any(c.startswith(f"{scenario}/") for c in skipped):
            missing[scenario] = "no difficulty of the range reaches the step band"
        elif not planned.get(scenario):
            missing[scenario] = (
                f"no share of data.tasks={tasks} (fewer tasks than scenarios x difficulties)"
            )
        else:
            missing[scenario] = f"all {planned[scenario]} generated tasks were rejected"
    return missing


# ---- curriculum -------------------------------------------------------------------------------


@flow(name="ecomrlve-curriculum", persist_result=False)
def curriculum(params: CurriculumParams) -> CurriculumSummary:
    """Build shards for one curriculum from a SQL selection of the store's tasks."""
    report(ProgressEvent.of("curriculum", 0.0))
    result, _ = _shards(
        params.data_dir,
        params.name,
        params.where,
        shard_size=params.shard_size,
        tasks_version=tasks_version(params.data_dir),
        order=params.order,
        interleave=params.interleave,
    )
    report(ProgressEvent.of("curriculum", 1.0))
    return result


# ---- regeneration -----------------------------------------------------------------------------


def _chunks_for(need: dict[tuple[str, int], int], chunk_size: int) -> list[Chunk]:
    return [
        Chunk(scenario, difficulty, start, min(chunk_size, n - start))
        for (scenario, difficulty), n in need.items()
        for start in range(0, n, chunk_size)
    ]


@flow(name="ecomrlve-regenerate-curriculum", persist_result=False)
def regenerate_curriculum(
    params: RegenerateParams, overrides: dict[str, Any] | None = None
) -> RegenerateSummary:
    """Generate fresh tasks in a step band until `tasks` valid new ones exist; publish; shard.

    Round r generates each cell's missing count with a fresh seed. A cell whose chunk yields
    nothing is dropped and its share moves to the others; after `max_rounds` rounds short of the
    target the flow fails and publishes nothing. `overrides`: as in `pipeline`.
    """
    params = with_overrides(params, overrides)
    data_dir = params.data_dir
    clock = _Clock()
    plan = _regeneration_plan(params, clock)
    collected, used_seeds = _regeneration_rounds(params, plan, clock)

    run = f"regen_{params.name}_s{used_seeds[0]}"
    with clock.stage("publish") as rec:
        published, cached = _publish(data_dir, run, collected)
        rec.status = _status(cached)
        rec.detail = f"{published.tasks} tasks as run {run}"

    with clock.stage("curriculum") as rec:
        where = curriculum_where(used_seeds, params.min_steps, params.max_steps, plan.catalog_hash)
        shards, cached = _shards(
            data_dir,
            params.name,
            where,
            shard_size=params.shard_size,
            tasks_version=tasks_version(data_dir),
        )
        rec.status = _status(cached)
        rec.detail = f"{shards.tasks} tasks in {shards.shards} shards"

    return RegenerateSummary(
        data_dir=data_dir,
        curriculum=shards.path,
        shards=shards.shards,
        tasks=published.tasks,
        seeds=used_seeds,
        per_scenario=_per_scenario(collected),
        rounds=len(used_seeds),
        run=run,
        from_run=plan.run_id,
        weights={f"{s}/d{d}": round(w, 4) for (s, d), w in plan.weights.items()},
        weakest_axes=plan.weakest,
        stages=clock.records,
    )


Cell = tuple[str, int]  # (scenario, difficulty)


@dataclass(frozen=True)
class _RegenerationPlan:
    """What the regeneration's rounds start from: each cell's weight and count, the fresh
    seeds, and the run whose failures set the weights (if any)."""

    catalog_hash: str
    weights: dict[Cell, float]
    need: dict[Cell, int]
    seeds: list[int]
    run_id: str | None
    weakest: list[dict[str, Any]]


def _regeneration_plan(params: RegenerateParams, clock: _Clock) -> _RegenerationPlan:
    from ecomrlve.catalogs import catalog_hash as current_catalog_hash

    data_dir = params.data_dir
    band = (params.min_steps, params.max_steps)
    scenarios = params.scenarios or list(scenario_names())
    with clock.stage("plan") as rec:
        chash = current_catalog_hash(data_dir)
        preflight(params)
        cells, skipped = feasible_cells(scenarios, params.difficulty, band)
        run_id = None
        weakest: list[dict[str, Any]] = []
        if params.from_run:
            run_id = resolve_run_id(data_dir, params.from_run)
            results = run_success(data_dir, run_id)
            weights = failure_weights(results, cells)
            weakest = weakest_axes(results)
        else:
            weights = dict.fromkeys(cells, 1.0)
        need = allocate(params.tasks, weights)
        seeds = fresh_seeds(params.seed, params.name, params.max_rounds, store_seeds(data_dir))
        rec.detail = f"{len(cells)} cells, skipped {len(skipped)}" + (
            f", weighted by run {run_id}" if run_id else ""
        )
        get_run_logger().info("regenerate %s: %s", params.name, rec.detail)
    return _RegenerationPlan(chash, weights, need, seeds, run_id, weakest)


def _regeneration_rounds(
    params: RegenerateParams, plan: _RegenerationPlan, clock: _Clock
) -> tuple[list[ValidatedChunk], list[int]]:
    """Generate rounds, one fresh seed each, until every cell has its count (or no cell can
    yield more); the new tasks and the seeds used. Raises `RegenerationError` when short."""
    logger = get_run_logger()
    collected: list[ValidatedChunk] = []
    used_seeds: list[int] = []
    need: dict[Cell, int] | None = plan.need
    with (
        clock.stage("generate") as rec,
        _generation(
            params.task_runner, params.workers, params.dask_address, params.data_dir
        ) as generation,
    ):
        for round_seed in plan.seeds:
            chunks = _chunks_for({c: n for c, n in need.items() if n > 0}, params.chunk_size)
            if not chunks:
                break
            used_seeds.append(round_seed)
            validated, _ = generation(
                data_dir=params.data_dir,
                seed=round_seed,
                chunks=chunks,
                min_steps=params.min_steps,
                max_steps=params.max_steps,
                catalog_hash=plan.catalog_hash,
                events_from=params.events_threshold,
            )
            new, got = _new_tasks(params.data_dir, validated, need)
            collected += new
            to_go = sum(need.values()) - sum(got.values())
            logger.info(
                "round seed %d: %d new tasks, %d to go", round_seed, sum(got.values()), to_go
            )
            need = _reallocated(need, got, plan.weights)
            if need is None:
                break
        total = sum(part.rows for part in collected)
        if total < params.tasks:
            raise RegenerationError(
                f"only {total} of {params.tasks} valid new tasks with {params.min_steps}-"
                f"{params.max_steps} steps after {len(used_seeds)} rounds; nothing published"
            )
        rec.detail = f"{total} tasks from {len(used_seeds)} rounds; " + events_text(
            params.events_threshold
        )
    return collected, used_seeds


def _new_tasks(
    data_dir: str, validated: list[ValidatedChunk], need: dict[Cell, int]
) -> tuple[list[ValidatedChunk], dict[Cell, int]]:
    """A round's tasks that the store doesn't hold yet, at most `need` of a cell, and how many
    each cell got."""
    frames = [part.frame() for part in validated]
    taken = existing_task_ids(data_dir, [t for f in frames for t in f["task_id"]])
    new: list[ValidatedChunk] = []
    got: dict[Cell, int] = {}
    for part, df in zip(validated, frames, strict=True):
        cell = (part.chunk.scenario, part.chunk.difficulty)
        df = df.filter(~pl.col("task_id").is_in(list(taken)))
        df = df.head(need[cell] - got.get(cell, 0))
        got[cell] = got.get(cell, 0) + df.height
        if df.height:
            new.append(ValidatedChunk(part.chunk, PackedRows.of(df)))
    return new, got


def _reallocated(
    need: dict[Cell, int], got: dict[Cell, int], weights: dict[Cell, float]
) -> dict[Cell, int] | None:
    """The counts the next round generates: `need` less what each cell `got`; a cell that still
    needed tasks and got none is dropped and the missing count is spread over the other cells
    by `weights`. None when every cell with a need left is dropped."""
    exhausted = [c for c in need if need[c] > 0 and got.get(c, 0) == 0]
    need = {c: need[c] - got.get(c, 0) for c in need}
    missing = sum(need.values())
    if missing and exhausted:
        alive = {c: weights[c] for c in need if c not in exhausted}
        if not alive:
            return None
        for c in exhausted:
            need[c] = 0
        for c, n in allocate(missing, alive).items():
            need[c] += n
    return need


def _per_scenario(collected: list[ValidatedChunk]) -> dict[str, int]:
    """Tasks per scenario, by name."""
    counts: dict[str, int] = {}
    for part in collected:
        counts[part.chunk.scenario] = counts.get(part.chunk.scenario, 0) + part.rows
    return dict(sorted(counts.items()))


STAGE_NAMES = {"base": "base", "sft": "SFT", "final": "RL"}


def held_out_text(train: dict[str, Any]) -> str:
    """Held-out pass@1 per stage with its task-bootstrap 95% interval, then the paired gains:
    `base 0.00 [0.00, 0.00] → SFT 0.31 [...] → RL 0.42 [...]; RL − SFT +0.11 [+0.05, +0.17]`."""
    held_out = train.get("held_out", {})
    final = train.get("algorithm", "rl").upper()
    names = {**STAGE_NAMES, "final": final}

    def interval(m: dict[str, float], sign: str = "") -> str:
        if "ci_low" not in m:
            return ""
        return f" [{m['ci_low']:{sign}.2f}, {m['ci_high']:{sign}.2f}]"

    stages = " → ".join(
        f"{names.get(stage, stage)} {m.get('pass_at_1', 0.0):.2f}{interval(m)}"
        for stage, m in held_out.items()
    )
    gains = "; ".join(
        f"{' − '.join(names.get(part, part) for part in key.split('-'))} "
        f"{g['diff']:+.2f}{interval(g, '+')}"
        for key, g in train.get("held_out_gain", {}).items()
    )
    text = f"held-out pass@1 {stages}" + (f"; {gains}" if gains else "")
    quarters = train.get("rl_success_quarters")
    if quarters:  # the RL curve in one figure: did training-rollout success rise?
        text += (
            f"; training success first → last quarter {quarters['first']:.2f} → "
            f"{quarters['last']:.2f} ({quarters['diff']:+.2f}{interval(quarters, '+')})"
        )
    return text
