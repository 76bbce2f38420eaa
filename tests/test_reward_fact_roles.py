"""Amounts and dates checked by role: each value must be stated in the role the generator gave it.

The shipping answer of a `policy` task states three amounts (the fee asked for, the order value
the question names, the free-shipping threshold) and an order's status answer two dates (when
it was placed, when it arrived or should arrive). Checked by value only, every one of them may
be stated anywhere, so "your $35 order costs $50 to ship, under the $4.99 threshold" and
"placed June 16, delivered June 3" were paid. The generators now give each target its role
(`AnswerFact.role`: "shipping", "arrival") and each allowed context value its role
(`AnswerFact.allowed_roles`: "order", "threshold", "placed"), and the answer's words give each
stated value its role (`values.money_role`, `values.date_role`): a value in one role is no
target or context value of another.

Over generated tasks: shipping answers with two amounts swapped, and status answers with the
two dates swapped, fail; the same amounts and dates in other words pass.
"""

# ruff: noqa: E501  (tables of hand-written answers read best one per line)
from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator

import pytest

from ecomrlve.env import reference_turns, verify
from ecomrlve.env.judge.facts import check_answer, extract_dates, extract_money, normalise
from ecomrlve.generators import GenContext
from ecomrlve.generators.phrasing import money
from ecomrlve.tasks import AnswerFact, Task
from ecomrlve.testing import answers
from ecomrlve.testing.fuzzer import generated_tasks


@pytest.fixture(scope="module")
def ctx(small_catalog_dir) -> GenContext:
    return GenContext.load(small_catalog_dir)


# ---- the roles read ------------------------------------------------------------------------------
MONEY_ROLES = [
    ("Standard shipping on a $35 order costs $4.99, since it is under the $50 free-shipping threshold.",
     [(35.0, "order"), (4.99, "shipping"), (50.0, "threshold")]),
    ("It's $4.99 to ship; the threshold is $50 and your order total is $35.",
     [(4.99, "shipping"), (50.0, "threshold"), (35.0, "order")]),
    ("Shipping is $4.99 for orders under $50.", [(4.99, "base"), (50.0, "threshold")]),
    ("You paid $29.99 for it.", [(29.99, "price")]),
    ("It was $29.99.", [(29.99, "unknown")]),
]  # fmt: skip
DATE_ROLES = [
    ("Your order was placed June 3 and delivered on June 16.", [(3, "placed"), (16, "arrival")]),
    ("It should arrive on the 20th of June; you ordered it on June 3.", [(20, "arrival"), (3, "placed")]),
    ("As of today, June 20, it's on its way.", [(20, "unknown")]),
]  # fmt: skip


@pytest.mark.parametrize(("answer", "roles"), MONEY_ROLES)
def test_amounts_are_read_with_the_role_their_sentence_gives_them(answer, roles):
    assert [(float(a), a.role) for _, a in extract_money(normalise(answer))] == roles


@pytest.mark.parametrize(("answer", "roles"), DATE_ROLES)
def test_dates_are_read_with_the_role_their_sentence_gives_them(answer, roles):
    found = [(next(iter(d))[2], d.role) for _, d in sorted(extract_dates(normalise(answer)))]
    assert found == roles


# Hand-written answers, by the rule they show: each section adds its groups to CASES, which
# `test_hand_written_answers` checks one by one.
CASES: list[answers.Case] = []


# ---- hand-written answers ------------------------------------------------------------------------


CASES += answers.cases(
    "amounts in swapped roles fail",
    answers.SHIPPING_FEE,
    answers.ASK_35,
    fails=[
        "Your $35 order costs $50 to ship, under the $4.99 threshold.",
        "Standard shipping on a $35 order costs $50.",
        "Standard shipping on a $4.99 order costs $35, since it is under the $50 free-shipping threshold.",
        "Shipping on your $50 order costs $4.99 since it is under the $35 threshold.",
        "It costs $35 to ship a $4.99 order.",
    ],
)


CASES += answers.cases(
    "amounts each in its role pass",
    answers.SHIPPING_FEE,
    answers.ASK_35,
    passes=[
        "Standard shipping on a $35 order costs $4.99, since it is under the $50 free-shipping threshold.",
        "It's $4.99 to ship; the threshold is $50 and your order total is $35.",
        "Your $35.00 order is below the $50 minimum, so shipping is $4.99.",
        "Standard shipping will be $4.99.",
        "For a $35 purchase you'd pay $4.99 for standard shipping (the free-shipping minimum is $50).",
    ],
)


def test_a_shipping_fact_without_roles_keeps_the_value_check():
    """Rows written before roles: amounts are checked by value, as before."""
    old = [AnswerFact(kind="money", value="4.99", allowed=["35.00", "50.00"])]
    assert check_answer("Your $35 order costs $50 to ship, under the $4.99 threshold.", old).ok


DELIVERED = [
    AnswerFact(kind="status", value="delivered", subject="O1"),
    AnswerFact(kind="date", value="2026-06-16", allowed=["2026-06-03"], subject="O1",
               role="arrival", allowed_roles=["placed"]),
]  # fmt: skip


CASES += answers.cases(
    "dates in swapped roles fail",
    DELIVERED,
    today="2026-06-20",
    fails=[
        "Your order was placed June 16 and delivered June 3.",
        "It was delivered on June 3.",
        "You ordered it on the 16th of June; it arrived on June 16.",
    ],
)


CASES += answers.cases(
    "dates each in its role pass",
    DELIVERED,
    today="2026-06-20",
    passes=[
        "Your order was placed June 3 and delivered June 16.",
        "It arrived on the 16th of June; you ordered it on June 3.",
        "As of today, June 20, it has been delivered: June 16.",
        "Your order with the lamp was delivered on 6/16.",
    ],
)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_hand_written_answers(case: answers.Case):
    case.check()


# ---- over generated tasks ------------------------------------------------------------------------
def _shipping_tasks(ctx) -> list[tuple[Task, AnswerFact]]:
    """Policy tasks (seed 61) whose answer states a shipping fee above $0 for an order value."""
    return [(task, f) for task, f in answers.shipping_facts(ctx, 40) if float(f.value) > 0]


def _shipping_rewordings(ctx) -> Iterator[answers.Rewording]:
    for task, fact in _shipping_tasks(ctx):
        fee, (value, threshold) = float(fact.value), map(float, fact.allowed[:2])
        F, V, T = money(fee), money(value), money(threshold)
        reworded = [
            f"It's {F} for standard shipping on a {V} order (the threshold is {T}).",
            f"The free-shipping threshold is {T}; your {V} order is under it, so it costs {F} to ship.",
            f"Standard shipping will be {F}.",
        ]
        swapped = [
            f"Your {V} order costs {T} to ship, under the {F} threshold.",  # fee <-> threshold
            f"Standard shipping on a {F} order costs {V}, since it is under the {T} free-shipping threshold.",
            f"Standard shipping on a {T} order costs {F}, since it is under the {V} free-shipping threshold.",
        ]
        if len({fee, value, threshold}) < 3:  # two amounts alike: swapping them says the same
            swapped = []
        yield answers.Rewording(task, fact.say, reworded, swapped)


def test_shipping_answers_with_amounts_swapped_fail_and_reworded_pass(ctx):
    passed, failed = answers.judge_all_rewordings(_shipping_rewordings(ctx), ctx.catalog)
    print(f"shipping: {failed} swapped answers failed, {passed} reworded passed")
    assert failed >= 30 and passed >= 30


def _spoken(iso: str) -> str:
    day = dt.date.fromisoformat(iso)
    return f"{day:%B} {day.day}"


def _dated_tasks(ctx) -> list[tuple[Task, AnswerFact, AnswerFact]]:
    """(task, status fact, arrival date fact) of delivered or shipped orders, where the status
    sentence states the date and the order was placed on another day."""
    out = []
    for task in generated_tasks(ctx, ("order_status", "journey"), range(11), 12, 61):
        if task.events:
            continue
        facts = task.goal.answer_facts
        for status in facts:
            if status.kind != "status" or status.value not in ("delivered", "shipped"):
                continue
            dates = [
                f
                for f in facts
                if f.kind == "date" and f.subject == status.subject and f.role == "arrival"
            ]
            if dates and dates[0].allowed and dates[0].allowed[0] != dates[0].value:
                out.append((task, status, dates[0]))
    return out


_ARRIVAL = {"delivered": "was delivered on", "shipped": "has shipped and should arrive on"}


def _status_rewordings(ctx) -> Iterator[answers.Rewording]:
    for task, status, date in _dated_tasks(ctx):
        order = status.subject
        arrive, placed = _spoken(date.value), _spoken(date.allowed[0])
        verb = _ARRIVAL[status.value]
        reworded = [
            f"Your order {order}, placed on {placed}, {verb} {arrive}.",
            f"Your order {order} {verb} {arrive}; you placed it on {placed}.",
        ]
        swapped = [
            f"Your order {order}, placed on {arrive}, {verb} {placed}.",
            f"Your order {order} {verb} {placed}; you placed it on {arrive}.",
        ]
        yield answers.Rewording(task, status.say, reworded, swapped)


def test_status_answers_with_dates_swapped_fail_and_reworded_pass(ctx):
    passed, failed = answers.judge_all_rewordings(
        _status_rewordings(ctx), ctx.catalog, violation=r"\bdate\b"
    )
    print(f"status dates: {failed} swapped answers failed, {passed} reworded passed")
    assert failed >= 30 and passed >= 30


def test_stored_rows_without_roles_load_and_their_references_verify(ctx):
    """Shipping and status tasks written before roles (no "role"/"allowed_roles" keys) load
    with empty roles and verify as before."""
    checked = 0
    for task, _ in _shipping_tasks(ctx)[:5]:
        checked += _verifies_without_roles(task, ctx)
    for task, _, _ in _dated_tasks(ctx)[:5]:
        checked += _verifies_without_roles(task, ctx)
    assert checked == 10


def _verifies_without_roles(task: Task, ctx) -> bool:
    row = task.to_row()
    row["goal"] = re.sub(r',"(?:allowed_roles|role)":(?:"[a-z]*"|\[[^\]]*\])', "", row["goal"])
    assert '"role"' not in row["goal"] and "allowed_roles" not in row["goal"]
    old = Task.from_row(row)
    assert all(not f.role and not f.allowed_roles for f in old.goal.answer_facts)
    return verify(old, reference_turns(old), ctx.catalog).success
