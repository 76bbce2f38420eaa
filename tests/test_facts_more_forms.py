"""Amounts, ranges and relative dates in more of the forms people write (issue 43): the
currency named after or before the number ("47.99 (USD)", "47.99 in US dollars", "US dollars
47.99", "47.99 US$"), cents "plus" or as a cheque's "/100", ranges of number words joined by a
dash ("seven-ten"), "no sooner than 7 and no later than 10", "the day after today", "3 days
back". Each form read to its value, so a wrong value in it fails as any other would. Our own
wordings."""

from __future__ import annotations

import datetime as dt

import pytest

from ecomrlve.env.judge.facts import values
from ecomrlve.env.judge.facts.text import normalise
from ecomrlve.testing import answers


def amounts(text: str) -> list[float]:
    return [amount for _, amount in values.extract_money(normalise(text))]


@pytest.mark.parametrize(
    ("said", "amount"),
    [
        ("You paid 63.99 (USD) for it.", 63.99),
        ("That came to 63.99 in US dollars.", 63.99),
        ("It now costs US dollars 63.99.", 63.99),
        ("Price: 1,063.99 US$.", 1063.99),
        ("It cost 1,063 dollars plus 99 cents.", 1063.99),
        ("It cost sixty-three dollars and 99/100.", 63.99),
        ("It cost 63 US dollars 99.", 63.99),  # the cents after the unit, as before
    ],
)
def test_an_amount_with_its_currency_named_around_it(said: str, amount: float):
    assert amounts(said) == [amount]


def test_a_number_after_dollars_is_no_amount_without_its_cents():
    assert amounts("It cost 63 dollars 99.") == [63.99]  # never $99 as well
    assert amounts("US dollars are the currency of 2 orders.") == []


def test_ranges_of_words_and_deadlines_are_ranges():
    said = {
        "Refunds reach your card seven-ten business days after we get the item.": (7, 10),
        "The refund arrives no sooner than 5 and no later than 8 business days after that.": (
            5,
            8,
        ),
    }
    for text, (low, high) in said.items():
        (found,) = values.extract_durations(normalise(text))
        assert (found[1].low, found[1].high) == (low, high), text
    assert "21" in normalise("twenty-one days")  # one number, no range


def test_the_day_after_today_and_days_back_are_dates():
    today = dt.date(2025, 5, 1)
    (after,) = values._relative_said(normalise("It should arrive the day after today."), today)
    assert after[2] == [dt.date(2025, 5, 2)]
    (back,) = values._relative_said(normalise("It was delivered 3 days back."), today)
    assert back[2] == [dt.date(2025, 4, 28)]


CASES = answers.cases(
    "a fee told with its currency named after it",
    answers.SHIPPING_FEE,
    answers.ASK_35,
    passes=["Shipping is 4.99 in US dollars for your $35 order."],
    fails=["Shipping is 5.99 in US dollars for your $35 order."],
)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_a_wrong_amount_in_these_forms_fails(case: answers.Case):
    case.check()


def _delivered(answer: str):
    """`answer` against an order delivered June 17, read that day's week (as
    tests/test_facts_alternatives.py)."""
    from ecomrlve.env.judge.facts import Shown, check_answer
    from ecomrlve.tasks import AnswerFact

    order = "O1234567"
    facts = [
        AnswerFact(kind="date", value="2026-06-17", role="arrival", subject=order, cues=[order]),
    ]
    read = {"order_id": order, "status": "delivered", "delivered": "2026-06-17"}
    return check_answer(answer, facts, "", today="2026-06-20", shown=Shown([read], "2026-06-20"))


@pytest.mark.parametrize(
    "answer",
    [
        "Order O1234567 arrived June 17, today at the very most.",  # a stretch
        "Order O1234567 arrived June 17 - we can't rule out today though.",
        "Order O1234567 arrived today, or failing that June 17.",  # the day word first
        "Order O1234567 arrived June 17... or today, not sure (order O1234567).",
    ],
)
def test_a_date_hedged_with_today_commits_to_neither(answer: str):
    assert not _delivered(answer).ok, answer


@pytest.mark.parametrize(
    "answer",
    [
        "Order O1234567 arrived June 17. Today I checked it again.",
        "As of today, order O1234567 shows it arrived June 17.",
        "Order O1234567 arrived June 17, three days before today.",
    ],
)
def test_today_in_a_role_of_its_own_is_no_hedge(answer: str):
    assert _delivered(answer).ok, answer


def statuses(text: str) -> list[str]:
    return [status for _, status in values.extract_statuses(normalise(text))]


@pytest.mark.parametrize(
    ("said", "status"),
    [
        ("Your order O1 made its delivery on May 3.", ["delivered"]),
        ("Order O1 is waiting on our fulfilment team.", ["pending"]),
        ("Order O1 isn't being processed or shipped yet.", ["pending"]),  # negation goes on
        ("Order O1 is being sorted in the warehouse.", ["processing"]),
        ("The courier completed delivery to the depot.", []),  # to a depot: no delivery
        ("It was not lost or damaged; it was delivered May 3.", ["delivered"]),
    ],
)
def test_statuses_in_more_words(said: str, status: list[str]):
    assert statuses(said) == status
