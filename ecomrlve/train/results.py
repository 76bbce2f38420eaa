"""Run results: DuckDB tables in the data directory and PNG curves in the run folder.

Tables (each row carries `run_id`; appended, so several runs share them):

* `train_runs`      one row per run: config, model, stages, base/SFT/final held-out success
* `sft_steps`       one row per SFT optimizer step: loss, supervised tokens, learning rate
* `train_steps`     one row per optimizer step: reward, success, entropy, clip fractions,
                    response length, dropped groups, tokens/s, ...
* `train_scenarios` one row per (step, scenario): episodes, success, reward, difficulty window
* `train_rollouts`  one row per episode: task_id, scenario, difficulty, reward, success, steps
* `eval_results`    pass@1 / pass^k by scenario x difficulty x step band
* `eval_episodes`   one row per evaluation episode, with the assistant's turns as generated

"Which axes does the model fail on" is then a join, e.g.::

    SELECT t.n_constraints, avg(r.success::INT) FROM train_rollouts r JOIN tasks t USING (task_id)
    WHERE r.run_id = '...' GROUP BY ALL ORDER BY 1
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

import polars as pl

from ecomrlve import store
from ecomrlve.train.metrics import quarter_gain
from ecomrlve.train.tracking import Tracking

log = logging.getLogger(__name__)

# Fixed schemas, so the first run creates the tables with the types every later run appends.
STEP_SCHEMA: dict[str, pl.DataType] = {
    "run_id": pl.String,
    "step": pl.Int64,
    "reward_mean": pl.Float64,
    "reward_std": pl.Float64,
    "success_rate": pl.Float64,
    "success_by_scenario": pl.String,
    "entropy": pl.Float64,
    "clip_fraction": pl.Float64,
    "clip_fraction_low": pl.Float64,
    "clip_fraction_high": pl.Float64,
    "loss": pl.Float64,
    "grad_norm": pl.Float64,
    "kl": pl.Float64,
    "response_length_mean": pl.Float64,
    "response_length_max": pl.Int64,
    "truncated_rate": pl.Float64,
    "overlong_penalty_mean": pl.Float64,
    "groups_sampled": pl.Int64,
    "groups_dropped": pl.Int64,
    "groups_trained": pl.Int64,
    "gen_batches": pl.Int64,
    "sequences_trained": pl.Int64,
    "tokens_generated": pl.Int64,
    "tokens_per_s": pl.Float64,
    "rollout_s": pl.Float64,
    "update_s": pl.Float64,
    "logprob_mismatch": pl.Float64,
    "advantage_abs_mean": pl.Float64,  # mean |advantage| of the trained episodes
    "positive_token_fraction": pl.Float64,  # trained tokens in episodes with advantage > 0
    # rollout.replay_after_update: the trained groups' success as sampled, and replayed with the
    # same seeds by the updated weights (null when off)
    "replay_success_before": pl.Float64,
    "replay_success_after": pl.Float64,
    "lr": pl.Float64,
    "skipped": pl.Boolean,  # the update was skipped (non-finite reward/loss, no tokens)
    "skip_reason": pl.String,
    "tools_offered": pl.String,  # the tool curriculum's width: scenario (own tools) or all
    # asynchronous RL (training.rollout.async; null in synchronous runs)
    "staleness_mean": pl.Float64,  # weight versions the trained episodes were behind
    "staleness_max": pl.Int64,
    "stale_dropped": pl.Int64,  # batches older than max_staleness, dropped untrained
    "queue_fill": pl.Float64,  # played batches waiting when the trainer asked for one (mean)
    "behaviour_capped_fraction": pl.Float64,  # stale tokens left out by behaviour_ratio_cap
}
SFT_STEP_SCHEMA: dict[str, pl.DataType] = {
    "run_id": pl.String,
    "step": pl.Int64,
    "loss": pl.Float64,  # mean NLL per supervised (assistant) token of the step's batch
    "tokens": pl.Int64,  # supervised tokens in the step's batch
    "sequences": pl.Int64,
    "lr": pl.Float64,
    "seconds": pl.Float64,  # since SFT started
}
SCENARIO_SCHEMA: dict[str, pl.DataType] = {
    "run_id": pl.String,
    "step": pl.Int64,
    "scenario": pl.String,
    "episodes": pl.Int64,
    "success_rate": pl.Float64,
    "reward_mean": pl.Float64,
    "window_low": pl.Int64,
    "window_high": pl.Int64,
}
ROLLOUT_SCHEMA: dict[str, pl.DataType] = {
    "run_id": pl.String,
    "step": pl.Int64,
    "gen_batch": pl.Int64,
    "group": pl.Int64,
    "task_id": pl.String,
    "scenario": pl.String,
    "difficulty": pl.Int64,
    "min_steps": pl.Int64,
    "reward": pl.Float64,
    "env_reward": pl.Float64,
    "success": pl.Boolean,
    "steps": pl.Int64,
    "finish": pl.String,
    "truncated": pl.Boolean,
    "response_tokens": pl.Int64,
    "trained": pl.Boolean,
    # the weights version an endpoint pool sampled the episode with (null for local engines);
    # asynchronous runs: the step whose weights sampled it (0: the starting weights)
    "policy_version": pl.Int64,
    # versions between the sampling weights and those the consuming update (`step`) starts
    # from: at most training.rollout.max_staleness; 0 in synchronous runs
    "staleness": pl.Int64,
}
EVAL_SCHEMA: dict[str, pl.DataType] = {
    "run_id": pl.String,
    "stage": pl.String,
    "model": pl.String,
    "scenario": pl.String,
    "difficulty": pl.Int64,
    "step_band": pl.String,
    "tasks": pl.Int64,
    "samples": pl.Int64,
    "k": pl.Int64,
    "pass_at_1": pl.Float64,
    "pass_hat_k": pl.Float64,
    "reward_mean": pl.Float64,
    "where": pl.String,
}
EPISODE_SCHEMA: dict[str, pl.DataType] = {
    "run_id": pl.String,
    "stage": pl.String,
    "task_id": pl.String,
    "scenario": pl.String,
    "difficulty": pl.Int64,
    "min_steps": pl.Int64,
    "sample": pl.Int64,
    "reward": pl.Float64,
    "success": pl.Boolean,
    "steps": pl.Int64,
    "finish": pl.String,
    # filled by `ecomrlve eval --endpoint` (null for local evaluation)
    "turns": pl.Int64,
    "prompt_tokens": pl.Int64,  # summed over the episode's requests, as the server counted
    "completion_tokens": pl.Int64,
    "latency_s": pl.Float64,  # summed request time (the successful attempts)
    "retries": pl.Int64,
    "error": pl.String,  # the endpoint failed for good; the episode counts as a failure
    "tools_offered": pl.String,  # in a training run: the tool curriculum's width then
    # the assistant's turns as generated (a JSON list of texts): the env replays them into the
    # whole transcript and its verdict (`ecomrlve view`); null for endpoint runs, whose
    # transcripts are in their run folder's trajectories.jsonl
    "assistant_turns": pl.String,
}
RUN_SCHEMA: dict[str, pl.DataType] = {
    "run_id": pl.String,
    "output": pl.String,
    "model": pl.String,
    "algorithm": pl.String,
    "curriculum": pl.String,
    "config": pl.String,
    "steps": pl.Int64,
    "base_success": pl.Float64,
    "sft_success": pl.Float64,
    "final_success": pl.Float64,
    "wall_s": pl.Float64,
    "finished_at": pl.String,
}


def frame(rows: list[dict[str, Any]], schema: dict[str, pl.DataType]) -> pl.DataFrame:
    """Rows as a frame with exactly `schema`'s columns and types (missing values are null)."""
    unknown = {k for row in rows for k in row} - set(schema)
    if unknown:
        raise ValueError(f"columns {sorted(unknown)} are not in the table schema")
    return pl.DataFrame(
        [{k: row.get(k) for k in schema} for row in rows], schema=schema, orient="row"
    )


def append(data: str | os.PathLike, table: str, rows: list[dict[str, Any]], schema) -> None:
    if rows:
        _add_new_columns(data, table, schema)
        store.write_table(data, table, frame(rows, schema), append=True)


_DUCKDB_TYPES = {
    pl.String: "VARCHAR",
    pl.Int64: "BIGINT",
    pl.Float64: "DOUBLE",
    pl.Boolean: "BOOLEAN",
}
_GROWN: set[tuple[str, str]] = set()  # (data folder, table) checked in this process


def _add_new_columns(data: str | os.PathLike, table: str, schema: dict[str, pl.DataType]) -> None:
    """Result tables gain columns over releases (`tools_offered`): a data folder written before
    one gets it, NULL in its older rows, instead of refusing the run's rows. Once per table."""
    key = (str(Path(data).resolve()), table)
    if key in _GROWN:
        return
    with store.writer(data) as con:
        have = {
            r[0]
            for r in con.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_name = ?", [table]
            ).fetchall()
        }
        for name, dtype in schema.items():
            if have and name not in have:
                log.info("table %s: adding column %s (older rows: NULL)", table, name)
                con.execute(f'ALTER TABLE {table} ADD COLUMN "{name}" {_DUCKDB_TYPES[dtype]}')
    _GROWN.add(key)


# ---------------------------------------------------------------------------------------------
# PNG curves
# ---------------------------------------------------------------------------------------------


def plot_curves(
    steps: pl.DataFrame, scenarios: pl.DataFrame, out_dir: Path, *, title: str = ""
) -> list[Path]:
    """reward.png, success_by_scenario.png, difficulty_frontier.png under `out_dir`."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []

    def save(fig, name: str) -> None:
        try:
            written.append(store.write_png(fig, out_dir / name))
        finally:
            plt.close(fig)

    fig, ax = plt.subplots(figsize=(7, 4))
    if steps.height:
        ax.plot(steps["step"], steps["reward_mean"], marker="o", ms=3, label="reward (mean)")
        ax.plot(steps["step"], steps["success_rate"], marker="s", ms=3, label="success rate")
        window = max(steps.height // 4, 1)  # a quarter of the run: the trend under the noise
        trend = steps["success_rate"].rolling_mean(window, min_samples=1)
        ax.plot(steps["step"], trend, lw=2, label=f"success, mean of last {window} steps")
        ax.legend()
    else:  # an SFT-only run (0 RL steps) still gets the plot, saying why it is empty
        ax.text(0.5, 0.5, "no RL steps", ha="center", va="center", transform=ax.transAxes)
    ax.set_xlabel("step")
    ax.set_title(f"reward {title}".strip())
    ax.grid(alpha=0.3)
    save(fig, "reward.png")

    fig, ax = plt.subplots(figsize=(7, 4))
    for scenario in sorted(scenarios["scenario"].unique().to_list()) if scenarios.height else []:
        part = scenarios.filter(pl.col("scenario") == scenario).sort("step")
        ax.plot(part["step"], part["success_rate"], marker="o", ms=3, label=scenario)
    ax.set_xlabel("step")
    ax.set_ylabel("success rate")
    ax.set_ylim(-0.05, 1.05)
    ax.set_title(f"success by scenario {title}".strip())
    ax.grid(alpha=0.3)
    if scenarios.height:
        ax.legend(fontsize=7, ncol=2)
    save(fig, "success_by_scenario.png")

    fig, ax = plt.subplots(figsize=(7, 4))
    for scenario in sorted(scenarios["scenario"].unique().to_list()) if scenarios.height else []:
        part = scenarios.filter(pl.col("scenario") == scenario).sort("step")
        line = ax.step(part["step"], part["window_high"], where="post", label=f"{scenario} h")
        ax.fill_between(
            part["step"].to_numpy(),
            part["window_low"].to_numpy(),
            part["window_high"].to_numpy(),
            step="post",
            alpha=0.12,
            color=line[0].get_color(),
        )
    ax.set_xlabel("step")
    ax.set_ylabel("difficulty window [l, h]")
    ax.set_title(f"difficulty frontier {title}".strip())
    ax.grid(alpha=0.3)
    if scenarios.height:
        ax.legend(fontsize=7, ncol=2)
    save(fig, "difficulty_frontier.png")
    return written


def plot_sft(steps: pl.DataFrame, path: Path) -> Path:
    """sft_loss.png: SFT loss per step, with the learning rate on a second axis."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(steps["step"], steps["loss"], lw=1, label="loss (nats / assistant token)")
    ax.set_xlabel("SFT step")
    ax.set_ylabel("loss")
    ax.set_yscale("log")
    ax.grid(alpha=0.3)
    lr_axis = ax.twinx()
    lr_axis.plot(steps["step"], steps["lr"], color="tab:orange", lw=1, label="learning rate")
    lr_axis.set_ylabel("learning rate")
    ax.set_title(f"SFT: {int(steps['tokens'].sum()):,} supervised tokens")
    handles = ax.get_legend_handles_labels()[0] + lr_axis.get_legend_handles_labels()[0]
    ax.legend(handles=handles, fontsize=8)
    try:
        return store.write_png(fig, path)
    finally:
        plt.close(fig)


def plot_eval(table: pl.DataFrame, path: Path, *, title: str = "") -> Path:
    """pass@1 by scenario x difficulty as an annotated heatmap (one evaluation's table)."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt
    import numpy as np

    cells = table.group_by("scenario", "difficulty").agg(
        pass_at_1=(pl.col("pass_at_1") * pl.col("tasks")).sum() / pl.col("tasks").sum()
    )
    scenarios = sorted(cells["scenario"].unique().to_list())
    levels = sorted(cells["difficulty"].unique().to_list())
    grid = np.full((len(scenarios), len(levels)), np.nan)
    for row in cells.iter_rows(named=True):
        grid[scenarios.index(row["scenario"]), levels.index(row["difficulty"])] = row["pass_at_1"]
    fig, ax = plt.subplots(figsize=(1.2 + 0.7 * max(1, len(levels)), 1.2 + 0.45 * len(scenarios)))
    ax.imshow(grid, vmin=0.0, vmax=1.0, cmap="viridis", aspect="auto")
    for (i, j), value in np.ndenumerate(grid):
        if not np.isnan(value):
            ax.text(j, i, f"{value:.2f}", ha="center", va="center", color="w", fontsize=8)
    ax.set_xticks(range(len(levels)), [str(d) for d in levels])
    ax.set_yticks(range(len(scenarios)), scenarios)
    ax.set_xlabel("difficulty")
    ax.set_title(f"pass@1 {title}".strip(), fontsize=9)
    try:
        return store.write_png(fig, path)
    finally:
        plt.close(fig)


class RunLog:
    """Appends each step's rows to DuckDB as it finishes, and keeps them for the plots."""

    def __init__(
        self, data: str | os.PathLike, run_id: str, tracking: Tracking | None = None
    ) -> None:
        self.data = data
        self.run_id = run_id
        self.tracking = tracking or Tracking()  # training.loggers besides DuckDB
        self.steps: list[dict[str, Any]] = []
        self.scenarios: list[dict[str, Any]] = []
        self.sft: list[dict[str, Any]] = []
        # (step, group, scenario, success) per episode
        self.outcomes: list[tuple[int, int, str, bool]] = []

    def record_step(
        self,
        metrics: dict[str, Any],
        scenario_rows: list[dict[str, Any]],
        rollout_rows: list[dict[str, Any]],
    ) -> None:
        step = {**metrics, "run_id": self.run_id}
        step["success_by_scenario"] = json.dumps(metrics.get("success_by_scenario", {}))
        scenarios = [{**row, "run_id": self.run_id} for row in scenario_rows]
        append(self.data, "train_steps", [step], STEP_SCHEMA)
        append(self.data, "train_scenarios", scenarios, SCENARIO_SCHEMA)
        append(
            self.data,
            "train_rollouts",
            [{**r, "run_id": self.run_id} for r in rollout_rows],
            ROLLOUT_SCHEMA,
        )
        self.steps.append(step)
        self.scenarios.extend(scenarios)
        self.outcomes.extend(
            (r["step"], r["group"], r["scenario"], r["success"]) for r in rollout_rows
        )
        self.tracking.log_rl_step(metrics)

    def success_quarters(self, seed: int) -> dict[str, float] | None:
        """Training-rollout success, last quarter of the RL steps vs the first, with a CI
        (`metrics.quarter_gain`); None before four steps."""
        if not self.outcomes:
            return None
        rows = pl.DataFrame(
            self.outcomes, schema=["step", "group", "scenario", "success"], orient="row"
        )
        return quarter_gain(rows, seed=seed)

    def record_sft(self, rows: list[dict[str, Any]]) -> None:
        """The SFT stage's per-step rows (`sft.SFTResult.rows`) into `sft_steps`."""
        self.sft = [{**row, "run_id": self.run_id} for row in rows]
        append(self.data, "sft_steps", self.sft, SFT_STEP_SCHEMA)

    def plot(self, out_dir: Path) -> list[Path]:
        written = plot_curves(
            frame(self.steps, STEP_SCHEMA),
            frame(self.scenarios, SCENARIO_SCHEMA),
            out_dir,
            title=f"({self.run_id})",
        )
        if self.sft:
            written.append(plot_sft(frame(self.sft, SFT_STEP_SCHEMA), out_dir / "sft_loss.png"))
        return written
