"""Core steps in a 6-8 step band (issue 44, item 1): do the tasks' steps serve the customer's
main request, or pad it with an unrelated purchase?

    python benchmarks/core_steps.py --tasks 180 --plain-tasks 990 --seed 41

On a small catalog (3k products, `ecomrlve.testing.fixtures.small_catalog`), it generates
`--tasks` tasks with `generate_tasks(min_steps=6, max_steps=8)` and `--plain-tasks` without, and
prints, per scenario: the banded tasks, the share with >= 6 core steps (`Task.core_steps`: the
reference calls that serve the main request), the share carrying an unrelated add-on purchase,
and the share the reference solves (replayed through the verifier); then the add-on purchase
share per difficulty of the unbanded run; then, from plans alone (no catalog), the share of
plans per scenario x difficulty whose core steps fall in 6-8 (the band's reach: a cell under
2% is skipped by a banded run).

On code before `Task.core_steps` existed, a task's core steps are its reference length less the
calls of its add-on follow-ups (`reorder`, `order_detail` outside order_status), read from its
plan; so the same script gives the before and after numbers.
"""

from __future__ import annotations

import argparse
import collections
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from ecomrlve.catalogs import build_catalog
from ecomrlve.generators import GenContext, TaskKey, generate_tasks, validate
from ecomrlve.generators import followups as fu
from ecomrlve.generators.base import Plan
from ecomrlve.generators.difficulty import MAX_DIFFICULTY, MIN_DIFFICULTY
from ecomrlve.generators.generate import config_of
from ecomrlve.generators.registry import get_scenario, scenario_names
from ecomrlve.tasks import Task
from ecomrlve.testing.bench import plan_table, print_table

DIFFICULTIES = range(MIN_DIFFICULTY, MAX_DIFFICULTY + 1)
BAND = (6, 8)
PLANS_PER_CELL = 200


def _plan_of(task: Task):
    key = TaskKey.parse(task.task_id)
    config = config_of(key.scenario, key.difficulty)
    return get_scenario(key.scenario).plan_task(config, key.rng(), key)


def core_steps(task: Task) -> int:
    """`Task.core_steps`, or on older code the reference less its add-on follow-ups."""
    if hasattr(type(task), "core_steps"):
        return task.core_steps
    more = _plan_of(task).choices.get("followups", [])
    core = {"order_detail"} if task.scenario == "order_status" else set()
    return task.min_steps - sum(fu.COST[f] for f in more if f in {"reorder", "order_detail"} - core)


def has_addon_purchase(task: Task) -> bool:
    """Whether the task buys something beside its main request (a `reorder` follow-up in its
    plan; the calls that handle a world event buy nothing new)."""
    return "reorder" in _plan_of(task).choices.get("followups", [])


def percent(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f}" if whole else "-"


def plan_core_reach() -> list[tuple[str, ...]]:
    """Per scenario x difficulty: % of plans whose core steps are in `BAND`."""

    def cell(scenario: str, plans: Iterator[Plan]) -> str:
        hits = 0
        for plan in plans:
            steps = getattr(plan, "core_steps", None)
            if steps is None:  # older code: the plan's steps less its add-ons
                more = plan.choices.get("followups", [])
                core = {"order_detail"} if scenario == "order_status" else set()
                addons = {"reorder", "order_detail"} - core
                steps = plan.steps - sum(fu.COST[f] for f in more if f in addons)
            hits += BAND[0] <= steps <= BAND[1]
        return percent(hits, PLANS_PER_CELL)

    return plan_table(DIFFICULTIES, cell, plans=PLANS_PER_CELL)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--products", type=int, default=3000)
    parser.add_argument("--tasks", type=int, default=180)
    parser.add_argument("--plain-tasks", type=int, default=990, help="tasks without a band")
    parser.add_argument("--seed", type=int, default=41)
    args = parser.parse_args()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp)
        build_catalog(data, args.products, seed=args.seed)
        ctx = GenContext.load(data)
        banded, _ = generate_tasks(
            ctx, args.tasks, seed=args.seed, min_steps=BAND[0], max_steps=BAND[1]
        )
        plain, _ = generate_tasks(ctx, args.plain_tasks, seed=args.seed + 1)
        banded_tasks = [Task.from_row(r) for r in banded.iter_rows(named=True)]
        plain_tasks = [Task.from_row(r) for r in plain.iter_rows(named=True)]
        solved = {t.task_id: not validate(t, ctx) for t in banded_tasks}
    print(f"{len(banded_tasks)} tasks in the {BAND[0]}-{BAND[1]} band and {len(plain_tasks)} "
          f"without (seed {args.seed}, {args.products:,} products) in "
          f"{time.perf_counter() - started:.0f} s")  # fmt: skip

    print(f"\n{BAND[0]}-{BAND[1]} band: per scenario, % of tasks")
    rows = [("scenario", "tasks", ">=6 core", "add-on purchase", "reference solves")]
    for scenario in [*scenario_names(), "all"]:
        got = [t for t in banded_tasks if scenario in ("all", t.scenario)]
        rows.append((
            scenario,
            str(len(got)),
            percent(sum(core_steps(t) >= BAND[0] for t in got), len(got)),
            percent(sum(has_addon_purchase(t) for t in got), len(got)),
            percent(sum(solved[t.task_id] for t in got), len(got)),
        ))  # fmt: skip
    print_table(rows, numeric=True)

    print("\nno band: % of tasks with an unrelated add-on purchase, by difficulty")
    by_d: dict[int, list[bool]] = collections.defaultdict(list)
    for task in plain_tasks:
        by_d[task.difficulty].append(has_addon_purchase(task))
    print_table(
        [
            tuple(f"d{d}" for d in DIFFICULTIES),
            tuple(percent(sum(by_d[d]), len(by_d[d])) for d in DIFFICULTIES),
        ],
        numeric=True,
    )

    print(f"\nplans with {BAND[0]}-{BAND[1]} core steps, % by scenario x difficulty "
          f"({PLANS_PER_CELL} plans a cell)")  # fmt: skip
    print_table(plan_core_reach(), numeric=True)


if __name__ == "__main__":
    main()
