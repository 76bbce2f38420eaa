"""A duration stated as the return window must be the window: checked by role, not only value.

A `policy` (or `return`) answer about an item's return window may state context durations
besides the window (days since delivery, days since the window closed: the window fact's
`allowed` values), but a value stated *as the window* must be the window itself. Before this
rule "No, the 14-day window closed 21 days ago" was paid for a 21-day window that closed 14
days ago: both numbers are values the answer may state, in swapped roles.

Over generated tasks (policy d0-10, and refused returns):
* attacks: the reference with window and days-since-closed swapped, and answers that state
  the days since delivery or the days since closing as the window (book style, "you had 14
  days", "a window of 14 days"…), must fail;
* paraphrases: the window and the elapsed days in other words ("your 21-day return window
  closed 14 days ago", "delivered 35 days ago, past the 21-day window", "you have 5 days left
  of the 21-day window"…) must pass.
"""

# ruff: noqa: E501  (tables of hand-written answers read best one per line)
from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

import pytest

from ecomrlve.env import final_answer, reference_turns, verify
from ecomrlve.env.facts import check_answer, extract_durations, normalise
from ecomrlve.generators import GenContext, generate_task
from ecomrlve.tasks import AnswerFact, Task


@pytest.fixture(scope="module")
def ctx(small_catalog_dir) -> GenContext:
    return GenContext.load(small_catalog_dir)


# ---- the role a sentence gives a duration -----------------------------------------------------
ROLES = [
    ("No, the 14-day window closed 21 days ago.", [(14, "window"), (21, "elapsed")]),
    ("Your 21-day return window closed 14 days ago.", [(21, "window"), (14, "elapsed")]),
    ("It was delivered 35 days ago, past the 21-day window.", [(35, "elapsed"), (21, "window")]),
    ("The return window is 21 days and it ended 14 days ago.", [(21, "window"), (14, "elapsed")]),
    ("The return window for yoga mats is 30 days for plus members.", [(30, "window")]),
    ("35 days since delivery; returns are accepted within 21 days.", [(35, "elapsed"), (21, "window")]),
    ("You have 5 days left of the 21-day window.", [(5, "left"), (21, "window")]),
    ("You have 9 more days.", [(9, "left")]),
    ("You had 14 days; it has been 21 days.", [(14, "window"), (21, "elapsed")]),
    ("You have 30 days from delivery to return boots.", [(30, "window")]),
    ("A window of thirty days applies.", [(30, "window")]),
    ("The fourteen-day window closed twenty-one days ago.", [(14, "window"), (21, "elapsed")]),
    ("It is 14 days past the window.", [(14, "elapsed")]),
    ("That's 30 days.", [(30, "unknown")]),
]  # fmt: skip


@pytest.mark.parametrize(("answer", "roles"), ROLES)
def test_durations_are_read_with_the_role_their_sentence_gives_them(answer, roles):
    found = [(d.low, d.role) for _, d in extract_durations(normalise(answer))]
    assert found == roles


# ---- hand-written answers: a 21-day window, delivered 35 days ago, closed 14 days ago -----------
CLOSED = [
    AnswerFact(kind="verdict", value="return:no"),
    AnswerFact(kind="duration", value="21", allowed=["35", "14"], required=False),
]
CLOSED_PROMPT = "Can I still return the boots I received 35 days ago?"
SWAPPED = [
    "No, the 14-day window closed 21 days ago.",
    "No: you had 14 days; it has been 21 days since the window closed.",
    "No, the return window is 14 days and it ended 21 days ago.",
    "No, a window of 14 days applies, and it closed 21 days ago.",
    "No, you had 14 days to return it.",
    "No, the fourteen-day window closed twenty-one days ago.",
    # the days since delivery (the prompt's own number) stated as the window
    "No, the 35-day window has closed.",
]
TRUE = [
    "No, your 21-day return window closed 14 days ago.",
    "No: it was delivered 35 days ago, past the 21-day window.",
    "No, the return window is 21 days and it ended 14 days ago.",
    "No: it has been 35 days since delivery; returns are only accepted within 21 days.",
    "No, you had 21 days to return it, and it's now 14 days past that.",
    "No, the twenty-one-day window closed fourteen days ago.",
    "No, it can't be returned any more: you received it 35 days ago.",
]


@pytest.mark.parametrize("answer", SWAPPED)
def test_a_context_value_stated_as_the_window_fails(answer):
    checked = check_answer(answer, CLOSED, CLOSED_PROMPT)
    assert not checked.ok and any("as the window" in c for c in checked.conflicts), checked


@pytest.mark.parametrize("answer", TRUE)
def test_the_window_and_elapsed_days_in_other_words_pass(answer):
    checked = check_answer(answer, CLOSED, CLOSED_PROMPT)
    assert checked.ok, (answer, checked)


# ---- an open window: 21 days, delivered 7 days ago, 14 left (two duration facts, as policy has)
OPEN = [
    AnswerFact(kind="verdict", value="return:yes"),
    AnswerFact(kind="duration", value="21", allowed=["7", "0"], required=False),
    AnswerFact(kind="duration", value="14", allowed=["7", "0"], required=False),
]
OPEN_PROMPT = "Can I still return the lamp I received 7 days ago?"


@pytest.mark.parametrize(
    "answer",
    [  # another shop's book (14-day window): the days since delivery stated as days left
        "Yes, you can still return it: the return window is 14 days, so you have 7 more days.",
        "Yes, you have 7 days left to return it.",
        "Yes: 7 more days.",
    ],
)
def test_days_since_delivery_stated_as_days_left_fails(answer):
    checked = check_answer(answer, OPEN, OPEN_PROMPT)
    assert not checked.ok and any("as days left" in c for c in checked.conflicts), checked


@pytest.mark.parametrize(
    "answer",
    [
        "Yes, you can still return it: the return window is 21 days, so you have 14 more days.",
        "Yes: it arrived 7 days ago and the 21-day window leaves you 14 days.",
        "Yes, you have 14 days left of the 21-day return window.",
        "Yes, it was delivered 7 days ago; you can return it within 21 days.",
    ],
)
def test_an_open_window_in_other_words_passes(answer):
    checked = check_answer(answer, OPEN, OPEN_PROMPT)
    assert checked.ok, (answer, checked)


def test_a_window_the_prompt_states_may_be_quoted_but_elapsed_days_may_not():
    facts = [AnswerFact(kind="duration", value="21")]
    quoted = "I thought the return window was 30 days."
    assert check_answer("No, it's not a 30-day window: the window is 21 days.", facts, quoted).ok
    elapsed = "I received it 30 days ago."
    assert not check_answer("The 30-day window is 21 days now.", facts, elapsed).ok


# ---- over generated tasks ---------------------------------------------------------------------
@dataclass
class Window:
    """The return window of the item a policy task asks about, as its shop's book decides."""

    task: Task
    window: int  # days
    days: int  # since delivery
    category: str
    membership: str

    @property
    def closed(self) -> bool:
        return self.days > self.window

    @property
    def targets(self) -> set[tuple[int, int]]:
        """Every duration the task's facts ask for (the window, days left, refund days)."""
        out = set()
        for f in self.task.goal.answer_facts:
            if f.kind == "duration":
                low, _, high = f.value.partition("-")
                out.add((int(low), int(high or low)))
        return out

    def is_target(self, days: int) -> bool:
        return (days, days) in self.targets


def _window(task: Task, ctx: GenContext) -> Window | None:
    """The item's window, for a policy task whose facts hold it (None: final sale, or no
    question that needs the window)."""
    if not any(f.kind == "duration" and f.allowed for f in task.goal.answer_facts):
        return None
    category = task.goal.user_facts["category"]
    membership = task.initial_state["user"]["membership"]
    orders = {o["order_id"]: o for o in task.initial_state["orders"]}
    order = orders[task.goal.relevant_ids[0]]
    today = dt.date.fromisoformat(task.initial_state["today"])
    days = (today - dt.date.fromisoformat(order["delivered"])).days
    rule = ctx.policies.return_rule(category, membership)
    return Window(task, rule.window_days, days, category, membership)


@pytest.fixture(scope="module")
def windows(ctx) -> list[Window]:
    """Policy tasks (seed 61, d 0-10, 10 indexes) about a returnable item's window."""
    out = []
    for d in range(11):
        for i in range(10):
            task = generate_task(ctx, "policy", 61, d, i)
            window = _window(task, ctx) if task is not None else None
            if window is not None:
                out.append(window)
    return out


def _answer(w: Window, *sentences: str) -> str:
    """The reference answer with its sentences about the item's window (the window, days left,
    the verdicts that state them) replaced by the verdicts and `sentences`."""
    text, verdicts = final_answer(w.task), []
    for f in w.task.goal.answer_facts:
        about_the_window = f.kind == "duration" and f.allowed
        if f.kind == "verdict" and extract_durations(normalise(f.say)):
            about_the_window = True
            verdicts.append(f.value)
        if about_the_window and f.say:
            text = text.replace(f.say, "")
    said = {
        "return:no": "No, it can't be returned any more.",
        "exchange:no": "It can't be exchanged any more either.",
    }
    return " ".join([*text.split(), *(said[v] for v in verdicts), *sentences])


def _closed_sentences(w: Window) -> tuple[list[str], list[str]]:
    """(true, swapped) sentences about a closed window: W days, delivered D ago, closed C ago."""
    W, D, C = w.window, w.days, w.days - w.window
    true = [
        f"Your {W}-day return window closed {C} days ago.",
        f"You received it {D} days ago, past the {W}-day window.",
        f"The return window is {W} days and it ended {C} days ago.",
        f"It has been {D} days since delivery; returns are only accepted within {W} days.",
        f"You had {W} days to return it, and it's now {C} days past that.",
        f"A window of {W} days applies to {w.category}, and you are {C} days past it.",
        f"The {W}-day return window for {w.category} closed {C} days ago.",
    ]
    swapped = []
    if C != W and not w.is_target(C):  # the days since closing stated as the window
        swapped += [
            f"Your {C}-day return window closed {W} days ago.",
            f"The return window is {C} days and it ended {W} days ago.",
            f"You had {C} days; it has been {W} days since the window closed.",
            f"A window of {C} days applies to {w.category}, and it closed {W} days ago.",
            f"You received it {D} days ago, past the {C}-day window.",
        ]
    if not w.is_target(D):  # the days since delivery stated as the window
        swapped += [
            f"You had {D} days to return it.",
            f"The {D}-day return window for {w.category} has closed.",
        ]
    return true, swapped


def _open_sentences(w: Window) -> tuple[list[str], list[str]]:
    """(true, swapped) sentences about an open window: W days, delivered D ago, L left."""
    W, D, L = w.window, w.days, w.window - w.days
    true = [
        f"You have {L} days left of the {W}-day window.",
        f"You received it {D} days ago, well inside the {W}-day return window.",
        f"The return window is {W} days, so you have {L} more days.",
        f"It has been {D} days since delivery, and returns are accepted within {W} days.",
        f"A window of {W} days applies to {w.category}: {L} days remain.",
        f"You have {W} days from delivery to return {w.category}; {L} days are left.",
    ]
    swapped = []
    if not w.is_target(D):  # the days since delivery stated as the window
        swapped += [
            f"The return window for {w.category} is {D} days for {w.membership} members, so you have {L} more days.",
            f"You have {L} days left of the {D}-day window.",
            f"A window of {D} days applies to {w.category}.",
            f"You have {D} days to return it.",
        ]
    return true, swapped


def _sentences(w: Window) -> tuple[list[str], list[str]]:
    return _closed_sentences(w) if w.closed else _open_sentences(w)


def test_policy_answers_stating_a_context_value_as_the_window_fail(windows, ctx):
    tried = closed = 0
    for w in windows:
        calls = reference_turns(w.task)[:-1]
        for sentence in _sentences(w)[1]:
            answer = _answer(w, sentence)
            verdict = verify(w.task, [*calls, answer], ctx.catalog)
            assert not verdict.success, (w.task.task_id, answer)
            assert any("as the window" in v for v in verdict.violations), verdict.violations
            tried += 1
            closed += w.closed
    assert tried >= 150 and closed >= 80  # both a closed window and an open one


def test_policy_answers_stating_the_window_and_elapsed_days_in_other_words_pass(windows, ctx):
    tried = closed = 0
    for w in windows:
        calls = reference_turns(w.task)[:-1]
        for sentence in _sentences(w)[0]:
            answer = _answer(w, sentence)
            verdict = verify(w.task, [*calls, answer], ctx.catalog)
            assert verdict.success, (w.task.task_id, answer, verdict.violations)
            tried += 1
            closed += w.closed
    assert tried >= 150 and closed >= 80


# the reference's own "<W>-day return window … closed <C> days ago", in a policy or return task
_CLOSED_AGO = re.compile(r"(\d+)-day return window( for [a-z -]+)? closed (\d+) days ago")


def test_references_with_the_window_and_days_since_closed_swapped_fail(ctx):
    """The attack the value-only check paid: the reference's own sentence with its two numbers
    swapped ("the 14-day return window … closed 21 days ago" for 21 days, closed 14 ago)."""
    swapped = passed_reference = 0
    for scenario in ("policy", "return"):
        for d in range(11):
            for i in range(8):
                task = generate_task(ctx, scenario, 71, d, i)
                if task is None:
                    continue
                turns = reference_turns(task)
                found = _CLOSED_AGO.findall(turns[-1])
                if len(found) != 1:
                    continue  # no closed window, or several items' windows
                window, _, closed = found[0]
                targets = {f.value for f in task.goal.answer_facts if f.kind == "duration"}
                if window == closed or closed in targets:
                    continue  # the swap says the same, or states another target
                answer = _CLOSED_AGO.sub(
                    rf"{closed}-day return window\2 closed {window} days ago", turns[-1]
                )
                answer = answer.replace(f"the {window}-day", f"the {closed}-day")
                assert verify(task, turns, ctx.catalog).success
                passed_reference += 1
                verdict = verify(task, [*turns[:-1], answer], ctx.catalog)
                assert not verdict.success, (task.task_id, answer)
                swapped += 1
    assert swapped >= 30 and passed_reference == swapped
