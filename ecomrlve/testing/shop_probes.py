"""A probe of the policy book: answers written from a book, the task's own or another shop's.

The policy book varies with the catalog seed (`ecomrlve.catalogs.policies.Shop.for_seed`), so a
policy answer must be read from this store's book. `book_answer(task, book)` writes the final
message of a `policy` task the way the reference does (same sentences), but with every rule
taken from `book`:

* with the task's own book it is a correct answer and must pass;
* with another seed's book it is what a policy that memorised another shop would say, after
  making the very same tool calls: it must fail unless the two books agree on everything the
  task asks (then the answer is simply right: `book_answer` returns the same text for both,
  and the probe counts it apart).
"""

from __future__ import annotations

import datetime as dt
import re

from ecomrlve.catalogs.policies import PolicyBook
from ecomrlve.env.episode.reference import final_answer
from ecomrlve.generators.phrasing import money
from ecomrlve.generators.reasoning import late_facts
from ecomrlve.tasks import Task

_SHIPPING = re.compile(r"standard shipping on a \$([\d.]+) order", re.IGNORECASE)
_CANCEL = re.compile(r"cancel an order that is (\w+)", re.IGNORECASE)


def _asked_order(task: Task) -> dict:
    orders = {o["order_id"]: o for o in task.initial_state["orders"]}
    return next(orders[i] for i in task.goal.relevant_ids if i in orders)


def book_sentences(task: Task, book: PolicyBook) -> list[str]:
    """The policy sentences a `policy` task's answer needs, from `book`'s rules."""
    prompt = task.prompt
    category = task.goal.user_facts["category"]
    membership = task.initial_state["user"]["membership"]
    today = dt.date.fromisoformat(task.initial_state["today"])
    order = _asked_order(task)
    days = (today - dt.date.fromisoformat(order["delivered"])).days
    out = _return_sentences(prompt, book, category, membership, days)
    out += _shop_sentences(prompt, book, membership)
    return list(dict.fromkeys(out))


def _return_sentences(
    prompt: str, book: PolicyBook, category: str, membership: str, days: int
) -> list[str]:
    """Can the order delivered `days` ago still be returned, at what fee, be exchanged."""
    rule = book.return_rule(category, membership)
    eligible = book.return_eligibility(category, membership, days).eligible
    window, closed = rule.window_days, days - rule.window_days
    final_sale = (
        f"Unfortunately {category} items are final sale, so it can't be returned or exchanged."
    )
    no_more = (
        f"No, the {window}-day return window for {category} closed {closed} days ago, so it "
        "can't be returned any more."
    )

    def by_window(if_open: str, if_closed: str = no_more) -> str:
        """The sentence for this item: final sale, or the window open or closed."""
        return final_sale if not rule.returnable else if_open if eligible else if_closed

    out: list[str] = []
    if "Can I still return" in prompt:
        left = window - days
        tail = f", so you have {left} more days." if left else ", and today is the last day."
        out.append(
            by_window(
                f"Yes, you can still return it: the return window for {category} is {window} "
                f"days for {membership} members{tail}"
            )
        )
    if "restocking fee" in prompt:
        pct = round(rule.restocking_fee * 100)
        fee = (
            f"There's a {pct}% restocking fee on opened items."
            if pct
            else "There's no restocking fee."
        )
        out.append(by_window(fee))
    if "exchange" in prompt:
        out.append(
            by_window(
                "You can exchange it for another size or colour of the same product while the "
                "return window is open.",
                f"Exchanges follow the {window}-day return window, which has closed, so it "
                "can't be exchanged any more either.",
            )
        )
    return out


def _shop_sentences(prompt: str, book: PolicyBook, membership: str) -> list[str]:
    """How long a refund takes, what shipping an order costs, whether an order can be
    cancelled."""
    out: list[str] = []
    if "refund take" in prompt:
        low, high = book.refund_days
        out.append(
            f"A refund reaches your original payment method within {low} to {high} business "
            "days after the returned item is received."
        )
    shipping = _SHIPPING.search(prompt)
    if shipping:
        value = float(shipping[1])
        fee = book.shipping_fee(value, membership)
        if fee == 0 and membership == "plus":
            out.append("Standard shipping is free for you as a Plus member.")
        elif fee == 0:
            out.append(f"Standard shipping on a {money(value)} order is free.")
        else:
            out.append(
                f"Standard shipping on a {money(value)} order costs {money(fee)}, since it is "
                f"under the {money(book.free_shipping_threshold)} free-shipping threshold."
            )
    cancel = _CANCEL.search(prompt)
    if cancel:
        if book.can_cancel(cancel[1]):
            out.append(f"Yes, an order that is still {cancel[1]} can be cancelled.")
        else:
            out.append(
                "An order that has already shipped can't be cancelled any more; you can return "
                "it once it's delivered instead."
            )
    return out


def book_answer(task: Task, book: PolicyBook) -> str:
    """The reference's final message with its policy sentences written from `book` (the
    answers about the customer's history that late demands ask for stay as they are)."""
    text = final_answer(task)
    history = {id(fact) for fact in late_facts(task)}
    for fact in task.goal.answer_facts:
        if fact.say and id(fact) not in history:
            text = text.replace(fact.say, "")
    text = " ".join(text.split())
    return " ".join([text, *book_sentences(task, book)]).strip()
