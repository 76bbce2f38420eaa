"""Contract checks of generated rows at the stage boundary, before they are published.

`generate_chunk` already replays every reference through the env's verifier and keeps only the
tasks that pass, so that is not repeated here. This stage checks what the store and the
curricula rely on: the contract's columns, a parseable `Task`, the cell and step band the chunk
was asked for, this catalog, `min_steps` equal to the reference length, unique task ids.
Rejected rows are counted by reason (the first failing check) so a flow can report them and
generate replacements.
"""

from __future__ import annotations

from collections import Counter

import polars as pl

from ecomrlve.tasks import CONTRACT_COLUMNS, Task

REQUIRED_COLUMNS = CONTRACT_COLUMNS  # the task schema of `ecomrlve.tasks`


class TaskSchemaError(ValueError):
    """Generated rows that lack the contract's columns: a generator bug, not a bad row."""


def rejection_reason(
    task: Task,
    *,
    scenario: str,
    difficulty: int,
    min_steps: int | None,
    max_steps: int | None,
    catalog_hash: str,
) -> str | None:
    """The first structural check `task` fails, or None."""
    if task.scenario != scenario or task.difficulty != difficulty:
        return "wrong_cell"
    if task.catalog_hash != catalog_hash:
        return "stale_catalog"
    if task.min_steps != len(task.reference):
        return "min_steps_mismatch"
    # a step band counts the calls that serve the main request (`Task.core_steps`)
    if (min_steps is not None and task.core_steps < min_steps) or (
        max_steps is not None and task.core_steps > max_steps
    ):
        return "out_of_band"
    return None


def validate_frame(
    df: pl.DataFrame,
    *,
    scenario: str,
    difficulty: int,
    min_steps: int | None,
    max_steps: int | None,
    catalog_hash: str,
) -> tuple[pl.DataFrame, dict[str, int]]:
    """(valid rows, {reason: count}) for rows generated for one scenario × difficulty."""
    missing = [c for c in REQUIRED_COLUMNS if c not in df.columns]
    if missing:
        raise TaskSchemaError(f"generated rows lack column(s) {missing}")
    if df.height == 0:
        return df, {}
    rejected: Counter[str] = Counter()
    keep: list[bool] = []
    seen: set[str] = set()
    for row in df.iter_rows(named=True):
        reason = None
        if row["task_id"] in seen:
            reason = "duplicate"
        seen.add(row["task_id"])
        if reason is None:
            try:
                task = Task.from_row(row)
            except (ValueError, TypeError, KeyError):
                reason = "malformed"
        if reason is None:
            reason = rejection_reason(
                task,
                scenario=scenario,
                difficulty=difficulty,
                min_steps=min_steps,
                max_steps=max_steps,
                catalog_hash=catalog_hash,
            )
        keep.append(reason is None)
        if reason is not None:
            rejected[reason] += 1
    return df.filter(pl.Series(keep, dtype=pl.Boolean)), dict(sorted(rejected.items()))
