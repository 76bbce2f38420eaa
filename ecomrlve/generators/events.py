"""World events drawn for a built task (issue 29): the shop changes during the episode.

`add_events(task, ctx, key)` runs after a scenario's build, from difficulty `events_from`
(default `EVENTS_FROM`) up, on a random stream of its own (`EVENTS_STREAM`: the scenario's
draws, and so every task below `events_from`, are byte-identical with or without events). It
picks among the events the task allows, on a core call (one serving the main request, never an
add-on), rewrites the reference so that it handles each one, and replays that reference through
the verifier (a draw it cannot solve is dropped). Each event is tied to an action of the agent
(`WorldEvent.before` / `after`, issue 44), so an extra read never moves it:

| event         | fires                                | the reference                        |
|---------------|--------------------------------------|--------------------------------------|
| tool_failure  | on the first call of a shop tool     | sends the same call again            |
|               | naming that item or order (timeout,  |                                      |
|               | 503, 429); `ask_user` never fails    |                                      |
| price_change  | after the first add of the item      | checks out; tells the new price (a   |
|               |                                      | rise past the budget: views the cart |
|               |                                      | and asks the customer first)         |
| out_of_stock  | before the add (refused), or after   | adds the next fitting search hit     |
|               | it (the checkout is refused)         | (first removing the sold-out one,    |
|               |                                      | then checking out again); tells why  |
| order_shipped | before the cancel of an order (the   | tells it has shipped                 |
|               | cancel is refused)                   |                                      |
|               | before the first look at an order    | tells it has shipped (when no other  |
|               | asked about                          | change of the world fits the task)   |

No event is a no-op: an order whose cancel a purchase hangs on is not shipped. From
`CONFIRM_FROM` (d9) a `confirm_writes` shop rule holds committing writes for the customer's yes
(`confirm_prob(d)`: 1/2 at d9, 1 at d10); the reference asks before its first one.

Two knobs grow with the difficulty above 8. `acting_first_prob(d)`: P(the changes the
reference must act on, out of stock and a shipped order, are tried before a price change, which
it only has to tell): 0 up to d8 (a random order), 1/2 at d9, 1 at d10. `failure_prob(d)`: P(a
transient failure besides the change of the world): 1/2 up to d8, 3/4 at d9, 1 at d10.

The env plays the events (`ecomrlve.env.world.events`) and the verifier judges each action on the
world as it was when taken.
"""

from __future__ import annotations

import logging
import zlib

import numpy as np

from ecomrlve.config import EVENTS_FROM, NO_EVENTS, EnvConfig
from ecomrlve.env import reference_turns, verify
from ecomrlve.env.world.events import names
from ecomrlve.generators.base import TaskKey
from ecomrlve.generators.blocks import spoken_day
from ecomrlve.generators.context import GenContext
from ecomrlve.generators.draws import seed_sequence
from ecomrlve.generators.event_draft import EventDraft
from ecomrlve.generators.followups import before_closer
from ecomrlve.generators.talk import add_change_of_mind, add_clarify, talk_rng
from ecomrlve.tasks import TRANSIENT_ERRORS, AnswerFact, Task, ToolCall, WorldEvent

log = logging.getLogger(__name__)

EVENTS_STREAM = 0xE7E27  # the last entropy word of a task's events stream
WORLD_KINDS = ("price_change", "out_of_stock", "order_shipped")
TOLD_ONLY = frozenset({"price_change"})  # changes the reference only tells, acting on nothing
PRICE_FACTORS = (0.8, 0.85, 0.9, 1.1, 1.15, 1.2)
SHIPPABLE = frozenset({"pending", "processing"})
_CONFIG = EnvConfig()


def check_events_from(value: int) -> int:
    """`value` if it is a difficulty events may start from (0..11; 11 = never), else ValueError."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= NO_EVENTS:
        raise ValueError(
            f"events_from must be an integer from 0 to {NO_EVENTS} ({NO_EVENTS}: no events), "
            f"got {value!r}"
        )
    return value


def events_rng(key: TaskKey) -> np.random.Generator:
    entropy = [key.seed, key.scenario_id, key.index, key.difficulty, key.attempt, EVENTS_STREAM]
    return np.random.default_rng(seed_sequence(entropy))


# ---- one event each ------------------------------------------------------------------------------
# Every event hangs on a core call (one serving the main request, not an add-on) and is tied to
# an action of the agent (`WorldEvent.before` / `after`), so an extra read never moves it; the
# reference runs into it where a real shop shows it.
def _is_core(draft: EventDraft, index: int) -> bool:
    return not draft.core_calls or index in draft.core_calls


def _price_change(draft: EventDraft, rng: np.random.Generator) -> bool:
    points = [(a, c) for a, c in draft.purchase_points() if _is_core(draft, a)]
    if not points:
        return False
    a, checkout = points[int(rng.integers(len(points)))]
    item_id = draft.reference[a].arguments["item_id"]
    old = draft.price(item_id)
    factors = [float(f) for f in rng.permutation(PRICE_FACTORS)]
    cart = draft.cart_at(checkout)
    # a rise just past the budget, where one is plausible: the customer must be asked
    if rng.random() < over_budget_prob(draft.task.difficulty):
        new = _past_budget(draft, cart, item_id, old)
        if new is None and draft.goal.purchase.budget is None:  # one the customer states
            new = _state_budget(draft, cart, item_id, old, rng)
        if new is not None:
            declined = draft.allow_decline and rng.random() < DECLINE_PROB
            if declined and [c.name for c in draft.reference].count("checkout") == 1:
                slots = draft.goal.purchase.slots
                alone = sum(item_id in slot.acceptable for slot in slots) == 1
                drop = len(cart) > 1 and len(slots) > 1 and alone and rng.random() < DROP_PROB
                return _over_budget(draft, a, item_id, old, new, checkout=checkout, drop=drop)
            return _over_budget(draft, a, item_id, old, new)
    for factor in factors:
        new = round(old * factor, 2)
        if new != old and new > 0 and draft.within_budget(cart, {item_id: new}):
            break
    else:
        return False
    say = (
        f"Note: the price of the {draft.title(item_id)} changed from ${old:.2f} to ${new:.2f} "
        "while I was placing your order, and the order was charged at the new price."
    )
    # the agent saw the old price before adding it; the cart and the checkout show the new one
    draft.events.append(
        WorldEvent(kind="price_change", after_calls=a + 1, item_id=item_id, price=new,
                   old_price=old, say=say, after="add_to_cart")
    )  # fmt: skip
    return True


def _past_budget(draft: EventDraft, cart: dict[str, int], item_id: str, old: float) -> float | None:
    """A new price of `item_id` that takes the cart 5% of its price past the budget, if that is
    a rise of at most `MAX_RISE` (None: no budget, or too far to be plausible)."""
    purchase = draft.goal.purchase
    if purchase is None or purchase.budget is None or not draft.within_budget(cart, {}):
        return None
    total = sum(draft.price(i) * q for i, q in cart.items())
    new = round(old + (purchase.budget - total) / cart[item_id] + 0.05 * old, 2)
    if new > old * (1 + MAX_RISE) or draft.within_budget(cart, {item_id: new}):
        return None
    return new


def _over_budget(
    draft: EventDraft,
    a: int,
    item_id: str,
    old: float,
    new: float,
    checkout: int | None = None,
    drop: bool = False,
) -> bool:
    """The price rises past the customer's budget after the add: the reference sees it in the
    cart and asks the customer. Without `checkout` they agree (a yes from the goal's purchase)
    and the reference buys; with it they say no (`WorldEvent.declined`): the reference drops
    that checkout and tells them the new price and that it ordered nothing, or, with `drop`,
    they say to leave that product out: the reference removes it and buys the rest."""
    budget = draft.goal.purchase.budget
    title = draft.title(item_id)
    wording = OVER_BUDGET_QUESTIONS[zlib.crc32(draft.task.task_id.encode()) % 3]
    question = wording.format(title=title, old=old, new=new, budget=budget)
    at = a + 1
    if at < len(draft.reference) and draft.reference[at].name == "view_cart":
        asked = [ToolCall(name="ask_user", arguments={"question": question})]
        draft.insert(at + 1, asked)
    else:
        asked = [
            ToolCall(name="view_cart"),
            ToolCall(name="ask_user", arguments={"question": question}),
        ]
        draft.insert(at, asked)
    crc = zlib.crc32(draft.task.task_id.encode())
    reply = ""
    if drop:
        row = draft.ctx.catalog.row_of(item_id)
        noun = draft.ctx.noun(row) if row is not None else "item"
        reply = DROP_REPLIES[crc % len(DROP_REPLIES)].format(noun=noun)
        remove = ToolCall(name="remove_from_cart", arguments={"item_id": item_id})
        draft.insert(at + 2, [remove])  # right after the question (the cart viewed at `at`)
        say = DROPPED_SAY[crc % len(DROPPED_SAY)]
    elif checkout is not None:
        draft.remove(checkout + len(asked), core_instead=at + 1)  # the question
        say = DECLINED_SAY[crc % len(DECLINED_SAY)]
    else:
        say = (
            "The price of the {title} went up from ${old:.2f} to ${new:.2f}, past your budget; "
            "as you agreed, I placed the order at the new price."
        )
    draft.events.append(
        WorldEvent(kind="price_change", after_calls=a + 1, item_id=item_id, price=new,
                   old_price=old, say=say.format(title=title, old=old, new=new, budget=budget),
                   after="add_to_cart", over_budget=True, declined=checkout is not None,
                   drop=drop, reply=reply)
    )  # fmt: skip
    return True


def _state_budget(
    draft: EventDraft, cart: dict[str, int], item_id: str, old: float, rng: np.random.Generator
) -> float | None:
    """Give a purchase without a budget one the customer states (a sentence of the prompt and
    a customer fact): the cart's cost rounded up to whole dollars plus 5-15%, so a rise past it
    is plausible; the new price past it (None, and nothing changed: no plausible rise)."""
    total = sum(draft.price(i) * q for i, q in cart.items())
    budget = float(np.ceil(total * (1.05 + 0.1 * rng.random())))
    purchase = draft.goal.purchase
    purchase.budget = budget
    new = _past_budget(draft, cart, item_id, old)
    if new is None:
        purchase.budget = None
        return None
    sentence = STATED_BUDGETS[int(rng.integers(len(STATED_BUDGETS)))].format(b=f"${budget:.0f}")
    draft.prompt = before_closer(draft.prompt, [sentence])
    draft.goal.user_facts["budget"] = f"${budget:.0f}"
    return new


STATED_BUDGETS = (
    "Please keep the items under {b} in total.",
    "I don't want to spend more than {b} on the items, shipping aside.",
    "My limit for the items is {b} altogether.",
    "The items shouldn't come to more than {b}.",
    "I can spend up to {b} on this, before shipping.",
    "Budget-wise, {b} for everything (not counting shipping) is my ceiling.",
)


def over_budget_prob(difficulty: int) -> float:
    """P(a price change tries a rise past the budget first, where one fits): 1/2 up to d8, then
    1/4 more a step (always at d10). Such a rise changes what the agent must do (ask; buy or
    not), where a rise within the budget only needs telling."""
    return min(1.0, OVER_BUDGET_PROB + 0.25 * max(0, difficulty - 8))


DECLINE_PROB = 0.5  # P(the customer says no to a rise past the budget)
DROP_PROB = 0.5  # P(with other products in the order, the no leaves only that one out)
DROP_REPLIES = (
    "No — not at that price. Leave the {noun} out and order the rest, please.",
    "Then take the {noun} out of the order and go ahead with the rest.",
    "That's too much. Drop the {noun} and place the order for the others.",
    "Skip the {noun}, please, and order everything else.",
    "I'll do without the {noun} then; order the rest.",
    "No to the {noun} at that price, but the rest can go ahead.",
)
DROPPED_SAY = (
    "The price of the {title} went up from ${old:.2f} to ${new:.2f}, past your budget, so as you "
    "asked I left it out and ordered the rest.",
    "The {title} rose from ${old:.2f} to ${new:.2f}, over your ${budget:.2f} budget; I removed "
    "it, as you asked, and placed the order for the rest.",
    "The {title} now costs ${new:.2f} instead of ${old:.2f}, above your budget, so it was left "
    "out and the rest of your order went through.",
)
DECLINED_SAY = (
    "The price of the {title} went up from ${old:.2f} to ${new:.2f}, over your ${budget:.2f} "
    "budget, so as you asked I did not place the order.",
    "The {title} now costs ${new:.2f} instead of ${old:.2f}, which is past your budget; you "
    "said no, so I haven't placed the order.",
    "Since the {title} rose from ${old:.2f} to ${new:.2f}, above your ${budget:.2f} limit, I "
    "didn't order it, as you asked.",
)


OVER_BUDGET_PROB = 0.5  # P(a price change tries a rise past the budget first, where one fits)
MAX_RISE = 0.5  # the largest rise past a budget drawn: +50%
OVER_BUDGET_QUESTIONS = (
    "The {title} just went up from ${old:.2f} to ${new:.2f}, over your ${budget:.2f} budget. "
    "Shall I still place the order?",
    "Heads-up: the price of the {title} rose to ${new:.2f} (it was ${old:.2f}), which puts the "
    "order above your budget of ${budget:.2f}. Do you want me to order it anyway?",
    "The {title} now costs ${new:.2f} instead of ${old:.2f}, past your ${budget:.2f} limit. "
    "Is it okay if I go ahead and buy it at that price?",
)


def _last_search(draft: EventDraft, before: int) -> list[str]:
    for call in reversed(draft.reference[:before]):
        if call.name == "search":
            args = call.arguments
            hits = draft.ctx.catalog.search(
                args.get("query", ""), args.get("filters"), int(args.get("top_k", 10))
            )
            return [hit["item_id"] for hit in hits]
    return []


def _substitute(draft: EventDraft, a: int, checkout: int) -> str | None:
    """The next hit of the search before add `a` that fits the same purchase line, is in stock
    and keeps the cart within budget (what an agent reacting to the stock-out would pick)."""
    purchase = draft.task.goal.purchase
    args = draft.reference[a].arguments
    item_id, quantity = args["item_id"], int(args.get("quantity", 1))
    cart = draft.cart_at(checkout)
    slots = [s for s in purchase.slots if item_id in s.acceptable]
    catalog = draft.ctx.catalog
    for candidate in _last_search(draft, a):
        row = catalog.row_of(candidate)
        if (
            candidate == item_id
            or candidate in cart
            or not any(candidate in s.acceptable for s in slots)
            or row is None
            or int(catalog.stock[row]) < quantity + 1
        ):
            continue
        swapped = {k: v for k, v in cart.items() if k != item_id} | {candidate: cart[item_id]}
        if draft.within_budget(swapped, {}):
            return candidate
    return None


def _out_of_stock(draft: EventDraft, rng: np.random.Generator) -> bool:
    """A product the reference buys sells out: at the add (the add is refused) or, once it is
    in the cart, at the checkout (refused, naming it); the reference swaps in the next fitting
    hit of its search."""
    points = [(a, c) for a, c in draft.purchase_points() if _is_core(draft, a)]
    if draft.task.goal.purchase is None or not points:
        return False
    a, checkout = points[int(rng.integers(len(points)))]
    item_id = draft.reference[a].arguments["item_id"]
    substitute = _substitute(draft, a, checkout)
    if substitute is None:
        return False
    quantity = draft.cart_at(checkout)[item_id]
    at_add = rng.random() < 0.5 and item_id not in draft.cart_at(a)
    if at_add:
        say = (
            f"Sorry: the {draft.title(item_id)} ({item_id}) was out of stock when I tried to add "
            f"it, so I took the {draft.title(substitute)} ({substitute}) instead."
        )
        event = WorldEvent(kind="out_of_stock", after_calls=a, item_id=item_id,
                           substitute=substitute, say=say, before="add_to_cart")  # fmt: skip
        draft.insert(a + 1, [
            ToolCall(name="add_to_cart", arguments={"item_id": substitute, "quantity": quantity}),
        ])  # fmt: skip
    else:
        say = (
            f"Sorry: the {draft.title(item_id)} ({item_id}) went out of stock before checkout. "
            f"The {draft.title(substitute)} ({substitute}) takes its place."
        )
        event = WorldEvent(kind="out_of_stock", after_calls=a + 1, item_id=item_id,
                           substitute=substitute, say=say, after="add_to_cart")  # fmt: skip
        draft.insert(checkout, [
            ToolCall(name="checkout", arguments=dict(draft.reference[checkout].arguments)),
            ToolCall(name="remove_from_cart", arguments={"item_id": item_id}),
            ToolCall(name="add_to_cart", arguments={"item_id": substitute, "quantity": quantity}),
        ])  # fmt: skip
    draft.events.append(event)
    draft.names[substitute] = draft.title(substitute)
    return True


def _order_shipped(draft: EventDraft, rng: np.random.Generator) -> bool:
    """An order to cancel ships just before the cancel: the cancel is refused and the
    reference tells it. (An order whose cancel a purchase hangs on, `generators/dependent.py`,
    is not drawn: the goal's purchase would no longer be the one asked for.)"""
    orders = {o["order_id"]: o for o in draft.task.initial_state.get("orders", [])}
    cancels = [
        c for c, call in enumerate(draft.reference)
        if call.name == "cancel_order"
        and _is_core(draft, c)
        and orders.get(call.arguments["order_id"], {}).get("status") in SHIPPABLE
        and not _bought_on(draft, c, orders[call.arguments["order_id"]])
    ]  # fmt: skip
    if not cancels:
        return False
    c = cancels[int(rng.integers(len(cancels)))]
    order_id = draft.reference[c].arguments["order_id"]
    say = (
        f"Your order {order_id} has already shipped, so it can't be cancelled any more; you can "
        "return it once it arrives."
    )
    draft.events.append(
        WorldEvent(kind="order_shipped", after_calls=c, order_id=order_id, say=say,
                   before="cancel_order")
    )  # fmt: skip
    return True


def _bought_on(draft: EventDraft, c: int, order: dict) -> bool:
    """Whether a later reference call opens the page of an item of `order` (a dependent
    purchase's first step), so what the reference buys hangs on cancel call `c`."""
    items = {line["item_id"] for line in order.get("items", [])}
    return any(
        call.name == "get_product" and call.arguments.get("item_id") in items
        for call in draft.reference[c + 1 :]
    )


def _status_shipped(draft: EventDraft, rng: np.random.Generator) -> bool:
    """An order the customer asks the status of ships just before the reference first looks
    at it (not one to cancel: `_order_shipped` draws those, nor one whose cancel is asked
    about). The told change replaces what the reference says of its status and date."""
    orders = {o["order_id"]: o for o in draft.task.initial_state.get("orders", [])}
    cancels = {
        c.arguments.get("order_id") for c in draft.reference if c.name == "cancel_order"
    } | set(draft.task.goal.cancel)
    facts: dict[str, list[AnswerFact]] = {}
    for fact in draft.task.goal.answer_facts:
        if fact.subject:
            facts.setdefault(fact.subject, []).append(fact)
    picks = []
    for order_id, about in facts.items():
        order = orders.get(order_id)
        status = [f.value for f in about if f.kind == "status"]
        if (
            order is None
            or order_id in cancels
            or order["status"] not in SHIPPABLE
            or status != [order["status"]]
            or {f.kind for f in about} & {"verdict", "term"}
        ):
            continue
        looks = [
            k for k, c in enumerate(draft.reference)
            if c.name == "list_orders"
            or (c.name == "get_order" and c.arguments.get("order_id") == order_id)
        ]  # fmt: skip
        if looks and _is_core(draft, looks[0]):
            picks.append((order_id, looks[0]))
    if not picks:
        return False
    order_id, first_look = picks[int(rng.integers(len(picks)))]
    order = orders[order_id]
    row = draft.ctx.catalog.row_of(order["items"][0]["item_id"])
    noun = draft.ctx.noun(row) if row is not None else "items"
    say = f"Your order {order_id} with the {noun} has just shipped"
    if order.get("eta"):
        say += f" and should arrive on {spoken_day(order['eta'])}"
    # told in place of the order's status and date (`reference.final_answer`); its details stay
    draft.events.append(
        WorldEvent(kind="order_shipped", after_calls=first_look, order_id=order_id, say=say + ".",
                   before=draft.reference[first_look].name)
    )  # fmt: skip
    return True


def _subject(call: ToolCall) -> dict[str, str]:
    return {
        key: call.arguments[key]
        for key in ("item_id", "order_id")
        if isinstance(call.arguments.get(key), str)
    }


def _tool_failure(draft: EventDraft, rng: np.random.Generator) -> bool:
    """A core call fails once (a shop service, not the customer: `ask_user` is the
    conversation itself): the first call of its tool naming its item or order."""
    calls = []
    for j, call in enumerate(draft.reference):
        if call.name == "ask_user" or not _is_core(draft, j):
            continue
        probe = WorldEvent(kind="tool_failure", after_calls=j, **_subject(call))
        if not any(c.name == call.name and names(probe, c.arguments) for c in draft.reference[:j]):
            calls.append(j)
    if not calls:
        return False
    j = calls[int(rng.integers(len(calls)))]
    call = draft.reference[j]
    event = WorldEvent(kind="tool_failure", after_calls=j, tool=call.name,
                       error=str(rng.choice(TRANSIENT_ERRORS)), before=call.name,
                       **_subject(call))  # fmt: skip
    draft.insert(j + 1, [ToolCall(name=call.name, arguments=dict(call.arguments))])
    draft.events.append(event)
    return True


def handling_calls(task: Task) -> int:
    """Reference calls `task` spends on its world events (`min_steps` = plan steps + these):
    the retry of a failed call, the add of a substitute (refused at the add) or the refused
    checkout, the remove and the add (refused at the checkout)."""
    spent = {"tool_failure": 1, "out_of_stock": 3, "price_change": 0, "order_shipped": 0,
             "confirm_writes": 1, "clarify": 1, "change_of_mind": 1}  # fmt: skip
    # a price over the budget: the cart viewed (unless the reference views it anyway) and the
    # customer asked (turned down: no checkout)
    return sum(
        1 if event.before == "add_to_cart"
        else 3 if event.drop
        else 2 - event.declined if event.over_budget
        else spent[event.kind]
        for event in task.events
    )  # fmt: skip


# ---- a shop rule: the customer's yes before a committing write (issue 44) ------------------------
CONFIRM_FROM = 9
COMMITTING = ("checkout", "cancel_order", "return_item", "exchange_item")


def confirm_prob(difficulty: int) -> float:
    """P(the shop needs the customer's explicit yes before a write): 0 below d9, 1/2 at d9,
    1 at d10."""
    return min(1.0, 0.5 * max(0, difficulty - CONFIRM_FROM + 1))


def _confirmation(draft: EventDraft, rng: np.random.Generator) -> bool:
    """The `confirm_writes` rule: the reference asks the customer before its first
    committing write (a yes, from the goal, lets every write after it through)."""
    writes = [k for k, c in enumerate(draft.reference) if c.name in COMMITTING]
    if not writes:
        return False
    first = writes[0]
    call = draft.reference[first]
    args = call.arguments
    action = {
        "checkout": "place the order",
        "cancel_order": f"cancel order {args.get('order_id')}",
        "return_item": f"start the return from order {args.get('order_id')}",
        "exchange_item": f"set up the exchange on order {args.get('order_id')}",
    }[call.name]
    wording = CONFIRM_WORDINGS[int(rng.integers(len(CONFIRM_WORDINGS)))]
    question = wording.format(action=action)
    draft.insert(first, [ToolCall(name="ask_user", arguments={"question": question})])
    draft.events.append(WorldEvent(kind="confirm_writes", after_calls=0))
    return True


CONFIRM_WORDINGS = (
    "Shall I go ahead and {action}?",
    "Do you want me to {action}?",
    "Before I {action}: is that okay with you?",
    "Can I {action} now?",
    "Would you like me to {action}?",
    "Just to confirm: should I {action}?",
)


def acting_first_prob(difficulty: int) -> float:
    """P(the changes the reference must act on are tried before those it only tells): 0 up to
    d8, then 1/2 more a step (always at d10)."""
    return min(1.0, 0.5 * max(0, difficulty - 8))


def failure_prob(difficulty: int) -> float:
    """P(a transient tool failure beside a change of the world): 1/2 up to d8, then 1/4 more a
    step (every task at d10)."""
    return min(1.0, 0.5 + 0.25 * max(0, difficulty - 8))


DRAWS = {
    "price_change": _price_change,
    "out_of_stock": _out_of_stock,
    "order_shipped": _order_shipped,
}


def add_events(
    task: Task,
    ctx: GenContext,
    key: TaskKey,
    events_from: int = EVENTS_FROM,
) -> Task:
    """`task` with world events when its difficulty is `events_from` or more (else unchanged).

    One change of the world (the kinds this task allows, in a random order: the first that
    fits) plus, with probability `failure_prob(difficulty)` or when no change fits, a transient
    tool failure. When no change fits, an order asked about may ship as well. The
    rewritten reference is replayed through the verifier; a draw it cannot solve leaves the
    task without events (logged). The draws do not depend on a step band, so
    `regenerate(task_id)` rebuilds the same events.
    """
    if task.difficulty < events_from:
        return task
    dynamic = _with_events(task, ctx, key, allow_decline=True)
    if dynamic is None:  # a "no" to the new price the reference cannot answer: they say yes
        dynamic = _with_events(task, ctx, key, allow_decline=False)
    return task if dynamic is None else dynamic


def _with_events(task: Task, ctx: GenContext, key: TaskKey, *, allow_decline: bool) -> Task | None:
    """`task` with its drawn events and the reference that handles them; `task` itself when
    none fit, None when the reference does not verify (logged)."""
    rng = events_rng(key)
    talk = talk_rng(key)
    draft = EventDraft(task, ctx, allow_decline)
    changed = False
    kinds = [str(kind) for kind in rng.permutation(WORLD_KINDS)]
    if rng.random() < acting_first_prob(task.difficulty):
        kinds = [k for k in kinds if k not in TOLD_ONLY] + [k for k in kinds if k in TOLD_ONLY]
    for kind in kinds:
        if DRAWS[kind](draft, rng):
            changed = True
            break
    if not changed or rng.random() < failure_prob(task.difficulty):
        _tool_failure(draft, rng)
    if not changed:  # drawn last: every other draw is the one it was before this kind
        _status_shipped(draft, rng)
    add_clarify(draft, talk)
    if task.difficulty >= CONFIRM_FROM and rng.random() < confirm_prob(task.difficulty):
        _confirmation(draft, rng)
    add_change_of_mind(draft, talk)
    if not draft.events:
        return task
    goal = draft.goal.model_copy(update={"product_names": draft.names})
    dynamic = task.model_copy(
        update={
            "prompt": draft.prompt,
            "reference": draft.reference,
            "min_steps": len(draft.reference),
            "core_calls": draft.core_calls,
            "events": draft.events,
            "goal": goal,
        }
    )
    verdict = verify(dynamic, reference_turns(dynamic), ctx.catalog, _CONFIG)
    if not verdict.success or verdict.tool_calls != dynamic.min_steps:
        log.debug("%s: events dropped: %s", task.task_id, "; ".join(verdict.violations[:3]))
        if allow_decline and any(e.declined for e in draft.events):
            return None
        return task
    return dynamic
