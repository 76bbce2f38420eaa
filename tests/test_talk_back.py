"""A customer who talks back (issue 44, items 2-4): a request only the customer can settle (a
twin order whose day is held back), a change of mind on the quantity, a price rise past the
budget the customer turns down, and a stated budget that makes more price changes need the
customer. Each: the reference passes, the trajectory that tries to get paid without doing it
fails, and a correct one phrased differently passes."""

from __future__ import annotations

import functools

import pytest

from ecomrlve.env import EcomEnv, format_call, reference_turns, verify
from ecomrlve.env.episode.reference import final_answer
from ecomrlve.env.episode.user import DECLINE_RISE, SimulatedUser
from ecomrlve.generators import generate_task
from ecomrlve.generators.blocks import spoken_day
from ecomrlve.generators.events import STATED_BUDGETS, over_budget_prob
from ecomrlve.generators.generate import task_row
from ecomrlve.generators.registry import scenario_names
from ecomrlve.generators.talk import (
    CHANGE_REPLIES,
    CLARIFY_QUESTIONS,
    HELD_BACK,
    change_prob,
    clarify_prob,
)
from ecomrlve.tasks import Task, ToolCall
from ecomrlve.testing.fuzzer import gen_context


@pytest.fixture(scope="module")
def catalog(ctx):  # the generated shop's (conftest's `ctx`), not the hand-made one
    return ctx.catalog


@functools.cache
def _sample() -> tuple[Task, ...]:
    ctx = gen_context()
    return tuple(
        t
        for s in scenario_names()
        for d in (8, 9, 10)
        for i in range(4)
        if (t := generate_task(ctx, s, 17, d, i)) is not None
    )


def first(predicate) -> Task:
    task = next((t for t in _sample() if any(predicate(e) for e in t.events)), None)
    if task is None:
        pytest.skip("no such task in the sample")
    return task


def turns(calls: list[ToolCall], answer: str) -> list[str]:
    return [*(format_call(c.name, c.arguments) for c in calls), answer]


def play(task: Task, catalog, calls: list[ToolCall], answer: str | None = None):
    return verify(task, turns(calls, final_answer(task) if answer is None else answer), catalog)


def ask(question: str) -> ToolCall:
    return ToolCall(name="ask_user", arguments={"question": question})


# ---- knobs ---------------------------------------------------------------------------------------
def test_the_talk_back_knobs_start_late_and_never_fall():
    for knob, start in ((clarify_prob, 8), (change_prob, 9), (over_budget_prob, 0)):
        values = [knob(d) for d in range(11)]
        assert values == sorted(values) and all(0.0 <= v <= 1.0 for v in values), knob
        assert all(v == 0.0 for v in values[:start]) and values[10] > 0.5, knob
    assert over_budget_prob(10) == 1.0 and over_budget_prob(8) == 0.5


def test_every_trick_has_several_wordings():
    for forms in (HELD_BACK, CLARIFY_QUESTIONS, CHANGE_REPLIES, DECLINE_RISE, STATED_BUDGETS):
        assert len(set(forms)) >= 6


# ---- a request only the customer can settle ------------------------------------------------------
def _clarify(task: Task):
    event = next(e for e in task.events if e.kind == "clarify")
    return event, task.reference[event.after_calls]


def test_a_twin_order_is_named_without_its_day_and_the_reference_asks(catalog):
    task = first(lambda e: e.kind == "clarify")
    event, question = _clarify(task)
    orders = {o["order_id"]: o for o in task.initial_state["orders"]}
    day = spoken_day(orders[event.order_id]["placed"])
    assert f"on {day}" not in task.prompt and any(h in task.prompt for h in HELD_BACK)
    assert question.name == "ask_user"
    user = SimulatedUser(task, catalog.__contains__)
    assert day in user.answer(question.arguments["question"])  # answered truthfully
    verdict = verify(task, reference_turns(task), catalog)
    assert verdict.success and verdict.tool_calls == task.min_steps, verdict.violations


def test_guessing_the_order_fails_even_when_the_guess_is_right(catalog):
    task = first(lambda e: e.kind == "clarify")
    event, _ = _clarify(task)
    guessed = [c for k, c in enumerate(task.reference) if k != event.after_calls]
    verdict = play(task, catalog, guessed)  # the right order, never asked which
    assert not verdict.success
    assert any("did not ask" in v for v in verdict.violations), verdict.violations


def test_asking_in_other_words_or_with_a_catch_all_passes(catalog):
    task = first(lambda e: e.kind == "clarify")
    event, _ = _clarify(task)
    for question in (
        "You have two orders that look the same; which purchase is it, and when was it placed?",
        "Is there anything else I should know before I look into it?",
    ):
        calls = list(task.reference)
        calls[event.after_calls] = ask(question)
        verdict = play(task, catalog, calls)
        assert verdict.success, (question, verdict.violations)


def test_asking_only_after_acting_on_the_order_fails(catalog):
    writes = ("cancel_order", "return_item", "exchange_item")
    task = next(
        (t for t in _sample()
         if any(e.kind == "clarify" for e in t.events)
         and any(c.name in writes for c in t.reference)),
        None,
    )  # fmt: skip
    if task is None:
        pytest.skip("no clarify task with a write in the sample")
    event, question = _clarify(task)
    calls = [c for k, c in enumerate(task.reference) if k != event.after_calls]
    write = next(k for k, c in enumerate(calls) if c.name in writes)
    calls.insert(write + 1, question)
    verdict = play(task, catalog, calls)
    assert not verdict.success and any("did not ask" in v for v in verdict.violations)


# ---- a change of mind ----------------------------------------------------------------------------
def _mind(task: Task) -> tuple[int, int]:
    """(index of the question the customer changes their mind at, of the set_quantity)."""
    k = next(k for k, c in enumerate(task.reference) if c.name == "set_quantity")
    return k - 1, k


def test_the_customer_changes_their_mind_when_asked_and_the_reference_follows(catalog):
    task = first(lambda e: e.kind == "change_of_mind")
    event = next(e for e in task.events if e.kind == "change_of_mind")
    q, k = _mind(task)
    assert task.reference[q].name == "ask_user"
    assert task.reference[k].arguments == {"item_id": event.item_id, "quantity": event.quantity}
    user = SimulatedUser(task, catalog.__contains__)
    reply = user.answer(task.reference[q].arguments["question"])
    assert reply == event.reply and user.confirmed == 1
    assert {"two": 2, "three": 3}[next(w for w in ("two", "three") if w in reply)] == event.quantity
    slot = next(s for s in task.goal.purchase.slots if event.item_id in s.acceptable)
    assert slot.quantity == event.quantity  # the goal records the final wish
    verdict = verify(task, reference_turns(task), catalog)
    assert verdict.success, verdict.violations


def test_executing_the_first_wish_fails(catalog):
    task = first(lambda e: e.kind == "change_of_mind")
    q, k = _mind(task)
    first_wish = [c for j, c in enumerate(task.reference) if j != k]  # asked, then ignored it
    assert not play(task, catalog, first_wish).success
    never_asked = [c for j, c in enumerate(task.reference) if j not in (q, k)]
    assert not play(task, catalog, never_asked).success


def test_the_change_heard_through_another_confirmation_passes(catalog):
    task = first(lambda e: e.kind == "change_of_mind")
    q, _ = _mind(task)
    calls = list(task.reference)
    calls[q] = ask("Is it okay if I check out now?")
    verdict = play(task, catalog, calls)
    assert verdict.success, verdict.violations


# ---- a price rise past the budget the customer turns down ----------------------------------------
def _declined(task: Task):
    event = next(e for e in task.events if e.declined)
    q = next(
        k
        for k, c in enumerate(task.reference)
        if c.name == "ask_user" and f"{event.price:.2f}" in c.arguments["question"]
    )
    return event, q


def test_a_turned_down_rise_is_not_bought_and_is_told(catalog):
    task = first(lambda e: e.declined)
    _event, q = _declined(task)
    user = SimulatedUser(task, catalog.__contains__)
    assert user.answer(task.reference[q].arguments["question"]) in DECLINE_RISE
    assert user.confirmed == 0 and "checkout" not in [c.name for c in task.reference]
    verdict = verify(task, reference_turns(task), catalog)
    assert verdict.success and verdict.tool_calls == task.min_steps, verdict.violations


def test_buying_after_the_no_or_without_asking_fails(catalog):
    task = first(lambda e: e.declined)
    _event, q = _declined(task)
    checkout = ToolCall(name="checkout")
    anyway = [*task.reference, checkout]
    verdict = play(task, catalog, anyway)
    assert not verdict.success and any("turned down" in v for v in verdict.violations)
    unasked = [c for k, c in enumerate(task.reference) if k != q] + [checkout]
    assert not play(task, catalog, unasked).success


def test_the_no_to_another_wording_and_told_in_other_words_passes(catalog):
    task = first(lambda e: e.declined)
    event, q = _declined(task)
    title = task.goal.product_names.get(event.item_id, "item")
    calls = list(task.reference)
    calls[q] = ask(f"Heads-up: it's now ${event.price:.2f}, above your budget. What should I do?")
    told = final_answer(task).replace(event.say, "")
    told += (
        f" The {title} went from ${event.old_price:.2f} to ${event.price:.2f}, more than your "
        "budget allows, so I haven't placed the order."
    )
    verdict = play(task, catalog, calls, told)
    assert verdict.success, verdict.violations
    silent = final_answer(task).replace(event.say, "")  # not told: the customer never hears
    assert not play(task, catalog, list(task.reference), silent).success


def test_a_stated_budget_makes_more_price_rises_need_the_customer():
    over = [t for t in _sample() if any(e.over_budget for e in t.events)]
    stated = [t for t in over if any(s.split("{b}")[0] in t.prompt for s in STATED_BUDGETS)]
    assert stated, "no stated budget in the sample"
    for task in stated:
        assert task.goal.purchase.budget is not None
        assert task.goal.user_facts["budget"] == f"${task.goal.purchase.budget:.0f}"
        assert task.goal.user_facts["budget"] in task.prompt


# ---- determinism ---------------------------------------------------------------------------------
def test_same_seed_same_bytes_for_the_talk_back_kinds(ctx):
    kinds = ("clarify", "change_of_mind")
    picked = [t for t in _sample() if any(e.kind in kinds or e.declined for e in t.events)][:6]
    assert picked
    for task in picked:
        again = generate_task(ctx, task.scenario, 17, task.difficulty, task.index)
        assert task_row(again) == task_row(task)


def test_the_env_records_when_a_fact_was_told(catalog):
    task = first(lambda e: e.kind == "clarify")
    event, _question = _clarify(task)
    env = EcomEnv(task, catalog)
    env.reset()
    for turn in reference_turns(task):
        env.step(turn)
    assert env.record.told[event.fact] == event.after_calls


# ---- "leave that one out": a no to one product of several ------------------------------------
@functools.cache
def _drop_task() -> Task | None:
    ctx = gen_context()
    for i in range(40):
        for s in ("cart", "bundle", "journey", "product_discovery", "order_status", "cancel"):
            for d in (8, 9, 10):
                task = generate_task(ctx, s, 17, d, i)
                if task is not None and any(e.drop for e in task.events):
                    return task
    return None


def test_a_product_left_out_at_the_customers_word_and_the_rest_bought(catalog):
    task = _drop_task()
    if task is None:
        pytest.skip("no drop in the sample")
    event = next(e for e in task.events if e.drop)
    q = next(
        k
        for k, c in enumerate(task.reference)
        if c.name == "ask_user" and f"{event.price:.2f}" in c.arguments["question"]
    )
    user = SimulatedUser(task, catalog.__contains__)
    assert user.answer(task.reference[q].arguments["question"]) == event.reply
    assert task.goal.product_names and "checkout" in [c.name for c in task.reference]
    assert verify(task, reference_turns(task), catalog).success
    remove = next(
        k
        for k, c in enumerate(task.reference)
        if c.name == "remove_from_cart" and c.arguments["item_id"] == event.item_id
    )
    everything = [c for k, c in enumerate(task.reference) if k != remove]
    assert not play(task, catalog, everything).success  # bought it anyway
    nothing = [c for c in task.reference if c.name != "checkout"]
    assert not play(task, catalog, nothing).success  # the rest was wanted
    title = task.goal.product_names.get(event.item_id, "item")
    told = final_answer(task).replace(event.say, "") + (
        f" The {title} went up to ${event.price:.2f} (it was ${event.old_price:.2f}), more than "
        "your budget, so I removed it from your cart before checking out."
    )
    assert play(task, catalog, list(task.reference), told).success


def test_the_reference_acts_on_a_no_only_after_hearing_it():
    """The question about a rise past the budget comes right after the cart is viewed, and
    what the no changes (no checkout; the product left out) comes after the question."""
    for task in [t for t in _sample() if any(e.declined for e in t.events)]:
        event = next(e for e in task.events if e.declined)
        names = [c.name for c in task.reference]
        q = next(
            k
            for k, c in enumerate(task.reference)
            if c.name == "ask_user" and f"{event.price:.2f}" in c.arguments["question"]
        )
        assert names[q - 1] == "view_cart", task.task_id
        if event.drop:
            assert task.reference[q + 1].name == "remove_from_cart", task.task_id
        else:
            assert "checkout" not in names[q:], task.task_id
