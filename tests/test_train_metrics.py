"""pass@k / pass^k estimators on constructed outcomes, and the eval table."""

from __future__ import annotations

import itertools
from math import comb

import numpy as np
import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ecomrlve.flows.pipeline import held_out_text
from ecomrlve.train import metrics
from ecomrlve.train.metrics import (
    overall,
    pass_at_k,
    pass_hat_k,
    stage_intervals,
    summarize,
    task_bootstrap,
)


def test_hand_computed_values():
    assert pass_at_k(4, 2, 1) == pytest.approx(0.5)
    assert pass_hat_k(4, 2, 1) == pytest.approx(0.5)
    # 4 samples, 2 successes: all 2 drawn succeed in 1 of C(4,2)=6 pairs; at least one in 5
    assert pass_hat_k(4, 2, 2) == pytest.approx(1 / 6)
    assert pass_at_k(4, 2, 2) == pytest.approx(5 / 6)
    assert pass_hat_k(4, 3, 4) == 0.0 and pass_hat_k(4, 4, 4) == 1.0
    assert pass_at_k(4, 0, 4) == 0.0 and pass_at_k(4, 1, 4) == 1.0
    assert pass_hat_k(8, 6, 3) == pytest.approx(20 / 56)


@given(n=st.integers(1, 10), data=st.data())
def test_estimators_equal_exhaustive_subset_average(n, data):
    """Unbiased: the average over all k-subsets of the n outcomes."""
    c = data.draw(st.integers(0, n))
    k = data.draw(st.integers(1, n))
    outcomes = [True] * c + [False] * (n - c)
    subsets = list(itertools.combinations(outcomes, k))
    assert pass_hat_k(n, c, k) == pytest.approx(sum(all(s) for s in subsets) / len(subsets))
    assert pass_at_k(n, c, k) == pytest.approx(sum(any(s) for s in subsets) / len(subsets))
    assert len(subsets) == comb(n, k)


def test_bad_arguments():
    with pytest.raises(ValueError, match="k must be"):
        pass_hat_k(3, 1, 4)
    with pytest.raises(ValueError, match="successes"):
        pass_at_k(3, 4, 1)


def _episodes(outcomes: dict[tuple[str, str, int, int], list[bool]]) -> pl.DataFrame:
    rows = []
    for (task_id, scenario, difficulty, min_steps), results in outcomes.items():
        for sample, success in enumerate(results):
            rows.append(
                {
                    "task_id": task_id,
                    "scenario": scenario,
                    "difficulty": difficulty,
                    "min_steps": min_steps,
                    "sample": sample,
                    "success": success,
                    "reward": 1.0 if success else 0.0,
                }
            )
    return pl.DataFrame(rows)


def test_table_by_scenario_difficulty_and_step_band():
    episodes = _episodes(
        {
            ("a", "cart", 1, 3): [True, True, True, True],  # pass^4 = 1
            ("b", "cart", 1, 4): [True, True, False, False],  # pass^4 = 0, pass@1 = .5
            ("c", "cart", 1, 7): [True, False, False, False],
            ("d", "policy", 0, 1): [False, False, False, False],
        }
    )
    table = summarize(episodes, k=4)
    rows = {(r["scenario"], r["difficulty"], r["step_band"]): r for r in table.to_dicts()}
    assert set(rows) == {("cart", 1, "3-5"), ("cart", 1, "6-8"), ("policy", 0, "0-2")}
    band = rows[("cart", 1, "3-5")]
    assert band["tasks"] == 2 and band["samples"] == 8
    assert band["pass_at_1"] == pytest.approx(0.75)
    assert band["pass_hat_k"] == pytest.approx(0.5)
    assert rows[("cart", 1, "6-8")]["pass_at_1"] == pytest.approx(0.25)
    assert rows[("policy", 0, "0-2")]["pass_hat_k"] == 0.0
    total = overall(episodes, k=2)
    # task means: pass@1 (1 + .5 + .25 + 0)/4; pass^2 (1 + 1/6 + 0 + 0)/4
    assert total["pass_at_1"] == pytest.approx(0.4375)
    assert total["pass_hat_k"] == pytest.approx((1 + 1 / 6) / 4)


def test_too_few_samples_for_k():
    episodes = _episodes({("a", "cart", 1, 3): [True, False]})
    with pytest.raises(ValueError, match="at least 3 samples"):
        summarize(episodes, k=3)


def _tasks(values: dict[str, float]) -> pl.DataFrame:
    return pl.DataFrame({"task_id": list(values), "pass_at_1": list(values.values())})


def test_task_bootstrap_is_seeded_and_brackets_the_mean():
    values = [0.0, 0.25, 0.5, 1.0, 1.0, 0.75, 0.0, 0.5]
    low, high = task_bootstrap(values, seed=3)
    assert low <= sum(values) / len(values) <= high
    assert (low, high) == task_bootstrap(values, seed=3)  # same seed, same interval
    assert task_bootstrap([0.5] * 5, seed=0) == (0.5, 0.5)


def test_paired_gain_keeps_each_tasks_two_outcomes_together():
    # every task gains exactly 0.25: a paired interval is a point, unpaired ones overlap widely
    before = {f"t{i}": v for i, v in enumerate([0.0, 0.25, 0.5, 0.0, 0.5, 0.25])}
    after = {k: v + 0.25 for k, v in reversed(before.items())}  # row order must not matter
    cis, gains = stage_intervals({"sft": _tasks(before), "final": _tasks(after)}, seed=0)
    assert gains["final-sft"]["diff"] == pytest.approx(0.25)
    assert gains["final-sft"]["ci_low"] == pytest.approx(0.25)
    assert gains["final-sft"]["ci_high"] == pytest.approx(0.25)
    assert cis["final"]["ci_low"] < cis["sft"]["ci_high"]
    text = held_out_text(
        {
            "algorithm": "dapo",
            "held_out": {
                stage: {"pass_at_1": sum(v.values()) / len(v), **cis[stage]}
                for stage, v in (("sft", before), ("final", after))
            },
            "held_out_gain": gains,
        }
    )
    assert text.startswith("held-out pass@1 SFT 0.25 [") and "→ DAPO 0.50 [" in text
    assert text.endswith("DAPO − SFT +0.25 [+0.25, +0.25]")
    quarters = {"first": 0.3, "last": 0.45, "diff": 0.15, "ci_low": 0.05, "ci_high": 0.25}
    with_curve = held_out_text(
        {"algorithm": "dapo", "held_out_gain": gains, "rl_success_quarters": quarters}
    )
    assert with_curve.endswith(
        "training success first → last quarter 0.30 → 0.45 (+0.15 [+0.05, +0.25])"
    )


def test_the_statistics_read_only_columns_the_episode_tables_store() -> None:
    from ecomrlve.train.metrics import EPISODE_COLUMNS
    from ecomrlve.train.results import EPISODE_SCHEMA, ROLLOUT_SCHEMA

    assert set(EPISODE_COLUMNS) <= set(EPISODE_SCHEMA)
    assert set(EPISODE_COLUMNS) <= set(ROLLOUT_SCHEMA)


def _rollouts(success_by_step: list[float], groups: int = 8, samples: int = 8, seed: int = 0):
    """train_rollouts-like rows: `groups` x `samples` episodes per step, success drawn at the
    step's rate."""
    rng = np.random.default_rng(seed)
    rows = [
        (step, group, bool(rng.random() < rate))
        for step, rate in enumerate(success_by_step, start=1)
        for group in range(groups)
        for _ in range(samples)
    ]
    return pl.DataFrame(rows, schema=["step", "group", "success"], orient="row")


def test_quarter_gain_sees_a_rise_and_not_noise():
    rising = metrics.quarter_gain(_rollouts(list(np.linspace(0.2, 0.6, 40))), seed=0)
    assert rising["first"] < rising["last"] and rising["ci_low"] > 0
    assert rising["steps_per_quarter"] == 10
    flat = metrics.quarter_gain(_rollouts([0.4] * 40, seed=1), seed=0)
    assert flat["ci_low"] < 0 < flat["ci_high"]
    assert metrics.quarter_gain(_rollouts([0.4] * 3), seed=0) is None  # no quarters yet
    again = metrics.quarter_gain(_rollouts(list(np.linspace(0.2, 0.6, 40))), seed=0)
    assert again == rising  # seeded bootstrap


def test_quarter_gain_compares_quarters_on_one_scenario_mix():
    """An easy scenario drawn more often late is not learning; a rise within every scenario is."""
    rng = np.random.default_rng(3)
    rates = {"cancel": 0.6, "return": 0.2}

    def rows(rise: float) -> pl.DataFrame:
        out = []
        for step in range(1, 41):
            easy_share = 0.2 if step <= 20 else 0.8  # the late steps draw mostly cancel
            for group in range(16):
                scenario = "cancel" if rng.random() < easy_share else "return"
                rate = rates[scenario] + rise * (step - 1) / 39
                out += [(step, group, scenario, bool(rng.random() < rate)) for _ in range(8)]
        return pl.DataFrame(out, schema=["step", "group", "scenario", "success"], orient="row")

    mix_only = rows(rise=0.0)
    naive = metrics.quarter_gain(mix_only.drop("scenario"), seed=0)
    assert naive["ci_low"] > 0.1  # read without the scenarios, the mix looks like learning
    adjusted = metrics.quarter_gain(mix_only, seed=0)
    assert adjusted["ci_low"] < 0 < adjusted["ci_high"] and adjusted["scenarios"] == 2
    learning = metrics.quarter_gain(rows(rise=0.2), seed=0)
    assert learning["ci_low"] > 0
