"""Multi-GPU training on PyTorch's own stack: torchrun + FSDP2 (`fully_shard`).

A full fine-tune of Qwen3-8B does not fit one GPU: bf16 weights and grads are 32 GB and AdamW's
two moments another 32-64 GB. FSDP2 shards parameters, gradients and optimizer state over the
ranks; each decoder layer is gathered just before it runs and freed after.

Launch:   torchrun --nproc_per_node 8 -m ecomrlve train --config configs/ecom_rlve.yaml ...
Every rank runs the same program; `init_distributed` reads torchrun's environment (RANK,
WORLD_SIZE, LOCAL_RANK) and picks NCCL on GPU, gloo on CPU (which is how CI runs 2 ranks).

Exact data parallelism: each rank computes its loss on its shard of the batch, normalised by the
*global* token (or sequence) count, and `shard_model` sets FSDP's gradient divide factor to 1 so
the reduce-scatter sums the per-rank gradients. The result is the gradient of the full-batch
loss, the same as one process would compute, whatever the split of tokens between ranks.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, NoReturn, TypeVar

import torch

log = logging.getLogger(__name__)

T = TypeVar("T")


class DistributedError(ValueError):
    """A distributed setup that cannot work; the message says which setting and why."""


@dataclass(frozen=True)
class DistContext:
    """Where this process sits: rank, world size and the device it computes on."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    device: torch.device = field(default_factory=lambda: torch.device("cpu"))
    backend: str | None = None

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def is_distributed(self) -> bool:
        return self.world_size > 1


def launched_world_size() -> int:
    """WORLD_SIZE as torchrun set it (1 when not launched by torchrun)."""
    try:
        return int(os.environ.get("WORLD_SIZE", "1"))
    except ValueError:
        raise DistributedError(
            f"WORLD_SIZE={os.environ['WORLD_SIZE']!r} is not an integer"
        ) from None


def init_distributed(timeout_s: float = 1800.0) -> DistContext:
    """Join the process group torchrun describes, or return a single-process context.

    NCCL with one GPU per rank (LOCAL_RANK) when CUDA is present, gloo on CPU. Idempotent: a
    second call returns the context of the group already joined.
    """
    world = launched_world_size()
    rank = int(os.environ.get("RANK", "0"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    cuda = torch.cuda.is_available()
    if cuda:
        if world > 1 and local_rank >= torch.cuda.device_count():
            raise DistributedError(
                f"LOCAL_RANK {local_rank} but only {torch.cuda.device_count()} GPUs are visible"
            )
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
    else:
        device = torch.device("cpu")
    if world <= 1:
        return DistContext(device=device)
    import torch.distributed as dist

    backend = "nccl" if cuda else "gloo"
    if not dist.is_initialized():
        kwargs: dict[str, Any] = {"backend": backend, "timeout": timedelta(seconds=timeout_s)}
        if cuda:
            kwargs["device_id"] = device
        dist.init_process_group(**kwargs)
        log.info("rank %d/%d joined the %s process group on %s", rank, world, backend, device)
    return DistContext(rank, world, local_rank, device, backend)


def shutdown_distributed() -> bool:
    """Leave the process group once every rank is done with its collectives (a barrier, so no
    rank tears down while another still gathers); torchrun warns about a leaked group otherwise.
    True when there was a group to leave: end such a process with `exit_rank`."""
    if not group_active():
        return False
    torch.distributed.barrier()
    torch.distributed.destroy_process_group()
    return True


def exit_rank(code: int = 0) -> NoReturn:
    """End a torchrun rank after `shutdown_distributed` without Python's interpreter teardown.

    FSDP2's device mesh, cached by DTensor, keeps the gloo group alive past
    `destroy_process_group`, so its worker threads are never joined. One of them can still be
    releasing the tensors of the last collective when the interpreter finalizes; its request
    for the GIL then ends the thread inside a noexcept destructor and the rank aborts
    ("terminate called without an active exception", SIGABRT) after a run that succeeded,
    about 1 run in 20 of the 2-rank CPU test, and torchrun reports the job failed. So: run the
    exit handlers while the interpreter is whole, flush, and leave with `os._exit`.
    """
    atexit._run_exitfuncs()  # logging.shutdown and every other handler, as a normal exit would
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


# ---------------------------------------------------------------------------------------------
# Model wrapping
# ---------------------------------------------------------------------------------------------


def decoder_layers(model: torch.nn.Module) -> list[torch.nn.Module]:
    """The transformer blocks to shard one by one: classes listed in `_no_split_modules`
    (Hugging Face marks its decoder layers so), found anywhere under `model` (also under PEFT)."""
    names: set[str] = set()
    for module in model.modules():
        names.update(getattr(module, "_no_split_modules", None) or ())
    layers = [m for m in model.modules() if type(m).__name__ in names]
    if not layers:
        raise DistributedError(
            f"{type(model).__name__} lists no decoder-layer classes in _no_split_modules: "
            "cannot choose FSDP units"
        )
    return layers


def enable_gradient_checkpointing(model: torch.nn.Module) -> None:
    """Recompute each layer's activations in backward: trades ~30% compute for memory that
    grows with the layer count, which is what lets 16k-token episodes fit next to an 8B model.
    Non-reentrant, so it composes with FSDP2 and frozen (LoRA) base weights."""
    kwargs = {"use_reentrant": False}
    if hasattr(model, "activation_checkpointing_enable"):  # transformers >= 5.2x
        model.activation_checkpointing_enable(activation_checkpointing_kwargs=kwargs)
    elif hasattr(model, "gradient_checkpointing_enable"):
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kwargs)
    else:
        raise DistributedError(f"{type(model).__name__} does not support gradient checkpointing")
    # config.use_cache stays on: HF skips the cache itself while training with checkpointing,
    # and rollouts through `generate` (in eval mode) need it.
    if hasattr(model, "enable_input_require_grads"):
        # With frozen embeddings (LoRA) the checkpointed blocks would see inputs without grad.
        model.enable_input_require_grads()


def shard_model(
    model: torch.nn.Module,
    ctx: DistContext,
    *,
    param_dtype: torch.dtype | None = None,
    reshard_after_forward: bool = True,
) -> torch.nn.Module:
    """Apply FSDP2 `fully_shard` to every decoder layer, then to the root, in place.

    `param_dtype=torch.bfloat16` is the mixed-precision policy: weights are gathered and
    computed in bf16 while the sharded master copy, the optimizer state and the gradient
    reduction stay in fp32. Gradients are summed (divide factor 1), see the module docstring.
    Works on one process too (a world of one), which keeps the code path identical.
    """
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    if not (torch.distributed.is_available() and torch.distributed.is_initialized()):
        raise DistributedError("shard_model needs a process group: call init_distributed first")
    mesh = init_device_mesh(ctx.device.type, (ctx.world_size,))
    policy = MixedPrecisionPolicy(
        param_dtype=param_dtype, reduce_dtype=torch.float32 if param_dtype else None
    )
    for layer in decoder_layers(model):
        fully_shard(layer, mesh=mesh, mp_policy=policy, reshard_after_forward=reshard_after_forward)
    fully_shard(model, mesh=mesh, mp_policy=policy, reshard_after_forward=reshard_after_forward)
    for module in model.modules():
        if hasattr(module, "set_gradient_divide_factor"):
            # Plain SUM reduce-scatter: gloo has no PREMUL_SUM/AVG, and a sum is what the
            # globally normalised per-rank losses need.
            module.set_gradient_divide_factor(1.0)
            module.set_force_sum_reduction_for_comms(True)
    return model


def is_sharded(model: torch.nn.Module) -> bool:
    from torch.distributed.fsdp import FSDPModule

    return isinstance(model, FSDPModule)


@contextlib.contextmanager
def gathered_for_generation(model: torch.nn.Module) -> Iterator[torch.nn.Module]:
    """Hold the full weights of an FSDP2 model on every rank while it generates.

    Under FSDP every forward all-gathers, so ranks that sample different numbers of tokens
    would deadlock. Gathered once up front, with resharding switched off, `generate` runs with
    no collective at all; the shards are restored on exit. A plain model passes through.
    """
    if not is_sharded(model):
        yield model
        return
    fsdp_modules = [m for m in model.modules() if hasattr(m, "unshard")]
    for module in fsdp_modules:
        module.set_reshard_after_forward(False, recurse=False)
    for module in fsdp_modules:
        module.unshard()
    try:
        yield model
    finally:
        for module in fsdp_modules:
            module.reshard()
            module.set_reshard_after_forward(True, recurse=False)


# ---------------------------------------------------------------------------------------------
# Data parallel helpers (all work on one process without a group)
# ---------------------------------------------------------------------------------------------


def shard_items(items: Sequence[T], ctx: DistContext) -> list[T]:
    """This rank's share of `items`: every world_size-th item from its rank (balanced)."""
    return list(items[ctx.rank :: ctx.world_size])


def all_reduce_sum(value: float, ctx: DistContext) -> float:
    """The sum of a float over ranks (float64, so token counts stay exact)."""
    if not ctx.is_distributed:
        return float(value)
    tensor = torch.tensor([value], dtype=torch.float64, device=_collective_device(ctx))
    torch.distributed.all_reduce(tensor)
    return float(tensor.item())


def all_gather_objects(obj: T, ctx: DistContext) -> list[T]:
    """Every rank's `obj`, in rank order (pickled; for small things such as episode outcomes)."""
    if not ctx.is_distributed:
        return [obj]
    out: list[Any] = [None] * ctx.world_size
    torch.distributed.all_gather_object(out, obj)
    return out


def broadcast_object(obj: T, ctx: DistContext, src: int = 0) -> T:
    """Rank `src`'s `obj` on every rank."""
    if not ctx.is_distributed:
        return obj
    box = [obj]
    torch.distributed.broadcast_object_list(box, src=src)
    return box[0]


def group_active() -> bool:
    """True inside an initialised process group (torchrun, or a test's gloo group)."""
    return torch.distributed.is_available() and torch.distributed.is_initialized()


def barrier(ctx: DistContext | None = None) -> None:
    """Wait for every rank: of `ctx` when given, else of the active process group (none: a no-op).

    The one barrier of the package; the checkpointer, which has no `DistContext`, calls it bare."""
    active = group_active() if ctx is None else ctx.is_distributed
    if active:
        torch.distributed.barrier()


def _collective_device(ctx: DistContext) -> torch.device:
    return ctx.device if ctx.backend == "nccl" else torch.device("cpu")


# ---------------------------------------------------------------------------------------------
# Full weights, for the rollout engine and for export
# ---------------------------------------------------------------------------------------------


def iter_full_weights(policy: Any) -> Iterator[tuple[str, torch.Tensor]]:
    """`(hf_name, tensor)` for every weight of the policy, as a plain Hugging Face checkpoint
    would name it: FSDP2 shards are gathered one tensor at a time (collective: call on every
    rank), LoRA adapters are merged into their base weights without touching the model.

    Accepts a module or a state dict. Peak extra memory is one full tensor, so an 8B model can
    stream into vLLM without ever holding a second copy.
    """
    from ecomrlve.train.lora import is_lora_model, merged_weights

    if isinstance(policy, dict):
        yield from policy.items()
        return
    if is_lora_model(policy):
        yield from merged_weights(policy)
        return
    for name, tensor in policy.state_dict().items():
        full = tensor.full_tensor() if hasattr(tensor, "full_tensor") else tensor
        yield name, full.detach()
