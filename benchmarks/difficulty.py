"""Difficulty measured without a model: the reference and a shallow scripted baseline on
generated tasks, success by scenario x difficulty (issue 29, item 3).

    python benchmarks/difficulty.py --products 20000 --tasks 990 --seed 7

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
"""

from __future__ import annotations

import argparse
import collections
import statistics
import time
from pathlib import Path

from ecomrlve.config import SCENARIOS
from ecomrlve.env import reference_turns, verify
from ecomrlve.generators.difficulty import MAX_DIFFICULTY, MIN_DIFFICULTY
from ecomrlve.tasks import Task
from ecomrlve.testing.baseline import play_baseline
from ecomrlve.testing.bench import generated_store, print_table

DIFFICULTIES = range(MIN_DIFFICULTY, MAX_DIFFICULTY + 1)


def success_table(title: str, wins: dict[tuple[str, int], list[bool]]) -> None:
    print(f"\n{title}: success % by scenario x difficulty")
    table = [("scenario", *(f"d{d}" for d in DIFFICULTIES), "all")]
    for scenario in [*SCENARIOS, "all"]:
        cells, every = [], []
        for d in DIFFICULTIES:
            got = (
                [w for s in SCENARIOS for w in wins[(s, d)]]
                if scenario == "all"
                else wins[(scenario, d)]
            )
            every += got
            cells.append(f"{100 * sum(got) / len(got):.0f}" if got else "-")
        total = f"{100 * sum(every) / len(every):.0f}" if every else "-"
        table.append((scenario, *cells, total))
    print_table(table, numeric=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--products", type=int, default=20_000)
    parser.add_argument("--tasks", type=int, default=990)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--data", type=Path, default=None)
    args = parser.parse_args()
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
