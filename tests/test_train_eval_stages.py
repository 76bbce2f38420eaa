"""Which held-out evaluations a run makes: `training.eval.before_train` (verl's
`val_before_train`) skips the starting model's, for a run that continues from a checkpoint
whose evaluation is already in the store; `training.eval.split_seed` pins the held-out split,
so a run continuing from a checkpoint with another seed is not evaluated on tasks the
checkpoint was trained on."""

from __future__ import annotations

import copy

import pytest

from ecomrlve.config import config_from_dict
from ecomrlve.flows.pipeline import held_out_text
from ecomrlve.testing.env_tasks import sql_rows
from ecomrlve.testing.training import TINY_RUN, train_store_dir


def test_before_train_is_on_by_default_and_loads_flat_or_nested() -> None:
    assert config_from_dict({}).training.eval.before_train is True
    flat = config_from_dict({"training": {"eval_before_train": False}})
    nested = config_from_dict({"training": {"eval": {"before_train": False}}})
    assert flat.training.eval.before_train is nested.training.eval.before_train is False


def _held_out(tmp_path, name: str, **training) -> set[str]:
    from ecomrlve.train.run import train_from_config

    raw = copy.deepcopy(TINY_RUN)
    raw["training"].update(total_steps=0, sft_epochs=0, **training)
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
