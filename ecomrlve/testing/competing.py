"""Shared-world fixtures and scripted seat agents (issue 47; tests and `benchmarks/competing.py`).

* `contended_tasks(catalog, k)`: k purchase tasks, one customer each, that all want the same
  t-shirt first (colour and size fixed, any brand: several acceptable shirts, so a substitute
  exists), and that item (`scarce_item`);
* `ReferenceSeat`: the reference adapted to a shared shop: it plays the task's reference calls,
  and when the item it wants is sold out under it, removes it, buys the next acceptable search
  hit, and tells the customer (and tells a price that changed since it looked);
* `ClaimingSeat`: the task's reference turns played blind, ending with the reference's
  "I've placed your order" whatever happened (what a verifier must not pay for);
* `RungSeat`: a rung of the scripted ladder (`testing.baseline.LADDER`) at a seat;
* `play(world, agents)`: plays seeded rounds until every seat is done.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Sequence
from typing import Any

from ecomrlve.env import Catalog, final_answer, format_call, reference_turns
from ecomrlve.env.episode.reference import reference_cart
from ecomrlve.env.episode.shared import SharedWorld
from ecomrlve.tasks import Goal, PurchaseSpec, Slot, Task, ToolCall
from ecomrlve.testing.baseline import ShallowAgent

CUSTOMERS: tuple[tuple[str, str, str], ...] = (
    ("Ada Lovelace", "12 Analytical St, London", "visa-4242"),
    ("Grace Hopper", "7 Compiler Rd, Arlington", "mastercard-5454"),
    ("Alan Turing", "3 Bletchley Ln, Wilmslow", "amex-1005"),
    ("Edsger Dijkstra", "9 Shortest Path Ave, Austin", "visa-1111"),
    ("Barbara Liskov", "5 Substitution Sq, Boston", "paypal"),
    ("Donald Knuth", "1 Art Way, Stanford", "visa-3141"),
    ("Frances Allen", "4 Optimiser Ct, Peru", "mastercard-2718"),
    ("John Backus", "8 Formula Blvd, Philadelphia", "amex-1957"),
)
TODAY = "2025-03-14"


def customer(seat: int) -> dict[str, Any]:
    """Seat `seat`'s customer profile (eight distinct ones, then they repeat with new ids)."""
    name, address, payment = CUSTOMERS[seat % len(CUSTOMERS)]
    return {
        "user_id": f"U{7000 + seat}",
        "name": name,
        "membership": "standard",
        "address": address,
        "payment_methods": [payment],
    }


def _contended_filters(catalog: Catalog) -> dict[str, Any]:
    """The first (colour, size) of t-shirts with at least three in-stock shirts of it."""
    counts: dict[tuple[str, str], int] = {}
    for item_id in catalog.item_ids:
        row = catalog.row(item_id)
        if row["category"] == "t-shirts" and row["stock"] >= 3:
            key = (row["color"], row["size"])
            counts[key] = counts.get(key, 0) + 1
            if counts[key] >= 3:
                return {"category": "t-shirts", "color": key[0], "size": key[1], "in_stock": True}
    raise LookupError("no t-shirt colour and size with three shirts in stock")


def contended_tasks(catalog: Catalog, seats: int) -> tuple[list[Task], str]:
    """`seats` purchase tasks (one customer each) whose reference buys the same first search
    hit, and that hit's id (the item to make scarce)."""
    filters = _contended_filters(catalog)
    hits = catalog.search("t-shirt", filters, 5)
    acceptable = [h["item_id"] for h in hits]
    item_id = acceptable[0]
    tasks = []
    for seat in range(seats):
        reference = [
            ToolCall(name="search", arguments={"query": "t-shirt", "filters": filters, "top_k": 5}),
            ToolCall(name="add_to_cart", arguments={"item_id": item_id, "quantity": 1}),
            ToolCall(name="checkout"),
        ]
        user = customer(seat)
        tasks.append(
            Task(
                task_id=f"fx-shared-{seat}",
                scenario="product_discovery",
                difficulty=1,
                min_steps=len(reference),
                seed=seat,
                index=seat,
                prompt=f"Hi! Please buy me a {filters['color']} t-shirt in size {filters['size']}.",
                goal=Goal(
                    purchase=PurchaseSpec(slots=[Slot(acceptable=acceptable, quantity=1)]),
                    relevant_ids=acceptable,
                    product_names={h["item_id"]: h["title"] for h in hits},
                ),
                initial_state={
                    "today": TODAY,
                    "user": user,
                    "cart": [],
                    "orders": [],
                    "returns": [],
                },
                reference=reference,
            )
        )
    return tasks, item_id


# ---- scripted seat agents ------------------------------------------------------------------------
def _tool_results(observation: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    return [(m["name"], json.loads(m["content"])) for m in observation if m.get("role") == "tool"]


class ReferenceSeat:
    """The task's reference, adapted to a shop other seats buy from (one call per turn)."""

    def __init__(self, task: Task):
        self.task = task
        self.plan = list(task.reference)
        self.hits: dict[str, dict[str, Any]] = {}  # search results seen, by id
        self.seen_price: dict[str, float] = {}  # the price it first saw, by id
        self.cart: dict[str, int] = {
            line["item_id"]: int(line.get("quantity", 1)) for line in task.initial_state["cart"]
        }
        self.lost: list[str] = []  # items sold out under it, told to the customer
        self.gone: set[str] = set()  # every item it gave up (sold out, or no longer shown)
        self.found_by: dict[str, dict[str, Any]] = {}  # the search that showed an item
        self.pending: tuple | None = None  # a substitute to choose once a search is back
        self.ordered: list[dict[str, Any]] = []  # the lines of the order it placed
        self.sent: ToolCall | None = None

    def act(self, observation: list[dict[str, Any]]) -> str:
        for name, result in _tool_results(observation):
            self._read(name, result)
        while self.plan:
            self.sent = self.plan.pop(0)
            item_id = self.sent.arguments.get("item_id", "")
            if self.sent.name == "add_to_cart" and self._unseen(item_id):
                # a search no longer shows it (sold out under the seat): never use an unseen id
                self._replan("add_to_cart", "", told=False)
                continue
            return format_call(self.sent.name, self.sent.arguments)
        return self.final_answer()

    def _unseen(self, item_id: str) -> bool:
        return bool(self.hits) and item_id not in self.hits and item_id not in self.task.prompt

    def _read(self, name: str, result: dict[str, Any]) -> None:
        args = self.sent.arguments if self.sent is not None else {}
        error = result.get("error")
        if error is not None:
            if "stock" in error and name in ("add_to_cart", "checkout"):
                self._replan(name, error)
        elif name == "search":
            for hit in result.get("results", []):
                self.hits[hit["item_id"]] = hit  # stock as last seen
                self.seen_price.setdefault(hit["item_id"], hit["price"])
                self.found_by.setdefault(hit["item_id"], args)
            if self.pending is not None:
                self._substitute(*self.pending)
        elif name == "add_to_cart":
            item_id = args["item_id"]
            self.cart[item_id] = self.cart.get(item_id, 0) + int(args.get("quantity", 1))
        elif name == "remove_from_cart" or (name == "set_quantity" and args["quantity"] == 0):
            self.cart.pop(args["item_id"], None)
        elif name == "set_quantity":
            self.cart[args["item_id"]] = int(args["quantity"])
        elif name == "checkout":
            self.ordered = result["items"]
            self.cart = {}

    def _replan(self, failed: str, error: str, told: bool = True) -> None:
        """The item it wanted is gone: drop it and buy another item its slot accepts (a search
        hit in stock when seen and within the budget; else it searches again for items in
        stock), then go on with the plan."""
        purchase = self.task.goal.purchase
        arguments = self.sent.arguments
        if failed == "add_to_cart":
            lost, quantity = arguments["item_id"], int(arguments.get("quantity", 1))
        else:  # the checkout names the cart line it refused
            lost = next((i for i in self.cart if i in error), None)
            quantity = self.cart.get(lost, 1)
        if lost is None or purchase is None:
            return
        self.gone.add(lost)
        if told:  # what the customer hears about (an item it never saw goes unmentioned)
            self.lost.append(lost)
        removal = []
        if failed == "checkout":
            removal = [ToolCall(name="remove_from_cart", arguments={"item_id": lost})]
        # the reference's own handling of the item (a world event of its task) is moot now
        plan = [
            c
            for c in self.plan
            if not (
                c.name in ("remove_from_cart", "set_quantity") and c.arguments["item_id"] == lost
            )
        ]
        acceptable = set().union(*(s.acceptable for s in purchase.slots if lost in s.acceptable))
        later = [
            k
            for k, c in enumerate(plan)
            if c.name == "add_to_cart" and c.arguments["item_id"] in acceptable
        ]
        if later:  # the plan buys another of the slot's items anyway (its own event's recovery)
            k = later[0]
            if any(c.name == "checkout" for c in plan[k:]):
                # the checkout that event refused would now go through: one order, after it
                plan = [c for c in plan[:k] if c.name != "checkout"] + plan[k:]
            self.plan = [*removal, *plan]
            return
        retry = [ToolCall(name="checkout")] if failed == "checkout" else []
        self.plan = removal
        self._substitute(lost, quantity, acceptable, [*retry, *plan], searched=False)

    def _substitute(
        self, lost: str, quantity: int, acceptable: set[str], then: list[ToolCall], searched: bool
    ) -> None:
        """Add the first option for `lost` before `then`; without one, search once more."""
        self.pending = None
        budget = self.task.goal.purchase.budget
        rest = sum(self._price(i) * q for i, q in self.cart.items() if i != lost)
        options = [
            i
            for i in self.hits
            if i in acceptable
            and i not in self.gone
            and i not in self.cart
            and self.hits[i].get("in_stock")
            and (budget is None or rest + self._price(i) * quantity <= budget)
        ]
        if options:
            add = ToolCall(
                name="add_to_cart", arguments={"item_id": options[0], "quantity": quantity}
            )
            self.plan = [*self.plan, add, *then]
        elif not searched and lost in self.found_by:
            arguments = dict(self.found_by[lost])
            filters = dict(arguments.get("filters") or {})
            arguments.update(filters={**filters, "in_stock": True}, top_k=50)
            self.plan = [*self.plan, ToolCall(name="search", arguments=arguments)]
            self.pending = (lost, quantity, acceptable, then, True)
        # else nothing acceptable is left: tell the customer, buy nothing

    def _price(self, item_id: str) -> float:
        hit = self.hits.get(item_id)
        return float(hit["price"]) if hit else 0.0

    def _name(self, item_id: str) -> str:
        title = self.hits.get(item_id, {}).get("title") or self.task.goal.product_names.get(item_id)
        return f"{title} ({item_id})" if title else item_id

    def final_answer(self) -> str:
        """The reference's final answer when the shop left its plan alone; else what it did,
        what sold out under it and what price changed since it looked."""
        changed = [
            (line, seen)
            for line in self.ordered
            if (seen := self.seen_price.get(line["item_id"])) is not None
            and abs(seen - line["price"]) > 1e-9
        ]
        if not self.gone and not changed:
            return final_answer(self.task)
        sentences = [
            f"Sorry: the {self._name(i)} went out of stock before checkout." for i in self.lost
        ]
        if self.ordered:
            names = " and ".join(f"the {self._name(line['item_id'])}" for line in self.ordered)
            sentences.append(f"I've placed your order for {names}.")
            for line, seen in changed:
                sentences.append(
                    f"Note: the price of the {self._name(line['item_id'])} changed from "
                    f"${seen:.2f} to ${line['price']:.2f} while I was placing your order, "
                    "and the order was charged at the new price."
                )
        elif self.lost:
            sentences.append("Nothing else that fits your request is in stock right now.")
        sentences += [f.say for f in self.task.goal.answer_facts if f.say]
        return " ".join(sentences) or "All done — your request has been taken care of."


class ClaimingSeat:
    """The reference turns played blind: it claims the reference's order whatever happened."""

    def __init__(self, task: Task):
        self.turns = reference_turns(task)

    def act(self, observation: list[dict[str, Any]]) -> str:
        return self.turns.pop(0) if len(self.turns) > 1 else self.turns[0]


class RungSeat:
    """A rung of the scripted ladder (`testing.baseline.LADDER`: the shallow agent with some of
    the skills) at a seat of a shared world: its turns, answered by the seat's observations."""

    def __init__(self, task: Task, catalog: Catalog, skills: frozenset[str]):
        self.turns = ShallowAgent(task, catalog, skills=skills).turns()
        self.last: str | None = None

    def act(self, observation: list[dict[str, Any]]) -> str:
        if self.last is None:
            self.last = next(self.turns)
        else:
            with contextlib.suppress(StopIteration):  # its final message sent: it says it again
                self.last = self.turns.send(observation)
        return self.last


def play(world: SharedWorld, agents: Sequence[Any], max_rounds: int = 64) -> None:
    """Reset `world` and play seeded rounds until every seat is done (each agent's `act`
    gets its seat's last observation)."""
    openings = world.reset()
    observations: dict[int, list[dict[str, Any]]] = {i: [] for i in openings}
    for _ in range(max_rounds):
        live = world.live()
        if not live:
            return
        actions = {i: agents[i].act(observations[i]) for i in live}
        for i, result in world.step(actions).items():
            observations[i] = result.observation
    world.finish()


def substitute_left(world: SharedWorld, index: int) -> bool:
    """Whether the shop left seat `index` a way to serve its customer after it lost items to
    other seats: for every slot of its purchase holding a lost item, another item the slot
    accepts has units left at the end (besides what the seat itself bought of it), and the
    reference's order with it in place costs no more than the budget at catalog prices."""
    seat = world.seats[index]
    purchase = seat.task.goal.purchase
    lost = set(world.lost_items(index)) & set(reference_cart(seat.task))
    if purchase is None or not lost:
        return True
    catalog, sold = world.catalog, world.ledger.sold
    state = seat.env.record.state
    bought = {}
    for order_id in state.new_order_ids:
        for line in state.orders[order_id]["items"]:
            bought[line["item_id"]] = bought.get(line["item_id"], 0) + line["quantity"]
    order = reference_cart(seat.task)
    total = sum(_catalog_price(catalog, i) * q for i, q in order.items() if i not in lost)
    for item_id in lost:
        quantity = order[item_id]
        slots = [s for s in purchase.slots if item_id in s.acceptable]
        fits = [
            i
            for s in slots
            for i in s.acceptable
            if i not in lost
            and i not in order
            and catalog.row_of(i) is not None
            and int(catalog.stock[catalog.row_of(i)]) - sold.get(i, 0) + bought.get(i, 0)
            >= quantity
        ]
        if not fits:
            return False
        total += min(_catalog_price(catalog, i) for i in fits) * quantity
    return purchase.budget is None or total <= purchase.budget + 1e-6


def _catalog_price(catalog: Catalog, item_id: str) -> float:
    return float(catalog.price[catalog.row_of(item_id)])
