"""`play_checked` / `fuzz_episode`: play one episode and check the env's invariants after
every turn (no exception, state intact, reward in range, termination, well-formed
observations, replay equal, no leak)."""

from __future__ import annotations

import json
import math
import random
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ecomrlve.config import EnvConfig
from ecomrlve.env import Catalog, EcomEnv, verify
from ecomrlve.env.shop.tools import WRITE_TOOLS
from ecomrlve.tasks import Task
from ecomrlve.testing.fuzzer import Fuzzer
from ecomrlve.testing.leaks import LeakScanner

# ---- the invariants ------------------------------------------------------------------------------

COUNTERS = (
    "exceptions",
    "state corruptions",
    "reward-range violations",
    "non-terminations",
    "malformed observations",
    "replay mismatches",
    "leaks",
)


@dataclass
class EpisodeCheck:
    """What one episode broke (empty lists: nothing), plus how many turns it played."""

    turns: int = 0
    huge_arguments: int = 0
    problems: dict[str, list[str]] = field(default_factory=lambda: {c: [] for c in COUNTERS})

    def add(self, counter: str, message: str) -> None:
        self.problems[counter].append(message)

    @property
    def ok(self) -> bool:
        return not any(self.problems.values())

    def summary(self) -> str:
        return "; ".join(f"{k}: {v[:3]}" for k, v in self.problems.items() if v)


def _tool_results(observation: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for message in observation:
        if message.get("role") == "tool":
            out.append((message.get("name", ""), json.loads(message["content"])))
    return out


def _check_state(env: EcomEnv, check: EpisodeCheck) -> None:
    state = env.state()
    json.dumps(state, allow_nan=False)  # raises on NaN/inf or non-JSON values
    if env.state_hash() != env.state_hash():
        check.add("state corruptions", "state_hash is not stable")
    cap = env.config.max_quantity_per_item
    initial_cart = {line["item_id"] for line in env.record.initial["cart"]}
    for line in state["cart"] if isinstance(state["cart"], list) else []:
        quantity = line.get("quantity")
        if not isinstance(quantity, int) or isinstance(quantity, bool) or not quantity >= 1:
            check.add("state corruptions", f"cart quantity {quantity!r}")
        elif quantity > cap and line["item_id"] not in initial_cart:
            check.add("state corruptions", f"cart quantity {quantity} over the cap {cap}")
        if line["item_id"] not in env.catalog and line["item_id"] not in initial_cart:
            check.add("state corruptions", f"unknown item in cart: {line['item_id'][:40]!r}")
    for order in env.record.state.orders.values():
        if order["status"] not in ("pending", "processing", "shipped", "delivered", "cancelled"):
            check.add("state corruptions", f"order status {order['status']!r}")
    for item_id, sold in env.tools.sold.items():
        row = env.catalog.row_of(item_id)
        if row is None or sold > int(env.catalog.stock[row]):
            check.add("state corruptions", f"sold {sold} of {item_id} beyond its stock")


def _wrap_tool_calls(env: EcomEnv, check: EpisodeCheck) -> None:
    """Check each tool call on its own: a refused call leaves the state hash unchanged; a
    successful read never changes it."""
    tools = env.tools
    original = tools.call

    def call(name: str, arguments: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
        before = env.record.state.canonical_hash()
        ok, result = original(name, arguments)
        after = env.record.state.canonical_hash()
        if before != after and (not ok or name not in WRITE_TOOLS):
            what = "refused" if not ok else "read"
            check.add("state corruptions", f"{what} call {name} changed the state")
        return ok, result

    tools.call = call


def play_checked(
    task: Task,
    catalog: Catalog,
    next_turn: Callable[[list[dict[str, Any]]], Any],
    config: EnvConfig | None = None,
    scanner: LeakScanner | None = None,
    replay: bool = True,
) -> EpisodeCheck:
    """Play turns from `next_turn(last_observation)` until the episode ends; check invariants.

    Invariants: `step` never raises; observations are tool/user messages whose tool content is
    a JSON object; a turn whose calls were all refused (or were all reads) leaves
    `state_hash()` unchanged unless a world event fired in it, and so does each refused call on
    its own; the state stays
    well-formed; the reward is 0 until the end and then within `config.reward_range` (0/1 when
    binary) and equal to the verdict's; the episode is over after at most `env.max_turns`
    turns; replaying the same turns with `verify` gives the same verdict; and, with a
    `scanner`, nothing observed leaks the hidden goal.
    """
    config = config or EnvConfig()
    check = EpisodeCheck()
    env = EcomEnv(task, catalog, config)
    try:
        opening = env.reset()
    except Exception as err:  # pragma: no cover - reported, not raised
        check.add("exceptions", f"reset: {type(err).__name__}: {err}")
        return check
    if scanner is not None:
        for problem in scanner.scan_opening(opening):
            check.add("leaks", problem)
    _wrap_tool_calls(env, check)
    initial_hash = env.state_hash()
    turns: list[Any] = []
    observation: list[dict[str, Any]] = []
    for _ in range(env.max_turns + 2):
        turn = next_turn(observation)
        turns.append(turn)
        before = env.state_hash()
        calls_before = len(env.record.calls)
        events_before = len(env.record.events_fired)
        try:
            result = env.step(turn)
        except Exception as err:
            last = traceback.extract_tb(err.__traceback__)[-1]
            check.add(
                "exceptions",
                f"{type(err).__name__}: {str(err)[:120]} at {last.filename}:{last.lineno}",
            )
            return check
        check.turns += 1
        observation = result.observation
        results = _check_observation(observation, check)
        _check_turn_state(env, check, results, before, events_before)
        if scanner is not None:
            new_calls = env.record.calls[calls_before:]
            for problem in scanner.scan_turn(turn, observation, new_calls, env):
                check.add("leaks", problem)
        _check_reward(result.reward, result.done, config, check)
        if result.done:
            _check_end(env, result, turns, replay, initial_hash, check)
            return check
        if check.turns >= env.max_turns:
            break
    check.add("non-terminations", f"not done after {check.turns} turns (limit {env.max_turns})")
    return check


def _check_observation(
    observation: list[dict[str, Any]], check: EpisodeCheck
) -> list[tuple[str, dict[str, Any]]]:
    """Tool and user messages only, each tool result a JSON object; the tool results."""
    try:
        results = _tool_results(observation)
    except (ValueError, TypeError, KeyError) as err:
        check.add("malformed observations", f"tool content is not JSON: {err}")
        results = []
    if any(m.get("role") not in ("tool", "user") for m in observation):
        check.add("malformed observations", "an observation that is not a tool/user message")
    if any(not isinstance(content, dict) for _, content in results):
        check.add("malformed observations", "a tool result that is not an object")
    return results


def _check_turn_state(
    env: EcomEnv,
    check: EpisodeCheck,
    results: list[tuple[str, dict[str, Any]]],
    before: str,
    events_before: int,
) -> None:
    """A turn without a successful write or a world event keeps the state hash `before`; the
    state stays well-formed."""
    wrote = any(
        name in WRITE_TOOLS and "error" not in content
        for name, content in results
        if isinstance(content, dict)
    )
    # a world event (stock, price, an order shipping) that fired this turn changes the
    # state by itself
    changed_by_world = len(env.record.events_fired) > events_before
    if not wrote and not changed_by_world and env.state_hash() != before:
        check.add("state corruptions", f"turn {check.turns}: no successful write, new hash")
    try:
        _check_state(env, check)
    except (ValueError, TypeError) as err:
        check.add("state corruptions", f"state() is not JSON: {err}")


def _check_reward(reward: Any, done: bool, config: EnvConfig, check: EpisodeCheck) -> None:
    """A finite float, 0 until the end, then 0/1 (binary) or within `config.reward_range`."""
    low, high = config.reward_range
    if not isinstance(reward, float) or not math.isfinite(reward):
        check.add("reward-range violations", f"reward {reward!r}")
    elif not done and reward != 0.0:
        check.add("reward-range violations", f"intermediate reward {reward}")
    elif config.binary_reward and reward not in (0.0, 1.0):
        check.add("reward-range violations", f"binary reward {reward}")
    elif not low <= reward <= high:
        check.add("reward-range violations", f"reward {reward} outside [{low}, {high}]")


def _check_end(
    env: EcomEnv,
    result: Any,
    turns: list[Any],
    replay: bool,
    initial_hash: str,
    check: EpisodeCheck,
) -> None:
    """At the end: the reward is the verdict's, a further step plays nothing, a replay gives
    the same verdict (with `replay`), and `reset()` restores the initial state."""
    verdict = result.info.get("verdict")
    if verdict is None or verdict.reward != result.reward:
        check.add("reward-range violations", "the final reward is not the verdict's")
    again = env.step("<tool_call>{}</tool_call>")
    if not again.done or again.reward != 0.0 or again.observation:
        check.add("non-terminations", "a step after the end was played")
    if replay and verdict is not None:
        # verify replays without a transcript: every field of its verdict must be
        # the live (transcript-keeping) episode's
        replayed = verify(env.task, turns, env.catalog, env.config)
        if replayed.to_json() != verdict.to_json():
            check.add("replay mismatches", f"live {verdict.reward} != {replayed.reward}")
    env.reset()
    if env.state_hash() != initial_hash:
        check.add("state corruptions", "reset() does not restore the initial state")


def fuzz_episode(
    task: Task,
    catalog: Catalog,
    rng: random.Random,
    config: EnvConfig | None = None,
    *,
    huge_rate: float = 0.0,
    final_rate: float = 0.03,
    extra_texts: list[str] | None = None,
    scanner: bool = True,
    replay: bool = True,
) -> EpisodeCheck:
    """One episode of fuzzed turns on `task`, with every invariant checked."""
    fuzzer = Fuzzer(rng, task, catalog, huge_rate=huge_rate)
    fuzzer.extra_texts = list(extra_texts or [])

    def next_turn(observation: list[dict[str, Any]]) -> Any:
        fuzzer.observe(observation)
        return fuzzer.turn(final_rate)

    fixture = task.task_id.startswith("fx-")
    leak_scanner = LeakScanner(task, catalog, prompt_may_name_ids=fixture) if scanner else None
    check = play_checked(task, catalog, next_turn, config, leak_scanner, replay)
    check.huge_arguments = fuzzer.huge_sent
    return check
