"""What the episode did: the writes that succeeded (`succeeded_actions`) and what was already
so at the start (`standing_actions`), as `Action`s a claim is checked against. Each write tool
says what a successful call of it did (`Writes.done`, declared beside it in
`ecomrlve.env.shop.tools`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ecomrlve.env.shop import tools
from ecomrlve.env.shop.writes import Action

if TYPE_CHECKING:
    from ecomrlve.env.world.record import EpisodeRecord

__all__ = ["Action", "standing_actions", "succeeded_actions"]


def succeeded_actions(record: EpisodeRecord) -> list[Action]:
    """The writes of `record` that succeeded, as `Action`s (of an answer such as `recommend`,
    the last only, after the others)."""
    state = record.state
    actions: list[Action] = []
    answers: dict[str, Action] = {}  # an answer's last action, by tool
    earlier: dict[str, int] = {}  # successful calls so far, by tool
    for call in record.calls:
        spec = tools.TOOL_SPECS.get(call.name) if call.ok else None
        if spec is None or spec.writes is None:
            continue
        nth = earlier.get(call.name, 0)
        earlier[call.name] = nth + 1
        action = spec.writes.done(call.arguments or {}, state, nth)
        if action is None:
            continue
        if spec.writes.answer:
            answers.pop(call.name, None)
            answers[call.name] = action
        else:
            actions.append(action)
    return actions + list(answers.values())


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
