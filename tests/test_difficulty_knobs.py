"""The scenario knobs that make the shallow choice right at d0-1 and wrong at d9-10 (issue 29,
item 3): each knob is monotone in `d`, and the generated tasks show its effect at both ends
(on the session's small catalog, without world events unless the test is about them)."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pytest

from ecomrlve.env import reference_turns, verify
from ecomrlve.generators import GenContext, generate_task
from ecomrlve.generators.base import GenerationError, TaskKey
from ecomrlve.generators.events import acting_first_prob, failure_prob
from ecomrlve.generators.generate import config_of
from ecomrlve.generators.phrasing import spoken_date
from ecomrlve.generators.registry import get_scenario
from ecomrlve.generators.scenarios.cart import USUAL_SIZE
from ecomrlve.generators.scenarios.product_discovery import DEADLINE_PHRASES
from ecomrlve.generators.strata import cell_position
from ecomrlve.tasks import Task
from ecomrlve.testing.baseline import play_baseline

EASY, HARD = (0, 1), (9, 10)
PER_CELL = 6


@pytest.fixture(scope="module")
def ctx(small_catalog_dir) -> GenContext:
    return GenContext.load(small_catalog_dir)


def _tasks(ctx: GenContext, scenario: str, difficulties: tuple[int, ...]) -> list[Task]:
    tasks = [
        generate_task(ctx, scenario, 13, d, i, events_from=11)
        for d in difficulties
        for i in range(PER_CELL)
    ]
    assert all(t is not None for t in tasks)
    return tasks


@pytest.mark.parametrize(
    ("knob", "easy", "hard"),
    [
        (lambda d: config_of("policy", d).comparison_share, 0.0, 0.9),
        (lambda d: config_of("bundle", d).budget_bind_prob, 0.0, 1.0),
        (lambda d: config_of("substitution", d).price_trap_prob, 0.0, 1.0),
        (lambda d: config_of("cart", d).usual_size_prob, 0.0, 1.0),
        *(
            (lambda d, s=scenario: config_of(s, d).twin_order_share, 0.0, 1.0)
            for scenario in ("order_status", "cancel", "return", "journey")
        ),
        (lambda d: config_of("product_discovery", d).deadline_share, 0.0, 1.0),
    ],
)
def test_knobs_are_monotone_from_the_shallow_choice_right_to_wrong(knob, easy, hard):
    values = [knob(d) for d in range(11)]
    step = np.diff(values)
    assert (step >= 0).all() or (step <= 0).all(), values
    assert [knob(d) for d in EASY] == [easy, easy]
    assert [knob(d) for d in HARD] == [hard, hard]


def test_event_knobs_grow_from_d8():
    assert [failure_prob(d) for d in (7, 8, 9, 10)] == [0.5, 0.5, 0.75, 1.0]
    assert [acting_first_prob(d) for d in (7, 8, 9, 10)] == [0.0, 0.0, 0.5, 1.0]


def test_policy_answers_are_plain_look_ups_at_d0_1(ctx):
    for task in _tasks(ctx, "policy", EASY):
        for fact in task.goal.answer_facts:
            assert not fact.value.endswith(":no"), (task.task_id, fact)
            if fact.kind == "money":
                assert fact.value != "0.00", (task.task_id, fact)


def test_policy_answers_turn_on_comparisons_at_d9_10(ctx):
    turning = 0
    for task in _tasks(ctx, "policy", HARD):
        facts = task.goal.answer_facts
        turning += any(
            f.value.endswith(":no") or (f.kind == "money" and f.value == "0.00") for f in facts
        )
    assert turning >= 0.7 * 2 * PER_CELL


def _bundle_totals(ctx: GenContext, task: Task) -> tuple[float, float]:
    """(the first acceptable hits' total, the reference basket's subtotal)."""
    slots = task.goal.purchase.slots
    searches = [c for c in task.reference if c.name == "search"]
    adds = [c for c in task.reference if c.name == "add_to_cart"]
    first_total = 0.0
    for search, slot in zip(searches, slots, strict=True):
        args = search.arguments
        rows = ctx.search_rows(args["query"], args["filters"], args["top_k"])
        first = next(r for r in rows if ctx.item_ids[r] in set(slot.acceptable))
        first_total += float(ctx.price[first])
    subtotal = sum(float(ctx.price[ctx.catalog.row_of(a.arguments["item_id"])]) for a in adds)
    return first_total, subtotal


def test_bundle_budget_binds_only_as_difficulty_grows(ctx):
    for task in _tasks(ctx, "bundle", EASY):
        first_total, subtotal = _bundle_totals(ctx, task)
        assert first_total <= task.goal.purchase.budget, task.task_id
    for task in _tasks(ctx, "bundle", HARD):
        first_total, subtotal = _bundle_totals(ctx, task)
        assert subtotal <= task.goal.purchase.budget < first_total, task.task_id


def _unpriced_top_is_acceptable(ctx: GenContext, task: Task) -> bool:
    winner = [c for c in task.reference if c.name == "search"][-1].arguments
    filters = {k: v for k, v in winner["filters"].items() if k not in ("min_price", "max_price")}
    top = ctx.search_rows(winner["query"], filters, winner["top_k"])
    return bool(top) and ctx.item_ids[top[0]] in set(task.goal.recommend.acceptable)


def test_substitution_price_rule_bites_only_as_difficulty_grows(ctx):
    assert all(_unpriced_top_is_acceptable(ctx, t) for t in _tasks(ctx, "substitution", EASY))
    assert not any(_unpriced_top_is_acceptable(ctx, t) for t in _tasks(ctx, "substitution", HARD))


def test_cart_usual_size_is_read_from_a_past_order(ctx):
    assert not any(USUAL_SIZE in t.prompt for t in _tasks(ctx, "cart", EASY))
    usual = _tasks(ctx, "cart", HARD)  # share 1: every task has a line in the usual size
    assert all(USUAL_SIZE in t.prompt for t in usual), [t.task_id for t in usual]
    for task in usual:
        names = [c.name for c in task.reference]
        first_search = next(c for c in task.reference if c.name == "search")
        assert names.index("list_orders") < names.index("search")
        size = first_search.arguments["filters"]["size"]
        # the order "last time": the newest (from d7 older unrelated orders join the history)
        order = task.initial_state["orders"][0]
        row = ctx.catalog.row_of(order["items"][0]["item_id"])
        assert ctx.size_col.value(row) == size  # the past order names the size
        # and no other line is in that size (the request would say it)
        others = [c.arguments["filters"].get("size") for c in task.reference if c.name == "search"]
        assert size not in others[1:], (task.task_id, others)


def _exchange_is_first_listed(ctx: GenContext, task: Task) -> bool | None:
    if not task.goal.exchanges:
        return None
    (exchange,) = task.goal.exchanges
    row = ctx.catalog.row_of(exchange.item_id)
    first = next(
        int(r) for r in ctx.family_rows(row) if int(r) != row and ctx.in_stock[r]
    )  # the first other in-stock variant get_product lists
    return ctx.item_ids[first] in set(exchange.acceptable_new)


def test_journey_exchange_asks_for_the_first_listed_variant_only_at_d0_1(ctx):
    """The exchange's variant goes with journey's twin order: the first listed where the
    order has no twin (all of d0-1), another where it has (all of d9-10)."""
    easy = [_exchange_is_first_listed(ctx, t) for t in _tasks(ctx, "journey", EASY)]
    assert all(x for x in easy if x is not None)
    hard = [_exchange_is_first_listed(ctx, t) for t in _tasks(ctx, "journey", HARD)]
    hard = [x for x in hard if x is not None]
    # 0 at d9-10: another variant wherever the product has one in another colour or size
    assert sum(hard) <= len(hard) // 2


def test_transient_failures_never_hit_ask_user(ctx):
    hit = 0
    for scenario in ("bundle", "cart", "product_discovery"):
        for i in range(PER_CELL):
            task = generate_task(ctx, scenario, 13, 10, i)
            failures = [e for e in task.events if e.kind == "tool_failure"]
            assert all(e.tool != "ask_user" for e in failures), task.task_id
            hit += bool(failures)
    assert hit >= 2 * PER_CELL  # every d10 task gets one where its draw verifies


# ---- the knobs of order_status, cancel, return and product_discovery ----------------------------
# (scenario, the plan choice that marks the hard variant, the config field that sets its share)
HARD_VARIANTS = [
    ("order_status", "twin", "twin_order_share"),
    ("cancel", "twin", "twin_order_share"),
    ("return", "twin", "twin_order_share"),
    ("journey", "twin", "twin_order_share"),
    ("product_discovery", "deadline", "deadline_share"),
    ("cart", "usual_size", "usual_size_prob"),
]
VARIANT_TASKS = 16


def _variant_tasks(ctx: GenContext, scenario: str, field: str, share: float) -> list[Task]:
    """d2 tasks (little else is hard there) built with the knob's share forced to `share`,
    without world events; the same keys for either share (the first attempt that builds)."""
    generator = get_scenario(scenario)
    config = config_of(scenario, 2).model_copy(update={field: share})
    tasks = []
    for i in range(VARIANT_TASKS):
        for attempt in range(20):
            key = TaskKey(scenario, 23, 2, i, attempt)
            try:
                tasks.append(generator.generate(config, key.rng(), ctx, key))
                break
            except GenerationError:
                continue
    assert len(tasks) == VARIANT_TASKS
    return tasks


@pytest.mark.parametrize(("scenario", "choice", "field"), HARD_VARIANTS)
def test_the_hard_variant_fails_the_shallow_baseline_and_the_reference_passes(
    ctx, scenario, choice, field
):
    """The same d2 keys with the knob at 0 and at 1: the baseline passes most without it and
    none with it; the reference passes every one."""
    easy = _variant_tasks(ctx, scenario, field, 0.0)
    hard = _variant_tasks(ctx, scenario, field, 1.0)
    for task in easy + hard:
        assert verify(task, reference_turns(task), ctx.catalog).success, task.task_id
    easy_wins = [play_baseline(t, ctx.catalog).verdict.success for t in easy]
    assert sum(easy_wins) >= VARIANT_TASKS // 2, easy_wins
    # a deadline that decides nothing (no item meeting the rest arrives too late) is said as
    # the day count: such tasks carry no hard variant
    hard = [t for t in hard if scenario != "product_discovery" or _deadline_said(t)]
    assert len(hard) >= 3 * VARIANT_TASKS // 4
    hard_wins = [play_baseline(t, ctx.catalog).verdict.success for t in hard]
    assert not any(hard_wins), [t.task_id for t, won in zip(hard, hard_wins, strict=True) if won]


@pytest.mark.parametrize("scenario", ["order_status", "cancel", "return", "journey"])
def test_a_twin_order_holds_the_same_products_later_and_the_prompt_gives_the_day(ctx, scenario):
    for task in _variant_tasks(ctx, scenario, "twin_order_share", 1.0):
        orders = task.initial_state["orders"]
        relevant = set(task.goal.relevant_ids)

        def lines(order: dict) -> list[str]:
            return sorted(line["item_id"] for line in order["items"])

        meant = [o for o in orders if o["order_id"] in relevant]
        pairs = [(m, o) for m in meant for o in orders
                 if o["order_id"] not in relevant and lines(o) == lines(m)]  # fmt: skip
        assert len(pairs) == 1, task.task_id
        meant, twin = pairs[0]
        assert twin["placed"] > meant["placed"], task.task_id  # listed first
        day = dt.date.fromisoformat(meant["placed"])
        # in the request, or (a vague "my order") in the user's answer when asked which one
        said = [task.prompt, *task.goal.user_facts.values()]
        assert any(spoken_date(day) in text for text in said), (task.task_id, said)


@pytest.mark.parametrize("scenario", ["order_status", "cancel", "return", "journey"])
def test_no_twin_orders_at_d0_1(ctx, scenario):
    for task in _tasks(ctx, scenario, EASY):
        lines = [tuple(sorted(line["item_id"] for line in o["items"]))
                 for o in task.initial_state["orders"]]  # fmt: skip
        assert len(lines) == len(set(lines)), task.task_id


DEADLINE_SAID = [phrase.split("{")[0] for phrase in DEADLINE_PHRASES]  # "that arrives by "


def _deadline_said(task: Task) -> bool:
    return any(said in task.prompt for said in DEADLINE_SAID)


def test_a_deadline_is_a_day_the_agent_counts_to(ctx):
    assert not any(_deadline_said(t) for t in _tasks(ctx, "product_discovery", EASY))
    for task in _variant_tasks(ctx, "product_discovery", "deadline_share", 1.0):
        at = next(k for k, c in enumerate(task.reference) if c.name == "recommend")
        search = [c for c in task.reference[:at] if c.name == "search"][-1]  # the one recommended
        days = search.arguments["filters"]["max_ship_days"]
        if not _deadline_said(task):
            assert f"{days} day" in task.prompt, task.prompt  # the day decides nothing
            continue
        today = dt.date.fromisoformat(task.initial_state["today"])
        due = spoken_date(today + dt.timedelta(days=days))
        assert any(f"{s}{due}" in task.prompt for s in DEADLINE_SAID), (task.task_id, task.prompt)
        assert f"{days} day" not in task.prompt


# ---- which tasks of a cell are hard: spread over the indexes, not a coin each --------------------
@pytest.mark.parametrize(("scenario", "choice", "field"), HARD_VARIANTS)
def test_a_cells_hard_tasks_are_its_share_of_indexes_up_to_rounding(scenario, choice, field):
    """The plans of indexes 0..n-1 hold n * share hard variants within 2 for every n, and the
    hard indexes at d are hard at d + 1 too (the count never falls with d)."""
    generator = get_scenario(scenario)
    n = 40
    previous: set[int] = set()
    for d in range(11):
        config = config_of(scenario, d)
        share = getattr(config, field)
        hard = set()
        for i in range(n):
            key = TaskKey(scenario, 5, d, i)
            if generator.plan_task(config, key.rng(), key)[choice]:
                hard.add(i)
        for m in range(1, n + 1):
            assert abs(sum(i < m for i in hard) - m * share) <= 2, (d, m, sorted(hard))
        assert previous <= hard, (d, sorted(previous - hard))
        previous = hard
    assert len(previous) == n  # share 1 at d10


def test_cell_position_depends_on_seed_scenario_and_index_only():
    spread = sorted(cell_position(3, 2, i) for i in range(100))
    assert all(0 <= p < 1 for p in spread)
    assert max(np.diff([0.0, *spread, 1.0])) < 0.05  # evenly spread
    assert cell_position(3, 2, 7) == cell_position(3, 2, 7)
    assert cell_position(3, 2, 7) != cell_position(4, 2, 7) != cell_position(3, 1, 7)


@pytest.mark.parametrize("scenario", ["cart", "journey"])
def test_from_d6_every_cart_and_journey_task_fails_the_shallow_baseline(ctx, scenario):
    """Share 1 from d6: every task carries the hard variant (a line in the usual size; a twin
    order, and another variant than the first listed), so no task passes the baseline, while
    the reference passes each (without world events, which fail it on their own)."""
    tasks = [generate_task(ctx, scenario, 29, d, i, events_from=11)
             for d in (6, 7, 8) for i in range(8)]  # fmt: skip
    for task in tasks:
        assert verify(task, reference_turns(task), ctx.catalog).success, task.task_id
    passed = [t.task_id for t in tasks if play_baseline(t, ctx.catalog).verdict.success]
    assert not passed, passed


def test_journeys_second_order_question_comes_with_a_twin_from_d2():
    """Journey's `order_detail` follow-up names a second order, which a word match can take for
    the story's: from d2 it is placed like the twin share, so an easy task names one order."""
    generator = get_scenario("journey")
    asked = 0
    for d in range(2, 11):
        config = config_of("journey", d)
        for i in range(40):
            key = TaskKey("journey", 5, d, i)
            plan = generator.plan_task(config, key.rng(), key)
            if plan["followups"]:
                asked += 1
                assert plan["twin"], (d, i)
    assert asked >= 40  # 0.16 of a cell at d2 to 0.6 from d8
