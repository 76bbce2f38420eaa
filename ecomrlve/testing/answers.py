"""The reward tests' answer checks: hand-written answers against hand-made facts, and a
generated task's reference answer with one sentence reworded.

    from ecomrlve.testing import answers

    CASES = answers.cases("a fee told with the rule", answers.SHIPPING_FEE, answers.ASK_35,
                          passes=[...], fails=[...])

    @pytest.mark.parametrize("case", CASES, ids=str)
    def test_hand_written_answers(case: answers.Case):
        case.check()

    passed, failed = answers.judge_rewordings(task, fact.say, catalog, passes=[...], fails=[...])
    passed, failed = answers.judge_all_rewordings(rewordings, catalog)  # of answers.Rewording
    answers.judge_claims(task, catalog, lies=[...], truths=[...])  # the claims rules alone
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ecomrlve.env import Catalog, reference_turns, verify
from ecomrlve.env.judge.facts import Shown, check_answer
from ecomrlve.generators import GenContext
from ecomrlve.tasks import AnswerFact, Task
from ecomrlve.testing.fuzzer import generated_tasks

# a $4.99 fee for a $35 order under the $50 free-shipping threshold, and the question it answers
SHIPPING_FEE = [
    AnswerFact(kind="money", value="4.99", allowed=["35.00", "50.00"],
               allowed_roles=["order", "threshold"], role="shipping"),
]  # fmt: skip
ASK_35 = "How much is standard shipping on a $35 order for me?"


@dataclass(frozen=True)
class Case:
    """A hand-written answer that must pass (`ok`) or fail `check_answer` against `facts`."""

    name: str  # what the case shows; with the answer, its test id
    answer: str
    facts: list[AnswerFact]
    ok: bool
    prompt: str = ""
    today: str | None = None
    shown: Shown | None = None  # what the episode showed the agent (see `check_answer`)
    conflict: str | None = None  # a part of a conflict the check must report

    def check(self) -> None:
        """Raise AssertionError (the answer and what the check found) unless it judges `ok`
        and, with `conflict`, reports a conflict that contains it."""
        checked = check_answer(
            self.answer, self.facts, self.prompt, today=self.today, shown=self.shown
        )
        if checked.ok is not self.ok:
            raise AssertionError((self.answer, checked))
        if self.conflict is not None and not any(self.conflict in c for c in checked.conflicts):
            raise AssertionError((self.answer, self.conflict, checked))

    def __str__(self) -> str:
        return f"{self.name}: {self.answer}"


def cases(
    name: str,
    facts: list[AnswerFact],
    prompt: str = "",
    *,
    passes: Sequence[str] = (),
    fails: Sequence[str] = (),
    today: str | None = None,
    shown: Shown | None = None,
    conflict: str | None = None,
) -> list[Case]:
    """The cases of one group: each of `passes` must pass, each of `fails` must fail (and,
    with `conflict`, report a conflict that contains it)."""
    return [
        Case(name, answer, facts, ok, prompt, today, shown, conflict if not ok else None)
        for answers, ok in ((passes, True), (fails, False))
        for answer in answers
    ]


def with_final(task: Task, answer: str, catalog: Catalog):
    """The verdict on `task`'s reference calls with `answer` as the final message."""
    return verify(task, [*reference_turns(task)[:-1], answer], catalog)


def claim_violations(verdict) -> list[str]:
    """The verdict's violations of the claims rules ("claims: ...")."""
    return [v for v in verdict.violations if v.startswith("claims:")]


def judge_claims(
    task: Task, catalog: Catalog, *, lies: Sequence[str] = (), truths: Sequence[str] = ()
) -> None:
    """Each of `lies` as `task`'s final message must break a claims rule, none of `truths` may.
    Raises AssertionError on the first that does not (the line, and what was found)."""
    for line in lies:
        if not claim_violations(with_final(task, line, catalog)):
            raise AssertionError(line)
    for line in truths:
        found = claim_violations(with_final(task, line, catalog))
        if found:
            raise AssertionError((line, found))


def replaced(task: Task, say: str, sentence: str) -> list[str]:
    """The task's reference turns, `say` in the final answer replaced by `sentence`."""
    turns = reference_turns(task)
    if say not in turns[-1]:
        raise AssertionError(f"{say!r} is not in {task.task_id}'s final answer")
    return [*turns[:-1], turns[-1].replace(say, sentence)]


def judge_rewordings(
    task: Task,
    say: str,
    catalog: Catalog,
    *,
    passes: Sequence[str] = (),
    fails: Sequence[str] = (),
    violation: str | None = "money",
) -> tuple[int, int]:
    """Verify the reference with `say` replaced by each sentence: every one of `passes` must
    succeed, every one of `fails` must fail, with a violation that `violation` (a regex; None:
    any) finds. Raises AssertionError on the first that does not; returns (passed, failed)."""
    for sentence in passes:
        verdict = verify(task, replaced(task, say, sentence), catalog)
        if not verdict.success:
            raise AssertionError((task.task_id, sentence, verdict.violations))
    for sentence in fails:
        verdict = verify(task, replaced(task, say, sentence), catalog)
        if verdict.success:
            raise AssertionError((task.task_id, sentence))
        if violation is not None and not any(re.search(violation, v) for v in verdict.violations):
            raise AssertionError(verdict.violations)
    return len(passes), len(fails)


@dataclass(frozen=True)
class Rewording:
    """A sentence of `task`'s reference answer (`say`) and the sentences to put in its place:
    each of `passes` must keep the verdict a success, each of `fails` must fail it."""

    task: Task
    say: str
    passes: Sequence[str] = ()
    fails: Sequence[str] = ()


def judge_all_rewordings(
    rewordings: Iterable[Rewording], catalog: Catalog, *, violation: str | None = "money"
) -> tuple[int, int]:
    """`judge_rewordings` of each; returns the (passed, failed) summed over all of them."""
    passed = failed = 0
    for r in rewordings:
        ok, not_ok = judge_rewordings(
            r.task, r.say, catalog, passes=r.passes, fails=r.fails, violation=violation
        )
        passed, failed = passed + ok, failed + not_ok
    return passed, failed


def shipping_facts(ctx: GenContext, per_difficulty: int) -> list[tuple[Task, AnswerFact]]:
    """The shipping facts (money, role "shipping", said in the answer) of policy tasks 0 to
    `per_difficulty`-1 of seed 61 at each difficulty 0-10, with their tasks."""
    return [
        (task, f)
        for task in generated_tasks(ctx, ["policy"], range(11), per_difficulty, 61)
        for f in task.goal.answer_facts
        if f.kind == "money" and f.role == "shipping" and f.say
    ]
