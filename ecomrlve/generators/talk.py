"""A customer who talks back (issue 44, items 2 and 3): requests only the customer can settle,
and a customer who changes their mind.

Drawn by `generators/events.py` on a stream of its own (`TALK_STREAM`: every other draw of a
task is what it was without these), on the world-events draft, before the shop's
confirmation rule (`clarify`) and after it (`change_of_mind`). Each is a `WorldEvent` that
changes nothing in the shop; the simulated user and the verifier read it.

* `clarify` (from d8): the customer names an order by its products only, and another order
  holds the same products; the day that tells them apart is held back. The reference asks which
  order before it acts on either; an agent that guesses fails, even when it guesses right (the
  verifier wants the fact told first: `env.events.unsettled`).
* `change_of_mind` (from d9): asked to confirm the purchase (the shop's rule, or "check with me
  before you order"), the customer wants another quantity. The reference asks, sets the new
  quantity and buys; an agent that buys the first wish fails (the goal's line wants the new one).

`clarify_prob(d)`: 1/2 at d8, 3/4 at d9, 1 at d10, of the tasks with a twin order named by its
day (cancel, return, order_status, journey). `change_prob(d)`: 1/2 at d9, 3/4 at d10, of the
purchases with one checkout that add a product once, one unit (no stock-out or rise past the
budget, no quantity fact). The wording of the held-back phrase, the
reference's question and the customer's new wish is drawn from several forms each.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import numpy as np

from ecomrlve.env.episode.user import KEYWORD_PATTERNS, is_confirmation
from ecomrlve.generators.blocks import spoken_day
from ecomrlve.generators.draws import pick, seed_sequence
from ecomrlve.generators.followups import before_closer
from ecomrlve.tasks import ToolCall, WorldEvent

if TYPE_CHECKING:
    from ecomrlve.generators.base import TaskKey
    from ecomrlve.generators.event_draft import EventDraft

TALK_STREAM = 0x7A1C  # the last entropy word of a task's talk-back stream
CLARIFY_FROM = 8
CHANGE_FROM = 9
WRITES_ON_ORDERS = ("get_order", "cancel_order", "return_item", "exchange_item")

# said instead of "on <day>": true of both matching orders, so only the customer can tell
HELD_BACK: tuple[str, ...] = (
    "a while back",
    "some time ago",
    "a little while ago",
    "not so long ago",
    "at some point",
    "earlier on",
)
CLARIFY_QUESTIONS: tuple[str, ...] = (
    "I can see two orders with the {noun}. Which order do you mean?",
    "Which of your two orders with the {noun} is it — when did you place it?",
    "There are two matching orders for the {noun}; which purchase are you asking about?",
    "Which order is it? You have two with the {noun}.",
    "What day did you place the order with the {noun}? I see two of them.",
    "Which one of the two {noun} orders do you mean?",
)
CHANGE_REPLIES: tuple[str, ...] = (
    "Actually, I've changed my mind: make it {n} of the {noun}, please. With that, yes, go ahead.",
    "Hmm, on second thought I'd rather have {n} of them. Change it to {n}, then go ahead.",
    "Wait — could you make that {n} instead of one? Then yes, place the order.",
    "Oh, before you do: I'd like {n} of the {noun}, not just one. Yes to the order with {n}.",
    "Yes, but one thing — I've decided I want {n}, not one. Change the quantity and go ahead.",
    "Thinking about it, {n} would be better than one. Update it to {n} and yes, order it.",
)
NUMBER_WORDS = {2: "two", 3: "three"}


def talk_rng(key: TaskKey) -> np.random.Generator:
    entropy = [key.seed, key.scenario_id, key.index, key.difficulty, key.attempt, TALK_STREAM]
    return np.random.default_rng(seed_sequence(entropy))


def clarify_prob(difficulty: int) -> float:
    """P(a twin order is named without its day, so the agent must ask): 0 below d8, 1/2 at
    d8, then 1/4 more a step."""
    if difficulty < CLARIFY_FROM:
        return 0.0
    return min(1.0, 0.5 + 0.25 * (difficulty - CLARIFY_FROM))


def change_prob(difficulty: int) -> float:
    """P(the customer changes the quantity when asked to confirm): 0 below d9, 1/2 at d9, 3/4
    at d10."""
    if difficulty < CHANGE_FROM:
        return 0.0
    return min(1.0, 0.5 + 0.25 * (difficulty - CHANGE_FROM))


def _items(order: dict) -> tuple[str, ...]:
    return tuple(sorted(line["item_id"] for line in order["items"]))


def add_clarify(draft: EventDraft, rng: np.random.Generator) -> bool:
    """Hold back the day that tells the order meant from its twin (same products): the prompt
    says a vague time instead, and the reference asks which order before its first call on
    either. Only where the prompt says the day once, no question of the reference asks about
    the order already, and the reference reaches the order by a call that names it or a
    listing."""
    task = draft.task
    if rng.random() >= clarify_prob(task.difficulty) or "order" not in task.goal.user_facts:
        return False
    orders = task.initial_state.get("orders", [])
    by_id = {o["order_id"]: o for o in orders}
    meant = next(
        (by_id[i] for i in task.goal.relevant_ids
         if i in by_id and sum(_items(o) == _items(by_id[i]) for o in orders) == 2),
        None,
    )  # fmt: skip
    if meant is None:
        return False
    twin = next(o for o in orders if _items(o) == _items(meant) and o is not meant)
    when = re.compile(rf"\bon {re.escape(spoken_day(meant['placed']))}\b")  # not "on May 12"
    said = when.findall(draft.prompt)
    if len(said) != 1 or spoken_day(twin["placed"]) == spoken_day(meant["placed"]):
        return False
    asks = [c.arguments.get("question", "") for c in draft.reference if c.name == "ask_user"]
    if any(KEYWORD_PATTERNS["order"].search(q) and not is_confirmation(q) for q in asks):
        return False
    pair = {meant["order_id"], twin["order_id"]}
    at = next(
        (k for k, c in enumerate(draft.reference)
         if c.name in WRITES_ON_ORDERS and c.arguments.get("order_id") in pair),
        None,
    )  # fmt: skip
    if at is None:
        listing = next((k for k, c in enumerate(draft.reference) if c.name == "list_orders"), None)
        if listing is None:
            return False
        at = listing + 1
    row = draft.ctx.catalog.row_of(meant["items"][0]["item_id"])
    noun = draft.ctx.noun(row) if row is not None else "items"
    question = pick(rng, CLARIFY_QUESTIONS).format(noun=noun)
    draft.prompt = when.sub(pick(rng, HELD_BACK), draft.prompt, count=1)
    draft.insert(at, [ToolCall(name="ask_user", arguments={"question": question})])
    draft.events.append(
        WorldEvent(kind="clarify", after_calls=at, order_id=meant["order_id"], fact="order")
    )
    return True


def add_change_of_mind(draft: EventDraft, rng: np.random.Generator) -> bool:
    """Asked to confirm the purchase, the customer wants 2 or 3 units of a product the
    reference adds once, instead of one. The reference asks before its checkout (the shop's
    confirmation rule's question where that is the one before it, else a question the prompt
    asks for: "check with me before you order"), sets the new quantity after the answer and
    checks out; the goal's line wants the new quantity."""
    task = draft.task
    purchase = draft.goal.purchase
    if (
        rng.random() >= change_prob(task.difficulty)
        or purchase is None
        or "quantity" in task.goal.user_facts
        or any(e.kind == "out_of_stock" or e.over_budget for e in draft.events)
    ):
        return False
    names = [c.name for c in draft.reference]
    if names.count("checkout") != 1:
        return False
    checkout = names.index("checkout")
    cart_before = draft.cart_at(0)
    changed = {e.item_id for e in draft.events if e.item_id and e.kind != "price_change"}
    adds = [c.arguments["item_id"] for c in draft.reference if c.name == "add_to_cart"]
    fits = [
        c.arguments["item_id"]
        for c in draft.reference[:checkout]
        if c.name == "add_to_cart"
        and int(c.arguments.get("quantity", 1)) == 1
        and c.arguments["item_id"] not in cart_before
        and c.arguments["item_id"] not in changed
        and adds.count(c.arguments["item_id"]) == 1
    ]
    if not fits:
        return False
    item_id = fits[0]
    slots = [s for s in purchase.slots if item_id in s.acceptable and s.quantity == 1]
    if len(slots) != 1:
        return False
    quantity = 2 + int(rng.random() < 0.3)
    cart = draft.cart_at(checkout) | {item_id: quantity}
    prices = {e.item_id: e.price for e in draft.events if e.kind == "price_change" and e.price}
    if not draft.within_budget(cart, prices):
        return False
    row = draft.ctx.catalog.row_of(item_id)
    noun = draft.ctx.noun(row) if row is not None else "product"
    reply = pick(rng, CHANGE_REPLIES).format(n=NUMBER_WORDS[quantity], noun=noun)
    before = draft.reference[checkout - 1] if checkout else None
    asked = before is not None and before.name == "ask_user"
    if not (asked and is_confirmation(before.arguments.get("question", ""))):
        draft.prompt = before_closer(draft.prompt, [pick(rng, CHECK_WITH_ME)])
        question = pick(rng, ORDER_QUESTIONS)
        draft.insert(checkout, [ToolCall(name="ask_user", arguments={"question": question})])
        checkout += 1
    slots[0].quantity = quantity
    draft.insert(checkout, [
        ToolCall(name="set_quantity", arguments={"item_id": item_id, "quantity": quantity}),
    ])  # fmt: skip
    draft.events.append(
        WorldEvent(kind="change_of_mind", after_calls=checkout - 1, item_id=item_id,
                   quantity=quantity, reply=reply)
    )  # fmt: skip
    return True


# the customer asks to be asked before the order is placed (where no shop rule makes it so)
CHECK_WITH_ME: tuple[str, ...] = (
    "Please check with me before you place the order.",
    "Ask me before you actually order, though.",
    "Don't check out until I've said yes, please.",
    "Run it by me before you buy anything.",
    "Before you place the order, let me confirm it.",
    "I'd like to okay the order before it goes through.",
)
ORDER_QUESTIONS: tuple[str, ...] = (
    "Everything is in the cart. Shall I place the order?",
    "Can I go ahead and place the order now?",
    "Would you like me to check out now?",
    "The cart is ready: do you want me to place the order?",
)
