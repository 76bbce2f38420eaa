"""Dates said as alternatives commit to none (issue 43): two different dates about one order,
the second with no word of its own, whatever joins them; two dates each in its own role (placed
and delivered, today and the delivery) state both. Wordings written for these tests, none of
them the blind probes'."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from ecomrlve.env.judge.facts import Shown, check_answer
from ecomrlve.tasks import AnswerFact
from ecomrlve.testing import answers

TODAY = "2026-06-20"
ORDER = "O1234567"
PLACED = "2026-06-10"


# the order's status and delivery date, the order read; its placed date is context any answer
# may state
FACTS = [
    AnswerFact(kind="status", value="delivered", subject=ORDER, cues=[ORDER]),
    AnswerFact(
        kind="date",
        value="2026-06-17",
        role="arrival",
        subject=ORDER,
        cues=[ORDER],
        allowed=[PLACED],
    ),
]
READ = {"order_id": ORDER, "status": "delivered", "delivered": "2026-06-17", "placed": PLACED}


def _cases(
    name: str, *, passes: Sequence[str] = (), fails: Sequence[str] = ()
) -> list[answers.Case]:
    """Answers against FACTS with READ shown: each of `passes` passes, each of `fails` fails
    with a conflict "hedged about order"."""
    return answers.cases(
        name,
        FACTS,
        passes=passes,
        fails=fails,
        today=TODAY,
        shown=Shown([READ], TODAY),
        conflict="hedged about order",
    )


CASES: list[answers.Case] = _cases(
    "a date with an alternative states nothing",
    fails=[
        f"Your order {ORDER} was delivered on June 17 or on June 10, I'm not certain which.",
        f"Your order {ORDER} was delivered June 17 (could be June 10).",
        f"Your order {ORDER} was delivered June 17 - or perhaps rather June 10.",
        f"Your order {ORDER} was delivered on June 17, otherwise on June 10.",
        f"Your order {ORDER} was delivered June 17, if it wasn't June 20.",
        f"Your order {ORDER} was delivered June 17. Then again, it might have been June 10.",
        f"Your order {ORDER} was delivered June 17, maybe June 20 - the scans differ.",
        f"Order {ORDER}: delivered June 17 / June 10.",
        f"Your order {ORDER} was delivered on June 17, though June 10 is also possible.",
    ],
)


CASES += _cases(
    "two dates in their own roles state both",
    passes=[
        f"Your order {ORDER}, placed June 10, was delivered June 17.",
        f"Order {ORDER}: ordered June 10 -> delivered June 17.",
        f"Your order {ORDER} was delivered June 17 (you placed it June 10).",
        f"Order {ORDER} was delivered on June 17; today is June 20, so you're inside the window.",
        f"Order {ORDER} was placed June 10 and delivered June 17.",
        f"June 10: order {ORDER} placed. June 17: delivered.",
        f"Your order {ORDER} was delivered June 17, which was three days before today (June 20).",
        f"Your order {ORDER} reached you on June 17, a week after you ordered it on June 10.",
        f"| Order | Placed | Delivered |\n|---|---|---|\n| {ORDER} | June 10 | June 17 |",
        f"Your order {ORDER} was delivered on June 17 - that's June 17, three days ago.",
    ],
)


def test_a_hedged_date_is_held_to_the_order_its_statement_names() -> None:
    """No fact checks the date of a past purchase; said as one of two, it commits to none and
    fails, the order named after it ("(order O1)") or after a question mark inside it."""
    read = {"order_id": ORDER, "status": "delivered", "placed": PLACED, "total": 20.0}
    shown = Shown([read], TODAY)
    for answer in (
        f"For your purchase of June 10, if it wasn't June 17 (order {ORDER}), you paid $20.",
        f"For your purchase of June 10 - was it June 17? (order {ORDER}), you paid $20.",
    ):
        said = check_answer(answer, [], "", today=TODAY, shown=shown)
        assert any(f"hedged about order {ORDER}" in c for c in said.conflicts), (answer, said)
    plain = f"For your purchase of June 10 (order {ORDER}), you paid $20."
    assert not check_answer(plain, [], "", today=TODAY, shown=shown).conflicts


# The second date's clause adds only how sure the speaker is or where it was read.
CASES += _cases(
    "a second date with only doubt or a source is an alternative",
    fails=[
        f"Order {ORDER} was delivered June 17, though my records also mention June 10.",
        f"Order {ORDER} was delivered June 17 or, more probably, June 10.",
        f"Order {ORDER} was delivered June 17 going by the courier, or June 10 going by our log.",
        f"Order {ORDER} was delivered June 17 - today seems just as plausible.",
        f"Order {ORDER} was delivered June 17. Today, maybe?",
        f"Order {ORDER} was delivered June 17, or today based on where you live.",
        f"Order {ORDER} was delivered June 17; I'd guess June 10 is equally likely.",
    ],
)


CASES += _cases(
    "a source beside two dates in their own roles states both",
    passes=[
        f"Our records show order {ORDER} was placed June 10 and delivered June 17.",
        f"According to the courier, order {ORDER} was delivered June 17; you paid for it June 10.",
        f"Order {ORDER} was delivered June 17. Today is June 20, so returns are still open.",
        f"Order {ORDER} was delivered June 17, as the tracking shows; it left us on June 10.",
    ],
)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_answers(case: answers.Case) -> None:
    case.check()
