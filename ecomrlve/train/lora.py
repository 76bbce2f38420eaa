"""LoRA (peft) for one-GPU runs: train low-rank adapters, keep the base weights frozen.

An 8B full fine-tune needs several GPUs for its optimizer state; with LoRA at rank 16-64 the
trainable parameters are ~0.5% of the model, so the policy, its adapters' AdamW state and
(colocated) vLLM fit on one card. `training.scale.lora_rank > 0` switches it on.

The rollout engine serves a plain model, so `merged_weights` yields W + (alpha/r)·B·A under the
base model's own parameter names, computed on the side: merging into the module and unmerging
afterwards is not bitwise reversible in floating point and would perturb training.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from typing import Any

import torch

log = logging.getLogger(__name__)

# Qwen3 / Llama-style projection names: attention and MLP, which is where LoRA helps most.
DEFAULT_TARGET_MODULES: tuple[str, ...] = (
    "q_proj",
    "k_proj",
    "v_proj",
    "o_proj",
    "gate_proj",
    "up_proj",
    "down_proj",
)


class LoraError(ValueError):
    """A LoRA setting that cannot be applied; the message names it."""


def apply_lora(
    model: torch.nn.Module,
    rank: int,
    *,
    alpha: float | None = None,
    dropout: float = 0.0,
    target_modules: Sequence[str] = DEFAULT_TARGET_MODULES,
    seed: int = 0,
) -> torch.nn.Module:
    """Wrap `model` with LoRA adapters of `rank` on `target_modules`; only adapters train.

    alpha defaults to 2·rank (scale 2). The adapters' A matrices are initialised from `seed`
    (B starts at zero, so the wrapped model computes exactly what the base model does).
    """
    from peft import LoraConfig, get_peft_model

    if rank < 1:
        raise LoraError(f"LoRA rank must be >= 1, got {rank}")
    present = {name.rsplit(".", 1)[-1] for name, _ in model.named_modules()}
    targets = [t for t in target_modules if t in present]
    if not targets:
        raise LoraError(
            f"none of the LoRA target modules {list(target_modules)} exist in "
            f"{type(model).__name__}"
        )
    config = LoraConfig(
        r=rank,
        lora_alpha=alpha if alpha is not None else 2 * rank,
        lora_dropout=dropout,
        target_modules=targets,
        bias="none",
        task_type="CAUSAL_LM",
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        wrapped = get_peft_model(model, config)
    trainable = sum(p.numel() for p in wrapped.parameters() if p.requires_grad)
    total = sum(p.numel() for p in wrapped.parameters())
    log.info(
        "LoRA rank %d on %s: %d trainable of %d parameters (%.2f%%)",
        rank,
        targets,
        trainable,
        total,
        100.0 * trainable / max(total, 1),
    )
    return wrapped


def is_lora_model(model: Any) -> bool:
    """True for a peft-wrapped model (checked without importing peft when it is absent)."""
    return hasattr(model, "peft_config") and hasattr(model, "base_model")


def _base_name(name: str) -> str:
    """`base_model.model.X.q_proj.base_layer.weight` -> `X.q_proj.weight` (the HF name)."""
    prefix = "base_model.model."
    if name.startswith(prefix):
        name = name[len(prefix) :]
    return name.replace(".base_layer.", ".")


@torch.no_grad()
def merged_weights(model: torch.nn.Module) -> Iterator[tuple[str, torch.Tensor]]:
    """`(base_name, weight)` for every base weight, with active adapters added in, never
    modifying the model. Adapter tensors themselves are not yielded."""
    from peft.tuners.lora import LoraLayer

    deltas: dict[str, torch.Tensor] = {}
    for module_name, module in model.named_modules():
        if isinstance(module, LoraLayer):
            base = module.get_base_layer()
            delta = None
            for adapter in module.active_adapters:
                if adapter in module.lora_A:
                    d = module.get_delta_weight(adapter)
                    delta = d if delta is None else delta + d
            if delta is not None:
                deltas[f"{module_name}.base_layer.weight"] = delta.to(base.weight.dtype)
    for name, tensor in model.state_dict().items():
        if ".lora_" in name or "lora_embedding" in name:
            continue
        full = tensor.full_tensor() if hasattr(tensor, "full_tensor") else tensor
        if name in deltas:
            full = full + deltas[name]
        yield _base_name(name), full.detach()


def trainable_parameters(model: torch.nn.Module) -> list[torch.nn.Parameter]:
    """The parameters the optimizer should own (all of them without LoRA)."""
    return [p for p in model.parameters() if p.requires_grad]
