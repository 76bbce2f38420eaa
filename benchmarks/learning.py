"""Does training move held-out success? pass@1 base -> SFT -> DAPO with 95% confidence intervals.

    python benchmarks/learning.py --data data                 # the newest run in DATA's store
    python benchmarks/learning.py --data data --run-id RUN    # one run
    python benchmarks/learning.py --data data --train --config configs/tiny_cpu.yaml
                                  --output experiments/learning   # train first, then report

Reads `eval_episodes` (every held-out episode of a training run: `training.eval_tasks` tasks x
`training.eval_samples` samples per stage). pass@1 is the share of successful episodes; its 95%
interval is a percentile bootstrap that resamples held-out *tasks* (2,000 resamples, seed 0),
because the samples of one task are not independent, widened where needed to Wilson's interval
on the episodes (which stays honest at 0 or 100% success). The change from base is bootstrapped the
same way, with each resample using the same tasks for both stages. At least 100 episodes per
stage are needed for an interval worth quoting; fewer are flagged.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import polars as pl
from rich.console import Console
from rich.table import Table

from ecomrlve.store import connect

RESAMPLES = 2000
MIN_EPISODES = 100


def task_success(episodes: pl.DataFrame, stage: str) -> pl.DataFrame:
    """Per held-out task: successes and episodes at `stage`."""
    return (
        episodes.filter(pl.col("stage") == stage)
        .group_by("task_id")
        .agg(pl.col("success").cast(pl.Int64).sum().alias("wins"), pl.len().alias("n"))
        .sort("task_id")
    )


def wilson(successes: int, trials: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson's 95% score interval for a binomial share."""
    if trials == 0:
        return 0.0, 1.0
    p = successes / trials
    centre = (p + z * z / (2 * trials)) / (1 + z * z / trials)
    half = z * np.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / (1 + z * z / trials)
    return max(0.0, centre - half), min(1.0, centre + half)


def bootstrap(wins: np.ndarray, n: np.ndarray, base_wins: np.ndarray | None, seed: int):
    """pass@1, its 95% interval, and (with base) the interval of the change from base."""
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(n), size=(RESAMPLES, len(n)))  # resampled task indices
    rates = wins[picks].sum(1) / n[picks].sum(1)
    low, high = np.percentile(rates, [2.5, 97.5])
    # never narrower than Wilson's interval on the episodes (the bootstrap collapses to a point
    # when no episode, or every one, succeeds)
    w_low, w_high = wilson(int(wins.sum()), int(n.sum()))
    low, high = min(low, w_low), max(high, w_high)
    delta = None
    if base_wins is not None:
        diffs = rates - base_wins[picks].sum(1) / n[picks].sum(1)
        delta = tuple(np.percentile(diffs, [2.5, 97.5]))
    return wins.sum() / n.sum(), (low, high), delta


def report(episodes: pl.DataFrame, run_id: str, console: Console) -> dict[str, dict]:
    stages = [s for s in ("base", "sft", "final") if s in set(episodes["stage"])]
    if not stages:
        raise SystemExit(f"run {run_id} has no held-out episodes (training.eval_tasks: 0?)")
    base = task_success(episodes, "base") if "base" in stages else None
    table = Table(title=f"held-out pass@1, run {run_id} (95% CI: bootstrap over tasks)")
    for col in ("stage", "tasks", "episodes", "pass@1", "95% CI", "vs base", "95% CI of change"):
        table.add_column(col, justify="left" if col == "stage" else "right")
    out = {}
    for stage in stages:
        frame = task_success(episodes, stage)
        wins, n = frame["wins"].to_numpy(), frame["n"].to_numpy()
        base_wins = None
        if base is not None and stage != "base" and base["task_id"].equals(frame["task_id"]):
            base_wins = base["wins"].to_numpy()
        rate, (low, high), delta = bootstrap(wins, n, base_wins, seed=0)
        few = " (< 100 episodes)" if n.sum() < MIN_EPISODES else ""
        change = "-" if base_wins is None else f"{rate - base_wins.sum() / n.sum():+.3f}"
        table.add_row(
            stage,
            str(len(n)),
            f"{int(n.sum())}{few}",
            f"{rate:.3f}",
            f"[{low:.3f}, {high:.3f}]",
            change,
            "-" if delta is None else f"[{delta[0]:+.3f}, {delta[1]:+.3f}]",
        )
        out[stage] = {"pass_at_1": rate, "ci": (low, high), "episodes": int(n.sum())}
    console.print(table)
    return out


def read_frame(data: Path, query: str, params: list | None = None) -> pl.DataFrame:
    with connect(data) as con:
        result = con.execute(query, params or [])
        columns = [d[0] for d in result.description]
        return pl.DataFrame(result.fetchall(), schema=columns, orient="row")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=Path("data"))
    parser.add_argument("--run-id", default=None, help="default: the newest training run")
    parser.add_argument("--train", action="store_true", help="train with --config first")
    parser.add_argument("--config", type=Path, default=Path("configs/tiny_cpu.yaml"))
    parser.add_argument("--output", type=Path, default=Path("experiments/learning"))
    args = parser.parse_args()
    console = Console(width=120)
    run_id = args.run_id
    if args.train:
        from ecomrlve.config import load_config
        from ecomrlve.train.run import train_from_config

        summary = train_from_config(load_config(args.config), args.data, args.output)
        run_id = summary.run_id
        console.print(f"trained {run_id} in {summary.seconds:.0f} s: {summary.stage_seconds}")
    if run_id is None:
        runs = read_frame(args.data, "SELECT run_id FROM train_runs ORDER BY finished_at DESC")
        if runs.is_empty():
            console.print("no training run in the store: make run, or pass --train")
            sys.exit(2)
        run_id = runs["run_id"][0]
    episodes = read_frame(
        args.data,
        "SELECT stage, task_id, success FROM eval_episodes WHERE run_id = ?",
        [run_id],
    )
    report(episodes, run_id, console)


if __name__ == "__main__":
    main()
