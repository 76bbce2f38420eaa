"""Long fuzz run of the env: random and adversarial episodes on all nine scenarios.

    python benchmarks/fuzz_env.py                       # 10,000 episodes, seed 0
    python benchmarks/fuzz_env.py --cases 50000 --seed 3

Each case is one episode on a task drawn from `ecomrlve.testing.fuzzer.task_pool()` (generated
tasks of every scenario at difficulties 0, 2, 5, 8, 10 plus the env's fixture tasks, on the
3,000-product fixture catalog), with a random turn limit and reward mode. Its turns come from
`ecomrlve.testing.fuzzer.Fuzzer`: broken JSON, wrong types, huge/negative/float/NaN/bool numbers,
unknown tools, unicode and lone surrogates, injected `</tool_call>` and fake `<tool_response>`
text, SQL/regex/query-syntax metacharacters, OpenAI dicts of the wrong shape, and (rarely)
10 MB arguments. After every turn `play_checked` checks the invariants (see its docstring);
the table counts the episodes that broke each one. Exit status 1 if any count is above 0.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections import Counter

from rich.console import Console
from rich.table import Table

from ecomrlve.config import EnvConfig
from ecomrlve.testing import env_tasks as fx
from ecomrlve.testing.episode_check import COUNTERS, fuzz_episode
from ecomrlve.testing.fuzzer import task_pool

HUGE_RATE = 2e-4  # share of fuzzed text values that are 10 MB


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=10_000, help="episodes to play")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--huge-rate", type=float, default=HUGE_RATE)
    parser.add_argument("--samples", type=int, default=3, help="problems shown per invariant")
    args = parser.parse_args(argv)
    if args.cases < 1:
        parser.error("--cases must be at least 1")

    console = Console()
    start = time.perf_counter()
    pool = task_pool()
    catalog = fx.small_catalog()
    counts: Counter[str] = Counter()
    samples: dict[str, list[str]] = {name: [] for name in COUNTERS}
    turns = huge = 0
    by_scenario: Counter[str] = Counter()
    master = random.Random(args.seed)
    for case in range(args.cases):
        rng = random.Random(master.getrandbits(64))
        task = pool[rng.randrange(len(pool))]
        config = EnvConfig(max_steps=rng.choice([1, 2, 4, 8, 10]), binary_reward=rng.random() < 0.2)
        check = fuzz_episode(task, catalog, rng, config, huge_rate=args.huge_rate)
        turns += check.turns
        huge += check.huge_arguments
        by_scenario[task.scenario] += 1
        for name, problems in check.problems.items():
            if problems:
                counts[name] += 1
                if len(samples[name]) < args.samples:
                    samples[name].append(f"case {case} {task.task_id}: {problems[0][:200]}")
    elapsed = time.perf_counter() - start

    table = Table(title=f"env fuzz: {args.cases:,} episodes, seed {args.seed}")
    table.add_column("what")
    table.add_column("count", justify="right")
    table.add_row("cases tried (episodes)", f"{args.cases:,}")
    table.add_row("turns played", f"{turns:,}")
    table.add_row("scenarios covered", f"{len(by_scenario)} of 9")
    table.add_row("10 MB values sent", f"{huge:,}")
    for name in COUNTERS:
        table.add_row(name, f"{counts[name]:,}", style="red" if counts[name] else None)
    table.add_row("seconds", f"{elapsed:,.1f}")
    console.print(table)
    for name, lines in samples.items():
        for line in lines:
            console.print(f"[red]{name}[/red] {line}", markup=True, highlight=False)
    return 1 if any(counts.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
