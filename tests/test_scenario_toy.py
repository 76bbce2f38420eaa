"""A tenth scenario is one module: a toy scenario written to its own file joins the registry,
generates tasks whose references verify, and goes through `ecomrlve generate` into the store's
`tasks` view, with nothing else edited. The registry is as it was after each test.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import ecomrlve.generators.scenarios as scenario_package
from ecomrlve.cli import app
from ecomrlve.generators import GenContext, generate_task, regenerate, validate
from ecomrlve.generators.generate import task_row
from ecomrlve.generators.registry import REGISTRY, discover, registered, scenario_names
from ecomrlve.store import connect

TOY = "toy_cancel"
# The whole scenario: a Scenario subclass with a name, the next free seed id and a Config
TOY_MODULE = '''
"""toy_cancel: cancel the one pending order the user names (the test's tenth scenario)."""

from ecomrlve.generators.base import Draft, Plan, Scenario, ScenarioConfig
from ecomrlve.generators.blocks import World, call, line_phrase, placed_days_ago_for
from ecomrlve.generators.draws import pick
from ecomrlve.generators.order_requests import OrderRequests
from ecomrlve.tasks import Goal

REASONS = ("I ordered it by mistake", "I don't need it any more")


class ToyCancelConfig(ScenarioConfig):
    pass


class ToyCancel(Scenario):
    name = "toy_cancel"
    seed_id = max(NINE) + 1
    Config = ToyCancelConfig

    def plan(self, config, rng):
        return Plan(2)  # list_orders, cancel_order

    def build(self, config, plan, rng, ctx):
        world = World.new(ctx, rng)
        row = ctx.pick_any(rng, ctx.categories[0])
        [order_id] = ctx.order_ids(rng, 1)
        order = ctx.order(order_id, [row], [1], "pending", placed_days_ago_for("pending", rng),
                          user=world.user)
        world.orders = [order]
        reason = pick(rng, REASONS)
        requests = OrderRequests()
        requests.reference.append(call("list_orders"))
        requests.cancel_order(ctx, order, row, reason)
        prompt = f"Please cancel my order with {line_phrase(ctx, row, rng)}. {reason}."
        goal = Goal(**requests.goal_parts(), user_facts={"reason": reason},
                    relevant_ids=[order_id, ctx.item_ids[row]])
        return Draft(prompt, goal, world.state(), requests.reference)
'''


@pytest.fixture
def toy_scenario(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The toy module in a folder of the scenarios package, discovered like the nine; then the
    package, the registry and `sys.modules` as they were."""
    folder = tmp_path / "more_scenarios"
    folder.mkdir()
    nine = {s.seed_id for s in REGISTRY.values()}
    (folder / "toy_cancel.py").write_text(TOY_MODULE.replace("max(NINE)", str(max(nine))))
    monkeypatch.setattr(scenario_package, "__path__", [*scenario_package.__path__, str(folder)])
    module = f"{scenario_package.__name__}.toy_cancel"
    try:
        with registered():  # restores the registry whatever the test does
            discover()
            yield REGISTRY[TOY]
    finally:
        sys.modules.pop(module, None)


def test_a_scenario_module_is_all_a_new_scenario_needs(toy_scenario, small_catalog_dir) -> None:
    nine = [name for name in scenario_names() if name != TOY]
    assert scenario_names() == (*nine, TOY)  # seed-id order: the new one comes last
    ctx = GenContext.load(small_catalog_dir)
    for d in (0, 1, 2):
        for i in range(3):
            task = generate_task(ctx, TOY, 5, d, i)
            assert task is not None and task.scenario == TOY and task.min_steps == 2
            assert validate(task, ctx) == []  # the reference replays as a success
            assert task_row(regenerate(task.task_id, ctx)) == task_row(task)


def test_ecomrlve_generate_puts_the_toy_scenario_in_the_store(toy_scenario, tmp_path) -> None:
    from ecomrlve.catalogs import build_catalog

    data = tmp_path / "data"
    build_catalog(data, 1_000, seed=7)
    n = 2 * len(scenario_names())
    result = CliRunner().invoke(
        app,
        ["generate", "--tasks", str(n), "--seed", "3", "--difficulty", "0-1", "--data", str(data)],
    )
    assert result.exit_code == 0, result.output
    with connect(data) as con:
        counts = dict(con.execute("SELECT scenario, count(*) FROM tasks GROUP BY ALL").fetchall())
    assert set(counts) == set(scenario_names()) and counts[TOY] == 2


def test_the_registry_is_back_to_the_nine_after_a_toy_test() -> None:
    assert TOY not in REGISTRY and TOY not in scenario_names()
    assert f"{scenario_package.__name__}.toy_cancel" not in sys.modules
    assert all(not p.endswith("more_scenarios") for p in scenario_package.__path__)
