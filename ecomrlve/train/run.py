"""`train_from_config`: the training stage as one call (used by `ecomrlve train` and the flows).

Stages: held-out evaluation of the base model -> SFT on reference trajectories -> evaluation ->
DAPO -> evaluation. Each evaluation runs `eval_samples` episodes on each of `eval_tasks` held-out
tasks, which never reach SFT or RL.

The run folder (`output`) receives::

    model/                   the trained policy and tokenizer (`ecomrlve eval --model OUTPUT/model`)
    config.yaml              the config the run used
    curriculum_state.json    the sampler's position and the adaptive difficulty windows
    summary.json             held-out success per stage, counts, timings, run_id
    plots/                   reward.png, success_by_scenario.png, difficulty_frontier.png

and the data directory's DuckDB gets train_runs, train_steps, train_scenarios, train_rollouts,
eval_results and eval_episodes rows under the run's `run_id`.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import polars as pl
import yaml

from ecomrlve import store
from ecomrlve.config import EcomConfig, EnvConfig
from ecomrlve.store import DataPaths, StoreError
from ecomrlve.tasks import Task

log = logging.getLogger(__name__)

ProgressFn = Callable[[str, float], None]

TINY_CORPUS_EPISODES = 256
TINY_CORPUS_TITLES = 5000

# Share of the progress bar each stage takes.
_STAGE_SPANS = {
    "base": (0.0, 0.08),
    "sft": (0.08, 0.25),
    "sft-eval": (0.25, 0.32),
    "dapo": (0.32, 0.92),
    "final": (0.92, 1.0),
}


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
    heldout_tasks: int
    sft_sequences: int
    sft_steps: int
    rl_steps: int
    held_out: dict[str, dict[str, float]] = field(default_factory=dict)
    tables: list[str] = field(default_factory=list)
    plots: list[Path] = field(default_factory=list)
    stage_seconds: dict[str, float] = field(default_factory=dict)
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["output"] = str(self.output)
        out["model_dir"] = str(self.model_dir)
        out["plots"] = [str(p) for p in self.plots]
        return out


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
        curriculum: name of a curriculum under DATA/curricula; default `training.curriculum`,
            and without either, the store's `tasks` view read easy to hard.
        progress: optional `progress(stage, fraction_of_whole_run)` callback.

    Returns:
        A `TrainSummary` with held-out success for base -> SFT -> final, counts and paths.

    Raises:
        ModelNotFoundError (a ValueError) when the model is not on this machine, StoreError for
        a missing catalog/tasks/curriculum, ValueError for a config that cannot run. All are
        raised before anything is written.
    """
    import torch

    from ecomrlve.env import Catalog, tool_schemas
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
    from ecomrlve.train.distributed import init_distributed
    from ecomrlve.train.evaluate import evaluate_episodes, store_report
    from ecomrlve.train.loop import train_dapo
    from ecomrlve.train.lora import is_lora_model
    from ecomrlve.train.model import (
        TINY_MODEL,
        TinySpec,
        ensure_tiny_model,
        load_model_and_tokenizer,
        resolve_model_path,
    )
    from ecomrlve.train.plan import (
        PlanError,
        apply_plan,
        build_rollout_engine,
        plan_for_this_machine,
    )
    from ecomrlve.train.results import RUN_SCHEMA, RunLog, append
    from ecomrlve.train.sft import reference_data, train_sft

    started = time.perf_counter()
    training, agent = cfg.training, cfg.agent
    paths = DataPaths.of(data)
    output = Path(output).expanduser().resolve()

    # ---- inputs: everything that can fail is checked before anything is written
    name = curriculum or training.curriculum
    frame = read_curriculum(paths.root, name) if name else read_store_tasks(paths.root)
    frame = frame.filter(pl.col("scenario").is_in(cfg.env.scenarios))
    if frame.is_empty():
        raise StoreError(f"no tasks of the scenarios {cfg.env.scenarios} to train on")
    train_frame, heldout_frame = split_heldout(frame, training.eval_tasks, training.seed)
    heldout = [row_to_task(r) for r in heldout_frame.iter_rows(named=True)]
    catalog = Catalog.load(paths.root)
    torch.manual_seed(training.seed)
    corpus = None
    if agent.model == TINY_MODEL:
        corpus = tiny_corpus(
            paths.root,
            _sample_tasks(train_frame, TINY_CORPUS_EPISODES),
            catalog,
            cfg.env,
            enable_thinking=agent.enable_thinking,
        )
    # Engines for this machine: vLLM + FSDP + bf16 with CUDA, HF + fp32 without (logged).
    plan = plan_for_this_machine(cfg)
    if plan.world_size > 1:
        raise PlanError(
            f"ecomrlve train runs one process; launched with {plan.world_size} ranks. The FSDP "
            "update path (ecomrlve.train.distributed) is not wired into the DAPO loop yet"
        )
    policy, tokenizer = load_model_and_tokenizer(
        agent.model,
        tiny_cache=paths.root / "models",
        tiny_corpus=corpus,
        dtype=plan.torch_dtype_name,
    )
    policy = apply_plan(policy, plan, init_distributed(), seed=training.seed)
    _prepare_output(output)
    write_config(cfg, output)

    run_id = f"{output.name}-{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:6]}"
    chat = ChatFormat(tokenizer, tool_schemas(), enable_thinking=agent.enable_thinking)
    engine = build_rollout_engine(
        plan,
        policy,
        model_dir=None
        if plan.rollout_engine == "hf"
        else (
            ensure_tiny_model(paths.root / "models", corpus, TinySpec())
            if agent.model == TINY_MODEL
            else resolve_model_path(agent.model)
        ),
        pad_token_id=chat.pad_token_id,
        max_model_len=agent.max_episode_tokens,
        seed=training.seed,
    )
    run_log = RunLog(paths.root, run_id)

    def stage_progress(stage: str) -> ProgressFn | None:
        if progress is None:
            return None
        lo, hi = _STAGE_SPANS[stage]
        return lambda _name, fraction: progress(stage, lo + (hi - lo) * fraction)

    def held_out_eval(stage: str) -> dict[str, float] | None:
        if not heldout:
            return None
        eval_started = time.perf_counter()
        report = evaluate_episodes(
            heldout,
            engine,
            chat,
            catalog,
            cfg,
            samples=training.eval_samples,
            k=training.eval_samples,
            seed=training.seed + 1,
            stage=stage,
            progress=stage_progress(
                "final" if stage == "final" else ("base" if stage == "base" else "sft-eval")
            ),
        )
        store_report(paths.root, report, run_id=run_id, model=agent.model, where=None)
        seconds = time.perf_counter() - eval_started
        summary.stage_seconds[f"eval_{stage}"] = seconds
        log.info("held-out %s: pass@1 %.3f (%.1f s)", stage, report.pass_at_1, seconds)
        return report.overall

    summary = TrainSummary(
        run_id=run_id,
        output=output,
        model_dir=output / "model",
        model=agent.model,
        algorithm=training.algorithm,
        curriculum=name,
        train_tasks=train_frame.height,
        heldout_tasks=len(heldout),
        sft_sequences=0,
        sft_steps=0,
        rl_steps=0,
    )

    summary.stage_seconds["setup"] = time.perf_counter() - started

    # ---- stage 1: the base model on held-out tasks
    base = held_out_eval("base")
    if base is not None:
        summary.held_out["base"] = base

    # ---- stage 2: SFT warm-start on reference trajectories
    if training.sft_epochs > 0:
        sft_started = time.perf_counter()
        sft_tasks = [row_to_task(r) for r in train_frame.iter_rows(named=True)]
        sft_data = reference_data(sft_tasks, chat, catalog, cfg.env, agent)
        sft = train_sft(
            policy,
            sft_data.sequences,
            training,
            pad_token_id=chat.pad_token_id,
            progress=stage_progress("sft"),
        )
        engine.sync_weights(policy)
        summary.sft_sequences, summary.sft_steps = len(sft_data.sequences), sft.steps
        summary.stage_seconds["sft"] = time.perf_counter() - sft_started
        log.info(
            "SFT: %d steps on %d references (%.1f s), last loss %.3f",
            sft.steps,
            len(sft_data.sequences),
            summary.stage_seconds["sft"],
            sft.losses[-1] if sft.losses else float("nan"),
        )
        if sft_data.skipped_failed or sft_data.skipped_long:
            log.warning(
                "SFT skipped %d references that do not verify and %d longer than %d tokens",
                sft_data.skipped_failed,
                sft_data.skipped_long,
                agent.max_episode_tokens,
            )
        after_sft = held_out_eval("sft")
        if after_sft is not None:
            summary.held_out["sft"] = after_sft

    # ---- stage 3: DAPO on the curriculum
    adaptive = None
    if training.adaptive_difficulty:
        adaptive = AdaptiveDifficulty(
            CurriculumSampler.levels_of(train_frame),
            width=training.adaptive_window,
            threshold=training.adaptive_threshold,
            episodes=training.adaptive_episodes,
        )
    sampler = CurriculumSampler(train_frame, seed=training.seed, adaptive=adaptive)
    if training.total_steps > 0:
        rl_started = time.perf_counter()
        loop = train_dapo(
            policy,
            engine,
            chat,
            catalog,
            sampler,
            cfg,
            record=run_log.record_step,
            progress=stage_progress("dapo"),
            checkpoints=Checkpointer(
                output / "checkpoints",
                every=training.save_every,
                keep_last=training.keep_checkpoints,
                resume=training.resume,
            ),
        )
        summary.rl_steps = loop.steps
        summary.stage_seconds["rl"] = time.perf_counter() - rl_started
        final = held_out_eval("final")
        if final is not None:
            summary.held_out["final"] = final

    # ---- outputs
    summary.model_dir.mkdir(parents=True, exist_ok=True)
    if is_lora_model(policy):  # a plain model folder, as `ecomrlve eval --model` expects
        policy = policy.merge_and_unload()
    policy.save_pretrained(summary.model_dir)
    tokenizer.save_pretrained(summary.model_dir)
    sampler.save(output / "curriculum_state.json")
    summary.plots = run_log.plot(output / "plots")
    summary.seconds = time.perf_counter() - started
    summary.tables = [
        "train_runs",
        "train_steps",
        "train_scenarios",
        "train_rollouts",
        "eval_results",
        "eval_episodes",
    ]
    append(
        paths.root,
        "train_runs",
        [
            {
                "run_id": run_id,
                "output": str(output),
                "model": agent.model,
                "algorithm": training.algorithm,
                "curriculum": name,
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
        output / "summary.json",
    )
    if progress:
        progress("done", 1.0)
    return summary


def _prepare_output(output: Path) -> None:
    store.ensure_writable(output)
    if (output / "summary.json").exists():
        log.warning("%s holds an earlier run; its files are replaced", output)


def write_config(cfg: EcomConfig, output: Path) -> None:
    text = yaml.safe_dump(cfg.model_dump(mode="json"), sort_keys=False)
    store.atomic_write_bytes(text.encode(), output / "config.yaml")


def _sample_tasks(frame: pl.DataFrame, limit: int) -> list[Task]:
    from ecomrlve.train.curriculum import row_to_task

    step = max(1, frame.height // limit)
    return [row_to_task(r) for r in frame.gather_every(step).head(limit).iter_rows(named=True)]


def tiny_corpus(
    data: Path,
    tasks: list[Task],
    catalog: Any,
    env_config: EnvConfig,
    *,
    enable_thinking: bool,
) -> list[str]:
    """The texts the tiny tokenizer learns from: reference episodes through the chat template
    (prompts, tool schemas, tool calls, real tool responses), catalog titles, policy texts."""
    from ecomrlve.env import EcomEnv, reference_turns, tool_schemas
    from ecomrlve.train.model import render_chat_text

    texts: list[str] = []
    for task in tasks:
        env = EcomEnv(task, catalog, env_config)
        env.reset(include_tools=False)
        for turn in reference_turns(task):
            if env.step(turn).done:
                break
        texts.append(
            render_chat_text(env.messages, tool_schemas(), enable_thinking=enable_thinking)
        )
    products = pl.read_parquet(DataPaths.of(data).products, columns=["title"])
    step = max(1, products.height // TINY_CORPUS_TITLES)
    texts.extend(products["title"].gather_every(step).head(TINY_CORPUS_TITLES).to_list())
    texts.extend(store.read_policies(data)["text"].to_list())
    return texts
