"""The scenario knobs that make the shallow choice right at d0-1 and wrong at d9-10 (issue 29,
item 3): each knob is monotone in `d`, and the generated tasks show its effect at both ends
(on the session's small catalog, without world events unless the test is about them)."""

from __future__ import annotations

import numpy as np
import pytest

from ecomrlve.generators import GenContext, generate_task
from ecomrlve.generators.events import acting_first_prob, failure_prob
from ecomrlve.generators.scenarios.bundle import budget_bind_prob
from ecomrlve.generators.scenarios.cart import USUAL_SIZE, usual_size_prob
from ecomrlve.generators.scenarios.journey import first_variant_prob
from ecomrlve.generators.scenarios.policy import comparison_share
from ecomrlve.generators.scenarios.substitution import price_trap_prob
from ecomrlve.tasks import Task

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
        (comparison_share, 0.0, 0.9),
        (budget_bind_prob, 0.0, 1.0),
        (price_trap_prob, 0.0, 1.0),
        (usual_size_prob, 0.0, 1.0),
        (first_variant_prob, 1.0, 0.0),
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
    usual = [t for t in _tasks(ctx, "cart", HARD) if USUAL_SIZE in t.prompt]
    assert len(usual) >= PER_CELL
    for task in usual:
        names = [c.name for c in task.reference]
        first_search = next(c for c in task.reference if c.name == "search")
        assert names.index("list_orders") < names.index("search")
        size = first_search.arguments["filters"]["size"]
        (order,) = task.initial_state["orders"]
        row = ctx.catalog.row_of(order["items"][0]["item_id"])
        assert ctx.size_col.value(row) == size  # the past order names the size


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
