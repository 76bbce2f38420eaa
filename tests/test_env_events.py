"""World events (issue 29): the shop changes during the episode, and each action is judged on
the world as it was when the agent took it.

Every rule has a trajectory that tries to get paid without handling the event (must fail) and
a correct one phrased or ordered differently from the reference (must pass).
"""

from __future__ import annotations

import json
import subprocess
import sys

import polars as pl
import pytest

from ecomrlve.env import EcomEnv, format_call, reference_turns, verify
from ecomrlve.generators import generate_task, regenerate
from ecomrlve.generators.events import EVENTS_FROM, check_events_from
from ecomrlve.generators.generate import task_row
from ecomrlve.tasks import TASK_SCHEMA, Task, WorldEvent, with_column_defaults
from ecomrlve.testing import env_tasks as fx


@pytest.fixture(scope="module")
def catalog(ctx):  # the generated shop's (conftest's `ctx`), not the hand-made one
    return ctx.catalog


def call(name: str, **arguments) -> str:
    return format_call(name, arguments)


def with_events(task: Task, *events: WorldEvent) -> Task:
    return task.model_copy(update={"events": list(events)})


def purchase(catalog) -> tuple[Task, str, dict]:
    task = fx.purchase_task(catalog)
    item_id = task.reference[1].arguments["item_id"]
    return task, item_id, catalog.row(item_id)


def purchase_turns(task: Task, item_id: str) -> list[str]:
    search = task.reference[0].arguments
    return [call("search", **search), call("add_to_cart", item_id=item_id, quantity=1)]


# ---- transient tool failures ---------------------------------------------------------------------
def test_a_transient_failure_fails_once_and_the_retry_works(catalog):
    task, item_id, row = purchase(catalog)
    task = with_events(
        task, WorldEvent(kind="tool_failure", after_calls=2, tool="checkout", error="timeout")
    )
    title = row["title"]
    retried = [
        *purchase_turns(task, item_id),
        call("checkout"),
        call("checkout"),
        f"Done: your {title} is ordered (the first attempt timed out, the second went through).",
    ]
    verdict = verify(task, retried, catalog)
    assert verdict.success, verdict.violations
    # the tool's fault is not the agent's: no waste, and the retry is no repeat
    assert not [v for v in verdict.violations if v.startswith("waste")], verdict.violations
    # no retry: the order was never placed, and saying it was is a false claim
    gave_up = [*purchase_turns(task, item_id), call("checkout"), f"I've ordered the {title}."]
    verdict = verify(task, gave_up, catalog)
    assert not verdict.success
    assert any("expected exactly one new order" in v for v in verdict.violations)


def test_a_transient_failure_answers_with_a_retryable_error(catalog):
    task, _, _ = purchase(catalog)
    task = with_events(
        task, WorldEvent(kind="tool_failure", after_calls=0, tool="search", error="rate_limited")
    )
    env = EcomEnv(task, catalog)
    env.reset()
    first = json.loads(env.step(call("search", query="t-shirt")).observation[0]["content"])
    assert first["code"] == "transient" and "429" in first["error"]
    again = json.loads(env.step(call("search", query="t-shirt")).observation[0]["content"])
    assert again["count"] > 0


# ---- price changes -------------------------------------------------------------------------------
def price_task(catalog, after_calls: int = 2) -> tuple[Task, str, dict, float]:
    task, item_id, row = purchase(catalog)
    new = round(row["price"] * 0.85, 2)
    event = WorldEvent(kind="price_change", after_calls=after_calls, item_id=item_id, price=new,
                       old_price=row["price"], say=f"The price changed to ${new:.2f}.")  # fmt: skip
    return with_events(task, event), item_id, row, new


def test_a_price_change_before_checkout_must_be_told(catalog):
    task, item_id, row, new = price_task(catalog)
    turns = [*purchase_turns(task, item_id), call("checkout")]
    silent = verify(task, [*turns, f"I've ordered the {row['title']} for you."], catalog)
    assert not silent.success
    assert any("does not state money" in v for v in silent.violations), silent.violations
    # the old price is stale: stating only it does not tell the change
    stale = verify(
        task, [*turns, f"I've ordered the {row['title']} at ${row['price']:.2f}."], catalog
    )
    assert not stale.success
    told = (
        f"Heads up: the {row['title']} now costs ${new:.2f} instead of ${row['price']:.2f}; the "
        "price changed just before checkout, and your order was charged the new one."
    )
    verdict = verify(task, [*turns, told], catalog)
    assert verdict.success, verdict.violations


def _ordered_before_the_event_passes(task, item_id: str, row: dict, catalog) -> None:
    """The item bought and checked out before the world event, then the answer says only that
    it is ordered: it succeeds (an action valid when taken stays valid)."""
    turns = [*purchase_turns(task, item_id), call("checkout"), call("view_cart")]
    verdict = verify(task, [*turns, f"Your {row['title']} is ordered."], catalog)
    assert verdict.success, verdict.violations


def test_a_price_change_after_the_checkout_asks_nothing(catalog):
    """An action valid when taken stays valid: the order paid the old price before the change."""
    task, item_id, row, _ = price_task(catalog, after_calls=3)
    _ordered_before_the_event_passes(task, item_id, row, catalog)


def test_the_shop_shows_the_changed_price_and_charges_it(catalog):
    task, item_id, _, new = price_task(catalog)
    env = EcomEnv(task, catalog)
    env.reset()
    for turn in purchase_turns(task, item_id):
        env.step(turn)
    product = json.loads(env.step(call("get_product", item_id=item_id)).observation[0]["content"])
    assert product["price"] == new
    order = json.loads(env.step(call("checkout")).observation[0]["content"])
    assert order["items"][0]["price"] == new


def search_ids(env: EcomEnv, query: str, filters: dict, top_k: int = 10) -> list[str]:
    step = env.step(call("search", query=query, filters=filters, top_k=top_k))
    return [r["item_id"] for r in json.loads(step.observation[0]["content"])["results"]]


def test_search_price_bounds_judge_the_price_now(catalog):
    """A product that now costs more than max_price is not found under it; one that now costs
    less is, at its rank; the list still fills top_k."""
    task, _, _ = purchase(catalog)
    shirts = catalog.search("t-shirt", {"category": "t-shirts"}, 50)
    bound = shirts[5]["price"]
    under = [r for r in shirts if r["price"] <= bound]
    over = [r for r in shirts if r["price"] > bound]
    risen, fallen = under[0], over[0]
    events = [
        WorldEvent(kind="price_change", after_calls=0, item_id=risen["item_id"],
                   price=round(bound * 1.2 + 1, 2), old_price=risen["price"]),
        WorldEvent(kind="price_change", after_calls=0, item_id=fallen["item_id"],
                   price=round(bound * 0.5, 2), old_price=fallen["price"]),
    ]  # fmt: skip
    env = EcomEnv(with_events(task, *events), catalog)
    env.reset()
    filters = {"category": "t-shirts", "max_price": bound}
    found = search_ids(env, "t-shirt", filters, top_k=5)
    live = [r["item_id"] for r in shirts if r is not risen and (r["price"] <= bound or r is fallen)]
    assert found == live[:5] and risen["item_id"] not in found
    everything = search_ids(env, "t-shirt", filters, top_k=50)
    # the 50 best unbounded matches rank above every other t-shirt: `live` is a prefix
    assert everything[: len(live)] == live and fallen["item_id"] in everything
    # the catalog price no longer decides: min_price judges the new prices too
    above = search_ids(env, "t-shirt", {"category": "t-shirts", "min_price": bound + 0.01}, 50)
    assert risen["item_id"] in above and fallen["item_id"] not in above


def test_live_search_ranks_as_the_catalog_search(catalog):
    """Against a reference: the unbounded ranking filtered by the new prices (the pool is the
    whole match set, under 50 products)."""
    import numpy as np

    rng = np.random.default_rng(np.random.SeedSequence([29, 3]))
    for query, filters in [
        ("t-shirt", {"category": "t-shirts", "max_price": 30.0}),
        ("", {"category": "t-shirts", "min_price": 15.0, "max_price": 40.0}),
    ]:
        others = {k: v for k, v in filters.items() if k not in ("min_price", "max_price")}
        pool = catalog.search(query, others, 50)
        assert catalog.search_live(query, filters, 10, {}, set()) == catalog.search(
            query, filters, 10
        )
        for _ in range(10):
            picked = rng.choice(len(pool), size=3, replace=False)
            prices = {
                pool[int(k)]["item_id"]: round(pool[int(k)]["price"] * float(f), 2)
                for k, f in zip(picked, rng.choice([0.5, 0.8, 1.25, 1.6], size=3), strict=True)
            }
            low, high = filters.get("min_price", 0.0), filters["max_price"]
            want = [
                r["item_id"] for r in pool
                if low <= prices.get(r["item_id"], r["price"]) <= high
            ]  # fmt: skip
            got = catalog.search_live(query, filters, 10, prices, set())
            assert [r["item_id"] for r in got] == want[:10]


@pytest.fixture(scope="module")
def budget_bundle(ctx):
    """A generated bundle with a budget, tightened to the reference's subtotal, and a slot
    with a cheaper acceptable product than the reference's."""
    for index in range(40):
        task = generate_task(ctx, "bundle", 5, 3, index, events_from=11)
        spec = task.goal.purchase
        if spec is None or spec.budget is None:
            continue
        adds = [c.arguments for c in task.reference if c.name == "add_to_cart"]
        price = {a["item_id"]: ctx.catalog.row(a["item_id"])["price"] for a in adds}
        for slot, added in zip(spec.slots, adds, strict=False):
            cheaper = [
                i for i in slot.acceptable
                if ctx.catalog.row(i)["price"] < price[added["item_id"]]
                and ctx.catalog.row(i)["in_stock"] and added.get("quantity", 1) == slot.quantity
            ]  # fmt: skip
            if cheaper and len(adds) == len(spec.slots):
                subtotal = round(sum(price[a["item_id"]] * a.get("quantity", 1) for a in adds), 2)
                goal = task.goal.model_copy(
                    update={"purchase": spec.model_copy(update={"budget": subtotal})}
                )
                return task.model_copy(update={"goal": goal}), added["item_id"], cheaper[0]
    raise LookupError("no bundle with a budget and a cheaper alternative")


def repriced(task: Task, item_id: str, factor: float, catalog) -> tuple[Task, float, float]:
    """`task` whose `item_id` changes price just before the checkout."""
    checkout = next(k for k, c in enumerate(task.reference) if c.name == "checkout")
    old = catalog.row(item_id)["price"]
    new = round(old * factor, 2)
    event = WorldEvent(kind="price_change", after_calls=checkout, item_id=item_id, price=new,
                       old_price=old, say=f"now ${new:.2f}")  # fmt: skip
    return with_events(task, event), old, new


def test_a_budget_is_checked_at_the_price_paid(budget_bundle, catalog):
    task, item_id, _ = budget_bundle
    risen, old, new = repriced(task, item_id, 1.2, catalog)
    turns = [format_call(c.name, c.arguments) for c in task.reference]
    # checking out at the catalog price's plan: the new price breaks the budget
    blind = verify(
        risen, [*turns, f"Ordered; one item went from ${old:.2f} to ${new:.2f}."], catalog
    )
    assert not blind.success
    assert any("exceeds the budget" in v for v in blind.violations), blind.violations
    # the same budget, the price fallen: the order fits and the new price is told
    fallen, old, low = repriced(task, item_id, 0.8, catalog)
    told = f"Done! Good news: {item_id} costs ${low:.2f} now (it was ${old:.2f})."
    verdict = verify(fallen, [*turns, told], catalog)
    assert verdict.success, verdict.violations


def test_a_risen_price_is_handled_by_a_cheaper_pick_within_budget(budget_bundle, catalog):
    task, item_id, cheaper = budget_bundle
    risen, _, new = repriced(task, item_id, 1.2, catalog)
    checkout = next(k for k, c in enumerate(task.reference) if c.name == "checkout")
    quantity = next(
        c.arguments.get("quantity", 1)
        for c in task.reference
        if c.arguments.get("item_id") == item_id
    )
    row = catalog.row(cheaper)
    turns = [format_call(c.name, c.arguments) for c in task.reference[:checkout]]
    turns += [
        call("view_cart"),  # the event fired: the cart shows the new price
        call("search", query=row["title"], filters={"category": row["category"]}, top_k=50),
        call("remove_from_cart", item_id=item_id),
        call("add_to_cart", item_id=cheaper, quantity=quantity),
        call("checkout"),
        f"{item_id} went up to ${new:.2f}, which broke your budget, so I ordered {cheaper} "
        "instead; everything else is as you asked.",
    ]
    verdict = verify(risen, turns, catalog)
    assert verdict.success, verdict.violations


# ---- out of stock --------------------------------------------------------------------------------
def stock_task(catalog, after_calls: int = 2) -> tuple[Task, str, str, dict]:
    task, item_id, row = purchase(catalog)
    # the fixture's slot is one variant; another size of the family stands in for it
    family = catalog.family_rows(catalog.row_of(item_id))
    substitute = next(
        catalog.item_id(r) for r in family
        if catalog.item_id(r) != item_id and catalog.stock[r] > 1
    )  # fmt: skip
    slot = task.goal.purchase.slots[0]
    goal = task.goal.model_copy(update={"purchase": task.goal.purchase.model_copy(
        update={"slots": [slot.model_copy(update={"acceptable": [*slot.acceptable, substitute]})]}
    )})  # fmt: skip
    task = task.model_copy(update={"goal": goal})
    event = WorldEvent(kind="out_of_stock", after_calls=after_calls, item_id=item_id,
                       substitute=substitute, say="It went out of stock.")  # fmt: skip
    return with_events(task, event), item_id, substitute, row


def test_an_item_out_of_stock_in_the_cart_is_replaced_and_told(catalog):
    task, item_id, substitute, row = stock_task(catalog)
    base = purchase_turns(task, item_id)
    # checkout with the withdrawn item fails; claiming the order anyway is caught
    blind = verify(task, [*base, call("checkout"), f"I've ordered the {row['title']}."], catalog)
    assert not blind.success
    swap = [
        call("remove_from_cart", item_id=item_id),
        call("get_product", item_id=item_id),  # shows the other variants, in stock
        call("add_to_cart", item_id=substitute, quantity=1),
        call("checkout"),
    ]
    # a silent substitution: the customer is not told their pick is gone
    silent = verify(task, [*base, call("view_cart"), *swap, "Your order is placed."], catalog)
    assert not silent.success
    assert any("does not state" in v for v in silent.violations), silent.violations
    told = (
        f"The {row['title']} you wanted sold out while it sat in your cart. I've placed your "
        f"order for {substitute} instead (the same shirt in another size)."
    )
    verdict = verify(task, [*base, call("view_cart"), *swap, told], catalog)
    assert verdict.success, verdict.violations


def test_an_item_bought_before_it_ran_out_needs_no_apology(catalog):
    task, item_id, _, row = stock_task(catalog, after_calls=3)
    _ordered_before_the_event_passes(task, item_id, row, catalog)


def test_search_hides_a_withdrawn_item_from_in_stock_results(catalog):
    task, item_id, _, _ = stock_task(catalog, after_calls=0)
    env = EcomEnv(task, catalog)
    env.reset()
    found = json.loads(
        env.step(call("search", **task.reference[0].arguments)).observation[0]["content"]
    )
    assert item_id not in [r["item_id"] for r in found["results"]]


# ---- an order ships ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def cancel_task(ctx):
    """A generated cancel task without events whose reference cancels a processing order."""
    for index in range(40):
        task = generate_task(ctx, "cancel", 5, 3, index, events_from=11)
        orders = {o["order_id"]: o["status"] for o in task.initial_state["orders"]}
        cancels = [c for c in task.reference if c.name == "cancel_order"]
        if len(cancels) == 1 and orders[cancels[0].arguments["order_id"]] == "processing":
            return task
    raise LookupError("no single-cancel task with a processing order")


def test_an_order_cancelled_before_it_ships_stays_cancelled(cancel_task, catalog):
    """The cancel was valid when taken: shipping afterwards changes nothing."""
    k = next(i for i, c in enumerate(cancel_task.reference) if c.name == "cancel_order")
    order_id = cancel_task.reference[k].arguments["order_id"]
    task = with_events(cancel_task, WorldEvent(kind="order_shipped", after_calls=k + 1,
                                               order_id=order_id))  # fmt: skip
    verdict = verify(task, reference_turns(task), catalog)
    assert verdict.success, verdict.violations


def test_an_order_that_shipped_before_the_cancel_must_be_told(cancel_task, catalog):
    k = next(i for i, c in enumerate(cancel_task.reference) if c.name == "cancel_order")
    order_id = cancel_task.reference[k].arguments["order_id"]
    task = with_events(cancel_task, WorldEvent(kind="order_shipped", after_calls=k,
                                               order_id=order_id))  # fmt: skip
    # acting on stale information: the cancel is refused, and the reference's claim is false
    stale = verify(task, reference_turns(cancel_task), catalog)
    assert not stale.success
    before = [format_call(c.name, c.arguments) for c in cancel_task.reference[: k + 1]]
    told = (
        f"I tried, but order {order_id} left our warehouse a moment ago — it's shipped now, so "
        "cancelling is no longer possible. Once it arrives you can send it back for a refund."
    )
    verdict = verify(task, [*before, told], catalog)
    assert verdict.success, verdict.violations


@pytest.fixture(scope="module")
def status_task(ctx):
    """A generated order_status task asking the status and date of one processing order."""
    for index in range(40):
        task = generate_task(ctx, "order_status", 5, 2, index, events_from=11)
        kinds = sorted(f.kind for f in task.goal.answer_facts)
        status = next((f for f in task.goal.answer_facts if f.kind == "status"), None)
        if kinds == ["date", "status"] and status.value == "processing":
            return task
    raise LookupError("no order_status task about one processing order")


def shipped_at(task: Task, after_calls: int) -> tuple[Task, str, str]:
    """`task` whose order ships after `after_calls` calls; its id and its noun."""
    status = next(f for f in task.goal.answer_facts if f.kind == "status")
    event = WorldEvent(kind="order_shipped", after_calls=after_calls, order_id=status.subject)
    return with_events(task, event), status.subject, status.cues[-1]


def eta(task: Task) -> str:
    return next(f.value for f in task.goal.answer_facts if f.kind == "date")


def test_an_order_that_ships_before_the_agent_looks_is_told_shipped(status_task, catalog):
    """The status the agent saw is the one to tell: the order had shipped when it looked."""
    task, order_id, noun = shipped_at(status_task, after_calls=0)
    looked = [call("list_orders")]
    stale = f"Your order {order_id} ({noun}) is being processed; it should arrive on {eta(task)}."
    verdict = verify(task, [*looked, stale], catalog)
    assert not verdict.success
    assert any("does not state status 'shipped'" in v for v in verdict.violations)
    told = f"Good news: the {noun} ({order_id}) is on its way, it has shipped. ETA {eta(task)}."
    verdict = verify(task, [*looked, told], catalog)
    assert verdict.success, verdict.violations
    # the same words without looking at anything are not paid
    assert not verify(task, [told], catalog).success


def test_an_order_that_ships_between_two_looks_is_told_as_last_seen(status_task, catalog):
    task, order_id, noun = shipped_at(status_task, after_calls=1)
    looked = [call("list_orders"), call("get_order", order_id=order_id)]
    stale = f"Order {order_id} with the {noun} is processing and arrives {eta(task)}."
    assert not verify(task, [*looked, stale], catalog).success
    told = (
        f"When I first checked, order {order_id} was still processing, but it has just shipped: "
        f"the {noun} should reach you on {eta(task)}."
    )
    verdict = verify(task, [*looked, told], catalog)
    assert verdict.success, verdict.violations


def test_an_order_that_ships_after_the_last_look_stays_as_seen(status_task, catalog):
    """An answer right when the agent looked stays right; guessing the change is not."""
    task, order_id, noun = shipped_at(status_task, after_calls=1)
    looked = [call("list_orders"), call("search", query=noun)]  # the event fires before search
    seen = f"Your {noun} (order {order_id}) is being processed and due on {eta(task)}."
    verdict = verify(task, [*looked, seen], catalog)
    assert verdict.success, verdict.violations
    guessed = f"Your {noun} (order {order_id}) has shipped and is due on {eta(task)}."
    assert not verify(task, [*looked, guessed], catalog).success


# ---- generated tasks -----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def hard_tasks(ctx):
    from ecomrlve.generators.registry import scenario_names

    return [
        generate_task(ctx, s, 13, d, i) for s in scenario_names() for d in (8, 10) for i in range(3)
    ]


def test_most_hard_tasks_carry_events_and_their_references_verify(hard_tasks, catalog):
    with_any = [t for t in hard_tasks if t.events]
    assert len(with_any) >= 0.5 * len(hard_tasks)
    kinds = {e.kind for t in hard_tasks for e in t.events}
    assert {"tool_failure", "price_change", "order_shipped"} <= kinds, kinds
    for task in hard_tasks:
        verdict = verify(task, reference_turns(task), catalog)
        assert verdict.success and verdict.tool_calls == task.min_steps, (task.task_id, verdict)


def test_a_generated_status_question_meets_an_order_that_ships(ctx, catalog):
    """The generator ships an order asked about before the reference looks at it: the
    reference tells "shipped"; the answer the shop before the event called for fails."""
    # (only where no purchase gives the world another change to make: from d6 most status
    # tasks hang a purchase on a delivery, `generators/dependent.py`)
    task = next(
        t for i in range(40)
        if (t := generate_task(ctx, "order_status", 13, 9, i)).events
        and any(e.kind == "order_shipped" for e in t.events)
    )  # fmt: skip
    event = next(e for e in task.events if e.kind == "order_shipped")
    assert event.order_id not in task.goal.cancel and "shipped" in event.say
    turns = reference_turns(task)
    assert verify(task, turns, catalog).success
    static = task.model_copy(update={"events": []})
    stale = reference_turns(static)[-1]  # what it would say had the order not shipped
    calls = [format_call(c.name, c.arguments) for c in task.reference]
    assert not verify(task, [*calls, stale], catalog).success
    # the change told in other words still passes
    reworded = "Here's where things stand. " + turns[-1].replace(
        "has just shipped", "left our warehouse a moment ago (it has shipped)"
    )
    assert reworded != "Here's where things stand. " + turns[-1]
    verdict = verify(task, [*calls, reworded], catalog)
    assert verdict.success, verdict.violations


def test_events_start_at_the_configured_difficulty(ctx):
    assert EVENTS_FROM == 8
    assert not generate_task(ctx, "cart", 13, 7, 0).events
    assert generate_task(ctx, "cart", 13, 7, 0, events_from=0).events
    assert not generate_task(ctx, "cart", 13, 10, 0, events_from=11).events
    with pytest.raises(ValueError, match="events_from"):
        check_events_from(12)


def test_events_are_part_of_the_row_and_replay_the_same_world(hard_tasks, ctx):
    task = next(t for t in hard_tasks if t.events)
    row = task_row(task)
    assert Task.from_row(row).events == task.events
    assert task_row(regenerate(task.task_id, ctx)) == row
    # a row written before the column existed reads as a static shop
    old = {k: v for k, v in row.items() if k != "events"}
    assert Task.from_row(old).events == []
    frame = with_column_defaults(pl.DataFrame([old]))
    assert frame["events"].to_list() == ["[]"]
    assert set(TASK_SCHEMA) - set(frame.columns) == set()


def test_event_draws_do_not_depend_on_the_hash_seed():
    code = (
        "from ecomrlve.testing.fuzzer import gen_context;"
        "from ecomrlve.generators import generate_task;"
        "from ecomrlve.generators.generate import task_row;"
        "print([task_row(generate_task(gen_context(), s, 3, 9, 0))['events'] "
        "for s in ('cancel', 'bundle', 'journey')])"
    )
    outputs = {
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True,
            env={**__import__("os").environ, "PYTHONHASHSEED": seed},
        ).stdout
        for seed in ("0", "1")
    }  # fmt: skip
    assert len(outputs) == 1 and "kind" in next(iter(outputs))
