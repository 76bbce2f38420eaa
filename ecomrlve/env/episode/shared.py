"""Several shoppers, one shop (issue 47): K episodes act on one shared shop.

Each seat is an ordinary `EcomEnv` episode (its own task, customer, cart and orders); what the
seats share is the shop: the stock (every seat's `ShopTools.sold` is one dict, so a unit one
seat buys is gone for all), the prices (a scripted `DemandRule`: the last units cost more) and
the order queue (every order placed, in the order it was placed: revenue is read from it).

    world = SharedWorld(tasks, catalog, seed=7, scarce={"I0000116": 1})
    openings = world.reset()                      # seat -> [system, user] messages
    results = world.step({0: turn_a, 1: turn_b})  # one round: live seats in a seeded order
    world.verdicts(), world.group_metrics()

Turns interleave in a seeded order: round r plays the live seats in the permutation drawn from
`np.random.SeedSequence([seed, ROUND_STREAM, r])`; a seat's turn (all its tool calls) runs
whole, so the same seed and the same actions replay byte-identically (`SharedWorld.log_bytes`).

Judged on what each seat saw: a change of the shop a seat's turn makes (an item sold out, a
demand price rise) reaches every other live seat as a world event (`ecomrlve.tasks.WorldEvent`,
`out_of_stock` or `price_change`) appended to that seat's own copy of its task, due before its
next tool call. The verifier then judges each seat exactly as it judges world events
(`ecomrlve.env.world.events`): a seat that lost the last unit it held in its cart (or then failed to
buy) must tell the customer it is out of stock, and may buy an acceptable substitute; a seat
that saw the old price and bought after a rise must tell the new price; a seat whose final
message claims an order it did not get fails on the claims and the purchase goal. Seats never
see each other's customers or orders: each has its own `WorldState`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ecomrlve.config import EnvConfig
from ecomrlve.env.episode.environment import EcomEnv, StepResult
from ecomrlve.env.judge.verifier import Verdict
from ecomrlve.env.shop.products import Catalog
from ecomrlve.env.world.events import WorldEvents, ran_into_stock
from ecomrlve.tasks import Task, WorldEvent

# turns a seat gets beyond its task's limit: room to meet a sold-out item at the checkout and
# remove it, add a substitute and check out again
TURN_SLACK = 3
ROUND_STREAM = 0x5EA7  # the middle entropy word of a round's turn order
DRAW_STREAM = 0xD2A3  # the middle entropy word of a shared world's task draw


@dataclass(frozen=True)
class DemandRule:
    """The scripted demand price: once a sale leaves `low_stock` units or fewer of an item
    (but some), the item costs `surge` more than its catalog price (the last units cost
    more). Items nobody buys keep their catalog price.

    >>> DemandRule(low_stock=2, surge=0.2).price(10.0, remaining=2)
    12.0
    """

    low_stock: int = 2
    surge: float = 0.2

    def __post_init__(self) -> None:
        if self.low_stock < 0:
            raise ValueError(f"low_stock must be >= 0, got {self.low_stock}")
        if not 0.0 <= self.surge <= 10.0:
            raise ValueError(f"surge must be within 0..10, got {self.surge}")

    def price(self, base: float, remaining: int) -> float:
        return round(base * (1.0 + self.surge), 2) if 0 < remaining <= self.low_stock else base


@dataclass
class Seat:
    """One seat: its task (a copy whose `events` grow with the shop's changes) and episode."""

    index: int
    task: Task
    env: EcomEnv
    own_events: int = 0  # the task's own world events; the shop's changes come after them
    result: StepResult | None = None

    @property
    def done(self) -> bool:
        return self.env.done


@dataclass
class ShopChange:
    """A change of the shared shop, as the order queue and the log show it."""

    round: int
    seat: int  # the seat whose turn made it
    kind: str  # "out_of_stock" | "price_change"
    item_id: str
    price: float | None = None
    old_price: float | None = None


@dataclass
class _Ledger:
    """The shop's shared books: units sold per item, current prices, the order queue."""

    sold: dict[str, int] = field(default_factory=dict)
    prices: dict[str, float] = field(default_factory=dict)
    sold_out: set[str] = field(default_factory=set)
    queue: list[dict[str, Any]] = field(default_factory=list)
    changes: list[ShopChange] = field(default_factory=list)


class SharedWorld:
    """K seats on one shop; see the module docstring."""

    def __init__(
        self,
        tasks: Sequence[Task],
        catalog: Catalog,
        config: EnvConfig | None = None,
        *,
        seed: int,
        scarce: Mapping[str, int] | None = None,
        demand: DemandRule | None = None,
        turn_slack: int = TURN_SLACK,
    ):
        """`scarce` maps item ids to the units left of them when the episode opens (the rest
        of the catalog stock counts as sold before); `demand` prices the last units;
        `turn_slack` turns are added to each seat's turn limit (other seats' purchases can
        cost a seat the calls that handle them)."""
        if not tasks:
            raise ValueError("a shared world needs at least one seat")
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
        for item_id, units in (scarce or {}).items():
            if catalog.row_of(item_id) is None:
                raise ValueError(f"scarce item {item_id!r} is not in the catalog")
            if isinstance(units, bool) or not isinstance(units, int) or units < 1:
                # none left would be an item the shop shows in stock and cannot sell
                raise ValueError(f"scarce units of {item_id} must be an integer >= 1")
        self.tasks = list(tasks)
        self.catalog = catalog
        self.config = config or EnvConfig()
        self.seed = seed
        self.scarce = dict(scarce or {})
        self.demand = demand or DemandRule()
        if isinstance(turn_slack, bool) or not isinstance(turn_slack, int) or turn_slack < 0:
            raise ValueError(f"turn_slack must be an integer >= 0, got {turn_slack!r}")
        self.turn_slack = turn_slack
        self.seats: list[Seat] = []
        self.round = 0
        self._log: list[dict[str, Any]] = []

    # ---- the episode ----------------------------------------------------------------------------
    def reset(self, include_tools: bool = True) -> dict[int, list[dict[str, Any]]]:
        """Open every seat's episode on a fresh shop; each seat's opening messages
        (`include_tools`: the tools as text in the system message, as `EcomEnv.reset`)."""
        ledger = _Ledger()
        for item_id, units in self.scarce.items():
            stock = int(self.catalog.stock[self.catalog.row_of(item_id)])
            ledger.sold[item_id] = max(stock - units, 0)
        self.ledger = ledger
        self.seats = []
        self.round = 0
        self._log = []
        openings = {}
        for index, task in enumerate(self.tasks):
            own = task.model_copy(update={"events": list(task.events)})
            env = EcomEnv(own, self.catalog, self.config)
            env.max_turns += self.turn_slack
            openings[index] = env.reset(include_tools=include_tools)
            env.tools.sold = ledger.sold  # one stock for every seat
            # the shop's changes reach the seat as world events on its own task copy
            env.world = env.world or WorldEvents(own.events, env.tools, env.record)
            self.seats.append(Seat(index, own, env, own_events=len(task.events)))
        self._log.append({"reset": self.seed, "tasks": [t.task_id for t in self.tasks]})
        return openings

    def live(self) -> list[int]:
        """The seats still playing."""
        return [seat.index for seat in self.seats if not seat.done]

    def turn_order(self, round_index: int | None = None) -> list[int]:
        """The live seats in the order round `round_index` (default: the next) plays them."""
        r = self.round if round_index is None else round_index
        rng = np.random.default_rng(np.random.SeedSequence([self.seed, ROUND_STREAM, r]))
        live = self.live()
        return [live[i] for i in rng.permutation(len(live))]

    def step(self, actions: Mapping[int, str | dict[str, Any]]) -> dict[int, StepResult]:
        """One round: every live seat with an action plays one turn, in the seeded order."""
        unknown = [k for k in actions if not 0 <= k < len(self.seats)]
        if unknown:
            raise ValueError(f"no seat(s) {unknown}; seats are 0..{len(self.seats) - 1}")
        results = {}
        for index in self.turn_order():
            if index in actions:
                results[index] = self.play(index, actions[index])
        self.round += 1
        return results

    def play(self, index: int, action: str | dict[str, Any]) -> StepResult:
        """One turn of seat `index` now (tests and turn-by-turn drivers; `step` plays rounds)."""
        if not self.seats:
            self.reset()
        seat = self.seats[index]
        if seat.done:  # the env answers that the episode is over; nothing to book or log
            return seat.env.step(action)
        before = dict(self.ledger.sold)
        orders_before = len(seat.env.record.state.new_order_ids)
        result = seat.env.step(action)
        seat.result = result
        self._book(seat, before, orders_before)
        entry = {
            "round": self.round,
            "seat": index,
            "action": action,
            "observation": result.observation,
            "reward": result.reward,
            "done": result.done,
        }
        if result.done:
            entry["verdict"] = result.info["verdict"].to_json()
        self._log.append(entry)
        return result

    def finish(self) -> dict[int, Verdict]:
        """End every seat still playing (judged as truncated); every seat's verdict."""
        for seat in self.seats:
            if not seat.done:
                seat.env.finish()
        return self.verdicts()

    # ---- the shop's books -----------------------------------------------------------------------
    def _book(self, seat: Seat, before: dict[str, int], orders_before: int) -> None:
        """Queue the seat's new orders and tell every live seat what its turn changed."""
        ledger = self.ledger
        state = seat.env.record.state
        for order_id in state.new_order_ids[orders_before:]:
            order = state.orders[order_id]
            ledger.queue.append(
                {
                    "seq": len(ledger.queue),
                    "round": self.round,
                    "seat": seat.index,
                    "order_id": order_id,
                    "items": [dict(line) for line in order["items"]],
                }
            )
        for item_id, units in ledger.sold.items():
            if units == before.get(item_id, 0):
                continue
            row = self.catalog.row_of(item_id)
            remaining = int(self.catalog.stock[row]) - units
            if remaining <= 0:
                if item_id not in ledger.sold_out:
                    ledger.sold_out.add(item_id)
                    self._announce(
                        seat, WorldEvent(kind="out_of_stock", after_calls=0, item_id=item_id)
                    )
                continue
            old = ledger.prices.get(item_id, float(self.catalog.price[row]))
            new = self.demand.price(float(self.catalog.price[row]), remaining)
            if new != old:
                ledger.prices[item_id] = new
                change = WorldEvent(
                    kind="price_change", after_calls=0, item_id=item_id, price=new, old_price=old
                )
                self._announce(seat, change)

    def _announce(self, by: Seat, event: WorldEvent) -> None:
        """Append `event` to every live seat's events, due before its next tool call (the seat
        that made the change included: its next purchase meets it too)."""
        self.ledger.changes.append(
            ShopChange(
                self.round, by.index, event.kind, event.item_id, event.price, event.old_price
            )
        )
        for seat in self.seats:
            if seat.done:
                continue
            calls = len(seat.env.record.calls)
            seat.task.events.append(event.model_copy(update={"after_calls": calls}))

    # ---- results --------------------------------------------------------------------------------
    def verdicts(self) -> dict[int, Verdict]:
        """The verdict of every finished seat."""
        return {s.index: s.env.verdict for s in self.seats if s.env.verdict is not None}

    def lost_items(self, index: int) -> list[str]:
        """The items seat `index` lost to other seats: it held one in the cart when it sold
        out, or failed to buy it after (what its final message had to tell)."""
        seat = self.seats[index]
        record = seat.env.record
        lost = []
        for k, event in enumerate(seat.task.events):
            fired_at = record.events_fired.get(k)
            if (
                k >= seat.own_events
                and event.kind == "out_of_stock"
                and fired_at is not None
                and ran_into_stock(record, k, fired_at, event)
            ):
                lost.append(event.item_id)
        return lost

    def ran_into_sold_out(self, index: int) -> bool:
        """Whether seat `index` lost an item to another seat (`lost_items`)."""
        return bool(self.lost_items(index))

    def group_metrics(self) -> dict[str, Any]:
        """The shop's view beside the per-seat rewards: customers served (successful seats),
        revenue (goods of the orders placed and not cancelled), orders, sold-out items, and
        the seats that lost an item to another seat."""
        verdicts = self.verdicts()
        revenue = 0.0
        for entry in self.ledger.queue:
            order = self.seats[entry["seat"]].env.record.state.orders[entry["order_id"]]
            if order["status"] != "cancelled":
                revenue += sum(line["price"] * line["quantity"] for line in order["items"])
        return {
            "seats": len(self.seats),
            "served": sum(1 for v in verdicts.values() if v.success),
            "revenue": round(revenue, 2),
            "orders": len(self.ledger.queue),
            "sold_out": sorted(self.ledger.sold_out),
            "price_changes": sum(1 for c in self.ledger.changes if c.kind == "price_change"),
            "contended": sum(1 for s in self.seats if self.ran_into_sold_out(s.index)),
        }

    def log_bytes(self) -> bytes:
        """The whole shared episode (every turn in play order, its observation and verdict,
        the order queue and the shop's changes) as canonical JSON: equal seeds and actions give
        equal bytes."""
        body = {
            "turns": self._log,
            "queue": self.ledger.queue if self.seats else [],
            "changes": [vars(c) for c in self.ledger.changes] if self.seats else [],
        }
        return json.dumps(body, sort_keys=True, separators=(",", ":"), default=str).encode()

    def log_hash(self) -> str:
        return hashlib.sha256(self.log_bytes()).hexdigest()[:16]


# ---- drawing contending tasks ------------------------------------------------------------------
def _first_pick(task: Task) -> str | None:
    """The item the task's reference puts in the cart first (what seats contend for)."""
    for call in task.reference:
        if call.name == "add_to_cart":
            return call.arguments.get("item_id")
    return None


def contendable(task: Task) -> bool:
    """A purchase task whose first pick has a substitute: a seat that loses the item to
    another seat can still serve its customer."""
    purchase = task.goal.purchase
    pick = _first_pick(task)
    return (
        purchase is not None
        and pick is not None
        and any(pick in s.acceptable and len(s.acceptable) > 1 for s in purchase.slots)
    )


@dataclass(frozen=True)
class Contention:
    """How hard the seats of a shared world fight over its scarce item: `share`, the
    probability that each seat after the first wants it too; `units`, the units of it left
    when the world opens."""

    share: float
    units: int

    def __post_init__(self) -> None:
        if not 0.0 <= self.share <= 1.0:
            raise ValueError(f"contention must be within 0..1, got {self.share}")
        if isinstance(self.units, bool) or not isinstance(self.units, int) or self.units < 1:
            raise ValueError(f"scarce units must be an integer >= 1, got {self.units!r}")


def contention_at(difficulty: int) -> Contention:
    """The contention knob of the difficulty ladder (issue 47): how much the seats of a shared
    world whose first task has difficulty `difficulty` contend. Each step adds an eighth of the
    other seats wanting the scarce item, and the units left shrink from three to one:

    | d      | 0    | 2    | 4    | 6    | 8-10 |
    |--------|------|------|------|------|------|
    | share  | 0    | 0.25 | 0.5  | 0.75 | 1    |
    | units  | 3    | 3    | 2    | 2    | 1    |

    >>> contention_at(4)
    Contention(share=0.5, units=2)
    """
    if isinstance(difficulty, bool) or not isinstance(difficulty, int) or difficulty < 0:
        raise ValueError(f"difficulty must be a non-negative integer, got {difficulty!r}")
    return Contention(share=min(1.0, difficulty / 8), units=max(1, 3 - difficulty // 4))


def draw_shared_tasks(
    pool: Sequence[Task],
    seats: int,
    seed: int,
    *,
    contention: float | None = 1.0,
    units: int | None = 1,
) -> tuple[list[Task], dict[str, int]]:
    """Draw `seats` tasks for one shared world from `pool`, and the scarce item (`units` left).

    Seat 0 gets a contendable purchase task (`contendable`); its first pick is the scarce
    item. Every other seat contends with probability `contention`: it gets a pool task whose
    acceptable items include the scarce one, else seat 0's request for its own customer (a
    seat's copy: `task_id` suffixed `@seatN`, its own `user_id`). Otherwise it draws any pool
    task. `contention` or `units` None: the difficulty ladder's (`contention_at` seat 0's
    task's difficulty). Without a contendable task in the pool the seats draw independently
    and nothing is scarce. Seeded by `SeedSequence([seed, DRAW_STREAM])`.
    """
    if seats < 1:
        raise ValueError(f"seats must be >= 1, got {seats}")
    if contention is not None and not 0.0 <= contention <= 1.0:
        raise ValueError(f"contention must be within 0..1, got {contention}")
    if units is not None:
        Contention(1.0, units)  # validates
    if not pool:
        raise ValueError("the task pool is empty")
    rng = np.random.default_rng(np.random.SeedSequence([seed, DRAW_STREAM]))
    candidates = [t for t in pool if contendable(t)]
    if not candidates:
        drawn = [pool[int(rng.integers(len(pool)))] for _ in range(seats)]
        return [_seat_copy(t, k) for k, t in enumerate(drawn)], {}
    first = candidates[int(rng.integers(len(candidates)))]
    ladder = contention_at(first.difficulty)
    contention = ladder.share if contention is None else contention
    units = ladder.units if units is None else units
    item_id = _first_pick(first)
    rivals = [
        t
        for t in candidates
        if t.task_id != first.task_id
        and any(item_id in s.acceptable for s in t.goal.purchase.slots)
    ]
    drawn = [first]
    for _ in range(1, seats):
        if rng.random() < contention:
            drawn.append(rivals[int(rng.integers(len(rivals)))] if rivals else first)
        else:
            drawn.append(pool[int(rng.integers(len(pool)))])
    return [_seat_copy(t, k) for k, t in enumerate(drawn)], {item_id: units}


def _seat_copy(task: Task, seat: int) -> Task:
    """`task` for seat `seat`: its own task id and customer id (seat 0 keeps the task's)."""
    if seat == 0:
        return task
    state = dict(task.initial_state)
    user = dict(state.get("user") or {})
    user["user_id"] = f"{user.get('user_id', 'U0')}-S{seat}"
    state["user"] = user
    return task.model_copy(update={"task_id": f"{task.task_id}@seat{seat}", "initial_state": state})
