"""`LeakScanner`: checks everything the agent can observe against the hidden goal, with the
provenance a real shop would give each id it shows; `goal_decoy` swaps a goal's hidden parts."""

from __future__ import annotations

import json
import re
from typing import Any

import numpy as np

from ecomrlve.env import Catalog, EcomEnv, goal_ids
from ecomrlve.env.judge.facts import spellings
from ecomrlve.tasks import Goal, Task
from ecomrlve.testing.fuzzer import _mark_big_ints

# ---- the leak scanner ----------------------------------------------------------------------------

ITEM_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")
_DIGIT = re.compile(r"\d")


hidden_ids = goal_ids  # (item ids, order ids) of a goal: what must not leak


def _alternative_in(alternative: str, text: str) -> bool:
    pattern = r"(?<![A-Za-z0-9])" + re.escape(alternative.lower()) + r"(?![A-Za-z0-9])"
    return re.search(pattern, text.lower()) is not None


class LeakScanner:
    """Flags what an observation shows without the provenance a real shop would give it.

    * The opening (system prompt + the user's request) holds no catalog item id, no order id
      of the world or the goal, and no answer fact the agent must find out.
    * A simulated-user message (ask_user answers, the intent-switch message) holds no catalog
      item id at all, no goal order id that no tool has shown yet, and no answer fact.
    * A tool result shows an id only with a reason: the agent named it (an echo, e.g. of its
      own arguments), or it is what the tool shows in a real shop — search results that pass
      the call's filters (checked against `Catalog.filter_mask`), the variants of the product
      asked for, the cart's lines, the customer's orders and their lines, a new order's id.
      Refused calls may echo only ids of their own arguments or ids already shown.
    Every flagged message names the id and whether it is part of the hidden goal.
    """

    def __init__(self, task: Task, catalog: Catalog, prompt_may_name_ids: bool = False):
        self.task = task
        self.catalog = catalog
        self.prompt_may_name_ids = prompt_may_name_ids  # hand-made fixtures such as fx-world
        user = task.initial_state.get("user", {})
        self.saved_cards = list(user.get("payment_methods", []))
        self.address = user.get("address")
        self.hidden_items, self.hidden_orders = hidden_ids(task.goal)
        self.facts = [
            alternative
            for fact in task.goal.answer_facts
            for alternative in spellings(fact)
            if _DIGIT.search(alternative) or len(alternative) >= 8
        ]
        self.shown: set[str] = set()  # ids shown with a reason (or named by the agent)
        self.agent_said: set[str] = set()

    # ---- what counts as an id -------------------------------------------------------------------
    def _order_ids(self, env: EcomEnv | None) -> set[str]:
        ids = {o["order_id"] for o in self.task.initial_state.get("orders", [])}
        if env is not None:
            ids.update(env.record.state.orders)
        return ids | self.hidden_orders

    def ids_in(self, text: str, env: EcomEnv | None = None) -> set[str]:
        orders = self._order_ids(env)
        return {t for t in ITEM_TOKEN.findall(text) if t in self.catalog or t in orders}

    def _label(self, token: str) -> str:
        hidden = token in self.hidden_items or token in self.hidden_orders
        return f"{token} ({'hidden goal id' if hidden else 'id'})"

    # ---- the opening ----------------------------------------------------------------------------
    def scan_opening(self, messages: list[dict[str, Any]]) -> list[str]:
        problems = []
        for message in messages:
            text = str(message.get("content", ""))
            where = f"{message.get('role')} prompt"
            for token in sorted(self.ids_in(text)) if not self.prompt_may_name_ids else ():
                problems.append(f"{where} names {self._label(token)}")
            if message.get("role") == "system":
                text = text.split("# Tools", 1)[0]  # schemas hold examples, not facts
            for fact in self.facts:
                # the profile shows the address on file and the saved cards, as a real shop
                # does; where an order went (gifts ship elsewhere) and which card paid for it
                # stay open unless there is only one card
                if message.get("role") == "system" and (
                    fact == self.address or (fact in self.saved_cards and len(self.saved_cards) > 1)
                ):
                    continue
                if _alternative_in(fact, text):
                    problems.append(f"{where} states the answer fact {fact!r}")
            self.agent_said |= self.ids_in(text)  # whatever is there counts as shown later
        return problems

    # ---- one turn --------------------------------------------------------------------------------
    def _user_message(self, text: str, where: str, env: EcomEnv) -> list[str]:
        problems = []
        for token in sorted(self.ids_in(text, env)):
            if token in self.catalog:
                problems.append(f"{where} names the item id {self._label(token)}")
            elif token in self.hidden_orders and token not in self.shown:
                problems.append(f"{where} names the order id {self._label(token)}")
        for fact in self.facts:
            if _alternative_in(fact, text):
                problems.append(f"{where} states the answer fact {fact!r}")
        return problems

    def _legit(self, name: str, arguments: dict[str, Any], content: dict, env: EcomEnv) -> set:
        """Ids that a real shop's `name` result may show for these arguments and this state."""
        state = env.record.state
        if name == "search":
            results = content.get("results", [])
            mask = self.catalog.filter_mask(arguments.get("filters"))
            return {
                r["item_id"]
                for r in results
                if r.get("item_id") in self.catalog and mask[self.catalog.row_of(r["item_id"])]
            }
        if name == "get_product":
            row = self.catalog.row_of(arguments.get("item_id", ""))
            if row is None:
                return set()
            return {self.catalog.item_ids[r] for r in self.catalog.family_rows(row)}
        if name in ("view_cart", "add_to_cart", "set_quantity", "remove_from_cart"):
            # the cart as it was at any point of the turn: its initial lines, lines the agent
            # added (named by the agent anyway) and what is there now
            return set(state.cart) | {line["item_id"] for line in env.record.initial["cart"]}
        if name in ("list_orders", "get_order", "checkout", "cancel_order"):
            ids: set[str] = set()
            for order in state.orders.values():
                ids.add(order["order_id"])
                ids.update(line["item_id"] for line in order["items"])
            ids.update(r["new_item_id"] for r in state.returns if r.get("new_item_id"))
            return ids
        return set()

    def scan_turn(
        self, turn: Any, observation: list[dict[str, Any]], calls: list, env: EcomEnv
    ) -> list[str]:
        """Check one step's observation; `calls` are the calls the env ran in it, in order."""
        problems: list[str] = []
        turn_text = turn if isinstance(turn, str) else json.dumps(_mark_big_ints(turn), default=str)
        said = self.ids_in(turn_text, env)
        self.agent_said |= said
        tool_messages = [m for m in observation if m.get("role") == "tool"]
        for k, message in enumerate(tool_messages):
            content = json.loads(message["content"])
            text = message["content"]
            if k < len(calls):
                call = calls[k]
                name, arguments = call.name, call.arguments
                own = self.ids_in(json.dumps(arguments, default=str), env)
            else:  # a format error of this turn
                name, arguments, own = "format", {}, said
            if name == "ask_user" and "answer" in content:
                problems += self._user_message(content["answer"], "ask_user answer", env)
                continue
            allowed = own | self.shown | self.agent_said
            if "error" not in content:
                allowed = allowed | self._legit(name, arguments, content, env)
            for token in sorted(self.ids_in(text, env) - allowed):
                kind = "error" if "error" in content else "result"
                problems.append(f"{name} {kind} shows {self._label(token)} without a reason")
            if "error" not in content:
                self.shown |= self.ids_in(text, env) & allowed
        for message in observation:
            if message.get("role") == "user":
                problems += self._user_message(str(message["content"]), "user message", env)
        return problems


def goal_decoy(task: Task, catalog: Catalog, seed: int = 0) -> Task:
    """`task` with every hidden part of its goal swapped for other values (other acceptable
    ids, targets, answer facts, relevant ids) — what the user knows stays the same.

    Everything the agent observes must be identical on both: tool results and errors depend
    only on the world and the arguments, never on the goal.
    """
    rng = np.random.default_rng(seed)

    def other_ids(ids: list[str]) -> list[str]:
        n = max(1, len(ids))
        rows = rng.choice(catalog.size, size=min(n, 5), replace=False)
        return [catalog.item_ids[int(r)] for r in rows]

    goal = task.goal
    orders = [o["order_id"] for o in task.initial_state.get("orders", [])]
    data = goal.model_dump()
    if goal.purchase:
        for slot in data["purchase"]["slots"]:
            slot["acceptable"] = other_ids(slot["acceptable"])
        data["purchase"]["budget"] = 1.0
    if goal.recommend:
        data["recommend"]["acceptable"] = other_ids(goal.recommend.acceptable)
    data["cancel"] = [o for o in orders if o not in goal.cancel][:1]
    data["returns"] = []
    data["exchanges"] = [
        {**spec, "acceptable_new": other_ids(spec["acceptable_new"])} for spec in data["exchanges"]
    ]
    decoy = "decoy fact 12345"
    data["answer_facts"] = [{"kind": "text", "value": decoy, "alternatives": [decoy]}]
    data["relevant_ids"] = other_ids(goal.relevant_ids)
    return task.model_copy(update={"goal": Goal.model_validate(data), "reference": []})
