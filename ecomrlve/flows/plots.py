"""PNG plots of the task dataset, written to DIR/plots/ (matplotlib's Agg backend, no display)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import polars as pl

from ecomrlve import store

HEATMAP = "tasks_by_scenario_difficulty.png"
STEPS_HISTOGRAM = "min_steps_by_scenario.png"


def dataset_counts(data: str | os.PathLike) -> pl.DataFrame:
    """scenario, difficulty, min_steps, tasks: the counts both plots are drawn from."""
    con = store.connect(data, read_only=True)
    try:
        return con.sql(
            "SELECT scenario, CAST(difficulty AS BIGINT) AS difficulty, "
            "CAST(min_steps AS BIGINT) AS min_steps, count(*) AS tasks FROM tasks "
            "GROUP BY ALL ORDER BY ALL"
        ).pl()
    finally:
        con.close()


def _scenario_order(present: list[str], order: Sequence[str]) -> list[str]:
    known = [s for s in order if s in present]
    return known + sorted(set(present) - set(known))


def plot_dataset(data: str | os.PathLike, order: Sequence[str] = ()) -> list[Path]:
    """Draw the scenario × difficulty heatmap and per-scenario min_steps histograms; the
    scenarios of `order` come first, in that order (the registry's: seed-id order), then the
    others by name."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    counts = dataset_counts(data)
    if counts.height == 0:
        raise store.StoreError("no tasks to plot")
    out_dir = store.DataPaths.of(data).plots
    out_dir.mkdir(parents=True, exist_ok=True)
    scenarios = _scenario_order(counts["scenario"].unique().to_list(), order)
    lo, hi = int(counts["difficulty"].min()), int(counts["difficulty"].max())
    difficulties = list(range(lo, hi + 1))

    cells = counts.group_by("scenario", "difficulty").agg(pl.col("tasks").sum())
    grid = np.zeros((len(scenarios), len(difficulties)), dtype=np.int64)
    for scenario, difficulty, n in cells.iter_rows():
        grid[scenarios.index(scenario), difficulty - lo] = n
    fig, ax = plt.subplots(figsize=(1.0 + 0.6 * len(difficulties), 1.2 + 0.45 * len(scenarios)))
    image = ax.imshow(grid, cmap="viridis", aspect="auto")
    ax.set_xticks(range(len(difficulties)), [str(d) for d in difficulties])
    ax.set_yticks(range(len(scenarios)), scenarios)
    ax.set_xlabel("difficulty")
    ax.set_title(f"tasks by scenario × difficulty ({int(grid.sum()):,} tasks)")
    for (i, j), n in np.ndenumerate(grid):
        color = "white" if n < grid.max() * 0.6 else "black"
        ax.text(j, i, str(n), ha="center", va="center", fontsize=7, color=color)
    fig.colorbar(image, ax=ax, label="tasks")
    heatmap = out_dir / HEATMAP
    store.write_png(fig, heatmap)
    plt.close(fig)

    steps = counts.group_by("scenario", "min_steps").agg(pl.col("tasks").sum())
    lo_s, hi_s = int(steps["min_steps"].min()), int(steps["min_steps"].max())
    cols = 3
    rows = (len(scenarios) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(4 * cols, 2.6 * rows), squeeze=False)
    for k, scenario in enumerate(scenarios):
        ax = axes[k // cols][k % cols]
        part = steps.filter(pl.col("scenario") == scenario).sort("min_steps")
        ax.bar(part["min_steps"].to_list(), part["tasks"].to_list(), color="tab:blue")
        ax.set_title(scenario, fontsize=9)
        ax.set_xlim(lo_s - 0.5, hi_s + 0.5)
        ax.set_xlabel("min_steps", fontsize=8)
    for k in range(len(scenarios), rows * cols):
        axes[k // cols][k % cols].axis("off")
    fig.suptitle("reference solution length (min_steps) per scenario")
    fig.tight_layout()
    histogram = out_dir / STEPS_HISTOGRAM
    store.write_png(fig, histogram)
    plt.close(fig)
    return [heatmap, histogram]
