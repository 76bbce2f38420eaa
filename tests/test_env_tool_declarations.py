"""A write tool is one decorated method: a toy `gift_wrap(order_id)` is added here, in this
module only, and the env, the milestones, the verifier's goal and claim checks and the reference
all know it.

Its declaration (`Writes`, `ecomrlve/env/shop/writes.py`) names its action kind and words, how a
call of it becomes a done action, the end state its goal needs and the reference's sentence;
`@tool` names its milestone rule.
Nothing else in the package is edited; `add_tool` / `remove_tool` register it for one test.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from typing import Any

import pytest

from ecomrlve.config import EnvConfig
from ecomrlve.env import (
    EcomEnv,
    format_call,
    reference_turns,
    system_prompt,
    tool_schemas,
    verify,
)
from ecomrlve.env.episode.reference import final_answer
from ecomrlve.env.judge.claims import ACTION_KINDS
from ecomrlve.env.shop import tools
from ecomrlve.env.shop.milestones import GoalSets, Milestone
from ecomrlve.env.shop.state import WorldState
from ecomrlve.env.shop.tools import ToolKind, add_tool, remove_tool, tool
from ecomrlve.env.shop.writes import Action, ActionKind, Writes
from ecomrlve.tasks import Goal, Task, ToolCall
from ecomrlve.testing import env_tasks as fx

CONFIG = EnvConfig(max_steps=16)


# ---- the toy tool: everything it needs, in one place ------------------------------------------
def wrapped(p: GoalSets, arguments: dict[str, Any], result: dict[str, Any]) -> list[Milestone]:
    """Its milestone: an order the goal is about, gift-wrapped."""
    order = arguments.get("order_id")
    return [("wrapped", order)] if order in p.orders else []


def wrapped_as_asked(task: Task, initial: dict[str, Any], state: WorldState) -> list[str]:
    """Its goal: the orders the reference wraps are wrapped at the end, and no other."""
    wanted = {c.arguments["order_id"] for c in task.reference if c.name == "gift_wrap"}
    done = {order_id for order_id, order in state.orders.items() if order.get("gift_wrap")}
    return [f"goal: order {o} was not gift-wrapped" for o in sorted(wanted - done)] + [
        f"goal: order {o} was gift-wrapped but should not be" for o in sorted(done - wanted)
    ]


GIFT_WRAP = Writes(
    ActionKind("gift_wrap", verbs=("wrap", "gift-wrap"), nouns=("gift wrap", "gift wrapping")),
    done=lambda args, state, nth: Action("gift_wrap", frozenset({args["order_id"]})),
    say=lambda ref, args: f"I've wrapped order {args['order_id']} as a gift.",
    goal_check=wrapped_as_asked,
)


@tool(ToolKind.WRITE, milestone=wrapped, writes=GIFT_WRAP)
def gift_wrap(self: tools.ShopTools, order_id: str) -> dict[str, Any]:
    """Gift-wrap every item of an order that has not shipped yet.

    Args:
        order_id: the order's id.
    """
    order = self._order(order_id)
    if order["status"] not in ("pending", "processing"):
        raise tools.RuleError(f"order {order_id} is {order['status']}; it can't be wrapped now")
    order["gift_wrap"] = True
    self.state.version += 1
    return {"ok": True, "order_id": order_id, "gift_wrap": True}


@pytest.fixture
def toy() -> Iterator[None]:
    add_tool(gift_wrap)
    try:
        yield
    finally:
        remove_tool("gift_wrap")


WRAPPED = {"order_id": "O1001"}


# ---- a task that asks for it --------------------------------------------------------------------
def wrap_task(catalog):
    """The cancel fixture's customer, asking to gift-wrap the processing order O1001."""
    base = fx.cancel_task(catalog)
    reference = [ToolCall(name="list_orders"), ToolCall(name="gift_wrap", arguments=WRAPPED)]
    return base.model_copy(
        update={
            "task_id": "fx-gift-wrap",
            "prompt": "Could you gift-wrap my jacket order? It's a present.",
            "goal": Goal(relevant_ids=["O1001"]),
            "reference": reference,
            "min_steps": 2,
        }
    )


def play(task, catalog, turns: list[str]):
    env = EcomEnv(task, catalog, CONFIG)
    env.reset()
    result = None
    for turn in turns:
        result = env.step(turn)
    assert result is not None and result.done
    return env, result.info["verdict"]


LIST = format_call("list_orders", {})
WRAP = format_call("gift_wrap", WRAPPED)


def test_its_schema_is_listed_and_it_runs_and_changes_the_state(toy, catalog) -> None:
    names = [s["function"]["name"] for s in tool_schemas()]
    assert names[-1] == "gift_wrap" and "gift_wrap" in tools.WRITE_TOOLS
    schema = tool_schemas()[-1]["function"]
    assert schema["parameters"]["required"] == ["order_id"]
    assert schema["description"] == "Gift-wrap every item of an order that has not shipped yet."
    task = wrap_task(catalog)
    assert '"name": "gift_wrap"' in system_prompt(task)  # the prompt's tools section lists it
    env = EcomEnv(task, catalog, CONFIG)
    env.reset()
    env.step(LIST)
    shown = json.loads(env.step(WRAP).observation[0]["content"])
    assert shown == {"ok": True, "order_id": "O1001", "gift_wrap": True}
    assert env.record.state.orders["O1001"]["gift_wrap"] is True
    refused = json.loads(
        env.step(format_call("gift_wrap", {"order_id": "O1002"})).observation[0]["content"]
    )
    assert refused["code"] == "not_allowed"  # O1002 has shipped
    # its milestone: the order the goal is about, wrapped (the refused call earns nothing)
    assert [c.milestones for c in env.record.calls] == [1, 1, 0]
    assert ("wrapped", "O1001") in env.progress.reached


def test_a_final_message_claiming_it_passes_when_done_and_fails_when_not(toy, catalog) -> None:
    task = wrap_task(catalog)
    claim = "I've wrapped order O1001 as a gift."
    _, done = play(task, catalog, [LIST, WRAP, claim])
    assert done.success, done.violations
    _, not_done = play(task, catalog, [LIST, claim])
    assert not not_done.success
    assert "goal: order O1001 was not gift-wrapped" in not_done.violations  # its goal check
    assert any(
        v.startswith("claims: reports a gift_wrap that was not done") for v in not_done.violations
    ), not_done.violations
    # denying it after doing it is untrue too
    _, denied = play(task, catalog, [LIST, WRAP, "I didn't wrap order O1001."])
    assert any(v.startswith("claims: denies a gift_wrap") for v in denied.violations), (
        denied.violations
    )


def test_the_reference_says_it_and_verifies(toy, catalog) -> None:
    task = wrap_task(catalog)
    assert final_answer(task) == "I've wrapped order O1001 as a gift."
    verdict = verify(task, reference_turns(task), catalog, CONFIG)
    assert verdict.success, verdict.violations


def test_removing_it_leaves_the_shop_as_it_was(catalog) -> None:
    task = wrap_task(catalog)
    before = (tools.TOOL_SCHEMAS_JSON, [k.name for k in ACTION_KINDS], system_prompt(task))
    add_tool(gift_wrap)
    assert "gift_wrap" in [k.name for k in ACTION_KINDS]
    with pytest.raises(ValueError, match="duplicate tool"):
        add_tool(gift_wrap)
    remove_tool("gift_wrap")
    assert (tools.TOOL_SCHEMAS_JSON, [k.name for k in ACTION_KINDS], system_prompt(task)) == before
    assert not hasattr(tools.ShopTools, "gift_wrap")
    with pytest.raises(ValueError, match="no tool added"):
        remove_tool("cancel_order")
    # a kind named like one of the reader's own is refused, and nothing of the tool stays
    refund = dataclasses.replace(GIFT_WRAP, action=ActionKind("refund", verbs=("wrap",)))

    @tool(ToolKind.WRITE, milestone=wrapped, writes=refund)
    def refund_wrap(self: tools.ShopTools, order_id: str) -> dict[str, Any]:
        """Wrap an order as a refund.

        Args:
            order_id: the order's id.
        """
        return {"ok": True}

    with pytest.raises(ValueError, match="reader's own"):
        add_tool(refund_wrap)
    assert not hasattr(tools.ShopTools, "refund_wrap") and "refund_wrap" not in tools.TOOL_SPECS
    assert (tools.TOOL_SCHEMAS_JSON, [k.name for k in ACTION_KINDS], system_prompt(task)) == before


def test_a_write_tool_without_a_declaration_is_refused() -> None:
    with pytest.raises(TypeError, match="writes=Writes"):
        tool(ToolKind.WRITE, milestone=wrapped)(lambda self: {})
    with pytest.raises(TypeError, match="writes=Writes"):
        tool(ToolKind.READ, milestone=wrapped, writes=GIFT_WRAP)(lambda self: {})
