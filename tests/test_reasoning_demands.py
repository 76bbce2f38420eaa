"""Reasoning that keeps growing past d6 (issue 44, items 2 and 5): the late demands of
`generators/reasoning.py`, checked through the goal, and the ladder of scripted agents."""

from __future__ import annotations

import itertools
import re
import statistics

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ecomrlve.env import reference_turns, verify
from ecomrlve.env.judge.facts.check import Shown
from ecomrlve.env.judge.facts.kinds import KINDS
from ecomrlve.env.judge.verifier import FACTS_IN_BASE, MAX_ANSWER_CHARS, answer_limit
from ecomrlve.generators import GenContext, TaskKey, generate_task
from ecomrlve.generators.difficulty import MAX_DIFFICULTY, MIN_DIFFICULTY
from ecomrlve.generators.generate import config_of
from ecomrlve.generators.reasoning import (
    BRANCH_SENTENCES,
    CHAINED_SENTENCES,
    LATE_FROM,
    LATE_KINDS,
    LATE_START,
    NET_REFUND_SENTENCES,
    NET_VOUCHER_SENTENCES,
    TOTAL_SENTENCES,
    TWINS_SENTENCES,
    VOUCHERS,
    late_demands,
    late_fact,
    late_facts,
    reasoning_features,
    returned_before,
)
from ecomrlve.generators.registry import get_scenario, scenario_names
from ecomrlve.tasks import Task
from ecomrlve.testing.baseline import LADDER, play_baseline, play_rung

difficulties = st.integers(min_value=MIN_DIFFICULTY, max_value=MAX_DIFFICULTY)


@pytest.fixture(scope="module")
def ctx(small_catalog_dir) -> GenContext:
    return GenContext.load(small_catalog_dir)


@given(low=difficulties, high=difficulties)
def test_late_demands_only_grow_with_difficulty(low, high):
    low, high = min(low, high), max(low, high)
    assert late_demands(high)[: len(late_demands(low))] == late_demands(low)
    assert (late_demands(low) == ()) is (low < LATE_FROM)


@pytest.mark.parametrize("scenario", scenario_names())
def test_reasoning_features_rise_from_d6_to_d8_to_d10(scenario):
    generator = get_scenario(scenario)

    def mean_features(d: int) -> float:
        config = config_of(scenario, d)
        keys = [TaskKey(scenario, 3, d, i) for i in range(40)]
        plans = [generator.plan_task(config, k.rng(), k) for k in keys]
        return statistics.fmean(len(reasoning_features(p)) for p in plans)

    d6, d8, d10 = mean_features(6), mean_features(8), mean_features(10)
    assert d6 < d8 < d10, (d6, d8, d10)


def _answer_without(task: Task, says: list[str]) -> list[str]:
    turns = reference_turns(task)
    answer = turns[-1]
    for say in says:
        answer = answer.replace(say, "")
    return [*turns[:-1], answer]


@pytest.mark.parametrize("scenario", scenario_names())
def test_the_reference_meets_the_demands_and_ignoring_them_fails(ctx, scenario):
    for d, index in ((8, 0), (10, 1)):
        task = generate_task(ctx, scenario, 17, d, index, events_from=11)
        assert task is not None
        assert verify(task, reference_turns(task), ctx.catalog).success
        facts = late_facts(task)
        assert [f.kind for f in facts] == ["money"] * len(late_demands(d))
        chained = facts[0]
        assert chained.role == "price" and chained.subject in task.goal.relevant_ids
        assert {"order_id": chained.subject} in [c.arguments for c in task.reference]
        # the late look-ups are add-ons: the core steps are the main request's
        assert task.core_steps < task.min_steps
        for fact in facts:
            verdict = verify(task, _answer_without(task, [fact.say]), ctx.catalog)
            assert not verdict.success
            assert any("does not state money" in v for v in verdict.violations)


def test_another_orders_price_fails_the_chained_look_up(ctx):
    task = generate_task(ctx, "bundle", 17, 8, 2, events_from=11)
    chained = late_facts(task)[0]
    other = next(
        o
        for o in task.initial_state["orders"]
        if o["order_id"] != chained.subject and o["items"][0]["price"] != float(chained.value)
    )
    wrong = f"{other['items'][0]['price']:.2f}"
    turns = reference_turns(task)
    turns[-1] = turns[-1].replace(chained.say, chained.say.replace(chained.value, wrong))
    assert wrong in turns[-1]
    assert not verify(task, turns, ctx.catalog).success


def _template_parts(template: str) -> list[str]:
    return [p.strip(" ,.?—:").lower() for p in re.split(r"\{[a-z]+\}", template) if len(p) > 12]


def test_each_demand_is_worded_several_ways(ctx):
    tasks = [generate_task(ctx, "cancel", 5, 10, i, events_from=11) for i in range(24)]
    prompts = [t.prompt.lower() for t in tasks if t is not None]
    net = NET_REFUND_SENTENCES + NET_VOUCHER_SENTENCES
    for templates in (CHAINED_SENTENCES, TOTAL_SENTENCES, TWINS_SENTENCES, BRANCH_SENTENCES, net):
        used = {
            k
            for k, template in enumerate(templates)
            for prompt in prompts
            if any(part in prompt for part in _template_parts(template))
        }
        assert len(used) >= 3, used


def test_demands_start_in_order_and_each_difficulty_past_d6_adds_one():
    assert [LATE_START[k] for k in LATE_KINDS] == sorted(LATE_START.values())
    counts = [len(late_demands(d)) for d in range(LATE_FROM - 1, MAX_DIFFICULTY + 1)]
    assert counts[0] == 0 and all(b > a for a, b in itertools.pairwise(counts)), counts


def _price_said(task: Task, fact, price: float) -> list[str]:
    """The reference turns with `fact`'s sentence saying `price` and nothing else of it."""
    turns = reference_turns(task)
    subject = fact.subject or "the order"
    turns[-1] = turns[-1].replace(fact.say, f"For {subject} you paid ${price:.2f}.")
    return turns


def _order(task: Task, order_id: str) -> dict:
    return next(o for o in task.initial_state["orders"] if o["order_id"] == order_id)


def test_the_twin_is_told_apart_by_two_attributes_and_a_near_twins_price_fails(ctx):
    for scenario, index in (("order_status", 0), ("bundle", 1), ("policy", 2)):
        task = generate_task(ctx, scenario, 19, 8, index, events_from=11)
        fact = late_fact(task, "twins")
        target = _order(task, fact.subject)["items"][0]
        mine = ctx.product(ctx.catalog.row_of(target["item_id"]))
        rows = {int(r) for r in ctx.family_rows(ctx.catalog.row_of(target["item_id"]))}
        twins = [
            line
            for o in task.initial_state["orders"]
            for line in o["items"]
            if ctx.catalog.row_of(line["item_id"]) in rows and o["order_id"] != fact.subject
        ]
        assert len(twins) == 2
        shared = []
        for line in twins:
            other = ctx.product(ctx.catalog.row_of(line["item_id"]))
            same = (other["color"] == mine["color"], other["size"] == mine["size"])
            assert sum(same) == 1  # one attribute in common: only both tell them apart
            shared.append(same)
            assert line["price"] != target["price"]
            turns = _price_said(task, fact, line["price"])
            assert not verify(task, turns, ctx.catalog).success
        assert sorted(shared) == [(False, True), (True, False)]
        assert f"{mine['color']} {ctx.noun(ctx.catalog.row_of(target['item_id']))}" in task.prompt


def test_the_conditional_takes_the_branch_the_world_decided(ctx):
    branches = set()
    for index in range(8):
        task = generate_task(ctx, "cart", 29, 9, index, events_from=11)
        fact = late_fact(task, "branch")
        line = _order(task, fact.subject)["items"][0]
        turned = returned_before(task, fact.subject)
        branches.add(turned)
        assert verify(task, reference_turns(task), ctx.catalog).success
        if turned:  # the refund asked for; the price paid (the other branch) is no answer
            refund = next(r["refund"] for r in task.initial_state["returns"])
            assert fact.value == f"{refund:.2f}" != f"{line['price']:.2f}"
            assert not verify(task, _price_said(task, fact, line["price"]), ctx.catalog).success
        else:
            assert fact.value == f"{line['price']:.2f}"
    assert branches == {True, False}


def test_the_net_cost_takes_the_refund_or_the_gift_card_off(ctx):
    kinds = set()
    for index in range(8):
        task = generate_task(ctx, "return", 31, 10, index, events_from=11)
        fact = late_fact(task, "net")
        order_id = re.search(r"\bO\d{7}\b", fact.say)[0]
        order = _order(task, order_id)
        refunds = [r["refund"] for r in task.initial_state["returns"] if r["order_id"] == order_id]
        if refunds:
            kinds.add("refund")
            assert fact.value == f"{order['total'] - refunds[0]:.2f}"
            gross = order["total"]
        else:
            kinds.add("voucher")
            gross = order["items"][0]["price"]
            voucher = round(gross - float(fact.value), 2)
            assert voucher in VOUCHERS and f"${voucher:g} " in task.prompt
        # the figure before the arithmetic is no answer
        turns = reference_turns(task)
        turns[-1] = turns[-1].replace(fact.say, f"It comes to ${gross:.2f}.")
        assert not verify(task, turns, ctx.catalog).success
    assert kinds == {"refund", "voucher"}


def test_the_tasks_up_to_d6_draw_no_demand():
    for scenario in scenario_names():
        key = TaskKey(scenario, 1, 6, 0)
        plan = get_scenario(scenario).plan_task(config_of(scenario, 6), key.rng(), key)
        assert "late" not in plan.choices


def test_a_sum_of_order_totals_shown_is_grounded():
    shown = Shown([{"orders": [{"total": 10.0}, {"total": 5.5}, {"total": 1.25}]}])
    money = KINDS["money"]
    assert shown.derives(money, 15.5, "") and shown.derives(money, 16.75, "")
    assert shown.derives(money, 20.0, "")  # two orders of the same total
    assert not shown.derives(money, 100.0, "")


def test_the_ladder_climbs_to_the_reference(ctx):
    """Each rung's skills replace a shallow option: at d10 the shallow agent fails where the
    rung with every skill solves; a rung never solves fewer tasks than the one below it over
    the sample."""
    wins = [0] * len(LADDER)
    for scenario in ("cart", "return", "policy"):
        for index in range(3):
            task = generate_task(ctx, scenario, 23, 10, index)
            assert not play_baseline(task, ctx.catalog).verdict.success
            for k, (_, skills) in enumerate(LADDER):
                wins[k] += play_rung(task, ctx.catalog, skills).verdict.success
    assert wins[-1] == 9
    assert wins == sorted(wins)


def test_unknown_skills_are_refused(ctx):
    task = generate_task(ctx, "cart", 23, 1, 0)
    with pytest.raises(ValueError, match="unknown skills"):
        play_rung(task, ctx.catalog, frozenset({"telepathy"}))


def test_a_d10_answer_said_at_length_passes_and_a_longer_dump_still_fails(ctx):
    """A d10 task asks up to ~9 facts: its reference answer alone nears the flat 1,500
    characters, so a fuller wording of the same answer must not fail on length alone; past the
    task's own limit an answer still fails before it is read."""
    task = generate_task(ctx, "order_status", 17, 10, 1, events_from=11)
    *calls, answer = reference_turns(task)
    facts = len(task.goal.answer_facts)
    assert facts > FACTS_IN_BASE
    courtesy = " Thank you for your patience while I went through each of these with you."
    chatty = answer
    while len(chatty) <= MAX_ANSWER_CHARS:
        chatty += courtesy
    assert len(chatty) <= answer_limit(facts)
    assert verify(task, [*calls, chatty], ctx.catalog).success
    while len(chatty) <= answer_limit(facts):
        chatty += courtesy
    verdict = verify(task, [*calls, chatty], ctx.catalog)
    assert not verdict.success
    assert f"goal: the final answer is longer than {answer_limit(facts)} characters" in (
        verdict.violations
    )


def test_a_hedged_date_of_a_named_order_fails_and_the_date_said_plainly_passes(ctx):
    """From d7 the answer names a past order's date beside the chained look-up's price ("For
    your purchase of August 25 (order O1)"). No fact checks that date, so hedging it with today
    ("August 25 or today") was paid: a value said about order A must be true of A, and a hedge
    commits to none. The same date in other words still passes."""
    task = generate_task(ctx, "bundle", 17, 8, 0, events_from=11)
    *calls, answer = reference_turns(task)
    sentence = next(s for s in re.split(r"(?<=[.!?])\s+", answer) if "purchase of" in s)
    said = re.search(r"purchase of (\w+) (\d{1,2})\b", sentence)
    month, day = said.group(1), int(said.group(2))
    plain = f"{month} {day}"
    assert verify(task, [*calls, answer], ctx.catalog).success
    suffix = {1: "st", 2: "nd", 3: "rd", 21: "st", 22: "nd", 23: "rd", 31: "st"}.get(day, "th")
    for other_words in (f"the {day}{suffix} of {month}", f"{month[:3]} {day}"):
        assert verify(task, [*calls, answer.replace(plain, other_words, 1)], ctx.catalog).success
    for hedge in (
        f"{plain} or today",
        f"either today or {plain}",
        f"{plain}, or possibly yesterday",
        f"{plain} (or maybe {month} {day % 28 + 1})",
    ):
        verdict = verify(task, [*calls, answer.replace(plain, hedge, 1)], ctx.catalog)
        assert not verdict.success, hedge
        assert any("hedged about order" in v for v in verdict.violations), hedge
