"""Difficulty measured without a model: the reference, a shallow scripted baseline and a ladder
of scripted agents on generated tasks, success by scenario x difficulty (issue 29, item 3;
issue 44, item 5).

    python benchmarks/difficulty.py --products 20000 --tasks 990 --seed 7
    python benchmarks/difficulty.py --products 20000 --tasks 0 --ladder 6,8,10 --per-cell 20

The baseline (`ecomrlve.testing.baseline`) plays the reference's kinds of call but takes the
shallow option at every choice: no clarifying questions, the first search hit, the first
lexical order match, no retries, no arithmetic in the final message. A difficulty that demands
reasoning shows as the baseline's success falling with `d` while the reference stays at 100%.

Tables: the reference's success and the baseline's success per scenario x difficulty (percent,
tasks per cell in the header); then per difficulty, over the reference solutions: tool calls,
distinct tool kinds, world events (`Task.events`: tasks carrying any, and events per task), and
reasoning operations (the decisions where the baseline departed from the reference: questions
asked, ids other than the shallow pick, filters the prompt does not spell, facts that had to be
computed, retries), each a mean per task.

The ladder (`--ladder`: the difficulties it plays, `--per-cell` tasks each): per scenario, the
success of each rung (`ecomrlve.testing.baseline.LADDER`: shallow, + history look-ups, + asks
and confirms, + arithmetic, + handles events) and of the reference, and their sum (600 = every
rung solves every task); then per late demand (`reasoning.LATE_KINDS`) and difficulty, the
share of the tasks asking it whose answer, rung by rung, states its fact (the verifier found
it: a rung may state it and still fail the task on another count); then per difficulty the
mean core steps of those tasks. Last, from
plans alone, the mean reasoning features a task carries
(`ecomrlve.generators.reasoning.reasoning_features`) per scenario x difficulty.
"""

from __future__ import annotations

import argparse
import collections
import statistics
import time
from collections.abc import Iterator
from pathlib import Path

from ecomrlve.catalogs import build_catalog
from ecomrlve.env import Catalog, reference_turns, verify
from ecomrlve.env.judge.facts.check import describe
from ecomrlve.generators import GenContext, generate_task
from ecomrlve.generators.base import Plan
from ecomrlve.generators.difficulty import MAX_DIFFICULTY, MIN_DIFFICULTY, parse_difficulty_range
from ecomrlve.generators.reasoning import LATE_KINDS, late_demands, late_facts, reasoning_features
from ecomrlve.generators.registry import scenario_names
from ecomrlve.tasks import Task
from ecomrlve.testing.baseline import LADDER, play_baseline, play_rung
from ecomrlve.testing.bench import generated_store, plan_table, print_table

DIFFICULTIES = range(MIN_DIFFICULTY, MAX_DIFFICULTY + 1)
PLANS_PER_CELL = 200


def success_table(title: str, wins: dict[tuple[str, int], list[bool]]) -> None:
    print(f"\n{title}: success % by scenario x difficulty")
    table = [("scenario", *(f"d{d}" for d in DIFFICULTIES), "all")]
    for scenario in [*scenario_names(), "all"]:
        cells, every = [], []
        for d in DIFFICULTIES:
            got = (
                [w for s in scenario_names() for w in wins[(s, d)]]
                if scenario == "all"
                else wins[(scenario, d)]
            )
            every += got
            cells.append(f"{100 * sum(got) / len(got):.0f}" if got else "-")
        total = f"{100 * sum(every) / len(every):.0f}" if every else "-"
        table.append((scenario, *cells, total))
    print_table(table, numeric=True)


Wins = dict[tuple[str, int], dict[str, list[bool]]]


def ladder_success(tasks: list[Task], catalog: Catalog) -> tuple[Wins, Wins]:
    """Per (scenario, difficulty): each rung's wins and the reference's, task by task; and per
    (late demand, difficulty): whether each rung's answer stated the demand's fact (the
    verifier found it), task by task."""
    wins: Wins = collections.defaultdict(lambda: collections.defaultdict(list))
    stated: Wins = collections.defaultdict(lambda: collections.defaultdict(list))
    for task in tasks:
        cell = wins[(task.scenario, task.difficulty)]
        labels = [describe(f) for f in late_facts(task)]
        demands = list(zip(late_demands(task.difficulty), labels, strict=True))
        for name, skills in LADDER:
            verdict = play_rung(task, catalog, skills).verdict
            cell[name].append(verdict.success)
            found = verdict.answer.get("found", [])
            for demand, label in demands:
                stated[(demand, task.difficulty)][name].append(label in found)
        cell["reference"].append(verify(task, reference_turns(task), catalog).success)
    return wins, stated


def demand_table(stated: Wins, difficulties: list[int]) -> list[tuple[str, ...]]:
    """Rows late demand / difficulty, a column per rung: the share of the tasks asking it
    whose answer states its fact (all scenarios together)."""
    rungs = [name for name, _ in LADDER]
    rows = [("demand", "d", "tasks", *rungs)]
    for demand in LATE_KINDS:
        for d in difficulties:
            cell = stated.get((demand, d))
            if not cell:
                continue
            shares = [f"{100 * sum(cell[r]) / len(cell[r]):.0f}" for r in rungs]
            rows.append((demand, str(d), str(len(cell[rungs[0]])), *shares))
    return rows


def ladder_table(
    wins: dict[tuple[str, int], dict[str, list[bool]]], difficulties: list[int]
) -> list[tuple[str, ...]]:
    """Rows scenario / rung, a column per difficulty: success %, and where the rung falls (the
    first difficulty it solves under half the tasks at); a sum row per scenario."""
    rungs = [name for name, _ in LADDER] + ["reference"]
    rows = [("scenario", "rung", *(f"d{d}" for d in difficulties), "falls at")]
    for scenario in scenario_names():
        sums = [0.0] * len(difficulties)
        for rung in rungs:
            cells, falls = [], "-"
            for k, d in enumerate(difficulties):
                got = wins[(scenario, d)][rung]
                share = 100 * sum(got) / len(got) if got else 0.0
                sums[k] += share
                cells.append(f"{share:.0f}" if got else "-")
                if got and share < 50 and falls == "-":
                    falls = f"d{d}"
            rows.append((scenario if rung == rungs[0] else "", rung, *cells, falls))
        rows.append(("", "sum", *(f"{x:.0f}" for x in sums), ""))
    return rows


def features_table() -> list[tuple[str, ...]]:
    """Per scenario x difficulty, the mean reasoning features of `PLANS_PER_CELL` plans."""

    def cell(scenario: str, plans: Iterator[Plan]) -> str:
        return f"{sum(len(reasoning_features(plan)) for plan in plans) / PLANS_PER_CELL:.2f}"

    return plan_table(DIFFICULTIES, cell, plans=PLANS_PER_CELL)


def run_ladder(data: Path, difficulties: list[int], per_cell: int, seed: int) -> None:
    started = time.perf_counter()
    ctx = GenContext.load(data)
    tasks = [
        task
        for scenario in scenario_names()
        for d in difficulties
        for i in range(per_cell)
        if (task := generate_task(ctx, scenario, seed, d, i)) is not None
    ]
    wins, stated = ladder_success(tasks, ctx.catalog)
    print(f"\nladder: success % by scenario x rung ({per_cell} tasks a cell, seed {seed}, "
          f"{len(tasks)} tasks, {time.perf_counter() - started:.0f} s)")  # fmt: skip
    print_table(ladder_table(wins, difficulties), numeric=True)
    print("\nlate demands: % of the tasks asking one whose answer states its fact, by rung")
    print_table(demand_table(stated, difficulties), numeric=True)
    print("\nladder tasks per difficulty: mean core steps, mean reference calls")
    table = [("d", "tasks", "core steps", "reference calls")]
    for d in difficulties:
        got = [t for t in tasks if t.difficulty == d]
        core = statistics.fmean(t.core_steps for t in got)
        calls = statistics.fmean(t.min_steps for t in got)
        table.append((str(d), str(len(got)), f"{core:.2f}", f"{calls:.2f}"))
    print_table(table, numeric=True)
    print(f"\nreasoning features per task (plans, {PLANS_PER_CELL} a cell)")
    print_table(features_table(), numeric=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--products", type=int, default=20_000)
    parser.add_argument("--tasks", type=int, default=990, help="0: the ladder alone")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--data", type=Path, default=None)
    parser.add_argument("--ladder", default="6,8,10", help="difficulties the ladder plays")
    parser.add_argument("--per-cell", type=int, default=20, help="ladder tasks a cell")
    args = parser.parse_args()
    bounds = [parse_difficulty_range(part) for part in args.ladder.split(",")]
    difficulties = sorted({d for lo, hi in bounds for d in range(lo, hi + 1)})
    if args.tasks:
        shallow_and_reference(args)
    data = args.data or Path(f"/tmp/ecomrlve-difficulty-{args.products}-{args.seed}")
    if not (data / "catalog" / "products.parquet").exists():
        build_catalog(data, args.products, seed=args.seed)
    run_ladder(data, difficulties, args.per_cell, args.seed)


def shallow_and_reference(args: argparse.Namespace) -> None:
    started = time.perf_counter()
    _, catalog, frame, report = generated_store(
        "difficulty", products=args.products, tasks=args.tasks, seed=args.seed, data=args.data
    )
    tasks = [Task.from_row(row) for row in frame.iter_rows(named=True)]
    print(f"{len(tasks)} tasks generated (seed {args.seed}, {args.products:,} products, "
          f"{report.invalid} invalid, {report.gave_up} given up) in "
          f"{time.perf_counter() - started:.1f} s")  # fmt: skip

    reference_wins: dict[tuple[str, int], list[bool]] = collections.defaultdict(list)
    baseline_wins: dict[tuple[str, int], list[bool]] = collections.defaultdict(list)
    per_d: dict[int, collections.defaultdict[str, list[float]]] = {
        d: collections.defaultdict(list) for d in DIFFICULTIES
    }
    for task in tasks:
        cell = (task.scenario, task.difficulty)
        reference_wins[cell].append(verify(task, reference_turns(task), catalog).success)
        baseline = play_baseline(task, catalog)
        baseline_wins[cell].append(baseline.verdict.success)
        stats = per_d[task.difficulty]
        stats["calls"].append(len(task.reference))
        stats["kinds"].append(len({c.name for c in task.reference}))
        stats["with events"].append(bool(task.events))
        stats["events"].append(len(task.events))
        stats["reasoning"].append(baseline.reasoning_operations)

    success_table("reference", reference_wins)
    success_table("shallow baseline", baseline_wins)
    print("\nper difficulty (means over the reference solutions)")
    table = [("d", "tasks", "tool calls", "tool kinds", "with events", "events", "reasoning ops")]
    for d in DIFFICULTIES:
        stats = per_d[d]
        if not stats["calls"]:
            continue
        means = {k: f"{statistics.fmean(stats[k]):.2f}" for k in stats}
        share = f"{100 * statistics.fmean(stats['with events']):.0f}%"
        table.append((str(d), str(len(stats["calls"])), means["calls"], means["kinds"], share,
                      means["events"], means["reasoning"]))  # fmt: skip
    print_table(table, numeric=True)


if __name__ == "__main__":
    main()
