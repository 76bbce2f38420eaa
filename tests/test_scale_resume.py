"""Exact resume of the real DAPO loop: stop after step k, resume, and reach step n with the very
weights, optimizer state and curriculum an uninterrupted run has (bitwise, on CPU, with
deterministic algorithms)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from ecomrlve.testing.training import deterministic_algorithms

N_STEPS, STOP_AT = 3, 1


@pytest.fixture(autouse=True)
def _deterministic():
    with deterministic_algorithms():
        yield


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory):
    from ecomrlve.testing.training import dapo_world

    return dapo_world(tmp_path_factory.mktemp("models"), N_STEPS, max_new_tokens=12)


def _run(world, *, total_steps: int, checkpoints=None):
    from ecomrlve.env import tool_schemas
    from ecomrlve.train.chat import ChatFormat
    from ecomrlve.train.curriculum import AdaptiveDifficulty, CurriculumSampler
    from ecomrlve.train.engines.hf import HFEngine
    from ecomrlve.train.loop import train_dapo
    from ecomrlve.train.model import load_model_and_tokenizer

    catalog, frame, model_dir, cfg = world
    cfg = cfg.model_copy(deep=True)
    cfg.training.algorithm.total_steps = total_steps
    policy, tokenizer = load_model_and_tokenizer(str(model_dir), device="cpu", dtype="float32")
    chat = ChatFormat(tokenizer, tool_schemas(), enable_thinking=False)
    adaptive = AdaptiveDifficulty(
        CurriculumSampler.levels_of(frame), width=2, threshold=0.5, episodes=2
    )
    sampler = CurriculumSampler(frame, seed=cfg.training.seed, adaptive=adaptive)
    engine = HFEngine(policy, chat.pad_token_id)
    result = train_dapo(policy, engine, chat, catalog, sampler, cfg, checkpoints=checkpoints)
    return policy, sampler, result


@pytest.mark.slow  # two DAPO runs
def test_dapo_loop_resumes_exactly(world, tmp_path: Path) -> None:
    from ecomrlve.train.checkpoint import Checkpointer, latest_checkpoint

    torch.manual_seed(0)
    full_policy, full_sampler, full = _run(world, total_steps=N_STEPS)
    assert full.updates >= 1, "the tiny run should update at least once"
    assert all(h["tokens_generated"] > 0 for h in full.history)

    root = tmp_path / "checkpoints"
    torch.manual_seed(0)
    _, _, first = _run(world, total_steps=STOP_AT, checkpoints=Checkpointer(root, every=50))
    assert first.steps == STOP_AT and latest_checkpoint(root).name == f"step-{STOP_AT:08d}"

    torch.manual_seed(1234)  # a new process: nothing carried over but the checkpoint
    resumed_policy, resumed_sampler, resumed = _run(
        world, total_steps=N_STEPS, checkpoints=Checkpointer(root, every=50, resume=True)
    )
    assert [h["step"] for h in resumed.history] == list(range(STOP_AT + 1, N_STEPS + 1))
    for ours, ref in zip(resumed.history, full.history[STOP_AT:], strict=True):
        assert ours.get("loss") == ref.get("loss")
        assert ours["reward_mean"] == ref["reward_mean"]
    full_state = full_policy.state_dict()
    for name, tensor in resumed_policy.state_dict().items():
        assert torch.equal(tensor, full_state[name]), name
    assert resumed_sampler.state_dict() == full_sampler.state_dict()
    assert latest_checkpoint(root).name == f"step-{N_STEPS:08d}"
