"""`EcomEnv`: one episode of a task, Gymnasium-like, for training loops and humans alike.

    env = EcomEnv(task, Catalog.load("data"))
    messages = env.reset()                 # [system prompt with tool schemas, user's request]
    result = env.step('<tool_call>\\n{"name": "view_cart", "arguments": {}}\\n</tool_call>')
    result.observation                     # [{"role": "tool", "name": "view_cart", ...}]
    result = env.step("Your cart is empty.")   # no tool call: final answer, done=True
    result.reward, result.info["verdict"]

A step is one assistant turn: it may carry several tool calls (at most `MAX_CALLS_PER_TURN`),
all run in order. The episode ends at the first turn with no tool call attempt or when the
turn limit `turn_limit(task, config)` is reached: the reference solution plus its final answer,
plus room for care (`config.turn_slack`, default 2: a clarifying question and a confirmation;
one turn more for a retry when the shop changes during the episode), never under
`config.max_steps`. Malformed output never raises: each problem
becomes a tool message for the agent and a format violation for the reward. The reward is 0 on
intermediate steps and the verifier's reward at the end.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Container
from dataclasses import dataclass, field
from typing import Any

import orjson

from ecomrlve.config import EnvConfig
from ecomrlve.env.episode.parser import FormatError, ParsedCall, parse_turn
from ecomrlve.env.episode.user import INTENT_SWITCH_TURN, SimulatedUser
from ecomrlve.env.judge.goal_progress import Progress
from ecomrlve.env.judge.verifier import Verdict, judge
from ecomrlve.env.shop import tools as shop_tools
from ecomrlve.env.shop.products import Catalog
from ecomrlve.env.shop.state import WorldState, normalised_initial_state
from ecomrlve.env.shop.tools import (
    ID_ARGUMENTS,
    TOOL_SPECS,
    VISIBLE_TOKEN,
    ShopTools,
    ToolKind,
    tool_schemas,
)
from ecomrlve.env.world.events import WorldEvents
from ecomrlve.env.world.record import CallRecord, EpisodeRecord
from ecomrlve.tasks import Goal, Task

MAX_CALLS_PER_TURN = 8
_JSON_KEY = json.JSONEncoder(sort_keys=True, default=str).encode
_JSON_CONTENT = json.JSONEncoder(ensure_ascii=False).encode


def _content(result: dict[str, Any]) -> str:
    """A tool result as JSON text: orjson (≈10x faster), json for what orjson refuses."""
    try:
        return orjson.dumps(result).decode()
    except TypeError:  # orjson.JSONEncodeError: e.g. an integer beyond 64 bits echoed back
        return _JSON_CONTENT(result)


def _arguments_key(arguments: dict[str, Any]) -> str:
    try:
        return orjson.dumps(arguments, option=orjson.OPT_SORT_KEYS).decode()
    except TypeError:
        return _JSON_KEY(arguments)


@dataclass(slots=True)
class StepResult:
    observation: list[dict[str, Any]]
    reward: float
    done: bool
    info: dict[str, Any] = field(default_factory=dict)


# --------------------------------------------------------------------------------------------
# prompts
# --------------------------------------------------------------------------------------------

SYSTEM_TEMPLATE = """You are the shopping assistant of an online store. Help the customer by \
calling the store's tools; never guess product or order ids — use only ids that you have seen \
in the conversation or in tool results.

Today is {today}. The customer is {name} ({membership} member); address on file: {address}; \
saved payment methods: {payments}.

Call tools with one or more blocks like
<tool_call>
{{"name": "search", "arguments": {{"query": "running shoes", "filters": {{"size": "42"}}}}}}
</tool_call>
Each reply may contain several tool calls; their results come back to you. When the request is \
complete, reply to the customer without any tool call: that reply is your final answer and ends \
the conversation. State the facts the customer asked for in it."""
# said when the task's shop has the `confirm_writes` rule (issue 44)
CONFIRM_RULE = """

Shop rule: before placing an order, cancelling an order, or starting a return or exchange, ask \
the customer to confirm it (ask_user) and wait for their explicit yes; without it the store \
refuses the action."""

TOOLS_SECTION = """

# Tools

You may call one or more functions to assist with the user query.

You are provided with function signatures within <tools></tools> XML tags:
<tools>
{schemas}
</tools>"""


@functools.lru_cache(maxsize=2)
def _tools_text(schemas_json: str) -> str:
    """The tools section for the schemas `tools.TOOL_SCHEMAS_JSON` holds (a tool added at run
    time, `tools.add_tool`, changes them)."""
    schemas = json.loads(schemas_json)
    return TOOLS_SECTION.format(
        schemas="\n".join(json.dumps(s, ensure_ascii=False) for s in schemas)
    )


def system_prompt(task: Task, include_tools: bool = True) -> str:
    """The system message: the role, today's date, the customer profile and (by default) the
    tool schemas in Qwen3's `<tools>` layout. Pass `include_tools=False` when the chat template
    renders `tools=` itself."""
    initial = normalised_initial_state(task.initial_state)
    return _system_text(initial, include_tools, confirm_rule(task))


def confirm_rule(task: Task) -> bool:
    """Whether the task's shop needs the customer's yes before a committing write."""
    return any(event.kind == "confirm_writes" for event in task.events)


def _system_text(initial: dict[str, Any], include_tools: bool, confirm: bool = False) -> str:
    user = initial["user"]
    return _system_text_of(
        initial["today"],
        user["name"],
        user["membership"],
        user["address"],
        tuple(user["payment_methods"]),
        include_tools,
        confirm,
    )


@functools.lru_cache(maxsize=4096)
def _system_text_of(
    today: str,
    name: str,
    membership: str,
    address: str,
    payments: tuple[str, ...],
    tools: bool,
    confirm: bool = False,
) -> str:
    """The system text of one customer profile: ~12 us to format with the tool schemas, so
    the episodes of a task (a rollout group, replays) build it once."""
    text = SYSTEM_TEMPLATE.format(
        today=today,
        name=name or "a customer",
        membership=membership,
        address=address or "none",
        payments=", ".join(payments) or "none",
    )
    if confirm:
        text += CONFIRM_RULE
    return text + _tools_text(shop_tools.TOOL_SCHEMAS_JSON) if tools else text


shop_tools.ON_TOOLS_CHANGED.append(_system_text_of.cache_clear)


@functools.lru_cache(maxsize=4096)
def _visible_tokens(prompt: str) -> frozenset[str]:
    """Every id-shaped token of a prompt (the ids an agent may use without a tool showing
    them); ~12 us for a prompt, built once for the episodes of a task."""
    return frozenset(VISIBLE_TOKEN.findall(prompt))


def initial_messages(task: Task, include_tools: bool = True) -> list[dict[str, Any]]:
    """[system, user] messages that open an episode of `task`."""
    return [
        {"role": "system", "content": system_prompt(task, include_tools)},
        {"role": "user", "content": task.prompt},
    ]


def goal_ids(goal: Goal) -> tuple[set[str], set[str]]:
    """(item ids, order ids) the goal holds: acceptance sets, targets, relevant ids (an id
    starting with "O" is an order's)."""
    items: set[str] = set()
    orders: set[str] = set(goal.cancel)
    if goal.purchase:
        for slot in goal.purchase.slots:
            items.update(slot.acceptable)
    if goal.recommend:
        items.update(goal.recommend.acceptable)
    for spec in goal.returns:
        orders.add(spec.order_id)
        items.add(spec.item_id)
    for spec in goal.exchanges:
        orders.add(spec.order_id)
        items.add(spec.item_id)
        items.update(spec.acceptable_new)
    for value in goal.relevant_ids:
        (orders if value.startswith("O") else items).add(value)
    return items, orders


def needed_ids(task: Task) -> frozenset[str]:
    """Ids whose use counts as on-task: the goal's ids (`goal_ids`) and the reference's."""
    items, orders = goal_ids(task.goal)
    ids = items | orders
    for call in task.reference:
        ids.update(_call_ids(call.arguments))
    return frozenset(ids)


class NeededIds:
    """Lazy membership in `needed_ids(task)`: acceptance sets can hold thousands of ids, so
    building a set per episode would dominate replay; the few ids an episode uses are looked
    up in the goal's lists on demand (and memoised)."""

    def __init__(self, task: Task):
        goal = task.goal
        small: set[str] = set(goal.cancel)
        for spec in goal.returns:
            small.update((spec.order_id, spec.item_id))
        for spec in goal.exchanges:
            small.update((spec.order_id, spec.item_id))
        for call in task.reference:
            small.update(_call_ids(call.arguments))
        self._small = small
        lists = [goal.relevant_ids]
        if goal.purchase:
            lists.extend(slot.acceptable for slot in goal.purchase.slots)
        if goal.recommend:
            lists.append(goal.recommend.acceptable)
        lists.extend(spec.acceptable_new for spec in goal.exchanges)
        self._lists = lists
        self._memo: dict[str, bool] = {}

    def __contains__(self, item: object) -> bool:
        if item in self._small:
            return True
        found = self._memo.get(item)  # type: ignore[arg-type]
        if found is None:
            found = any(item in ids for ids in self._lists)
            self._memo[item] = found  # type: ignore[index]
        return found


def _call_ids(arguments: dict[str, Any]) -> list[str]:
    ids: list[str] = []
    if not arguments:
        return ids
    for key in ID_ARGUMENTS:
        if key not in arguments:
            continue
        value = arguments[key]
        if isinstance(value, str):
            ids.append(value)
        elif isinstance(value, list):
            ids.extend(v for v in value if isinstance(v, str))
    return ids


def _not_in(ids: list[str], known: Container[str]) -> tuple[str, ...]:
    """The ids not in `known`, in order; one id (the usual call) without a comprehension."""
    if len(ids) == 1:
        return () if ids[0] in known else (ids[0],)
    return tuple([i for i in ids if i not in known])


def turn_limit(task: Task, config: EnvConfig) -> int:
    """The turns an episode of `task` may take: `config.max_steps`, or the reference's calls,
    its answer and `config.turn_slack` turns of care (+1 for a retry where the shop changes)
    when that is more. A 3-call task under `max_steps` 6 keeps 6 turns."""
    retry = 1 if task.events else 0
    return max(config.max_steps, task.min_steps + 1 + config.turn_slack + retry)


# --------------------------------------------------------------------------------------------
# the environment
# --------------------------------------------------------------------------------------------


class EcomEnv:
    """One task's episode. `reset()` starts (or restarts) it; `step()` plays one turn."""

    def __init__(
        self,
        task: Task,
        catalog: Catalog,
        config: EnvConfig | None = None,
        *,
        transcript: bool = True,
    ):
        """`transcript=False` plays without rendering anything for an agent: no messages are
        kept and steps return empty observations, while the record, the end state and the
        verdict are the same (what `verify` needs; it saves a third of a replayed step)."""
        self.task = task
        self.transcript = transcript
        self.catalog = catalog
        self.config = config or EnvConfig()
        self.max_turns = turn_limit(task, self.config)
        self._initial = normalised_initial_state(task.initial_state)
        self._needed = NeededIds(task)
        self._prompt_ids = _visible_tokens(task.prompt)
        self.record: EpisodeRecord | None = None
        self.messages: list[dict[str, Any]] = []
        self.done = True

    # ---- Gymnasium-like API -------------------------------------------------------------------
    def tool_schemas(self) -> list[dict[str, Any]]:
        """Tool schemas in OpenAI format (for `tools=` of a chat template)."""
        return tool_schemas()

    def reset(self, include_tools: bool = True) -> list[dict[str, Any]]:
        """Start the episode afresh; return the opening messages [system, user]."""
        state = WorldState(self._initial)
        self.record = EpisodeRecord(initial=self._initial, state=state)
        self.seen_ids: set[str] = set(self._prompt_ids)
        self.user = SimulatedUser(self.task, self.catalog.__contains__)
        self.tools = ShopTools(
            self.catalog,
            state,
            max_quantity=self.config.max_quantity_per_item,
            ask_user=self.user.answer,
            seen_ids=self.seen_ids,
        )
        self.tools.confirmed = lambda: self.user.confirmed
        self._done_keys: dict[tuple[str, str], int] = {}
        # the shop's changes during the episode (issue 29); None for a static shop
        self.world = (
            WorldEvents(self.task.events, self.tools, self.record) if self.task.events else None
        )
        self.progress = Progress(self.task, self.catalog)
        self.done = False
        self.verdict: Verdict | None = None
        if not self.transcript:
            return []
        self.messages = [
            {
                "role": "system",
                "content": _system_text(self._initial, include_tools, confirm_rule(self.task)),
            },
            {"role": "user", "content": self.task.prompt},
        ]
        return [dict(m) for m in self.messages]

    def step(self, action: str | dict[str, Any]) -> StepResult:
        """Play one assistant turn (raw text or message object); never raises on bad output."""
        if self.record is None:
            self.reset()
        if self.done:
            return StepResult([], 0.0, True, {"error": "the episode is over; call reset()"})
        record = self.record
        record.turns += 1
        turn = record.turns
        parsed = parse_turn(action)
        transcript = self.transcript
        if transcript:
            self.messages.append(_assistant_message(action, parsed))
        errors: list[FormatError] = list(parsed.errors)
        calls = parsed.calls
        if len(calls) > MAX_CALLS_PER_TURN:
            errors.append(
                FormatError(
                    f"too many tool calls in one turn ({len(calls)}); only the first "
                    f"{MAX_CALLS_PER_TURN} were run",
                )
            )
            calls = calls[:MAX_CALLS_PER_TURN]
        if errors:
            record.malformed_turns += 1
            record.format_errors.extend((turn, str(e)) for e in errors)
        observation: list[dict[str, Any]] = []
        for call in calls:
            message = self._run(turn, call)
            if transcript:
                observation.append(message)
        for error in errors if transcript else ():
            observation.append(
                _tool_message(
                    error.tool if error.tool in TOOL_SPECS else "format_error",
                    {"error": f"format: {error}", "code": "format"},
                )
            )
        if not calls and not parsed.attempted:
            record.final_answer = parsed.content
            observation = []
            self.done = True
        elif turn >= self.max_turns:
            record.truncated = True
            self.done = True
        elif turn >= INTENT_SWITCH_TURN and not self.user.intent_revealed:
            text = self.user.reveal_intent()
            self.seen_ids.update(VISIBLE_TOKEN.findall(text))
            record.shown.append(text)
            if transcript:
                observation.append({"role": "user", "content": text})
        if transcript:
            self.messages.extend(observation)
        info: dict[str, Any] = {"turn": turn, "tool_calls": len(record.calls)}
        if errors:
            info["format_errors"] = [str(e) for e in errors]
        reward = 0.0
        if self.done:
            verdict = self._judge()
            reward = verdict.reward
            info["verdict"] = verdict
            info["truncated"] = record.truncated
        return StepResult(observation, reward, self.done, info)

    def finish(self) -> Verdict:
        """End the episode now (e.g. a token budget cut it) and return its `Verdict`.

        An episode that is already done returns the verdict it got; otherwise it is judged as
        truncated, with no final answer — exactly what `verify` gives for the same turns.
        """
        if self.record is None:
            self.reset()
        if self.verdict is not None:
            return self.verdict
        self.record.truncated = True
        self.done = True
        return self._judge()

    def _judge(self) -> Verdict:
        self.record.recommended = self.tools.recommended
        self.verdict = judge(self.task, self.record, self.config, self.catalog)
        return self.verdict

    # ---- internals ----------------------------------------------------------------------------
    def _run(self, turn: int, call: ParsedCall) -> dict[str, Any] | None:
        """Run one call and record it; its tool message (None without a transcript)."""
        record = self.record
        spec = TOOL_SPECS[call.name]
        args_key = _arguments_key(call.arguments) if call.arguments else "{}"
        key = (call.name, args_key)
        version = record.state.version
        previous = self._done_keys.get(key)
        # a write repeated is always a repeat; a read only while the state is unchanged
        write = spec.kind is ToolKind.WRITE
        repeat = previous is not None if write else previous == version
        ids = _call_ids(call.arguments)
        # off-task ids cost only in writes: charging a read of a wrong candidate would tell
        # the policy which candidate is right (the penalty would leak the hidden goal)
        unseen = _not_in(ids, self.seen_ids) if ids else ()
        irrelevant = _not_in(ids, self._needed) if ids and write else ()
        world = self.world
        fault = world.before_call(len(record.calls), call.name, call.arguments) if world else None
        refused = False
        if fault is None:
            yes_before = self.user.confirmed
            ok, result = self.tools.call(call.name, call.arguments)
            if self.user.confirmed > yes_before:  # the customer said yes to this question
                record.confirmations.append(len(record.calls))
            for fact in self.user.told.difference(record.told):  # what this answer told first
                record.told[fact] = len(record.calls)
            # a refusal the world caused is news, not a mistake: the same call again (a
            # checkout once the sold-out product is swapped) is no repeat
            refused = not ok and world is not None and world.refused(call.name, call.arguments)
            # a write held for the customer's yes did nothing: once they say yes, it is no repeat
            if not refused and result.get("code") != "needs_confirmation":
                self._done_keys[key] = version
        else:  # a transient fault: nothing ran, so the same call again is no repeat
            ok, result = False, fault
        if ok:
            record.shown.append(result)
        milestones = 0
        if ok and not repeat and not unseen:
            milestones = self.progress.credit(call.name, call.arguments, result, record.state)
        record.calls.append(
            CallRecord(
                turn=turn,
                name=call.name,
                arguments=call.arguments,
                ok=ok,
                error=None if ok else result.get("error"),
                repeat=repeat,
                unseen_ids=unseen,
                irrelevant_ids=irrelevant,
                milestones=milestones,
                transient=fault is not None,
                refused_by_event=refused,
            )
        )
        if world is not None and fault is None:
            world.after_call(len(record.calls), call.name, call.arguments, ok)
        return _tool_message(call.name, result, call.call_id) if self.transcript else None

    def state(self) -> dict[str, Any]:
        """The episode as JSON: the current page (last tool result), cart, order history."""
        if self.record is None:
            self.reset()
        state = self.record.state
        page = None
        for message in reversed(self.messages):
            if message.get("role") == "tool":
                page = {"tool": message.get("name"), "content": json.loads(message["content"])}
                break
        return {
            **state.to_json(),
            "page": page,
            "recommended": self.tools.recommended,
            "turns": self.record.turns,
            "tool_calls": len(self.record.calls),
            "done": self.done,
            "state_hash": state.canonical_hash(),
        }

    def state_hash(self) -> str:
        """Canonical hash of the mutable state (user, cart, orders, returns)."""
        if self.record is None:
            self.reset()
        return self.record.state.canonical_hash()


def _tool_message(name: str, result: dict[str, Any], call_id: str | None = None) -> dict[str, Any]:
    message = {"role": "tool", "name": name, "content": _content(result)}
    if call_id:
        message["tool_call_id"] = call_id
    return message


def _assistant_message(action: Any, parsed: Any) -> dict[str, Any]:
    if isinstance(action, str):
        return {"role": "assistant", "content": action}
    if isinstance(action, dict):
        message = {"role": "assistant", "content": action.get("content")}
        if action.get("tool_calls"):
            message["tool_calls"] = action["tool_calls"]
        return message
    return {"role": "assistant", "content": parsed.content}
