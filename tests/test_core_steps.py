"""Core steps (issue 44, item 1): the reference calls that serve the customer's main request.

`Task.core_calls` lists them, `core_steps` counts them and step bands filter on them; an add-on
request beside the main one (an unrelated purchase, a question about another order) and the
calls that handle a world event are not core. From d3 the add-on purchase is gone and the order
scenarios may hang a purchase on the main outcome (`generators/dependent.py`), which is core.
"""

from __future__ import annotations

import itertools

import polars as pl
import pytest

from ecomrlve.env import TOOL_NAMES
from ecomrlve.flows.validation import rejection_reason
from ecomrlve.generators import GenContext, TaskKey, generate_task, validate
from ecomrlve.generators.dependent import dependent_share, wanted_phrase
from ecomrlve.generators.generate import config_of, task_row
from ecomrlve.generators.registry import get_scenario, scenario_names
from ecomrlve.tasks import Task, with_column_defaults
from ecomrlve.testing.task_keys import any_task_key

DEPENDENT_SCENARIOS = ("order_status", "cancel", "return", "policy", "product_discovery")


@pytest.fixture(scope="module")
def ctx(small_catalog_dir) -> GenContext:
    return GenContext.load(small_catalog_dir)


def _addon_purchase(task: Task) -> bool:
    """An add_to_cart that is no core call and handles no world event (an out-of-stock swap,
    a retry): the purchase of a `reorder` follow-up."""
    core = set(task.core_calls or ())
    swaps = 2 * sum(e.kind == "out_of_stock" for e in task.events)
    retries = sum(e.kind == "tool_failure" and e.tool == "add_to_cart" for e in task.events)
    added = sum(c.name == "add_to_cart" and k not in core for k, c in enumerate(task.reference))
    return added > swaps // 2 + retries


@pytest.mark.parametrize("scenario", scenario_names())
@any_task_key(max_examples=8)
def test_core_calls_are_real_reference_calls(ctx, scenario, seed, index, difficulty):
    task = generate_task(ctx, scenario, seed, difficulty, index)  # world events from d8
    assert task is not None
    assert task.core_steps <= task.min_steps == len(task.reference)
    calls = task.core_calls
    assert calls == sorted(set(calls)) and all(0 <= k < len(task.reference) for k in calls)
    assert all(task.reference[k].name in TOOL_NAMES for k in calls)
    # the plan fixed the core steps; a world event's handling adds none
    key = TaskKey.parse(task.task_id)
    plan = get_scenario(scenario).plan_task(config_of(scenario, difficulty), key.rng(), key)
    assert task.core_steps == plan.core_steps
    if difficulty > 2:
        assert not _addon_purchase(task)
    assert validate(task, ctx) == []
    row = task_row(task)
    assert row["core_steps"] == task.core_steps
    assert Task.from_row(row).core_calls == calls


@pytest.mark.parametrize("scenario", DEPENDENT_SCENARIOS)
def test_a_six_to_eight_band_counts_core_steps(ctx, scenario):
    """From d3 every scenario reaches 6-8 core steps; the band holds on them."""
    for d in (3, 6, 9):
        for i in range(3):
            task = generate_task(ctx, scenario, 17, d, i, (6, 8))
            assert task is not None, f"{scenario} d{d} i{i}"
            assert 6 <= task.core_steps <= 8
            assert not _addon_purchase(task)
            assert validate(task, ctx) == []


def test_validation_rejects_by_core_steps(ctx):
    task = generate_task(ctx, "cart", 3, 2, 0)
    common = {"scenario": "cart", "difficulty": 2, "catalog_hash": task.catalog_hash}
    core = task.core_steps
    assert rejection_reason(task, min_steps=core, max_steps=core, **common) is None
    assert rejection_reason(task, min_steps=core + 1, max_steps=None, **common) == "out_of_band"
    # an add-on's calls do not count toward the band
    padded = task.model_copy(update={"core_calls": task.core_calls[:-1]})
    assert rejection_reason(padded, min_steps=core, max_steps=None, **common) == "out_of_band"


def test_rows_written_before_the_column_count_every_call(ctx):
    row = task_row(generate_task(ctx, "cancel", 3, 1, 0))
    old = {k: v for k, v in row.items() if k not in ("core_steps", "core_calls")}
    assert Task.from_row(old).core_steps == row["min_steps"]
    frame = with_column_defaults(pl.DataFrame([old]))
    assert frame["core_steps"].to_list() == [row["min_steps"]]
    assert Task.from_row(frame.row(0, named=True)).core_calls == list(range(row["min_steps"]))


def test_core_calls_must_index_the_reference(ctx):
    row = task_row(generate_task(ctx, "cancel", 3, 1, 0))
    with pytest.raises(ValueError, match="core_calls"):
        Task.from_row({**row, "core_calls": f"[0, {row['min_steps']}]"})


def test_dependent_share_rises_from_d3():
    shares = [dependent_share(d) for d in range(11)]
    assert shares[:3] == [0.0, 0.0, 0.0] and shares[6:] == [1.0] * 5
    assert all(a <= b for a, b in itertools.pairwise(shares))


@pytest.mark.parametrize("scenario", ("order_status", "cancel", "return", "policy"))
def test_a_dependent_purchase_is_bought_only_when_its_condition_holds(ctx, scenario):
    """At d6 every task carries one; it is bought (the variant of an ordered item, through
    its product page) or, when the condition fails, nothing is."""
    bought = skipped = 0
    for i in range(8):
        task = generate_task(ctx, scenario, 23, 6, i, events_from=11)
        names = [c.name for c in task.reference]
        if task.goal.purchase is None:
            skipped += 1
            assert "add_to_cart" not in names
            continue
        bought += 1
        at = names.index("add_to_cart")
        assert names[at - 1 : at + 2] == ["get_product", "add_to_cart", "checkout"]
        opened = task.reference[at - 1].arguments["item_id"]
        ordered = {line["item_id"] for o in task.initial_state["orders"] for line in o["items"]}
        assert opened in ordered
        assert task.reference[at].arguments["item_id"] in task.goal.purchase.slots[0].acceptable
    assert bought > 0


def test_wanted_phrase_names_the_variant():
    assert wanted_phrase("hoodie", "size M") == "the hoodie in size M"
    assert wanted_phrase("hoodie", "the black one") == "the hoodie in black"
    assert wanted_phrase("hoodie", "the black one in size M") == "the hoodie in black, size M"


def test_a_store_written_before_core_steps_filters_by_every_call(ctx, tmp_path):
    """A band's SQL reads an older store (no `core_steps` in any file): every call is core."""
    from ecomrlve import store
    from ecomrlve.config import DataConfig

    row = task_row(generate_task(ctx, "cancel", 3, 1, 0))
    old = pl.DataFrame([{k: v for k, v in row.items() if k not in ("core_steps", "core_calls")}])
    folder = tmp_path / "tasks" / "scenario=cancel" / "difficulty=1"
    folder.mkdir(parents=True)
    old.write_parquet(folder / "old.parquet")
    store.refresh_views(tmp_path)
    band = DataConfig(min_steps=row["min_steps"], max_steps=row["min_steps"]).band
    con = store.connect(tmp_path, read_only=True)
    try:
        got = con.sql(f"SELECT task_id, core_steps FROM tasks WHERE {band}").fetchall()
    finally:
        con.close()
    assert got == [(row["task_id"], row["min_steps"])]
