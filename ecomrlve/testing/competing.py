"""Shared-world fixtures and scripted seat agents (issue 47; tests and `benchmarks/competing.py`).

* `contended_tasks(catalog, k)`: k purchase tasks, one customer each, that all want the same
  t-shirt first (colour and size fixed, any brand: several acceptable shirts, so a substitute
  exists), and that item (`scarce_item`);
* `ReferenceSeat`: the reference adapted to a shared shop: it plays the task's reference calls,
  and when the item it wants is sold out under it, removes it, buys the next acceptable search
  hit, and tells the customer (and tells a price that changed since it looked);
* `ClaimingSeat`: the task's reference turns played blind, ending with the reference's
  "I've placed your order" whatever happened (what a verifier must not pay for);
* `play(world, agents)`: plays seeded rounds until every seat is done.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ecomrlve.env import Catalog, final_answer, format_call, reference_turns
from ecomrlve.env.shared import SharedWorld
from ecomrlve.tasks import Goal, PurchaseSpec, Slot, Task, ToolCall

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
        self.lost: list[str] = []  # items sold out under it
        self.substitutes: list[str] = []
        self.ordered: list[dict[str, Any]] = []  # the lines of the order it placed
        self.sent: ToolCall | None = None

    def act(self, observation: list[dict[str, Any]]) -> str:
        for name, result in _tool_results(observation):
            self._read(name, result)
        if not self.plan:
            return self.final_answer()
        self.sent = self.plan.pop(0)
        return format_call(self.sent.name, self.sent.arguments)

    def _read(self, name: str, result: dict[str, Any]) -> None:
        if name == "search":
            for hit in result.get("results", []):
                self.hits.setdefault(hit["item_id"], hit)
                self.seen_price.setdefault(hit["item_id"], hit["price"])
        elif name == "checkout" and result.get("ok"):
            self.ordered = result["items"]
        if "error" in result and self.sent is not None and "stock" in result["error"]:
            self._replan(name)

    def _replan(self, failed: str) -> None:
        """The item it wanted is gone: drop it, add the next acceptable hit in stock."""
        cart_item = self.sent.arguments.get("item_id") if failed == "add_to_cart" else None
        lost = cart_item or self._cart_item()
        if lost is None:
            return
        self.lost.append(lost)
        acceptable = set().union(*(s.acceptable for s in self.task.goal.purchase.slots))
        options = [
            i
            for i in self.hits
            if i in acceptable
            and i not in self.lost
            and self.hits[i].get("in_stock")
            and i not in self.substitutes
        ]
        rest = [c for c in self.plan if c.name != "add_to_cart"]
        if failed == "checkout":
            rest = [ToolCall(name="checkout"), *rest]
        removal = (
            []
            if failed == "add_to_cart"
            else [ToolCall(name="remove_from_cart", arguments={"item_id": lost})]
        )
        if not options:  # nothing acceptable left: tell the customer, buy nothing
            self.plan = removal
            return
        self.substitutes.append(options[0])
        add = ToolCall(name="add_to_cart", arguments={"item_id": options[0], "quantity": 1})
        self.plan = [*removal, add, *[c for c in rest]]

    def _cart_item(self) -> str | None:
        for call in reversed(self.task.reference):
            if call.name == "add_to_cart":
                return self.substitutes[-1] if self.substitutes else call.arguments["item_id"]
        return None

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
        if not self.lost and not changed:
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
            sentences.append("Nothing else fitting your request is in stock, so I placed no order.")
        sentences += [f.say for f in self.task.goal.answer_facts if f.say]
        return " ".join(sentences) or "All done — your request has been taken care of."


class ClaimingSeat:
    """The reference turns played blind: it claims the reference's order whatever happened."""

    def __init__(self, task: Task):
        self.turns = reference_turns(task)

    def act(self, observation: list[dict[str, Any]]) -> str:
        return self.turns.pop(0) if len(self.turns) > 1 else self.turns[0]


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
