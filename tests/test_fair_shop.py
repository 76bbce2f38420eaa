"""A fair, changing shop and a customer who talks back (issue 44, items 3 and 4).

Events are tied to the agent's actions (one more harmless read never moves them), hang on the
main request and always change something the agent sees; a stock-out shows where a real shop
shows it and an agent that swaps succeeds; the turn limit leaves room for care; the simulated
customer answers confirmations from the goal, with a persona per task; a shop rule may hold
writes for the customer's yes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ecomrlve.config import EnvConfig, load_config
from ecomrlve.env import EcomEnv, format_call, reference_turns, verify
from ecomrlve.env.episode.environment import system_prompt, turn_limit
from ecomrlve.env.episode.reference import final_answer
from ecomrlve.env.episode.user import PERSONAS, SimulatedUser, is_confirmation, persona_of
from ecomrlve.env.world.events import TALK_KINDS
from ecomrlve.generators import generate_task
from ecomrlve.generators.events import COMMITTING
from ecomrlve.generators.registry import scenario_names
from ecomrlve.tasks import Task, ToolCall, WorldEvent
from ecomrlve.testing import env_tasks as fx

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def catalog(ctx):  # the generated shop's (conftest's `ctx`), not the hand-made one
    return ctx.catalog


@pytest.fixture(scope="module")
def hard_tasks(ctx) -> list[Task]:
    return [
        generate_task(ctx, s, 17, d, i)
        for s in scenario_names()
        for d in (8, 9, 10)
        for i in range(2)
    ]


def turns_of(calls: list[ToolCall]) -> list[str]:
    return [format_call(c.name, c.arguments) for c in calls]


def first_with(ctx, scenario: str, predicate, difficulty: int = 9) -> Task:
    for i in range(60):
        task = generate_task(ctx, scenario, 17, difficulty, i)
        if task is not None and any(predicate(e) for e in task.events):
            return task
    raise AssertionError(f"no {scenario} task with such an event")


# ---- events tied to actions ----------------------------------------------------------------------
def test_one_more_harmless_read_anywhere_never_moves_an_event(hard_tasks, catalog):
    for task in [t for t in hard_tasks if t.events][:12]:
        answer = final_answer(task)
        for at in range(len(task.reference) + 1):
            calls = [*task.reference[:at], ToolCall(name="view_cart"), *task.reference[at:]]
            verdict = verify(task, [*turns_of(calls), answer], catalog)
            assert verdict.success, (task.task_id, at, verdict.violations)


def test_events_hang_on_the_main_request_and_change_what_the_reference_sees(hard_tasks, catalog):
    for task in hard_tasks:
        env = EcomEnv(task, catalog)
        env.reset()
        for turn in reference_turns(task):
            env.step(turn)
        for k, event in enumerate(task.events):
            assert event.kind in TALK_KINDS or event.before or event.after, event
            assert k in env.record.events_fired, (task.task_id, event)  # never a no-op
        for event in task.events:
            if event.kind == "order_shipped" and event.before == "cancel_order":
                assert env.record.state.orders[event.order_id]["status"] == "shipped"


def test_an_order_ships_at_the_cancel_not_at_a_call_count(ctx, catalog):
    task = first_with(ctx, "cancel", lambda e: e.kind == "order_shipped")
    event = next(e for e in task.events if e.kind == "order_shipped")
    assert event.before == "cancel_order"
    env = EcomEnv(task, catalog)
    env.reset()
    for _ in range(3):  # looking first changes nothing: the order ships at the cancel
        result = env.step(format_call("get_order", {"order_id": event.order_id}))
        assert '"shipped"' not in result.observation[0]["content"]
    verdict = verify(task, reference_turns(task), catalog)
    assert verdict.success, verdict.violations
    cancel = next(
        c
        for c in verdict_calls(task, catalog)
        if c.name == "cancel_order" and c.arguments["order_id"] == event.order_id
    )
    assert not cancel.ok and "shipped" in cancel.error and cancel.refused_by_event


def verdict_calls(task: Task, catalog):
    env = EcomEnv(task, catalog)
    env.reset()
    for turn in reference_turns(task):
        env.step(turn)
    return env.record.calls


# ---- stock-outs where a real shop shows them -----------------------------------------------------
def swap_at_checkout(task: Task) -> list[ToolCall]:
    """The reference as an agent that learns of the stock-out from the refused checkout plays
    it: the same calls (this is how the reference now handles it)."""
    return list(task.reference)


@pytest.mark.parametrize("where", ["after", "before"])
def test_a_stock_out_is_refused_naming_the_item_and_a_swap_succeeds(ctx, catalog, where):
    def fits(e: WorldEvent) -> bool:
        return e.kind == "out_of_stock" and bool(getattr(e, where))

    task = next(
        (t for s in ("cart", "bundle", "journey", "product_discovery") for d in (8, 9, 10)
         for i in range(40)
         if (t := generate_task(ctx, s, 17, d, i)) is not None and any(fits(e) for e in t.events)),
        None,
    )  # fmt: skip
    if task is None:
        pytest.skip(f"no stock-out {where} an add in the sample")
    event = next(e for e in task.events if fits(e))
    calls = verdict_calls(task, catalog)
    refused = [c for c in calls if not c.ok and not c.transient]
    assert refused and event.item_id in refused[0].error and "out of stock" in refused[0].error
    assert refused[0].name == ("add_to_cart" if where == "before" else "checkout")
    assert refused[0].refused_by_event  # news, not waste
    verdict = verify(task, reference_turns(task), catalog)
    assert verdict.success and not [v for v in verdict.violations if "waste" in v], verdict


def test_a_refusal_the_world_did_not_cause_is_still_waste(catalog):
    task = fx.purchase_task(catalog)
    item_id = task.reference[1].arguments["item_id"]
    event = WorldEvent(kind="out_of_stock", after_calls=0, item_id=item_id, before="search")
    task = task.model_copy(update={"events": [event]})
    env = EcomEnv(task, catalog)
    env.reset()
    env.step(format_call("search", task.reference[0].arguments))
    for _ in range(2):
        env.step(format_call("add_to_cart", {"item_id": item_id, "quantity": 1}))
    first, second = env.record.calls[1:]
    assert first.refused_by_event and not second.refused_by_event and second.wasted


# ---- the turn limit ------------------------------------------------------------------------------
def test_the_turn_limit_leaves_room_for_care_and_keeps_the_cpu_demo_at_six(hard_tasks):
    demo = load_config(ROOT / "configs" / "tiny_cpu.yaml").env
    assert demo.max_steps == 6
    short = fx.cancel_task().model_copy(update={"min_steps": 3})
    assert turn_limit(short, demo) == 6  # reference 3 + answer + a question + a confirmation
    config = EnvConfig()
    assert config.turn_slack == 2
    long = next(t for t in hard_tasks if t.events and t.min_steps >= 9)
    assert turn_limit(long, config) == long.min_steps + 1 + 2 + 1  # + a retry: the shop changes
    assert turn_limit(long, EnvConfig(turn_slack=0)) == max(10, long.min_steps + 2)
    with pytest.raises(ValueError):
        EnvConfig(turn_slack=-1)


def test_the_reference_plus_a_read_and_a_confirmation_fits_the_limit(hard_tasks, catalog):
    for task in [t for t in hard_tasks if t.difficulty >= 9]:
        ask = ToolCall(name="ask_user", arguments={"question": "Shall I go ahead?"})
        calls = [ToolCall(name="view_cart"), ask, *task.reference]
        verdict = verify(task, [*turns_of(calls), final_answer(task)], catalog)
        assert verdict.success, (task.task_id, verdict.violations)


# ---- the customer talks back ---------------------------------------------------------------------
CANCEL_WORDINGS = (
    "Shall I go ahead and cancel order {o}?",
    "Do you want me to cancel {o}?",
    "Would you like me to cancel order {o} now?",
    "Is it okay if I cancel {o}?",
    "Just to confirm: should I cancel {o}?",
    "Can I cancel order {o} for you?",
)


@pytest.mark.parametrize("wording", CANCEL_WORDINGS)
def test_confirmations_are_answered_from_the_goal(catalog, wording):
    task = fx.cancel_task(catalog)  # cancel O1001, leave O1002
    user = SimulatedUser(task, catalog.__contains__)
    assert is_confirmation(wording)
    yes = user.answer(wording.format(o="O1001"))
    no = user.answer(wording.format(o="O1002"))
    assert yes.lower().startswith(("yes", "go ahead")), yes
    assert no.lower().startswith("no"), no
    assert user.confirmed == 1
    # nothing to buy: no to placing an order; a bare "go ahead" is yes to the goal's own write
    assert user.answer("Shall I place the order?").lower().startswith("no")
    assert user.answer("Shall I go ahead?").lower().startswith(("yes", "go ahead"))
    assert user.answer("Shall I cancel O1001 or not?").lower().startswith(("yes", "go ahead"))


@pytest.mark.parametrize(
    "question",
    ["Which brand should I look for?", "How many should I add?", "What size shall I get?",
     "Should I keep the one already in your cart?", "Anything else I should know?",
     "Shall I add the black or the navy one to your cart?"],
)  # fmt: skip
def test_clarifying_questions_are_not_confirmations(question):
    assert not is_confirmation(question)


def test_a_persona_per_task_from_its_seed_changes_words_not_facts(catalog):
    base = fx.ask_user_task(catalog)
    assert persona_of(base) == "plain"  # below d3: the replies they always had
    drawn = {}
    for seed in range(40):
        task = base.model_copy(update={"difficulty": 6, "seed": seed})
        drawn[seed] = persona_of(task)
        assert persona_of(task) == drawn[seed]
        reply = SimulatedUser(task, catalog.__contains__).answer("Which brand and colour?")
        for value in (task.goal.user_facts.get("brand"), task.goal.user_facts.get("color")):
            if value:
                assert value in reply, (drawn[seed], reply)
    assert set(drawn.values()) == set(PERSONAS)


# ---- a shop rule: the customer's yes before a write ----------------------------------------------
def test_a_write_without_the_customers_yes_fails_with_a_reason(catalog):
    task = fx.cancel_task(catalog)
    task = task.model_copy(update={"events": [WorldEvent(kind="confirm_writes", after_calls=0)]})
    assert "explicit yes" in system_prompt(task) and "explicit yes" not in system_prompt(
        fx.cancel_task(catalog)
    )
    cancel = format_call("cancel_order", {"order_id": "O1001", "reason": "ordered by mistake"})
    answer = final_answer(task)
    hasty = verify(task, [format_call("list_orders", {}), cancel, answer], catalog)
    assert not hasty.success
    assert any("explicit yes" in v for v in hasty.violations), hasty.violations
    ask = format_call("ask_user", {"question": "Do you want me to cancel order O1001?"})
    careful = verify(task, [format_call("list_orders", {}), ask, cancel, answer], catalog)
    assert careful.success, careful.violations
    # asked after a refusal, the same write again is no repeat
    late = verify(task, [format_call("list_orders", {}), cancel, ask, cancel, answer], catalog)
    assert late.success and not [v for v in late.violations if "repeats" in v], late.violations


def test_hard_tasks_carry_the_rule_and_their_references_confirm(ctx, catalog):
    tasks = [
        generate_task(ctx, s, 17, 10, i) for s in ("cancel", "cart", "return") for i in range(2)
    ]
    for task in tasks:
        if not any(c.name in COMMITTING for c in task.reference):
            continue  # nothing to confirm: a purchase the customer turned down past the budget
        assert any(e.kind == "confirm_writes" for e in task.events), task.task_id
        asks = [c for c in task.reference if c.name == "ask_user"]
        assert asks and is_confirmation(asks[-1].arguments["question"])
        verdict = verify(task, reference_turns(task), catalog)
        assert verdict.success and verdict.tool_calls == task.min_steps, verdict.violations


# ---- a price rise past the budget needs the customer's yes ---------------------------------------
def test_a_price_rise_past_the_budget_is_bought_only_with_the_customers_yes(ctx, catalog):
    task = next(
        (t for s in ("bundle", "cart", "journey", "product_discovery", "substitution")
         for d in (8, 9, 10) for i in range(12)
         if (t := generate_task(ctx, s, 17, d, i)) is not None
         and any(e.over_budget for e in t.events)),
        None,
    )  # fmt: skip
    if task is None:
        pytest.skip("no rise past a budget in the sample")
    verdict = verify(task, reference_turns(task), catalog)
    assert verdict.success, verdict.violations
    asks = [
        k for k, c in enumerate(task.reference)
        if c.name == "ask_user" and "budget" in c.arguments["question"]
    ]  # fmt: skip
    assert asks
    hasty = [c for k, c in enumerate(task.reference) if k not in asks]
    verdict = verify(task, [*turns_of(hasty), final_answer(task)], catalog)
    assert not verdict.success
    assert any("exceeds the budget" in v for v in verdict.violations), verdict.violations
    # a yes to a question that never told the new price is no consent to it
    vague = ToolCall(name="ask_user", arguments={"question": "Shall I place the order?"})
    blind = [vague if k in asks else c for k, c in enumerate(task.reference)]
    assert not verify(task, [*turns_of(blind), final_answer(task)], catalog).success
