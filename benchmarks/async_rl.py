"""Synchronous vs asynchronous RL on the CPU demo (issue 32, AReaL's lesson).

    python benchmarks/async_rl.py --quick                # a few minutes: small store, short runs
    python benchmarks/async_rl.py --steps 10 --etas 1 2 4 --processes 1 2 --out experiments/async_rl
    python benchmarks/async_rl.py --data DIR --sft-model RUN/model   # an existing SFT model
    python benchmarks/async_rl.py --loop --steps 12      # the loop alone: seconds, no store

The recipe is `--config` (default configs/tiny_cpu.yaml), read through the project's config
loader. One store is built (`ecomrlve pipeline --skip-train` into OUT/data) unless `--data` names
one; one SFT run (RL steps 0) gives the model every RL run starts from, unless `--sft-model`
names one. Then the same number of DAPO steps (`--steps`) from that model, same seed, same
held-out split, once synchronously and once per eta in `--etas` and rollout process count in
`--processes` with `training.async: true, max_staleness: eta, rollout_processes: n`, each through
the real entry point (`python -m ecomrlve train`).

Reported per run (printed, and written to OUT/async_rl.md), from summary.json and the run's
`train_steps` rows:

* update steps per hour and episodes per hour over the RL stage's wall time;
* trainer idle share: the RL stage's time in step 1 (sync: generating; async: waiting for a
  played batch) over its wall time;
* staleness (mean and max over trained episodes) and batches dropped as too stale;
* held-out pass@1 after the run's steps, with its task-bootstrap 95% interval.

`--loop` measures the loop's mechanics alone, in this process: `train_dapo` on the tests'
tiny rewardable task (`ecomrlve.testing.training.even_id_play`: one 6-token turn, reward = share
of even token ids) with the tests' one-layer model, synchronous vs asynchronous; its quality
column is the policy's probability of an even first token after the same number of steps.

Timings are wall time on whatever else the machine runs: compare rows of one invocation only.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import time
from pathlib import Path
from typing import Any

import polars as pl
import yaml
from learning import ROOT, cli, markdown_table, read, run_config, set_training, text_table

from ecomrlve import store
from ecomrlve.config import ConfigError, config_from_dict, load_config

QUICK_DATA = {"products": 1000, "tasks": 240}
QUICK = {"sft_steps": 60, "steps": 3, "eval_tasks": 12, "eval_samples": 2}
QUICK_ROLLOUT = {"prompts_per_step": 4, "group_size": 4, "ppo_mini_batch_size": 2}


def recipe(path: Path, *, quick: bool, eval_tasks: int | None) -> dict[str, Any]:
    """The recipe as a raw mapping, with the benchmark's sizes; validated."""
    load_config(path)  # the recipe itself must load (ConfigError: exit 2)
    raw = yaml.safe_load(path.read_text()) or {}
    training = raw.setdefault("training", {})
    if quick:
        raw.setdefault("data", {}).update(QUICK_DATA)
        set_training(training, "eval_samples", QUICK["eval_samples"])
        for key, value in QUICK_ROLLOUT.items():
            set_training(training, key, value)
    tasks = eval_tasks if eval_tasks is not None else (QUICK["eval_tasks"] if quick else None)
    if tasks is not None:
        set_training(training, "eval_tasks", tasks)
    config_from_dict(copy.deepcopy(raw), source=f"{path} with the benchmark's sizes")
    return raw


def train(output: Path, data: Path) -> tuple[float, float]:
    """`ecomrlve train` with OUTPUT.yaml into OUTPUT (log: OUTPUT.log); wall and CPU seconds."""
    config = output.with_suffix(".yaml")
    args = ["train", "--config", str(config), "--data", str(data), "--output", str(output)]
    return cli(args, output.with_suffix(".log"))


def rl_row(name: str, output: Path, data: Path, group_size: int) -> dict[str, Any]:
    """One run's numbers: summary.json and its train_steps rows."""
    summary = json.loads((output / "summary.json").read_text())
    steps = read(
        data,
        "SELECT * FROM train_steps WHERE run_id = ? ORDER BY step",
        [summary["run_id"]],
    )
    rl_s = float(summary["stage_seconds"]["rl"])
    final = summary["held_out"].get("final", {})
    trained = steps.filter(pl.col("skipped").not_()) if steps.height else steps
    have = "staleness_mean" in steps.columns and steps["staleness_mean"].null_count() < steps.height
    return {
        "run": name,
        "steps": int(summary["rl_steps"]),
        "updates": int(trained.height),
        "rl_s": rl_s,
        "steps_per_h": 3600 * summary["rl_steps"] / rl_s,
        "episodes_per_h": 3600 * int(steps["groups_sampled"].sum()) * group_size / rl_s,
        "idle_share": float(steps["rollout_s"].sum()) / rl_s,
        "staleness_mean": float(steps["staleness_mean"].mean()) if have else 0.0,
        "staleness_max": int(steps["staleness_max"].max()) if have else 0,
        "stale_dropped": int(steps["stale_dropped"].sum()) if have else 0,
        "pass_at_1": final.get("pass_at_1"),
        "ci": (final.get("ci_low"), final.get("ci_high")),
    }


def table(rows: list[dict[str, Any]]) -> list[list[str]]:
    sync = rows[0]
    out = [
        [
            "run",
            "RL steps",
            "RL wall s",
            "steps/h",
            "x sync",
            "episodes/h",
            "trainer idle",
            "staleness mean/max",
            "stale dropped",
            "held-out pass@1 [95% CI]",
        ]
    ]
    for row in rows:
        low, high = row["ci"]
        held = (
            f"{row['pass_at_1']:.3f} [{low:.3f}, {high:.3f}]"
            if row["pass_at_1"] is not None and low is not None
            else "-"
        )
        out.append(
            [
                row["run"],
                str(row["steps"]),
                f"{row['rl_s']:.0f}",
                f"{row['steps_per_h']:.0f}",
                f"{row['steps_per_h'] / sync['steps_per_h']:.2f}",
                f"{row['episodes_per_h']:.0f}",
                f"{row['idle_share']:.0%}",
                f"{row['staleness_mean']:.2f} / {row['staleness_max']}",
                str(row["stale_dropped"]),
                held,
            ]
        )
    return out


def loop_row(
    name: str, eta: int | None, steps: int, prompts: int, group: int, processes: int = 1
) -> dict[str, Any]:
    """One `--loop` run: the real loop on the tiny rewardable task, `steps` steps."""
    import torch

    from ecomrlve.testing.env_tasks import all_tasks, small_catalog
    from ecomrlve.testing.training import (
        EVEN_LEARNING,
        EVEN_TURN_TOKENS,
        even_id_play,
        even_mass,
        tiny_lm_pair,
    )
    from ecomrlve.train.chat import ChatFormat
    from ecomrlve.train.curriculum import CurriculumSampler
    from ecomrlve.train.engines.hf import HFEngine
    from ecomrlve.train.loop import train_dapo
    from ecomrlve.train.rollout_workers import ProcessRolloutWorkers, WorkerSpec

    model, tokenizer = tiny_lm_pair()
    chat = ChatFormat(tokenizer, [])
    tasks = pl.DataFrame([t.to_row() for t in all_tasks(small_catalog())])
    training: dict[str, Any] = {
        "total_steps": steps,
        "prompts_per_step": prompts,
        "group_size": group,
        "ppo_mini_batch_size": max(1, prompts // 2),
        **EVEN_LEARNING,
        "async": eta is not None,
        "max_staleness": eta or 0,
    }
    cfg = config_from_dict(
        {
            "agent": {"max_new_tokens": EVEN_TURN_TOKENS, "max_episode_tokens": 128},
            "training": training,
        }
    )
    torch.manual_seed(0)
    policy = copy.deepcopy(model)
    sampler = CurriculumSampler(tasks, seed=0)
    engine = HFEngine(policy, chat.pad_token_id)
    rows: list[dict[str, Any]] = []
    record = lambda metrics, scenarios, rollouts: rows.append(  # noqa: E731
        {**metrics, "done_at": time.perf_counter()}
    )
    if eta is None:
        train_dapo(policy, engine, chat, None, sampler, cfg, play=even_id_play, record=record)
    else:
        spec = WorkerSpec(
            policy,
            chat.pad_token_id,
            chat,
            cfg.env,
            cfg.agent,
            group,
            play=even_id_play,
            processes=processes,
        )
        with ProcessRolloutWorkers(spec) as workers:
            train_dapo(policy, engine, chat, None, sampler, cfg, workers=workers, record=record)
    # steps 2..N, from the end of step 1 (which pays for starting the worker) to the last one
    timed = rows[1:]
    wall = rows[-1]["done_at"] - rows[0]["done_at"]
    ages = [r.get("staleness_mean", 0.0) for r in rows]
    return {
        "run": name,
        "steps": len(timed),
        "updates": sum(1 for r in rows if r.get("loss") is not None),
        "rl_s": wall,
        "steps_per_h": 3600 * len(timed) / wall,
        "episodes_per_h": 3600 * sum(r["groups_sampled"] for r in timed) * group / wall,
        "idle_share": sum(r["rollout_s"] for r in timed) / wall,
        "staleness_mean": sum(ages) / len(ages),
        "staleness_max": max(r.get("staleness_max", 0) for r in rows),
        "stale_dropped": sum(r.get("stale_dropped", 0) for r in rows),
        "pass_at_1": even_mass(policy, chat),
        "ci": (None, None),
    }


def loop_main(args: argparse.Namespace, steps: int) -> None:
    rows = []
    for eta, processes in variants(args):
        rows.append(loop_row(run_name(eta, processes)[0], eta, steps, 8, 8, processes))
        done = rows[-1]
        print(f"{done['run']}: {done['rl_s']:.1f} s for {done['steps']} steps", flush=True)
    printed = table(rows)
    printed[0][-1] = "P(even first token)"
    for row, data in zip(printed[1:], rows, strict=True):
        row[-1] = f"{data['pass_at_1']:.3f}"
    print(text_table(printed))
    print(
        f"the loop alone, {steps} steps of 8 prompts x 8 samples (timed: steps 2-{steps}); "
        "wall time on a shared machine"
    )


def variants(args: argparse.Namespace) -> list[tuple[int | None, int]]:
    """(eta, rollout processes) of each run: synchronous first (eta None), then every eta with
    every process count."""
    return [(None, 1)] + [(eta, n) for n in args.processes for eta in args.etas]


def run_name(eta: int | None, processes: int) -> tuple[str, str]:
    """(table name, folder name) of a run."""
    if eta is None:
        return "sync", "sync"
    if processes == 1:
        return f"async eta={eta}", f"async-eta{eta}"
    return f"async eta={eta} x{processes}", f"async-eta{eta}-x{processes}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, default=ROOT / "configs" / "tiny_cpu.yaml")
    parser.add_argument("--steps", type=int, default=None, help="RL steps per run (default 10)")
    parser.add_argument("--etas", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument(
        "--processes",
        type=int,
        nargs="+",
        default=[1, 2],
        help="rollout processes of the asynchronous runs (rollout.processes)",
    )
    parser.add_argument("--sft-steps", type=int, default=None, help="default: the recipe's")
    parser.add_argument("--sft-model", type=Path, default=None, help="start RL from this model")
    parser.add_argument("--data", type=Path, default=None, help="an existing store")
    parser.add_argument("--eval-tasks", type=int, default=None, help="held-out tasks")
    parser.add_argument("--quick", action="store_true", help="small store, short runs")
    parser.add_argument("--loop", action="store_true", help="the loop alone, tiny task")
    parser.add_argument("--out", type=Path, default=ROOT / "experiments" / "async_rl")
    args = parser.parse_args()
    steps = args.steps or (QUICK["steps"] if args.quick else 10)
    if steps < 1 or any(eta < 0 for eta in args.etas) or min(args.processes) < 1:
        print("--steps must be >= 1, every eta >= 0 and every process count >= 1", file=sys.stderr)
        sys.exit(2)
    if args.loop:
        if steps < 2:
            print("--loop times steps 2..N: --steps must be >= 2", file=sys.stderr)
            sys.exit(2)
        loop_main(args, steps)
        return
    try:
        raw = recipe(args.config, quick=args.quick, eval_tasks=args.eval_tasks)
    except ConfigError as err:
        print(err, file=sys.stderr)
        sys.exit(2)
    cfg = config_from_dict(copy.deepcopy(raw))
    out = args.out.resolve()
    (out / "runs").mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()

    data = args.data.resolve() if args.data else out / "data"
    if args.data is None:
        bench_yaml = out / "bench.yaml"
        if run_config(raw, bench_yaml) or not store.DataPaths.of(data).db.exists():
            seconds, _ = cli(
                ["pipeline", "--config", str(bench_yaml), "--data", str(data), "--skip-train"],
                out / "pipeline.log",
            )
            print(f"store: {data} ({seconds:.0f} s)", flush=True)

    model = args.sft_model.resolve() if args.sft_model else None
    if model is None:
        sft = out / "runs" / "sft"
        sft_steps = args.sft_steps or (QUICK["sft_steps"] if args.quick else None)
        overrides: dict[str, Any] = {"total_steps": 0, "eval_before_train": False}
        if sft_steps:
            overrides["sft_steps"] = sft_steps
        if (
            run_config(raw, sft.with_suffix(".yaml"), **overrides)
            or not (sft / "summary.json").exists()
        ):
            seconds, _ = train(sft, data)
            print(f"sft: {seconds:.0f} s", flush=True)
        model = sft / "model"

    rows = []
    for eta, processes in variants(args):
        name, folder = run_name(eta, processes)
        output = out / "runs" / folder
        settings: dict[str, Any] = {
            "total_steps": steps,
            "sft_steps": 0,
            "eval_before_train": False,
            "eval_split_seed": cfg.training.seed,
            "async": eta is not None,
        }
        if eta is not None:
            settings |= {"max_staleness": eta, "rollout_processes": processes}
        run_config(raw, output.with_suffix(".yaml"), model, **settings)
        seconds, _ = train(output, data)
        rows.append(rl_row(name, output, data, cfg.training.rollout.group_size))
        print(f"{name}: {seconds:.0f} s", flush=True)

    printed = text_table(table(rows))
    print(printed)
    note = (
        f"RL from {model}, {steps} steps per run, {cfg.training.rollout.prompts_per_step} "
        f"prompts x {cfg.training.rollout.group_size} samples; wall time on a shared machine "
        f"({time.perf_counter() - started:.0f} s in all)."
    )
    print(note)
    (out / "async_rl.md").write_text(markdown_table(table(rows)) + "\n\n" + note + "\n")


if __name__ == "__main__":
    main()
