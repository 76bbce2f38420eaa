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

import pytest

from ecomrlve.env import reference_turns, verify
from ecomrlve.env.facts import check_answer, extract_dates, extract_money, normalise
from ecomrlve.generators import GenContext, generate_task
from ecomrlve.generators.phrasing import money
from ecomrlve.tasks import AnswerFact, Task


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


# ---- hand-written answers ------------------------------------------------------------------------
SHIPPING = [
    AnswerFact(kind="money", value="4.99", allowed=["35.00", "50.00"],
               allowed_roles=["order", "threshold"], role="shipping"),
]  # fmt: skip
SHIPPING_PROMPT = "How much is standard shipping on a $35 order for me?"


@pytest.mark.parametrize(
    "answer",
    [
        "Your $35 order costs $50 to ship, under the $4.99 threshold.",
        "Standard shipping on a $35 order costs $50.",
        "Standard shipping on a $4.99 order costs $35, since it is under the $50 free-shipping threshold.",
        "Shipping on your $50 order costs $4.99 since it is under the $35 threshold.",
        "It costs $35 to ship a $4.99 order.",
    ],
)
def test_amounts_in_swapped_roles_fail(answer):
    assert not check_answer(answer, SHIPPING, SHIPPING_PROMPT).ok, answer


@pytest.mark.parametrize(
    "answer",
    [
        "Standard shipping on a $35 order costs $4.99, since it is under the $50 free-shipping threshold.",
        "It's $4.99 to ship; the threshold is $50 and your order total is $35.",
        "Your $35.00 order is below the $50 minimum, so shipping is $4.99.",
        "Standard shipping will be $4.99.",
        "For a $35 purchase you'd pay $4.99 for standard shipping (the free-shipping minimum is $50).",
    ],
)
def test_amounts_each_in_its_role_pass(answer):
    checked = check_answer(answer, SHIPPING, SHIPPING_PROMPT)
    assert checked.ok, (answer, checked)


def test_a_shipping_fact_without_roles_keeps_the_value_check():
    """Rows written before roles: amounts are checked by value, as before."""
    old = [AnswerFact(kind="money", value="4.99", allowed=["35.00", "50.00"])]
    assert check_answer("Your $35 order costs $50 to ship, under the $4.99 threshold.", old).ok


DELIVERED = [
    AnswerFact(kind="status", value="delivered", subject="O1"),
    AnswerFact(kind="date", value="2026-06-16", allowed=["2026-06-03"], subject="O1",
               role="arrival", allowed_roles=["placed"]),
]  # fmt: skip


@pytest.mark.parametrize(
    "answer",
    [
        "Your order was placed June 16 and delivered June 3.",
        "It was delivered on June 3.",
        "You ordered it on the 16th of June; it arrived on June 16.",
    ],
)
def test_dates_in_swapped_roles_fail(answer):
    assert not check_answer(answer, DELIVERED, today="2026-06-20").ok, answer


@pytest.mark.parametrize(
    "answer",
    [
        "Your order was placed June 3 and delivered June 16.",
        "It arrived on the 16th of June; you ordered it on June 3.",
        "As of today, June 20, it has been delivered: June 16.",
        "Your order with the lamp was delivered on 6/16.",
    ],
)
def test_dates_each_in_its_role_pass(answer):
    checked = check_answer(answer, DELIVERED, today="2026-06-20")
    assert checked.ok, (answer, checked)


# ---- over generated tasks ------------------------------------------------------------------------
def _replaced(task: Task, say: str, sentence: str) -> list:
    turns = reference_turns(task)
    assert say in turns[-1]
    return [*turns[:-1], turns[-1].replace(say, sentence)]


def _shipping_tasks(ctx) -> list[tuple[Task, AnswerFact]]:
    """Policy tasks (seed 61) whose answer states a shipping fee above $0 for an order value."""
    out = []
    for d in range(11):
        for i in range(40):
            task = generate_task(ctx, "policy", 61, d, i)
            for f in task.goal.answer_facts if task is not None else ():
                if f.kind == "money" and f.role == "shipping" and float(f.value) > 0 and f.say:
                    out.append((task, f))
    return out


def test_shipping_answers_with_amounts_swapped_fail_and_reworded_pass(ctx):
    failed = passed = 0
    for task, fact in _shipping_tasks(ctx):
        fee, (value, threshold) = float(fact.value), map(float, fact.allowed[:2])
        F, V, T = money(fee), money(value), money(threshold)
        reworded = [
            f"It's {F} for standard shipping on a {V} order (the threshold is {T}).",
            f"The free-shipping threshold is {T}; your {V} order is under it, so it costs {F} to ship.",
            f"Standard shipping will be {F}.",
        ]
        for sentence in reworded:
            verdict = verify(task, _replaced(task, fact.say, sentence), ctx.catalog)
            assert verdict.success, (task.task_id, sentence, verdict.violations)
            passed += 1
        swapped = [
            f"Your {V} order costs {T} to ship, under the {F} threshold.",  # fee <-> threshold
            f"Standard shipping on a {F} order costs {V}, since it is under the {T} free-shipping threshold.",
            f"Standard shipping on a {T} order costs {F}, since it is under the {V} free-shipping threshold.",
        ]
        for sentence in swapped if len({fee, value, threshold}) == 3 else ():
            verdict = verify(task, _replaced(task, fact.say, sentence), ctx.catalog)
            assert not verdict.success, (task.task_id, sentence)
            assert any("money" in v for v in verdict.violations), verdict.violations
            failed += 1
    print(f"shipping: {failed} swapped answers failed, {passed} reworded passed")
    assert failed >= 30 and passed >= 30


def _spoken(iso: str) -> str:
    day = dt.date.fromisoformat(iso)
    return f"{day:%B} {day.day}"


def _dated_tasks(ctx) -> list[tuple[Task, AnswerFact, AnswerFact]]:
    """(task, status fact, arrival date fact) of delivered or shipped orders, where the status
    sentence states the date and the order was placed on another day."""
    out = []
    for scenario in ("order_status", "journey"):
        for d in range(11):
            for i in range(12):
                task = generate_task(ctx, scenario, 61, d, i)
                if task is None or task.events:
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


def test_status_answers_with_dates_swapped_fail_and_reworded_pass(ctx):
    failed = passed = 0
    for task, status, date in _dated_tasks(ctx):
        order = status.subject
        arrive, placed = _spoken(date.value), _spoken(date.allowed[0])
        verb = _ARRIVAL[status.value]
        reworded = [
            f"Your order {order}, placed on {placed}, {verb} {arrive}.",
            f"Your order {order} {verb} {arrive}; you placed it on {placed}.",
        ]
        for sentence in reworded:
            verdict = verify(task, _replaced(task, status.say, sentence), ctx.catalog)
            assert verdict.success, (task.task_id, sentence, verdict.violations)
            passed += 1
        for sentence in (
            f"Your order {order}, placed on {arrive}, {verb} {placed}.",
            f"Your order {order} {verb} {placed}; you placed it on {arrive}.",
        ):
            verdict = verify(task, _replaced(task, status.say, sentence), ctx.catalog)
            assert not verdict.success, (task.task_id, sentence)
            assert any(re.search(r"\bdate\b", v) for v in verdict.violations), verdict.violations
            failed += 1
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
