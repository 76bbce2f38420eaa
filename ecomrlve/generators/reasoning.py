"""Reasoning that keeps growing past d6 (issue 44, item 2): demands every scenario adds from d7,
and the reasoning features a plan carries.

The scenario knobs of `generators/difficulty.py` reach their full share at d6, so a d10 task
asked nothing a d6 task did not. From d7 every task also asks about the customer's history
(`late_demands(d)`: none up to d6, then one more each step, `LATE_START`):

| demand  | from | the customer asks                                | the reference     | fact     |
|---------|------|--------------------------------------------------|-------------------|----------|
| chained | d7   | what they paid for what they bought on a day (no | list_orders, then | money:   |
|         |      | product named: the order found by its day is the | get_order of that | price    |
|         |      | key of the look-up that shows the price)         | day's order       |          |
| twins   | d8   | what they paid for "the navy hoodie in size M":  | get_order of the  | money:   |
|         |      | three past orders of one product, each near-twin | order with both   | price    |
|         |      | sharing one of its colour and size (no day said) | attributes        |          |
| total   | d9   | what their orders of a span of days came to      | (the listing)     | money:   |
|         |      | together (two or three orders: a sum)            |                   | sum      |
| branch  | d9   | a conditional: "if I sent it back, the refund;   | get_order (its    | money:   |
|         |      | if not, the price" of a past item; the world     | returns show      | refund   |
|         |      | decides (even odds: the order holds a return)    | which)            | or price |
| net     | d10  | a cost with a refund or a discount in the sum:   | get_order (the    | money:   |
|         |      | a two-line order less the refund of the line     | total and refund, | the      |
|         |      | that went back, or an item at the price paid     | or the price)     | net      |
|         |      | less a gift card the customer names ($5-$25)     |                   |          |

All are questions beside the main request (an add-on, as `followups.ADDONS` counts: not core
steps, so step bands are as before) about delivered orders the main request does not touch
(no cancel, return or world event changes what they say). Where the history holds too few
orders for the chained look-up and the total, unrelated past orders are added; twins, branch
and net get orders of their own (products of kinds the task does not touch), all older than
the task's own (its "last order" stays the last) and on days no other order was placed,
arrived or is due. An agent that takes the first or the best-matching order for the day gets
another price; one that matches a single attribute takes a near-twin; one that does not check
the order's returns answers the other branch; one that copies a figure it was shown states no
sum or difference: each misses the goal's money fact (the figures the arithmetic starts from,
and the price beside a refund, may be said on the way).

The demands are drawn on a random stream of their own (`LATE_STREAM`), so every other draw of a
task, and every task up to d6, is what it was before them (d7, asking only the chained look-up,
too). Each demand has four to six wordings (the conditional also either order of its two
branches, four wordings each).

`reasoning_features(plan)` names the reasoning a plan demands: the hard variants its scenario
drew (a twin order, a hidden detail, a dependent purchase, a deadline...: `FEATURE_CHOICES`)
and its late demands. `benchmarks/difficulty.py` prints the mean per scenario and difficulty.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any

import numpy as np

from ecomrlve.catalogs.taxonomy import variant_label
from ecomrlve.generators.blocks import about, call, spoken_day
from ecomrlve.generators.context import today
from ecomrlve.generators.difficulty import check_difficulty
from ecomrlve.generators.draws import below, pick, seed_sequence
from ecomrlve.generators.errors import GenerationError
from ecomrlve.generators.followups import before_closer
from ecomrlve.generators.phrasing import money, render, size_phrase
from ecomrlve.tasks import AnswerFact, Task

if TYPE_CHECKING:
    from ecomrlve.generators.context import GenContext
    from ecomrlve.generators.draft import Draft, Plan

LATE_STREAM = 0x1A7E5  # the last entropy word of a task's late-demand stream
# each demand and the first difficulty that asks it, in that order (a harder task asks the
# demands of every easier one, and more)
LATE_START: dict[str, int] = {"chained": 7, "twins": 8, "total": 9, "branch": 9, "net": 10}
LATE_KINDS: tuple[str, ...] = tuple(LATE_START)
LATE_FROM = min(LATE_START.values())
# the demands whose answer is on one order's page: each adds a `get_order`
LOOKUPS: frozenset[str] = frozenset({"chained", "twins", "branch", "net"})
RESTOCKING_FEES = (0.1, 0.15, 0.2, 0.25)  # what a past return kept back (its refund differs)
VOUCHERS = (5, 10, 15, 20, 25)  # dollars of a gift card

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

TWINS_SENTENCES: tuple[str, ...] = (
    "I also bought {thing} a while back — what did I pay for it?",
    "How much was {thing} I ordered some time ago? I've bought similar ones, so mind which.",
    "Could you look up what I was charged for {thing}? Only that one, not the other ones I got.",
    "What did {thing} cost me? I've ordered that model more than once.",
    "Also, remind me of the price I paid for {thing}.",
    "Separately, I'd like to know what {thing} cost when I bought it.",
)
# {first} and {second}: the two branches, in the order the customer puts them
BRANCH_SENTENCES: tuple[str, ...] = (
    "About the {noun} from my {day} order: {first}, and {second}.",
    "I can't remember what happened with the {noun} I ordered on {day} — {first}; {second}.",
    "One more thing on the {noun} from {day}: {first}, but {second}.",
    "Then the {noun} I bought on {day}: {first}; {second}.",
)
BRANCH_RETURNED: tuple[str, ...] = (
    "if I already sent it back, tell me how much I got refunded",
    "if it went back already, what did the refund come to",
    "should I have returned it, I'd like to know what I got back",
    "in case I returned it, what was my refund",
)
BRANCH_KEPT: tuple[str, ...] = (
    "if I kept it, just tell me what I paid for it",
    "if it never went back, what did it cost me",
    "should I still have it, I'd like its price",
    "in case I didn't return it, what was its price",
)
NET_REFUND_SENTENCES: tuple[str, ...] = (
    "After the refund for the {noun} I sent back, what did my {day} order end up costing me?",
    "My {day} order — counting the refund I got for the {noun}, how much did I pay in the end?",
    "What's my {day} order down to once the refund for the returned {noun} is taken off?",
    "Work out for me what my {day} order really cost, net of the refund on the {noun}.",
)
NET_VOUCHER_SENTENCES: tuple[str, ...] = (
    "I have a {voucher} gift card: if I used it on the {noun} from my {day} order, at the price "
    "I paid then, what would be left to pay?",
    "Say I bought the {noun} from my {day} order again at the same price with my {voucher} "
    "voucher — what would I pay, shipping aside?",
    "With the {voucher} credit I have, what would the {noun} from my {day} order come to at "
    "the price I paid then?",
    "How much would the {noun} I ordered on {day} cost me at that price once my {voucher} "
    "coupon is taken off (before shipping)?",
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
    """The late demands of difficulty `difficulty` (`LATE_START`): none up to d6, the chained
    look-up at d7, the two-attribute twin too at d8, the total and the conditional at d9, and
    the net cost at d10 (each demand stays once it starts: monotone in `d`)."""
    check_difficulty(difficulty)
    return tuple(k for k in LATE_KINDS if difficulty >= LATE_START[k])


def late_cost(demands: tuple[str, ...], *, listed: bool) -> int:
    """The reference calls `demands` add: an order look-up for each of `LOOKUPS`, and a
    listing of the orders where the main request's reference has none (`listed`: it has;
    `Scenario.lists_orders`)."""
    if not demands:
        return 0
    return sum(k in LOOKUPS for k in demands) + int(not listed)


def reasoning_features(plan: Plan) -> tuple[str, ...]:
    """The reasoning `plan` demands: its hard variants (`FEATURE_CHOICES` drawn truthy) and its
    late demands, by name."""
    drawn = tuple(k for k in FEATURE_CHOICES if plan.choices.get(k))
    return drawn + tuple(plan.choices.get("late", ()))


def late_facts(task: Task) -> list[AnswerFact]:
    """The facts `task`'s late demands added to its goal: its last ones, one a demand, in the
    order of `late_demands`."""
    facts = task.goal.answer_facts
    return facts[len(facts) - len(late_demands(task.difficulty)) :]


def late_fact(task: Task, demand: str) -> AnswerFact | None:
    """The fact `task`'s late demand `demand` added (None: the task has no such demand)."""
    demands = late_demands(task.difficulty)
    return late_facts(task)[demands.index(demand)] if demand in demands else None


def returned_before(task: Task, order_id: str) -> bool:
    """Whether a line of `order_id` went back before the task began (`initial_state` holds
    its return): the branch a conditional demand's world decides."""
    return any(r["order_id"] == order_id for r in task.initial_state.get("returns", []))


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


def _untouched(draft: Draft, reserved: frozenset[str] = frozenset()) -> list[dict[str, Any]]:
    """Delivered orders the main request does not name (nor another demand: `reserved`),
    newest first."""
    relevant = set(draft.goal.relevant_ids) | reserved
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
    draft: Draft,
    ctx: GenContext,
    rng: np.random.Generator,
    typo_rate: float,
    reserved: frozenset[str] = frozenset(),
) -> tuple[str, AnswerFact, str]:
    """The chained look-up: an untouched one-line order, placed on a day no other order was and
    not the newest (the first listed), named by that day only."""
    orders = draft.initial_state["orders"]
    days = [o["placed"] for o in orders]
    prompt = draft.prompt.lower()
    taken = _answer_days(draft)
    fits = [
        o
        for o in _untouched(draft, reserved)
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
    draft: Draft,
    ctx: GenContext,
    rng: np.random.Generator,
    typo_rate: float,
    reserved: frozenset[str] = frozenset(),
) -> tuple[str, AnswerFact]:
    """The total: two or three untouched orders placed in a row of the listing, on days no
    other order shares, named by the first and last day."""
    orders = draft.initial_state["orders"]
    untouched = {id(o) for o in _untouched(draft, reserved)}
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


# ---- the demands on orders of their own (twins, branch, net) ------------------------------------
MAX_AGE = 330  # days: a day is said without its year, so the history stays within the year
ROW_TRIES = 40


def _older_order(
    draft: Draft,
    ctx: GenContext,
    rng: np.random.Generator,
    rows: list[int],
) -> dict[str, Any]:
    """A delivered order of `rows` (one of each), placed before every order the task has, on a
    day no order was placed, arrived or is due, and arriving on none of those days (so a day
    the customer says names one date of one order); added to the history in place."""
    state = draft.initial_state
    oldest = min((dt.date.fromisoformat(o["placed"]) for o in state["orders"]), default=today())
    age = (today() - oldest).days
    placed = {o["placed"] for o in state["orders"]}
    taken = _answer_days(draft) | placed
    ids = {o["order_id"] for o in state["orders"]}
    order_id = next(i for i in ctx.order_ids(rng, len(ids) + 1) if i not in ids)
    while True:
        age += 1 + below(rng, 6)
        if age > MAX_AGE:
            raise GenerationError("no day left within the year for another past order")
        order = ctx.order(order_id, rows, [1] * len(rows), "delivered", age)
        if order["placed"] not in taken and order["delivered"] not in taken:
            break
    state["orders"].append(order)
    return order


def _free_row(draft: Draft, ctx: GenContext, rng: np.random.Generator) -> int:
    """A product of a category the task does not touch yet, whose type the prompt does not
    name (a demand's product is told by its type, and no other order holds one)."""
    avoid = _task_categories(draft, ctx)
    categories = [c for c in ctx.categories if c not in avoid] or ctx.categories
    prompt = draft.prompt.lower()
    for _ in range(ROW_TRIES):
        row = ctx.pick_any(rng, pick(rng, categories))
        if ctx.noun(row).lower() not in prompt:
            return row
    raise GenerationError("no product of an untouched kind for a late demand")


def _add_return(draft: Draft, order: dict[str, Any], line: dict[str, Any], fee: float) -> float:
    """A return of `line` of `order`, refunded before the task began less `fee` (in place);
    its refund."""
    refund = round(line["price"] * line["quantity"] * (1.0 - fee), 2)
    returns = draft.initial_state.setdefault("returns", [])
    returns.append(
        {
            "return_id": f"R{order['order_id'][1:]}",
            "order_id": order["order_id"],
            "item_id": line["item_id"],
            "quantity": line["quantity"],
            "kind": "return",
            "new_item_id": None,
            "reason": "changed my mind",
            "status": "refunded",
            "refund": refund,
        }
    )
    return refund


def _twin_rows(draft: Draft, ctx: GenContext, rng: np.random.Generator) -> tuple[int, int, int]:
    """A product and two near-twins of its family, each sharing one of its colour and size
    (another size in its colour, its size in another colour), the three at three prices."""
    for _ in range(ROW_TRIES):
        row = _free_row(draft, ctx, rng)
        product = ctx.product(row)
        if variant_label(product["category"]) != "colour" or product["size"] == "one size":
            continue
        family = [ctx.product(int(r)) | {"row": int(r)} for r in ctx.family_rows(row)]
        colour, size = product["color"], product["size"]
        same_colour = [p for p in family if p["color"] == colour and p["size"] != size]
        same_size = [p for p in family if p["color"] != colour and p["size"] == size]
        if not same_colour or not same_size:
            continue
        a, b = pick(rng, same_colour), pick(rng, same_size)
        if len({product["price"], a["price"], b["price"]}) == 3:
            return row, a["row"], b["row"]
    raise GenerationError("no product with near-twins in its colour and in its size")


def _twins(
    draft: Draft, ctx: GenContext, rng: np.random.Generator, typo_rate: float
) -> tuple[str, AnswerFact, str]:
    """The two-attribute twin: three past orders of one product in three variants, the one
    asked about told apart from each near-twin by its colour and size together (each twin
    shares one of them), named by both, never by a day."""
    row, *twins = _twin_rows(draft, ctx, rng)
    rows = [row, *twins]
    rng.shuffle(rows)  # which of the three was bought last: any
    orders = {r: _older_order(draft, ctx, rng, [r]) for r in rows}
    product = ctx.product(row)
    order = orders[row]
    noun = ctx.noun(row)
    thing = f"the {product['color']} {noun} {size_phrase(product['size'])}"
    sentence = render(pick(rng, TWINS_SENTENCES), {"thing": thing}, rng, typo_rate)
    line = order["items"][0]
    say = f"The {product['color']} one ({order['order_id']}) cost you {money(line['price'])}."
    fact = AnswerFact(
        kind="money",
        value=f"{line['price']:.2f}",
        say=say,
        allowed=[f"{order['total']:.2f}"],
        allowed_roles=["order"],
        role="price",
        **about(ctx, order, row),
    )
    return sentence, fact, order["order_id"]


def _branch(
    draft: Draft, ctx: GenContext, rng: np.random.Generator, typo_rate: float
) -> tuple[str, AnswerFact, str]:
    """The conditional: a past one-line order whose item went back before the task began, or
    did not (even odds); the customer asks for the refund if it did and the price if not, so
    the world decides which, and only the order's page (its returns) tells."""
    row = _free_row(draft, ctx, rng)
    order = _older_order(draft, ctx, rng, [row])
    line = order["items"][0]
    noun, day = ctx.noun(row), spoken_day(order["placed"])
    returned = bool(rng.random() < 0.5)
    branches = [pick(rng, BRANCH_RETURNED), pick(rng, BRANCH_KEPT)]
    if rng.random() < 0.5:
        branches.reverse()
    values = {"noun": noun, "day": day, "first": branches[0], "second": branches[1]}
    sentence = render(pick(rng, BRANCH_SENTENCES), values, rng, typo_rate)
    price = f"{line['price']:.2f}"
    if returned:
        refund = _add_return(draft, order, line, pick(rng, RESTOCKING_FEES))
        say = f"The {noun} ({order['order_id']}) went back: refund {money(refund)}."
        value, allowed, roles, role = f"{refund:.2f}", [price], ["price"], ""
    else:
        say = f"You kept the {noun} ({order['order_id']}); you paid {money(line['price'])}."
        value, allowed, roles, role = price, [f"{order['total']:.2f}"], ["order"], "price"
    fact = AnswerFact(
        kind="money",
        value=value,
        say=say,
        allowed=allowed,
        allowed_roles=roles,
        role=role,
        **about(ctx, order, row),
    )
    return sentence, fact, order["order_id"]


def _net(
    draft: Draft, ctx: GenContext, rng: np.random.Generator, typo_rate: float
) -> tuple[str, AnswerFact, str]:
    """The net cost (even odds): what a past two-line order cost less the refund of the line
    that went back, or what an item of a past order would cost at the price paid less a gift
    card the customer names. A difference of two figures, neither of which is the answer."""
    if rng.random() < 0.5:
        rows = list(dict.fromkeys(_free_row(draft, ctx, rng) for _ in range(2)))
        if len(rows) < 2:
            raise GenerationError("one product drawn twice for a two-line order")
        order = _older_order(draft, ctx, rng, rows)
        k = below(rng, 2)
        line, row = order["items"][k], rows[k]
        refund = _add_return(draft, order, line, pick(rng, RESTOCKING_FEES))
        net = round(order["total"] - refund, 2)
        noun, day = ctx.noun(row), spoken_day(order["placed"])
        values = {"noun": noun, "day": day}
        sentence = render(pick(rng, NET_REFUND_SENTENCES), values, rng, typo_rate)
        say = f"Net of the refund, order {order['order_id']} cost you {money(net)}."
        allowed = [f"{order['total']:.2f}", f"{refund:.2f}"]
    else:
        for _ in range(ROW_TRIES):
            row = _free_row(draft, ctx, rng)
            fits = [v for v in VOUCHERS if v <= 0.8 * ctx.product(row)["price"]]
            if fits:
                break
        else:
            raise GenerationError("no product dear enough for a gift card")
        voucher = pick(rng, fits)
        order = _older_order(draft, ctx, rng, [row])
        line = order["items"][0]
        net = round(line["price"] - voucher, 2)
        noun, day = ctx.noun(row), spoken_day(order["placed"])
        values = {"noun": noun, "day": day, "voucher": money(voucher)}
        sentence = render(pick(rng, NET_VOUCHER_SENTENCES), values, rng, typo_rate)
        say = f"With the voucher, the {noun} ({order['order_id']}) would cost {money(net)}."
        allowed = [f"{line['price']:.2f}", f"{order['total']:.2f}"]
    # about the whole request: a figure worked out, never shown of the order
    fact = AnswerFact(kind="money", value=f"{net:.2f}", say=say, allowed=allowed)
    return sentence, fact, order["order_id"]


# the demands asked of orders added for them alone, in `LATE_KINDS` order
OWN_ORDERS = {"twins": _twins, "branch": _branch, "net": _net}


def add_late_demands(
    draft: Draft,
    demands: tuple[str, ...],
    ctx: GenContext,
    rng: np.random.Generator,
    typo_rate: float,
    *,
    listed: bool,
) -> None:
    """Add `demands` to `draft` in place: history where it is short (and the orders the
    twins, branch and net demands are about), the prompt's questions, the goal's facts (in
    `demands` order), and the reference's look-ups (an add-on: `Draft.addon_calls`; as many
    as `late_cost` says). Raises GenerationError when the history has no fitting order (the
    build is redrawn)."""
    if not demands:
        return
    _with_history(draft, ctx, rng, need=1 + 3 * len({"chained", "total"} & set(demands)))
    asked: dict[str, tuple[str, AnswerFact, str]] = {}
    before = {o["order_id"] for o in draft.initial_state["orders"]}
    for demand in demands:
        if demand in OWN_ORDERS:
            asked[demand] = OWN_ORDERS[demand](draft, ctx, rng, typo_rate)
    # the chained look-up and the total read other orders (a near-twin's day names no twin)
    reserved = frozenset(o["order_id"] for o in draft.initial_state["orders"]) - before
    if "chained" in demands:
        asked["chained"] = _chained(draft, ctx, rng, typo_rate, reserved)
    if "total" in demands:
        asked["total"] = (*_total(draft, ctx, rng, typo_rate, reserved), "")
    # after the main request's first listing, or a listing of their own first (a second
    # listing of an unchanged history would repeat a read)
    first = next((k for k, c in enumerate(draft.reference) if c.name == "list_orders"), None)
    if (first is not None) is not listed:
        raise RuntimeError(f"internal: the plan says listed={listed}, its reference disagrees")
    calls = [call("list_orders")] if first is None else []
    for demand in demands:
        looked_up = asked[demand][2]
        if demand in LOOKUPS:
            calls.append(call("get_order", order_id=looked_up))
            draft.goal.relevant_ids.append(looked_up)
    at = 0 if first is None else first + 1
    draft.reference[at:at] = calls
    draft.addon_calls.extend(calls)
    draft.prompt = before_closer(draft.prompt, [asked[d][0] for d in demands])
    draft.goal.answer_facts.extend(asked[d][1] for d in demands)
