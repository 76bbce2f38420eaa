"""A per-GPU memory plan made before anything loads (`ecomrlve train --dry-run`).

The model's shape comes from its `config.json` (local folder or HF cache) or, for Qwen3 models
not on this machine, from the published architectures below. The plan follows what the trainer
does (`plan.py`, `loop.py`, `batching.py`):

* weights: fp32 master copy, sharded over the ranks by FSDP2 (LoRA: a bf16 base, whole);
* grads: fp32, sharded like the weights (LoRA: adapters only);
* optimizer: AdamW's two fp32 moments, sharded;
* gathered: FSDP2's bf16 all-gathered copies (the root's embeddings/head plus two decoder layers,
  the one computing and the one prefetched) and one layer's unsharded fp32 gradient;
* activations at `training.scale.max_tokens_per_micro_batch` tokens: with gradient checkpointing one
  bf16 hidden state per layer plus one layer recomputed; without it every layer's
  activations; plus the chunked LM head's fp32 logits (`batching.LOGIT_CHUNK_ELEMENTS`);
* vLLM: `vllm_gpu_memory_utilization` of the card while it generates; asleep (level 1, weights
  offloaded and KV cache dropped) during the update.

The peak is the larger of the rollout phase (weights + optimizer + vLLM) and the update phase
(weights + grads + optimizer + gathered + activations), plus a fixed 1.5 GiB for the CUDA context
and allocator slack.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ecomrlve.config import (
    DEFAULT_MICRO_BATCH_TOKENS,
    EcomConfig,
    TinyModelConfig,
    TrainingConfig,
    with_training_block,
)
from ecomrlve.train.batching import LOGIT_CHUNK_ELEMENTS

GIB = 1 << 30
CONTEXT_BYTES = int(1.5 * GIB)
# What a run uses for a setting left unset (None) when nothing is planned for it: no CUDA, or
# a caller that builds its own `TrainingConfig` (`choose_memory_settings` decides otherwise).
DEFAULT_GRADIENT_CHECKPOINTING = False


@dataclass(frozen=True)
class ModelShape:
    hidden_size: int
    num_hidden_layers: int
    intermediate_size: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    vocab_size: int
    tie_word_embeddings: bool

    @property
    def layer_params(self) -> int:
        h, kv = self.hidden_size, self.num_key_value_heads * self.head_dim
        q = self.num_attention_heads * self.head_dim
        attention = h * q + 2 * h * kv + q * h + 2 * self.head_dim  # q, k, v, o, q/k norms
        return attention + 3 * h * self.intermediate_size + 2 * h  # gate/up/down, two norms

    @property
    def root_params(self) -> int:
        embed = self.vocab_size * self.hidden_size
        return embed * (1 if self.tie_word_embeddings else 2) + self.hidden_size

    @property
    def params(self) -> int:
        return self.num_hidden_layers * self.layer_params + self.root_params

    def lora_params(self, rank: int) -> int:
        h, i = self.hidden_size, self.intermediate_size
        q = self.num_attention_heads * self.head_dim
        kv = self.num_key_value_heads * self.head_dim
        per_layer = (h + q) + 2 * (h + kv) + (q + h) + 2 * (h + i) + (i + h)
        return self.num_hidden_layers * rank * per_layer


# Published Qwen3 architectures (config.json of each release), for plans on machines without
# the weights.
QWEN3_SHAPES: dict[str, ModelShape] = {
    "Qwen/Qwen3-0.6B": ModelShape(1024, 28, 3072, 16, 8, 128, 151_936, True),
    "Qwen/Qwen3-1.7B": ModelShape(2048, 28, 6144, 16, 8, 128, 151_936, True),
    "Qwen/Qwen3-4B": ModelShape(2560, 36, 9728, 32, 8, 128, 151_936, True),
    "Qwen/Qwen3-8B": ModelShape(4096, 36, 12_288, 32, 8, 128, 151_936, False),
    "Qwen/Qwen3-14B": ModelShape(5120, 40, 17_408, 40, 8, 128, 151_936, False),
    "Qwen/Qwen3-32B": ModelShape(5120, 64, 25_600, 64, 8, 128, 151_936, False),
}


def model_shape(name: str, tiny: TinyModelConfig | None = None) -> ModelShape:
    """The architecture of `agent.model`: its config.json when on this machine, else a known
    Qwen3 release (`tiny`: the dimensions of tiny-qwen3, default `agent.tiny`'s defaults).
    Raises ValueError naming the model otherwise."""
    from ecomrlve.train.model import TINY_MODEL, TinySpec, resolve_model_path

    if name == TINY_MODEL:
        t = TinySpec.of(tiny or TinyModelConfig())
        return ModelShape(
            t.hidden_size,
            t.num_hidden_layers,
            t.intermediate_size,
            t.num_attention_heads,
            t.num_key_value_heads,
            t.head_dim,
            t.vocab_size,
            True,
        )
    try:
        config = json.loads((Path(resolve_model_path(name)) / "config.json").read_text())
    except (OSError, ValueError):
        if name in QWEN3_SHAPES:
            return QWEN3_SHAPES[name]
        raise ValueError(
            f"cannot plan memory for {name!r}: no config.json on this machine and not one of "
            f"{sorted(QWEN3_SHAPES)}"
        ) from None
    config = config.get("text_config", config)
    heads = config["num_attention_heads"]
    return ModelShape(
        hidden_size=config["hidden_size"],
        num_hidden_layers=config["num_hidden_layers"],
        intermediate_size=config["intermediate_size"],
        num_attention_heads=heads,
        num_key_value_heads=config.get("num_key_value_heads", heads),
        head_dim=config.get("head_dim") or config["hidden_size"] // heads,
        vocab_size=config["vocab_size"],
        tie_word_embeddings=bool(config.get("tie_word_embeddings", False)),
    )


@dataclass(frozen=True)
class MemoryPlan:
    """Bytes per GPU, by item, and the verdict against the card's memory."""

    gpus: int
    gpu_memory: float  # bytes
    lora_rank: int
    tokens: int
    weights: float
    grads: float
    optimizer: float
    gathered: float
    activations: float
    vllm: float
    checkpointing: bool = False

    @property
    def rollout_peak(self) -> float:
        return self.weights + self.optimizer + self.vllm + CONTEXT_BYTES

    @property
    def update_peak(self) -> float:
        parts = self.weights + self.grads + self.optimizer + self.gathered + self.activations
        return parts + CONTEXT_BYTES

    @property
    def peak(self) -> float:
        return max(self.rollout_peak, self.update_peak)

    @property
    def fits(self) -> bool:
        return self.peak <= self.gpu_memory

    def rows(self) -> list[tuple[str, float]]:
        """(item, GiB) in the order the table prints them."""
        return [
            ("weights", self.weights / GIB),
            ("gradients", self.grads / GIB),
            ("optimizer (AdamW)", self.optimizer / GIB),
            ("bf16 compute copies", self.gathered / GIB),
            (f"activations at {self.tokens} tokens", self.activations / GIB),
            ("vLLM share (while generating)", self.vllm / GIB),
            ("CUDA context + slack", CONTEXT_BYTES / GIB),
            ("peak, rollout phase", self.rollout_peak / GIB),
            ("peak, update phase", self.update_peak / GIB),
        ]


def activation_bytes(shape: ModelShape, tokens: int, checkpointing: bool) -> float:
    """bf16 activations kept for backward over one micro-batch of `tokens` tokens."""
    h, i = shape.hidden_size, shape.intermediate_size
    q = shape.num_attention_heads * shape.head_dim
    kv = shape.num_key_value_heads * shape.head_dim
    # per layer: norm input/outputs, q, k, v, attention output (+ its softmax statistics),
    # o-proj output, and the MLP's gate, up, activation and product
    per_layer = tokens * 2 * (4 * h + 2 * q + 2 * kv + 4 * i)
    layers = (
        shape.num_hidden_layers * tokens * h * 2 + 2 * per_layer
        if checkpointing
        else shape.num_hidden_layers * per_layer
    )
    head = 3 * 4 * min(LOGIT_CHUNK_ELEMENTS, tokens * shape.vocab_size)  # logits, softmax, grad
    return float(layers + head + tokens * h * 4)


def plan_memory(
    cfg: EcomConfig,
    *,
    gpus: int,
    gpu_memory_gb: float,
    lora_rank: int | None = None,
    tokens: int | None = None,
    checkpointing: bool | None = None,
    shape: ModelShape | None = None,
) -> MemoryPlan:
    """The per-GPU plan for `cfg` on `gpus` cards of `gpu_memory_gb` GB (10^9 bytes)."""
    training = cfg.training
    shape = shape or model_shape(cfg.agent.model, cfg.agent.tiny)
    rank = training.scale.lora_rank if lora_rank is None else lora_rank
    tokens = tokens or micro_batch_tokens(training)
    if checkpointing is None:
        checkpointing = uses_checkpointing(training)
    card = gpu_memory_gb * 1e9
    p = shape.params
    if rank > 0:  # one GPU, bf16 frozen base, fp32 adapters
        adapters = shape.lora_params(rank)
        weights, grads, optimizer = 2.0 * p + 4.0 * adapters, 4.0 * adapters, 8.0 * adapters
        gathered = 0.0
    else:
        weights, grads, optimizer = 4.0 * p / gpus, 4.0 * p / gpus, 8.0 * p / gpus
        if gpus > 1:  # bf16 root + current and prefetched layer, one layer's fp32 grads
            gathered = 2.0 * shape.root_params + 2 * 2.0 * shape.layer_params
            gathered += 4.0 * shape.layer_params
        else:  # autocast's bf16 copies of the weights, cached during the forward
            gathered = 2.0 * p
    activations = activation_bytes(shape, tokens, checkpointing)
    vllm = training.rollout.vllm_gpu_memory_utilization * card
    return MemoryPlan(
        gpus,
        card,
        rank,
        tokens,
        weights,
        grads,
        optimizer,
        gathered,
        activations,
        vllm,
        checkpointing,
    )


def what_would_fit(cfg: EcomConfig, plan: MemoryPlan, shape: ModelShape) -> list[str]:
    """Settings that would fit, for the one-line refusal: gradient checkpointing, LoRA, more
    GPUs, fewer tokens per micro-batch (each changing one thing of `plan`)."""
    options: list[str] = []
    gb = plan.gpu_memory / 1e9
    same = {"tokens": plan.tokens, "checkpointing": plan.checkpointing, "shape": shape}
    if not plan.checkpointing:
        recompute = plan_memory(
            cfg, gpus=plan.gpus, gpu_memory_gb=gb, **{**same, "checkpointing": True}
        )
        if recompute.fits:
            peak = recompute.peak / GIB
            options.append(f"training.scale.gradient_checkpointing: true ({peak:.1f} GiB)")
    if plan.lora_rank == 0:
        lora = plan_memory(cfg, gpus=1, gpu_memory_gb=gb, lora_rank=64, **same)
        if lora.fits:
            options.append(f"training.scale.lora_rank: 64 on 1 GPU ({lora.peak / GIB:.1f} GiB)")
        for gpus in (2, 4, 8, 16, 32, 64):
            if gpus <= plan.gpus:
                continue
            more = plan_memory(cfg, gpus=gpus, gpu_memory_gb=gb, **same)
            if more.fits:
                options.append(f"--gpus {gpus} ({more.peak / GIB:.1f} GiB per GPU)")
                break
    tokens = plan.tokens // 2
    # a budget below one whole episode does not lower the peak (see `token_budgets`)
    while tokens >= max(512, cfg.agent.max_episode_tokens):
        smaller = plan_memory(
            cfg,
            gpus=plan.gpus,
            gpu_memory_gb=gb,
            lora_rank=plan.lora_rank,
            **{**same, "tokens": tokens},
        )
        if smaller.fits:
            options.append(
                f"training.scale.max_tokens_per_micro_batch: {tokens} "
                f"({smaller.peak / GIB:.1f} GiB)"
            )
            break
        tokens //= 2
    return options


# ---------------------------------------------------------------------------------------------
# Defaults that fit: the planner's choice for the memory settings a config leaves unset
# ---------------------------------------------------------------------------------------------


def micro_batch_tokens(training: TrainingConfig) -> int:
    """`max_tokens_per_micro_batch`, or the default where a run has not planned it."""
    return training.scale.max_tokens_per_micro_batch or DEFAULT_MICRO_BATCH_TOKENS


def uses_checkpointing(training: TrainingConfig) -> bool:
    """`gradient_checkpointing`, or the default where a run has not planned it."""
    if training.scale.gradient_checkpointing is None:
        return DEFAULT_GRADIENT_CHECKPOINTING
    return training.scale.gradient_checkpointing


@dataclass(frozen=True)
class MemoryChoice:
    """The memory settings a run uses: the config's where it sets them, the planner's where
    not (`chosen` names those, with the reason), and the plan they give."""

    gradient_checkpointing: bool
    max_tokens_per_micro_batch: int
    plan: MemoryPlan
    chosen: tuple[str, ...]

    def apply(self, cfg: EcomConfig) -> EcomConfig:
        """`cfg` with both settings made concrete (what training then reads)."""
        return with_training_block(
            cfg,
            "scale",
            gradient_checkpointing=self.gradient_checkpointing,
            max_tokens_per_micro_batch=self.max_tokens_per_micro_batch,
        )

    def describe(self) -> str:
        """One line for the dry-run and the run's log; empty when the config set both."""
        if not self.chosen:
            return ""
        return "planner chose " + ", ".join(self.chosen) + " (not set in the config)"


def token_budgets(cfg: EcomConfig) -> list[int]:
    """Micro-batch budgets the planner tries, largest first: 16384 halved down to 512, but
    none below one whole episode (`agent.max_episode_tokens`): a longer sequence gets a
    micro-batch of its own, so a smaller budget would not lower the peak."""
    episode = cfg.agent.max_episode_tokens
    budgets = {max(DEFAULT_MICRO_BATCH_TOKENS >> i, episode) for i in range(6)}
    return sorted(budgets, reverse=True)


def choose_memory_settings(
    cfg: EcomConfig, *, gpus: int, gpu_memory_gb: float, shape: ModelShape | None = None
) -> MemoryChoice:
    """Pick `gradient_checkpointing` and `max_tokens_per_micro_batch` where `cfg` leaves them
    unset (None) so the plan fits `gpus` cards of `gpu_memory_gb` GB; explicit values stay.

    Preference: no recomputation first (checkpointing costs about a third more compute per
    update), then the largest micro-batch; the first combination that fits wins. When none
    fits, the most frugal one is returned with its (refused) plan, for `what_would_fit`.
    """
    training = cfg.training
    shape = shape or model_shape(cfg.agent.model, cfg.agent.tiny)
    checkpointing = (
        [False, True]
        if training.scale.gradient_checkpointing is None
        else [training.scale.gradient_checkpointing]
    )
    tokens = (
        token_budgets(cfg)
        if training.scale.max_tokens_per_micro_batch is None
        else [training.scale.max_tokens_per_micro_batch]
    )
    plans = [
        plan_memory(
            cfg,
            gpus=gpus,
            gpu_memory_gb=gpu_memory_gb,
            tokens=budget,
            checkpointing=recompute,
            shape=shape,
        )
        for recompute in checkpointing
        for budget in tokens
    ]
    plan = next((p for p in plans if p.fits), plans[-1])
    chosen = []
    if training.scale.gradient_checkpointing is None:
        chosen.append(f"gradient_checkpointing: {str(plan.checkpointing).lower()}")
    if training.scale.max_tokens_per_micro_batch is None:
        chosen.append(f"max_tokens_per_micro_batch: {plan.tokens}")
    return MemoryChoice(plan.checkpointing, plan.tokens, plan, tuple(chosen))
