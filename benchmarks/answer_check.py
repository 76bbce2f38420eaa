"""Cost of one `check_answer` call on answers about windows, fees, dates and statuses.

    python benchmarks/answer_check.py                       # 3k-product catalog, cached
    python benchmarks/answer_check.py --data /tmp/cat3k --rounds 9

Answers: the reference final answer of generated policy, return, journey and order_status tasks
(seed 91, difficulties 0-10 in steps of 2, 10 indexes) and two variants of each (a word added
after every "days", a leading "No."), each checked against its task's facts with the plan built
beforehand, as the verifier keeps it per goal. CPU time of this process (the machine is shared:
wall time drifts with the load), best and median of the rounds. Run it on two trees back to back
to compare them.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from ecomrlve.catalogs import build_catalog
from ecomrlve.env import reference_turns
from ecomrlve.env.judge.facts import AnswerPlan, check_answer
from ecomrlve.generators import GenContext, generate_task

SCENARIOS = ("policy", "return", "journey", "order_status")


def answers(ctx: GenContext) -> list[tuple[AnswerPlan, str, str, str | None]]:
    out = []
    for scenario in SCENARIOS:
        for d in range(0, 11, 2):
            for i in range(10):
                task = generate_task(ctx, scenario, 91, d, i)
                if task is None or not task.goal.answer_facts:
                    continue
                final = reference_turns(task)[-1]
                today = task.initial_state.get("today")
                plan = AnswerPlan(task.goal.answer_facts)
                for answer in (final, final.replace("days", "days now"), "No. " + final):
                    out.append((plan, answer, task.prompt, today))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=Path("/tmp/ecomrlve-bench-3k"))
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    if not any(args.data.glob("*.parquet")):
        args.data.mkdir(parents=True, exist_ok=True)
        build_catalog(args.data, 3000, seed=7)
    checked = answers(GenContext.load(args.data))
    rounds = []
    for _ in range(args.rounds):
        start = time.process_time()
        for plan, answer, prompt, today in checked:
            check_answer(answer, plan, prompt, today=today)
        rounds.append((time.process_time() - start) / len(checked) * 1e6)
    rounds.sort()
    rows = [
        ("answers", f"{len(checked)}"),
        ("check_answer, best round", f"{rounds[0]:.1f} µs"),
        ("check_answer, median round", f"{rounds[len(rounds) // 2]:.1f} µs"),
    ]
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}")


if __name__ == "__main__":
    main()
