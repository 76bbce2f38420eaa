"""Each tool's milestone rule: which goal milestones one successful call of it reaches.

A tool names its rule next to its method (`@tool(ToolKind.READ, milestone=milestones.search)`
in `tools.py`); `tools.tool` refuses a tool without one, so a new tool cannot silently earn no
step bonus. `progress.Progress` dispatches through `TOOL_SPECS[name].milestone` and keeps the
episode's bookkeeping (what was already reached, which reads the reference uses).

A rule is `rule(progress, arguments, result) -> list[Milestone]`; it reads the goal sets that
`Progress` builds once per goal, as `GoalSets` names them (`parts`, `needed_items`,
`relevant_items`, `orders`, `policies`, `shown`). The milestones:

========================  ==================================================================
milestone                 earned by
========================  ==================================================================
``("shown", part)``       `search` / `get_product` showing an item of an acceptable set
                          (purchase slot k, the recommendation set, exchange k's variants)
``("item", id)``          `get_product` of an item the goal needs, or a search showing the
                          item the request is about
``("orders",)``           `list_orders` when the goal is about existing orders
``("order", id)``         `get_order` of an order the goal is about
``("policy", id)``        `search_policy` retrieving a policy row the request needs
``("asked",)``            `ask_user` that gets a detail of the goal from the customer
``("cart-viewed",)``      `view_cart` when the goal changes an existing cart
``("cart", k)``           an item of purchase slot k put in the cart (add / set quantity)
``("removed", id)``       an item the order must not contain removed from the cart
``("checkout",)``         a checkout when the goal is a purchase
``("cancel", id)`` …      a cancellation, return or exchange the goal asks for
``("recommend",)``        a recommendation whose ids are all acceptable
========================  ==================================================================
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

Milestone = tuple[str, ...]


class GoalSets(Protocol):
    """What a rule reads of an episode's goal (`progress.Progress` provides it): the acceptable
    id sets by milestone part, the items the goal needs and the request is about, the orders and
    policy rows it is about, and which parts a list of shown ids reaches."""

    @property
    def parts(self) -> list[tuple[Milestone, frozenset[str]]]: ...
    @property
    def needed_items(self) -> frozenset[str]: ...
    @property
    def relevant_items(self) -> frozenset[str]: ...
    @property
    def orders(self) -> frozenset[str]: ...
    @property
    def policies(self) -> frozenset[str]: ...
    def shown(self, ids: list[str]) -> list[Milestone]: ...


MilestoneRule = Callable[[GoalSets, dict[str, Any], dict[str, Any]], list[Milestone]]


# ---- reads (they count only when the reference solution uses the tool) ------------------------
def search(p: GoalSets, arguments: dict[str, Any], result: dict[str, Any]) -> list[Milestone]:
    ids = [r["item_id"] for r in result.get("results", ())]
    # the product the request is about (e.g. the sold-out original of a substitution)
    shown = p.shown(ids)
    if shown:  # one search, one milestone: the relevant item is then one of those shown
        return shown
    return [("item", i) for i in ids if i in p.relevant_items][:1]


def get_product(p: GoalSets, arguments: dict[str, Any], result: dict[str, Any]) -> list[Milestone]:
    item = arguments.get("item_id")
    variants = [v["item_id"] for v in result.get("variants", ())]
    out = p.shown([item, *variants])
    if item in p.needed_items:
        out.append(("item", item))
    return out


def list_orders(p: GoalSets, arguments: dict[str, Any], result: dict[str, Any]) -> list[Milestone]:
    listed = {o["order_id"] for o in result.get("orders", ())}
    return [("orders",)] if listed & p.orders else []


def get_order(p: GoalSets, arguments: dict[str, Any], result: dict[str, Any]) -> list[Milestone]:
    order = arguments.get("order_id")
    return [("order", order)] if order in p.orders else []


def search_policy(
    p: GoalSets, arguments: dict[str, Any], result: dict[str, Any]
) -> list[Milestone]:
    wanted = p.policies
    return [
        ("policy", row["policy_id"])
        for row in result.get("policies", ())
        if row["policy_id"] in wanted
    ]


def ask_user(p: GoalSets, arguments: dict[str, Any], result: dict[str, Any]) -> list[Milestone]:
    answer = str(result.get("answer", "")).lower()
    told = any(v and v.lower() in answer for v in p.goal.user_facts.values())
    return [("asked",)] if told else []


def view_cart(p: GoalSets, arguments: dict[str, Any], result: dict[str, Any]) -> list[Milestone]:
    return [("cart-viewed",)] if p.task.initial_state.get("cart") else []


# ---- writes ------------------------------------------------------------------------------------
def cart_slot(p: GoalSets, arguments: dict[str, Any], result: dict[str, Any]) -> list[Milestone]:
    """`add_to_cart` / `set_quantity`: the purchase slots the item fills."""
    item = arguments.get("item_id")
    return [("cart", part[1]) for part, s in p.parts if part[0] == "slot" and item in s]


def remove_from_cart(
    p: GoalSets, arguments: dict[str, Any], result: dict[str, Any]
) -> list[Milestone]:
    item = arguments.get("item_id")
    in_slots = any(item in s for part, s in p.parts if part[0] == "slot")
    return [] if in_slots or p.goal.purchase is None else [("removed", str(item))]


def checkout(p: GoalSets, arguments: dict[str, Any], result: dict[str, Any]) -> list[Milestone]:
    return [("checkout",)] if p.goal.purchase is not None else []


def cancel_order(p: GoalSets, arguments: dict[str, Any], result: dict[str, Any]) -> list[Milestone]:
    order = arguments.get("order_id")
    return [("cancel", order)] if order in p.goal.cancel else []


def return_item(p: GoalSets, arguments: dict[str, Any], result: dict[str, Any]) -> list[Milestone]:
    key = (arguments.get("order_id"), arguments.get("item_id"))
    wanted = {(r.order_id, r.item_id) for r in p.goal.returns}
    return [("return", *key)] if key in wanted else []


def exchange_item(
    p: GoalSets, arguments: dict[str, Any], result: dict[str, Any]
) -> list[Milestone]:
    key = (arguments.get("order_id"), arguments.get("item_id"))
    new_item = arguments.get("new_item_id")
    ok = any(
        (e.order_id, e.item_id) == key and new_item in e.acceptable_new for e in p.goal.exchanges
    )
    return [("exchange", *key)] if ok else []


def recommend(p: GoalSets, arguments: dict[str, Any], result: dict[str, Any]) -> list[Milestone]:
    spec = p.goal.recommend
    ids = arguments.get("item_ids") or []
    return [("recommend",)] if spec and all(i in spec.acceptable for i in ids) else []
