"""The learning study: does training on this environment make the tiny agent better at shopping,
and does DAPO's gain over SFT survive RL seeds and float paths?

    python benchmarks/learning.py                      # the study: ~2 h on 2 cores
    python benchmarks/learning.py --parallel 2         # two RL runs at a time (same results)
    python benchmarks/learning.py --quick              # smoke version: a few minutes
    python benchmarks/learning.py --rl-seeds 5 --threads 2 --no-grpo --out experiments/learning
    python benchmarks/learning.py --all-scenarios      # all nine scenarios, not the recipe's

The demo recipe is read at run time from `--config` (default configs/tiny_cpu.yaml) through the
project's config loader; the study changes only what it studies: `algorithm`, `seed` and the
torch thread count per run, every evaluation at the recipe's `eval.samples` (not its
`base_samples`), SFT steps times `--sft-budget` and RL steps times `--rl-budget`
(default 1: the recipe's own), and with `--all-scenarios` all nine scenarios (`env.scenarios`,
with room for bundle's five-call references in the store: `data.max_steps`). One store is built
once (`ecomrlve pipeline --skip-train` into OUT/data); every training is the real entry point
(`python -m ecomrlve train` in a subprocess). One SFT run (seed 0, every core: base eval, SFT,
SFT eval; 0 RL steps); then DAPO from that SFT model (0 SFT steps) at RL seeds 0..N-1 for each
`--threads` count (1 and 2 by default: two float paths, since the order of a reduction follows
the thread count), and with `--grpo` (default) each seed's `algorithm: grpo` twin at the last
thread count: the same weights, held-out tasks and RL budget (the GRPO run drops the recipe's
own clip-higher, dynamic-sampling, token-mean and overlong settings so that the preset holds:
symmetric clip 0.2, no group filter, seq-mean-token-mean, no overlong shaping; every other
setting is the recipe's). Seeds vary the RL runs (sampling, order), not the SFT model, nor the
held-out split: every run evaluates on the SFT run's held-out tasks (`eval.split_seed`), never
on tasks the SFT model was trained on, and RL samples the recipe's reserved tasks
(`rollout.reserved_tasks`), which SFT never saw. Each DAPO run first re-measures the SFT model
at its own seed (the tables' SFT stage, paired with that run's final evaluation; the one at
seed 0 on every core must match the SFT run's own, printed); its GRPO twin skips that
(`eval.before_train: false`). A rerun with the same settings reuses the finished runs under
OUT/runs (the SFT run's config leaves out the RL algorithm block it never reads, so a change of
an RL setting reuses the SFT model).

Reported (printed, and written to OUT/learning.md):

* each DAPO run on its own: held-out base / SFT / DAPO, DAPO - SFT (paired), and its
  training-rollout success in the first vs the last quarter of RL with a group-bootstrap CI;
* held-out pass@1 of base / SFT / DAPO (and GRPO) per scenario and per step band, pooled over the
  seeds, with task-bootstrap 95% intervals (`ecomrlve.train.metrics`: the unit is a held-out task
  of one seed; a paired difference keeps a task's two outcomes together);
* DAPO - GRPO on held-out pass@1, per seed and pooled, with its paired interval;
* curves: OUT/curves.png (success and reward per RL step of every run, SFT loss), and
  each run's own plots (OUT/runs/*/plots/: reward, success by scenario, SFT loss);
* throughput on the same tiny model and the same reference episodes: our SFT beside TRL's
  `SFTTrainer`, and our DAPO update beside the update phase of TRL's `GRPOTrainer` (its step
  minus its generation), in tokens/s of trained (assistant) tokens.

Why one script over 700 lines: a benchmark is one runnable file (DEVELOPERS: `benchmarks/` are
scripts printing a table); its parts (config, runs, tables, plots, throughput) serve only this
study, and the reusable pieces already live in `ecomrlve` (metrics, plots, config loader).
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import yaml

from ecomrlve import store
from ecomrlve.config import (
    FLAT_TRAINING_KEYS,
    GRPO_PRESETS,
    ConfigError,
    EcomConfig,
    config_from_dict,
    load_config,
)
from ecomrlve.generators.registry import scenario_names
from ecomrlve.train import metrics

ROOT = Path(__file__).resolve().parent.parent
# bundle's shortest reference is five tool calls; a recipe whose store stops below that
# (tiny_cpu: data.max_steps 3) would leave one of the nine scenarios out
BUNDLE_MIN_STEPS = 5
STAGES = {"base": "base", "sft": "SFT", "final": "RL"}
# the recipe's own RL steps per run (--rl-budget scales them): the claim is the demo's gain
RL_BUDGET = 1.0
DEFAULT_THREADS = len(os.sched_getaffinity(0))  # torch's own default: one thread per core
# --quick: a smoke version of the same study (the recipe's model and settings, smaller budgets)
QUICK_DATA = {"products": 1000, "tasks": 180}
QUICK_TRAINING = {
    "sft_steps": 30,
    "total_steps": 2,
    "prompts_per_step": 4,
    "group_size": 4,
    "eval_tasks": 18,
    "eval_samples": 2,
}
QUICK_RESERVED_TASKS = 40  # of the quick store's 162 training tasks, when the recipe reserves


@dataclass
class Run:
    algorithm: str
    seed: int
    output: Path
    threads: int  # torch threads: each count is its own float path (reduction order)
    run_id: str = ""
    seconds: float = 0.0  # 0: reused from an earlier invocation
    cpu_s: float = 0.0

    @property
    def name(self) -> str:
        return f"{self.algorithm}-seed{self.seed}-t{self.threads}"


# ---------------------------------------------------------------------------------------------
# The recipe, read at run time
# ---------------------------------------------------------------------------------------------


def training_value(cfg: EcomConfig, key: str) -> Any:
    """A training setting by its flat name (`sft_steps`, `algorithm`), read where the config
    model keeps it (`training.sft.steps`, `training.algorithm.name`)."""
    block, field = FLAT_TRAINING_KEYS.get(key, (None, key))
    where = getattr(cfg.training, block) if block else cfg.training
    if not hasattr(where, field):
        raise KeyError(f"training.{key}")
    return getattr(where, field)


def set_training(training: dict[str, Any], key: str, value: Any) -> None:
    """Set a flat training key where the file keeps it: inside its block when the file has that
    block (`algorithm` -> `algorithm: {name: ...}`, `sft_steps` -> `sft: {steps: ...}`), else
    flat, so an override never contradicts, or replaces, the file's own settings."""
    block, field = FLAT_TRAINING_KEYS.get(key, (None, key))
    if block and isinstance(training.get(block), dict):
        training[block][field] = value
        if key != block:  # `algorithm` flat is the block's name, never the block itself
            training.pop(key, None)
    else:
        training[key] = value


def study_config(
    path: Path, *, sft_budget: float, rl_budget: float, quick: bool, all_scenarios: bool = False
) -> dict[str, Any]:
    """The recipe at `path` as a raw mapping, with the study's changes; validated. The recipe's
    own scenarios, or with `all_scenarios` all nine (and room for bundle's references)."""
    recipe = load_config(path)  # the recipe itself must load first (ConfigError: exit 2)
    raw = yaml.safe_load(path.read_text()) or {}
    data = raw.setdefault("data", {})
    if all_scenarios:
        raw.setdefault("env", {})["scenarios"] = list(scenario_names())
        if recipe.data.max_steps is not None and recipe.data.max_steps < BUNDLE_MIN_STEPS:
            data["max_steps"] = BUNDLE_MIN_STEPS
    training = raw.setdefault("training", {})
    # every evaluation at the recipe's sample count: a DAPO run's starting model is the SFT
    # model, whose evaluation pairs with the run's final one (the demo plays its scratch base once)
    drop_training(training, "eval_base_samples")
    if quick:
        data.update(QUICK_DATA)
        for key, value in QUICK_TRAINING.items():
            set_training(training, key, min(value, training_value(recipe, key) or value))
        ppo = training_value(recipe, "ppo_mini_batch_size")
        if ppo is not None:
            prompts = QUICK_TRAINING["prompts_per_step"]
            set_training(training, "ppo_mini_batch_size", min(ppo, prompts))
        reserved = training_value(recipe, "reserved_tasks")
        if reserved:  # the recipe's 600 would leave SFT nothing of 180 tasks
            set_training(training, "reserved_tasks", min(reserved, QUICK_RESERVED_TASKS))
    now = config_from_dict(copy.deepcopy(raw), source=f"{path} with the study's changes")
    for key, budget in ((steps_key(now), sft_budget), ("total_steps", rl_budget)):
        current = int(training_value(now, key))
        set_training(training, key, max(1, round(current * budget)) if current else 0)
    config_from_dict(copy.deepcopy(raw), source=f"{path} with the study's changes")
    return raw


def steps_key(cfg: EcomConfig) -> str:
    """The key that sets SFT's length: `sft_steps`, or `sft_epochs` when the recipe uses passes."""
    return "sft_steps" if training_value(cfg, "sft_steps") is not None else "sft_epochs"


def drop_training(training: dict[str, Any], key: str) -> None:
    """Remove a flat training key wherever the file keeps it (see `set_training`)."""
    block, field = FLAT_TRAINING_KEYS.get(key, (None, key))
    if key != block:  # `algorithm` flat is the block's name, never the block itself
        training.pop(key, None)
    if block and isinstance(training.get(block), dict):
        training[block].pop(field, None)


def run_config(raw: dict[str, Any], path: Path, model: Path | None = None, **training: Any) -> bool:
    """Write the recipe with flat `training` overrides (and `agent.model`) to `path`; False
    when the file already held exactly this.

    `algorithm="grpo"` also removes the recipe's own settings of the DAPO techniques, which
    would otherwise win over the preset (`{**GRPO_PRESETS, **file}`) and make the "GRPO" run
    DAPO under another name; the loaded config is checked to hold the preset."""
    raw = copy.deepcopy(raw)
    if training.get("algorithm") == "grpo":
        for key in GRPO_PRESETS:
            drop_training(raw.setdefault("training", {}), key)
    for key, value in training.items():
        set_training(raw.setdefault("training", {}), key, value)
    if model is not None:
        raw.setdefault("agent", {})["model"] = str(model)
    loaded = config_from_dict(copy.deepcopy(raw), source=str(path))
    if training.get("algorithm") == "grpo":
        wrong = {k: training_value(loaded, k) for k in GRPO_PRESETS}
        wrong = {k: v for k, v in wrong.items() if v != GRPO_PRESETS[k]}
        if wrong:
            raise ConfigError(f"{path}: the GRPO run would keep DAPO settings {wrong}")
    text = yaml.safe_dump(raw, sort_keys=False)
    if path.exists() and path.read_text() == text:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return True


# ---------------------------------------------------------------------------------------------
# Running the entry points
# ---------------------------------------------------------------------------------------------


def cli(args: list[str], log_path: Path, threads: int = DEFAULT_THREADS) -> tuple[float, float]:
    """`python -m ecomrlve ARGS` in a subprocess (output to `log_path`), with `threads` torch
    threads; its wall and CPU seconds (CPU time is what a busy machine
    does not inflate: on 2 idle cores the wall time of a run lies between half its CPU time
    and all of it)."""
    env = {
        # the pipeline's temporary Prefect server can take minutes to start on a busy machine
        "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "600",
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    if threads != DEFAULT_THREADS:  # torch reads it at start-up for its intra-op pool
        env["OMP_NUM_THREADS"] = str(threads)
    started = time.perf_counter()
    with log_path.open("w") as log:
        child = subprocess.Popen(
            [sys.executable, "-m", "ecomrlve", *args], stdout=log, stderr=subprocess.STDOUT, env=env
        )
        # this child's own CPU time: RUSAGE_CHILDREN would also count runs playing beside it
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        tail = log_path.read_text().splitlines()[-15:]
        raise SystemExit(
            f"`ecomrlve {' '.join(args)}` failed ({child.returncode}):\n" + "\n".join(tail)
        )
    return time.perf_counter() - started, usage.ru_utime + usage.ru_stime


def train(run: Run, config: Path, changed: bool, data: Path) -> None:
    """Train `run` with `config`, unless its folder holds a finished run of that same config
    (a rerun of the study after an interruption picks up where it stopped)."""
    summary = run.output / "summary.json"
    if changed or not summary.exists():
        run.seconds, run.cpu_s = cli(
            ["train", "--config", str(config), "--data", str(data), "--output", str(run.output)],
            run.output.with_suffix(".log"),
            run.threads,
        )
    run.run_id = json.loads(summary.read_text())["run_id"]


def read(data: Path, query: str, params: list[Any]) -> pl.DataFrame:
    with store.connect(data) as con:
        result = con.execute(query, params)
        columns = [d[0] for d in result.description]
        return pl.DataFrame(result.fetchall(), schema=columns, orient="row")


# ---------------------------------------------------------------------------------------------
# Held-out pass@1 with task-bootstrap intervals
# ---------------------------------------------------------------------------------------------


def per_task(episodes: pl.DataFrame, runs: list[Run], stage: str) -> pl.DataFrame:
    """One row per (seed, threads, held-out task) of `runs` at `stage`: pass@1, scenario, step
    band."""
    frames = []
    for run in runs:
        part = episodes.filter((pl.col("run_id") == run.run_id) & (pl.col("stage") == stage))
        if part.height:
            frames.append(
                metrics.per_task(part, 1).with_columns(
                    pl.lit(run.seed).alias("seed"), pl.lit(run.threads).alias("threads")
                )
            )
    return pl.concat(frames) if frames else pl.DataFrame()


def interval(values: np.ndarray, *, signed: bool = False) -> str:
    """Mean of per-task values with its task-bootstrap 95% interval (at 0 or 1 success in every
    episode the interval is a point: the bootstrap sees no variation to resample)."""
    if values.size == 0:
        return "-"
    low, high = metrics.task_bootstrap(values, seed=0)
    f = "+.3f" if signed else ".3f"
    return f"{values.mean():{f}} [{low:{f}}, {high:{f}}]"


def paired(after: pl.DataFrame, before: pl.DataFrame) -> np.ndarray:
    """after - before per (seed, threads, task), the tasks both hold."""
    if after.is_empty() or before.is_empty():
        return np.array([])
    key = ["seed", "threads", "task_id"]
    joined = after.join(before.select(*key, "pass_at_1"), on=key, maintain_order="left")
    return (joined["pass_at_1"] - joined["pass_at_1_right"]).to_numpy()


def held_out_table(stages: dict[str, pl.DataFrame], by: str) -> list[list[str]]:
    """pass@1 [95% CI] per stage for all tasks and for each value of `by`, plus RL - SFT."""
    header = [by, "tasks", *stages, "DAPO - SFT"]
    keys = sorted(set().union(*(f[by].unique().to_list() for f in stages.values() if f.height)))
    rows = [header]
    for key in ["all", *keys]:
        chosen = {
            name: frame if key == "all" or not frame.height else frame.filter(pl.col(by) == key)
            for name, frame in stages.items()
        }
        first = next(iter(chosen.values()))
        cells = [interval(f["pass_at_1"].to_numpy()) if f.height else "-" for f in chosen.values()]
        gain = paired(chosen["DAPO"], chosen["SFT"])
        rows.append([key, str(first.height), *cells, interval(gain, signed=True)])
    return rows


def timing_table(runs: list[Run]) -> list[list[str]]:
    """Each run's wall and CPU seconds and its stages' wall seconds (`summary.json`)."""
    stages = ["setup", "eval_base", "sft", "eval_sft", "rl", "eval_final"]
    rows = [["run", "wall s", "CPU s", *stages]]
    for run in runs:
        seconds = json.loads((run.output / "summary.json").read_text())["stage_seconds"]
        wall = f"{run.seconds:.0f}" if run.seconds else "reused"
        cells = [f"{seconds[s]:.0f}" if s in seconds else "-" for s in stages]
        rows.append([run.name, wall, f"{run.cpu_s:.0f}" if run.seconds else "-", *cells])
    return rows


def per_run_table(
    stages: dict[str, pl.DataFrame], runs: list[Run], rollouts: pl.DataFrame
) -> list[list[str]]:
    """Each DAPO run on its own: held-out base / SFT / DAPO, the paired DAPO - SFT gain, and
    whether its training-rollout success rose (last quarter of RL minus the first, on one
    scenario mix: `metrics.quarter_gain`, recomputed here from `rollouts`, the runs'
    `train_rollouts` rows, so that every run is read by the same estimator)."""
    rows = [["run", "base", "SFT", "DAPO", "DAPO - SFT (paired)", "train success q1 -> q4"]]
    for run in runs:
        chosen = {
            name: frame.filter((pl.col("seed") == run.seed) & (pl.col("threads") == run.threads))
            if name != "base"
            else frame
            for name, frame in stages.items()
            if name in ("base", "SFT", "DAPO") and frame.height
        }
        cells = [interval(f["pass_at_1"].to_numpy()) for f in chosen.values()]
        quarters = metrics.quarter_gain(
            rollouts.filter(pl.col("run_id") == run.run_id), seed=run.seed
        )
        trend = (
            f"{quarters['first']:.2f} -> {quarters['last']:.2f}, {quarters['diff']:+.3f} "
            f"[{quarters['ci_low']:+.3f}, {quarters['ci_high']:+.3f}]"
            if quarters
            else "-"
        )
        gain = interval(paired(chosen["DAPO"], chosen["SFT"]), signed=True)
        rows.append([run.name, *cells, gain, trend])
    return rows


def comparison_table(dapo: pl.DataFrame, grpo: pl.DataFrame, seeds: list[int]) -> list[list[str]]:
    rows = [["seed", "tasks", "DAPO", "GRPO", "DAPO - GRPO (paired)"]]
    for seed in [*seeds, "all"]:
        d = dapo if seed == "all" else dapo.filter(pl.col("seed") == seed)
        g = grpo if seed == "all" else grpo.filter(pl.col("seed") == seed)
        rows.append(
            [
                str(seed),
                str(d.height),
                interval(d["pass_at_1"].to_numpy()),
                interval(g["pass_at_1"].to_numpy()),
                interval(paired(d, g), signed=True),
            ]
        )
    return rows


# ---------------------------------------------------------------------------------------------
# Curves
# ---------------------------------------------------------------------------------------------


def plot_study(steps: pl.DataFrame, sft: pl.DataFrame, runs: list[Run], path: Path) -> Path:
    """Success and reward per RL step of every RL run (DAPO solid, GRPO dashed; colour = seed),
    and the SFT run's loss."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for run in runs:
        colour = colours[run.seed % len(colours)]
        if run.algorithm == "sft":
            loss = sft.filter(pl.col("run_id") == run.run_id).sort("step")
            axes[2].plot(loss["step"], loss["loss"], color=colour, lw=1, label=run.name)
            continue
        part = steps.filter(pl.col("run_id") == run.run_id).sort("step")
        style = {"color": colour, "ls": "-" if run.algorithm == "dapo" else "--"}
        for ax, column in zip(axes[:2], ("success_rate", "reward_mean"), strict=True):
            ax.plot(part["step"], part[column], marker="o", ms=3, label=run.name, **style)
    titles = ("training success rate", "training reward (mean)", "SFT loss")
    for ax, title in zip(axes, titles, strict=True):
        ax.set_title(title)
        ax.set_xlabel("SFT step" if title == "SFT loss" else "RL step")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    axes[2].set_yscale("log")
    try:
        return store.write_png(fig, path)
    finally:
        plt.close(fig)


# ---------------------------------------------------------------------------------------------
# Throughput: ours beside TRL on the same tiny model and reference episodes
# ---------------------------------------------------------------------------------------------


def reference_sequences(cfg: EcomConfig, data: Path, tokenizer: Any) -> tuple[list[Any], Any]:
    """The verified reference episodes of every task in the store (token sequences), and the
    chat format that rendered them."""
    from ecomrlve.env import Catalog
    from ecomrlve.train.chat import ChatFormat
    from ecomrlve.train.curriculum import read_store_tasks, row_to_task
    from ecomrlve.train.run import offered_tools
    from ecomrlve.train.sft import reference_data

    frame = read_store_tasks(data).filter(pl.col("scenario").is_in(cfg.env.scenarios))
    agent = cfg.agent
    chat = ChatFormat(tokenizer, offered_tools(agent.tools), enable_thinking=agent.enable_thinking)
    tasks = [row_to_task(r) for r in frame.iter_rows(named=True)]
    return reference_data(tasks, chat, Catalog.load(data), cfg.env, cfg.agent).sequences, chat


def our_sft_rate(raw: dict[str, Any], model: Any, sequences: list[Any], pad: int, steps: int):
    """Our `train_sft` for `steps` steps with the recipe's settings (no warmup)."""
    from ecomrlve.train.plan import memory_settings_for_this_machine
    from ecomrlve.train.sft import train_sft

    raw = copy.deepcopy(raw)
    set_training(raw["training"], "sft_steps", steps)
    set_training(raw["training"], "sft_warmup_steps", 0)
    cfg = memory_settings_for_this_machine(config_from_dict(raw))  # as a run plans it
    result = train_sft(model, sequences, cfg.training, pad_token_id=pad)
    return result.tokens, result.seconds


def loop_clock() -> Any:
    """A `TrainerCallback` timing the training loop (not the trainer's setup): `.seconds`."""
    from transformers import TrainerCallback

    class LoopClock(TrainerCallback):
        started = seconds = 0.0

        def on_train_begin(self, *args: Any, **kwargs: Any) -> None:
            self.started = time.perf_counter()

        def on_train_end(self, *args: Any, **kwargs: Any) -> None:
            self.seconds = time.perf_counter() - self.started

    return LoopClock()


def trl_cpu_run(steps: int) -> dict[str, Any]:
    """The TRL trainer arguments both timed runs share: `steps` updates on the CPU, one log line,
    no checkpoints, no reporting, seed 0."""
    return {
        "max_steps": steps,
        "use_cpu": True,
        "report_to": "none",
        "save_strategy": "no",
        "logging_steps": steps,
        "seed": 0,
    }


def trl_sft_rate(
    cfg: EcomConfig, model: Any, tokenizer: Any, sequences: list[Any], steps: int, work: Path
):
    """Supervised tokens per second of `SFTTrainer`'s training loop (batches, forward, backward,
    optimizer: what `train_sft`'s own clock covers)."""
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    class Timed(SFTTrainer):
        tokens = 0

        def training_step(self, model, inputs, num_items_in_batch=None):
            Timed.tokens += int((inputs["labels"][:, 1:] != -100).sum())
            return super().training_step(model, inputs, num_items_in_batch)

    rows = [{"input_ids": s.token_ids, "assistant_masks": s.loss_mask} for s in sequences]
    args = SFTConfig(
        output_dir=str(work / "trl-sft"),
        per_device_train_batch_size=training_value(cfg, "sft_batch_size"),
        learning_rate=training_value(cfg, "sft_learning_rate"),
        lr_scheduler_type="constant",
        max_length=None,
        dataloader_num_workers=0,
        **trl_cpu_run(steps),
    )
    clock = loop_clock()
    trainer = Timed(
        model=model,
        args=args,
        train_dataset=Dataset.from_list(rows),
        processing_class=tokenizer,
        callbacks=[clock],
    )
    trainer.train()
    return Timed.tokens, clock.seconds


def trl_grpo_rate(cfg: EcomConfig, model: Any, tokenizer: Any, data: Path, steps: int, work: Path):
    """Trained completion tokens (tool results masked) per second of GRPOTrainer's update phase:
    its training loop's time minus its generation-and-scoring time (which also holds the old
    log-probs when TRL needs them; our `update_s` includes them)."""
    import trl
    from trl import GRPOConfig, GRPOTrainer

    from ecomrlve.integrations.trl import EcomToolEnv, ecom_reward, load_curriculum_dataset

    class Timed(GRPOTrainer):
        tokens = 0
        generate_s = 0.0

        def _generate_and_score_completions(self, inputs):
            started = time.perf_counter()
            out = super()._generate_and_score_completions(inputs)
            Timed.generate_s += time.perf_counter() - started
            mask = out["completion_mask"]
            Timed.tokens += int(
                (mask * out["tool_mask"]).sum() if "tool_mask" in out else mask.sum()
            )
            return out

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    tokenizer = copy.deepcopy(tokenizer)
    # TRL refuses the tiny model's own template; its bundled Qwen3 one renders the same turns
    tokenizer.chat_template = (
        Path(trl.__file__).parent / "chat_templates" / "qwen3.jinja"
    ).read_text()
    group = training_value(cfg, "group_size")
    args = GRPOConfig(
        output_dir=str(work / "trl-grpo"),
        per_device_train_batch_size=group,
        num_generations=group,
        max_completion_length=cfg.agent.max_new_tokens,
        max_tool_calling_iterations=cfg.env.max_steps,
        chat_template_kwargs={"enable_thinking": False},
        learning_rate=training_value(cfg, "learning_rate"),
        epsilon=training_value(cfg, "clip_ratio_low"),
        epsilon_high=training_value(cfg, "clip_ratio_high"),
        loss_type="dapo",
        beta=0.0,
        **trl_cpu_run(steps),
    )
    clock = loop_clock()
    trainer = Timed(
        model=model,
        args=args,
        processing_class=tokenizer,
        train_dataset=load_curriculum_dataset(data, cfg.data.curriculum),
        environment_factory=EcomToolEnv.factory(data, cfg.env),
        reward_funcs=[ecom_reward],
        callbacks=[clock],
    )
    trainer.train()
    return Timed.tokens, clock.seconds - Timed.generate_s


def our_update_rate(data: Path, runs: list[Run], ppo_epochs: int) -> tuple[int, float]:
    """Trained response tokens (x PPO epochs) per second of our update phase, over the DAPO runs."""
    ids = [r.run_id for r in runs if r.algorithm == "dapo"]
    marks = ",".join("?" * len(ids))
    tokens = read(
        data,
        f"SELECT coalesce(sum(response_tokens), 0) AS t FROM train_rollouts "
        f"WHERE trained AND run_id IN ({marks})",
        ids,
    )["t"][0]
    seconds = read(
        data,
        f"SELECT coalesce(sum(update_s), 0) AS s FROM train_steps WHERE run_id IN ({marks})",
        ids,
    )["s"][0]
    return int(tokens) * ppo_epochs, float(seconds)


def throughput_table(raw: dict[str, Any], data: Path, runs: list[Run], steps: int, work: Path):
    from ecomrlve.train.model import load_model_and_tokenizer

    cfg = config_from_dict(copy.deepcopy(raw))
    model_dir = next(r for r in runs if r.algorithm == "sft").output / "model"  # after SFT
    model, tokenizer = load_model_and_tokenizer(str(model_dir), device="cpu")
    sequences, chat = reference_sequences(cfg, data, tokenizer)
    ours_sft = our_sft_rate(raw, copy.deepcopy(model), sequences, chat.pad_token_id, steps)
    trl_sft = trl_sft_rate(cfg, copy.deepcopy(model), tokenizer, sequences, steps, work)
    ours_upd = our_update_rate(data, runs, training_value(cfg, "ppo_epochs"))
    trl_upd = trl_grpo_rate(cfg, copy.deepcopy(model), tokenizer, data, max(1, steps // 10), work)
    rows = [
        ["phase", "ours tok/s", "TRL tok/s", "ours / TRL", "ours (tokens, s)", "TRL (tokens, s)"]
    ]
    for phase, (ot, osec), (tt, tsec) in (
        ("SFT (SFTTrainer)", ours_sft, trl_sft),
        ("RL update (GRPOTrainer)", ours_upd, trl_upd),
    ):
        ours = ot / osec if osec > 0 else math.nan
        theirs = tt / tsec if tsec > 0 else math.nan
        rows.append(
            [
                phase,
                f"{ours:,.0f}" if osec > 0 else "- (no update ran)",
                f"{theirs:,.0f}" if tsec > 0 else "-",
                f"{ours / theirs:.2f}" if osec > 0 and theirs > 0 else "-",
                f"{ot:,}, {osec:.1f}",
                f"{tt:,}, {tsec:.1f}",
            ]
        )
    return rows


# ---------------------------------------------------------------------------------------------
# Tables
# ---------------------------------------------------------------------------------------------


def text_table(rows: list[list[str]]) -> str:
    """Rows of strings as aligned columns; the first row is the header, ruled below."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def markdown_table(rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]
    lines += ["| " + " | ".join(row) + " |" for row in rows[1:]]
    return "\n".join(lines)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, default=ROOT / "configs" / "tiny_cpu.yaml")
    parser.add_argument(
        "--rl-seeds",
        "--seeds",
        dest="seeds",
        type=int,
        default=None,
        help="RL seeds per thread count, from one SFT model (default 3; --quick: 2)",
    )
    parser.add_argument(
        "--threads",
        type=int,
        nargs="+",
        default=[1, 2],
        help="torch threads of the RL runs: each count is its own float path (default 1 2)",
    )
    parser.add_argument(
        "--grpo",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="a GRPO twin of each seed's DAPO run (at the last thread count)",
    )
    parser.add_argument(
        "--all-scenarios", action="store_true", help="all nine scenarios, not the recipe's"
    )
    parser.add_argument(
        "--parallel", type=int, default=1, help="RL runs at a time (results do not change)"
    )
    parser.add_argument("--sft-budget", type=float, default=1.0, help="x the recipe's SFT steps")
    parser.add_argument(
        "--rl-budget", type=float, default=RL_BUDGET, help="x the recipe's RL steps, per run"
    )
    parser.add_argument("--quick", action="store_true", help="smoke version: a few minutes")
    parser.add_argument("--throughput-steps", type=int, default=None, help="SFT steps timed")
    parser.add_argument("--out", type=Path, default=ROOT / "experiments" / "learning")
    args = parser.parse_args()
    args.seeds = args.seeds if args.seeds is not None else (2 if args.quick else 3)
    bad = args.seeds < 1 or args.sft_budget <= 0 or args.rl_budget <= 0
    if bad or args.parallel < 1 or min(args.threads) < 1:
        parser.error("--rl-seeds, --threads and --parallel must be >= 1 and the budgets > 0")
    return args


# the rollout settings an SFT-only run reads: which tasks SFT keeps, which tools its prompts
# offer, and what plays its evaluations
SFT_ROLLOUT_KEYS = (
    "curriculum",
    "reserved_tasks",
    "tool_curriculum",
    "tool_curriculum_threshold",
    "tool_curriculum_window",
    "engine",
)


def sft_run_config(raw: dict[str, Any], path: Path) -> bool:
    """The SFT run's config (seed 0, 0 RL steps): the recipe without the RL settings an
    SFT-only run never reads (the algorithm block, the rollout batch and task order), so a
    change of an RL setting reuses the SFT model."""
    raw = copy.deepcopy(raw)
    training = raw.setdefault("training", {})
    training.pop("algorithm", None)
    rollout = training.get("rollout")
    if isinstance(rollout, dict):
        training["rollout"] = {k: v for k, v in rollout.items() if k in SFT_ROLLOUT_KEYS}
    return run_config(raw, path, seed=0, total_steps=0)


def rl_runs(args: argparse.Namespace, sft: Run) -> list[tuple[Run, dict[str, Any]]]:
    """The RL runs and their overrides: DAPO at every seed x thread count; with --grpo, each
    seed's GRPO twin at the last thread count (the SFT run's)."""
    plans = []
    for threads in args.threads:
        for seed in range(args.seeds):
            plans.append((Run("dapo", seed, sft.output.parent, threads), {"algorithm": "dapo"}))
    if args.grpo:
        for seed in range(args.seeds):
            plans.append(
                (Run("grpo", seed, sft.output.parent, args.threads[-1]), {"algorithm": "grpo"})
            )
    for run, _ in plans:
        run.output = run.output / run.name
    return plans


def main() -> None:
    args = parse_args()
    try:
        raw = study_config(
            args.config,
            sft_budget=args.sft_budget,
            rl_budget=args.rl_budget,
            quick=args.quick,
            all_scenarios=args.all_scenarios,
        )
    except ConfigError as err:
        print(err, file=sys.stderr)
        sys.exit(2)
    except KeyError as err:
        print(
            f"{args.config}: the study needs {err.args[0]}, which it does not have", file=sys.stderr
        )
        sys.exit(2)
    cfg = config_from_dict(copy.deepcopy(raw))
    throughput_steps = args.throughput_steps or (4 if args.quick else 20)
    out = args.out.resolve()
    data = out / "data"
    (out / "runs").mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    study_yaml = out / "study.yaml"
    store_s = 0.0  # 0: the store of an earlier invocation with the same data block
    data_block = copy.deepcopy(raw)
    data_block["training"] = {}  # the store depends on data/env, not on the training settings
    if run_config(data_block, study_yaml) or not store.DataPaths.of(data).db.exists():
        store_s, _ = cli(
            ["pipeline", "--config", str(study_yaml), "--data", str(data), "--skip-train"],
            out / "pipeline.log",
        )
    print(f"store: {data} ({store_s:.0f} s)")

    # SFT once (seed 0: base eval, SFT, SFT eval; RL steps 0), on every core; every
    # RL run starts from its model with SFT steps 0, so DAPO and GRPO differ in nothing but
    # themselves. Each DAPO run first evaluates that model at its own seed (the SFT stage of
    # the tables, paired with the run's final evaluation); the GRPO run of the seed starts from
    # the same model at the same seed, so it skips that evaluation (`eval.before_train: false`).
    sft = Run("sft", 0, out / "runs" / "sft", DEFAULT_THREADS)
    changed = sft_run_config(raw, sft.output.with_suffix(".yaml"))
    train(sft, sft.output.with_suffix(".yaml"), changed, data)
    print(f"{sft.name}: {sft.run_id} ({sft.seconds:.0f} s wall, {sft.cpu_s:.0f} s CPU)")
    jobs = []
    for run, overrides in rl_runs(args, sft):
        config = run.output.with_suffix(".yaml")
        # the held-out split stays the SFT run's (the split follows the run's seed): a run of
        # another seed would otherwise be evaluated on tasks the SFT model trained on
        changed = run_config(
            raw,
            config,
            sft.output / "model",
            seed=run.seed,
            eval_before_train=overrides["algorithm"] == "dapo",
            eval_split_seed=sft.seed,
            **overrides,
            **{steps_key(cfg): 0},
        )
        jobs.append((run, config, changed or sft.seconds > 0))
    with ThreadPoolExecutor(args.parallel) as pool:  # each run is its own process
        for run in pool.map(lambda job: train_and_report(*job, data), jobs):
            print(f"{run.name}: {run.run_id} ({run.seconds:.0f} s wall, {run.cpu_s:.0f} s CPU)")
    runs = [sft, *(job[0] for job in jobs)]
    report(args, raw, cfg, runs, data, out, started, throughput_steps)


def train_and_report(run: Run, config: Path, changed: bool, data: Path) -> Run:
    train(run, config, changed, data)
    return run


def report(args, raw, cfg, runs: list[Run], data: Path, out: Path, started: float, tp_steps: int):
    """The study's tables (printed and written to OUT/learning.md) and curves."""
    sft = runs[0]
    ids = [r.run_id for r in runs]
    marks = ",".join("?" * len(ids))
    episodes = read(
        data,
        "SELECT run_id, stage, task_id, scenario, difficulty, min_steps, sample, success, reward "
        f"FROM eval_episodes WHERE run_id IN ({marks})",
        ids,
    )
    dapo = [r for r in runs if r.algorithm == "dapo"]
    grpo = [r for r in runs if r.algorithm == "grpo"]
    stages = {
        "base": per_task(episodes, [sft], "base"),
        "SFT": per_task(episodes, dapo, "base"),  # each DAPO run's opening evaluation
        "DAPO": per_task(episodes, dapo, "final"),
        "GRPO": per_task(episodes, grpo, "final"),
    }
    # the SFT run's own evaluation and the DAPO run at seed 0 and the SFT run's thread count
    # play the same model at the same seed
    twin = [r for r in dapo if r.seed == 0 and r.threads == sft.threads]
    start = paired(per_task(episodes, [sft], "sft"), per_task(episodes, twin, "base"))
    reproduced = (
        f"the DAPO run at seed 0, {sft.threads} thread(s) re-measured the SFT model: its opening "
        f"evaluation matches the SFT run's on {int((start == 0).sum())} of {start.size} tasks"
    )
    steps = read(data, f"SELECT * FROM train_steps WHERE run_id IN ({marks})", ids)
    rollouts = read(
        data,
        'SELECT run_id, step, "group", scenario, success FROM train_rollouts '
        f"WHERE run_id IN ({marks})",
        ids,
    )
    sft_loss = read(data, "SELECT * FROM sft_steps WHERE run_id = ?", [sft.run_id])
    curves = plot_study(steps, sft_loss, runs, out / "curves.png")
    own_cpu = time.process_time()
    throughput = throughput_table(raw, data, runs, tp_steps, out)
    minutes = (time.perf_counter() - started) / 60
    cpu_minutes = (sum(r.cpu_s for r in runs) + time.process_time() - own_cpu) / 60

    recipe = (
        f"recipe {args.config.name}{' (--quick)' if args.quick else ''}: "
        f"{len(cfg.env.scenarios)} scenarios, {training_value(cfg, 'sft_steps')} SFT steps, "
        f"{training_value(cfg, 'total_steps')} RL steps a run, {training_value(cfg, 'eval_tasks')} "
        f"held-out tasks x {training_value(cfg, 'eval_samples')} samples, RL seeds "
        f"0-{args.seeds - 1} x threads {args.threads}; {minutes:.1f} min wall; trainings + "
        f"throughput {cpu_minutes:.1f} CPU-min (on 2 idle cores: between half of that and all)"
    )
    grpo_threads = stages["DAPO"].filter(pl.col("threads") == args.threads[-1]) if grpo else None
    sections = [
        (
            "Each DAPO run (held-out pass@1, 95% task-bootstrap CI)",
            per_run_table(stages, dapo, rollouts),
        ),
        (
            "Held-out pass@1 by scenario (pooled over the runs; 95% task-bootstrap CI)",
            held_out_table(stages, "scenario"),
        ),
        ("Held-out pass@1 by step band", held_out_table(stages, "step_band")),
    ]
    if grpo:
        sections.append(
            (
                f"DAPO vs GRPO, same seeds, {args.threads[-1]} thread(s) and budget: held-out "
                "pass@1 after RL",
                comparison_table(grpo_threads, stages["GRPO"], list(range(args.seeds))),
            )
        )
    sections += [
        (f"Throughput, same tiny model and references ({tp_steps} SFT steps timed)", throughput),
        ("Time per run (stages: wall seconds)", timing_table(runs)),
    ]
    print(recipe)
    print(reproduced)
    markdown = [f"_{recipe}_", "", f"_{reproduced}_", ""]
    for title, rows in sections:
        print(f"\n{title}\n{text_table(rows)}")
        markdown += [f"**{title}**", "", markdown_table(rows), ""]
    plots = [curves, *sorted((out / "runs").glob("*/plots/*.png"))]
    markdown.append("Curves: " + ", ".join(str(p.relative_to(out)) for p in plots))
    (out / "learning.md").write_text("\n".join(markdown) + "\n")
    print(f"\ncurves: {curves}; tables: {out / 'learning.md'}")


if __name__ == "__main__":
    main()
