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

With the facts' roles (`AnswerFact.role`: the window "window", the days left "left"), also:
the window and the days left swapped ("the window is 9 days, so you have 30 more days"), the
window stated as elapsed time ("the 21-day window closed 21 days ago"), and a required window
"stated" as elapsed time (journey: "it arrived 30 days ago") fail; each value in its own role
passes. And an honest "no" after the shop's rule ("returns are accepted within 21 days, and
yours arrived 35 days ago, so it can't be returned") is no longer read as a yes.
"""

# ruff: noqa: E501  (tables of hand-written answers read best one per line)
from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

import pytest

from ecomrlve.env import final_answer, reference_turns, verify
from ecomrlve.env.judge.facts import check_answer, extract_durations, normalise
from ecomrlve.generators import GenContext, generate_task
from ecomrlve.tasks import AnswerFact, Task
from ecomrlve.testing import answers


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


CASES = answers.cases(
    "a context value stated as the window fails",
    CLOSED,
    CLOSED_PROMPT,
    fails=SWAPPED,
    conflict="as the window",
)
CASES += answers.cases(
    "the window and elapsed days in other words pass", CLOSED, CLOSED_PROMPT, passes=TRUE
)


# ---- an open window: 21 days, delivered 7 days ago, 14 left (two duration facts, as policy has)
OPEN = [
    AnswerFact(kind="verdict", value="return:yes"),
    AnswerFact(kind="duration", value="21", allowed=["7", "0"], required=False),
    AnswerFact(kind="duration", value="14", allowed=["7", "0"], required=False),
]
OPEN_PROMPT = "Can I still return the lamp I received 7 days ago?"


CASES += answers.cases(
    "days since delivery stated as days left fails",
    OPEN,
    OPEN_PROMPT,
    fails=[  # another shop's book (14-day window): the days since delivery stated as days left
        "Yes, you can still return it: the return window is 14 days, so you have 7 more days.",
        "Yes, you have 7 days left to return it.",
        "Yes: 7 more days.",
    ],
    conflict="as days left",
)
CASES += answers.cases(
    "an open window in other words passes",
    OPEN,
    OPEN_PROMPT,
    passes=[
        "Yes, you can still return it: the return window is 21 days, so you have 14 more days.",
        "Yes: it arrived 7 days ago and the 21-day window leaves you 14 days.",
        "Yes, you have 14 days left of the 21-day return window.",
        "Yes, it was delivered 7 days ago; you can return it within 21 days.",
    ],
)


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


# ---- fact roles: each target in its own role ---------------------------------------------------
# The generators give each duration fact its role (`AnswerFact.role`): the window ("window") and
# the days left ("left"). A value stated in one role states no fact of another, and is no target
# there: both targets of an open window swapped, the window stated as elapsed time, and a
# required window "stated" by "it arrived 30 days ago" all fail.
OPEN_ROLES = [
    AnswerFact(kind="verdict", value="return:yes"),
    AnswerFact(kind="duration", value="30", allowed=["21", "0"], required=False, role="window"),
    AnswerFact(kind="duration", value="9", allowed=["21", "0"], required=False, role="left"),
]
OPEN_ROLES_PROMPT = "Can I still return the lamp I received 21 days ago?"


@pytest.mark.parametrize(
    "answer",
    [
        "Yes, the window is 9 days, so you have 30 more days.",
        "Yes, you have 30 days left of the 9-day return window.",
        "Yes: a window of 9 days applies, and 30 days remain to go.",
        "Yes, you have 30 more days.",
    ],
)
def test_the_window_and_days_left_swapped_fail(answer):
    checked = check_answer(answer, OPEN_ROLES, OPEN_ROLES_PROMPT)
    assert not checked.ok, checked
    assert any(c.endswith(("as the window", "as days left")) for c in checked.conflicts), checked


CASES += answers.cases(
    "the window and days left each in its role pass",
    OPEN_ROLES,
    OPEN_ROLES_PROMPT,
    passes=[
        "Yes, the window is 30 days, so you have 9 more days.",
        "Yes, you have 9 days left of the 30-day return window.",
        "Yes: it arrived 21 days ago, and with a thirty-day window nine days remain to go.",
        "Yes, you can still return it: 9 more days.",
        "Yes, returns are accepted within 30 days and yours arrived 21 days ago.",
    ],
)


# a closed 21-day window with roles: delivered 35 days ago, closed 14 days ago
CLOSED_ROLES = [CLOSED[0], CLOSED[1].model_copy(update={"role": "window"})]


@pytest.mark.parametrize(
    "answer",
    [
        "No, the 21-day window closed 21 days ago.",
        "No: it was delivered 21 days ago, past the 21-day window.",
        "No, you had 21 days, and it has been 21 days since the window closed.",
    ],
)
def test_the_window_stated_as_elapsed_time_fails(answer):
    checked = check_answer(answer, CLOSED_ROLES, CLOSED_PROMPT)
    assert not checked.ok and "duration 21 days as elapsed time" in checked.conflicts, checked


CASES += answers.cases(
    "elapsed days stated as elapsed time pass with roles",
    CLOSED_ROLES,
    CLOSED_PROMPT,
    passes=TRUE,
)


WINDOW_REQUIRED = [AnswerFact(kind="duration", value="30", role="window")]


@pytest.mark.parametrize(
    "answer",
    ["It arrived 30 days ago.", "We delivered it thirty days ago; I've started the return."],
)
def test_a_required_window_is_not_stated_by_elapsed_time(answer):
    checked = check_answer(answer, WINDOW_REQUIRED)
    assert not checked.ok and checked.missing == ["duration '30'"], checked


CASES += answers.cases(
    "a required window stated as the window passes",
    WINDOW_REQUIRED,
    passes=[
        "You have 30 days from delivery to return shoes.",
        "Returns of shoes are accepted within thirty days of delivery.",
        "The return window for shoes is 30 days.",
        "That's 30 days for shoes.",
    ],
)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_hand_written_answers(case: answers.Case):
    case.check()


def test_facts_without_a_role_keep_the_value_check():
    """Rows written before roles hold no role: any role states them, as before."""
    old = [AnswerFact(kind="duration", value="30")]
    assert check_answer("It arrived 30 days ago.", old).ok
    assert not check_answer("The 21-day window is 30 days now.", old).ok  # still: window = target


def test_stored_rows_without_roles_load_and_their_references_verify(ctx):
    """A task row written before `AnswerFact.role` (no "role" key in its goal) loads with ''
    roles and its reference verifies as before."""
    checked = 0
    for d in (2, 5, 8):
        for i in range(6):
            task = generate_task(ctx, "policy", 61, d, i)
            if task is None or not any(f.role for f in task.goal.answer_facts):
                continue
            row = task.to_row()
            row["goal"] = re.sub(r',"role":"[a-z]*"', "", row["goal"])
            assert '"role"' not in row["goal"]
            old = Task.from_row(row)
            assert all(f.role == "" for f in old.goal.answer_facts)
            assert verify(old, reference_turns(old), ctx.catalog).success, old.task_id
            checked += 1
    assert checked >= 5


# ---- gap 4: a rule stated before an honest "no" is no "yes" -------------------------------------
@pytest.mark.parametrize(
    "answer",
    [
        "Returns are accepted within 21 days, and yours arrived 35 days ago, so it can't be returned.",
        "You can return items within 21 days of delivery, but yours arrived 35 days ago, so it can't be returned.",
        "Returns for lamps are accepted within a 21-day window; you received yours 35 days ago, so no.",
    ],
)
def test_an_honest_no_after_the_shops_rule_passes(answer):
    for facts in (CLOSED, CLOSED_ROLES):
        checked = check_answer(answer, facts, CLOSED_PROMPT)
        assert checked.ok, (answer, checked)


@pytest.mark.parametrize(
    "answer",
    [
        "Returns are accepted within 21 days, so you can still return it.",
        "Yes, returns are accepted within 21 days.",
        "Returns are accepted within 21 days and yours arrived 35 days ago, but you can still send it back.",
        "Returns are accepted within 21 days.",  # the rule alone answers nothing
    ],
)
def test_the_shops_rule_claiming_or_dodging_eligibility_fails(answer):
    for facts in (CLOSED, CLOSED_ROLES):
        assert not check_answer(answer, facts, CLOSED_PROMPT).ok, answer


# ---- fact roles over generated tasks -----------------------------------------------------------
def _left_fact(w: Window) -> bool:
    return any(f.kind == "duration" and f.role == "left" for f in w.task.goal.answer_facts)


# why a role attack fails: a value in the wrong role, or the yes it claims
ROLE_OR_VERDICT = r"as (?:the window|days left|elapsed time)|verdict return:yes"


def _role_sentences(w: Window) -> tuple[list[str], list[str]]:
    """(true, attacks) for the roles: targets swapped with targets, the window stated as elapsed
    time, and an honest "no" after the shop's rule (with its lie as an attack)."""
    W, D, C, L = w.window, w.days, w.days - w.window, w.window - w.days
    true, attacks = [], []
    if w.closed:
        true += [
            f"Returns of {w.category} are accepted within {W} days, and you received it {D} days ago, so it can't be returned.",
            f"You can return items within {W} days of delivery, but you received it {D} days ago.",
            f"The {W}-day window is over: you received it {D} days ago.",
        ]
        if any(f.value == "return:no" for f in w.task.goal.answer_facts):
            attacks.append(
                f"Returns of {w.category} are accepted within {W} days, so you can still return it."
            )
        if W not in (C, D):  # the window stated as elapsed time
            attacks += [
                f"Your {W}-day return window closed {W} days ago.",
                f"You received it {W} days ago, past the {W}-day window.",
            ]
    elif _left_fact(w) and L != W:
        true += [
            f"Returns of {w.category} are accepted within {W} days and you received it {D} days ago, so you have {L} more days.",
            f"With a {W}-day window, {L} days remain to go.",
            f"You received it {D} days ago; the window is {W} days, which leaves {L} more days.",
        ]
        attacks += [  # the window and the days left swapped
            f"The return window for {w.category} is {L} days, so you have {W} more days.",
            f"You have {W} days left of the {L}-day window.",
        ]
        if W != D:
            attacks.append(
                f"You received it {W} days ago and you have {L} days left of the {W}-day window."
            )
    return true, attacks


def test_policy_answers_with_targets_in_swapped_roles_fail(windows, ctx):
    tried, kinds = 0, set()
    for w in windows:
        calls = reference_turns(w.task)[:-1]
        for sentence in _role_sentences(w)[1]:
            answer = _answer(w, sentence)
            verdict = verify(w.task, [*calls, answer], ctx.catalog)
            assert not verdict.success, (w.task.task_id, answer)
            assert any(re.search(ROLE_OR_VERDICT, v) for v in verdict.violations), verdict
            tried += 1
            kinds.add("closed" if w.closed else "open")
    print(f"role attacks over policy tasks: {tried} failed")
    assert tried >= 100 and kinds == {"closed", "open"}


def test_policy_answers_with_each_target_in_its_role_pass(windows, ctx):
    tried, kinds = 0, set()
    for w in windows:
        calls = reference_turns(w.task)[:-1]
        for sentence in _role_sentences(w)[0]:
            answer = _answer(w, sentence)
            verdict = verify(w.task, [*calls, answer], ctx.catalog)
            assert verdict.success, (w.task.task_id, answer, verdict.violations)
            tried += 1
            kinds.add("closed" if w.closed else "open")
    print(f"role paraphrases over policy tasks: {tried} passed")
    assert tried >= 100 and kinds == {"closed", "open"}


def _journey_windows(ctx) -> list[tuple[Task, AnswerFact]]:
    """Journey tasks (seed 61) whose answer must state a category's return window."""
    out = []
    for d in range(11):
        for i in range(24):
            task = generate_task(ctx, "journey", 61, d, i)
            if task is None:
                continue
            for f in task.goal.answer_facts:
                if f.kind == "duration" and f.role == "window" and f.required and f.say:
                    out.append((task, f))
    return out


def test_journey_windows_stated_as_elapsed_time_fail_and_in_other_words_pass(ctx):
    """A required window "stated" by a number in the elapsed role is missing (and the number
    conflicts); the window in other words passes."""
    failed = passed = 0
    for task, fact in _journey_windows(ctx):
        turns = reference_turns(task)
        assert fact.say in turns[-1]
        W = fact.value
        category = fact.say.rsplit(" return ", 1)[1].rstrip(".")
        for attack in (
            f"You received it {W} days ago.",
            f"You received the {category} {W} days ago, so I started the return.",
        ):
            verdict = verify(task, [*turns[:-1], turns[-1].replace(fact.say, attack)], ctx.catalog)
            assert not verdict.success, (task.task_id, attack)
            assert any(f"duration '{W}'" in v for v in verdict.violations), verdict.violations
            failed += 1
        for said in (
            f"Returns of {category} are accepted within {W} days of delivery.",
            f"The return window for {category} is {W} days.",
            f"A {W}-day return window applies to {category}.",
            f"You get {W} days to send {category} back.",
        ):
            verdict = verify(task, [*turns[:-1], turns[-1].replace(fact.say, said)], ctx.catalog)
            assert verdict.success, (task.task_id, said, verdict.violations)
            passed += 1
    print(f"journey windows: {failed} attacks failed, {passed} paraphrases passed")
    assert failed >= 40 and passed >= 80
