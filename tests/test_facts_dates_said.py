"""Dates said the ways people say them (issue 43): relative to the episode's today ("tomorrow",
"in 4 days", "this Wednesday", "3 days ago", "last Tuesday"), month and day in other shapes
("24-Jun", "Jun-24", "the 24th (June)", "June, the 24th") and with the year ("2026/06/24",
"24.6.2026"). Each is a date like "June 24": stated right it states the fact, stated wrong it
conflicts, offered as one of alternatives it commits to nothing."""

from __future__ import annotations

import datetime as dt
import re

import pytest

from ecomrlve.env import Catalog, reference_turns, verify
from ecomrlve.env.judge.facts import Shown, check_answer, extract_dates, normalise
from ecomrlve.generators import GenContext, generate_task
from ecomrlve.tasks import AnswerFact

TODAY = "2026-06-20"  # a Saturday
ORDER = "O1234567"


def _fact(kind: str, value: str, **fields) -> AnswerFact:
    return AnswerFact(kind=kind, value=value, subject=ORDER, cues=[ORDER], **fields)


def _check(answer: str, status: str, day: str, **shown_fields):
    """`answer` checked against the order's status and arrival date, the order read."""
    facts = [_fact("status", status), _fact("date", day, role="arrival")]
    key = "delivered" if status == "delivered" else "eta"
    read = {"order_id": ORDER, "status": status, key: day, "placed": "2026-06-10", **shown_fields}
    return check_answer(answer, facts, "", today=TODAY, shown=Shown([read], TODAY))


COMING = f"Your order {ORDER} has shipped and should arrive {{}}."
CAME = f"Your order {ORDER} was delivered {{}}."

# (sentence, status, the true day, the form said right, the same form said wrong)
FORMS = [
    (COMING, "shipped", "2026-06-21", "tomorrow", "the day after tomorrow"),
    (COMING, "shipped", "2026-06-24", "in 4 days", "in 5 days"),
    (COMING, "shipped", "2026-06-24", "in four days", "in three days"),
    (COMING, "shipped", "2026-06-24", "4 days from now", "6 days from now"),
    (COMING, "shipped", "2026-06-24", "this Wednesday", "this Thursday"),
    (COMING, "shipped", "2026-06-24", "on Wednesday", "on Tuesday"),
    (COMING, "shipped", "2026-06-24", "this coming Wednesday", "this coming Friday"),
    (COMING, "shipped", "2026-06-27", "in a week", "in 2 weeks"),
    (COMING, "shipped", "2026-06-24", "on 24-Jun", "on 25-Jun"),
    (COMING, "shipped", "2026-06-24", "on Jun-24", "on Jun-23"),
    (COMING, "shipped", "2026-06-24", "on the 24th (June)", "on the 26th (June)"),
    (COMING, "shipped", "2026-06-24", "on June, the 24th", "on June, the 14th"),
    (COMING, "shipped", "2026-06-24", "on the 24th", "on the 23rd"),
    (COMING, "shipped", "2026-06-24", "on 2026/06/24", "on 2026/06/25"),
    (COMING, "shipped", "2026-06-24", "on 24.6.2026", "on 25.6.2026"),
    (COMING, "shipped", "2026-06-20", "today", "tomorrow"),
    (CAME, "delivered", "2026-06-19", "yesterday", "the day before yesterday"),
    (CAME, "delivered", "2026-06-17", "3 days ago", "4 days ago"),
    (CAME, "delivered", "2026-06-17", "three days ago", "two days ago"),
    (CAME, "delivered", "2026-06-17", "last Wednesday", "last Thursday"),
    (CAME, "delivered", "2026-06-17", "on Wednesday", "on Monday"),
    (CAME, "delivered", "2026-06-16", "this past Tuesday", "this past Monday"),
    (CAME, "delivered", "2026-06-13", "a week ago", "2 weeks ago"),
    (CAME, "delivered", "2026-06-17", "on the 17th of June, 2026", "on the 15th of June, 2026"),
    (CAME, "delivered", "2026-06-17", "on 17.06.2026", "on 16.06.2026"),
]


@pytest.mark.parametrize(("sentence", "status", "day", "right", "wrong"), FORMS)
def test_a_date_said_right_states_the_fact_and_said_wrong_conflicts(
    sentence, status, day, right, wrong
) -> None:
    said = _check(sentence.format(right), status, day)
    assert said.ok, (right, said)
    lie = _check(sentence.format(wrong), status, day)
    assert not lie.ok and not lie.missing[1:], (wrong, lie)  # the date, not the status


@pytest.mark.parametrize(
    "hedge",
    ["either tomorrow or on Wednesday", "on Wednesday or maybe Thursday",
     "in 4 days, or possibly today", "this Wednesday or next Monday"],
)  # fmt: skip
def test_a_relative_date_offered_as_one_of_alternatives_states_nothing(hedge) -> None:
    assert not _check(COMING.format(hedge), "shipped", "2026-06-24").ok


@pytest.mark.parametrize(
    "answer",
    [
        f"As of today, your order {ORDER} has shipped and should arrive on June 24.",
        f"Your order {ORDER} has shipped and should arrive on June 24. No other order was "
        "placed today.",
        f"Today I checked: your order {ORDER} has shipped and should arrive June 24.",
        f"Your order {ORDER} has shipped (today's update) and should arrive on June 24.",
        f"Your order {ORDER} has shipped and should arrive on Wednesday, June 24.",
        f"Your order {ORDER} has shipped and should arrive on June 24 (a Wednesday).",
    ],
)
def test_today_and_weekday_words_beside_a_date_state_no_other_date(answer) -> None:
    assert _check(answer, "shipped", "2026-06-24").ok


def test_days_counted_for_a_window_are_no_date() -> None:
    """ "the window closed 5 days ago" and "it closes in 5 days" count days, no date."""
    today = (2026, 6, 20)
    for text in ("the 30-day window closed 5 days ago", "the window closes in 5 days",
                 "you have 5 more days", "refunds arrive in 5 business days"):  # fmt: skip
        assert extract_dates(normalise(text), today) == [], text


def test_no_relative_date_without_today() -> None:
    """A tool result or a prompt (no today given) states no relative date."""
    assert extract_dates(normalise("It should arrive tomorrow, in 3 days or on Friday.")) == []


MONTH = "January|February|March|April|May|June|July|August|September|October|November|December"


def _relative_forms(day: dt.date, today: dt.date) -> list[str]:
    delta = (day - today).days
    weekday = day.strftime("%A")
    if delta == 0:
        return ["today"]
    if 0 < delta <= 6:
        return [f"in {delta} days", f"{delta} days from now", f"this {weekday}", f"on {weekday}"]
    if -6 <= delta < 0:
        return [f"{-delta} days ago", f"last {weekday}", f"on {weekday}"]
    return []


def _other_forms(day: dt.date) -> list[str]:
    b, d = day.strftime("%b"), day.day
    nth = {1: "st", 2: "nd", 3: "rd", 21: "st", 22: "nd", 23: "rd", 31: "st"}.get(d, "th")
    return [f"on {d}-{b}", f"on {b}-{d:02d}", f"on the {d}{nth} ({day.strftime('%B')})",
            f"on {day.strftime('%B')}, the {d}{nth}", f"on {day.year}/{day.month:02d}/{d:02d}",
            f"on {d}.{day.month}.{day.year}"]  # fmt: skip


@pytest.fixture(scope="module")
def said_dates(small_catalog_dir):
    """(task, turns, today, where the answer says "on <Month D>", the date) for each date
    fact the reference states so (order status and return tasks, seed 43)."""
    ctx = GenContext.load(small_catalog_dir)
    out = []
    for scenario in ("order_status", "return", "cancel"):
        for d in (1, 3, 5, 7, 9):
            for i in range(4):
                task = generate_task(ctx, scenario, 43, d, i)
                if task is None:
                    continue
                turns = reference_turns(task)
                today = dt.date.fromisoformat(task.initial_state["today"])
                for fact in task.goal.answer_facts:
                    if fact.kind != "date":
                        continue
                    day = dt.date.fromisoformat(fact.value)
                    m = re.search(rf"\bon {day.strftime('%B')} {day.day}\b", turns[-1])
                    if m is not None:
                        out.append((task, turns, today, m.span(), day))
    return out


def test_reference_dates_said_otherwise_pass_and_a_day_off_fails(said_dates, small_catalog_dir):
    catalog = Catalog.load(small_catalog_dir)
    truths = lies = 0
    wrong = []
    for task, turns, today, (a, b), day in said_dates:
        answer = turns[-1]
        off = day + dt.timedelta(1)
        cases = [(f, True) for f in _relative_forms(day, today) + _other_forms(day)]
        lie_forms = _relative_forms(off, today)[:2] + _other_forms(off)[:3]
        cases += [(f, False) for f in lie_forms]
        for form, true in cases:
            said = answer[:a] + form + answer[b:]
            verdict = verify(task, [*turns[:-1], said], catalog)
            truths += true
            lies += not true
            if verdict.success != true:
                wrong.append((task.task_id, form, verdict.violations[:2]))
    assert truths >= 40 and lies >= 20, (truths, lies)
    assert not wrong, wrong[:5]
