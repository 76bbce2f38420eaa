"""Per-scenario properties of the generators, on the session's small catalog (3k products).

For each of the nine scenarios: determinism by task id, distinct tasks for distinct indexes and
seeds, every reference verified as a success by the env's verifier, step counts that grow with
difficulty, both step bands (3-5 and 6-8) reachable, the scenario's own invariants (budgets,
out-of-stock, return eligibility, cancellable statuses, acceptable sets equal to the catalog's
filter), no goal leak in the prompt, and hypothesis properties over seeds.
"""

from __future__ import annotations

import datetime as dt
import json
import re

import numpy as np
import pytest

from ecomrlve.env.shop.tools import policy_search
from ecomrlve.generators import GenContext, TaskKey, generate_task, regenerate, validate
from ecomrlve.generators.generate import config_of, task_row
from ecomrlve.generators.prompts import HIDDEN_SIGNALS
from ecomrlve.generators.reasoning import LATE_FROM, late_facts
from ecomrlve.generators.registry import get_scenario, scenario_names
from ecomrlve.generators.scenarios.bundle import BUDGET_HIDDEN
from ecomrlve.tasks import USER_FACT_KEYWORDS, Task
from ecomrlve.testing.task_keys import any_task_key

ITEM_ID = re.compile(r"\bI\d{7}\b")
ORDER_ID = re.compile(r"\bO\d{7}\b")


@pytest.fixture(scope="module")
def ctx(small_catalog_dir) -> GenContext:
    return GenContext.load(small_catalog_dir)


_TASKS: dict[tuple[str, str], tuple[Task, ...]] = {}


def tasks_of(ctx: GenContext, scenario: str) -> tuple[Task, ...]:
    """12 tasks (seed 11) at every difficulty, generated once per catalog and scenario: the
    scenario's own builds, without world events (their rewrites of the reference are
    checked in tests/test_env_events.py)."""
    key = (ctx.catalog_hash, scenario)
    if key not in _TASKS:
        tasks = []
        for d in range(11):
            for i in range(12):
                task = generate_task(ctx, scenario, 11, d, i, events_from=11)
                assert task is not None, f"{scenario} d{d} i{i} gave up"
                tasks.append(task)
        _TASKS[key] = tuple(tasks)
    return _TASKS[key]


# ---- determinism and identity ----------------------------------------------------------------
@pytest.mark.parametrize("scenario", scenario_names())
def test_same_id_same_row(ctx, scenario):
    task = generate_task(ctx, scenario, 5, 6, 3)
    again = generate_task(ctx, scenario, 5, 6, 3)
    assert task_row(task) == task_row(again)
    assert task_row(regenerate(task.task_id, ctx)) == task_row(task)


@pytest.mark.parametrize("scenario", scenario_names())
def test_distinct_indexes_and_seeds_give_distinct_tasks(ctx, scenario):
    tasks = [generate_task(ctx, scenario, seed, 4, i) for seed in (0, 1) for i in range(15)]
    assert len({t.task_id for t in tasks}) == len(tasks)
    # the content differs too (prompt + world), not only the id
    assert len({(t.prompt, json.dumps(t.initial_state, sort_keys=True)) for t in tasks}) == len(
        tasks
    )
    # reasoning-gym's Random(seed + idx) aliasing: seed 1 index 0 must not be seed 0 index 1
    a, b = generate_task(ctx, scenario, 1, 4, 0), generate_task(ctx, scenario, 0, 4, 1)
    assert a.prompt != b.prompt


# ---- validity -----------------------------------------------------------------------------------
@pytest.mark.parametrize("scenario", scenario_names())
def test_every_reference_verifies(ctx, scenario):
    for task in tasks_of(ctx, scenario):
        assert validate(task, ctx) == [], task.task_id
        assert task.min_steps == len(task.reference)


@pytest.mark.parametrize("scenario", scenario_names())
def test_no_goal_leak_and_answerable_asks(ctx, scenario):
    for task in tasks_of(ctx, scenario):
        assert not ITEM_ID.search(task.prompt), task.prompt
        assert not ORDER_ID.search(task.prompt), task.prompt
        for value in task.goal.user_facts.values():
            assert not ITEM_ID.search(value)
        assert set(task.goal.user_facts) <= set(USER_FACT_KEYWORDS)
        if task.goal.intent_switch:
            assert task.goal.intent_switch not in task.prompt
        # every ask_user question names at least one fact the simulated user holds
        for call in task.reference:
            if call.name == "ask_user":
                question = call.arguments["question"].lower()
                assert any(
                    any(word in question for word in USER_FACT_KEYWORDS[key])
                    for key in task.goal.user_facts
                ), question


# ---- difficulty and step bands ----------------------------------------------------------------
@pytest.mark.parametrize("scenario", scenario_names())
def test_step_count_grows_with_difficulty(ctx, scenario):
    """Mean reference length over 200 tasks per difficulty: non-decreasing up to sampling noise
    (0.3 steps), and clearly higher at d=10 than at d=0."""
    generator = get_scenario(scenario)
    means = []
    for d in range(11):
        config = config_of(scenario, d)
        # the plan of attempt 0 fixes min_steps (finish() checks reference length == plan.steps)
        steps = [
            generator.plan(config, TaskKey(scenario, 11, d, i).rng()).steps for i in range(200)
        ]
        means.append(float(np.mean(steps)))
    for d in range(1, 11):
        assert means[d] >= means[d - 1] - 0.3, (scenario, means)
    assert means[10] >= means[0] + 1.0, (scenario, means)
    # the tasks themselves agree with their plans
    for task in tasks_of(ctx, scenario):
        if TaskKey.parse(task.task_id).attempt == 0:
            key = TaskKey.parse(task.task_id)
            plan = generator.plan_task(config_of(scenario, task.difficulty), key.rng(), key)
            assert plan.steps == task.min_steps


@pytest.mark.parametrize("scenario", scenario_names())
@pytest.mark.parametrize("band", [(3, 5), (6, 8)])
def test_both_step_bands_reachable(ctx, scenario, band):
    d = 3 if band == (3, 5) else 10
    for i in range(5):
        task = generate_task(ctx, scenario, 2, d, i, band)
        assert task is not None
        # the band counts core steps (an add-on or a world event's handling may add calls)
        assert band[0] <= task.core_steps <= band[1] and task.core_steps <= task.min_steps
        assert validate(task, ctx) == []
        # the attempt is in the id, so the task is rebuilt without knowing the band
        assert task_row(regenerate(task.task_id, ctx)) == task_row(task)


# ---- scenario invariants ----------------------------------------------------------------------
def _rows(ctx: GenContext, ids) -> list[int]:
    return [ctx.catalog.row_of(i) for i in ids]


def _search_filters(task: Task) -> list[dict]:
    return [c.arguments["filters"] for c in task.reference if c.name == "search"]


def test_discovery_acceptable_set_is_the_catalog_filter(ctx):
    for task in tasks_of(ctx, "product_discovery"):
        spec = task.goal.recommend
        # the discovery's own calls end with `recommend` (a follow-up purchase may come after)
        rec_at = next(k for k, c in enumerate(task.reference) if c.name == "recommend")
        own = task.reference[: rec_at + 1]
        searches = [c for c in own if c.name == "search"]
        filters = searches[-1].arguments["filters"]  # the search the recommendation comes from
        rows = np.flatnonzero(ctx.catalog.filter_mask(filters))
        quantity = 1
        match = re.search(r"I need (\d+) units", task.prompt)
        if match:
            quantity = int(match.group(1))
            rows = rows[ctx.stock[rows] >= quantity]
        assert sorted(spec.acceptable) == sorted(ctx.ids(rows)), task.task_id
        for item_id in own[-1].arguments["item_ids"]:
            assert ctx.stock[ctx.catalog.row_of(item_id)] >= quantity
        # a relaxation means the first choice really is unavailable
        if len(searches) == 2:
            assert not ctx.catalog.filter_mask(searches[0].arguments["filters"]).any()


def test_substitution_wanted_item_is_out_of_stock_and_rules_hold(ctx):
    without_type = 0
    for task in tasks_of(ctx, "substitution"):
        lookup = next(c for c in task.reference if c.name in ("get_product", "search"))
        if lookup.name == "get_product":
            wanted = ctx.catalog.row_of(lookup.arguments["item_id"])
        else:
            wanted = ctx.catalog.search_rows(
                lookup.arguments["query"], lookup.arguments["filters"], lookup.arguments["top_k"]
            )[0]
        assert ctx.stock[wanted] == 0 and not ctx.in_stock[wanted]
        brand_searches = [c.arguments["filters"] for c in task.reference if c.name == "search"]
        brand_searches = [f for f in brand_searches if "min_price" in f]
        for empty in brand_searches[:-1]:
            assert not ctx.catalog.filter_mask(empty).any()
        accepted = _rows(ctx, task.goal.recommend.acceptable)
        # the winning brand's items, narrowed to the wanted product type when it has any
        of_winner = np.flatnonzero(ctx.catalog.filter_mask(brand_searches[-1]))
        types = ctx.product_type.codes
        same_type = of_winner[types[of_winner] == types[wanted]]
        expected = same_type if len(same_type) else of_winner
        assert sorted(task.goal.recommend.acceptable) == sorted(ctx.ids(expected))
        without_type += not len(same_type)
        for row in accepted:
            assert ctx.in_stock[row]
            assert ctx.category.codes[row] == ctx.category.codes[wanted]
            assert ctx.size_col.codes[row] == ctx.size_col.codes[wanted]
    # the same product type first: the category fallback is the exception (issue 13)
    assert without_type <= 0.25 * len(tasks_of(ctx, "substitution"))


@pytest.mark.parametrize("scenario", ["cart", "bundle", "journey"])
def test_purchase_slots_are_buyable_and_within_budget(ctx, scenario):
    for task in tasks_of(ctx, scenario):
        spec = task.goal.purchase
        if spec is None:
            continue
        slot_sets = [set(s.acceptable) for s in spec.slots]
        for a in range(len(slot_sets)):
            for b in range(a + 1, len(slot_sets)):
                assert not slot_sets[a] & slot_sets[b], "slots overlap"
        for slot in spec.slots:
            for row in _rows(ctx, slot.acceptable):
                assert ctx.in_stock[row] and ctx.stock[row] >= slot.quantity
        adds = [c.arguments for c in task.reference if c.name in ("add_to_cart", "set_quantity")]
        if spec.budget is not None:
            rows = [ctx.catalog.row_of(a["item_id"]) for a in adds]
            subtotal = sum(ctx.price[r] * a["quantity"] for r, a in zip(rows, adds, strict=True))
            assert subtotal <= spec.budget + 1e-9


def _days_since_delivery(task: Task, order_id: str) -> int:
    order = next(o for o in task.initial_state["orders"] if o["order_id"] == order_id)
    today = dt.date.fromisoformat(task.initial_state["today"])
    return (today - dt.date.fromisoformat(order["delivered"])).days


def _own_ids(task: Task) -> list[str]:
    """The scenario's own relevant ids, without those of follow-up requests (the order a
    follow-up asks about, read with `get_order`, and the item a follow-up purchase buys); for
    the return and cancel scenarios, whose own calls never read one order."""
    asked = {c.arguments["order_id"] for c in task.reference if c.name == "get_order"}
    followup = set(asked)
    for order in task.initial_state["orders"]:
        if order["order_id"] in asked:
            followup.update(line["item_id"] for line in order["items"])
    bought = {c.arguments["item_id"] for c in task.reference if c.name == "add_to_cart"}
    return [i for i in task.goal.relevant_ids if i not in followup | bought]


def test_return_eligibility_matches_policy(ctx):
    seen_ineligible = 0
    for task in tasks_of(ctx, "return"):
        membership = task.initial_state["user"]["membership"]
        done = {(r.order_id, r.item_id) for r in task.goal.returns}
        done |= {(e.order_id, e.item_id) for e in task.goal.exchanges}
        requested_orders = [i for i in _own_ids(task) if ORDER_ID.fullmatch(i)]
        requested_items = {i for i in _own_ids(task) if ITEM_ID.fullmatch(i)}
        for order in task.initial_state["orders"]:
            if order["order_id"] not in requested_orders:
                continue
            days = _days_since_delivery(task, order["order_id"])
            for line in order["items"]:
                if line["item_id"] not in requested_items:
                    continue
                row = ctx.catalog.row_of(line["item_id"])
                rule = ctx.policies.return_eligibility(ctx.category.value(row), membership, days)
                assert rule.eligible == ((order["order_id"], line["item_id"]) in done), task.task_id
                seen_ineligible += not rule.eligible
        for spec in task.goal.exchanges:
            for new in spec.acceptable_new:
                assert ctx.catalog.same_family(spec.item_id, new)
                assert ctx.in_stock[ctx.catalog.row_of(new)]
    assert seen_ineligible > 0


def test_cancel_only_cancellable_orders(ctx):
    saw_shipped = False
    for task in tasks_of(ctx, "cancel"):
        status = {o["order_id"]: o["status"] for o in task.initial_state["orders"]}
        for order_id in task.goal.cancel:
            assert status[order_id] in ("pending", "processing")
        requested = [i for i in _own_ids(task) if ORDER_ID.fullmatch(i)]
        shipped = [o for o in requested if status[o] == "shipped"]
        assert set(requested) == set(task.goal.cancel) | set(shipped)
        if shipped:
            saw_shipped = True
            facts = {(f.subject, f.kind, f.value) for f in task.goal.answer_facts}
            for order_id in shipped:
                assert {(order_id, "verdict", "cancel:no"), (order_id, "term", "return_instead"),
                        (order_id, "status", "shipped")} <= facts  # fmt: skip
    assert saw_shipped


def test_order_status_answers_state_status_and_dates(ctx):
    for task in tasks_of(ctx, "order_status"):
        orders = {o["order_id"]: o for o in task.initial_state["orders"]}
        facts = {(f.subject, f.kind, f.value) for f in task.goal.answer_facts}
        # from d7 the customer also asks what they paid on a past day, from d8 for a product
        # in a colour and size, from d9-10 a refund or a net cost (no status asked): the
        # orders of these facts and of the add-on look-ups
        addon = (c for k, c in enumerate(task.reference) if k not in task.core_calls)
        priced = {f.subject for f in late_facts(task)}
        priced |= {c.arguments["order_id"] for c in addon if c.name == "get_order"}
        for order_id in (i for i in task.goal.relevant_ids if ORDER_ID.fullmatch(i)):
            if order_id in priced:
                continue
            order = orders[order_id]
            assert (order_id, "status", order["status"]) in facts
            date = order["delivered"] or order["eta"]
            if date:
                assert (order_id, "date", date) in facts


def test_policy_answers_follow_the_policy_book(ctx):
    for task in tasks_of(ctx, "policy"):
        assert task.goal.answer_facts
        # the policy's own calls, then perhaps a follow-up purchase (search, add, checkout) or,
        # from d3, acting on the verdict: the return if it may go back, the variant's purchase
        purchase = ("search", "add_to_cart", "checkout")
        own = [c.name for c in task.reference if c.name not in purchase]
        acting = ("return_item", "get_product") if task.difficulty >= 3 else ()
        # from d7 a question about a past order's price (`generators/reasoning.py`)
        late = ("get_order",) if task.difficulty >= LATE_FROM else ()
        own_kinds = ("search_policy", "ask_user", "list_orders", *acting, *late)
        assert all(name in own_kinds for name in own)
        names = [c.name for c in task.reference]
        if "return_item" in names:  # only once the policy was read, and only if it may go back
            assert "search_policy" in names[: names.index("return_item")]
            assert task.goal.returns
        for call in task.reference:
            if call.name == "search_policy":
                assert policy_search(ctx.catalog, call.arguments["query"])


@pytest.mark.parametrize("scenario", ["journey"])
def test_journey_has_several_intents_and_switches(ctx, scenario):
    switched = 0
    for task in tasks_of(ctx, scenario):
        goal = task.goal
        effects = (
            bool(goal.purchase)
            + bool(goal.cancel)
            + bool(goal.returns)
            + bool(goal.exchanges)
            + bool(goal.answer_facts)
        )
        assert effects >= 2, task.task_id
        switched += goal.intent_switch is not None
    assert switched > 0


# ---- hypothesis over seeds --------------------------------------------------------------------
@pytest.mark.parametrize("scenario", scenario_names())
@any_task_key(max_examples=12)
def test_any_seed_gives_a_valid_reproducible_task(ctx, scenario, seed, index, difficulty):
    task = generate_task(ctx, scenario, seed, difficulty, index)
    assert task is not None
    assert validate(task, ctx) == []
    assert task.task_id == TaskKey(scenario, seed, difficulty, index, 0).task_id or (
        TaskKey.parse(task.task_id).attempt > 0
    )
    assert task_row(regenerate(task.task_id, ctx)) == task_row(task)
    assert all(task.axes[a] >= 0 for a in task.axes)


# ---- discoverable goals ------------------------------------------------------------------------
# Details the agent may have to ask for without the prompt saying so: a reason (the tool that
# needs one asks for it) and which order / item / kind of thing a vague request means.
_ASKABLE = frozenset({"reason", "order", "item", "category"})
_ANCHOR_WORDS = {"brand": "brand", "color": "colour", "size": "size"}


def test_every_checked_detail_is_stated_signalled_or_readable(ctx):
    """A detail the goal depends on is in the prompt, or the prompt signals that more exists
    ("I have a couple more requirements — ask me"), or a tool shows it (a value anchored to a
    past order), or a count is left open ("some …"); over all scenarios x difficulties."""
    signals = [s for group in HIDDEN_SIGNALS.values() for s in group] + list(BUDGET_HIDDEN)
    checked = 0
    for scenario in scenario_names():
        for task in tasks_of(ctx, scenario):
            if not any(c.name == "ask_user" for c in task.reference):
                continue  # the reference solves it from the prompt and the tools alone
            prompt = task.prompt.lower()
            unstated = [
                key
                for key, value in task.goal.user_facts.items()
                if key not in _ASKABLE and value.lower() not in prompt
            ]
            for key in unstated:
                checked += 1
                if key == "quantity":
                    assert re.search(r"\bsome\b", prompt), (task.task_id, task.prompt)
                elif key in _ANCHOR_WORDS and f"same {_ANCHOR_WORDS[key]} as" in prompt:
                    # "from the same brand as the boots I ordered in May": the order history
                    assert any(c.name == "list_orders" for c in task.reference), task.task_id
                else:
                    assert any(s in task.prompt for s in signals), (task.task_id, key, task.prompt)
    assert checked > 50
