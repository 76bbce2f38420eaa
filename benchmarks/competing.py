"""Several shoppers, one shop (issue 47): contention, success and reward per seat versus K.

    python benchmarks/competing.py --worlds 20 --seed 7            # the fixture shop
    python benchmarks/competing.py --data data --worlds 20        # a store's tasks
    python benchmarks/competing.py --generate 270 --worlds 20     # freshly generated tasks

For each K in {1, 2, 4, 8} and each contention level, `--worlds` shared worlds are drawn
(`ecomrlve.env.episode.shared.draw_shared_tasks`: seat 0 wants an item with one unit left, every
other seat wants it too with probability `contention`, else draws any task) and played twice in the
seeded turn order: once with every seat a `ReferenceSeat` (the reference, adapted: it buys an
acceptable substitute when the item sells out under it and tells the customer), once with every seat
a `ClaimingSeat` (the reference's turns played blind: it claims the reference's order whatever
happened). Columns, per seat: `contended` the share of seats that lost an item to another seat (held
it in the cart when it sold out, or failed to buy it after); `ref ok` and `ref reward` the
reference's success and mean reward; `ref ok|lost, left` its success among the seats that lost an
item while the shop still had a substitute within the budget (`substitute_left`); `ref ok|not lost`
among the seats that lost nothing; `blind ok|lost` the blind seat's success among the seats that
lost an item (it succeeds only where its task's own plan already replaced that item: its claims are
then true); then per world the customers served by the reference and its revenue.

A second table turns the difficulty ladder's contention knob (`contention_at(d)`: the share of
seats that want the scarce item and the units of it left) at K = `LADDER_SEATS`, with the same
columns. A third gives each rung of the scripted ladder (`testing.baseline.LADDER`, shallow to
"+ handles events", then the reference) at every seat: its success and the seats that lost an
item, per K. `--quick`: 4 worlds per row, K in {1, 2, 4}, the ladder at d in {0, 4, 8}.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path
from typing import Any

from ecomrlve.env.episode.shared import SharedWorld, contention_at, draw_shared_tasks
from ecomrlve.tasks import Task
from ecomrlve.testing import env_tasks
from ecomrlve.testing.baseline import LADDER as RUNGS
from ecomrlve.testing.bench import generated_store, print_table
from ecomrlve.testing.competing import (
    ClaimingSeat,
    ReferenceSeat,
    RungSeat,
    contended_tasks,
    play,
    substitute_left,
)

SEATS = (1, 2, 4, 8)
CONTENTION = (1.0, 0.5)
LADDER = (0, 2, 4, 6, 8)  # difficulties whose contention knob the second table turns
LADDER_SEATS = 4
COLUMNS = (
    "seats", "contended %", "ref ok %", "ref reward", "ref ok|lost, left %", "ref ok|not lost %",
    "blind ok|lost %", "served/world", "revenue/world",
)  # fmt: skip


def _pool(args: argparse.Namespace) -> tuple[Any, list[Task]]:
    """The catalog and the tasks the worlds are drawn from."""
    if args.generate:
        _, catalog, frame, _ = generated_store(
            "competing", products=args.products, tasks=args.generate, seed=args.seed
        )
        return catalog, [Task.from_row(row) for row in frame.iter_rows(named=True)]
    if args.data is None:
        catalog = env_tasks.small_catalog()
        rivals, _ = contended_tasks(catalog, 2)
        return catalog, [*rivals, *env_tasks.all_tasks(catalog)]
    from ecomrlve.env.shop.products import Catalog
    from ecomrlve.tasks import read_tasks

    return Catalog.load(args.data), read_tasks(args.data, None)


def _pct(values: list[bool]) -> str:
    return f"{100 * sum(values) / len(values):.0f}" if values else "-"


def _row(
    catalog: Any, pool: list[Task], k: int, worlds: int, seed0: int, share: float, units: int
) -> tuple[str, ...]:
    """`COLUMNS` over `worlds` shared worlds of `k` seats drawn at contention `share` with
    `units` of the scarce item left, each played by reference seats and by blind ones."""
    lost, ref_ok, ref_reward, ref_lost_ok, claim_lost_ok = [], [], [], [], []
    ref_other_ok: list[bool] = []
    served, revenue = [], []
    for w in range(worlds):
        seed = seed0 * 1_000_003 + w
        tasks, scarce = draw_shared_tasks(pool, k, seed, contention=share, units=units)
        world = SharedWorld(tasks, catalog, seed=seed, scarce=scarce)
        play(world, [ReferenceSeat(t) for t in tasks])
        verdicts = world.verdicts()
        for i in range(k):
            lost_it = world.ran_into_sold_out(i)
            lost.append(lost_it)
            ref_ok.append(verdicts[i].success)
            ref_reward.append(verdicts[i].reward)
            if lost_it and substitute_left(world, i):
                ref_lost_ok.append(verdicts[i].success)
            elif not lost_it:
                ref_other_ok.append(verdicts[i].success)
        metrics = world.group_metrics()
        served.append(metrics["served"])
        revenue.append(metrics["revenue"])
        blind = SharedWorld(tasks, catalog, seed=seed, scarce=scarce)
        play(blind, [ClaimingSeat(t) for t in tasks])
        blind_verdicts = blind.verdicts()
        claim_lost_ok += [blind_verdicts[i].success for i in range(k) if blind.ran_into_sold_out(i)]
    return (
        str(len(lost)), _pct(lost), _pct(ref_ok), f"{statistics.fmean(ref_reward):.3f}",
        _pct(ref_lost_ok), _pct(ref_other_ok), _pct(claim_lost_ok),
        f"{statistics.fmean(served):.2f}", f"{statistics.fmean(revenue):.2f}",
    )  # fmt: skip


def _rung_at(
    catalog: Any, pool: list[Task], skills: frozenset[str] | None, k: int, worlds: int, seed0: int
) -> tuple[str, str]:
    """The success of a ladder rung (`skills`; None: the reference) at every seat of `worlds`
    shared worlds of `k` seats, and the share of seats that lost an item to another."""
    ok, lost = [], []
    for w in range(worlds):
        seed = seed0 * 1_000_003 + w
        tasks, scarce = draw_shared_tasks(pool, k, seed, contention=1.0, units=1)
        world = SharedWorld(tasks, catalog, seed=seed, scarce=scarce)
        seats = [
            ReferenceSeat(t) if skills is None else RungSeat(t, catalog, skills) for t in tasks
        ]
        play(world, seats)
        verdicts = world.verdicts()  # a seat still playing after the last round: no success
        ok += [i in verdicts and verdicts[i].success for i in range(k)]
        lost += [world.ran_into_sold_out(i) for i in range(k)]
    return _pct(ok), _pct(lost)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worlds", type=int, default=20)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--data", type=Path, default=None)
    parser.add_argument("--generate", type=int, default=0, help="draw from N generated tasks")
    parser.add_argument("--products", type=int, default=3_000, help="catalog of --generate")
    parser.add_argument("--quick", action="store_true", help="4 worlds a row, fewer rows")
    args = parser.parse_args()
    seats, ladder_at = SEATS, LADDER
    if args.quick:
        args.worlds, seats, ladder_at = 4, (1, 2, 4), (0, 4, 8)
    catalog, pool = _pool(args)
    started = time.perf_counter()
    table = [("K", "contention", *COLUMNS)]
    for contention in CONTENTION:
        for k in seats:
            row = _row(catalog, pool, k, args.worlds, args.seed, contention, 1)
            table.append((str(k), f"{contention:.1f}", *row))
    source = args.data or (f"{args.generate} generated" if args.generate else "the fixture shop")
    print(f"{args.worlds} worlds per row, seed {args.seed}, tasks of {source} ({len(pool)})")
    print_table(table, numeric=True)
    ladder = [("d", "share", "units", "K", *COLUMNS)]
    for d in ladder_at:
        knob = contention_at(d)
        row = _row(catalog, pool, LADDER_SEATS, args.worlds, args.seed, knob.share, knob.units)
        ladder.append((str(d), f"{knob.share:.2f}", str(knob.units), str(LADDER_SEATS), *row))
    print(f"\nthe difficulty ladder's contention knob (contention_at(d)), K = {LADDER_SEATS}")
    print_table(ladder, numeric=True)
    rungs = [("agent", *(f"ok % K={k}" for k in seats), *(f"lost % K={k}" for k in seats))]
    for name, skills in (*RUNGS, ("reference", None)):
        oks, losts = zip(
            *(_rung_at(catalog, pool, skills, k, args.worlds, args.seed) for k in seats),
            strict=True,
        )
        rungs.append((name, *oks, *losts))
    print("\nthe scripted ladder at K seats (contention 1.0, one unit of the scarce item left)")
    print_table(rungs, numeric=True)
    print(f"\n{time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
