"""Defaults that fit: the memory settings a config leaves unset are chosen by the planner for
the GPUs at hand, and training reads the choice (`plan.settle_memory_settings`)."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from ecomrlve.config import CPU_MICRO_BATCH_TOKENS, config_from_dict, load_config
from ecomrlve.train.memory import (
    choose_memory_settings,
    micro_batch_tokens,
    token_budgets,
)
from ecomrlve.train.plan import resolve_engines, settle_memory_settings

ROOT = Path(__file__).resolve().parents[1]
ARTICLE = {
    "agent": {"model": "Qwen/Qwen3-8B", "tokenizer": "Qwen/Qwen3-8B"},
    "training": {"algorithm": "DAPO", "batch_size": 32, "num_rollout_steps": 1024},
}


def _config(**training):
    return config_from_dict({**ARTICLE, "training": {**ARTICLE["training"], **training}})


def test_unset_settings_are_planned_and_read_by_training() -> None:
    cfg = _config()
    assert cfg.training.scale.gradient_checkpointing is None
    assert cfg.training.scale.max_tokens_per_micro_batch is None
    settled = settle_memory_settings(cfg, cuda_available=True, gpus=8, gpu_memory_gb=80)
    t = settled.training
    assert (t.scale.gradient_checkpointing, t.scale.max_tokens_per_micro_batch) == (False, 8192)
    assert micro_batch_tokens(t) == 8192
    assert resolve_engines(settled, True, 8).gradient_checkpointing is False
    # a smaller card: recomputation comes on before the budget drops below one episode
    small = settle_memory_settings(cfg, cuda_available=True, gpus=8, gpu_memory_gb=40).training
    assert (small.scale.gradient_checkpointing, small.scale.max_tokens_per_micro_batch) == (
        True,
        16384,
    )
    assert resolve_engines(small.model_copy(), True, 8).gradient_checkpointing is True


def test_every_choice_that_is_returned_as_fitting_fits() -> None:
    for gb in (24, 40, 48, 80, 141):
        for gpus in (1, 2, 4, 8, 16):
            choice = choose_memory_settings(_config(), gpus=gpus, gpu_memory_gb=gb)
            assert choice.plan.tokens in token_budgets(_config())
            if choice.plan.fits:
                assert choice.plan.peak <= gb * 1e9
            else:  # the most frugal combination, for the refusal's suggestions
                assert choice.gradient_checkpointing and choice.max_tokens_per_micro_batch == 8192


def test_explicit_settings_are_kept_even_when_they_do_not_fit() -> None:
    cfg = _config(gradient_checkpointing=False, max_tokens_per_micro_batch=16384)
    assert settle_memory_settings(cfg, cuda_available=True, gpus=1, gpu_memory_gb=24) is cfg
    choice = choose_memory_settings(cfg, gpus=1, gpu_memory_gb=24)
    assert not choice.plan.fits and choice.chosen == ()
    partly = choose_memory_settings(_config(gradient_checkpointing=False), gpus=8, gpu_memory_gb=80)
    assert partly.gradient_checkpointing is False
    assert partly.chosen == ("max_tokens_per_micro_batch: 8192",)


def test_without_cuda_the_cpu_defaults_are_used() -> None:
    t = settle_memory_settings(_config(), cuda_available=False, gpus=1, gpu_memory_gb=0).training
    assert (t.scale.gradient_checkpointing, t.scale.max_tokens_per_micro_batch) == (
        False,
        CPU_MICRO_BATCH_TOKENS,
    )


def test_no_budget_is_tried_below_one_episode() -> None:
    short = config_from_dict({"agent": {"max_episode_tokens": 2048}})
    assert token_budgets(short) == [16384, 8192, 4096, 2048]
    long = config_from_dict({"agent": {"max_episode_tokens": 20000}})
    assert token_budgets(long) == [20000]


@pytest.mark.parametrize("path", ["configs/ecom_rlve.yaml"])
def test_the_shipped_configs_settings_stand(path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cfg = load_config(ROOT / path)
    settled = settle_memory_settings(cfg, cuda_available=True, gpus=8, gpu_memory_gb=80)
    assert settled.training.scale.gradient_checkpointing is True
    assert settled.training.scale.max_tokens_per_micro_batch == 16384


def test_a_cuda_run_plans_for_its_own_cards_and_ranks(monkeypatch) -> None:
    """What `_setup` calls: the card's memory and torchrun's WORLD_SIZE feed the same choice
    the dry-run prints (torch's CUDA queries stand in for an 8 x 80 GB node)."""
    import torch

    from ecomrlve.train.plan import memory_settings_for_this_machine

    class Card:
        total_memory = 80e9

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda _device: Card())
    monkeypatch.setenv("WORLD_SIZE", "8")
    t = memory_settings_for_this_machine(_config()).training
    assert (t.scale.gradient_checkpointing, t.scale.max_tokens_per_micro_batch) == (False, 8192)
    monkeypatch.setenv("WORLD_SIZE", "2")  # fewer ranks, bigger shards: recomputation comes on
    t = memory_settings_for_this_machine(_config()).training
    assert t.scale.gradient_checkpointing is True
