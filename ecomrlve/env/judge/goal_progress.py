"""Goal milestones: which tool calls move an episode toward its goal (what `step_bonus` pays).

A call earns credit only for milestones derived from the goal, each at most once per episode.
Which milestones a call reaches is its tool's rule, declared next to the tool's method
(`@tool(..., milestone=milestones.search)`; the rules and the table of milestones are in
`ecomrlve/env/shop/milestones.py`); this module keeps the goal sets the rules read and the episode's
bookkeeping.

Read milestones count only for tools the reference solution itself uses, so a read the task
does not need (a search in an order-status task, a policy look-up in a cart task) earns
nothing; failed and repeated calls earn nothing (the reward charges them as waste). A read of
an item or order the goal is not about earns nothing and costs nothing (a cost would point at
the right candidate).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar

from ecomrlve.env.shop.milestones import Milestone
from ecomrlve.env.shop.products import Catalog
from ecomrlve.env.shop.state import WorldState
from ecomrlve.env.shop.tools import TOOL_SPECS, ToolKind, policy_search
from ecomrlve.tasks import Task

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

    # ---- goal sets (`milestones.GoalSets`), built on first use (acceptable sets can hold
    # ~1,500 ids) ----------------------------------------------------------------------------
    @cached_property
    def parts(self) -> list[tuple[Milestone, frozenset[str]]]:
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
        for _, acceptable in self.parts:
            needed.update(acceptable)
        orders = set(goal.cancel) | {r.order_id for r in goal.returns}
        orders |= {e.order_id for e in goal.exchanges}
        orders.update(i for i in goal.relevant_ids if i in initial_orders)
        return frozenset(needed), relevant, frozenset(orders)

    @property
    def needed_items(self) -> frozenset[str]:
        return self._ids[0]

    @property
    def relevant_items(self) -> frozenset[str]:
        return self._ids[1]

    @property
    def orders(self) -> frozenset[str]:
        return self._ids[2]

    @cached_property
    def policies(self) -> frozenset[str]:
        """The policy rows the request needs; for tasks written before `relevant_policies`,
        the top row of each of the reference's own policy searches."""
        if self.goal.relevant_policies or self.catalog is None:
            return frozenset(self.goal.relevant_policies)
        top = set()
        for call in self.task.reference:
            if call.name == "search_policy":
                found = policy_search(self.catalog, str(call.arguments.get("query", "")))
                top.update(p["policy_id"] for p in found[:1])
        return frozenset(top)

    @cached_property
    def _initial_orders(self) -> frozenset[str]:
        return frozenset(o["order_id"] for o in self.task.initial_state.get("orders", []))

    def shown(self, ids: list[str]) -> list[Milestone]:
        return [part for part, acceptable in self.parts if not acceptable.isdisjoint(ids)]

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
        spec = TOOL_SPECS.get(name)
        if spec is None or (spec.kind is ToolKind.READ and name not in self.reference_tools):
            return []
        return spec.milestone(self, arguments, result)
