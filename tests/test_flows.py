"""The Prefect flows under one temporary Prefect server: pipeline, cache reuse, resume after a
crash, regeneration of a 6–8 step curriculum, the Dask task runner, deployments, the CLI.

Small data: a 2k-product catalog and 4 tasks per scenario × difficulty 0–2 (108 for nine).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from ecomrlve import store
from ecomrlve.config import config_from_dict
from ecomrlve.flows.params import PipelineParams, RegenerateParams
from ecomrlve.generators.registry import scenario_names

# slow: Prefect flows under a temporary server
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("prefect_harness")]

CELLS = 3 * len(scenario_names())  # scenarios × difficulties 0-2
TASKS = 4 * CELLS
SMALL = {
    "data": {
        "products": 2_000,
        "seed": 3,
        "tasks": TASKS,
        "difficulty": [0, 2],
        "shard_size": 32,
    }
}
runner = CliRunner()


class GenerationCounter:
    """Counts calls of `ecomrlve.generators.generate_chunk` (the flow's threads share it)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, fail_on_call: int | None = None):
        import ecomrlve.generators as generators

        self.calls = 0
        real = generators.generate_chunk

        def counted(*args, **kwargs):
            self.calls += 1
            if fail_on_call is not None and self.calls == fail_on_call:
                raise RuntimeError("simulated crash while generating")
            return real(*args, **kwargs)

        monkeypatch.setattr(generators, "generate_chunk", counted)


def params_for(data: Path, **data_overrides) -> PipelineParams:
    raw = json.loads(json.dumps(SMALL))
    raw["data"].update(data_overrides)
    return PipelineParams(data_dir=str(data), config=config_from_dict(raw), skip_train=True)


def store_tasks(data: Path) -> pl.DataFrame:
    con = store.connect(data)
    try:
        return con.sql("SELECT * FROM tasks").pl()
    finally:
        con.close()


@pytest.fixture(scope="module")
def pipeline_run(tmp_path_factory: pytest.TempPathFactory):
    from ecomrlve.flows.pipeline import pipeline

    data = tmp_path_factory.mktemp("flows") / "data"
    with pytest.MonkeyPatch.context() as mp:
        counter = GenerationCounter(mp)
        summary = pipeline(params_for(data))
    return data, summary, counter.calls


# ---- the pipeline -------------------------------------------------------------------------------


def test_pipeline_builds_store_shards_and_plots(pipeline_run) -> None:
    data, summary, calls = pipeline_run
    assert [r.stage for r in summary.stages] == [
        "catalog",
        "generate",
        "publish",
        "curriculum",
        "plots",
        "train",
    ]
    assert calls == summary.generation.chunks == CELLS
    tasks = store_tasks(data)
    assert tasks.height == summary.tasks == TASKS
    assert tasks["task_id"].n_unique() == TASKS
    assert sorted(tasks["scenario"].unique()) == sorted(scenario_names())
    manifest = json.loads((Path(summary.curriculum) / "manifest.json").read_text())
    assert manifest["tasks"] == TASKS
    assert len(manifest["shards"]) == summary.shards == -(-TASKS // 32)  # shard_size 32
    assert all((Path(summary.curriculum) / "verl" / s["file"]).exists() for s in manifest["shards"])
    for plot in summary.plots:
        assert Path(plot).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (data / ".prefect" / "results").is_dir()


def test_rerun_with_the_same_config_does_no_generation(pipeline_run, monkeypatch) -> None:
    from ecomrlve.flows.pipeline import pipeline

    data, first, _ = pipeline_run
    before = {p: p.read_bytes() for p in sorted((data / "tasks").rglob("*.parquet"))}
    counter = GenerationCounter(monkeypatch)
    again = pipeline(params_for(data))
    assert counter.calls == 0
    assert {r.stage: r.status for r in again.stages} == {
        "catalog": "cached",
        "generate": "cached",
        "publish": "cached",
        "curriculum": "cached",
        "plots": "cached",
        "train": "skipped",
    }
    assert {p: p.read_bytes() for p in sorted((data / "tasks").rglob("*.parquet"))} == before
    assert again.tasks == first.tasks


def test_a_deleted_output_is_rebuilt_not_trusted_from_cache(pipeline_run, monkeypatch) -> None:
    from ecomrlve.flows.pipeline import pipeline

    data, first, _ = pipeline_run
    shutil.rmtree(first.curriculum)
    counter = GenerationCounter(monkeypatch)
    again = pipeline(params_for(data))
    statuses = {r.stage: r.status for r in again.stages}
    assert counter.calls == 0 and statuses["curriculum"] == "ran"
    assert (Path(again.curriculum) / "manifest.json").exists()


def test_stage_functions_run_without_prefect(pipeline_run) -> None:
    from ecomrlve.catalogs import catalog_hash
    from ecomrlve.flows.stages import generate_chunk_stage, validate_tasks_stage
    from ecomrlve.generators.generate import Chunk

    data, _, _ = pipeline_run
    chash = catalog_hash(data)
    chunk = generate_chunk_stage.fn(str(data), 11, Chunk("cart", 1, 0, 3), None, 4, chash, "v")
    assert chunk.rows == 3 and chunk.frame()["min_steps"].max() <= 4
    checked = validate_tasks_stage.fn(chunk, None, 3, chash, "v")
    frame = chunk.frame()
    assert checked.rows == frame.filter(pl.col("min_steps") <= 3).height
    assert sum(checked.rejected.values()) == 3 - checked.rows
    stale = validate_tasks_stage.fn(chunk, None, None, "0" * 16, "v")
    assert stale.rows == 0 and stale.rejected == {"stale_catalog": 3}


def test_resume_after_crashes_without_duplicates_or_losses(tmp_path, monkeypatch) -> None:
    from ecomrlve.flows import stages
    from ecomrlve.flows.pipeline import pipeline

    data = tmp_path / "data"
    params = params_for(data, seed=5, tasks=54, difficulty=[0, 1])  # 18 chunks of 3
    # killed mid-generation: the 7th chunk fails, the others finish and are cached
    with monkeypatch.context() as mp:
        crashing = GenerationCounter(mp, fail_on_call=7)
        with pytest.raises(RuntimeError, match="simulated crash while generating"):
            pipeline(params)
    assert crashing.calls == 18
    assert not (data / "tasks").exists()
    # killed between stages: everything generated, publishing dies
    with monkeypatch.context() as mp:
        resumed = GenerationCounter(mp)

        def publish_dies(*args, **kwargs):
            raise RuntimeError("simulated crash before publishing")

        mp.setattr(stages, "publish_run", publish_dies)
        with pytest.raises(RuntimeError, match="simulated crash before publishing"):
            pipeline(params)
    assert resumed.calls == 1  # only the chunk that crashed
    assert not (data / "tasks").exists()
    # the rerun finds every chunk in the cache and publishes each row once
    finished = GenerationCounter(monkeypatch)
    summary = pipeline(params)
    assert finished.calls == 0
    tasks = store_tasks(data)
    assert tasks.height == summary.tasks == 54 and tasks["task_id"].n_unique() == 54


def test_a_smaller_config_supersedes_the_pipeline_tasks(tmp_path) -> None:
    from ecomrlve.flows.pipeline import pipeline

    data = tmp_path / "data"
    pipeline(params_for(data, seed=8, tasks=36, difficulty=[0, 1]))
    smaller = pipeline(params_for(data, seed=8, tasks=9, difficulty=[0, 0]))
    tasks = store_tasks(data)
    assert tasks.height == smaller.tasks == 9 and set(tasks["difficulty"]) == {0}


def test_events_from_reaches_the_tasks_and_keys_the_generation_cache(tmp_path, monkeypatch) -> None:
    from ecomrlve.flows.pipeline import pipeline
    from ecomrlve.tasks import Task

    data = tmp_path / "data"
    dynamic = pipeline(params_for(data, seed=4, tasks=18, difficulty=[0, 1], events_from=0))
    assert "world events from d0" in {r.stage: r.detail for r in dynamic.stages}["generate"]
    tasks = [Task.from_row(row) for row in store_tasks(data).iter_rows(named=True)]
    with_events = [t for t in tasks if t.events]
    # every task has a reference to fail a tool of, so at least half carry an event
    assert len(tasks) == 18 and len(with_events) >= 9
    assert {e.kind for t in with_events for e in t.events} >= {"tool_failure"}
    # events off (null): the threshold is a cache input, so every chunk is generated again
    counter = GenerationCounter(monkeypatch)
    static = pipeline(params_for(data, seed=4, tasks=18, difficulty=[0, 1], events_from=None))
    assert counter.calls == static.generation.chunks == dynamic.generation.chunks
    assert "no world events" in {r.stage: r.detail for r in static.stages}["generate"]
    rows = store_tasks(data)
    assert rows.height == 18 and set(rows["events"]) == {"[]"}
    assert set(rows["task_id"]) == {t.task_id for t in tasks}  # same tasks, a static shop


# ---- regeneration -------------------------------------------------------------------------------


@pytest.fixture
def copied_store(pipeline_run, tmp_path) -> Path:
    data, _, _ = pipeline_run
    copy = tmp_path / "data"
    shutil.copytree(data, copy, ignore=shutil.ignore_patterns(".ecomrlve.lock"))
    store.refresh_views(copy)  # the views name the original folder's files
    return copy


def test_regenerate_6_to_8_gives_only_in_band_new_valid_tasks(copied_store) -> None:
    from ecomrlve.env import Catalog, reference_turns, verify
    from ecomrlve.flows.pipeline import regenerate_curriculum
    from ecomrlve.tasks import Task

    data = copied_store
    existing = set(store_tasks(data)["task_id"])
    params = RegenerateParams(
        data_dir=str(data), name="hard", min_steps=6, max_steps=8, tasks=12, shard_size=5
    )
    summary = regenerate_curriculum(params)
    assert summary.tasks == 12 and sum(summary.per_scenario.values()) == 12
    shards = pl.concat(pl.read_parquet(p) for p in sorted(Path(summary.curriculum).glob("shard-*")))
    assert shards.height == 12 and shards["task_id"].n_unique() == 12
    assert shards["min_steps"].min() >= 6 and shards["min_steps"].max() <= 8
    assert not set(shards["task_id"]) & existing
    assert set(shards["seed"]) <= set(summary.seeds)
    catalog = Catalog.load(data)
    for row in shards.iter_rows(named=True):
        task = Task.from_row(row)
        assert len(task.reference) == task.min_steps
        assert verify(task, reference_turns(task), catalog).success
    manifest = json.loads((Path(summary.curriculum) / "manifest.json").read_text())
    assert manifest["step_bands"] == {"6-8": 12}
    assert store_tasks(data).height == len(existing) + 12
    # a second regeneration makes other new tasks; nothing is duplicated
    again = regenerate_curriculum(params)
    assert not set(again.seeds) & set(summary.seeds)
    assert store_tasks(data)["task_id"].n_unique() == len(existing) + 24


def test_regenerate_from_run_targets_the_weakest_cells(copied_store) -> None:
    from ecomrlve.flows.pipeline import regenerate_curriculum
    from ecomrlve.train.results import ROLLOUT_SCHEMA, frame

    data = copied_store
    tasks = store_tasks(data).filter(pl.col("scenario").is_in(["cart", "bundle"]))
    rows = [
        {
            "run_id": "tiny-run",
            "step": k,
            "task_id": t["task_id"],
            "scenario": t["scenario"],
            "difficulty": t["difficulty"],
            "min_steps": t["min_steps"],
            "reward": 0.0,
            "success": t["scenario"] == "bundle",  # cart always fails, bundle always passes
        }
        for k, t in enumerate(tasks.iter_rows(named=True))
        for _ in range(3)
    ]
    store.write_table(data, "train_rollouts", frame(rows, ROLLOUT_SCHEMA), append=False)
    summary = regenerate_curriculum(
        RegenerateParams(
            data_dir=str(data),
            name="weak",
            min_steps=1,
            max_steps=8,
            tasks=10,
            scenarios=["cart", "bundle"],
            difficulty=(0, 2),
            from_run="tiny-run",
        )
    )
    assert summary.from_run == "tiny-run"
    assert summary.weights["cart/d0"] > summary.weights["bundle/d0"]
    assert summary.per_scenario.get("cart", 0) > summary.per_scenario.get("bundle", 0)
    assert summary.weakest_axes and summary.weakest_axes[0]["success_rate"] == 0.0


# ---- scale-out ----------------------------------------------------------------------------------


def test_dask_task_runner_gives_the_same_rows_as_threads(pipeline_run) -> None:
    from distributed import LocalCluster

    from ecomrlve.catalogs import catalog_hash
    from ecomrlve.flows.pipeline import _generation
    from ecomrlve.generators.generate import Chunk

    data, _, _ = pipeline_run
    chunks = [Chunk(s, 1, 0, 2) for s in ("cart", "policy", "journey", "cancel")]
    kwargs = {
        "data_dir": str(data),
        "seed": 77,
        "chunks": chunks,
        "min_steps": None,
        "max_steps": None,
        "catalog_hash": catalog_hash(data),
    }
    with (
        LocalCluster(
            n_workers=2, processes=False, threads_per_worker=1, dashboard_address=None
        ) as cluster,
        _generation("dask", 2, cluster.scheduler_address, str(data)) as generation,
    ):
        on_dask, stats = generation(**kwargs)
    assert stats.chunks == 4 and stats.chunks_cached == 0 and stats.valid == 8
    with _generation("threads", 2, None, str(data)) as generation:
        on_threads, cached = generation(**kwargs)
    assert cached.chunks_cached == 4  # the Dask run's results are the cache
    for a, b in zip(on_dask, on_threads, strict=True):
        assert a.frame().equals(b.frame())


# ---- deployments --------------------------------------------------------------------------------


def test_pipeline_publishes_artifacts_and_stage_edges(pipeline_run) -> None:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (
        ArtifactFilter,
        ArtifactFilterKey,
        FlowRunFilter,
        FlowRunFilterId,
    )

    from ecomrlve.flows.artifacts import MANIFEST_KEY, PLOTS_KEY

    _, summary, _ = pipeline_run
    with get_client(sync_client=True) as client:
        keys = ArtifactFilterKey(any_=[PLOTS_KEY, MANIFEST_KEY])
        artifacts = client.read_artifacts(artifact_filter=ArtifactFilter(key=keys))
        # other tests run pipelines too: take this run's artifacts (its manifest names its path)
        mine = next(
            a
            for a in artifacts
            if a.key == MANIFEST_KEY and f"`{summary.curriculum}`" in (a.description or "")
        )
        by_key = {a.key: a for a in artifacts if a.flow_run_id == mine.flow_run_id}
        assert set(by_key) == {PLOTS_KEY, MANIFEST_KEY}
        assert by_key[PLOTS_KEY].data.count("data:image/png;base64,") == len(summary.plots)
        rows = json.loads(by_key[MANIFEST_KEY].data)
        assert sum(r["tasks"] for r in rows) == TASKS and len(rows) == len(scenario_names())
        run_id = by_key[MANIFEST_KEY].flow_run_id
        runs = client.read_task_runs(
            flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[run_id]))
        )
    ids = {r.id: r.name.split("-")[0] for r in runs}
    upstream = {
        ids[r.id]: {ids.get(i.id) for inputs in r.task_inputs.values() for i in inputs}
        for r in runs
        if r.name.split("-")[0]
        in {"publish", "build_curriculum", "plot_dataset", "publish_artifacts"}
    }
    assert "build_catalog" in upstream["publish"]
    assert "publish" in upstream["build_curriculum"] and "publish" in upstream["plot_dataset"]
    assert {"build_curriculum", "plot_dataset"} <= upstream["publish_artifacts"]


def test_a_partial_override_keeps_the_other_parameters(pipeline_run) -> None:
    from ecomrlve.flows.params import with_overrides

    data, _, _ = pipeline_run
    params = params_for(data)
    changed = with_overrides(params, {"skip_train": False, "config": {"data": {"tasks": 50}}})
    assert changed.config.data.tasks == 50 and changed.skip_train is False
    assert changed.config.data.products == params.config.data.products == 2_000
    assert changed.data_dir == params.data_dir and with_overrides(params, None) is params


def test_deployments_carry_schedule_and_parameters(pipeline_run) -> None:
    from ecomrlve.flows.serve import build_deployments

    data, _, _ = pipeline_run
    regenerate = RegenerateParams(
        data_dir=str(data), name="hard", min_steps=6, max_steps=8, tasks=4
    )
    pipe, regen = build_deployments(params_for(data, schedule="15 4 * * 1"), regenerate)
    assert (pipe.flow_name, pipe.name) == ("ecomrlve-pipeline", "pipeline")
    assert [s.schedule.cron for s in pipe.schedules] == ["15 4 * * 1"]
    assert pipe.entrypoint == "ecomrlve.flows.pipeline.pipeline"
    assert PipelineParams.model_validate(pipe.parameters["params"]).config.data.tasks == TASKS
    assert (regen.flow_name, regen.name) == ("ecomrlve-regenerate-curriculum", "regenerate-hard")
    assert not regen.schedules
    assert RegenerateParams.model_validate(regen.parameters["params"]).min_steps == 6


def test_regeneration_runs_from_its_deployment(copied_store) -> None:
    import asyncio

    from prefect.deployments import run_deployment
    from prefect.runner import Runner

    from ecomrlve.flows.serve import build_deployments

    data = copied_store
    regenerate = RegenerateParams(
        data_dir=str(data), name="deployed", min_steps=6, max_steps=8, tasks=4
    )
    _, deployment = build_deployments(params_for(data), regenerate)
    runner = Runner(name="test-runner", query_seconds=1)
    runner.add_deployment(deployment)
    flow_run = run_deployment(  # a partial override: one field, the rest from the deployment
        f"{deployment.flow_name}/{deployment.name}",
        parameters={"overrides": {"tasks": 3}},
        timeout=0,
        poll_interval=1,
    )
    asyncio.run(runner.start(run_once=True))
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        state = client.read_flow_run(flow_run.id).state
    assert state.is_completed(), state
    manifest = json.loads((data / "curricula" / "deployed" / "manifest.json").read_text())
    assert manifest["tasks"] == 3 and manifest["step_bands"] == {"6-8": 3}


# ---- the CLI ------------------------------------------------------------------------------------


def cli(*args: str):
    from ecomrlve.cli import app

    return runner.invoke(app, list(args))


# `curriculum regenerate` asks for tasks of 6-8 steps; the bad-input cases below start from
# REGENERATE_3 (three new tasks) and get one flag or value wrong each
STEPS_6_8 = ("--min-steps", "6", "--max-steps", "8")
REGENERATE_3 = ("curriculum", "regenerate", "--name", "hard", "--tasks", "3")


def test_cli_curriculum_build_and_regenerate(copied_store) -> None:
    data = str(copied_store)
    built = cli(
        "curriculum",
        "build",
        "--name",
        "carts",
        "--where",
        "scenario = 'cart'",
        "--shard-size",
        "5",
        "--data",
        data,
    )
    assert built.exit_code == 0, built.output
    assert "12 of 12 selected tasks in 3 shards" in " ".join(built.output.split())
    regen = cli(
        "curriculum",
        "regenerate",
        "--name",
        "hard",
        *STEPS_6_8,
        "--tasks",
        "5",
        "--scenarios",
        "journey,bundle,cart",
        "--data",
        data,
    )
    assert regen.exit_code == 0, regen.output
    assert "5 new tasks with 6-8 steps" in " ".join(regen.output.split())


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("pipeline", "--config", "{bad_yaml}"), "unknown key 'data.bogus'"),
        (("pipeline", "--tasks", "-5"), "data.tasks"),
        (("pipeline", "--task-runner", "rockets"), "data.task_runner"),
        (("pipeline", "--events-from", "12"), "data.events_from"),
        ((*REGENERATE_3, *STEPS_6_8, "--events-from", "-1"), "events_from"),
        (("curriculum", "build", "--name", "x", "--where", "scenario = 'nope'"), "no tasks match"),
        (("curriculum", "build", "--name", "bad name"), "invalid curriculum name"),
        ((*REGENERATE_3, "--min-steps", "9", "--max-steps", "6"), "--min-steps 9 > --max-steps 6"),
        ((*REGENERATE_3, *STEPS_6_8, "--from-run", "nope"), "train_rollouts"),
    ],
)
def test_bad_input_exits_2_with_one_line(copied_store, tmp_path, args, message) -> None:
    bad_yaml = tmp_path / "bad.yaml"
    bad_yaml.write_text("data:\n  bogus: 1\n")
    uses_store = args[0] == "curriculum"
    data = copied_store if uses_store else tmp_path / "fresh"
    before = sorted(p.name for p in data.iterdir()) if uses_store else None
    args = tuple(a.replace("{bad_yaml}", str(bad_yaml)) for a in args)
    result = cli(*args, "--data", str(data))
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert result.output.strip().startswith("error:") and "Traceback" not in result.output
    if uses_store:
        assert sorted(p.name for p in data.iterdir()) == before
    else:
        assert not data.exists()  # nothing written for a bad config
