"""Whole-episode fuzzing of the env over all nine scenarios (issue 8, part 1).

The parser and tool tests fuzz single turns on one hand-made world; here whole episodes of
random and adversarial turns (broken JSON, wrong types, huge/negative/float/NaN/bool numbers,
unknown tools, unicode and lone surrogates, injected `</tool_call>` / fake `<tool_response>`
text, SQL and regex metacharacters, OpenAI dicts of the wrong shape, 10 MB arguments) run on
generated tasks of every scenario, and after every turn the invariants of
`ecomrlve.testing.episode_check.play_checked` must hold: `step` never raises, a refused call leaves
`state_hash()` unchanged, the reward stays in `EnvConfig.reward_range`, the episode is over by
the turn limit, `verify` replays it to the same verdict, nothing observed leaks the goal.
`benchmarks/fuzz_env.py` runs the same harness for 10,000+ episodes.
"""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ecomrlve.config import EnvConfig
from ecomrlve.env import EcomEnv, verify
from ecomrlve.env.episode.environment import turn_limit
from ecomrlve.env.episode.parser import parse_turn
from ecomrlve.env.shop.tools import TOOL_SPECS, ShopTools
from ecomrlve.generators.registry import scenario_names
from ecomrlve.testing import env_tasks as fx
from ecomrlve.testing.episode_check import fuzz_episode
from ecomrlve.testing.fuzzer import HUGE, task_pool

POOL = task_pool()
CATALOG = fx.small_catalog()
# every code point, lone surrogates and control characters included
ANY_TEXT = st.text(st.characters(codec=None, exclude_categories=()), max_size=40)


def test_the_pool_covers_every_scenario():
    assert {task.scenario for task in POOL} == set(scenario_names())


@pytest.mark.slow  # a long hypothesis run
@settings(max_examples=600, deadline=None)
@given(
    rng=st.randoms(use_true_random=False),
    task_index=st.integers(0, len(POOL) - 1),
    max_steps=st.sampled_from([1, 2, 4, 10]),
    binary=st.booleans(),
    payloads=st.lists(ANY_TEXT, max_size=3),
)
def test_fuzzed_episodes_keep_every_invariant(rng, task_index, max_steps, binary, payloads):
    config = EnvConfig(max_steps=max_steps, binary_reward=binary)
    check = fuzz_episode(POOL[task_index], CATALOG, rng, config, extra_texts=payloads)
    assert check.ok, check.summary()
    assert 1 <= check.turns <= turn_limit(POOL[task_index], config)


@settings(max_examples=60, deadline=None)
@given(rng=st.randoms(use_true_random=False), task_index=st.integers(0, len(POOL) - 1))
def test_episodes_that_never_answer_stop_at_the_turn_limit(rng, task_index):
    """No final answer ever (final_rate 0): the env must still end the episode itself."""
    task = POOL[task_index]
    config = EnvConfig(max_steps=3)
    check = fuzz_episode(task, CATALOG, rng, config, final_rate=0.0)
    assert check.ok, check.summary()
    env = EcomEnv(task, CATALOG, config)
    env.reset()
    for turn in range(1, env.max_turns + 1):
        result = env.step('<tool_call>{"name": "view_cart", "arguments": {}}</tool_call>')
        assert result.done == (turn == env.max_turns)
    assert result.info["truncated"] and "verdict" in result.info


@pytest.mark.parametrize("name", [n for n, s in TOOL_SPECS.items() if s.params])
def test_ten_megabyte_arguments_are_refused_without_echo(name):
    """Every text argument of 10 MB: a short format error, no state change, no 10 MB echo."""
    task = fx.world_task(CATALOG)
    env = EcomEnv(task, CATALOG)
    env.reset()
    huge = "</tool_call>" + "é" * HUGE
    before = env.state_hash()
    for param in TOOL_SPECS[name].params:
        arguments = {"item_ids": [huge]} if param == "item_ids" else {param: huge}
        if param == "filters":
            arguments = {"query": "boots", "filters": {"brand": huge}}
        result = env.step({"tool_calls": [{"name": name, "arguments": arguments}]})
        (message,) = result.observation
        assert len(message["content"]) < 1_000, (name, param)
        assert "error" in json.loads(message["content"])
        assert env.state_hash() == before
    assert not env.done


REGRESSIONS = {
    # an int past 4,300 digits made json / str() raise ValueError out of env.step
    "huge int in text": '<tool_call>{"name": "add_to_cart", "arguments": {"item_id": "I0000001", '
    '"quantity": ' + "9" * 5000 + "}}</tool_call>",
    "huge int in a filter": '<tool_call>{"name": "search", "arguments": {"query": "x", '
    '"filters": {"min_price": ' + "9" * 5000 + "}}}</tool_call>",
    "huge int as a JSON string": {
        "tool_calls": [{"name": "set_quantity", "arguments": '{"quantity": ' + "9" * 5000 + "}"}]
    },
    "huge python int": {
        "tool_calls": [{"name": "add_to_cart", "arguments": {"item_id": "x", "quantity": 10**5000}}]
    },
    "huge python int in top_k": {
        "tool_calls": [{"name": "search", "arguments": {"query": "x", "top_k": 10**5000}}]
    },
    "huge python int as in_stock": {
        "tool_calls": [
            {"name": "search", "arguments": {"query": "x", "filters": {"in_stock": 10**5000}}}
        ]
    },
    # content parts whose "text" is not a string raised TypeError
    "content part with a number": {"content": [{"text": "hi"}, {"text": 5}], "tool_calls": [{}]},
    # these two ended the episode as if they were final answers
    "nested too deeply": "<tool_call>" + "[" * 100_000 + "]" * 100_000 + "</tool_call>",
    "tool_calls not a list": {"content": None, "tool_calls": {"name": "view_cart"}},
}


@pytest.mark.parametrize("label", REGRESSIONS)
def test_regressions_found_by_the_fuzzer(label):
    task = fx.world_task(CATALOG)
    env = EcomEnv(task, CATALOG)
    env.reset()
    before = env.state_hash()
    result = env.step(REGRESSIONS[label])
    assert not result.done, "a tool-call attempt must not end the episode"
    assert result.observation and all("error" in m["content"] for m in result.observation)
    assert env.state_hash() == before
    assert parse_turn(REGRESSIONS[label]).errors


def test_odd_roles_replay_like_the_live_episode():
    """The verifier drops tool/user/system messages of a trajectory file, nothing else: a turn
    of another role is a format error in the live episode and in the replay alike."""
    task = fx.cart_task(CATALOG)
    for role in (None, 3, "bot"):
        turns = [{"role": role, "content": "x"}, *fx.reference(task)]
        env = EcomEnv(task, CATALOG)
        env.reset()
        played = 0
        while not env.done:
            result = env.step(turns[played])
            played += 1
        replayed = verify(task, turns, CATALOG)
        live = result.info["verdict"]
        assert (replayed.reward, replayed.components) == (live.reward, live.components)
        assert replayed.components["format"] < 0


# ---- the harness is not vacuous: planted bugs are caught -------------------------------------


def _plant(monkeypatch: pytest.MonkeyPatch, bug: str) -> None:
    if bug == "exceptions":
        monkeypatch.setattr(ShopTools, "view_cart", lambda self: 1 / 0)
    elif bug == "state corruptions":
        original = ShopTools._row

        def row(self, item_id):  # mutates, then refuses
            self.state.cart["I0000001"] = 1
            return original(self, item_id)

        monkeypatch.setattr(ShopTools, "_row", row)
    elif bug == "reward-range violations":
        monkeypatch.setattr("ecomrlve.env.judge.verifier.total_reward", lambda *a, **k: 99.0)
    elif bug == "non-terminations":
        original_step = EcomEnv.step

        def step(self, action):  # never lets the episode end
            result = original_step(self, action)
            self.done = result.done = False
            return result

        monkeypatch.setattr(EcomEnv, "step", step)
    elif bug == "replay mismatches":
        calls = iter(range(10**6))
        original = EcomEnv._judge

        def judge(self):
            verdict = original(self)
            verdict.reward = verdict.components["success"] + next(calls) % 2 * 0.5
            return verdict

        monkeypatch.setattr(EcomEnv, "_judge", judge)


@pytest.mark.parametrize(
    "bug",
    [
        "exceptions",
        "state corruptions",
        "reward-range violations",
        "non-terminations",
        "replay mismatches",
    ],
)
def test_the_harness_catches_planted_bugs(monkeypatch, bug):
    _plant(monkeypatch, bug)
    caught = 0
    for seed in range(40):
        task = POOL[seed % len(POOL)]
        check = fuzz_episode(task, CATALOG, random.Random(seed), EnvConfig(max_steps=4))
        caught += bool(check.problems[bug])
    assert caught > 0, f"no episode flagged the planted {bug}"
