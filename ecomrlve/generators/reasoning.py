"""Reasoning that keeps growing past d6 (issue 44, item 2): demands every scenario adds from d7,
and the reasoning features a plan carries.

The scenario knobs of `generators/difficulty.py` reach their full share at d6, so a d10 task
asked nothing a d6 task did not. From d7 every task also asks about the customer's history
(`late_demands(d)`: none up to d6, one at d7-8, two at d9-10, each a kind of `LATE_KINDS`):

| demand  | from | the customer asks                              | the reference       | goal  |
|---------|------|------------------------------------------------|---------------------|-------|
| chained | d7   | what they paid for what they bought on a day   | list_orders, then   | money |
|         |      | (no product named: the order found by its day  | get_order of the    | fact: |
|         |      | is the key of the look-up that shows the price)| order of that day   | price |
| total   | d9   | what their orders of a span of days came to    | (the same listing)  | money |
|         |      | together (two or three orders: a sum)          |                     | fact  |

Both are questions beside the main request (an add-on, as `followups.ADDONS` counts: not core
steps, so step bands are as before) about delivered orders the main request does not touch
(no cancel, return or world event changes what they say). Where the history holds too few such
orders, unrelated past orders are added, older than the task's own (its "last order" stays
the last). An agent that takes the first or the best-matching order for the day gets another
price, and one that copies a figure it was shown states no sum: the goal's money facts fail
both.

The demands are drawn on a random stream of their own (`LATE_STREAM`), so every other draw of a
task, and every task up to d6, is what it was before them. Each demand has several wordings.

`reasoning_features(plan)` names the reasoning a plan demands: the hard variants its scenario
drew (a twin order, a hidden detail, a dependent purchase, a deadline...: `FEATURE_CHOICES`)
and its late demands. `benchmarks/difficulty.py` prints the mean per scenario and difficulty.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any

import numpy as np

from ecomrlve.generators.blocks import about, call, spoken_day
from ecomrlve.generators.context import today
from ecomrlve.generators.difficulty import check_difficulty
from ecomrlve.generators.draws import below, pick, seed_sequence
from ecomrlve.generators.errors import GenerationError
from ecomrlve.generators.followups import before_closer
from ecomrlve.generators.phrasing import money, render
from ecomrlve.tasks import AnswerFact, Task

if TYPE_CHECKING:
    from ecomrlve.generators.base import Draft, Plan
    from ecomrlve.generators.context import GenContext

LATE_FROM = 7
LATE_STREAM = 0x1A7E5  # the last entropy word of a task's late-demand stream
LATE_KINDS: tuple[str, ...] = ("chained", "total")

CHAINED_SENTENCES: tuple[str, ...] = (
    "Also, how much did I pay for what I ordered on {day}?",
    "Separately: I placed an order on {day} — what did the item in it cost me?",
    "Could you also check what I was charged for the item in my {day} order?",
    "By the way, what was the price of the thing I bought on {day}?",
    "One more question: what did I pay for my purchase from {day}?",
    "And remind me what the item I ordered on {day} cost?",
)
TOTAL_SENTENCES: tuple[str, ...] = (
    "And what did my orders from {start} to {end} come to, all together?",
    "Could you add up what I spent on my orders between {start} and {end}?",
    "Also, how much did my orders from {start} through {end} cost in total?",
    "What's the total of all the orders I made between {start} and {end}?",
    "Tell me too what I paid altogether for my orders of {start} to {end}.",
    "Lastly, what was my total spend on orders between {start} and {end}, both days included?",
)

# plan choices that mark a hard variant when truthy (a scenario uses the keys it has)
FEATURE_CHOICES: tuple[str, ...] = (
    "twin",  # a later twin of the order meant, told apart by the day
    "dependent",  # a purchase that hangs on the main outcome
    "shipped",  # an order asked to cancel has shipped: a policy look-up and a refusal
    "hide_reason",  # a detail only `ask_user` gets
    "hide_budget",
    "hide_quantity",
    "hidden",
    "switch",  # an intent revealed mid-way
    "vague",  # the order or topic named vaguely
    "lookup",
    "final_sale",
    "details",  # details only `get_order` shows
    "cancel_question",
    "fee_question",
    "two_orders",
    "binds",  # the budget binds: the first hits overrun it
    "price_trap",  # the top match is out of the price band
    "usual_size",  # "my usual size": read from a past order
    "deadline",  # a delivery day to turn into a day count
    "anchor",
    "relax",
    "order_pick",
    "bulk",
)


def late_demands(difficulty: int) -> tuple[str, ...]:
    """The late demands of difficulty `difficulty`: none up to d6, the chained look-up at
    d7-8, and the total too at d9-10 (each demand stays once it starts: monotone in `d`)."""
    check_difficulty(difficulty)
    count = 0 if difficulty < LATE_FROM else 1 if difficulty < LATE_FROM + 2 else 2
    return LATE_KINDS[:count]


def late_cost(demands: tuple[str, ...], *, listed: bool) -> int:
    """The reference calls `demands` add: the order look-up, and a listing of the orders where
    the main request's reference has none (`listed`: it has; `Scenario.lists_orders`)."""
    if not demands:
        return 0
    return int("chained" in demands) + int(not listed)


def reasoning_features(plan: Plan) -> tuple[str, ...]:
    """The reasoning `plan` demands: its hard variants (`FEATURE_CHOICES` drawn truthy) and its
    late demands, by name."""
    drawn = tuple(k for k in FEATURE_CHOICES if plan.choices.get(k))
    return drawn + tuple(plan.choices.get("late", ()))


def late_facts(task: Task) -> list[AnswerFact]:
    """The facts `task`'s late demands added to its goal: its last ones, one a demand."""
    facts = task.goal.answer_facts
    return facts[len(facts) - len(late_demands(task.difficulty)) :]


def late_rng(entropy: list[int]) -> np.random.Generator:
    """The late demands' own stream of a task (its `TaskKey` entropy plus `LATE_STREAM`)."""
    return np.random.default_rng(seed_sequence([*entropy, LATE_STREAM]))


# ---- building -----------------------------------------------------------------------------------
def _item_ids(value: Any) -> list[str]:
    items = value if isinstance(value, list) else [value]
    return [i for i in items if isinstance(i, str)]


def _task_categories(draft: Draft, ctx: GenContext) -> set[str]:
    """The categories of every product the task already names, holds or touches."""
    ids = list(draft.goal.relevant_ids)
    for call_ in draft.reference:
        for key in ("item_id", "new_item_id", "item_ids"):
            ids += _item_ids(call_.arguments.get(key))
    for order in draft.initial_state.get("orders", []):
        ids += [line["item_id"] for line in order["items"]]
    ids += [line["item_id"] for line in draft.initial_state.get("cart", [])]
    rows = [ctx.catalog.row_of(i) for i in ids]
    return {ctx.category.value(r) for r in rows if r is not None}


def _untouched(draft: Draft) -> list[dict[str, Any]]:
    """Delivered orders the main request does not name, newest first."""
    relevant = set(draft.goal.relevant_ids)
    orders = draft.initial_state["orders"]
    return [o for o in orders if o["status"] == "delivered" and o["order_id"] not in relevant]


def _with_history(draft: Draft, ctx: GenContext, rng: np.random.Generator, need: int) -> None:
    """Add unrelated delivered past orders, older than every order the task has (its "last
    order" stays the last), until `need` orders are untouched (in place)."""
    state = draft.initial_state
    missing = need - len(_untouched(draft))
    if missing <= 0:
        return
    taken = {o["order_id"] for o in state["orders"]}
    ids = [i for i in ctx.order_ids(rng, missing + len(taken)) if i not in taken][:missing]
    avoid = _task_categories(draft, ctx)
    categories = [c for c in ctx.categories if c not in avoid] or ctx.categories
    oldest = min((dt.date.fromisoformat(o["placed"]) for o in state["orders"]), default=today())
    age = (today() - oldest).days
    added = []
    for order_id in ids:
        age += 1 + below(rng, 15)  # within the year: a day is said without it
        rows = list(dict.fromkeys(ctx.pick_any(rng, pick(rng, categories)) for _ in range(2)))
        rows = rows[: 1 + int(rng.random() < 0.3)]
        added.append(ctx.order(order_id, rows, [1] * len(rows), "delivered", age))
    state["orders"] = sorted(
        state["orders"] + added, key=lambda o: (o["placed"], o["order_id"]), reverse=True
    )


def _answer_days(draft: Draft) -> set[str]:
    """Days the customer may not say: the goal's dates (a day in the prompt would give an
    answer away) and the days orders arrived or are due (a day names one date of one order)."""
    days = {f.value for f in draft.goal.answer_facts if f.kind == "date"}
    for order in draft.initial_state["orders"]:
        days |= {order[k] for k in ("delivered", "eta") if order.get(k)}
    return days


def _chained(
    draft: Draft, ctx: GenContext, rng: np.random.Generator, typo_rate: float
) -> tuple[str, AnswerFact, str]:
    """The chained look-up: an untouched one-line order, placed on a day no other order was and
    not the newest (the first listed), named by that day only."""
    orders = draft.initial_state["orders"]
    days = [o["placed"] for o in orders]
    prompt = draft.prompt.lower()
    taken = _answer_days(draft)
    fits = [
        o
        for o in _untouched(draft)
        if len(o["items"]) == 1
        and days.count(o["placed"]) == 1
        and o["placed"] not in taken
        and o is not orders[0]
        and ctx.noun(ctx.catalog.row_of(o["items"][0]["item_id"])).lower() not in prompt
    ]
    if not fits:
        raise GenerationError("no untouched one-line order for a chained look-up")
    order = fits[below(rng, len(fits))]
    line = order["items"][0]
    row = ctx.catalog.row_of(line["item_id"])
    day = spoken_day(order["placed"])
    sentence = render(pick(rng, CHAINED_SENTENCES), {"day": day}, rng, typo_rate)
    price = f"{line['price']:.2f}"
    say = (
        f"For your purchase of {day} (order {order['order_id']}), you paid "
        f"{money(line['price'])} for the {ctx.noun(row)}."
    )
    paid = [f"{line['price'] * line['quantity']:.2f}", f"{order['total']:.2f}"]
    fact = AnswerFact(
        kind="money",
        value=price,
        say=say,
        allowed=paid,
        allowed_roles=["price", "order"],
        role="price",
        **about(ctx, order, row),
    )
    return sentence, fact, order["order_id"]


def _total(
    draft: Draft, ctx: GenContext, rng: np.random.Generator, typo_rate: float
) -> tuple[str, AnswerFact]:
    """The total: two or three untouched orders placed in a row of the listing, on days no
    other order shares, named by the first and last day."""
    orders = draft.initial_state["orders"]
    untouched = {id(o) for o in _untouched(draft)}
    taken = _answer_days(draft)
    size = 2 + int(rng.random() < 0.5)
    starts = []
    for k in range(len(orders) - 1):
        for n in (size, 2):
            run = orders[k : k + n]
            if len(run) < n or not all(id(o) in untouched for o in run):
                continue
            newer = orders[k - 1]["placed"] if k else None
            older = orders[k + n]["placed"] if k + n < len(orders) else None
            bounds = {run[0]["placed"], run[-1]["placed"]}
            if run[0]["placed"] != newer and run[-1]["placed"] != older and not bounds & taken:
                starts.append((k, n))
                break
    if not starts:
        raise GenerationError("no run of untouched orders for a total")
    k, n = starts[below(rng, len(starts))]
    run = orders[k : k + n]
    start, end = spoken_day(run[-1]["placed"]), spoken_day(run[0]["placed"])
    values = {"start": start, "end": end}
    sentence = render(pick(rng, TOTAL_SENTENCES), values, rng, typo_rate)
    total = round(sum(o["total"] for o in run), 2)
    ids = ", ".join(o["order_id"] for o in reversed(run))
    say = f"Your purchases from {start} to {end} ({ids}) add up to {money(total)}."
    fact = AnswerFact(
        kind="money",
        value=f"{total:.2f}",
        say=say,
        # each order's own total may be told on the way
        allowed=[f"{o['total']:.2f}" for o in run],
    )
    return sentence, fact


def add_late_demands(
    draft: Draft,
    demands: tuple[str, ...],
    ctx: GenContext,
    rng: np.random.Generator,
    typo_rate: float,
    *,
    listed: bool,
) -> None:
    """Add `demands` to `draft` in place: history where it is short, the prompt's questions,
    the goal's facts, and the reference's look-ups (an add-on: `Draft.addon_calls`; as many
    as `late_cost` says). Raises GenerationError when the history has no fitting order (the
    build is redrawn)."""
    if not demands:
        return
    _with_history(draft, ctx, rng, need=1 + 3 * len(demands))
    sentences, facts = [], []
    looked_up = ""
    if "chained" in demands:
        sentence, fact, looked_up = _chained(draft, ctx, rng, typo_rate)
        sentences.append(sentence)
        facts.append(fact)
    if "total" in demands:
        sentence, fact = _total(draft, ctx, rng, typo_rate)
        sentences.append(sentence)
        facts.append(fact)
    # after the main request's first listing, or a listing of their own first (a second
    # listing of an unchanged history would repeat a read)
    first = next((k for k, c in enumerate(draft.reference) if c.name == "list_orders"), None)
    if (first is not None) is not listed:
        raise RuntimeError(f"internal: the plan says listed={listed}, its reference disagrees")
    calls = [call("list_orders")] if first is None else []
    if looked_up:
        calls.append(call("get_order", order_id=looked_up))
        draft.goal.relevant_ids.append(looked_up)
    at = 0 if first is None else first + 1
    draft.reference[at:at] = calls
    draft.addon_calls.extend(calls)
    draft.prompt = before_closer(draft.prompt, sentences)
    draft.goal.answer_facts.extend(facts)
