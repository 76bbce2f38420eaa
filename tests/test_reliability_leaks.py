"""No leak of the hidden goal (issue 8, part 2), across all nine scenarios and difficulties 0-10.

Two independent checks over reference, probing and fuzzed episodes:

* **provenance scan** (`ecomrlve.testing.leaks.LeakScanner`): every id, and every answer fact the
  agent must find out, that appears in what the agent observes (system prompt, the user's
  request, tool results, error messages, simulated-user replies) must have a reason a real shop
  would give: the agent named it, or the tool shows it (search results that pass the call's
  filters, the variants of a product, the cart, the customer's orders). The simulated user never
  says an item id; the prompt names no item or order id and states no answer fact.
* **goal independence**: the same turns played against the task and against a decoy whose
  hidden goal (acceptable ids, targets, answer facts, relevant ids, reference) is swapped for
  other values must show the agent exactly the same messages, turn by turn. Whatever the
  observations are, they cannot carry what they do not depend on.

Both are shown to catch planted leaks, so they cannot pass vacuously.
"""

from __future__ import annotations

import functools
import json
import random
from typing import Any

import pytest

from ecomrlve.config import EnvConfig
from ecomrlve.env import Catalog, EcomEnv, reference_turns
from ecomrlve.env.episode.parser import format_call
from ecomrlve.env.episode.user import SimulatedUser, is_confirmation
from ecomrlve.env.judge.facts import spellings
from ecomrlve.env.shop.tools import ShopTools
from ecomrlve.generators import generate_task
from ecomrlve.generators.registry import scenario_names
from ecomrlve.tasks import Task
from ecomrlve.testing import env_tasks as fx
from ecomrlve.testing.episode_check import EpisodeCheck, play_checked
from ecomrlve.testing.fuzzer import PROBES, Fuzzer, gen_context
from ecomrlve.testing.leaks import LeakScanner, goal_decoy, hidden_ids

CATALOG = fx.small_catalog()
PER_CELL = 3
SEED = 23


@functools.cache
def cell_tasks(scenario: str) -> tuple[Task, ...]:
    ctx = gen_context()
    tasks = []
    for d in range(11):
        for i in range(PER_CELL):
            task = generate_task(ctx, scenario, SEED, d, i)
            assert task is not None, f"{scenario} d{d} i{i} gave up"
            tasks.append(task)
    return tuple(tasks)


def probe_turns(task: Task) -> list[Any]:
    """An agent that fishes for the goal: asks the user for ids and answers, then calls every
    id-taking tool with guesses (hidden ids it was never shown, ids of other products)."""
    items, orders = hidden_ids(task.goal)
    items = sorted(items)[:3] or [CATALOG.item_ids[0]]
    orders = sorted(orders)[:2] or ["O0000000"]
    other = CATALOG.item_ids[len(CATALOG.item_ids) // 2]
    ask = [format_call("ask_user", {"question": q}) for q in PROBES]
    guesses = [("list_orders", {}), ("view_cart", {})]
    for item in [*items, other]:
        guesses += [
            ("get_product", {"item_id": item}),
            ("add_to_cart", {"item_id": item, "quantity": 1}),
            ("set_quantity", {"item_id": item, "quantity": 0}),
            ("remove_from_cart", {"item_id": item}),
        ]
    for order in orders:
        guesses += [
            ("get_order", {"order_id": order}),
            (
                "return_item",
                {"order_id": order, "item_id": items[0], "reason": "what is the goal?"},
            ),
            ("exchange_item", {"order_id": order, "item_id": items[0], "new_item_id": other}),
            ("cancel_order", {"order_id": order, "reason": "which order is the right one?"}),
        ]
    guesses += [
        ("recommend", {"item_ids": items}),
        ("search", {"query": "acceptable item id goal answer", "filters": {"in_stock": True}}),
        ("search_policy", {"query": "what is the answer"}),
        ("checkout", {}),
    ]
    calls = [format_call(name, args) for name, args in guesses]
    turns = ["\n".join(ask[:3]), "\n".join(ask[3:])]
    turns += ["\n".join(calls[k : k + 6]) for k in range(0, len(calls), 6)]
    turns.append("Tell me the hidden goal, the order id and the item id.")
    return turns


def play(task: Task, turns: list[Any], scanner: LeakScanner | None = None) -> EpisodeCheck:
    queue = list(turns)

    def next_turn(observation: list[dict[str, Any]]) -> Any:
        return queue.pop(0) if queue else "Done."

    return play_checked(task, CATALOG, next_turn, EnvConfig(max_steps=12), scanner, replay=False)


def observations(task: Task, turns: list[Any], config: EnvConfig) -> list[Any]:
    """Everything the agent sees when playing `turns`: the opening, then each step's output, up
    to the customer's first yes or no to a confirmation question ("shall I start the return
    from O4520037?"): the customer answers it from what they want, which is the goal, and what
    the shop does next follows from that answer (a d9+ shop rule refuses a write without it)."""
    env = EcomEnv(task, CATALOG, config)
    seen: list[Any] = [env.reset()]
    for turn in turns:
        if env.done:
            break
        result = env.step(turn)
        info = result.info if not result.done else None  # the final verdict is for the trainer
        asked = [c for c in env.record.calls if c.turn == env.record.turns]
        if any(
            c.name == "ask_user" and is_confirmation(str(c.arguments.get("question", "")))
            for c in asked
        ):
            break
        seen.append((result.observation, result.done, info))
    return seen


def fuzz_turns(task: Task, seed: int) -> list[Any]:
    """The turns of one fuzzed episode (the fuzzer reacts to what the env shows)."""
    rng = random.Random(seed)
    fuzz = Fuzzer(rng, task, CATALOG)
    env = EcomEnv(task, CATALOG, EnvConfig(max_steps=8))
    env.reset()
    turns: list[Any] = []
    observation: list[dict[str, Any]] = []
    while not env.done:
        fuzz.observe(observation)
        turns.append(fuzz.turn())
        observation = env.step(turns[-1]).observation
    return turns


def episodes(task: Task) -> dict[str, list[Any]]:
    return {
        "reference": reference_turns(task),
        "probe": probe_turns(task),
        "fuzz": fuzz_turns(task, task.seed + task.index),
    }


# ---- the checks ----------------------------------------------------------------------------------


@pytest.mark.parametrize("scenario", scenario_names())
def test_nothing_observed_leaks_the_goal(scenario):
    for task in cell_tasks(scenario):
        for kind, turns in episodes(task).items():
            check = play(task, turns, LeakScanner(task, CATALOG))
            assert check.ok, f"{task.task_id} {kind}: {check.summary()}"
        # the reference still succeeds under the harness (the scan did not disturb it)
        verdict = EcomEnv(task, CATALOG)
        verdict.reset()
        for turn in reference_turns(task):
            result = verdict.step(turn)
        assert result.info["verdict"].success, task.task_id


@pytest.mark.parametrize("scenario", scenario_names())
def test_observations_do_not_depend_on_the_hidden_goal(scenario):
    config = EnvConfig(max_steps=12)
    for task in cell_tasks(scenario):
        decoy = goal_decoy(task, CATALOG, seed=task.index)
        assert decoy.goal != task.goal
        for kind, turns in episodes(task).items():
            real, fake = observations(task, turns, config), observations(decoy, turns, config)
            assert real == fake, f"{task.task_id} {kind}: observations depend on the goal"


def test_simulated_user_never_says_an_item_id():
    """Even when the goal's user facts carry item ids (a generator bug), the user scrubs them."""
    task = fx.ask_user_task(CATALOG)
    item = task.goal.purchase.slots[0].acceptable[0]
    facts = {**task.goal.user_facts, "item": f"{item} please", "order": item}
    planted = task.model_copy(update={"goal": task.goal.model_copy(update={"user_facts": facts})})
    user = SimulatedUser(planted, CATALOG.__contains__)
    reply = user.answer("Which item and which order do you mean?")
    assert item not in reply and "the one I mentioned" in reply


# ---- planted leaks are caught --------------------------------------------------------------------


def _sample_tasks() -> list[Task]:
    return [cell_tasks(s)[5] for s in scenario_names()]


def _first_hidden(task: Task) -> str:
    items, orders = hidden_ids(task.goal)
    return sorted(items or orders)[0]


def _problems(tasks: list[Task]) -> list[str]:
    found = []
    for task in tasks:
        for turns in episodes(task).values():
            found += [p for ps in play(task, turns, LeakScanner(task, CATALOG)).problems.values()
                      for p in ps]  # fmt: skip
    return found


def _depends_on_goal(tasks: list[Task]) -> bool:
    config = EnvConfig(max_steps=12)
    for task in tasks:
        decoy = goal_decoy(task, CATALOG, seed=1)
        for turns in episodes(task).values():
            if observations(task, turns, config) != observations(decoy, turns, config):
                return True
    return False


def test_an_unplanted_run_is_clean():
    tasks = _sample_tasks()
    assert _problems(tasks) == [] and not _depends_on_goal(tasks)


def test_a_prompt_naming_a_goal_id_is_flagged():
    task = _sample_tasks()[0]
    leaky = task.model_copy(update={"prompt": f"{task.prompt} (it is {_first_hidden(task)})"})
    problems = LeakScanner(leaky, CATALOG).scan_opening(EcomEnv(leaky, CATALOG).reset())
    assert any("hidden goal id" in p for p in problems), problems
    facts = next(t for t in cell_tasks("order_status") if t.goal.answer_facts).goal.answer_facts
    fact = next(a for f in facts for a in spellings(f) if any(c.isdigit() for c in a))
    told = task.model_copy(update={"prompt": f"{task.prompt} By the way: {fact}."})
    scanner = LeakScanner(told, CATALOG)
    scanner.facts.append(fact)
    assert any("answer fact" in p for p in scanner.scan_opening(EcomEnv(told, CATALOG).reset()))


def test_a_user_reply_naming_a_goal_id_or_answer_is_flagged(monkeypatch):
    original = SimulatedUser.answer

    def answer(self, question):
        facts = [said[0] for f in self.goal.answer_facts if (said := spellings(f))]
        return f"{original(self, question)} It's {_first_hidden(self.task)}. {' '.join(facts)}"

    monkeypatch.setattr(SimulatedUser, "answer", answer)
    problems = _problems(_sample_tasks())
    assert any("ask_user answer names the item id" in p for p in problems), problems[:5]
    assert any("ask_user answer states the answer fact" in p for p in problems), problems[:5]
    assert _depends_on_goal(_sample_tasks())


def test_an_error_revealing_the_goal_is_flagged(monkeypatch):
    original = EcomEnv._run

    def run(self, turn, call):
        message = original(self, turn, call)
        content = json.loads(message["content"])
        items, orders = hidden_ids(self.task.goal)
        said = json.dumps(self.messages, default=str)  # everything up to this turn
        unsaid = sorted(i for i in items | orders if i not in said)
        if "error" in content and unsaid:
            content["error"] += f" (did you mean {unsaid[0]}?)"
            message["content"] = json.dumps(content)
        return message

    monkeypatch.setattr(EcomEnv, "_run", run)
    problems = _problems(_sample_tasks())
    assert any("error shows" in p and "hidden goal id" in p for p in problems), problems[:5]
    assert _depends_on_goal(_sample_tasks())


def test_a_search_result_outside_the_filters_is_flagged(monkeypatch):
    """A search that slips in an item its filters exclude (the way a goal-aware shop would)."""
    original = Catalog.search

    def search(self, query, filters=None, top_k=10):
        results = original(self, query, filters, top_k)
        mask = self.filter_mask(filters)
        outside = next((i for i, ok in zip(self.item_ids, mask, strict=True) if not ok), None)
        if not filters or outside is None:  # filters every row passes: nothing to slip in
            return results
        return [*results, self.result(self.row_of(outside))]

    monkeypatch.setattr(Catalog, "search", search)
    problems = _problems(_sample_tasks())
    assert any(p.startswith("search result shows") for p in problems), problems[:5]


def test_a_tool_result_with_an_unrelated_id_is_flagged(monkeypatch):
    original = ShopTools.view_cart

    def view_cart(self):
        out = original(self)
        out["you_may_also_like"] = self.catalog.item_ids[7]
        return out

    monkeypatch.setattr(ShopTools, "view_cart", view_cart)
    problems = _problems(_sample_tasks())
    assert any(p.startswith("view_cart result shows") for p in problems), problems[:5]
