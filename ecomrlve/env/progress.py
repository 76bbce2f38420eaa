"""Goal milestones: which tool calls move an episode toward its goal (what `step_bonus` pays).

A call earns credit only for milestones derived from the goal, each at most once per episode:

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

Read milestones count only for tools the reference solution itself uses, so a read the task
does not need (a search in an order-status task, a policy look-up in a cart task) earns
nothing; failed and repeated calls earn nothing (the reward charges them as waste). A read of
an item or order the goal is not about earns nothing and costs nothing (a cost would point at
the right candidate).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar

from ecomrlve.env.catalog import Catalog
from ecomrlve.env.state import WorldState
from ecomrlve.tasks import Task

Milestone = tuple[str, ...]
_T = TypeVar("_T")


class cached_property(Generic[_T]):  # a drop-in for functools.cached_property
    """`functools.cached_property` without its lock: before Python 3.12 every first access
    takes one RLock shared by all instances, which a Progress pays a few times per episode."""

    def __init__(self, fn: Callable[[Any], _T]):
        self.fn = fn
        self.name = fn.__name__
        self.__doc__ = fn.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return self
        value = obj.__dict__[self.name] = self.fn(obj)
        return value


class Progress:
    """The milestones of one episode; `credit` returns how many a call newly reached."""

    def __init__(self, task: Task, catalog: Catalog | None = None):
        self.task = task
        self.catalog = catalog
        self.goal = task.goal
        self.reference_tools = frozenset(call.name for call in task.reference)
        self.reached: set[Milestone] = set()

    # ---- goal sets, built on first use (acceptable sets can hold ~1,500 ids) -----------------
    @cached_property
    def _parts(self) -> list[tuple[Milestone, frozenset[str]]]:
        return self.goal.derived("milestone_parts", self._build_parts)

    def _build_parts(self) -> list[tuple[Milestone, frozenset[str]]]:
        goal = self.goal
        parts: list[tuple[Milestone, frozenset[str]]] = []
        parts += [(("slot", str(k)), ids) for k, ids in enumerate(goal.slot_sets())]
        if goal.recommend:
            parts.append((("rec",), frozenset(goal.recommend.acceptable)))
        parts += [
            (("exch", str(k)), frozenset(e.acceptable_new)) for k, e in enumerate(goal.exchanges)
        ]
        return parts  # fmt: skip

    @cached_property
    def _ids(self) -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
        """(items the goal needs, items the request is about, orders the goal is about): they
        depend on the goal and on which ids are orders in the initial state, so they are kept
        per Goal for each set of initial orders (rebuilt per episode, they walked every
        relevant id: up to ~1,500)."""
        orders = self._initial_orders
        return self.goal.derived(("ids", orders), lambda: self._build_ids(orders))

    def _build_ids(
        self, initial_orders: frozenset[str]
    ) -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
        goal = self.goal
        relevant = frozenset(i for i in goal.relevant_ids if i not in initial_orders)
        needed = {r.item_id for r in goal.returns} | {e.item_id for e in goal.exchanges}
        needed.update(relevant)
        for _, acceptable in self._parts:
            needed.update(acceptable)
        orders = set(goal.cancel) | {r.order_id for r in goal.returns}
        orders |= {e.order_id for e in goal.exchanges}
        orders.update(i for i in goal.relevant_ids if i in initial_orders)
        return frozenset(needed), relevant, frozenset(orders)

    @property
    def _needed_items(self) -> frozenset[str]:
        return self._ids[0]

    @property
    def _relevant_items(self) -> frozenset[str]:
        return self._ids[1]

    @property
    def _orders(self) -> frozenset[str]:
        return self._ids[2]

    @cached_property
    def _policies(self) -> frozenset[str]:
        """The policy rows the request needs; for tasks written before `relevant_policies`,
        the top row of each of the reference's own policy searches."""
        if self.goal.relevant_policies or self.catalog is None:
            return frozenset(self.goal.relevant_policies)
        from ecomrlve.env.tools import policy_search  # tools -> catalog; no cycle at import

        top = set()
        for call in self.task.reference:
            if call.name == "search_policy":
                found = policy_search(self.catalog, str(call.arguments.get("query", "")))
                top.update(p["policy_id"] for p in found[:1])
        return frozenset(top)

    @cached_property
    def _initial_orders(self) -> frozenset[str]:
        return frozenset(o["order_id"] for o in self.task.initial_state.get("orders", []))

    def _shown(self, ids: list[str]) -> list[Milestone]:
        return [part for part, acceptable in self._parts if not acceptable.isdisjoint(ids)]

    # ---- credit --------------------------------------------------------------------------------
    def credit(
        self, name: str, arguments: dict[str, Any], result: dict[str, Any], state: WorldState
    ) -> int:
        """Milestones newly reached by one successful, non-repeated call."""
        reached = self._milestones(name, arguments, result, state)
        new = [m for m in dict.fromkeys(reached) if m not in self.reached]
        self.reached.update(new)
        return len(new)

    def _milestones(
        self, name: str, arguments: dict[str, Any], result: dict[str, Any], state: WorldState
    ) -> list[Milestone]:
        goal = self.goal
        if name in READ_MILESTONES:
            if name not in self.reference_tools:
                return []
            return READ_MILESTONES[name](self, arguments, result)
        if name in ("add_to_cart", "set_quantity"):
            item = arguments.get("item_id")
            return [("cart", p[1]) for p, s in self._parts if p[0] == "slot" and item in s]
        if name == "remove_from_cart":
            item = arguments.get("item_id")
            in_slots = any(item in s for p, s in self._parts if p[0] == "slot")
            return [] if in_slots or goal.purchase is None else [("removed", str(item))]
        if name == "checkout":
            return [("checkout",)] if goal.purchase is not None else []
        if name == "cancel_order":
            order = arguments.get("order_id")
            return [("cancel", order)] if order in goal.cancel else []
        if name == "return_item":
            key = (arguments.get("order_id"), arguments.get("item_id"))
            wanted = {(r.order_id, r.item_id) for r in goal.returns}
            return [("return", *key)] if key in wanted else []
        if name == "exchange_item":
            key = (arguments.get("order_id"), arguments.get("item_id"))
            new_item = arguments.get("new_item_id")
            ok = any(
                (e.order_id, e.item_id) == key and new_item in e.acceptable_new
                for e in goal.exchanges
            )
            return [("exchange", *key)] if ok else []
        if name == "recommend":
            spec = goal.recommend
            ids = arguments.get("item_ids") or []
            return [("recommend",)] if spec and all(i in spec.acceptable for i in ids) else []
        return []

    def _search(self, arguments: dict[str, Any], result: dict[str, Any]) -> list[Milestone]:
        ids = [r["item_id"] for r in result.get("results", ())]
        # the product the request is about (e.g. the sold-out original of a substitution)
        shown = self._shown(ids)
        if shown:  # one search, one milestone: the relevant item is then one of those shown
            return shown
        return [("item", i) for i in ids if i in self._relevant_items][:1]

    def _get_product(self, arguments: dict[str, Any], result: dict[str, Any]) -> list[Milestone]:
        item = arguments.get("item_id")
        variants = [v["item_id"] for v in result.get("variants", ())]
        out = self._shown([item, *variants])
        if item in self._needed_items:
            out.append(("item", item))
        return out

    def _list_orders(self, arguments: dict[str, Any], result: dict[str, Any]) -> list[Milestone]:
        listed = {o["order_id"] for o in result.get("orders", ())}
        return [("orders",)] if listed & self._orders else []

    def _get_order(self, arguments: dict[str, Any], result: dict[str, Any]) -> list[Milestone]:
        order = arguments.get("order_id")
        return [("order", order)] if order in self._orders else []

    def _search_policy(self, arguments: dict[str, Any], result: dict[str, Any]) -> list[Milestone]:
        wanted = self._policies
        return [
            ("policy", p["policy_id"])
            for p in result.get("policies", ())
            if p["policy_id"] in wanted
        ]

    def _ask_user(self, arguments: dict[str, Any], result: dict[str, Any]) -> list[Milestone]:
        answer = str(result.get("answer", "")).lower()
        told = any(v and v.lower() in answer for v in self.goal.user_facts.values())
        return [("asked",)] if told else []

    def _view_cart(self, arguments: dict[str, Any], result: dict[str, Any]) -> list[Milestone]:
        return [("cart-viewed",)] if self.task.initial_state.get("cart") else []


READ_MILESTONES = {
    "search": Progress._search,
    "get_product": Progress._get_product,
    "list_orders": Progress._list_orders,
    "get_order": Progress._get_order,
    "search_policy": Progress._search_policy,
    "ask_user": Progress._ask_user,
    "view_cart": Progress._view_cart,
}
