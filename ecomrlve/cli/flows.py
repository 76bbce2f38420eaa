"""`ecomrlve pipeline`, `ecomrlve curriculum build|regenerate` and `ecomrlve serve`.

Everything is validated before Prefect starts (bad config, bad SQL, empty selection, unknown
run: exit 2, one line, nothing written). Then `prefect_env` puts the quiet offline settings in
the environment, and only then are the flow modules imported.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import typer

from ecomrlve.cli.common import (
    DataOpt,
    console,
    data_default,
    frame_table,
    progress_bar,
    user_errors,
    writer_lock,
)
from ecomrlve.cli.train import print_report
from ecomrlve.config import NO_EVENTS
from ecomrlve.progress import ProgressEvent

log = logging.getLogger(__name__)

RunnerOpt = typer.Option(
    None, "--task-runner", help="threads (default), processes or dask: runs generation chunks"
)
WorkersOpt = typer.Option(None, "--workers", help="parallel generation workers")
DaskOpt = typer.Option(
    None, "--dask-address", help="scheduler of an existing Dask cluster (tcp://host:8786)"
)
EVENTS_HELP = (
    "first difficulty whose shop changes during the episode (stock, prices, shipping, "
    f"transient tool failures); {NO_EVENTS}: no world events"
)
PIPELINE_STAGES = ("catalog", "generate", "publish", "curriculum", "plots", "train")
REGENERATE_STAGES = ("plan", "generate", "publish", "curriculum")
TINY_TRAINING_CONFIG = Path(__file__).resolve().parents[2] / "configs" / "tiny_cpu.yaml"


# ---- config --------------------------------------------------------------------------------------


def resolve_config(path: Path | None, overrides: dict[str, Any]) -> tuple[Any, str]:
    """The pipeline's config: `path`, or the embedded defaults; `--flags` override `data.*`.

    Without a config file the data block keeps its defaults (20k products, 13.2k tasks) and the
    agent/training blocks come from the tiny CPU training config; the tiny model trains on the
    tasks that config's data block describes (easy, short), so the default run finishes on a
    laptop. Raises `ConfigError` naming the bad key.
    """
    from ecomrlve.config import DataConfig, EcomConfig, config_from_dict, load_config

    if path is not None:
        cfg, source = load_config(path), str(path)
    elif TINY_TRAINING_CONFIG.exists():
        tiny = load_config(TINY_TRAINING_CONFIG)
        data = DataConfig(train_where=tiny.data.band)
        cfg = EcomConfig(env=tiny.env, agent=tiny.agent, training=tiny.training, data=data)
        source = f"embedded data defaults + {TINY_TRAINING_CONFIG.name} (agent, training)"
    else:
        cfg, source = EcomConfig(), "embedded defaults"
    given = {k: v for k, v in overrides.items() if v is not None}
    if not given:
        return cfg, source
    raw = cfg.model_dump(mode="json")
    raw["data"].update(given)
    flags = ", ".join(f"--{k.replace('_', '-')}" for k in given)
    return config_from_dict(raw, source=f"{source} with {flags}"), f"{source} + {flags}"


# ---- running flows ------------------------------------------------------------------------------


@contextlib.contextmanager
def prefect_session(data: Path, verbose: bool) -> Iterator[None]:
    """Quiet offline Prefect for this process (call before importing the flow modules), with
    the temporary API server started and bound to this process's life."""
    from ecomrlve import store
    from ecomrlve.flows import prefect_env, quiet_settings, start_api_server

    store.ensure_writable(store.DataPaths.of(data).root)
    prefect_env(data, console_log_level=None if verbose else "WARNING")
    if not verbose:
        # Prefect keeps a root handler it finds (the CLI's) and its INFO run logs reach it
        # by propagation; they still go to the Prefect API and UI, the terminal shows warnings.
        for handler in logging.getLogger().handlers:
            handler.setLevel(max(handler.level, logging.WARNING))
    with quiet_settings():
        start_api_server()  # ends with this process, even on kill -9
        yield


def _verbose() -> bool:
    return logging.getLogger().getEffectiveLevel() <= logging.DEBUG


def _run_with_progress(title: str, stages: tuple[str, ...], run: Any) -> Any:
    """Run a flow under a rich progress bar fed by the flows' stage reports."""
    from ecomrlve.flows.progress import progress_listener

    done: dict[str, float] = {}
    with progress_bar(title) as update:

        def on_progress(event: ProgressEvent) -> None:
            done[event.stage or event.phase] = event.whole
            total = sum(done.get(s, 0.0) for s in stages) / len(stages)
            update(event.replace(overall=min(total, 1.0)))

        with progress_listener(on_progress), user_errors():
            return run()


def _check_scheduler(task_runner: str, address: str | None) -> None:
    """An unreachable Dask scheduler: one line before any flow starts."""
    if task_runner == "dask" and address:
        from ecomrlve.generators.fanout import check_dask_scheduler

        check_dask_scheduler(address)


def _flow_run_text(name: str | None, url: str | None) -> str:
    """The flow run's name, and its UI page when a Prefect server is configured
    (`PREFECT_API_URL`); the temporary server of a plain run ends with the command."""
    if url:
        return f"{name}  {url}"
    return f"{name} (temporary Prefect server; set PREFECT_API_URL to keep runs in a UI)"


def _stage_table(records: list[Any], title: str) -> Any:
    import polars as pl

    return frame_table(
        pl.DataFrame(
            [r.model_dump() for r in records],
            schema={
                "stage": pl.String,
                "status": pl.String,
                "seconds": pl.Float64,
                "detail": pl.String,
            },
        ),
        title=title,
    )


# ---- pipeline -----------------------------------------------------------------------------------


def pipeline_command(
    config: Path | None = typer.Option(None, "--config", help="YAML config (configs/*.yaml)"),
    data: Path = DataOpt,
    products: int | None = typer.Option(None, "--products", help="override data.products"),
    tasks: int | None = typer.Option(None, "--tasks", help="override data.tasks"),
    seed: int | None = typer.Option(None, "--seed", help="override data.seed"),
    events_from: int | None = typer.Option(
        None, "--events-from", help=f"override data.events_from: {EVENTS_HELP}"
    ),
    task_runner: str | None = RunnerOpt,
    workers: int | None = WorkersOpt,
    dask_address: str | None = DaskOpt,
    skip_train: bool = typer.Option(
        False, "--skip-train/--no-skip-train", help="stop after the shards", metavar=""
    ),
    train_output: Path | None = typer.Option(
        None, "--train-output", help="training run folder (default DATA/runs/CURRICULUM)"
    ),
) -> None:
    """Run catalog → tasks → store → curriculum shards → training as one Prefect flow.

    Stages already done with the same inputs are skipped; a killed run resumes.
    """
    from ecomrlve.flows.params import PipelineParams

    with user_errors():
        cfg, source = resolve_config(
            config,
            {
                "products": products,
                "tasks": tasks,
                "seed": seed,
                "events_from": events_from,
                "task_runner": task_runner,
                "workers": workers,
                "dask_address": dask_address,
            },
        )
        params = PipelineParams(
            data_dir=str(data),
            config=cfg,
            config_source=source,
            skip_train=skip_train,
            train_output=str(train_output) if train_output else None,
        )
        _check_scheduler(cfg.data.task_runner, cfg.data.dask_address)
    with writer_lock(data), prefect_session(data, _verbose()):  # a second writer: refused here
        from ecomrlve.flows.pipeline import pipeline

        summary = _run_with_progress("pipeline", PIPELINE_STAGES, lambda: pipeline(params))
    console.print(_stage_table(summary.stages, f"pipeline ({source})"))
    console.print(
        f"flow run   {_flow_run_text(summary.flow_run, summary.flow_run_url)}",
        soft_wrap=True,  # a link stays on one line, whole
        highlight=False,
    )
    for scenario, why in summary.missing_scenarios.items():
        console.print(f"[yellow]scenario   {scenario} has no tasks: {why}[/yellow]")
    console.print(f"tasks      {summary.tasks:,} in the store")
    console.print(f"DuckDB     {summary.db}   (try: ecomrlve sql --data {data} 'FROM tasks')")
    console.print(f"shards     {summary.curriculum} ({summary.shards} shards, verl/ for verl/TRL)")
    console.print(f"plots      {', '.join(summary.plots)}")
    if summary.train:
        console.print(f"training   {summary.train.get('output', '')}")
        run = Path(summary.train["output"])
        if (run / "summary.json").exists():  # an ecomrlve run (a verl run keeps its own files)
            print_report(run, data)


# ---- curriculum ---------------------------------------------------------------------------------

curriculum_app = typer.Typer(
    help="Build curriculum shards from the store, or regenerate harder tasks.",
    no_args_is_help=True,
)


@curriculum_app.command("build")
def curriculum_build(
    name: str = typer.Option(..., "--name", help="curriculum name (letters, digits, _)"),
    where: str | None = typer.Option(None, "--where", help="SQL predicate over the tasks view"),
    order: str | None = typer.Option(None, "--order", help="SQL ORDER BY (default easy → hard)"),
    shard_size: int = typer.Option(
        data_default("shard_size"), "--shard-size", help="tasks per shard"
    ),
    interleave: bool = typer.Option(
        True,
        "--interleave/--no-interleave",
        help="interleave scenarios within a difficulty (--no-interleave: plain (difficulty, "
        "min_steps) order)",
        metavar="",
    ),
    data: Path = DataOpt,
) -> None:
    """Select tasks with DuckDB, order them easy → hard, write DATA/curricula/NAME/."""
    from ecomrlve.flows.params import CurriculumParams
    from ecomrlve.flows.shards import preflight

    with user_errors():
        params = CurriculumParams(
            data_dir=str(data),
            name=name,
            where=where,
            order=order,
            shard_size=shard_size,
            interleave=interleave,
        )
        selected = preflight(params.data_dir, where, order)
    with writer_lock(data), prefect_session(data, _verbose()):
        from ecomrlve.flows.pipeline import curriculum

        result = _run_with_progress("curriculum", ("curriculum",), lambda: curriculum(params))
    console.print(
        f"curriculum {result.name}: {result.tasks:,} of {selected:,} selected tasks in "
        f"{result.shards} shards at {result.path} (verl/TRL rows in {result.path}/verl)"
    )


@curriculum_app.command("regenerate")
def curriculum_regenerate(
    name: str = typer.Option(..., "--name", help="curriculum name, e.g. hard"),
    min_steps: int = typer.Option(..., "--min-steps", help="fewest core steps"),
    max_steps: int = typer.Option(..., "--max-steps", help="most core steps"),
    tasks: int = typer.Option(..., "--tasks", help="new valid tasks wanted"),
    scenarios: str | None = typer.Option(None, "--scenarios", help="comma-separated"),
    difficulty: str = typer.Option("0-10", "--difficulty", help="difficulty range lo-hi"),
    from_run: str | None = typer.Option(
        None, "--from-run", help="training run id (or 'last'): target its weakest cells"
    ),
    seed: int = typer.Option(0, "--seed", help="mixed into the fresh seeds"),
    events_from: int = typer.Option(data_default("events_from"), "--events-from", help=EVENTS_HELP),
    shard_size: int = typer.Option(data_default("shard_size"), "--shard-size"),
    task_runner: str = typer.Option(data_default("task_runner"), "--task-runner"),
    workers: int = typer.Option(data_default("workers"), "--workers"),
    dask_address: str | None = DaskOpt,
    data: Path = DataOpt,
) -> None:
    """Generate fresh tasks in a step band until N valid new ones exist; publish; shard."""
    from ecomrlve.flows.params import RegenerateParams
    from ecomrlve.flows.regenerate import preflight

    with user_errors():
        params = RegenerateParams(
            data_dir=str(data),
            name=name,
            min_steps=min_steps,
            max_steps=max_steps,
            tasks=tasks,
            scenarios=[s.strip() for s in scenarios.split(",") if s.strip()]
            if scenarios is not None
            else None,
            difficulty=_range(difficulty),
            from_run=from_run,
            seed=seed,
            events_from=events_from,
            shard_size=shard_size,
            task_runner=task_runner,
            workers=workers,
            dask_address=dask_address,
        )
        _check_scheduler(params.task_runner, params.dask_address)
        preflight(params)
    with writer_lock(data), prefect_session(data, _verbose()):
        from ecomrlve.flows.pipeline import regenerate_curriculum

        summary = _run_with_progress(
            "regenerate", REGENERATE_STAGES, lambda: regenerate_curriculum(params)
        )
    console.print(_stage_table(summary.stages, f"regenerate {name}"))
    console.print(
        f"{summary.tasks:,} new tasks with {min_steps}-{max_steps} steps "
        f"({', '.join(f'{s} {n}' for s, n in summary.per_scenario.items())}); seeds "
        f"{summary.seeds}; shards at {summary.curriculum}"
    )
    if summary.weakest_axes:
        weakest = "; ".join(
            f"{a['axis']}={a['value']:g} ({a['success_rate']:.0%})" for a in summary.weakest_axes
        )
        console.print(f"weakest axes of run {summary.from_run}: {weakest}")


def _range(text: str) -> tuple[int, int]:
    parts = text.split("-")
    try:
        if len(parts) == 1:
            return int(parts[0]), int(parts[0])
        if len(parts) == 2:
            return int(parts[0]), int(parts[1])
    except ValueError:
        pass
    raise ValueError(f"--difficulty must look like 0-10 or 4, got {text!r}")


# ---- serve --------------------------------------------------------------------------------------


def serve_command(
    config: Path | None = typer.Option(None, "--config", help="YAML config (configs/*.yaml)"),
    data: Path = DataOpt,
    cron: str | None = typer.Option(
        None, "--cron", help="pipeline schedule (default data.schedule)"
    ),
    regenerate_name: str = typer.Option("hard", "--regenerate-name"),
    regenerate_min_steps: int = typer.Option(6, "--regenerate-min-steps"),
    regenerate_max_steps: int = typer.Option(8, "--regenerate-max-steps"),
    regenerate_tasks: int = typer.Option(512, "--regenerate-tasks"),
    regenerate_cron: str | None = typer.Option(
        None, "--regenerate-cron", help="schedule the regeneration too (default: on demand)"
    ),
) -> None:
    """Register the pipeline and the regeneration as Prefect deployments and serve them.

    Point PREFECT_API_URL at a running `prefect server start` to see them in the UI; trigger
    a run with `prefect deployment run 'ecomrlve-pipeline/pipeline'`.
    """
    from ecomrlve.flows.params import PipelineParams, RegenerateParams

    with user_errors():
        cfg, source = resolve_config(config, {"schedule": cron})
        pipeline_params = PipelineParams(data_dir=str(data), config=cfg, config_source=source)
        regenerate_params = RegenerateParams(
            data_dir=str(data),
            name=regenerate_name,
            min_steps=regenerate_min_steps,
            max_steps=regenerate_max_steps,
            tasks=regenerate_tasks,
            events_from=cfg.data.events_from,
        )
    with prefect_session(data, verbose=True):
        from ecomrlve.flows.serve import build_deployments, serve_deployments

        with user_errors():
            deployments = build_deployments(
                pipeline_params, regenerate_params, regenerate_cron=regenerate_cron
            )
        for d in deployments:
            console.print(f"deployment {d.flow_name}/{d.name}: {d.description or ''}")
        serve_deployments(deployments)


def register(app: typer.Typer) -> None:
    app.command("pipeline")(pipeline_command)
    app.add_typer(curriculum_app, name="curriculum")
    app.command("serve")(serve_command)
