"""What the episode did: the writes that succeeded (`succeeded_actions`) and what was already
so at the start (`standing_actions`), as `Action`s a claim is checked against."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ecomrlve.env.record import EpisodeRecord


@dataclass(frozen=True, slots=True)
class Action:
    """One write that succeeded: its kind and the orders and products it touched."""

    kind: str
    orders: frozenset[str] = frozenset()
    items: frozenset[str] = frozenset()


def succeeded_actions(record: EpisodeRecord) -> list[Action]:
    """The writes of `record` that succeeded, as `Action`s (the last `recommend` only)."""
    state = record.state
    new_orders = iter(state.new_order_ids)
    actions: list[Action] = []
    for call in record.calls:
        if not call.ok:
            continue
        args = call.arguments or {}
        name = call.name
        if name == "checkout":
            order_id = next(new_orders, None)
            if order_id is not None:
                items = frozenset(line["item_id"] for line in state.orders[order_id]["items"])
                actions.append(Action("order", frozenset({order_id}), items))
        elif name == "add_to_cart":
            actions.append(Action("add", items=frozenset({args["item_id"]})))
        elif name == "remove_from_cart":
            actions.append(Action("remove", items=frozenset({args["item_id"]})))
        elif name == "set_quantity":
            kind = "remove" if args.get("quantity") == 0 else "quantity"
            actions.append(Action(kind, items=frozenset({args["item_id"]})))
        elif name == "cancel_order":
            order = state.orders[args["order_id"]]
            items = frozenset(line["item_id"] for line in order["items"])
            actions.append(Action("cancel", frozenset({args["order_id"]}), items))
        elif name in ("return_item", "exchange_item"):
            items = {args["item_id"]}
            if name == "exchange_item":
                items.add(args["new_item_id"])
            kind = "return" if name == "return_item" else "exchange"
            actions.append(Action(kind, frozenset({args["order_id"]}), frozenset(items)))
    if record.recommended:
        actions.append(Action("recommend", items=frozenset(record.recommended)))
    return actions


def standing_actions(record: EpisodeRecord) -> list[Action]:
    """What was already so at the start: cancelled orders, returns and exchanges on file (a
    third-person status sentence about them is true)."""
    initial = record.initial
    out = []
    for order in initial["orders"]:
        items = frozenset(line["item_id"] for line in order["items"])
        # "your order O1 was placed on May 3" (only when the order is named: `check_claims`)
        out.append(Action("order", frozenset({order["order_id"]}), items))
        if order["status"] == "cancelled":
            out.append(Action("cancel", frozenset({order["order_id"]}), items))
    for entry in initial.get("returns", []) or []:
        items = {entry["item_id"]} | ({entry["new_item_id"]} if entry.get("new_item_id") else set())
        out.append(Action(entry["kind"], frozenset({entry["order_id"]}), frozenset(items)))
    return out
