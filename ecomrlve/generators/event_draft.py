"""`EventDraft`: a task's reference and world events while `generators/events.py` and
`generators/talk.py` rewrite them (its own module so that both import it and not each other)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ecomrlve.tasks import Task, ToolCall, WorldEvent

if TYPE_CHECKING:
    from ecomrlve.generators.context import GenContext


class EventDraft:
    """The reference and events being rewritten; insertions shift the events after them."""

    def __init__(self, task: Task, ctx: GenContext, allow_decline: bool = True):
        self.task = task
        self.ctx = ctx
        self.reference = [
            ToolCall(name=c.name, arguments=dict(c.arguments)) for c in task.reference
        ]
        self.events: list[WorldEvent] = []
        self.names = dict(task.goal.product_names)
        self.core_calls = list(task.core_calls or ())
        self.allow_decline = allow_decline
        self.prompt = task.prompt  # a held-back detail rewrites it (`generators/talk.py`)
        self.goal = task.goal.model_copy(deep=True)  # a change of mind rewrites the purchase

    def insert(self, position: int, calls: list[ToolCall]) -> None:
        """Insert event-handling `calls` (no core steps) at `position`."""
        self.reference[position:position] = calls
        for event in self.events:
            if event.after_calls >= position:
                event.after_calls += len(calls)
        self.core_calls = [c + len(calls) if c >= position else c for c in self.core_calls]

    def remove(self, position: int, core_instead: int) -> None:
        """Remove reference call `position` (a write the customer no longer wants); a core step
        passes to call `core_instead` (the question that settled it: the plan's core steps
        stay as many)."""
        if position in self.core_calls:
            self.core_calls.append(core_instead)
        del self.reference[position]
        for event in self.events:
            if event.after_calls > position:
                event.after_calls -= 1
        self.core_calls = sorted(c - (c > position) for c in self.core_calls if c != position)

    def title(self, item_id: str) -> str:
        row = self.ctx.catalog.row_of(item_id)
        return self.ctx.titles[row] if row is not None else item_id

    def price(self, item_id: str) -> float:
        return float(self.ctx.catalog.price[self.ctx.catalog.row_of(item_id)])

    def purchase_points(self) -> list[tuple[int, int]]:
        """(add_to_cart index, index of the checkout after it) pairs of the reference."""
        points = []
        for a, call in enumerate(self.reference):
            if call.name != "add_to_cart":
                continue
            later = [
                c for c in range(a + 1, len(self.reference)) if self.reference[c].name == "checkout"
            ]
            if later:
                points.append((a, later[0]))
        return points

    def cart_at(self, index: int) -> dict[str, int]:
        """The cart just before reference call `index`."""
        cart = {
            line["item_id"]: line["quantity"] for line in self.task.initial_state.get("cart", [])
        }
        for call in self.reference[:index]:
            args = call.arguments
            if call.name == "add_to_cart":
                cart[args["item_id"]] = cart.get(args["item_id"], 0) + int(args.get("quantity", 1))
            elif call.name == "remove_from_cart":
                cart.pop(args["item_id"], None)
            elif call.name == "set_quantity":
                if int(args["quantity"]) == 0:
                    cart.pop(args["item_id"], None)
                else:
                    cart[args["item_id"]] = int(args["quantity"])
            elif call.name == "checkout":
                cart = {}
        return cart

    def within_budget(self, cart: dict[str, int], prices: dict[str, float]) -> bool:
        purchase = self.goal.purchase
        if purchase is None or purchase.budget is None:
            return True
        total = sum(prices.get(i, self.price(i)) * q for i, q in cart.items())
        return total <= purchase.budget + 1e-6
