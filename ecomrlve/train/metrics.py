"""Evaluation metrics: unbiased pass@k and pass^k over n samples per task, and their tables.

With n samples of a task of which c succeed:

* pass@k = 1 - C(n-c, k) / C(n, k): the chance that at least one of k samples succeeds
  (Chen et al. 2021); pass@1 = c / n.
* pass^k = C(c, k) / C(n, k): the chance that all k samples succeed (tau-bench), an unbiased
  estimate of p^k. It measures reliability: an agent that succeeds half the time has pass^4
  of about 0.06.

Tables average these over the tasks of each scenario x difficulty x step band. Confidence
intervals resample tasks (the unit that was drawn), so a paired difference between two stages
evaluated on the same tasks keeps each task's two outcomes together.
"""

from __future__ import annotations

import itertools
from math import comb

import numpy as np
import polars as pl

from ecomrlve.tasks import step_band

# the columns of an episode table (`results.EPISODE_SCHEMA`, `train_rollouts`) that the
# per-task statistics read; a test keeps them a subset of the stored schema
EPISODE_COLUMNS = ("task_id", "scenario", "difficulty", "min_steps", "success", "reward")


def _check(n: int, c: int, k: int) -> None:
    if not 0 <= c <= n:
        raise ValueError(f"successes must be within 0..n, got c={c}, n={n}")
    if not 1 <= k <= n:
        raise ValueError(f"k must be within 1..n (samples per task), got k={k}, n={n}")


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from n samples with c successes."""
    _check(n, c, k)
    return 1.0 - comb(n - c, k) / comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Unbiased pass^k (all k succeed) from n samples with c successes."""
    _check(n, c, k)
    return comb(c, k) / comb(n, k)


def per_task(episodes: pl.DataFrame, k: int) -> pl.DataFrame:
    """One row per task: n, c, pass@1, pass^k, mean reward (and its scenario, difficulty, band)."""
    missing = [c for c in EPISODE_COLUMNS if c not in episodes.columns]
    if missing:
        raise ValueError(f"episodes lack column(s) {missing}")
    tasks = episodes.group_by("task_id", "scenario", "difficulty", "min_steps").agg(
        n=pl.len(), c=pl.col("success").cast(pl.Int64).sum(), reward_mean=pl.col("reward").mean()
    )
    too_few = tasks.filter(pl.col("n") < k)
    if too_few.height:
        raise ValueError(
            f"pass^{k} needs at least {k} samples per task; task "
            f"{too_few['task_id'][0]!r} has {too_few['n'][0]}"
        )
    return tasks.with_columns(
        pl.struct("n", "c")
        .map_elements(lambda r: r["c"] / r["n"], return_dtype=pl.Float64)
        .alias("pass_at_1"),
        pl.struct("n", "c")
        .map_elements(lambda r: pass_hat_k(r["n"], r["c"], k), return_dtype=pl.Float64)
        .alias("pass_hat_k"),
        pl.col("min_steps").map_elements(step_band, return_dtype=pl.String).alias("step_band"),
    ).sort("task_id")


def summarize(episodes: pl.DataFrame, k: int) -> pl.DataFrame:
    """pass@1 and pass^k by scenario x difficulty x step band, with task and sample counts."""
    tasks = per_task(episodes, k)
    return (
        tasks.group_by("scenario", "difficulty", "step_band")
        .agg(
            tasks=pl.len(),
            samples=pl.col("n").sum(),
            pass_at_1=pl.col("pass_at_1").mean(),
            pass_hat_k=pl.col("pass_hat_k").mean(),
            reward_mean=pl.col("reward_mean").mean(),
        )
        .with_columns(pl.lit(k, dtype=pl.Int64).alias("k"))
        .sort("scenario", "difficulty", "step_band")
    )


def overall(episodes: pl.DataFrame, k: int) -> dict[str, float]:
    """Task-averaged pass@1 and pass^k over everything in `episodes`."""
    tasks = per_task(episodes, k)
    return {
        "tasks": float(tasks.height),
        "pass_at_1": float(tasks["pass_at_1"].mean()),
        "pass_hat_k": float(tasks["pass_hat_k"].mean()),
        "reward_mean": float(tasks["reward_mean"].mean()),
    }


BOOTSTRAP_RESAMPLES = 10_000


def task_bootstrap(
    values: np.ndarray, *, seed: int, level: float = 0.95, resamples: int = BOOTSTRAP_RESAMPLES
) -> tuple[float, float]:
    """Percentile interval of the mean of per-task `values` (n,), resampling tasks.

    For a paired difference pass `after - before` per task.

    >>> task_bootstrap(np.array([0.0, 1.0, 1.0, 1.0]), seed=0)[1]
    1.0
    """
    values = np.asarray(values, dtype=np.float64)
    if values.size == 0:
        raise ValueError("no tasks to bootstrap")
    rng = np.random.default_rng(np.random.SeedSequence([seed, 97]))
    picks = rng.integers(0, values.size, size=(resamples, values.size))  # (R, n)
    means = values[picks].mean(axis=1)  # (R,)
    tail = (1.0 - level) / 2.0 * 100.0
    low, high = np.percentile(means, [tail, 100.0 - tail])
    return float(low), float(high)


def stage_intervals(
    per_stage: dict[str, pl.DataFrame], *, seed: int, level: float = 0.95
) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, float]]]:
    """Task-bootstrap intervals of pass@1 per stage, and of each later stage minus the one
    before it (paired on task_id: `sft-base`, `final-sft`).

    `per_stage` maps stage -> `per_task` frame (task_id, pass_at_1), in stage order. Returns
    ({stage: {ci_low, ci_high}}, {"later-earlier": {diff, ci_low, ci_high, tasks}}).
    """
    cis: dict[str, dict[str, float]] = {}
    for stage, tasks in per_stage.items():
        low, high = task_bootstrap(tasks["pass_at_1"].to_numpy(), seed=seed, level=level)
        cis[stage] = {"ci_low": low, "ci_high": high}
    diffs: dict[str, dict[str, float]] = {}
    stages = list(per_stage)
    for before, after in itertools.pairwise(stages):
        paired = per_stage[after].join(
            per_stage[before].select("task_id", "pass_at_1"),
            on="task_id",
            suffix="_before",
            maintain_order="left",  # the bootstrap draws by position: one order every run
        )
        gain = (paired["pass_at_1"] - paired["pass_at_1_before"]).to_numpy()
        if gain.size == 0:
            continue
        low, high = task_bootstrap(gain, seed=seed, level=level)
        diffs[f"{after}-{before}"] = {
            "diff": float(gain.mean()),
            "ci_low": low,
            "ci_high": high,
            "tasks": float(gain.size),
        }
    return cis, diffs


def quarter_gain(
    rollouts: pl.DataFrame, *, seed: int, level: float = 0.95, resamples: int = BOOTSTRAP_RESAMPLES
) -> dict[str, float] | None:
    """Training-rollout success in the last quarter of RL steps minus the first quarter, with a
    bootstrap interval that resamples groups (the prompts drawn: a group's samples share a task
    and are not independent). `rollouts` holds `train_rollouts` rows (step, group, success, and
    optionally scenario). None with fewer than four steps (no quarters to compare).

    With a `scenario` column the two quarters are compared on one scenario mix: each quarter's
    success is the mean of its per-scenario rates weighted by the scenario's share of both
    quarters' groups (post-stratification), and the bootstrap resamples groups within each
    scenario. A quarter that drew more of an easy scenario by chance then does not read as
    learning (the demo's scenarios succeed 0.15-0.6 from the start, and ten steps draw ~160
    prompts). Scenarios drawn in only one quarter are left out.

    >>> rows = pl.DataFrame({"step": [1, 1, 2, 3, 4, 4], "group": [0, 0, 0, 0, 0, 0],
    ...                      "success": [False, False, False, True, True, True]})
    >>> quarter_gain(rows, seed=0)["diff"]
    1.0
    """
    steps = sorted(rollouts["step"].unique().to_list())
    if len(steps) < 4:
        return None
    quarter = len(steps) // 4
    strata = ["scenario"] if "scenario" in rollouts.columns else []
    groups = (
        rollouts.group_by("step", "group", *strata)
        .agg(success=pl.col("success").cast(pl.Float64).mean())
        .sort("step", "group")  # group_by's order varies; the bootstrap draws by position
    )
    if not strata:
        groups = groups.with_columns(scenario=pl.lit("all"))
    first = groups.filter(pl.col("step").is_in(steps[:quarter]))
    last = groups.filter(pl.col("step").is_in(steps[-quarter:]))
    shared = sorted(set(first["scenario"]) & set(last["scenario"]))
    rng = np.random.default_rng(np.random.SeedSequence([seed, 101]))
    totals = {"first": 0.0, "last": 0.0}
    boot = np.zeros(resamples)  # (R,) weighted last - first per resample
    weights = {s: (first["scenario"] == s).sum() + (last["scenario"] == s).sum() for s in shared}
    whole = sum(weights.values())
    for scenario in shared:
        weight = weights[scenario] / whole
        rates = {}
        for name, frame in (("first", first), ("last", last)):
            values = frame.filter(pl.col("scenario") == scenario)["success"].to_numpy()
            totals[name] += weight * values.mean()
            picks = rng.integers(0, values.size, size=(resamples, values.size))  # (R, n)
            rates[name] = values[picks].mean(axis=1)  # (R,)
        boot += weight * (rates["last"] - rates["first"])
    tail = (1.0 - level) / 2.0 * 100.0
    low, high = np.percentile(boot, [tail, 100.0 - tail])
    return {
        "first": float(totals["first"]),
        "last": float(totals["last"]),
        "diff": float(totals["last"] - totals["first"]),
        "ci_low": float(low),
        "ci_high": float(high),
        "steps_per_quarter": float(quarter),
        "scenarios": float(len(shared)),
    }
