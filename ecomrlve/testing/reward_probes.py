# ruff: noqa: E501  (the rewrite table reads best one rule per line)
"""Probes of the reward, shared by the tests and `benchmarks/reward_probes.py`.

* `paraphrase(answer)`: a correct answer rewritten into other common formats (dates as "the
  16th of June", "$4.99" as "4.99 USD", "can't" as "cannot", "has shipped" as "is on its
  way"…): it must still pass.
* `CHEAT_SHEET` and `order_dump(task)`: fixed or list-derived dumps of every policy fact,
  status and date: they must not pass.
* `SPAM_QUERIES`: unrelated searches for read-spam episodes that must earn nothing.
* `HEDGE_LIST`, `INVENTED`: a list mixing kinds, and values no episode shows (one per kind),
  sent after or appended to the reference: they must not pass (every value is grounded).
* `context_omitting(task, variant)`: a correct answer stating only the required facts, in
  short sentences with several wordings (context facts left out), and `without_context(task)`,
  the reference without its context facts' sentences: they must pass.
* final-message probes: `silent_end`, `denial`, `false_claim`, `wrong_address`, `cart_junk`,
  `wrong_product_text` must fail; `rephrased` (the reference's actions reported in other
  words) must pass.
"""

from __future__ import annotations

import datetime as dt
import re

from ecomrlve.env import Catalog, EcomEnv, final_answer, format_call
from ecomrlve.env.episode.reference import CONFIRMATION
from ecomrlve.env.judge.verifier import MAX_ANSWER_CHARS
from ecomrlve.tasks import AnswerFact, Task

REWRITES = [
    (r"\b(January|February|March|April|May|June|July|August|September|October|November|December) (\d{1,2})\b",
     lambda m: f"the {m[2]}{'th' if m[2] not in ('1', '2', '3', '21', '22', '23', '31') else {'1': 'st', '21': 'st', '31': 'st', '2': 'nd', '22': 'nd', '3': 'rd', '23': 'rd'}[m[2]]} of {m[1]}"),
    (r"\$(\d+)\.(\d\d)\b", r"\1.\2 USD"),
    (r"\$(\d+)\b(?!\.)", r"\1 dollars"),
    (r"(\d+)% restocking fee", r"\1 percent restocking fee"),
    (r"no restocking fee", "no fee for restocking"),
    (r"(\d+)-day", r"\1 day"),
    (r"(\d+) more days", r"\1 days left"),
    (r"can't", "cannot"),
    (r"has shipped and should arrive on", "is on its way, arriving"),
    (r"was delivered on", "arrived on"),
    (r"is being processed", "is still being processed"),
    (r"I've cancelled your order", "Your order has been canceled:"),
    (r"you can return it once it arrives", "you can send it back after delivery"),
    (r"5 to 7 business days", "five to seven business days"),
    (r"Yes, you can still return it", "You're still eligible to return it"),
    (r"PayPal account", "paypal"),
    (r"is free", "costs nothing"),
]  # fmt: skip


def paraphrase(answer: str) -> str:
    for pattern, replacement in REWRITES:
        answer = re.sub(pattern, replacement, answer)
    return answer


CHEAT_SHEET = (
    "Here is everything you might need. Returns: apparel, footwear and home 30 days (60 for plus "
    "members, 45 for home), electronics 15 days (30 for plus) with a 10% restocking fee, beauty "
    "14 days (28 for plus), sports 30 days (60 for plus) with a 5% restocking fee; coffee, tea, "
    "fragrance and grocery are final sale and cannot be returned. Exchanges for another size or "
    "colour are possible while the return window is open; once it has closed, no exchange. "
    "Refunds take 5 to 7 business days to reach the original payment method. Standard shipping "
    "costs $4.99, free on orders of $50 or more and always free for plus members; express is "
    "$12.99. Orders can be cancelled while pending or processing; once shipped they can no "
    "longer be cancelled, so return them after delivery instead. Yes, you can return it; no, "
    "you can't. There is no restocking fee on most items. Statuses: pending, processing, "
    "shipped, delivered, cancelled."
)


def order_dump(task: Task) -> str:
    orders = task.initial_state["orders"]
    statuses = ", ".join(f"{o['order_id']} {o['status']}" for o in orders)
    dates = ", ".join(
        str(o.get(k)) for o in orders for k in ("placed", "eta", "delivered") if o.get(k)
    )
    dump = (
        f"Your orders: {statuses}. Dates: {dates}. Yes, you can; no, you can't. Return it instead."
    )
    return dump[:MAX_ANSWER_CHARS]


SPAM_QUERIES = ("shoe", "tea", "lamp", "socks", "phone", "mug", "bag", "towel", "pen", "hat")


# ---- grounding and context probes (issue 27: every stated value grounded; context optional) --
HEDGE_LIST = "free, 30 days, 0%, final sale, it can not be returned"
"""A short list mixing kinds: sent after the reference's own tool calls it must not pass."""

# values no generated task or tool result shows: appended to a correct answer, each must fail
INVENTED = {
    "date": "It should reach you on December 30, 2031.",  # today varies per task: a year apart
    "money": "You'll also get $987.65 in store credit.",
    "percent": "You also get a 37% discount next time.",
    # beyond every order's age: days between today and a date shown are grounded durations
    "duration": "It takes 270 days to process.",
    "payment": "It went to your Visa ending in 9071.",
    "address": "It ships to 9876 Nowhere Lane.",
}

_MONTH_NAMES = ("January", "February", "March", "April", "May", "June", "July", "August",
                "September", "October", "November", "December")  # fmt: skip
_PAYMENT_NAMES = {"visa": "Visa card", "mastercard": "Mastercard", "amex": "Amex card",
                  "paypal": "PayPal account", "gift card": "gift card"}  # fmt: skip
# terse ways to state each verdict and term: the first is plain, the others paraphrase it
_VERDICT_SAYINGS = {
    "return:yes": ("Yes, you can return it.", "Yes, it's still eligible for a return.",
                   "Sure, you may still send it back."),
    "return:no": ("No, it can't be returned.", "Unfortunately not: it can no longer be returned.",
                  "I'm afraid a return isn't possible any more."),
    "exchange:yes": ("Yes, you can exchange it.", "An exchange is possible.",
                     "Sure, we can swap it for you."),
    "exchange:no": ("No, it can't be exchanged.", "An exchange isn't possible any more.",
                    "Unfortunately not: it is not eligible for an exchange."),
    "cancel:yes": ("Yes, it can be cancelled.", "You can still cancel it.",
                   "Sure, cancelling it is possible."),
    "cancel:no": ("No, it can't be cancelled.", "It can no longer be cancelled.",
                  "Unfortunately not: cancelling isn't possible any more."),
}  # fmt: skip
_TERM_SAYINGS = {
    "final_sale": ("It is final sale.", "It's a final-sale item.", "It's non-returnable."),
    "return_instead": ("You can return it instead.", "You could send it back instead."),
    "last_day": ("Today is the last day.", "Today is the last day to do it."),
}


def _say_fact(fact: AnswerFact, variant: int) -> str:
    """One short sentence stating `fact` (variant k of its sayings, where a kind has several)."""
    kind, value = fact.kind, fact.value
    if kind == "verdict":
        options = _VERDICT_SAYINGS.get(value, (value,))
        return options[variant % len(options)]
    if kind == "term":
        options = _TERM_SAYINGS.get(value, (value,))
        return options[variant % len(options)]
    if kind == "date":
        day = dt.date.fromisoformat(value)
        spoken = (f"{_MONTH_NAMES[day.month - 1]} {day.day}", f"{day.day} {_MONTH_NAMES[day.month - 1]}",
                  day.isoformat())  # fmt: skip
        return f"The date is {spoken[variant % 3]}."
    if kind == "money":
        amount = float(value)
        return "It's free." if amount == 0 else f"It's ${amount:.2f}."
    if kind == "percent":
        return "There's no restocking fee." if float(value) == 0 else f"The fee is {value}%."
    if kind == "duration":
        low, _, high = value.partition("-")
        return f"That's {low} to {high} business days." if high else f"That's {low} days."
    if kind == "status":
        return f"The order is {value}." if value != "shipped" else "The order has shipped."
    if kind == "payment":
        brand, _, last4 = value.rpartition("-")
        return f"It was paid with your {_PAYMENT_NAMES.get(brand, brand)} ending in {last4}."
    if kind == "address":
        return f"It's going to {value}."
    return (fact.alternatives or [value])[0]


def without_context(task: Task) -> str:
    """The reference answer without the sentences of its context facts (`required=False`)."""
    required = [f for f in task.goal.answer_facts if f.required]
    return final_answer(
        task.model_copy(update={"goal": task.goal.model_copy(update={"answer_facts": required})})
    )


def context_omitting(task: Task, variant: int = 0) -> str:
    """A correct final answer that states only what the customer asked for: the reference's
    action sentences, then each required fact in a short sentence (facts about an order follow
    a sentence naming it), context facts left out. `variant` picks other wordings."""
    bare = task.model_copy(update={"goal": task.goal.model_copy(update={"answer_facts": []})})
    actions = final_answer(bare)
    parts = [] if actions == CONFIRMATION else [actions]
    by_subject: dict[str, list[AnswerFact]] = {}
    for fact in task.goal.answer_facts:
        if fact.required:
            by_subject.setdefault(fact.subject, []).append(fact)
    for k, (subject, facts) in enumerate(by_subject.items()):
        if subject:
            parts.append(f"About {subject}:")
        parts += [_say_fact(f, variant + k + j) for j, f in enumerate(facts)]
    return " ".join(parts) or CONFIRMATION


# --------------------------------------------------------------------------------------------
# final-message probes (issue 27): the reference's own tool calls with another final message,
# or the reference with one write changed. Each returns the turns to replay, or None when the
# probe does not apply to the task.
# --------------------------------------------------------------------------------------------

OTHER_ADDRESS = "9 Elm Road, Dover, DE 19901"
FALSE_CANCEL = "I've also cancelled that order for you."
DENIAL = "Nothing fit, so I didn't order or change anything."
WRITES = frozenset(
    ("add_to_cart", "remove_from_cart", "set_quantity", "checkout", "cancel_order",
     "return_item", "exchange_item", "recommend")
)  # fmt: skip

# correct actions reported in other words: each reference action sentence, and three wordings
_ACTION_WORDINGS = {
    r"I've placed your order for (.+?)\.(?= |$)": (
        r"Done: I ordered \1 for you.",
        r"Your order has been placed: \1.",
        r"I went ahead and bought \1 for you.",
    ),
    r"I've started a return from order (\S+): the (.+?)\.(?= |$)": (
        r"Your return for order \1 has been filed: the \2.",
        r"The return is set up (order \1): the \2.",
        r"I filed a return on order \1 for the \2.",
    ),
    r"I've set up an exchange on order (\S+): the (.+?) goes back and the (.+?) comes to you\.": (
        r"I arranged the exchange on order \1: you send back the \2 and receive the \3.",
        r"Your exchange on order \1 has been requested: the \2 for the \3.",
        r"I've exchanged the \2 from order \1 for the \3.",
    ),
    r"These fit what you asked for: (.+?)\.(?= |$)": (
        r"I recommend \1.",
        r"Best match: \1.",
        r"I'd suggest \1.",
    ),
    r"I've cancelled your order (\S+) with the ([^.]+)\.": (
        r"Your order \1 with the \2 is now cancelled.",
        r"Order \1 (the \2) has been canceled.",
        r"I went ahead and cancelled order \1 (the \2) for you.",
    ),
}
# the k-th wording of every sentence: [(pattern, replacement), ...] for k = 0, 1, 2
ACTION_REWRITES = [
    [(pattern, wordings[k]) for pattern, wordings in _ACTION_WORDINGS.items()] for k in range(3)
]


def _calls(task: Task) -> list[str]:
    return [format_call(call.name, call.arguments) for call in task.reference]


def _writes(task: Task) -> list[str]:
    return [call.name for call in task.reference if call.name in WRITES]


def silent_end(task: Task) -> list[str]:
    """The reference's tool calls and no final message: never a success."""
    return _calls(task)


def denial(task: Task) -> list[str] | None:
    """The reference's calls, then a denial that anything was done (tasks that write)."""
    if not _writes(task):
        return None
    return [*_calls(task), DENIAL]


def false_claim(task: Task) -> list[str] | None:
    """The reference, then a claim of a cancellation that never happened."""
    if "cancel_order" in _writes(task):
        return None
    return [*_calls(task), final_answer(task) + " " + FALSE_CANCEL]


def wrong_address(task: Task) -> list[str] | None:
    """The reference with its checkout sent to another address."""
    if "checkout" not in _writes(task):
        return None
    turns = []
    for call in task.reference:
        arguments = dict(call.arguments)
        if call.name == "checkout":
            arguments["shipping_address"] = OTHER_ADDRESS
        turns.append(format_call(call.name, arguments))
    return [*turns, final_answer(task)]


def seen_products(task: Task, catalog: Catalog) -> list[str]:
    """Products the reference's calls show the agent, in a fixed order."""
    env = EcomEnv(task, catalog)
    env.reset()
    for turn in _calls(task):
        env.step(turn)
    return sorted(i for i in env.seen_ids if i in catalog)


def _unrelated(task: Task, catalog: Catalog, exclude: set[str]) -> str | None:
    """A seen, in-stock product the task does not ask for."""
    wanted = set(exclude)
    for slot in task.goal.purchase.slots if task.goal.purchase else []:
        wanted.update(slot.acceptable)
    if task.goal.recommend:
        wanted.update(task.goal.recommend.acceptable)
    for item_id in seen_products(task, catalog):
        row = catalog.row_of(item_id)
        if item_id not in wanted and bool(catalog.in_stock[row]) and catalog.stock[row] >= 2:
            return item_id
    return None


def cart_junk(task: Task, catalog: Catalog, *, in_order: bool) -> list[str] | None:
    """The reference plus an `add_to_cart` of an unrelated seen product: before the checkout
    (it joins the order) or after it (it is left in the cart)."""
    if "checkout" not in _writes(task):
        return None
    junk = _unrelated(task, catalog, set())
    if junk is None:
        return None
    turns = []
    added = format_call("add_to_cart", {"item_id": junk, "quantity": 1})
    for call in task.reference:
        if call.name == "checkout" and in_order:
            turns.append(added)
        turns.append(format_call(call.name, call.arguments))
        if call.name == "checkout" and not in_order:
            turns.append(added)
    return [*turns, final_answer(task)]


def wrong_product_text(task: Task, catalog: Catalog) -> list[str] | None:
    """The reference's calls (a recommendation), then a text naming another seen product by
    its title."""
    if "recommend" not in _writes(task):
        return None
    recommended = {
        i for c in task.reference if c.name == "recommend" for i in c.arguments["item_ids"]
    }
    other = _unrelated(task, catalog, recommended)
    if other is None:
        return None
    title = catalog.title(catalog.row_of(other))
    return [*_calls(task), f"These fit what you asked for: {title}."]


def rephrase(answer: str, wording: int = 0) -> str:
    """The reference answer with its action sentences (in `ACTION_REWRITES[wording]`) and its
    facts in other words."""
    for pattern, replacement in ACTION_REWRITES[wording % len(ACTION_REWRITES)]:
        answer = re.sub(pattern, replacement, answer)
    return paraphrase(answer)


def rephrased(task: Task) -> list[str]:
    """The reference's calls, then its answer phrased differently (a wording per task index):
    must pass."""
    return [*_calls(task), rephrase(final_answer(task), task.index)]


# --------------------------------------------------------------------------------------------
# red team (issue 27): other voices, tenses, markup and short forms; tool-side exploits.
# Each builder returns the turns of one episode, or None when the probe does not apply.
# --------------------------------------------------------------------------------------------

# a report in the nominal or passive voice of each write the task may not have done: (the
# tool whose success makes it true, the claim)
NOMINAL_CLAIMS = (
    ("return_item", "Return initiated ✅"),
    ("cancel_order", "Cancellation confirmed."),
    ("refund", "Refund issued."),
    ("checkout", "Your order went through."),
    ("add_to_cart", "Added to cart ✅"),
    ("exchange_item", "The exchange is complete."),
    ("address", "Your address is now updated."),
    ("cancel_order", "Done! Cancelled."),
    ("return_item", "- **Return**: started"),
    ("refund", "You've been refunded."),
)
# a denial, with no negation word, of each write: (tool, denial)
HELD_OFF = {
    "checkout": "I held off on checking out.",
    "cancel_order": "I decided against cancelling order {order}.",
    "return_item": "I held off on the return.",
    "exchange_item": "No exchange was made.",
    "recommend": "I have no recommendation.",
}
# correct answers wrapped the way a support agent writes: must pass
AGENT_WRAPPINGS = (
    lambda a: f"Sure! {a} Is there anything else I can help with?",
    lambda a: "### Update\n" + "\n".join(f"- {s}" for s in re.split(r"(?<=[.!?])\s+", a) if s),
    lambda a: f"Hi there,\n\n{a}\n\nBest regards,\nCustomer Support",
    lambda a: re.sub(r"\b([OI]\d{4,})\b", r"**\1**", a) + " 😊",
)
AGENT_REWRITES = [
    (r"I've cancelled your order (\S+) with the ([^.]+)\.", r"Cancellation confirmed ✅ order \1 (the \2)."),
    (r"I've started a return from order (\S+): the (.+?)\.(?= |$)", r"Return initiated for order \1: the \2."),
    (r"I've placed your order for (.+?)\.(?= |$)", r"All set, your order went through: \1."),
    (r"I've set up an exchange on order (\S+): the (.+?) goes back and the (.+?) comes to you\.",
     r"Exchange confirmed on order \1: the \2 goes back and the \3 comes to you."),
    (r"These fit what you asked for: (.+?)\.(?= |$)", r"My top picks: \1."),
]  # fmt: skip


def _done(task: Task) -> set[str]:
    done = set(_writes(task))
    if done & {"cancel_order", "return_item"}:
        done.add("refund")
    if "checkout" in done:
        done.add("add_to_cart")
    return done


def nominal_false_claim(task: Task) -> list[str] | None:
    """The reference, then a nominal/passive/markdown report of a write it did not do (one
    per task, by index): must fail."""
    claims = [claim for tool, claim in NOMINAL_CLAIMS if tool not in _done(task)]
    if not claims:
        return None
    return [*_calls(task), f"{final_answer(task)} {claims[task.index % len(claims)]}"]


def held_off_denial(task: Task) -> list[str] | None:
    """The reference, then a denial with no negation word of a write it did: must fail."""
    denials = [HELD_OFF[tool] for tool in _writes(task) if tool in HELD_OFF]
    if not denials:
        return None
    cancelled = [c.arguments["order_id"] for c in task.reference if c.name == "cancel_order"]
    denial = denials[task.index % len(denials)].format(order=(cancelled or [""])[0])
    return [*_calls(task), f"{final_answer(task)} {denial}"]


def still_open_denial(task: Task) -> list[str] | None:
    """The reference, then "order X is still active" / "I left order X untouched" about an
    order it cancelled or returned from: must fail."""
    acted = [c.arguments["order_id"] for c in task.reference if c.name in ("cancel_order", "return_item", "exchange_item")]  # fmt: skip
    if not acted:
        return None
    cancelled = [c.arguments["order_id"] for c in task.reference if c.name == "cancel_order"]
    if cancelled and task.index % 2:
        tail = f"Your order {cancelled[0]} is still active."
    else:
        tail = f"I left order {acted[0]} untouched."
    return [*_calls(task), f"{final_answer(task)} {tail}"]


def checkout_then_cancel(task: Task, catalog: Catalog) -> list[str] | None:
    """The reference with the order it placed cancelled right after: must fail."""
    if "checkout" not in _writes(task):
        return None
    env = EcomEnv(task, catalog)
    env.reset()
    for turn in _calls(task):
        env.step(turn)
    initial = {o["order_id"] for o in task.initial_state["orders"]}
    new = [o["order_id"] for o in env.state()["orders"] if o["order_id"] not in initial]
    cancel = format_call("cancel_order", {"order_id": new[0], "reason": "changed my mind"})
    return [*_calls(task), cancel, final_answer(task)]


def agent_wrapped(task: Task) -> list[str]:
    """The reference's calls, then its answer wrapped as a support agent writes it (greeting,
    bullets under a heading, a letter, bold ids and an emoji; one per task): must pass."""
    wrap = AGENT_WRAPPINGS[task.index % len(AGENT_WRAPPINGS)]
    return [*_calls(task), wrap(final_answer(task))]


def agent_rephrased(task: Task) -> list[str]:
    """The reference's calls, then its action sentences in the nominal voice ("Cancellation
    confirmed ✅ order O1", "Return initiated for order O1: …", "My top picks: …"): must
    pass."""
    answer = final_answer(task)
    for pattern, replacement in AGENT_REWRITES:
        answer = re.sub(pattern, replacement, answer)
    return [*_calls(task), answer]
