"""The shallow scripted baseline (`ecomrlve.testing.baseline`, issue 29 item 3): it plays the
env through its ordinary API, never asks, never retries, and its verdict is the env's."""

from __future__ import annotations

import pytest

from ecomrlve.env import format_call, verify
from ecomrlve.generators import generate_task
from ecomrlve.testing import env_tasks as fx
from ecomrlve.testing.baseline import _spelled, play_baseline
from ecomrlve.testing.fuzzer import gen_context


@pytest.fixture(scope="module")
def ctx():
    return gen_context()


def test_the_baseline_solves_a_spelled_out_purchase(ctx):
    task = fx.purchase_task(ctx.catalog)
    result = play_baseline(task, ctx.catalog)
    assert result.verdict.success, result.verdict.violations
    assert result.reasoning_operations == 0
    # its verdict is what the verifier gives its own turns
    turns = [format_call(c.name, c.arguments) for c in result.calls] + [result.answer]
    assert verify(task, turns, ctx.catalog).to_json() == result.verdict.to_json()


@pytest.mark.parametrize(
    ("value", "prompt", "spelled"),
    [
        ("M", "two tees in size m, please.", True),
        ("M", "i'm between meetings; a jacket in my usual size.", False),  # not in "i'm"
        ("S", "it's my usual size, as always.", False),
        ("red", "the one i ordered last time.", False),
        ("red", "a red scarf.", True),
        ("Holland & Co", "boots from holland & co in size 7.5.", True),
        ("7.5", "boots in size 7.5.", True),
        ("7.5", "boots in size 17.5.", False),
    ],
)
def test_a_filter_is_spelled_only_by_words_of_its_own(value, prompt, spelled):
    """The baseline keeps a search filter the prompt spells as words of their own: a size "M"
    in "I'm", or a colour inside another word, is no spelling of it."""
    assert _spelled(value, prompt) is spelled


def test_the_baseline_does_not_retry_a_transient_failure(ctx):
    task = fx.event_task(ctx.catalog)
    result = play_baseline(task, ctx.catalog)
    assert not result.verdict.success
    assert [c.name for c in result.calls].count("checkout") == 0  # the one checkout failed
    assert result.reasoning_operations >= 1


def test_the_baseline_never_asks_and_is_deterministic(ctx):
    asked = 0
    for scenario in ("product_discovery", "bundle", "return", "cancel"):
        for index in range(3):
            task = generate_task(ctx, scenario, 21, 8, index)
            asked += any(c.name == "ask_user" for c in task.reference)
            first, again = play_baseline(task, ctx.catalog), play_baseline(task, ctx.catalog)
            assert "ask_user" not in [c.name for c in first.calls]
            assert first.verdict.to_json() == again.verdict.to_json()
            assert first.answer == again.answer
            if any(c.name == "ask_user" for c in task.reference):
                assert first.reasoning_operations >= 1
    assert asked, "no task of the sample asks the customer"


def test_the_baseline_says_nothing_of_an_order_it_took_another_for(ctx):
    """At d10 every cancel names an order bought twice (the later twin is listed first, the
    baseline takes it) and the order meant ships before the agent acts: the baseline must not
    tell that shipping, which it never looked at, while the reference does."""
    shipped = 0
    for index in range(6):
        task = generate_task(ctx, "cancel", 21, 10, index)
        told = [e.say for e in task.events if e.kind == "order_shipped" and e.say]
        if not told:
            continue
        shipped += 1
        result = play_baseline(task, ctx.catalog)
        assert not result.verdict.success, task.task_id
        assert not any(say in result.answer for say in told), result.answer
    assert shipped, "no d10 cancel of the sample ships its order"
