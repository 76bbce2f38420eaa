"""Adaptive difficulty windows, the curriculum sampler, shard reading, the held-out split."""

from __future__ import annotations

import json

import polars as pl
import pytest

from ecomrlve.testing.training import train_store_dir
from ecomrlve.train.curriculum import (
    AdaptiveDifficulty,
    CurriculumError,
    CurriculumSampler,
    read_curriculum,
    read_store_tasks,
    split_heldout,
)


@pytest.fixture(scope="module")
def store():
    return train_store_dir()


def test_window_moves_up_at_ninety_percent_over_32_episodes():
    adaptive = AdaptiveDifficulty({"cart": list(range(11))}, width=4, threshold=0.9, episodes=32)
    assert adaptive.window("cart") == (0, 0)
    # 28 of 32 successes (0.875) at h is not enough; the tally restarts
    for i in range(32):
        assert not adaptive.record("cart", 0, i >= 4)
    assert adaptive.window("cart") == (0, 0)
    # episodes below h do not count towards h's tally
    for _ in range(40):
        adaptive.record("other", 0, True)
    # 29 of 32 (0.906) moves h up by one
    moved = [adaptive.record("cart", 0, i >= 3) for i in range(32)]
    assert moved == [False] * 31 + [True]
    assert adaptive.window("cart") == (0, 1)
    for h in range(1, 8):
        for _ in range(32):
            adaptive.record("cart", h, True)
    low, high = adaptive.window("cart")
    assert (low, high) == (5, 8) and high - low + 1 <= 4  # at most 4 wide
    assert adaptive.record("cart", 5, True) is False  # only h counts
    restored = AdaptiveDifficulty.from_json(json.loads(json.dumps(adaptive.to_json())))
    assert restored.window("cart") == (5, 8)
    assert restored.windows["cart"] == adaptive.windows["cart"]


def test_window_stops_at_the_highest_level_and_skips_gaps():
    adaptive = AdaptiveDifficulty({"policy": [0, 2, 5]}, width=2, threshold=0.5, episodes=2)
    for _ in range(2):
        adaptive.record("policy", 0, True)
    assert adaptive.window("policy") == (0, 2)
    for _ in range(2):
        adaptive.record("policy", 2, True)
    assert adaptive.window("policy") == (2, 5)
    for _ in range(4):
        adaptive.record("policy", 5, True)
    assert adaptive.window("policy") == (2, 5)
    assert adaptive.choices("policy") == [2, 5]


def test_sampler_follows_the_stream_and_resumes_exactly(store):
    tasks = read_store_tasks(store)
    adaptive = AdaptiveDifficulty(
        CurriculumSampler.levels_of(tasks), width=4, threshold=0.9, episodes=4
    )
    sampler = CurriculumSampler(tasks, seed=3, adaptive=adaptive)
    first = sampler.next_tasks(10)
    # the stream decides the scenario, the window (still at the lowest level) the difficulty
    assert [t.scenario for t in first] == tasks["scenario"].head(10).to_list()
    assert all(t.difficulty == adaptive.window(t.scenario)[1] for t in first)
    state = json.loads(sampler.to_json())
    more = [t.task_id for t in sampler.next_tasks(25)]
    again = CurriculumSampler(tasks, seed=3)
    again.load_state_dict(state)
    assert [t.task_id for t in again.next_tasks(25)] == more
    plain = CurriculumSampler(tasks, seed=3)
    ids = [t.task_id for t in plain.next_tasks(tasks.height + 2)]
    assert ids[: tasks.height] == tasks["task_id"].to_list()  # curriculum order, then wrap
    assert ids[tasks.height :] == tasks["task_id"].head(2).to_list()


def test_a_shuffled_stream_visits_every_task_once_per_pass_in_a_seeded_order(store):
    tasks = read_store_tasks(store)
    n = tasks.height
    sampler = CurriculumSampler(tasks, seed=3, shuffle=True)
    ids = [t.task_id for t in sampler.next_tasks(2 * n + 5)]
    first, second = ids[:n], ids[n : 2 * n]
    assert sorted(first) == sorted(second) == sorted(tasks["task_id"].to_list())  # each pass
    assert first != tasks["task_id"].to_list() and first != second  # a new order each pass
    same = CurriculumSampler(tasks, seed=3, shuffle=True)
    assert [t.task_id for t in same.next_tasks(2 * n + 5)] == ids  # the seed decides it
    other = CurriculumSampler(tasks, seed=4, shuffle=True)
    assert [t.task_id for t in other.next_tasks(n)] != first
    stopped = CurriculumSampler(tasks, seed=3, shuffle=True)
    stopped.next_tasks(n + 2)
    resumed = CurriculumSampler(tasks, seed=3, shuffle=True)  # resumes mid-pass exactly
    resumed.load_state_dict(json.loads(stopped.to_json()))
    assert [t.task_id for t in resumed.next_tasks(3)] == ids[n + 2 : n + 5]


def test_curriculum_shards_are_read_in_manifest_order(store):
    from ecomrlve.flows.shards import build_curriculum

    result = build_curriculum(store, "train_test", shard_size=20)
    frame = read_curriculum(store, "train_test")
    manifest = json.loads((result.path / "manifest.json").read_text())
    expected = pl.concat([pl.read_parquet(result.path / s["file"]) for s in manifest["shards"]])[
        "task_id"
    ]
    assert frame["task_id"].to_list() == expected.to_list()
    assert frame.height == result.tasks and "messages" in frame.columns
    # the flows order is easy to hard
    assert frame["difficulty"].to_list() == sorted(frame["difficulty"].to_list())
    with pytest.raises(CurriculumError, match="no curriculum 'missing'"):
        read_curriculum(store, "missing")


def test_bad_where_is_one_clear_error(store):
    with pytest.raises(CurriculumError, match="cannot select tasks"):
        read_store_tasks(store, "no_such_column = 1")
    with pytest.raises(CurriculumError, match="one SQL predicate"):
        read_store_tasks(store, "1=1; DROP TABLE x")


def test_heldout_split_is_disjoint_deterministic_and_spread(store):
    tasks = read_store_tasks(store)
    train, heldout = split_heldout(tasks, 16, seed=0)
    assert heldout.height == 16 and train.height == tasks.height - 16
    assert not set(train["task_id"]) & set(heldout["task_id"])
    shuffled = tasks.sample(fraction=1.0, shuffle=True, seed=1)
    _, heldout_again = split_heldout(shuffled, 16, seed=0)
    assert sorted(heldout_again["task_id"]) == sorted(heldout["task_id"])
    per_scenario = heldout.group_by("scenario").len()["len"]
    assert per_scenario.max() - per_scenario.min() <= 1  # round-robin over scenarios
    with pytest.raises(CurriculumError, match=r"eval\.tasks"):
        split_heldout(tasks, tasks.height, seed=0)
