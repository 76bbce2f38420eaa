"""A scripted shallow agent: what a model that does not think would do with a task.

It knows the gist of the request (it plays the kinds of tool call the reference plays, in the
same order: a model reads "return the jacket" and calls `list_orders` then `return_item`), but
at every point where the reference had to think, it takes the shallow option:

* **no clarifying questions**: `ask_user` calls are skipped, and a search keeps only the
  filters whose value the prompt spells out as words of their own (category and `in_stock`
  always; size "M" is not spelled by "I'm");
* **first search hit**: a product id (`get_product`, `add_to_cart`, `recommend`) is the first
  result(s) of the latest search; an exchange takes the first other in-stock variant that
  `get_product` listed;
* **first lexical match**: an order is the listed order whose item titles share the most words
  with the prompt (ties: the first listed, i.e. the newest), a line of it the same way; each
  further order the reference names takes the best remaining one. Dates are not compared;
* **no retries**: a call that fails is not sent again (the reference's retry of a transient
  failure is skipped);
* **no arithmetic**: the final message reports what it did (`reference.final_answer` over its
  own calls) and states only the facts it can copy: a fact whose value appears in the prompt or
  a tool result, yes/no verdicts only when the answer is "yes" (the happy path), and of a
  conditional request ("if I sent it back, the refund; if not, the price") the happy branch
  whatever the world decided (the price, never checking the order's returns);
* **its own picks**: what it says about an order it took another order for (the first lexical
  match was not the one meant) is what it saw of that other order, so the facts and the world
  events of the order meant are not stated (a twin order's card, a cancel that shipped).

`play_baseline` returns the verdict and how many times the baseline departed from the
reference (`reasoning_operations`: the decisions that needed more than the shallow option:
questions asked, ids chosen other than the shallow pick, facts that had to be computed, calls
retried). `benchmarks/difficulty.py` plays it against the reference on generated tasks.

**The ladder** (issue 44, item 5): the same agent with skills (`SKILLS`) that each replace a
shallow option by the reference's choice, added one at a time (`LADDER`, `play_rung`):

* `history`: the order (and line) meant, not the best word match; the variant an exchange
  wants; a product read off an order; filter values the tool results spelled (a past size);
* `asks`: asks the reference's questions (and confirmations), and searches with the filter
  values the customer's replies spelled; without it, what only a reply tells is not known (a
  changed quantity, a "no" to a price past the budget: the first wish is bought);
* `arithmetic`: every filter (a deadline as a day count, a budget), the product the
  reference compared its way to (a price band, a budget), and every fact, computed ones (a
  total, a cost net of a refund or a gift card), "no" verdicts and the branch a condition
  took included;
* `events`: sends a call that failed for a transient reason again.

Each rung has the skills of the ones below it; the reference above them all.
"""

from __future__ import annotations

import json
import re
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

from ecomrlve.config import EnvConfig
from ecomrlve.env import Catalog, EcomEnv, Verdict, final_answer, format_call
from ecomrlve.generators.reasoning import late_fact, returned_before
from ecomrlve.tasks import AnswerFact, Task, ToolCall, WorldEvent

_WORD = re.compile(r"[a-z0-9]+")
# filters the baseline always keeps: the gist of the request
_GIST_FILTERS = frozenset({"category", "in_stock"})
_PRODUCT_CALLS = frozenset({"get_product", "add_to_cart"})

SKILLS: tuple[str, ...] = ("history", "asks", "arithmetic", "events")
# the ladder's rungs below the reference: name -> skills (each rung's are the ones below it too)
LADDER: tuple[tuple[str, frozenset[str]], ...] = tuple(
    (name, frozenset(SKILLS[:k]))
    for k, name in enumerate(
        ("shallow", "+ history look-ups", "+ asks and confirms", "+ arithmetic", "+ handles events")
    )
)


@dataclass
class BaselineResult:
    verdict: Verdict
    calls: list[ToolCall]
    answer: str
    reasoning_operations: int


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def _spelled(value: str, prompt: str) -> bool:
    """Whether `value` stands in the (lowercased) prompt as words of its own: size "M" is not
    spelled by "I'm" or "medium", colour "red" not by "ordered"."""
    pattern = rf"(?<![a-z0-9']){re.escape(value.lower())}(?![a-z0-9])"
    return re.search(pattern, prompt) is not None


def _number_words(value: float) -> set[str]:
    return {str(int(value))} if float(value).is_integer() else {f"{value:g}", str(value)}


class ShallowAgent:
    """One episode of the shallow policy on `task` (see the module docstring)."""

    def __init__(
        self,
        task: Task,
        catalog: Catalog,
        config: EnvConfig | None = None,
        skills: frozenset[str] = frozenset(),
    ):
        unknown = set(skills) - set(SKILLS)
        if unknown:
            raise ValueError(f"unknown skills {sorted(unknown)}; known: {', '.join(SKILLS)}")
        self.skills = skills
        self.told = ""  # the customer's replies (lowercased)
        self.order_lines: set[str] = set()  # item ids of the order lines shown
        self.task = task
        self.catalog = catalog
        self.config = config  # of the env `play` opens (a seat's turns need none)
        self.prompt = task.prompt.lower()
        self.prompt_words = _words(task.prompt)
        self.hits: list[str] = []  # item ids of the latest search, in order
        self.variants: list[dict[str, Any]] = []  # the latest get_product's variants
        self.orders: list[dict[str, Any]] = []  # the latest list_orders, newest first
        self.order_map: dict[str, str] = {}  # reference order id -> the baseline's
        self.shown: list[str] = [task.prompt]
        self.refusals: list[str] = []  # the errors of refused calls
        self.calls: list[ToolCall] = []  # the calls that worked, as played
        self.text: str | None = None  # the final message, once played
        self.departures = 0
        # a conditional demand (`reasoning.late_fact`): its fact, and whether the world took
        # the branch a shallow agent does not check for (the item went back: the refund)
        self.branch = late_fact(task, "branch")
        self.branch_turned = self.branch is not None and returned_before(task, self.branch.subject)

    # ---- choices --------------------------------------------------------------------------------
    def _filter_spelled(self, key: str, value: Any) -> bool:
        if key in _GIST_FILTERS:
            return True
        if isinstance(value, bool):
            return False
        if "arithmetic" in self.skills:
            return True
        said = [self.prompt]
        if "asks" in self.skills:
            said.append(self.told)
        if "history" in self.skills:
            said += [text.lower() for text in self.shown[1:]]
        if isinstance(value, int | float):
            return any(_number_words(float(value)) & _words(text) for text in said)
        return any(_spelled(str(value), text) for text in said)

    def _search(self, arguments: dict[str, Any]) -> dict[str, Any]:
        filters = arguments.get("filters") or {}
        kept = {k: v for k, v in filters.items() if self._filter_spelled(k, v)}
        self.departures += len(filters) - len(kept)
        return {**arguments, "filters": kept} if filters else dict(arguments)

    def _overlap(self, order: dict[str, Any]) -> int:
        titles = " ".join(line.get("title", "") for line in order["items"])
        return len(_words(titles) & self.prompt_words)

    def _line_overlap(self, line: dict[str, Any]) -> int:
        return len(_words(line.get("title", "")) & self.prompt_words)

    def _order(self, reference_id: str) -> str:
        if "history" in self.skills:
            return reference_id
        if reference_id.lower() in self.prompt or not self.orders:
            return reference_id  # named in the prompt, or never listed: nothing to pick from
        mapped = self.order_map.get(reference_id)
        if mapped is None:
            taken = set(self.order_map.values())
            free = [o for o in self.orders if o["order_id"] not in taken] or self.orders
            best = max(free, key=self._overlap)  # max keeps the first of ties
            mapped = self.order_map[reference_id] = best["order_id"]
        return mapped

    def _order_line(self, order_id: str, reference_item: str) -> str:
        if "history" in self.skills:
            return reference_item
        for order in self.orders:
            if order["order_id"] == order_id:
                best = max(order["items"], key=self._line_overlap)
                return best["item_id"]
        return reference_item

    def adapt(self, call: ToolCall) -> dict[str, Any] | None:
        """The baseline's arguments for the reference's `call` (None: it skips the call)."""
        name, args = call.name, dict(call.arguments)
        if name == "ask_user":
            if "asks" in self.skills:
                return args
            self.departures += 1
            return None
        if name == "search":
            return self._search(args)
        if name in _PRODUCT_CALLS and self.hits and not self._knows(str(args["item_id"])):
            args["item_id"] = self.hits[0]
        elif name == "recommend" and self.hits and "arithmetic" not in self.skills:
            args["item_ids"] = self.hits[: len(args["item_ids"])]
        if "order_id" in args:
            reference_order = args["order_id"]
            args["order_id"] = self._order(reference_order)
            if name in ("return_item", "exchange_item"):
                args["item_id"] = self._order_line(args["order_id"], args["item_id"])
        if name == "exchange_item" and "history" not in self.skills:
            others = [
                v["item_id"] for v in self.variants
                if v["item_id"] != args["item_id"] and v.get("in_stock")
            ]  # fmt: skip
            if others:
                args["new_item_id"] = others[0]
        if args != call.arguments:
            self.departures += 1
        return args

    def _knows(self, item_id: str) -> bool:
        """Whether the agent takes the reference's product, not the first search hit: named in
        the prompt, compared its way to (`arithmetic`), or read off an order (`history`)."""
        if item_id.lower() in self.prompt or "arithmetic" in self.skills:
            return True
        return "history" in self.skills and item_id in self.order_lines

    def observe(self, name: str, result: dict[str, Any]) -> None:
        self.shown.append(json.dumps(result))
        if name == "ask_user":
            self.told += " " + json.dumps(result).lower()
        for order in result.get("orders", [result] if "order_id" in result else []):
            self.order_lines.update(str(line.get("item_id")) for line in order.get("items", []))
        if name == "search":
            self.hits = [r["item_id"] for r in result.get("results", [])]
        elif name == "get_product":
            self.variants = result.get("variants", [])
        elif name == "list_orders":
            self.orders = result.get("orders", [])
            self.hits = []  # the products now in view are the orders' lines

    # ---- the answer -----------------------------------------------------------------------------
    def _mistaken(self, order_id: str) -> bool:
        """Whether the baseline took another order for `order_id`."""
        return self.order_map.get(order_id, order_id) != order_id

    def _saw(self, event: WorldEvent) -> bool:
        """Whether what the baseline was shown tells an order's shipping (it tells nothing it
        never saw: the cancel a shop rule refused first shows no status)."""
        if event.kind != "order_shipped":
            return True
        for text in self.shown[1:]:  # results, after the prompt
            result = json.loads(text)
            for order in [result, *result.get("orders", [])] if isinstance(result, dict) else []:
                if order.get("order_id") == event.order_id and order.get("status") == "shipped":
                    return True
        return any(f"order {event.order_id} is shipped" in text for text in self.refusals)

    def _copyable(self, fact: AnswerFact) -> bool:
        if self._mistaken(fact.subject):
            return False
        if "arithmetic" in self.skills:
            return True
        if fact is self.branch and self.branch_turned:
            return False  # it states the price paid, as if the item had never gone back
        if fact.kind == "verdict":
            return fact.value.endswith(":yes")
        value = fact.value.lower()
        spellings = {value, value.replace("-", " to ")} if fact.kind == "duration" else {value}
        return any(v in text.lower() for text in self.shown for v in spellings)

    def answer(self, calls: list[ToolCall]) -> str:
        goal = self.task.goal
        facts = [f for f in goal.answer_facts if self._copyable(f)]
        self.departures += len(goal.answer_facts) - len(facts)
        names = dict(goal.product_names)
        for call in calls:
            for key in ("item_id", "new_item_id", "item_ids"):
                value = call.arguments.get(key)
                for item_id in value if isinstance(value, list) else [value]:
                    row = self.catalog.row_of(item_id) if isinstance(item_id, str) else None
                    if row is not None:
                        names[item_id] = self.catalog.title(row)
        events = [
            e
            for e in self.task.events
            if not (e.order_id and self._mistaken(e.order_id)) and self._saw(e)
        ]
        self.departures += len(self.task.events) - len(events)
        own = self.task.model_copy(
            update={
                "reference": calls,
                "goal": goal.model_copy(update={"answer_facts": facts, "product_names": names}),
                "events": events,
            }
        )
        return final_answer(own)

    # ---- the episode ----------------------------------------------------------------------------
    def unasked(self, reference: list[ToolCall]) -> list[ToolCall]:
        """The reference as an agent that does not ask plays its gist: what only the customer's
        answer told (`generators/talk.py`: a changed quantity; a rise past the budget turned
        down) is not known, so the first wish is bought."""
        if "asks" in self.skills:
            return list(reference)
        mind = {e.item_id for e in self.task.events if e.kind == "change_of_mind"}
        calls = [
            c for c in reference
            if not (c.name == "set_quantity" and c.arguments.get("item_id") in mind)
        ]  # fmt: skip
        if any(e.declined for e in self.task.events) and not any(
            c.name == "checkout" for c in calls
        ):
            calls.append(ToolCall(name="checkout"))
        return calls

    def turns(self) -> Generator[str, list[dict[str, Any]], None]:
        """The agent's turns, one at a time: each tool call it yields is answered by `send`ing
        the observation back; the last turn it yields is its final message (`self.calls` then
        holds the calls that worked, `self.text` the message). Played on its own env by
        `play`, or as a seat of a shared world (`testing.competing.RungSeat`)."""
        reference = self.unasked(self.task.reference)
        for k, call in enumerate(reference):
            retry = k and call == reference[k - 1]  # the reference retrying a transient failure
            if retry and "events" not in self.skills:
                self.departures += 1
                continue
            arguments = self.adapt(call)
            if arguments is None:
                continue
            observation = yield format_call(call.name, arguments)
            message = next(m for m in observation if m.get("role") == "tool")
            result = json.loads(message["content"])
            if "error" in result:
                self.refusals.append(result["error"])
                continue  # no retry
            self.observe(call.name, result)
            self.calls.append(ToolCall(name=call.name, arguments=arguments))
        self.text = self.answer(self.calls)
        yield self.text

    def play(self) -> BaselineResult:
        env = EcomEnv(self.task, self.catalog, self.config)
        env.reset()
        turns = self.turns()
        turn = next(turns)
        while turn is not self.text:
            step = env.step(turn)
            if env.done:
                break
            turn = turns.send(step.observation)
        if self.text is None:  # cut by the turn limit: what it would have said
            self.text = self.answer(self.calls)
        verdict = env.finish() if env.done else env.step(self.text).info["verdict"]
        return BaselineResult(verdict, self.calls, self.text, self.departures)


def play_baseline(task: Task, catalog: Catalog, config: EnvConfig | None = None) -> BaselineResult:
    """Play the shallow baseline on `task`; its verdict, calls, answer and departures."""
    return ShallowAgent(task, catalog, config).play()


def play_rung(
    task: Task, catalog: Catalog, skills: frozenset[str], config: EnvConfig | None = None
) -> BaselineResult:
    """Play the shallow agent with `skills` (a `LADDER` rung's) on `task`."""
    return ShallowAgent(task, catalog, config, skills).play()
