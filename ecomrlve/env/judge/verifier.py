"""The verifier: replay turns on a fresh env and judge the end state against the goal.

`verify(task, turns, catalog, config)` (in `ecomrlve.env.episode.replay`) is pure: it builds a new
`EcomEnv`, plays the assistant turns in order (tool-, user- and system-role entries of the file
are skipped: tool results always come from the env, never from the trajectory), and returns the
`Verdict` the env got from `judge` here.

Success (see the Goal semantics at the top of `ecomrlve.tasks`) needs all of:
* purchase: exactly one new order, not cancelled, whose lines match the slots one-to-one (item
  in the slot's
  acceptable set, exact quantity), no other line, goods subtotal (shipping excluded) <= budget;
  without a purchase goal, no new order and the cart exactly as it started;
* cancel / returns / exchanges: exactly these effects, nothing on other orders or items;
* recommend: the last `recommend` call names min_items..max_items ids, all acceptable;
* a write tool's own goal check, where it declares one (`Writes.goal_check`,
  `ecomrlve.env.shop.writes`);
* answer_facts: the final answer states every fact, read by kind (dates in any common form,
  money, percents, durations, statuses, payment methods, addresses, yes/no verdicts, policy
  terms), and asserts no conflicting value of a checked kind: rules in `ecomrlve.env.judge.facts`.
  It is at most `answer_limit(facts)` long (1,500 characters, 300 more per fact past four).
  The verdict's `answer` lists the facts found, missing and contradicted (missing and
  conflicting ones are also violations); facts marked
  `required=False` (context) may be left out. Every other value it states, of any kind, is
  grounded in the prompt, today, the customer's details or a tool result of the episode
  (`ungrounded` values are violations), in every task, with or without facts;
* the final message: every episode ends with text to the customer (an episode that ends on a
  tool call, at the turn limit or with an empty message never succeeds), and that text is
  truthful about the episode: each action it reports succeeded on the object it names, and no
  action that succeeded is denied (`ecomrlve.env.judge.claims`, run as the `claims` entry of the
  facts registry, so `check_answer` is the one check of the final message);
* the end state where the customer cares: a new order ships to the address on file, the cart
  holds nothing after the checkout, and a return is filed with the reason the customer gave;
* the agent acted: at least one successful tool call when the task's reference has any;
* no id in any call's arguments that the agent was never shown.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

from ecomrlve.config import EnvConfig
from ecomrlve.env.judge.facts import AnswerPlan, Shown, check_answer
from ecomrlve.env.judge.reward import reward_components, total_reward
from ecomrlve.env.shop import tools
from ecomrlve.env.shop.products import Catalog
from ecomrlve.env.world.events import (
    consented_rise,
    declined_rise,
    episode_facts,
    expected_cancels,
    unsettled,
)
from ecomrlve.env.world.record import EpisodeRecord
from ecomrlve.tasks import PurchaseSpec, Task

MAX_ANSWER_CHARS = 1500  # an answer of up to FACTS_IN_BASE facts; each further one adds:
CHARS_PER_EXTRA_FACT = 300
FACTS_IN_BASE = 4


def answer_limit(facts: int) -> int:
    """The longest final answer a task asking `facts` facts accepts: long answers fail (a dump
    of every value is no answer), but a d9-10 task asks up to ~9 facts, and its reference's
    own answer reached 1,383 of a flat 1,500 characters."""
    return MAX_ANSWER_CHARS + CHARS_PER_EXTRA_FACT * max(0, facts - FACTS_IN_BASE)


BUDGET_TOLERANCE = 1e-6


@dataclass
class Verdict:
    """The judgement of one episode (CONTRACT.md verdict file, plus scenario and tool_calls)."""

    task_id: str
    success: bool
    reward: float
    components: dict[str, float]
    steps: int
    violations: list[str] = field(default_factory=list)
    scenario: str = ""
    tool_calls: int = 0
    # the answer check: {"found": [...], "missing": [...], "conflicts": [...]} (empty without facts)
    answer: dict[str, list[str]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


# --------------------------------------------------------------------------------------------
# goal checks
# --------------------------------------------------------------------------------------------


def _match_slots(
    lines: list[dict[str, Any]], spec: PurchaseSpec, acceptable: list[frozenset[str]]
) -> bool:
    """True if the order lines match the slots one-to-one (bipartite matching, exact);
    `acceptable[k]` is slot k's acceptable ids as a set."""
    slots = spec.slots
    if len(lines) != len(slots):
        return False
    # fits[i]: slots line i may fill
    fits = [
        [k for k, slot in enumerate(slots)
         if line["quantity"] == slot.quantity and line["item_id"] in acceptable[k]]
        for line in lines
    ]  # fmt: skip
    slot_owner: dict[int, int] = {}

    def assign(i: int, visited: set[int]) -> bool:  # Kuhn's augmenting path
        for k in fits[i]:
            if k in visited:
                continue
            visited.add(k)
            if k not in slot_owner or assign(slot_owner[k], visited):
                slot_owner[k] = i
                return True
        return False

    return all(assign(i, set()) for i in range(len(lines)))


def _check_purchase(task: Task, record: EpisodeRecord, violations: list[str]) -> None:
    state = record.state
    new_orders = [state.orders[o] for o in state.new_order_ids]
    spec = task.goal.purchase
    initial_cart = {line["item_id"]: line["quantity"] for line in record.initial["cart"]}
    declined = declined_rise(task, record) if spec is not None and task.events else None
    slot_sets = task.goal.slot_sets()
    if declined is not None and declined.drop:  # "leave that one out, buy the rest"
        kept = [k for k, s in enumerate(slot_sets) if declined.item_id not in s]
        spec = PurchaseSpec(slots=[spec.slots[k] for k in kept], budget=spec.budget)
        slot_sets = [slot_sets[k] for k in kept]
    elif declined is not None:  # the customer said no to the new price: nothing is bought
        for order in new_orders:
            violations.append(
                f"goal: order {order['order_id']} was placed, but the customer turned down the "
                f"new price of {declined.item_id}"
            )
        return
    if spec is None:
        for order in new_orders:
            violations.append(f"goal: unexpected new order {order['order_id']}")
        if state.cart != initial_cart:
            violations.append("goal: the cart changed but the task does not ask for it")
        return
    if len(new_orders) != 1:
        violations.append(f"goal: expected exactly one new order, found {len(new_orders)}")
        if not new_orders:
            return
    order = new_orders[0]
    if order.get("status") == "cancelled":  # checkout, then cancel the order just placed
        violations.append(f"goal: the new order {order['order_id']} was cancelled")
    address = record.initial["user"].get("address") or ""
    if address and order.get("shipping_address") != address:
        violations.append(
            f"goal: order {order['order_id']} ships to {order.get('shipping_address')!r}, not "
            "the address on file"
        )
    if state.cart:  # checkout empties the cart: these lines were added after it
        left = ", ".join(sorted(state.cart))
        violations.append(f"goal: the cart still holds {left} after the checkout")
    lines = order["items"]
    if not _match_slots(lines, spec, slot_sets):
        acceptable = frozenset().union(*slot_sets)
        extra = [line["item_id"] for line in lines if line["item_id"] not in acceptable]
        for item_id in extra:
            violations.append(f"goal: new order has extra line {item_id}")
        if not extra:
            got = ", ".join(f"{x['item_id']}x{x['quantity']}" for x in lines)
            want = ", ".join(f"one of {len(s.acceptable)} ids x{s.quantity}" for s in spec.slots)
            violations.append(f"goal: order lines [{got}] do not match the slots [{want}]")
    if spec.budget is not None:
        subtotal = sum(x["price"] * x["quantity"] for x in lines)
        # a price rise over the budget is paid only with the customer's yes
        allowed = spec.budget + (consented_rise(task, record, lines) if task.events else 0.0)
        if subtotal > allowed + BUDGET_TOLERANCE:
            violations.append(f"goal: subtotal {subtotal:.2f} exceeds the budget {spec.budget:.2f}")


def _check_orders(task: Task, record: EpisodeRecord, violations: list[str]) -> None:
    # an order that shipped (a world event) before the agent cancelled it can't be cancelled
    cancel = set(expected_cancels(task, record) if task.events else task.goal.cancel)
    reason = task.goal.user_facts.get("reason")
    said = customer_words(task, record) if reason else ""
    for initial in record.initial["orders"]:
        order_id = initial["order_id"]
        final = record.state.orders[order_id]
        cancelled = final["status"] == "cancelled" and initial["status"] != "cancelled"
        if cancelled and order_id not in cancel:
            violations.append(f"goal: order {order_id} was cancelled but should not be")
        elif not cancelled and order_id in cancel:
            violations.append(f"goal: order {order_id} was not cancelled")
        elif cancelled and reason and not customers_reason(final.get("cancel_reason") or "",
                                                           reason, said):  # fmt: skip
            violations.append(
                f"goal: the cancel of order {order_id} gives the reason "
                f"{final.get('cancel_reason')!r}, not the customer's ({reason!r})"
            )
    known = {o["order_id"] for o in record.initial["orders"]}
    for order_id in sorted(cancel - known):
        violations.append(f"goal: order {order_id} to cancel is not in the initial state")


def _check_returns(task: Task, record: EpisodeRecord, violations: list[str]) -> None:
    state = record.state
    new = [r for r in state.returns if r["return_id"] in set(state.new_return_ids)]
    made_returns = {(r["order_id"], r["item_id"]) for r in new if r["kind"] == "return"}
    wanted_returns = {(r.order_id, r.item_id) for r in task.goal.returns}
    for order_id, item_id in sorted(made_returns - wanted_returns):
        violations.append(f"goal: unexpected return of {item_id} from order {order_id}")
    for order_id, item_id in sorted(wanted_returns - made_returns):
        violations.append(f"goal: {item_id} from order {order_id} was not returned")
    reason = task.goal.user_facts.get("reason")
    if reason:
        said = customer_words(task, record)
        for entry in new:
            given = entry.get("reason") or ""
            if entry["kind"] == "return" and not customers_reason(given, reason, said):
                violations.append(
                    f"goal: the return of {entry['item_id']} gives the reason {given!r}, not "
                    f"the customer's ({reason!r})"
                )
    made_exchanges = {
        (r["order_id"], r["item_id"]): r["new_item_id"] for r in new if r["kind"] == "exchange"
    }
    wanted = {(e.order_id, e.item_id): set(e.acceptable_new) for e in task.goal.exchanges}
    for key, new_item in sorted(made_exchanges.items()):
        if key not in wanted:
            violations.append(f"goal: unexpected exchange of {key[1]} from order {key[0]}")
        elif new_item not in wanted[key]:
            violations.append(f"goal: {key[1]} was exchanged for {new_item}, not an acceptable one")
    for key in sorted(set(wanted) - set(made_exchanges)):
        violations.append(f"goal: {key[1]} from order {key[0]} was not exchanged")


_REASON_WORD = re.compile(r"[a-z]+")
_REASON_STOP = frozenset((
    "its", "was", "the", "and", "but", "not", "very", "too", "than", "this", "that", "they",
    "them", "have", "has", "had", "been", "doesnt", "dont", "didnt", "isnt", "wasnt", "just",
    "what", "from", "for", "you", "does", "did", "are", "were", "will", "would", "with",
))  # fmt: skip


def _reason_stems(text: str) -> set[str]:
    words = _REASON_WORD.findall(text.lower().replace("'", ""))
    return {w[:5] for w in words if w not in _REASON_STOP and len(w) > 2}


# words that frame a reason without adding a complaint ("customer says it doesn't fit")
_FRAMING = frozenset(w[:5] for w in (
    "customer", "reason", "says", "said", "wants", "request", "requested", "return",
    "cancel", "order", "item", "product", "because", "due", "per", "user",
))  # fmt: skip


def customer_words(task: Task, record: EpisodeRecord) -> str:
    """What the customer said: the request and the simulated user's answers and messages."""
    said = [task.prompt]
    for shown in record.shown:
        if isinstance(shown, str):
            said.append(shown)
        elif isinstance(shown, dict) and set(shown) == {"answer"}:
            said.append(str(shown["answer"]))
    return " ".join(said)


def customers_reason(given: str, customer: str, said: str) -> bool:
    """Is a write's `reason` the customer's? It shares a content word with their reason
    (`same_reason`) and adds no complaint they never made: each of its content words is one
    they said, or frames the reason ("customer says ...")."""
    return same_reason(given, customer) and _reason_stems(given) <= _reason_stems(said) | _FRAMING


def same_reason(given: str, customer: str) -> bool:
    """Whether a return's `reason` argument is the customer's reason: it shares a content word
    with it (first five letters: "fit"/"fits", "damaged"/"damage"), so a paraphrase passes and
    an invented reason ("customer request") does not."""
    return bool(_reason_stems(given) & _reason_stems(customer))


def _check_recommend(task: Task, record: EpisodeRecord, violations: list[str]) -> None:
    spec = task.goal.recommend
    if spec is None:
        return
    ids = record.recommended
    if not ids:
        violations.append("goal: no recommendation was made")
        return
    if not spec.min_items <= len(ids) <= spec.max_items:
        violations.append(
            f"goal: recommended {len(ids)} products, expected {spec.min_items}-{spec.max_items}"
        )
    for item_id in ids:
        if item_id not in spec.acceptable:
            violations.append(f"goal: recommended {item_id}, which does not fit the request")


def _check_answer(
    task: Task, record: EpisodeRecord, violations: list[str], catalog: Catalog | None
) -> dict[str, list[str]]:
    changed = episode_facts(task, record) if task.events else None
    facts = task.goal.answer_facts if changed is None else changed
    answer = record.final_answer
    if answer is None or not answer.strip():
        violations.append("goal: the episode ended without a final answer")
        return {}
    limit = answer_limit(len(facts))
    if len(answer) > limit:
        violations.append(f"goal: the final answer is longer than {limit} characters")
        return {}
    user = record.initial["user"]
    addresses = [user.get("address") or ""]
    addresses += [o.get("shipping_address") or "" for o in record.initial["orders"]]
    known = [a for a in addresses if a]
    today = record.initial.get("today")
    # the system prompt shows the customer's address and saved cards; tools show the rest
    # what a refused call told (an order "is shipped; only pending ... can be cancelled")
    refusals = [c.error for c in record.calls if c.error and not c.ok and not c.transient]
    shown = Shown(
        [addresses[0], *user.get("payment_methods", ()), *record.shown, *refusals],
        today,
        record,
        catalog,
        task.goal.relevant_policies,
    )
    if changed is None:
        plan = task.goal.derived("answer_plan", lambda: AnswerPlan(facts))
    else:  # what this episode's events changed: built for it alone
        plan = AnswerPlan(facts)
    # one entry point: the facts, their grounding and the claims (a kind of the registry)
    checked = check_answer(answer, plan, task.prompt, known, today, shown)
    violations.extend(checked.claims)
    for missing in checked.missing:
        violations.append(f"goal: the final answer does not state {missing}")
    for conflict in checked.conflicts:
        violations.append(f"goal: the final answer also states a conflicting {conflict}")
    for value in checked.ungrounded:
        violations.append(f"goal: the final answer states {value}, which nothing showed")
    if not facts and not checked.ungrounded:
        return {}
    out = {"found": checked.found, "missing": checked.missing, "conflicts": checked.conflicts}
    if checked.ungrounded:
        out["ungrounded"] = checked.ungrounded
    if checked.unstated:
        out["unstated"] = checked.unstated  # context facts left out: not violations
    return out


def judge(
    task: Task, record: EpisodeRecord, config: EnvConfig, catalog: Catalog | None = None
) -> Verdict:
    """Judge a finished episode: goal checks, then the reward from named components.
    `catalog` gives the product names a final message's claims are read with (without it,
    only ids are)."""
    violations: list[str] = []
    _check_purchase(task, record, violations)
    _check_orders(task, record, violations)
    _check_returns(task, record, violations)
    _check_recommend(task, record, violations)
    for spec in tools.TOOL_SPECS.values():  # a write tool's own goal check (`Writes.goal_check`)
        if spec.writes is not None and spec.writes.goal_check is not None:
            violations.extend(spec.writes.goal_check(task, record.initial, record.state))
    answer = _check_answer(task, record, violations, catalog)
    if task.events:
        violations.extend(unsettled(task, record))
    if task.min_steps > 0 and not any(call.ok for call in record.calls):
        violations.append("goal: answered without acting (no successful tool call)")
    success = not violations
    for turn, message in record.format_errors:
        violations.append(f"format: turn {turn}: {message}")
    for call in record.calls:
        for item in call.unseen_ids:
            violations.append(f"hallucination: turn {call.turn}: {call.name} uses unseen id {item}")
            success = False
        if call.transient or call.refused_by_event:
            continue  # the tool's fault or the world's (a world event), not the agent's
        if call.repeat:
            violations.append(f"waste: turn {call.turn}: {call.name} repeats an earlier call")
        elif not call.ok:
            violations.append(f"waste: turn {call.turn}: {call.name} failed: {call.error}")
        elif call.irrelevant_ids:
            ids = ", ".join(call.irrelevant_ids)
            violations.append(f"waste: turn {call.turn}: {call.name} on off-task id(s) {ids}")
    if record.truncated:
        violations.append(f"limit: the episode hit the turn limit after {record.turns} turns")
    components = reward_components(record, success=success, min_steps=task.min_steps, config=config)
    return Verdict(
        task_id=task.task_id,
        success=success,
        reward=total_reward(components, success=success, config=config),
        components=components,
        steps=record.turns,
        violations=violations,
        scenario=task.scenario,
        tool_calls=len(record.calls),
        answer=answer,
    )
