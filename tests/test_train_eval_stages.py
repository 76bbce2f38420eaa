"""Which held-out evaluations a run makes: `training.eval.before_train` (verl's
`val_before_train`) skips the starting model's, for a run that continues from a checkpoint
whose evaluation is already in the store; `training.eval.split_seed` pins the held-out split,
so a run continuing from a checkpoint with another seed is not evaluated on tasks the
checkpoint was trained on (unset, a run from an earlier run's model keeps that run's split);
`training.rollout.reserved_tasks` keeps tasks from SFT for RL."""

from __future__ import annotations

import copy

import pytest
import yaml

from ecomrlve.config import config_from_dict
from ecomrlve.flows.pipeline import held_out_text
from ecomrlve.testing.env_tasks import sql_rows
from ecomrlve.testing.training import TINY_RUN, train_store_dir


def test_before_train_is_on_by_default_and_loads_flat_or_nested() -> None:
    assert config_from_dict({}).training.eval.before_train is True
    flat = config_from_dict({"training": {"eval_before_train": False}})
    nested = config_from_dict({"training": {"eval": {"before_train": False}}})
    assert flat.training.eval.before_train is nested.training.eval.before_train is False


def _held_out(tmp_path, name: str, model: str | None = None, **training) -> set[str]:
    from ecomrlve.train.run import train_from_config

    raw = copy.deepcopy(TINY_RUN)
    raw["training"].update(total_steps=0, sft_epochs=0, **training)
    if model is not None:
        raw["agent"]["model"] = model
    data = train_store_dir()
    summary = train_from_config(config_from_dict(raw), data, tmp_path / name)
    rows = sql_rows(
        data, "SELECT DISTINCT task_id FROM eval_episodes WHERE run_id = ?", [summary.run_id]
    )
    return {task for (task,) in rows}


@pytest.mark.slow  # three tiny evaluations
def test_split_seed_pins_the_held_out_tasks_whatever_the_runs_seed(tmp_path) -> None:
    seed0 = _held_out(tmp_path, "a", seed=0)
    seed3 = _held_out(tmp_path, "b", seed=3)
    pinned = _held_out(tmp_path, "c", seed=3, eval_split_seed=0)
    assert seed3 != seed0  # the split follows the run's seed unless pinned
    assert pinned == seed0


@pytest.mark.slow  # three tiny evaluations
def test_a_run_from_an_earlier_runs_model_keeps_that_runs_split(tmp_path, caplog) -> None:
    seed0 = _held_out(tmp_path, "a", seed=0)  # its model/ sits beside config.yaml
    model = str(tmp_path / "a" / "model")
    inherited = _held_out(tmp_path, "b", seed=3, model=model)
    assert inherited == seed0  # not seed 3's split: those tasks may be ones "a" trained on
    # and recorded, so a third run from b's model keeps it too
    assert (
        config_from_dict(
            yaml.safe_load((tmp_path / "b" / "config.yaml").read_text())
        ).training.eval.split_seed
        == 0
    )
    with caplog.at_level("WARNING"):
        _held_out(tmp_path, "c", seed=3, eval_split_seed=3, model=model)
    assert "differs from the split (seed 0)" in caplog.text


@pytest.mark.slow  # a tiny RL run
def test_without_before_train_only_the_trained_model_is_evaluated(tmp_path) -> None:
    from ecomrlve.train.run import train_from_config

    raw = copy.deepcopy(TINY_RUN)
    raw["training"].update(total_steps=1, sft_epochs=0, eval_before_train=False)
    data = train_store_dir()
    summary = train_from_config(config_from_dict(raw), data, tmp_path / "run")

    assert list(summary.held_out) == ["final"]
    stages = sql_rows(
        data,
        "SELECT DISTINCT stage FROM eval_episodes WHERE run_id = ?",
        [summary.run_id],
    )
    assert stages == [("final",)]
    # the closing line names the one stage it has, and no gain (nothing to pair it with)
    text = held_out_text({"algorithm": "dapo", "held_out": summary.held_out})
    assert text.startswith("held-out pass@1 DAPO ") and "−" not in text


@pytest.mark.slow  # a tiny RL run
def test_base_samples_sets_the_starting_models_samples_only(tmp_path) -> None:
    """`eval.base_samples`: the demo plays its scratch base model once a task (it solves
    nothing); every later stage keeps `eval.samples`, and the stages still pair by task."""
    from ecomrlve.train.run import train_from_config

    raw = copy.deepcopy(TINY_RUN)
    raw["training"].update(total_steps=1, sft_epochs=0, eval_samples=2, eval_base_samples=1)
    data = train_store_dir()
    summary = train_from_config(config_from_dict(raw), data, tmp_path / "run")

    per_task = sql_rows(
        data,
        "SELECT stage, min(n), max(n) FROM (SELECT stage, task_id, count(*) AS n "
        "FROM eval_episodes WHERE run_id = ? GROUP BY ALL) GROUP BY stage ORDER BY stage",
        [summary.run_id],
    )
    assert per_task == [("base", 1, 1), ("final", 2, 2)]
    assert summary.held_out_gain  # base and final still pair task by task


# ---------------------------------------------------------------------------------------------
# training.rollout.reserved_tasks: tasks SFT never sees, which RL samples
# ---------------------------------------------------------------------------------------------


def test_reserved_tasks_split_the_training_tasks_between_sft_and_rl() -> None:
    import polars as pl

    from ecomrlve.train.run import _reserve_rl_tasks

    scenarios = ["cancel", "return", "order_status"]
    train = pl.DataFrame(
        {"task_id": [f"T{i}" for i in range(60)], "scenario": [scenarios[i % 3] for i in range(60)]}
    )
    sft, rl = _reserve_rl_tasks(train, 12, seed=0)
    assert rl.height == 12 and sft.height == 48
    assert set(sft["task_id"]).isdisjoint(rl["task_id"])
    assert set(sft["task_id"]) | set(rl["task_id"]) == set(train["task_id"])
    assert rl["scenario"].value_counts()["count"].to_list() == [4, 4, 4]  # round-robin
    assert _reserve_rl_tasks(train, 12, seed=0)[1].equals(rl)  # seeded
    assert _reserve_rl_tasks(train, 0, seed=0) == (train, train)  # off: both share all
    with pytest.raises(ValueError, match="reserved_tasks \\(60\\) must be smaller"):
        _reserve_rl_tasks(train, 60, seed=0)


def test_reserved_tasks_loads_flat_or_nested() -> None:
    flat = config_from_dict({"training": {"reserved_tasks": 5}})
    nested = config_from_dict({"training": {"rollout": {"reserved_tasks": 5}}})
    assert flat.training.rollout.reserved_tasks == nested.training.rollout.reserved_tasks == 5
    assert config_from_dict({}).training.rollout.reserved_tasks == 0


@pytest.mark.slow  # a tiny SFT + RL run
def test_rl_samples_only_the_reserved_tasks_and_sft_never_sees_them(tmp_path, monkeypatch) -> None:
    from ecomrlve.train import run as run_module

    referenced: list[str] = []  # the tasks SFT builds its references from

    def spy(tasks, *args, **kwargs):
        referenced.extend(t.task_id for t in tasks)
        return reference_data(tasks, *args, **kwargs)

    reference_data = run_module.reference_data
    monkeypatch.setattr(run_module, "reference_data", spy)
    raw = copy.deepcopy(TINY_RUN)
    raw["training"].update(total_steps=2, reserved_tasks=3, eval_before_train=False)
    data = train_store_dir()
    summary = run_module.train_from_config(config_from_dict(raw), data, tmp_path / "run")

    played = {
        task
        for (task,) in sql_rows(
            data, "SELECT DISTINCT task_id FROM train_rollouts WHERE run_id = ?", [summary.run_id]
        )
    }
    assert played and len(played) <= 3  # RL drew only from the three reserved tasks
    assert summary.rl_only_tasks == 3
    assert len(referenced) == summary.train_tasks - 3  # SFT: every other training task
    assert played.isdisjoint(referenced)
