"""`train_from_config`: the training stage as one call (used by `ecomrlve train` and the flows).

Stages: held-out evaluation of the base model -> SFT on reference trajectories -> evaluation ->
DAPO -> evaluation. Each evaluation runs `eval_samples` episodes on each of `eval_tasks` held-out
tasks, which never reach SFT or RL. Under torchrun every rank runs the same stages on its share
of the work (FSDP2), and rank 0 alone writes files and tables.

The run folder (`output`) receives::

    model/                   the trained policy and tokenizer (`ecomrlve eval --model OUTPUT/model`)
    config.yaml              the config the run used
    curriculum_state.json    the sampler's position and the adaptive difficulty windows
    summary.json             held-out success per stage, counts, timings, run_id
    plots/                   reward.png, success_by_scenario.png, difficulty_frontier.png,
                             sft_loss.png

(`ecomrlve train` and the pipeline then add `report.html`, the run's page: `view.py`), and the
data directory's DuckDB gets train_runs, sft_steps, train_steps, train_scenarios,
train_rollouts, eval_results and eval_episodes rows under the run's `run_id`. `summary.json`
holds each stage's held-out pass@1 with its task-bootstrap 95% interval and the paired gains
(`held_out_gain`: `sft-base`, `final-sft`).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import json
import logging
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import polars as pl
import torch
import yaml

from ecomrlve import store
from ecomrlve.config import ConfigError, EcomConfig, EnvConfig, load_config
from ecomrlve.env import Catalog, EcomEnv, reference_turns, tool_schemas
from ecomrlve.procs import run_bound
from ecomrlve.progress import ProgressEvent, ProgressFn
from ecomrlve.store import DataPaths, StoreError
from ecomrlve.tasks import Task
from ecomrlve.train import metrics
from ecomrlve.train.chat import ChatFormat
from ecomrlve.train.checkpoint import Checkpointer
from ecomrlve.train.curriculum import (
    AdaptiveDifficulty,
    CurriculumSampler,
    read_curriculum,
    read_store_tasks,
    row_to_task,
    split_heldout,
)
from ecomrlve.train.distributed import (
    DistContext,
    barrier,
    broadcast_object,
    gathered_for_generation,
    init_distributed,
    is_sharded,
    iter_full_weights,
)
from ecomrlve.train.engine import RolloutEngine
from ecomrlve.train.evaluate import evaluate_episodes, store_report
from ecomrlve.train.loop import train_dapo
from ecomrlve.train.lora import is_lora_model
from ecomrlve.train.model import (
    TINY_MODEL,
    TinySpec,
    ensure_tiny_model,
    load_model_and_tokenizer,
    render_chat_text,
    resolve_model_path,
)
from ecomrlve.train.plan import (
    EnginePlan,
    apply_plan,
    build_rollout_engine,
    memory_settings_for_this_machine,
    plan_for_this_machine,
)
from ecomrlve.train.results import RUN_SCHEMA, RunLog, append
from ecomrlve.train.rollout_workers import (
    EngineRolloutWorkers,
    ProcessRolloutWorkers,
    WorkerSpec,
)
from ecomrlve.train.selfplay import shared_play
from ecomrlve.train.sft import reference_data, train_sft
from ecomrlve.train.tool_curriculum import FULL_WIDTH, ToolCurriculum, scenario_tools
from ecomrlve.train.tracking import Tracking, check_loggers, open_tracking

log = logging.getLogger(__name__)

TINY_CORPUS_EPISODES = 256
TINY_CORPUS_TITLES = 5000
RESULT_TABLES = [
    "train_runs",
    "sft_steps",
    "train_steps",
    "train_scenarios",
    "train_rollouts",
    "eval_results",
    "eval_episodes",
]

# Share of the progress bar each stage takes.
_STAGE_SPANS = {
    "base": (0.0, 0.08),
    "sft": (0.08, 0.25),
    "sft-eval": (0.25, 0.32),
    "dapo": (0.32, 0.92),
    "final": (0.92, 1.0),
}

# What the bar calls each stage (the held-out evaluations name the model they evaluate).
_STAGE_PHASES = {"base": "eval base", "sft-eval": "eval sft", "final": "eval final"}


@dataclass
class TrainSummary:
    """What a training run produced. `held_out` maps stage (base, sft, final) to task-averaged
    pass@1, pass^k and reward on the held-out tasks."""

    run_id: str
    output: Path
    model_dir: Path
    model: str
    algorithm: str
    curriculum: str | None
    train_tasks: int
    rl_only_tasks: int  # of train_tasks, kept from SFT for RL (rollout.reserved_tasks)
    task_source: str  # "curriculum NAME" or "store tasks where PREDICATE"
    heldout_tasks: int
    sft_sequences: int
    sft_steps: int
    rl_steps: int
    held_out: dict[str, dict[str, float]] = field(default_factory=dict)
    # paired task-bootstrap 95% intervals of stage gains, e.g. "final-sft": {diff, ci_low, ...}
    held_out_gain: dict[str, dict[str, float]] = field(default_factory=dict)
    # training-rollout success, last quarter of RL minus the first: {first, last, diff, ci_*}
    rl_success_quarters: dict[str, float] | None = None
    tables: list[str] = field(default_factory=list)
    plots: list[Path] = field(default_factory=list)
    stage_seconds: dict[str, float] = field(default_factory=dict)
    seconds: float = 0.0
    # the tools each held-out stage's prompts offered (tool curriculum width: scenario or all)
    held_out_tools: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["output"] = str(self.output)
        out["model_dir"] = str(self.model_dir)
        out["plots"] = [str(p) for p in self.plots]
        return out


@dataclass
class TrainRun:
    """Everything the stages share, built once by `_setup` (nothing written yet)."""

    cfg: EcomConfig
    data: Path
    output: Path
    curriculum: str | None
    train_frame: pl.DataFrame  # every task not held out
    sft_frame: pl.DataFrame  # SFT's references: train_frame less rollout.reserved_tasks
    rl_frame: pl.DataFrame  # what RL samples: the reserved tasks, or train_frame without any
    heldout: list[Task]
    catalog: Catalog
    plan: EnginePlan
    ctx: DistContext
    policy: torch.nn.Module
    tokenizer: Any
    chat: ChatFormat
    engine: RolloutEngine
    run_log: RunLog
    summary: TrainSummary
    progress: ProgressFn | None
    started: float
    held_out_tasks: dict[str, pl.DataFrame] = field(default_factory=dict)  # stage -> per task
    tools: ToolCurriculum | None = None  # training.rollout.tool_curriculum

    def tools_for(self) -> Callable[[Task], list[dict[str, Any]] | None] | None:
        """The tool schemas each prompt offers now (None: the chat's full set)."""
        return self.tools.schemas_for if self.tools is not None else None

    @property
    def tools_offered(self) -> str:
        return self.tools.width if self.tools is not None else FULL_WIDTH

    def stage_progress(self, stage: str) -> ProgressFn | None:
        """The stage's events, named after it ("sft", "sft-eval", ...), placed on the run's
        bar by `_STAGE_SPANS`."""
        if self.progress is None or not self.ctx.is_main:
            return None
        lo, hi = _STAGE_SPANS[stage]
        report = self.progress

        phase = _STAGE_PHASES.get(stage, stage)

        def placed(event: ProgressEvent) -> None:
            # rounded: a stage's end and the next stage's start are one number (0.32 + 0.6 is
            # 0.9200000000000002), so the run's bar never steps back
            share = round(lo + (hi - lo) * event.fraction, 6)
            report(event.replace(phase=phase, overall=share))

        return placed


def train_from_config(
    cfg: EcomConfig,
    data: Path,
    output: Path,
    curriculum: str | None = None,
    progress: ProgressFn | None = None,
) -> TrainSummary:
    """Train `cfg.agent.model` on the tasks of `data`; write the run to `output` and DuckDB.

    Args:
        cfg: the whole config; `training` holds the DAPO switches, `agent` the model and token
            budgets, `env` the reward.
        data: the data directory (catalog, tasks, curricula, ecomrlve.duckdb).
        output: the run folder (created; files of an earlier run there are replaced).
        curriculum: name of a curriculum under DATA/curricula; default
            `training.rollout.curriculum`, and without either, the store's `tasks` view read easy
            to hard.
        progress: optional callback of `ProgressEvent`s (phase, step i/N, metrics; `overall`:
            the fraction of the whole run).

    Returns:
        A `TrainSummary` with held-out success for base -> SFT -> final, counts and paths.

    Raises:
        ModelNotFoundError (a ValueError) when the model is not on this machine, StoreError for
        a missing catalog/tasks/curriculum, ValueError for a config that cannot run. All are
        raised before anything is written.
    """
    run = _setup(cfg, Path(data), Path(output), curriculum, progress)
    if cfg.training.eval.before_train:
        _evaluate_stage(run, "base")
    sft_steps = cfg.training.sft.steps
    if (cfg.training.sft.epochs if sft_steps is None else sft_steps) > 0:
        _sft_stage(run)
        _evaluate_stage(run, "sft")
    sampler = _sampler(run)
    if cfg.training.algorithm.total_steps > 0:
        _dapo_stage(run, sampler)
        _evaluate_stage(run, "final")
    _write_outputs(run, sampler)
    if progress and run.ctx.is_main:
        progress(ProgressEvent.of("done", 1.0))
    return run.summary


# ---------------------------------------------------------------------------------------------
# Stages
# ---------------------------------------------------------------------------------------------


def _setup(
    cfg: EcomConfig,
    data: Path,
    output: Path,
    curriculum: str | None,
    progress: ProgressFn | None,
) -> TrainRun:
    """Read the tasks, load the model and plan the engines; everything that can fail is
    checked before anything is written (then rank 0 prepares the run folder)."""
    started = time.perf_counter()
    cfg = memory_settings_for_this_machine(cfg)  # unset memory knobs: the planner's choice
    cfg = with_split_seed(cfg)  # recorded in OUTPUT/config.yaml, for runs from this one's model
    check_loggers(cfg.training.loggers)  # a missing tensorboard/wandb, before anything loads
    agent, root = cfg.agent, DataPaths.of(data).root
    output = output.expanduser().resolve()
    if agent.model != TINY_MODEL:
        resolve_model_path(agent.model)  # a missing model is the first thing to say
    name = curriculum or cfg.training.rollout.curriculum
    tasks = _read_tasks(cfg, root, name)
    catalog = Catalog.load(root)
    plan = plan_for_this_machine(cfg)  # vLLM + FSDP + bf16 with CUDA, HF + fp32 without
    ctx = init_distributed()
    torch.manual_seed(cfg.training.seed)
    tool_curriculum = _tool_curriculum(cfg, tasks.frame, tasks.tools)
    corpus = _tiny_corpus(cfg, root, tasks.train, catalog, tool_curriculum)
    policy, tokenizer = _load_policy(cfg, plan, ctx, root, corpus)
    chat = ChatFormat(tokenizer, tasks.tools, enable_thinking=agent.enable_thinking)
    engine = _rollout_engine(cfg, plan, policy, chat, root, corpus)
    run_id, tracking = _open_run(cfg, output, ctx)
    summary = _summary(cfg, run_id, output, name, tasks)
    summary.stage_seconds["setup"] = time.perf_counter() - started
    return TrainRun(
        cfg=cfg,
        data=root,
        output=output,
        curriculum=name,
        train_frame=tasks.train,
        sft_frame=tasks.sft,
        rl_frame=tasks.rl,
        heldout=[row_to_task(r) for r in tasks.heldout.iter_rows(named=True)],
        catalog=catalog,
        plan=plan,
        ctx=ctx,
        policy=policy,
        tokenizer=tokenizer,
        chat=chat,
        engine=engine,
        run_log=RunLog(root, run_id, tracking),
        summary=summary,
        progress=progress,
        started=started,
        tools=tool_curriculum,
    )


@dataclass(frozen=True)
class _Tasks:
    """The run's tasks, split: held out, SFT's and RL's (see `TrainRun`)."""

    source: str  # where they were read from, for the summary
    frame: pl.DataFrame  # every task of the config's scenarios
    tools: list[dict[str, Any]]  # the tool schemas the prompts offer
    train: pl.DataFrame
    heldout: pl.DataFrame
    sft: pl.DataFrame
    rl: pl.DataFrame


def _read_tasks(cfg: EcomConfig, root: Path, name: str | None) -> _Tasks:
    """The curriculum `name`'s tasks (else the store's, as the config's data block describes
    them) of the config's scenarios, split into held-out, SFT and RL tasks."""
    training, agent = cfg.training, cfg.agent
    if name:
        frame, source = read_curriculum(root, name), f"curriculum {name}"
    else:  # the tasks the config's data block describes, as the pipeline would train on
        where = cfg.data.training_tasks
        frame, source = read_store_tasks(root, where), f"store tasks where {where}"
    if cfg.env.scenarios:  # empty: every scenario
        frame = frame.filter(pl.col("scenario").is_in(cfg.env.scenarios))
    if frame.is_empty():
        raise StoreError(f"no tasks of the scenarios {cfg.env.scenarios or 'all'} to train on")
    tools = offered_tools(agent.tools)
    if agent.tools is not None:
        _warn_unsolvable(frame, set(agent.tools))
    split_seed = training.eval.split_seed
    assert split_seed is not None  # with_split_seed settled it
    train, heldout = split_heldout(frame, training.eval.tasks, split_seed)
    sft, rl = _reserve_rl_tasks(train, training.rollout.reserved_tasks, split_seed)
    return _Tasks(source, frame, tools, train, heldout, sft, rl)


def _tool_curriculum(
    cfg: EcomConfig, frame: pl.DataFrame, tools: list[dict[str, Any]]
) -> ToolCurriculum | None:
    """With `rollout.tool_curriculum`: each scenario's own tools (its references') first."""
    rollout = cfg.training.rollout
    if not rollout.tool_curriculum:
        return None
    return ToolCurriculum(
        scenario_tools(frame, [t["function"]["name"] for t in tools]),
        tools,
        threshold=rollout.tool_curriculum_threshold,
        window=rollout.tool_curriculum_window,
    )


def _tiny_corpus(
    cfg: EcomConfig,
    root: Path,
    train: pl.DataFrame,
    catalog: Catalog,
    tools: ToolCurriculum | None,
) -> list[str] | None:
    """The tiny model's tokenizer corpus (None for any other model)."""
    if cfg.agent.model != TINY_MODEL:
        return None
    return tiny_corpus(
        root,
        _sample_tasks(train, TINY_CORPUS_EPISODES),
        catalog,
        cfg.env,
        enable_thinking=cfg.agent.enable_thinking,
        tools_for=tools.schemas_for if tools else None,
    )


def _rollout_engine(
    cfg: EcomConfig,
    plan: EnginePlan,
    policy: torch.nn.Module,
    chat: ChatFormat,
    root: Path,
    corpus: list[str] | None,
) -> RolloutEngine:
    """The planned rollout engine; vLLM gives the card back until the first generation."""
    agent = cfg.agent
    model_dir = None
    if plan.rollout_engine != "hf":
        model_dir = (
            ensure_tiny_model(root / "models", corpus, TinySpec.of(agent.tiny))
            if agent.model == TINY_MODEL
            else resolve_model_path(agent.model)
        )
    engine = build_rollout_engine(
        plan,
        policy,
        model_dir=model_dir,
        pad_token_id=chat.pad_token_id,
        max_model_len=agent.max_episode_tokens,
        seed=cfg.training.seed,
    )
    if hasattr(engine, "sleep"):
        engine.sleep()
    return engine


def _open_run(cfg: EcomConfig, output: Path, ctx: DistContext) -> tuple[str, Tracking]:
    """The run's id (rank 0's, on every rank); rank 0 prepares the run folder, writes the
    config and opens the loggers."""
    run_id = f"{output.name}-{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:6]}"
    run_id = broadcast_object(run_id, ctx)
    tracking = Tracking()
    if ctx.is_main:
        _prepare_output(output)
        write_config(cfg, output)
        config = cfg.model_dump(mode="json")
        tracking = open_tracking(cfg.training.loggers, output, run_id, config)
    return run_id, tracking


def _summary(
    cfg: EcomConfig, run_id: str, output: Path, name: str | None, tasks: _Tasks
) -> TrainSummary:
    """The run's summary before any stage: what it trains, on how many tasks."""
    training = cfg.training
    return TrainSummary(
        run_id=run_id,
        output=output,
        model_dir=output / "model",
        model=cfg.agent.model,
        algorithm=training.algorithm.name,
        curriculum=name,
        train_tasks=tasks.train.height,
        rl_only_tasks=training.rollout.reserved_tasks,
        task_source=tasks.source,
        heldout_tasks=tasks.heldout.height,
        sft_sequences=0,
        sft_steps=0,
        rl_steps=0,
    )


def with_split_seed(cfg: EcomConfig) -> EcomConfig:
    """`cfg` with `training.eval.split_seed` settled: as given; else, for a model trained by an
    earlier run (a run folder's `model/`, beside its `config.yaml`), that run's split, so its
    held-out tasks (and reserved RL tasks) stay the ones it never trained on whatever this run's
    seed; else `training.seed`. A given seed other than the model's run's is warned about."""
    training = cfg.training
    origin = _origin_split_seed(cfg.agent.model)
    given = training.eval.split_seed
    if given is not None and origin is not None and given != origin:
        log.warning(
            "training.eval.split_seed %d differs from the split (seed %d) of the run %s was "
            "trained in: held-out tasks may be ones it was trained on",
            given,
            origin,
            cfg.agent.model,
        )
    if given is None and origin is not None and origin != training.seed:
        log.info("held-out split: seed %d, the one %s was trained with", origin, cfg.agent.model)
    seed = given if given is not None else origin if origin is not None else training.seed
    block = training.eval.model_copy(update={"split_seed": seed})
    return cfg.model_copy(update={"training": training.model_copy(update={"eval": block})})


def run_config_path(model: str) -> Path | None:
    """The `config.yaml` of the run whose `model/` folder `model` is (None: not one): the
    agent settings the model was trained with."""
    folder = Path(model).expanduser()
    config = folder.parent / "config.yaml"
    if folder.name != "model" or not (folder / "config.json").is_file() or not config.is_file():
        return None
    return config


def _origin_split_seed(model: str) -> int | None:
    """The held-out split seed of the run whose `model/` folder `model` is (None: not one)."""
    config = run_config_path(model)
    if config is None:
        return None
    try:
        training = load_config(config).training
    except ConfigError as e:  # unreadable, or not ours: nothing to inherit
        log.warning("could not read the split seed of %s (%s)", config, e)
        return None
    return training.seed if training.eval.split_seed is None else training.eval.split_seed


def _reserve_rl_tasks(
    train: pl.DataFrame, reserved: int, seed: int
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(SFT's tasks, RL's tasks). With `reserved` > 0, that many training tasks (round-robin
    over scenarios, seeded like the held-out split) are kept from SFT and are all RL samples:
    after SFT a model succeeds on most of the tasks it was trained on, so groups drawn from them
    are mostly all-success and dropped, while on unseen tasks its groups are mixed and teach."""
    if reserved <= 0:
        return train, train
    if reserved >= train.height:
        raise ValueError(
            f"training.rollout.reserved_tasks ({reserved}) must be smaller than the "
            f"{train.height} training tasks left after the held-out split: SFT needs some"
        )
    return split_heldout(train, reserved, seed)


def _load_policy(
    cfg: EcomConfig, plan: EnginePlan, ctx: DistContext, data: Path, corpus: list[str] | None
) -> tuple[torch.nn.Module, Any]:
    """The policy in fp32 master weights (bf16 base with LoRA), ready as planned; rank 0 builds
    a tiny model's cache folder before the other ranks read it."""
    agent = cfg.agent
    for turn in ("build", "load") if ctx.is_distributed else ("load",):
        if turn == "build" and not ctx.is_main:
            barrier(ctx)
            continue
        policy, tokenizer = load_model_and_tokenizer(
            agent.model,
            tiny_cache=data / "models",
            tiny_corpus=corpus,
            tiny_spec=TinySpec.of(agent.tiny),
            dtype=plan.load_dtype_name,
            device=str(ctx.device),
        )
        if turn == "build":
            barrier(ctx)
    if agent.tokenizer and agent.tokenizer != agent.model:
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(
            resolve_model_path(agent.tokenizer), local_files_only=True
        )
    return apply_plan(policy, plan, ctx, seed=cfg.training.seed), tokenizer


def _evaluate_stage(run: TrainRun, stage: str) -> None:
    """Held-out pass@1 of the current policy (every rank plays all of it; rank 0 stores it).
    The vLLM engine sleeps again afterwards, so SFT and the update have the GPU."""
    if not run.heldout:
        return
    training = run.cfg.training
    samples = training.eval.samples
    if stage == "base" and training.eval.base_samples is not None:
        samples = training.eval.base_samples
    started = time.perf_counter()
    shares_policy = getattr(run.engine, "model", None) is run.policy
    generation = gathered_for_generation(run.policy) if shares_policy else contextlib.nullcontext()
    with generation:
        report = evaluate_episodes(
            run.heldout,
            run.engine,
            run.chat,
            run.catalog,
            run.cfg,
            samples=samples,
            k=samples,
            seed=training.seed + 1,
            stage=stage,
            progress=run.stage_progress({"base": "base", "sft": "sft-eval"}.get(stage, "final")),
            tools_for=run.tools_for(),
            tools_offered=run.tools_offered,
        )
    if hasattr(run.engine, "sleep"):
        run.engine.sleep()
    if run.ctx.is_main:
        store_report(
            run.data, report, run_id=run.summary.run_id, model=run.cfg.agent.model, where=None
        )
    seconds = time.perf_counter() - started
    run.summary.stage_seconds[f"eval_{stage}"] = seconds
    run.summary.held_out[stage] = dict(report.overall)
    run.summary.held_out_tools[stage] = run.tools_offered
    run.held_out_tasks[stage] = metrics.per_task(report.episodes, report.k)
    cis, gains = metrics.stage_intervals(run.held_out_tasks, seed=training.seed)
    for name, interval in cis.items():
        run.summary.held_out[name].update(interval)
    run.summary.held_out_gain = gains
    if run.ctx.is_main:
        run.run_log.tracking.log_eval(stage, report.overall, run.summary.rl_steps)
    log.info("held-out %s: pass@1 %.3f (%.1f s)", stage, report.pass_at_1, seconds)


def _sft_stage(run: TrainRun) -> None:
    """SFT warm-start on the reference trajectories of the training tasks."""
    cfg, summary = run.cfg, run.summary
    started = time.perf_counter()
    tasks = [row_to_task(r) for r in run.sft_frame.iter_rows(named=True)]
    data = reference_data(tasks, run.chat, run.catalog, cfg.env, cfg.agent, run.tools_for())
    sft = train_sft(
        run.policy,
        data.sequences,
        cfg.training,
        pad_token_id=run.chat.pad_token_id,
        progress=run.stage_progress("sft"),
        ctx=run.ctx,
    )
    run.engine.sync_weights(run.policy)
    if run.ctx.is_main:
        run.run_log.record_sft(sft.rows)
        run.run_log.tracking.log_sft(sft.losses)
    summary.sft_sequences, summary.sft_steps = len(data.sequences), sft.steps
    summary.stage_seconds["sft"] = time.perf_counter() - started
    log.info(
        "SFT: %d steps on %d references (%.1f s), last loss %.3f",
        sft.steps,
        len(data.sequences),
        summary.stage_seconds["sft"],
        sft.losses[-1] if sft.losses else float("nan"),
    )
    if data.skipped_failed or data.skipped_long:
        log.warning(
            "SFT skipped %d references that do not verify and %d longer than %d tokens",
            data.skipped_failed,
            data.skipped_long,
            cfg.agent.max_episode_tokens,
        )


def _sampler(run: TrainRun) -> CurriculumSampler:
    training = run.cfg.training
    adaptive = None
    if training.rollout.adaptive_difficulty:
        adaptive = AdaptiveDifficulty(
            CurriculumSampler.levels_of(run.rl_frame),
            width=training.rollout.adaptive_window,
            threshold=training.rollout.adaptive_threshold,
            episodes=training.rollout.adaptive_episodes,
        )
    return CurriculumSampler(
        run.rl_frame, seed=training.seed, adaptive=adaptive, shuffle=training.rollout.shuffle
    )


def _dapo_stage(run: TrainRun, sampler: CurriculumSampler) -> None:
    """DAPO on the curriculum, checkpointed (and resumable) under OUTPUT/checkpoints; with
    `training.rollout.async`, rollout workers play the episodes while the trainer updates."""
    training = run.cfg.training
    started = time.perf_counter()
    with _rollout_workers(run) as workers:
        loop = train_dapo(
            run.policy,
            run.engine,
            run.chat,
            run.catalog,
            sampler,
            run.cfg,
            record=run.run_log.record_step,
            progress=run.stage_progress("dapo"),
            checkpoints=Checkpointer(
                run.output / "checkpoints",
                every=training.checkpoint.save_every,
                keep_last=training.checkpoint.keep,
                resume=training.checkpoint.resume,
            ),
            ctx=run.ctx,
            tools=run.tools,
            workers=workers,
            play=shared_play(training.rollout.shared_seats),  # self-play (1 seat: None)
        )
    if workers is not None:  # the engine evaluates next: it serves the final weights
        run.engine.sync_weights(run.policy)
    run.summary.rl_steps = loop.steps
    quarters = run.run_log.success_quarters(training.seed)
    run.summary.rl_success_quarters = quarters
    if quarters and run.ctx.is_main:
        run.run_log.tracking.log_rl_quarters(quarters, loop.steps)
    run.summary.stage_seconds["rl"] = time.perf_counter() - started


def _rollout_workers(run: TrainRun) -> contextlib.AbstractContextManager[Any]:
    """The rollout workers of an asynchronous run (None, in a null context, for a synchronous
    one): a rollout process with the HF engine, which loads the data folder's catalog itself,
    or a thread that drives the endpoint pool (serving the policy since SFT: version 0)."""
    rollout = run.cfg.training.rollout
    if not rollout.asynchronous:
        return contextlib.nullcontext(None)
    pool = run.plan.rollout_engine == "endpoint"
    spec = WorkerSpec(
        model=run.policy,
        pad_token_id=run.chat.pad_token_id,
        chat=run.chat,
        env=run.cfg.env,
        agent=run.cfg.agent,
        group_size=rollout.group_size,
        catalog=(lambda: run.catalog) if pool else functools.partial(Catalog.load, run.data),
        processes=rollout.processes,
    )
    return EngineRolloutWorkers(spec, run.engine, holds=0) if pool else ProcessRolloutWorkers(spec)


def _write_outputs(run: TrainRun, sampler: CurriculumSampler) -> None:
    """The model folder, curriculum state, plots, the train_runs row and summary.json (rank 0;
    a sharded policy's full weights are gathered on every rank first)."""
    summary, cfg = run.summary, run.cfg
    policy = run.policy
    if is_lora_model(policy):  # a plain model folder, as `ecomrlve eval --model` expects
        policy = policy.merge_and_unload()
    weights = None
    if is_sharded(policy):  # gathered on every rank; tied heads saved once, as HF does
        weights = dict(iter_full_weights(policy))
        if getattr(policy.config, "tie_word_embeddings", False):
            weights.pop("lm_head.weight", None)
    if not run.ctx.is_main:
        barrier(run.ctx)
        return
    summary.model_dir.mkdir(parents=True, exist_ok=True)
    policy.save_pretrained(summary.model_dir, state_dict=weights)
    run.tokenizer.save_pretrained(summary.model_dir)
    sampler.save(run.output / "curriculum_state.json")
    summary.plots = run.run_log.plot(run.output / "plots")
    run.run_log.tracking.close()
    summary.seconds = time.perf_counter() - run.started
    summary.tables = list(RESULT_TABLES)
    append(
        run.data,
        "train_runs",
        [
            {
                "run_id": summary.run_id,
                "output": store.data_relative(run.data, run.output),  # moves with the folder
                "model": cfg.agent.model,
                "algorithm": cfg.training.algorithm.name,
                "curriculum": run.curriculum,
                "config": json.dumps(cfg.model_dump(mode="json"), sort_keys=True),
                "steps": summary.rl_steps,
                "base_success": summary.held_out.get("base", {}).get("pass_at_1"),
                "sft_success": summary.held_out.get("sft", {}).get("pass_at_1"),
                "final_success": summary.held_out.get("final", {}).get("pass_at_1"),
                "wall_s": summary.seconds,
                "finished_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            }
        ],
        RUN_SCHEMA,
    )
    store.atomic_write_bytes(
        json.dumps(summary.to_json(), indent=2, sort_keys=True).encode(),
        run.output / "summary.json",
    )
    barrier(run.ctx)


def train_with_torchrun(
    cfg: EcomConfig, data: Path, output: Path, curriculum: str | None, gpus: int
) -> dict[str, Any]:
    """Run `ecomrlve train` as `gpus` torchrun ranks (what the pipeline's train stage does when
    `training.scale.gpus` > 1) and return the run's summary.json. Raises RuntimeError with the tail
    of the ranks' output when they fail."""
    output = Path(output).expanduser().resolve()
    output.mkdir(parents=True, exist_ok=True)
    config = output / "launch_config.yaml"
    write_config(cfg, output, name=config.name)
    command = [
        *(sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(gpus)),
        *("--standalone", "-m", "ecomrlve", "train", "--config", str(config)),
        *("--output", str(output), "--data", str(Path(data).resolve())),
        *(("--curriculum", curriculum) if curriculum else ()),
    ]
    log.info("training on %d ranks: %s", gpus, " ".join(command))
    done = run_bound(command, capture_output=True, text=True)  # ends with us, even on kill -9
    if done.returncode != 0:
        raise RuntimeError(f"torchrun training failed ({done.returncode}): {done.stderr[-3000:]}")
    return json.loads((output / "summary.json").read_text())


def data_dir_for(cfg: EcomConfig, data: Path | None) -> Path:
    """The data folder a run reads: `--data`, else the folder `env.catalog_path` points into
    (the article's `./data/catalog.json` selects `./data`), else `./data`."""
    if data is not None:
        return data
    if cfg.env.catalog_path is None:
        return Path("data")
    path = Path(cfg.env.catalog_path).expanduser()
    for folder in (path, *path.parents):
        if (folder / "catalog" / "products.parquet").exists() or (
            folder / "ecomrlve.duckdb"
        ).exists():
            return folder
    return path if path.suffix == "" else path.parent


def _warn_unsolvable(frame: pl.DataFrame, offered: set[str]) -> None:
    """Say how many tasks need a tool `agent.tools` does not offer (their reference uses it)."""
    needs = frame["reference"].map_elements(
        lambda text: sorted({call["name"] for call in json.loads(text)} - offered),
        return_dtype=pl.List(pl.String),
    )
    missing = sorted({name for names in needs for name in names})
    blocked = int((needs.list.len() > 0).sum())
    if blocked:
        log.warning(
            "agent.tools offers %d tools; %d of %d tasks need others (%s) and cannot succeed",
            len(offered),
            blocked,
            frame.height,
            ", ".join(missing),
        )


def offered_tools(names: list[str] | None) -> list[dict[str, Any]]:
    """The tool schemas offered in an episode: all of them, or those `agent.tools` names."""
    schemas = tool_schemas()
    if names is None:
        return schemas
    known = {s["function"]["name"]: s for s in schemas}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(f"agent.tools: unknown tool(s) {unknown}; known: {sorted(known)}")
    return [known[n] for n in names]


def _prepare_output(output: Path) -> None:
    store.ensure_writable(output)
    if (output / "summary.json").exists():
        log.warning("%s holds an earlier run; its files are replaced", output)


def write_config(cfg: EcomConfig, output: Path, name: str = "config.yaml") -> None:
    text = yaml.safe_dump(cfg.model_dump(mode="json"), sort_keys=False)
    store.atomic_write_bytes(text.encode(), output / name)


def _sample_tasks(frame: pl.DataFrame, limit: int) -> list[Task]:
    step = max(1, frame.height // limit)
    return [row_to_task(r) for r in frame.gather_every(step).head(limit).iter_rows(named=True)]


def tiny_corpus(
    data: Path,
    tasks: list[Task],
    catalog: Any,
    env_config: EnvConfig,
    *,
    enable_thinking: bool,
    tools_for: Callable[[Task], list[dict[str, Any]] | None] | None = None,
) -> list[str]:
    """The texts the tiny tokenizer learns from: reference episodes through the chat template
    (prompts, tool schemas, tool calls, real tool responses), catalog titles, policy texts.
    With `tools_for` (the tool curriculum) each episode is also rendered with its narrow tool
    set: BPE merges the repeated full tool block into a few tokens, and a narrow block it never
    saw would come out longer than the full one."""
    texts: list[str] = []
    for task in tasks:
        env = EcomEnv(task, catalog, env_config)
        env.reset(include_tools=False)
        for turn in reference_turns(task):
            if env.step(turn).done:
                break
        narrow = tools_for(task) if tools_for is not None else None
        for tools in (tool_schemas(), *([narrow] if narrow is not None else [])):
            texts.append(render_chat_text(env.messages, tools, enable_thinking=enable_thinking))
    products = pl.read_parquet(DataPaths.of(data).products, columns=["title"])
    step = max(1, products.height // TINY_CORPUS_TITLES)
    texts.extend(products["title"].gather_every(step).head(TINY_CORPUS_TITLES).to_list())
    texts.extend(store.read_policies(data)["text"].to_list())
    return texts
