"""Which engines a run uses on this machine: the `auto` settings of the config made concrete.

`resolve_engines(cfg, cuda_available, world_size)` is pure (the machine is passed in), so both
branches are tested anywhere. With CUDA, `auto` means vLLM rollouts, FSDP2 over the ranks
torchrun started, bf16; without CUDA, the HF engine, one process, fp32, and a log line that
says so. `apply_plan` and `build_rollout_engine` carry the plan out on a loaded policy.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ecomrlve.config import (
    CPU_MICRO_BATCH_TOKENS,
    EcomConfig,
    TrainingConfig,
    with_training_block,
)

log = logging.getLogger(__name__)


class PlanError(ValueError):
    """Settings that cannot run on this machine; the message names the setting."""


@dataclass(frozen=True)
class EndpointPool:
    """`rollout_engine: endpoint`: the servers rollouts go to and how weights reach them."""

    urls: tuple[str, ...]
    model: str
    weights_dir: str
    api_key_env: str | None = None
    concurrency: int = 64


@dataclass(frozen=True)
class EnginePlan:
    """The concrete choices for one run, with one human-readable reason per `auto` decision."""

    rollout_engine: Literal["hf", "vllm", "endpoint"]
    distributed: Literal["none", "fsdp"]
    dtype: Literal["bf16", "fp32"]
    world_size: int
    gradient_checkpointing: bool
    lora_rank: int
    lora_alpha: float | None = None
    vllm_gpu_memory_utilization: float = 0.35
    endpoint: EndpointPool | None = None
    reasons: tuple[str, ...] = field(default_factory=tuple)

    @property
    def torch_dtype_name(self) -> str:
        """The compute dtype (what vLLM serves)."""
        return "bfloat16" if self.dtype == "bf16" else "float32"

    @property
    def load_dtype_name(self) -> str:
        """The dtype the trainer loads weights in: fp32 master weights (and so fp32 AdamW
        states) for a full fine-tune, bf16 computed through FSDP2 mixed precision or autocast;
        with LoRA the frozen base may stay bf16 (peft keeps the adapters in fp32)."""
        return "bfloat16" if self.dtype == "bf16" and self.lora_rank > 0 else "float32"

    def log(self) -> None:
        for reason in self.reasons:
            log.info("engine plan: %s", reason)


def resolve_engines(
    cfg: EcomConfig | TrainingConfig,
    cuda_available: bool,
    world_size: int,
    *,
    gpu_count: int | None = None,
    vllm_installed: bool = True,
) -> EnginePlan:
    """Turn `training.rollout.engine` and `training.scale.distributed / dtype` into an `EnginePlan`.

    Args:
        cfg: the whole config or its training block.
        cuda_available: `torch.cuda.is_available()` on this machine.
        world_size: ranks in this launch (torchrun's WORLD_SIZE; 1 for a plain process).
        gpu_count: visible GPUs, to point out unused ones (default: world_size).
        vllm_installed: whether `import vllm` would work; `auto` falls back to HF without it.

    Raises:
        PlanError for a combination that cannot run (e.g. `distributed: none` under a
        multi-rank launch, `rollout_engine: vllm` without vLLM, LoRA with FSDP).
    """
    t = cfg.training if isinstance(cfg, EcomConfig) else cfg
    if world_size < 1:
        raise PlanError(f"world_size must be >= 1, got {world_size}")
    reasons: list[str] = []  # each step appends why it chose what it chose
    engine = _rollout_engine(t, cuda_available, world_size, vllm_installed, reasons)
    distributed = _data_parallelism(t, cuda_available, world_size, gpu_count, reasons)
    dtype = _precision(t, cuda_available, reasons)
    _check_lora(t, distributed, world_size, reasons)
    agent_model = cfg.agent.model if isinstance(cfg, EcomConfig) else ""
    endpoint = _endpoint_pool(t, engine, distributed, agent_model, reasons)
    return EnginePlan(
        rollout_engine=engine,
        distributed=distributed,
        dtype=dtype,
        world_size=world_size,
        gradient_checkpointing=bool(t.scale.gradient_checkpointing),  # None: unplanned, off
        lora_rank=t.scale.lora_rank,
        lora_alpha=t.scale.lora_alpha,
        vllm_gpu_memory_utilization=t.rollout.vllm_gpu_memory_utilization,
        endpoint=endpoint,
        reasons=tuple(reasons),
    )


def _rollout_engine(
    t: TrainingConfig,
    cuda_available: bool,
    world_size: int,
    vllm_installed: bool,
    reasons: list[str],
) -> str:
    """`training.rollout.engine`, `auto` resolved: vLLM with CUDA and vLLM, else HF."""
    if t.rollout.engine == "auto":
        if t.rollout.asynchronous:  # the rollout process runs HF generate (vLLM: not yet)
            engine = "hf"
            reasons.append("rollout_engine auto -> hf: rollout.async runs hf in its own process")
        elif cuda_available and vllm_installed:
            engine = "vllm"
            reasons.append("rollout_engine auto -> vllm (CUDA present)")
        elif cuda_available:
            engine = "hf"
            reasons.append(
                "rollout_engine auto -> hf: CUDA present but vllm is not installed "
                "(pip install 'ecomrlve[gpu]' for fast rollouts)"
            )
        else:
            engine = "hf"
            reasons.append("rollout_engine auto -> hf: no CUDA, falling back to HF generate")
    else:
        engine = t.rollout.engine
        if engine == "vllm" and not vllm_installed:
            raise PlanError(
                "training.rollout.engine is vllm but vllm is not installed: "
                "pip install 'ecomrlve[gpu]' (on CPU: scripts/vllm_cpu_env.sh)"
            )

    if t.rollout.asynchronous and world_size > 1:
        raise PlanError(
            f"training.rollout.async runs one trainer rank, but {world_size} were launched"
        )
    return engine


def _data_parallelism(
    t: TrainingConfig,
    cuda_available: bool,
    world_size: int,
    gpu_count: int | None,
    reasons: list[str],
) -> str:
    """`training.scale.distributed`, `auto` resolved: FSDP over several ranks, else none."""
    if t.scale.distributed == "auto":
        distributed = "fsdp" if world_size > 1 else "none"
        reasons.append(
            f"distributed auto -> fsdp over {world_size} ranks"
            if world_size > 1
            else "distributed auto -> none (one process)"
        )
    else:
        distributed = t.scale.distributed
        if distributed == "none" and world_size > 1:
            raise PlanError(
                f"launched with {world_size} ranks but training.scale.distributed is none: "
                "use fsdp (or auto), or launch one process"
            )
    visible = gpu_count if gpu_count is not None else world_size
    if cuda_available and visible > world_size:
        reasons.append(
            f"{visible} GPUs visible but {world_size} rank(s) launched: "
            f"torchrun --nproc_per_node {visible} -m ecomrlve train ... uses them all"
        )
    return distributed


def _precision(t: TrainingConfig, cuda_available: bool, reasons: list[str]) -> str:
    """`training.scale.dtype`, `auto` resolved: bf16 with CUDA, else fp32."""
    if t.scale.dtype == "auto":
        reasons.append(
            "dtype auto -> bf16 (CUDA)" if cuda_available else "dtype auto -> fp32 (no CUDA)"
        )
        return "bf16" if cuda_available else "fp32"
    if t.scale.dtype == "bf16" and not cuda_available:
        reasons.append("dtype bf16 without CUDA: runs, but CPU bf16 matmuls are slow")
    return t.scale.dtype


def _check_lora(t: TrainingConfig, distributed: str, world_size: int, reasons: list[str]) -> None:
    """LoRA is the one-GPU mode: never with FSDP."""
    if t.scale.lora_rank > 0 and distributed == "fsdp":
        raise PlanError(
            f"training.scale.lora_rank {t.scale.lora_rank} with FSDP over {world_size} ranks: LoRA "
            "is the one-GPU mode; set lora_rank: 0 or launch one process"
        )
    if t.scale.lora_rank > 0:
        reasons.append(f"LoRA rank {t.scale.lora_rank}: only adapters train")


def _endpoint_pool(
    t: TrainingConfig, engine: str, distributed: str, agent_model: str, reasons: list[str]
) -> EndpointPool | None:
    """The server pool of rollout engine `endpoint` (ecomrlve/train/engines/endpoint.py);
    None for the other engines."""
    if engine != "endpoint":
        return None
    if distributed == "fsdp" or t.scale.lora_rank > 0:
        raise PlanError(
            "rollout_engine endpoint pushes whole saved models to the servers: it runs with "
            "one trainer process and full fine-tuning (distributed: none, lora_rank: 0)"
        )
    model = t.rollout.endpoint_model or agent_model
    if not model:
        raise PlanError("rollout engine endpoint needs training.rollout.endpoint_model")
    endpoint = EndpointPool(
        urls=tuple(t.rollout.endpoints),
        model=model,
        weights_dir=str(t.rollout.weights_dir),
        api_key_env=t.rollout.api_key_env,
        concurrency=t.rollout.concurrency,
    )
    reasons.append(
        f"rollout_engine endpoint -> {len(endpoint.urls)} server(s) serving {model!r}; "
        f"weights pushed through {endpoint.weights_dir} after each update"
    )
    return endpoint


def plan_for_this_machine(cfg: EcomConfig) -> EnginePlan:
    """`resolve_engines` with this machine's CUDA, GPU count, torchrun world and vLLM."""
    import torch

    from ecomrlve.train.distributed import launched_world_size
    from ecomrlve.train.engines.vllm import vllm_available

    cuda = torch.cuda.is_available()
    plan = resolve_engines(
        cfg,
        cuda_available=cuda,
        world_size=launched_world_size(),
        gpu_count=torch.cuda.device_count() if cuda else 0,
        vllm_installed=vllm_available(),
    )
    plan.log()
    return plan


def settle_memory_settings(
    cfg: EcomConfig, *, cuda_available: bool, gpus: int, gpu_memory_gb: float
) -> EcomConfig:
    """`cfg` with `gradient_checkpointing` and `max_tokens_per_micro_batch` made concrete for
    the run: where the config leaves them unset, the memory planner's choice for `gpus` cards of
    `gpu_memory_gb` GB (what `ecomrlve train --dry-run` prints); without CUDA the defaults
    (no recomputation, `CPU_MICRO_BATCH_TOKENS`). An unset pair that cannot fit takes the most
    frugal choice with a warning (the dry-run is where a plan is refused)."""
    from ecomrlve.train.memory import (
        DEFAULT_GRADIENT_CHECKPOINTING,
        DEFAULT_MICRO_BATCH_TOKENS,
        choose_memory_settings,
        model_shape,
    )

    t = cfg.training
    if (
        t.scale.gradient_checkpointing is not None
        and t.scale.max_tokens_per_micro_batch is not None
    ):
        return cfg
    defaults = {
        "gradient_checkpointing": (
            DEFAULT_GRADIENT_CHECKPOINTING
            if t.scale.gradient_checkpointing is None
            else t.scale.gradient_checkpointing
        ),
        "max_tokens_per_micro_batch": t.scale.max_tokens_per_micro_batch
        or (DEFAULT_MICRO_BATCH_TOKENS if cuda_available else CPU_MICRO_BATCH_TOKENS),
    }
    if not cuda_available:
        log.info("memory settings without CUDA: %s", defaults)
        return with_training_block(cfg, "scale", **defaults)
    try:
        shape = model_shape(cfg.agent.model, cfg.agent.tiny)
    except ValueError as err:
        log.warning("%s; memory settings: %s", err, defaults)
        return with_training_block(cfg, "scale", **defaults)
    choice = choose_memory_settings(cfg, gpus=gpus, gpu_memory_gb=gpu_memory_gb, shape=shape)
    verdict = f"peak {choice.plan.peak / 2**30:.1f} GiB of {choice.plan.gpu_memory / 2**30:.1f}"
    if choice.plan.fits:
        log.info("memory plan: %s; %s GiB per GPU", choice.describe(), verdict)
    else:
        log.warning(
            "memory plan does not fit (%s GiB per GPU) even with %s; run "
            "`ecomrlve train --dry-run --gpus %d --gpu-memory %g` for what would",
            verdict,
            ", ".join(choice.chosen),
            gpus,
            gpu_memory_gb,
        )
    return choice.apply(cfg)


def memory_settings_for_this_machine(cfg: EcomConfig) -> EcomConfig:
    """`settle_memory_settings` with this machine's CUDA card and torchrun world (LoRA: one)."""
    import torch

    from ecomrlve.train.distributed import launched_world_size

    cuda = torch.cuda.is_available()
    gpus = 1 if cfg.training.scale.lora_rank > 0 else launched_world_size()
    card = torch.cuda.get_device_properties(0).total_memory / 1e9 if cuda else 0.0
    return settle_memory_settings(cfg, cuda_available=cuda, gpus=gpus, gpu_memory_gb=card)


def apply_plan(policy: Any, plan: EnginePlan, ctx: Any, *, seed: int = 0) -> Any:
    """Ready a loaded policy for training as planned: gradient checkpointing, then LoRA or
    FSDP2. Returns the module to optimise (LoRA wraps it).

    Precision: the weights stay as loaded (fp32 master, `EnginePlan.load_dtype_name`) and
    `dtype: bf16` is compute only: FSDP2's `MixedPrecisionPolicy(param_dtype=bf16,
    reduce_dtype=fp32)` on GPU, autocast otherwise (`ecomrlve_autocast`, read by
    `batching.forward_logprobs`). An AdamW step at lr 1e-6 then changes the weights; on bf16
    weights most such steps round away."""
    import torch

    from ecomrlve.train.distributed import enable_gradient_checkpointing, shard_model
    from ecomrlve.train.lora import apply_lora

    if plan.gradient_checkpointing:
        enable_gradient_checkpointing(policy)
    if plan.lora_rank > 0:
        policy = apply_lora(policy, plan.lora_rank, alpha=plan.lora_alpha, seed=seed)
    mixed_by_fsdp = plan.distributed == "fsdp" and ctx.device.type == "cuda"
    if plan.distributed == "fsdp":
        mixed = torch.bfloat16 if plan.dtype == "bf16" and mixed_by_fsdp else None
        shard_model(policy, ctx, param_dtype=mixed)
    if plan.dtype == "bf16" and not mixed_by_fsdp:
        policy.ecomrlve_autocast = torch.bfloat16
    return policy


def build_rollout_engine(
    plan: EnginePlan,
    policy: Any,
    *,
    model_dir: str | Path | None,
    pad_token_id: int,
    max_model_len: int,
    seed: int = 0,
) -> Any:
    """The planned `RolloutEngine`. vLLM serves `model_dir` (the folder the policy came from)
    and then receives the policy's weights in memory, so it starts from the trained state."""
    if plan.rollout_engine == "hf":
        from ecomrlve.train.engines.hf import HFEngine

        return HFEngine(policy, pad_token_id)
    if plan.rollout_engine == "endpoint" and plan.endpoint is not None:
        from ecomrlve.train.engines.endpoint import EndpointEngine, read_api_key

        pool = plan.endpoint
        engine = EndpointEngine(
            pool.urls,
            pool.model,
            api_key=read_api_key(pool.api_key_env),
            concurrency=pool.concurrency,
            weights_dir=pool.weights_dir,
        )
        engine.check()
        engine.sync_weights(policy)  # the servers start from the trainer's weights
        return engine
    if model_dir is None:
        raise PlanError("the vLLM engine needs the policy's model folder to start from")
    from ecomrlve.train.engines.vllm import VLLMEngine, VLLMUnavailableError

    try:
        engine = VLLMEngine(
            model_dir,
            dtype="bfloat16" if plan.dtype == "bf16" else "float32",
            max_model_len=max_model_len,
            gpu_memory_utilization=plan.vllm_gpu_memory_utilization,
            distributed=plan.world_size > 1,
            seed=seed,
        )
    except VLLMUnavailableError as err:  # e.g. a vllm outside the tested range: one clear line
        raise PlanError(str(err)) from None
    engine.sync_weights(policy)
    return engine
