"""Amounts said the ways people say them (issue 43, blind probes round 3).

The facts reader read dollars and cents said apart as whole dollars ("7 dollars 99", "you paid
$55 and 99 cents", "39 bucks and 99 cents", "$7 and 99¢", "36 dollars, 99 cents": $7.00 …),
missed "101.99 US dollars", read "$2 183.99" and "$1'422.97" as $2 and $1, and "$1,565 and 99
cents" as $1,565; a true answer failed, and "$55 and 99 cents" for a $55.00 fact was paid. It
also read "free" in "below the $50 needed for free shipping" as a $0 shipping fee. Now
(`values._MONEY_FORMS`, `values._RULE_FREE_BEFORE`): cents said apart count wherever a unit
says they are cents (or two bare digits follow "dollars"), thousands may be grouped by commas,
apostrophes or spaces next to a currency mark, and "free" that an amount is needed for is the
shop's rule. What is not an amount stays so: "$7 and 8 items" is $7, "2 items 183.99" joins
nothing, "47 dollars 99 items" is $47.

Over generated tasks: the reference answer with each amount in one of the forms passes, and
the same form with the amount one cent off fails (counts printed with `-s`).
"""

from __future__ import annotations

import re

import pytest

from ecomrlve.env import Catalog, reference_turns, verify
from ecomrlve.env.judge.facts import extract_money, normalise
from ecomrlve.generators import GenContext
from ecomrlve.tasks import AnswerFact, Task
from ecomrlve.testing import answers
from ecomrlve.testing.evidence_probes import number_words
from ecomrlve.testing.fuzzer import generated_tasks


def _price(value: str) -> list[AnswerFact]:
    return [AnswerFact(kind="money", value=value, role="price")]


# ---- what is read ----------------------------------------------------------------------------
READ = [
    ("It came to 12 dollars 49.", [12.49]),
    ("It came to twelve dollars forty-nine.", [12.49]),
    ("It came to twelve dollars and forty-nine.", [12.49]),
    ("You paid $12 and 49 cents.", [12.49]),
    ("You paid $12, and 49 cents.", [12.49]),
    ("That was 12 bucks and 49 cents.", [12.49]),
    ("That was $12 and 49¢.", [12.49]),
    ("That was 12 dollars, 49 cents.", [12.49]),
    ("That was 12 dollars 49 cents.", [12.49]),
    ("That was 12 dollars and 5 cents.", [12.05]),
    ("That was $12 & 49 cents.", [12.49]),
    ("That was twelve and 49/100 dollars.", [12.49]),
    ("That was 312.49 US dollars.", [312.49]),
    ("That was 312.49 U.S. dollars.", [312.49]),
    ("That was 312.49$.", [312.49]),
    ("That was 312,49 $.", [312.49]),
    ("The total is USD 3 312.49.", [3312.49]),
    ("The total is 3 312.49 USD.", [3312.49]),
    ("The total is $3 312.49.", [3312.49]),
    ("The total is $3\u202f312.49.", [3312.49]),  # a narrow no-break space
    ("The total is $3'312.49.", [3312.49]),
    ("The total is $3\u2019312.49.", [3312.49]),
    ("The total is $3,312 and 49 cents.", [3312.49]),
    ("The total is $3 312 for both.", [3312.0]),
    # not an amount's cents, or two numbers: read apart
    ("It was $7 and 8 items.", [7.0]),
    ("It was $7 and 8 of them.", [7.0]),
    ("It was 7 dollars 99 items.", [7.0]),
    ("It was 7 dollars and 12 for shipping.", [7.0]),
    ("You bought 2 items 183.99 USD in all.", [183.99]),
    ("You bought 2 $5 gift cards.", [5.0]),
    ("It was $20 100% refundable.", [20.0]),
    ("It was $40 100 days ago.", [40.0]),
    ("It was 47,99 USD.", [47.99]),
    # $0 (`_MONEY_ZERO`, its lookbehinds moved after "free" for speed: the same matches)
    ("Shipping is free.", [0.0]),
    ("It's at no extra cost, and returns cost you nothing.", [0.0, 0.0]),
    ("Feel free to ask; returns are hassle-free.", []),
]  # fmt: skip


@pytest.mark.parametrize(("answer", "amounts"), READ)
def test_amounts_said_apart_or_grouped_are_read_whole(answer, amounts):
    assert [float(a) for _, a in extract_money(normalise(answer))] == amounts


# Hand-written answers, by the rule they show: each section adds its groups to CASES, which
# `test_hand_written_answers` checks one by one.
CASES: list[answers.Case] = []


# ---- truths and lies, by hand ------------------------------------------------------------------
TRUTHS = [  # (answer, the fact's value)
    ("The lamp was 23 dollars 49.", "23.49"),
    ("You paid $68 and 15 cents for it.", "68.15"),
    ("It set you back 68 bucks and 15 cents.", "68.15"),
    ("It's $68 and 15¢ each.", "68.15"),
    ("You paid 68 dollars, 15 cents.", "68.15"),
    ("You paid sixty-eight dollars fifteen for it.", "68.15"),
    ("You paid 368.15 US dollars for it.", "368.15"),
    ("You paid USD 2 368.15 for it.", "2368.15"),
    ("You paid $2 368.15 for it.", "2368.15"),
    ("You paid $2'368.15 for it.", "2368.15"),
    ("You paid $2,368 and 15 cents for it.", "2368.15"),
    ("It came to 2,368 bucks and 15 cents.", "2368.15"),
    ("You paid $55 and 0 cents.", "55.00"),
    ("You paid sixty-eight and 15/100 dollars.", "68.15"),
]
LIES = [  # the same forms, another amount
    ("The lamp was 23 dollars 94.", "23.49"),
    ("You paid $68 and 51 cents for it.", "68.15"),
    ("It set you back 68 bucks and 16 cents.", "68.15"),
    ("It's $68 and 14¢ each.", "68.15"),
    ("You paid 68 dollars, 50 cents.", "68.15"),
    ("You paid sixty-eight dollars fifty for it.", "68.15"),
    ("You paid 368.51 US dollars for it.", "368.15"),
    ("You paid USD 2 368.51 for it.", "2368.15"),
    ("You paid $2 386.15 for it.", "2368.15"),
    ("You paid $2'368.16 for it.", "2368.15"),
    ("You paid $2,368 and 51 cents for it.", "2368.15"),
    ("It came to 2,368 bucks and 14 cents.", "2368.15"),
    ("You paid sixty-eight and 51/100 dollars.", "68.15"),
    # cents said apart for a whole-dollar fact: read as $55.00 before, and paid
    ("You paid $55 and 99 cents.", "55.00"),
    ("You paid 55 dollars 99.", "55.00"),
    ("That's 55 bucks and 99 cents.", "55.00"),
    ("You paid $1,565 and 99 cents.", "1565.00"),
    ("You paid $1 565.99.", "1565.00"),
]


CASES += [
    *(
        answers.Case("a true amount said apart or grouped passes", a, _price(v), True)
        for a, v in TRUTHS
    ),
    *(answers.Case("a wrong amount in the same form fails", a, _price(v), False) for a, v in LIES),
]


# ---- "free" that an amount is needed for -------------------------------------------------------


CASES += answers.cases(
    "free shipping as what an amount is needed for is no 0 fee",
    answers.SHIPPING_FEE,
    answers.ASK_35,
    passes=[
        "Shipping is $4.99: a $35 order is below the $50 needed for free shipping.",
        "It's $4.99 to ship; you need at least $50 for free shipping.",
        "Shipping is $4.99 since your $35 order is under the $50 minimum for free shipping.",
        "Shipping is $4.99. The free shipping threshold is $50.",
        "Your order needs $50 for free shipping, so it's $4.99 to ship.",
    ],
)


CASES += answers.cases(
    "free as the price of this orders shipping still fails",
    answers.SHIPPING_FEE,
    answers.ASK_35,
    fails=[
        "Shipping is free: a $35 order is below the $50 needed for free shipping.",
        "Your order ships free; you need $50 to get free shipping.",
        "Shipping on your $35 order is free.",
        "A $35 order is below the $50 needed for free shipping.",  # no fee told
    ],
)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_hand_written_answers(case: answers.Case):
    case.check()


# ---- over generated tasks ----------------------------------------------------------------------
SCENARIOS = ("policy", "order_status", "cart", "bundle", "product_discovery", "substitution",
             "journey", "return", "cancel")  # fmt: skip
_DOLLARS = re.compile(r"\$(\d+)\.(\d\d)\b")
FORMS = (  # each (dollars, cents) as a person might say it; cents 10-99
    lambda d, c: f"{d} dollars {c:02d}",
    lambda d, c: f"${d} and {c} cents",
    lambda d, c: f"{d} bucks and {c} cents",
    lambda d, c: f"${d} and {c}¢",
    lambda d, c: f"{d} dollars, {c} cents",
    lambda d, c: f"{number_words(d)} dollars {number_words(c)}",
    lambda d, c: f"{d}.{c:02d} US dollars",
    lambda d, c: f"{d}.{c:02d}$",
)


@pytest.fixture(scope="module")
def cases(small_catalog_dir) -> tuple[Catalog, list[tuple[Task, list[str], str]]]:
    """(task, its reference turns, the answer) for tasks whose answer states an amount with
    cents 10-99 (the bare-digit form needs two digits)."""
    ctx = GenContext.load(small_catalog_dir)
    out = []
    for task in generated_tasks(ctx, SCENARIOS, (0, 3, 6, 9), 3, 4343):
        turns = reference_turns(task)
        amounts = _DOLLARS.findall(turns[-1])
        if amounts and all(int(c) >= 10 for _, c in amounts):
            out.append((task, turns, turns[-1]))
    return Catalog.load(small_catalog_dir), out


def _say(answer: str, form, off_by: int = 0) -> str:
    def said(m: re.Match[str]) -> str:
        cents = int(m[2]) + (off_by if int(m[2]) + off_by <= 99 else -off_by)
        return form(int(m[1]), cents)

    return _DOLLARS.sub(said, answer)


def test_over_generated_tasks_each_form_passes_and_one_cent_off_fails(cases):
    catalog, tasks = cases
    passed = failed = 0
    for k, (task, turns, answer) in enumerate(tasks):
        for j in range(2):  # two forms a task, all forms over the tasks
            form = FORMS[(k + j) % len(FORMS)]
            said = _say(answer, form)
            verdict = verify(task, [*turns[:-1], said], catalog)
            assert verdict.success, (task.task_id, said, verdict.violations)
            passed += 1
            lie = _say(answer, form, off_by=1)
            verdict = verify(task, [*turns[:-1], lie], catalog)
            assert not verdict.success, (task.task_id, lie)
            assert any("money" in v for v in verdict.violations), verdict.violations
            failed += 1
    print(f"amounts said apart: {passed} true answers passed, {failed} one cent off failed")
    assert passed >= 20 and failed >= 20
