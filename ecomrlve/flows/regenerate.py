"""Planning a regeneration: fresh seeds, per-cell targets, and the weak spots of a training run.

A regeneration asks for N new valid tasks in a step band (say 6–8 tool calls). Each generation
round uses a seed the store has never held, so every task id is new (ids spell the seed); rows
whose id the store holds anyway are dropped before publishing. With `--from-run RUN` the N
tasks are spread over scenario × difficulty cells in proportion to how often RUN failed there
(`train_rollouts` joined with `tasks`); difficulty fixes the axis values (n_constraints,
n_distractors, ...), so the cells with the lowest success are also the weakest axis settings,
which the summary lists.
"""

from __future__ import annotations

import os
import zlib

import duckdb
import numpy as np
import polars as pl

from ecomrlve import store
from ecomrlve.tasks import DIFFICULTY_AXES

Cell = tuple[str, int]
SEED_BITS = 31


class RegenerationError(store.StoreError):
    """A regeneration that cannot be planned or cannot reach its target."""


def fresh_seeds(base_seed: int, name: str, count: int, used: set[int]) -> list[int]:
    """`count` seeds derived from (base_seed, name), skipping every seed in `used`.

    Deterministic for a given store, so a regeneration killed before publishing reruns the
    same seeds and finds its finished chunks in the cache.
    """
    salt = zlib.crc32(name.encode())
    seeds: list[int] = []
    k = 0
    while len(seeds) < count:
        state = np.random.SeedSequence([base_seed, salt, k]).generate_state(1)[0]
        candidate = int(state) & ((1 << SEED_BITS) - 1)
        k += 1
        if candidate not in used and candidate not in seeds:
            seeds.append(candidate)
    return seeds


def allocate(total: int, weights: dict[Cell, float]) -> dict[Cell, int]:
    """Split `total` over cells in proportion to `weights` (largest remainder, stable order)."""
    cells = [c for c, w in weights.items() if w > 0]
    if not cells:
        raise RegenerationError("no cell to generate tasks in")
    mass = sum(weights[c] for c in cells)
    exact = {c: total * weights[c] / mass for c in cells}
    out = {c: int(exact[c]) for c in cells}
    by_remainder = sorted(cells, key=lambda c: (-(exact[c] - out[c]), cells.index(c)))
    for c in by_remainder[: total - sum(out.values())]:
        out[c] += 1
    return out


def resolve_run_id(data: str | os.PathLike, run: str) -> str:
    """`run` itself, or the most recently finished run for `last`."""
    con = store.connect(data, read_only=True)
    try:
        tables = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
        if "train_rollouts" not in tables:
            raise RegenerationError(
                "--from-run: the store has no train_rollouts table; train a model first"
            )
        if run == "last":
            if "train_runs" in tables:
                rows = con.execute(
                    "SELECT run_id FROM train_runs ORDER BY finished_at DESC LIMIT 1"
                ).fetchall()
            else:
                rows = con.execute(
                    "SELECT run_id FROM train_rollouts GROUP BY run_id ORDER BY max(step) DESC "
                    "LIMIT 1"
                ).fetchall()
            if not rows:
                raise RegenerationError("--from-run last: no training run in the store")
            return str(rows[0][0])
        found = con.execute(
            "SELECT count(*) FROM train_rollouts WHERE run_id = ?", [run]
        ).fetchall()[0][0]
        if not found:
            raise RegenerationError(f"--from-run: no rollouts of run {run!r} in train_rollouts")
        return run
    finally:
        con.close()


def run_success(data: str | os.PathLike, run_id: str) -> pl.DataFrame:
    """Episodes and successes of a run by the task's scenario, difficulty and axis values."""
    axes = ", ".join(f"t.{a}" for a in DIFFICULTY_AXES)
    con = store.connect(data, read_only=True)
    try:
        return con.sql(
            f"SELECT t.scenario, CAST(t.difficulty AS BIGINT) AS difficulty, {axes}, "
            "count(*) AS episodes, sum(CAST(r.success AS INTEGER)) AS successes "
            "FROM train_rollouts r JOIN tasks t USING (task_id) WHERE r.run_id = ? GROUP BY ALL",
            params=[run_id],
        ).pl()
    except duckdb.Error as err:
        raise RegenerationError(f"cannot read run {run_id}: {str(err).splitlines()[0]}") from None
    finally:
        con.close()


def failure_weights(results: pl.DataFrame, cells: list[Cell]) -> dict[Cell, float]:
    """Weight of each cell: its smoothed failure rate, (failures + 1) / (episodes + 2).

    A cell the run never visited gets 0.5, between a solved and an unsolved one.
    """
    per_cell = results.group_by("scenario", "difficulty").agg(
        pl.col("episodes").sum(), pl.col("successes").sum()
    )
    seen = {
        (s, int(d)): (int(e), int(k))
        for s, d, e, k in per_cell.select(
            "scenario", "difficulty", "episodes", "successes"
        ).iter_rows()
    }
    weights = {}
    for cell in cells:
        episodes, successes = seen.get(cell, (0, 0))
        weights[cell] = (episodes - successes + 1) / (episodes + 2)
    return weights


def weakest_axes(results: pl.DataFrame, top: int = 3, min_episodes: int = 4) -> list[dict]:
    """The axis settings with the lowest success rate (at least `min_episodes` episodes)."""
    rows = []
    for axis in DIFFICULTY_AXES:
        grouped = results.group_by(axis).agg(pl.col("episodes").sum(), pl.col("successes").sum())
        for value, episodes, successes in grouped.iter_rows():
            if episodes >= min_episodes and len(grouped) > 1:
                rows.append(
                    {
                        "axis": axis,
                        "value": float(value),
                        "episodes": int(episodes),
                        "success_rate": round(successes / episodes, 4),
                    }
                )
    rows.sort(key=lambda r: (r["success_rate"], -r["episodes"], r["axis"]))
    return rows[:top]


def curriculum_where(seeds: list[int], min_steps: int, max_steps: int, catalog_hash: str) -> str:
    """The predicate that selects exactly a regeneration's tasks (its seeds are fresh; the
    band counts core steps, as the generation did)."""
    from ecomrlve.flows.shards import catalog_predicate

    listed = ", ".join(str(int(s)) for s in seeds)
    return (
        f"seed IN ({listed}) AND core_steps BETWEEN {int(min_steps)} AND {int(max_steps)} "
        f"AND {catalog_predicate(catalog_hash)}"
    )


def preflight(params) -> None:
    """Check a regeneration before any flow starts (catalog, feasible band, known run).

    `params` is a `RegenerateParams`. Read-only; raises StoreError/RegenerationError.
    """
    from ecomrlve.catalogs import catalog_hash
    from ecomrlve.generators import feasible_cells
    from ecomrlve.generators.registry import scenario_names

    catalog_hash(params.data_dir)  # raises when there is no catalog
    scenarios = params.scenarios or list(scenario_names())
    cells, _ = feasible_cells(scenarios, params.difficulty, (params.min_steps, params.max_steps))
    if not cells:
        raise RegenerationError(
            f"no scenario × difficulty of {', '.join(scenarios)} can produce tasks with "
            f"{params.min_steps}-{params.max_steps} steps"
        )
    if params.from_run:
        resolve_run_id(params.data_dir, params.from_run)
