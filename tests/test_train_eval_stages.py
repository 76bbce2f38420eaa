"""Which held-out evaluations a run makes: `training.eval.before_train` (verl's
`val_before_train`) skips the starting model's, for a run that continues from a checkpoint
whose evaluation is already in the store."""

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
