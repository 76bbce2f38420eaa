"""Experiment tracking (`training.loggers`): a real tiny run through the CLI sends the same
metrics DuckDB records (RL steps, the SFT loss curve, held-out results) to TensorBoard event
files and an offline W&B run, read back here with each tool's own reader. No network:
WANDB_MODE=offline, WANDB_DIR in tmp."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from ecomrlve import store
from ecomrlve.cli import app
from ecomrlve.config import CPU_MICRO_BATCH_TOKENS, ConfigError, config_from_dict
from ecomrlve.testing.training import TINY_RUN, train_store_dir
from ecomrlve.train.tracking import check_loggers, scalars

TRACKED_RUN = {
    **TINY_RUN,
    "training": {
        **TINY_RUN["training"],
        "loggers": ["console", "duckdb", "tensorboard", "wandb"],
    },
}


@pytest.fixture(scope="module")
def tracked_run(tmp_path_factory):
    data = train_store_dir()
    folder = tmp_path_factory.mktemp("tracked_run")
    config = folder / "tracked.yaml"
    config.write_text(yaml.safe_dump(TRACKED_RUN))
    output, wandb_dir = folder / "run", folder / "wandb_dir"
    with pytest.MonkeyPatch.context() as env:
        for key, value in {
            "WANDB_MODE": "offline",
            "WANDB_DIR": str(wandb_dir),
            "WANDB_SILENT": "true",
            "WANDB_CONSOLE": "off",
        }.items():
            env.setenv(key, value)
        result = CliRunner().invoke(
            app, ["train", "--config", str(config), "--output", str(output), "--data", str(data)]
        )
    assert result.exit_code == 0, result.output
    con = store.connect(data, read_only=True)
    try:
        run_id = con.execute(
            # stored relative to the data folder (issue 31): "../run" here
            "SELECT run_id FROM train_runs WHERE output = ?",
            [store.data_relative(data, output)],
        ).fetchone()[0]
        steps = con.execute(
            "SELECT step, reward_mean, loss FROM train_steps WHERE run_id = ? ORDER BY step",
            [run_id],
        ).fetchall()
    finally:
        con.close()
    summary = json.loads((output / "summary.json").read_text())
    return output, wandb_dir, run_id, steps, summary


@pytest.mark.slow  # the module's tiny SFT + DAPO run on the CPU
def test_tensorboard_event_files_hold_the_runs_metrics(tracked_run) -> None:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    output, _, _, steps, summary = tracked_run
    events = EventAccumulator(str(output / "tensorboard"))
    events.Reload()
    tags = set(events.Tags()["scalars"])
    assert {"rl/reward_mean", "rl/success_rate", "rl/groups_sampled", "sft/loss"} <= tags
    assert {f"eval/{s}/pass_at_1" for s in ("base", "sft", "final")} <= tags
    assert any(t.startswith("rl/success_by_scenario/") for t in tags)
    # the same numbers DuckDB's train_steps holds, step for step
    reward = [(e.step, e.value) for e in events.Scalars("rl/reward_mean")]
    assert [s for s, _ in reward] == [row[0] for row in steps]
    assert [v for _, v in reward] == pytest.approx([row[1] for row in steps], abs=1e-6)
    sft = events.Scalars("sft/loss")
    assert [e.step for e in sft] == list(range(1, summary["sft_steps"] + 1))
    final = events.Scalars("eval/final/pass_at_1")
    assert final[0].step == summary["rl_steps"]
    assert final[0].value == pytest.approx(summary["held_out"]["final"]["pass_at_1"], abs=1e-6)


def _inspect(path: Path, *args: str) -> str:
    """wandb's own reader of a run's .wandb transaction log (`wandb leet inspect`)."""
    done = subprocess.run(
        [sys.executable, "-m", "wandb", "leet", "inspect", "--json", *args, str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        env={"WANDB_MODE": "offline", "PATH": "/usr/bin:/bin", "HOME": str(path.parent)},
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.slow
def test_wandb_offline_run_folder_holds_the_logged_keys(tracked_run) -> None:
    _, wandb_dir, run_id, steps, summary = tracked_run
    runs = sorted((wandb_dir / "wandb").glob("offline-run-*"))
    assert len(runs) == 1
    transaction_log = next(runs[0].glob("run-*.wandb"))
    state = json.loads(_inspect(transaction_log, "--summary"))
    assert state["name"] == run_id and state["project"] == "ecomrlve"
    assert state["state"] == "finished"
    assert state["config"]["training"]["loggers"] == TRACKED_RUN["training"]["loggers"]
    last = state["summary"]
    assert last["rl/step"] == steps[-1][0]
    assert last["rl/reward_mean"] == pytest.approx(steps[-1][1], abs=1e-6)
    assert last["sft/step"] == summary["sft_steps"]
    assert last["eval/final/pass_at_1"] == pytest.approx(
        summary["held_out"]["final"]["pass_at_1"], abs=1e-6
    )
    records = [json.loads(line) for line in _inspect(transaction_log).splitlines() if line]
    history = [r["history"]["item"] for r in records if r["type"] == "history"]
    rl_rows = [h for h in history if "rl/reward_mean" in h]
    assert [h["rl/step"] for h in rl_rows] == [row[0] for row in steps]
    assert len([h for h in history if "sft/loss" in h]) == summary["sft_steps"]


@pytest.mark.slow
def test_the_run_records_the_memory_settings_it_used(tracked_run) -> None:
    """Left unset, the memory settings are made concrete before training (on CPU: no
    recomputation, the CPU's micro-batch budget) and the run folder's config says which were
    used."""
    output = tracked_run[0]
    used = yaml.safe_load((output / "config.yaml").read_text())["training"]["scale"]
    assert used["gradient_checkpointing"] is False
    assert used["max_tokens_per_micro_batch"] == CPU_MICRO_BATCH_TOKENS == 4096


def test_a_missing_backend_names_its_extra(monkeypatch, tmp_path) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "wandb" else real(name, *a)
    )
    with pytest.raises(ValueError, match=r"pip install 'ecomrlve\[wandb\]'"):
        check_loggers(["console", "wandb"])
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump(TRACKED_RUN))
    output = tmp_path / "run"
    args = ["train", "--config", str(config), "--output", str(output)]
    result = CliRunner().invoke(app, [*args, "--data", str(train_store_dir())])
    assert result.exit_code == 2
    assert result.output.strip().splitlines()[-1] == (
        "error: training.loggers lists wandb but the wandb package is not installed: "
        "pip install 'ecomrlve[wandb]'"
    )
    assert not output.exists()  # refused before anything is written


def test_unknown_loggers_are_refused_by_the_config() -> None:
    with pytest.raises(ConfigError, match=r"training\.loggers"):
        config_from_dict({"training": {"loggers": ["console", "mlflow"]}})
    assert config_from_dict({}).training.loggers == ["console", "duckdb"]


def test_scalars_keep_numbers_and_unpack_per_scenario_maps() -> None:
    row = {
        "reward_mean": 0.5,
        "skipped": False,
        "skip_reason": None,
        "note": "text",
        "success_by_scenario": json.dumps({"cart": 0.25}),
        "kl": float("nan"),
    }
    assert scalars(row, "rl") == {
        "rl/reward_mean": 0.5,
        "rl/skipped": 0.0,
        "rl/success_by_scenario/cart": 0.25,
    }
