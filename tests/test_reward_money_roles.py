"""The free-shipping rule, item prices and changed prices, each amount in its role.

* "free" read as $0 wherever it stood, so an honest shipping answer that also told the rule
  ("$4.99 to ship; orders over $50 ship free") conflicted with the $4.99 fee, and "shipping on
  your $35 order is $4.99" read the fee as the order's value. "free" in the shop's rule (orders
  over an amount, free shipping from an amount, members, "away from free shipping") is now no
  amount of this order (`values._rule_free`); "your order ships free" still is $0. The fee of
  orders under the threshold told as the rule ("under $50 it's $4.99") is allowed in its own
  role ("base"), so a free order's answer may tell it; "shipping on your order is $4.99" may not.
* An order's price answer states the item's price and may state the order's total (shipping
  in): "you paid $34.98 for it; the order total was $29.99" swapped them and was paid. The
  generator now gives the price its role ("price") and the total its own ("order").
* "free returns", "returns are free", "free exchanges" price nothing a fact holds, so beside a
  $4.99 fee they are no $0 claim (they conflicted); "shipping and returns are free" still is.
* How far an order is from free shipping is worked out, not stored: "you're $15 away from
  free shipping" was a conflicting amount. An amount said as what the order lacks ("$15 away",
  "add $15 more", role "gap") is allowed when it is the fact's threshold minus its order value,
  and only in that role: the same $15 as a bare guess, or a wrong gap, still conflicts.
* A price change must be told with the new price; the old one may be told as what it was:
  "the price changed from $25 to $20" (the new $20 said as the old one) was paid. The event's
  fact now holds the new price as "price" and the old one as "was".

Over generated tasks (d0-10), each rule: the amounts swapped fail, the same amounts reworded
pass (counts printed with `-s`).
"""

# ruff: noqa: E501  (tables of hand-written answers read best one per line)
from __future__ import annotations

from collections.abc import Iterator

import pytest

from ecomrlve.env import reference_turns
from ecomrlve.env.judge.facts import check_answer, extract_money, normalise
from ecomrlve.generators.phrasing import money
from ecomrlve.generators.reasoning import late_facts
from ecomrlve.tasks import AnswerFact, Task
from ecomrlve.testing import answers
from ecomrlve.testing.fuzzer import gen_context, generated_tasks


@pytest.fixture(scope="module")
def ctx():
    return gen_context()


# Hand-written answers, by the rule they show: each section adds its groups to CASES, which
# `test_hand_written_answers` (at the end) checks one by one.
CASES: list[answers.Case] = []


# ---- "free": the shop's rule or this order's fee -------------------------------------------------
FREE = [
    AnswerFact(kind="money", value="0.00", allowed=["60.00", "50.00", "4.99"],
               allowed_roles=["order", "threshold", "base"], role="shipping"),
]  # fmt: skip
ASK_60 = "How much is standard shipping on a $60 order for me?"


CASES += answers.cases(
    "a fee told beside the free shipping rule passes",
    answers.SHIPPING_FEE,
    answers.ASK_35,
    passes=[
        "Shipping on your $35 order is $4.99; orders over $50 ship free.",
        "Standard shipping on a $35.00 order costs $4.99. Shipping is free on orders of $50.00 or more.",
        "It's $4.99 to ship, since free shipping starts at $50.",
        "It's $4.99 to ship your $35 order; you'd get free shipping over $50.",
        "For orders over $50, shipping is free; yours is $35, so it's $4.99.",
        "Standard shipping will be $4.99; Plus members get free shipping.",
        "Standard shipping will be $4.99 (spend more and you could get free shipping).",
    ],
)


CASES += answers.cases(
    "your order ships free for a fee fails",
    answers.SHIPPING_FEE,
    answers.ASK_35,
    fails=[
        "Your order ships free.",
        "Your order ships free. Orders under $50 pay $4.99.",
        "Shipping is $4.99 on orders under $50, but your order ships free.",
        "Orders over $50 ship free.",  # the rule alone answers nothing
    ],
)


CASES += answers.cases(
    "a free order told with or without the rule passes",
    FREE,
    ASK_60,
    passes=[
        "Standard shipping on a $60 order is free.",
        "Your $60 order ships free since it's over the $50 threshold.",
        "Orders over $50 ship free, and yours is $60, so it ships free too.",
        "It ships free: orders over $50 ship free, under that it's $4.99.",
        "Standard shipping on a $60 order is free; orders under $50 pay $4.99.",
        "Your $60 order ships free (shipping is $4.99 for orders under $50).",
    ],
)


CASES += answers.cases(
    "the rule alone or a fee for a free order fails",
    FREE,
    ASK_60,
    fails=[
        "Orders over $50 ship free.",
        "Shipping costs $4.99 for your $60 order; orders over $50 ship free.",
        "Shipping on your $60 order is $4.99.",
        "Your order ships free, but shipping is $4.99.",
    ],
)


CASES += answers.cases(
    "free returns beside a fee are no shipping claim",
    answers.SHIPPING_FEE,
    answers.ASK_35,
    passes=[
        "Shipping on your $35 order is $4.99, and we offer free returns.",
        "Shipping is $4.99; returns are free within 30 days.",
        "It's $4.99 to ship. Free exchanges too.",
    ],
)


CASES += answers.cases(
    "free shipping beside free returns still claims 0 for a fee",
    answers.SHIPPING_FEE,
    answers.ASK_35,
    fails=[
        "Shipping is free and so are returns.",
        "Free returns, and shipping is free.",
        "Shipping and returns are free.",
        "You get free returns.",  # answers nothing about shipping
    ],
)


CASES += answers.cases(
    "a free order told beside free returns passes",
    FREE,
    ASK_60,
    passes=[
        "Shipping and returns are free.",
        "Your order ships free, and returns are free too.",
        "Free returns and free shipping on your order.",
    ],
)


def test_free_returns_alone_do_not_answer_a_free_orders_shipping():
    assert not check_answer("You get free returns.", FREE, ASK_60).ok
    assert not check_answer("Returns are free; shipping is $4.99.", FREE, ASK_60).ok


def _free_shipping_rewordings(ctx) -> Iterator[answers.Rewording]:
    for task, fact in answers.shipping_facts(ctx, 30):
        fee, (value, threshold) = float(fact.value), map(float, fact.allowed[:2])
        F, V, T = money(fee), money(value), money(threshold)
        if fee > 0:
            reworded = [
                f"Shipping on your {V} order is {F}; orders over {T} ship free.",
                f"It's {F} to ship, since free shipping starts at {T}.",
            ]
            attacks = [
                f"Shipping is {F} on orders under {T}, but your {V} order ships free.",
                f"Orders over {T} ship free.",
            ]
        else:
            B = money(float(fact.allowed[2]))  # the fee of orders under the threshold
            reworded = [
                f"Your {V} order ships free; orders of {T} or more always ship free.",
                f"Standard shipping on your {V} order is free; orders under {T} pay {B}.",
            ]
            attacks = [f"Orders over {T} ship free.", f"Shipping on your {V} order is {B}."]
        yield answers.Rewording(task, fact.say, reworded, attacks)


def test_shipping_answers_that_tell_the_rule_pass_and_a_free_claim_for_a_fee_fails(ctx):
    passed, failed = answers.judge_all_rewordings(_free_shipping_rewordings(ctx), ctx.catalog)
    print(
        f"free shipping: {failed} false free claims failed, {passed} answers with the rule passed"
    )
    assert failed >= 30 and passed >= 30


# ---- how far an order is from free shipping: threshold - order, worked out ------------------------
CASES += answers.cases(
    "the amount left to free shipping may be told",
    answers.SHIPPING_FEE,
    answers.ASK_35,
    passes=[
        "Shipping on your $35 order is $4.99; you're $15 away from free shipping at $50.",
        "It's $4.99 to ship. Add $15 more and it ships free (free over $50).",
        "Shipping is $4.99; spend another $15.00 to qualify for free shipping.",
        "Shipping is $4.99, $15 short of the $50 free-shipping threshold.",
        "You'd pay $4.99; spend $15 more to get free shipping.",
        "Add $15 to your cart to ship free; otherwise shipping is $4.99.",
        "It's another $4.99 for shipping.",  # "another" before a fee said as shipping
    ],
)


CASES += answers.cases(
    "a wrong gap or the gap as a guess fails",
    answers.SHIPPING_FEE,
    answers.ASK_35,
    fails=[
        "Shipping is $4.99; you're $20 away from free shipping.",  # the gap wrong
        "Shipping is $4.99; add $20 more to ship free.",
        "Shipping is $15 or $4.99.",  # the gap's amount as a bare guess
        "Shipping costs $4.99 or maybe $15 more.",
        "Shipping is $15 away.",  # the gap instead of the fee
        "Your order qualifies for free shipping.",
        "Shipping is $4.99. Your order is going to ship free.",  # "to ship free", no condition
        "Shipping is $4.99 and you're going to get free shipping.",
        "Shipping is $4.99; your $35 order is going to ship free.",
    ],
)


def test_a_free_order_has_no_gap_to_tell():
    answer = "Your $60 order ships free; you're $10 away from free shipping."
    assert not check_answer(answer, FREE, ASK_60).ok


def _gap_rewordings(ctx) -> Iterator[answers.Rewording]:
    for task, fact in answers.shipping_facts(ctx, 30):
        fee, (value, threshold) = float(fact.value), map(float, fact.allowed[:2])
        if fee == 0 or value >= threshold:
            continue
        F, T = money(fee), money(threshold)
        right, wrong = (
            f"Shipping is {F}; add {gap} more to reach the {T} free-shipping threshold."
            for gap in (money(threshold - value), money(threshold - value + 5))
        )
        yield answers.Rewording(task, fact.say, [right], [wrong])


def test_over_generated_tasks_the_right_gap_passes_and_a_wrong_one_fails(ctx):
    told, refused = answers.judge_all_rewordings(_gap_rewordings(ctx), ctx.catalog, violation=None)
    print(f"gap to free shipping: {told} right gaps passed, {refused} wrong ones failed")
    assert told >= 20 and refused >= 20


# ---- an order's item price and its total ---------------------------------------------------------
PRICE = [
    AnswerFact(kind="money", value="29.99", allowed=["29.99", "34.98"],
               allowed_roles=["price", "order"], role="price"),
]  # fmt: skip
MONEY_ROLES = [
    ("The price changed from $20.00 to $25.00.", [(20.0, "was"), (25.0, "price")]),
    # the env's own event note: "before checkout" after the new price does not make it the old
    (
        "The shirt's price changed from $14.99 to $13.49 before checkout.",
        [(14.99, "was"), (13.49, "price")],
    ),
    ("It now costs $25 (it was $20 before).", [(25.0, "price"), (20.0, "was")]),
    ("Your order total came to $34.98; you paid $29.99 for it.", [(34.98, "order"), (29.99, "price")]),
]  # fmt: skip


@pytest.mark.parametrize(("answer", "roles"), MONEY_ROLES)
def test_prices_are_read_with_the_role_their_sentence_gives_them(answer, roles):
    assert [(float(a), a.role) for _, a in extract_money(normalise(answer))] == roles


CASES += answers.cases(
    "the item price and the order total swapped fail",
    PRICE,
    fails=[
        "You paid $34.98 for it; the order total was $29.99.",
        "Your $29.99 order cost $34.98.",
        "It was $34.98 each, $29.99 in total.",
    ],
)


CASES += answers.cases(
    "the item price and the order total each in its role pass",
    PRICE,
    passes=[
        "You paid $29.99 for it; the order total was $34.98.",
        "The item was $29.99, and the whole order came to $34.98 with shipping.",
        "It cost $29.99.",
    ],
)


def _price_tasks(ctx) -> list[tuple[Task, AnswerFact]]:
    out = []
    for task in generated_tasks(ctx, ["order_status"], range(11), 80, 61):
        if task.events:
            continue
        history = late_facts(task)  # from d7: a past order's price, its own sentence
        for f in task.goal.answer_facts:
            if f.kind == "money" and f.role == "price" and f.say and f not in history:
                out.append((task, f))
    return out


def _price_rewordings(ctx) -> Iterator[answers.Rewording]:
    for task, fact in _price_tasks(ctx):
        P, T = money(float(fact.value)), money(float(fact.allowed[1]))
        reworded = [
            f"It cost you {P}; the order total was {T}.",
            f"The item was {P} (the order came to {T} with shipping).",
        ]
        swapped = [f"You paid {T} for it; the order total was {P}.", f"Your {P} order cost {T}."]
        if P == T:  # free shipping: the total is the price
            swapped = []
        yield answers.Rewording(task, fact.say, reworded, swapped)


def test_price_answers_with_price_and_total_swapped_fail_and_reworded_pass(ctx):
    passed, failed = answers.judge_all_rewordings(_price_rewordings(ctx), ctx.catalog)
    print(f"item price: {failed} swapped answers failed, {passed} reworded passed")
    assert failed >= 10 and passed >= 20


# ---- a price that changed before the checkout ----------------------------------------------------
CHANGED = [
    AnswerFact(kind="money", value="25.00", allowed=["20.00"], allowed_roles=["was"], role="price")
]


CASES += answers.cases(
    "the old and new price swapped fail",
    CHANGED,
    fails=[
        "The price changed from $25.00 to $20.00.",
        "It now costs $20.00; it was $25.00 before.",
        "You were charged $20.00, down from $25.00.",
    ],
)


CASES += answers.cases(
    "the old and new price each in its role pass",
    CHANGED,
    passes=[
        "The price changed from $20.00 to $25.00.",
        "You were charged $25.00, up from $20.00.",
        "Heads up: it's now $25.00 (previously $20.00).",
        "It went up to $25.00.",
        "The price was $20.00 and is now $25.00.",
        "You paid $25.00 instead of $20.00.",
        "The price went from $20.00 to $25.00.",
    ],
)


def _price_change_rewordings(ctx) -> Iterator[answers.Rewording]:
    scenarios = ("cart", "bundle", "journey", "product_discovery", "order_status")
    for task in generated_tasks(ctx, scenarios, range(11), 8, 61):
        for event in task.events:
            if event.kind != "price_change" or event.old_price is None:
                continue
            if event.declined:  # the customer said no: nothing was charged
                continue
            if event.say not in reference_turns(task)[-1]:
                continue
            old, new = money(event.old_price), money(event.price)
            reworded = [
                f"Heads up: that item now costs {new} (it was {old} before), and the order was charged the new price.",
                f"The price went from {old} to {new} as I ordered; you were charged {new}.",
            ]
            swapped = [
                f"Note: the price changed from {new} to {old} while I was placing your order.",
                f"Heads up: that item now costs {old} (it was {new} before).",
            ]
            yield answers.Rewording(task, event.say, reworded, swapped)


def test_price_changes_told_swapped_fail_and_reworded_pass(ctx):
    passed, failed = answers.judge_all_rewordings(_price_change_rewordings(ctx), ctx.catalog)
    print(f"price change: {failed} swapped answers failed, {passed} reworded passed")
    assert failed >= 30 and passed >= 30


@pytest.mark.parametrize("case", CASES, ids=str)
def test_hand_written_answers(case: answers.Case):
    case.check()
