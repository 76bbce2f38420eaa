"""Training robustness: a NaN/inf reward or loss, or a batch without trainable tokens, skips the
optimizer step (weights and AdamW state untouched), says why in the log and in the step's
metrics, and the run goes on; `ecomrlve train` killed with SIGKILL after its first checkpoint
resumes from it and ends with the very weights of an uninterrupted run (asynchronous too: its
rollout process ends with the killed trainer)."""

from __future__ import annotations

import contextlib
import copy
import logging
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
import torch
import yaml

from ecomrlve.testing.training import outliving

N_STEPS = 2


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory):
    from ecomrlve.testing.training import dapo_world

    return dapo_world(tmp_path_factory.mktemp("models"), N_STEPS, max_new_tokens=8)


def _snapshot(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in module.state_dict().items()}


def _run(world):
    """The real DAPO loop; returns (initial weights, weights after each step, result)."""
    from ecomrlve.env import tool_schemas
    from ecomrlve.train.chat import ChatFormat
    from ecomrlve.train.curriculum import CurriculumSampler
    from ecomrlve.train.engines.hf import HFEngine
    from ecomrlve.train.loop import train_dapo
    from ecomrlve.train.model import load_model_and_tokenizer

    catalog, frame, model_dir, cfg = world
    torch.manual_seed(0)
    policy, tokenizer = load_model_and_tokenizer(str(model_dir), device="cpu", dtype="float32")
    chat = ChatFormat(tokenizer, tool_schemas(), enable_thinking=False)
    sampler = CurriculumSampler(frame, seed=cfg.training.seed)
    engine = HFEngine(policy, chat.pad_token_id)
    initial = _snapshot(policy)
    after: list[dict[str, torch.Tensor]] = []
    result = train_dapo(
        policy,
        engine,
        chat,
        catalog,
        sampler,
        cfg,
        record=lambda metrics, scenarios, rollouts: after.append(_snapshot(policy)),
    )
    return initial, after, result


def _same(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def _finite(state: dict[str, torch.Tensor]) -> bool:
    return all(bool(torch.isfinite(t).all()) for t in state.values() if t.is_floating_point())


def _check_recordable(history: list[dict]) -> None:
    """Every step's metrics fit the train_steps table (skip columns included)."""
    from ecomrlve.train.results import STEP_SCHEMA, frame

    rows = frame([{**h, "success_by_scenario": "{}"} for h in history], STEP_SCHEMA)
    assert rows["skipped"].to_list() == [bool(h["skipped"]) for h in history]


def test_batch_without_trainable_tokens_skips_the_update(world, monkeypatch, caplog) -> None:
    """Regression: every generated token masked gave total_tokens == 0, a 0/0 NaN loss and NaN
    weights after the AdamW step."""
    from ecomrlve.train import sources

    real = sources.run_episodes

    def masked(*args, **kwargs):
        episodes = real(*args, **kwargs)
        for episode in episodes:
            episode.sequence.loss_mask = [0] * len(episode.sequence.loss_mask)
        return episodes

    monkeypatch.setattr(sources, "run_episodes", masked)
    with caplog.at_level(logging.WARNING, logger="ecomrlve.train.loop"):
        initial, after, result = _run(world)
    assert result.steps == N_STEPS and result.updates == 0
    assert all(_same(initial, state) for state in after)
    for metrics in result.history:
        assert metrics["skipped"] is True
        assert "no trainable tokens" in metrics["skip_reason"]
    assert "no trainable tokens" in caplog.text and "update skipped" in caplog.text
    _check_recordable(result.history)


@pytest.mark.slow  # a DAPO run per case
@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_loss_skips_the_step_and_the_run_goes_on(world, monkeypatch, caplog, bad):
    from ecomrlve.train import dapo

    real = dapo.policy_loss
    calls = {"n": 0}

    def poisoned(*args, **kwargs):
        loss, stats = real(*args, **kwargs)
        calls["n"] += 1
        if calls["n"] == 1:  # the first micro-batch of step 1 only
            loss = loss * bad
        return loss, stats

    monkeypatch.setattr(dapo, "policy_loss", poisoned)
    with caplog.at_level(logging.WARNING, logger="ecomrlve.train.loop"):
        initial, after, result = _run(world)
    assert result.steps == N_STEPS
    first, second = result.history
    assert first["skipped"] is True and "non-finite" in first["skip_reason"]
    assert _same(initial, after[0]), "a skipped step must leave the weights untouched"
    assert second["skipped"] is False and second["skip_reason"] is None
    assert math.isfinite(second["loss"])
    assert result.updates == 1
    assert _finite(after[1])
    assert "update skipped" in caplog.text
    _check_recordable(result.history)


@pytest.mark.slow  # a DAPO run
def test_non_finite_reward_skips_the_step(world, monkeypatch, caplog) -> None:
    """A NaN reward would make its whole group's advantages NaN: the step is skipped."""
    from ecomrlve.train import dapo

    real = dapo.overlong_penalty
    calls = {"n": 0}

    def poisoned(lengths, *args, **kwargs):
        penalty = real(lengths, *args, **kwargs)
        calls["n"] += 1
        if calls["n"] == 1:
            penalty = penalty.clone()
            penalty[0] = math.nan
        return penalty

    monkeypatch.setattr(dapo, "overlong_penalty", poisoned)
    with caplog.at_level(logging.WARNING, logger="ecomrlve.train.loop"):
        initial, after, result = _run(world)
    first, second = result.history
    assert first["skipped"] is True and "non-finite reward" in first["skip_reason"]
    assert _same(initial, after[0])
    assert second["skipped"] is False and result.updates == 1
    assert _finite(after[1])
    assert "non-finite reward" in caplog.text


# ---- kill -9 through the CLI, then resume --------------------------------------------------------

CLI_STEPS = 4
CLI_RUN = {
    "env": {"max_steps": 3},
    "agent": {"model": "tiny-qwen3", "max_new_tokens": 16, "max_episode_tokens": 1024},
    "training": {
        "total_steps": CLI_STEPS,
        "prompts_per_step": 2,
        "group_size": 2,
        "mini_batch_size": 4,
        "dynamic_sampling": False,
        "overlong_buffer": 128,
        "learning_rate": 1.0e-3,
        "sft_epochs": 0,
        "eval_tasks": 0,
        "adaptive_episodes": 2,
        "save_every": 1,
        "seed": 1,
    },
}
ECOMRLVE = [sys.executable, "-m", "ecomrlve"]


def _train(data: Path, config: Path, output: Path) -> list[str]:
    return [
        *ECOMRLVE,
        "train",
        "--config",
        str(config),
        "--output",
        str(output),
        "--data",
        str(data),
    ]


def _weights(model_dir: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(str(model_dir / "model.safetensors"))


@pytest.mark.slow  # subprocesses
@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_train_killed_after_a_checkpoint_resumes_to_the_same_weights(
    tmp_path: Path, asynchronous: bool
) -> None:
    """SIGKILL of `ecomrlve train` after a checkpoint, then `resume: true`: the weights of the
    run that was never stopped. Asynchronous with max_staleness 0 (so both runs sample the
    same versions) the rollout process dies with its trainer and the resumed run starts one."""
    from ecomrlve.catalogs import build_catalog
    from ecomrlve.generators import generate_tasks, write_tasks
    from ecomrlve.train.checkpoint import latest_checkpoint, list_checkpoints

    data = tmp_path / "data"
    build_catalog(data, 2000, seed=3)
    tasks, _ = generate_tasks(data, 72, seed=5, difficulty=(0, 1), max_steps=3)
    write_tasks(data, tasks, "gen_s5")
    run = copy.deepcopy(CLI_RUN)
    if asynchronous:
        run["training"] |= {"async": True, "max_staleness": 0}
    config = tmp_path / "run.yaml"
    config.write_text(yaml.safe_dump(run))
    resume = tmp_path / "resume.yaml"
    resume.write_text(yaml.safe_dump({**run, "training": {**run["training"], "resume": True}}))
    env = {**os.environ, "PYTHONHASHSEED": "0"}

    reference = tmp_path / "reference"
    done = subprocess.run(_train(data, config, reference), capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr[-2000:]

    killed = tmp_path / "killed"
    first = killed / "checkpoints" / "step-00000001" / "trainer_state.json"
    proc = subprocess.Popen(
        _train(data, config, killed),
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    workers: list[int] = []
    try:
        deadline = time.monotonic() + 120
        while not first.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert first.exists(), "the run wrote no first checkpoint"
        workers = [child.pid for child in psutil.Process(proc.pid).children()]
        with_pid = proc.poll() is None
        if with_pid:  # the trainer alone: its rollout process must end by itself
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        assert not outliving(workers), "a child outlived the killed trainer"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # anything left of the group
        proc.wait()
    assert with_pid, "the run finished before it could be killed"
    assert workers or not asynchronous, "the asynchronous run had no rollout process"
    assert not (killed / "summary.json").exists()
    steps_before = [step for step, _ in list_checkpoints(killed / "checkpoints")]
    assert 1 <= steps_before[-1] < CLI_STEPS

    again = subprocess.run(_train(data, resume, killed), capture_output=True, text=True, env=env)
    assert again.returncode == 0, again.stderr[-2000:]
    summary = yaml.safe_load((killed / "summary.json").read_text())
    assert summary["rl_steps"] == CLI_STEPS
    assert latest_checkpoint(killed / "checkpoints").name == f"step-{CLI_STEPS:08d}"
    assert not list((killed / "checkpoints").glob(".step-*")), "a half-written save was left"
    ours, ref = _weights(killed / "model"), _weights(reference / "model")
    assert ours.keys() == ref.keys()
    for name in ref:
        assert torch.equal(ours[name], ref[name]), name
