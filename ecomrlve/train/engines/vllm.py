"""A `RolloutEngine` on a colocated `vllm.LLM`: same calls as the HF engine, much faster sampling.

Colocated means vLLM runs inside the trainer's process (`VLLM_ENABLE_V1_MULTIPROCESSING=0`,
set here before vLLM is imported): weight sync is then a function call on the live vLLM worker
(`LLM.collective_rpc` -> `worker.reload_weights(weights_iterator=..., is_checkpoint_format=
True)`), tensors move by reference and nothing is written to disk. That call is what the tested
range `TESTED_VLLM` (the `gpu` extra's pin) offers; another version stops with an error naming
the range before any engine starts. Under FSDP every rank runs its own vLLM (tensor parallel 1,
`external_launcher`, as TRL's colocate mode does) and the full weights are streamed one tensor
at a time.

GPU memory is shared by turns: `sleep()` after the rollout phase offloads vLLM's weights and
drops its KV cache (level 1) so the update has the card; `sync_weights` wakes the weights,
loads the new ones, then wakes the KV cache. vLLM's CPU backend has no sleep mode; there the
calls are skipped with one log line.

Log-probs use vLLM's `processed_logprobs` mode: log softmax(logits / T) of the sampled token,
the quantity the HF engine records and the DAPO ratio needs. Install with the `gpu` extra; the
CPU test runs the `vllm-cpu` build in its own virtualenv (`scripts/vllm_cpu_env.sh`).
"""

from __future__ import annotations

import logging
import os
import re
import time
from pathlib import Path
from typing import Any

from ecomrlve.train.engine import Completion, SamplingParams, has_prompts

log = logging.getLogger(__name__)

# Per-request seeds: one stream per prompt index, so batch composition never changes a sample.
_SEED_STRIDE = 1_000_003
_SEED_MOD = 2**63 - 1


class VLLMUnavailableError(ImportError):
    """vLLM is not installed in this environment."""


def vllm_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("vllm") is not None


# The vLLM versions this engine is tested with (the `gpu` extra pins the same range): their
# workers have `reload_weights(weights_iterator=, is_checkpoint_format=True)`, which weight sync
# needs; older ones lack it and newer ones are unknown.
TESTED_VLLM = ((0, 32), (0, 35))  # >= 0.32, < 0.35


def check_vllm_version(version: str) -> None:
    """Raise `VLLMUnavailableError` naming the tested range unless `version` is inside it."""
    numbers = tuple(int(n) for n in re.findall(r"\d+", version)[:2])
    low, high = TESTED_VLLM
    if not low <= numbers < high:
        raise VLLMUnavailableError(
            f"vllm {version} is outside the tested range >={'.'.join(map(str, low))},"
            f"<{'.'.join(map(str, high))} (weight sync uses worker.reload_weights); "
            "pip install 'ecomrlve[gpu]' installs a tested version"
        )


def _import_vllm():
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    try:
        import vllm
    except ImportError as err:
        raise VLLMUnavailableError(
            f"the vLLM rollout engine needs vllm ({err}); install the gpu extra: "
            "pip install 'ecomrlve[gpu]' (on CPU: scripts/vllm_cpu_env.sh)"
        ) from None
    check_vllm_version(getattr(vllm, "__version__", "0"))
    return vllm


def _free_cached_gpu_memory() -> None:
    """Hand the trainer's cached allocator blocks back before vLLM wakes: they are free to
    torch but not to vLLM, which would otherwise find the card full."""
    import torch

    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def request_seed(seed: int, index: int) -> int:
    return (seed * _SEED_STRIDE + index) % _SEED_MOD


def _load_weights_on_worker(worker: Any, weights: Any) -> str:
    """Runs inside vLLM's worker (in this process): load checkpoint-format weights.

    vLLM repacks weights after loading (the CPU backend into oneDNN layouts, quantised kernels
    likewise), so a plain `model.load_weights` would meet empty parameters; `reload_weights`
    restores the checkpoint layout layer by layer, loads, and repacks.
    """
    if not hasattr(worker, "reload_weights"):
        raise VLLMUnavailableError(
            "this vLLM worker has no reload_weights: use a vllm in the tested range "
            f"{TESTED_VLLM} (pip install 'ecomrlve[gpu]')"
        )
    worker.reload_weights(weights_iterator=weights, is_checkpoint_format=True)
    return "reload_weights"


class VLLMEngine:
    """Samples with a colocated `vllm.LLM`.

    Args:
        model: a local model folder (the same one the trainer loaded).
        dtype: "auto", "bfloat16", "float32", ... as vLLM takes it.
        max_model_len: longest prompt + completion, in tokens (the episode budget).
        gpu_memory_utilization: share of the GPU vLLM may take (weights + KV cache); the rest
            is the trainer's while vLLM is awake.
        enable_sleep_mode: None = on when CUDA is present (vLLM supports it only there).
        cpu_kv_cache_bytes: KV cache size on vLLM's CPU backend (on CPU the
            utilisation fraction is of host RAM and refuses to start on a shared machine).
        distributed: True under torchrun with several ranks: one engine per rank.
        seed: vLLM's own seed (sampling uses per-request seeds from `SamplingParams.seed`).
        llm_kwargs: anything else `vllm.LLM` takes.
    """

    def __init__(
        self,
        model: str | Path,
        *,
        dtype: str = "auto",
        max_model_len: int | None = None,
        gpu_memory_utilization: float = 0.35,
        enable_sleep_mode: bool | None = None,
        cpu_kv_cache_bytes: int = 256 << 20,
        distributed: bool = False,
        seed: int = 0,
        enforce_eager: bool = False,
        llm_kwargs: dict[str, Any] | None = None,
    ) -> None:
        if not 0.0 < gpu_memory_utilization <= 1.0:
            raise ValueError(
                f"gpu_memory_utilization must be in (0, 1], got {gpu_memory_utilization}"
            )
        vllm = _import_vllm()
        import torch

        self._vllm = vllm
        self.on_gpu = torch.cuda.is_available()
        self.sleep_supported = self.on_gpu
        if enable_sleep_mode is None:
            enable_sleep_mode = self.on_gpu
        if enable_sleep_mode and not self.sleep_supported:
            log.info("vLLM sleep mode needs a GPU; on CPU the engine stays awake (skipped)")
            enable_sleep_mode = False
        self.sleep_enabled = enable_sleep_mode
        self.asleep = False
        self._logged_sleep_skip = False
        kwargs: dict[str, Any] = {
            "model": str(model),
            "dtype": dtype,
            "seed": seed,
            "enforce_eager": enforce_eager,
            "logprobs_mode": "processed_logprobs",
            "enable_prefix_caching": True,
            "disable_log_stats": True,
        }
        if max_model_len is not None:
            kwargs["max_model_len"] = max_model_len
        if self.on_gpu:
            kwargs["gpu_memory_utilization"] = gpu_memory_utilization
            kwargs["enable_sleep_mode"] = enable_sleep_mode
        else:
            kwargs["kv_cache_memory_bytes"] = cpu_kv_cache_bytes
        if distributed:
            # Reuse torchrun's process group: each rank holds a full copy (TP 1).
            kwargs["distributed_executor_backend"] = "external_launcher"
            kwargs["tensor_parallel_size"] = 1
        kwargs.update(llm_kwargs or {})
        started = time.perf_counter()
        self.llm = vllm.LLM(**kwargs)
        log.info("vLLM engine on %s started in %.1fs", model, time.perf_counter() - started)

    # -----------------------------------------------------------------------------------------
    # RolloutEngine
    # -----------------------------------------------------------------------------------------

    def generate(
        self, prompts_token_ids: list[list[int]], sampling: SamplingParams
    ) -> list[Completion]:
        """One completion per prompt, in order; `sampling.seed` + index seeds each request."""
        if not has_prompts(prompts_token_ids):
            return []
        self.wake_up()
        vllm = self._vllm
        params = [
            vllm.SamplingParams(
                n=1,
                temperature=sampling.temperature,
                top_p=sampling.top_p,
                max_tokens=sampling.max_new_tokens,
                stop_token_ids=list(sampling.stop_token_ids),
                seed=(
                    sampling.row_seeds[i] % _SEED_MOD
                    if sampling.row_seeds
                    else request_seed(sampling.seed, i)
                ),
                logprobs=0,
                detokenize=False,
                skip_special_tokens=False,
            )
            for i in range(len(prompts_token_ids))
        ]
        prompts = [{"prompt_token_ids": list(p)} for p in prompts_token_ids]
        outputs = self.llm.generate(prompts, params, use_tqdm=False)
        return [self._completion(out, sampling) for out in outputs]

    @staticmethod
    def _completion(output: Any, sampling: SamplingParams) -> Completion:
        sample = output.outputs[0]
        ids = list(sample.token_ids)
        logprobs = [
            float(step[token].logprob) for token, step in zip(ids, sample.logprobs, strict=True)
        ]
        stops = set(sampling.stop_token_ids)
        if sample.finish_reason == "stop":
            finish = "stop"
        elif sample.finish_reason == "length":
            finish = "length"
        else:
            raise RuntimeError(f"vLLM request ended with {sample.finish_reason!r}")
        if finish == "stop" and stops and (not ids or ids[-1] not in stops):
            # vLLM stopped on the model's own EOS, which the HF engine reports the same way.
            log.debug("vLLM stopped on a token outside stop_token_ids")
        return Completion(ids, logprobs, finish)

    def sync_weights(self, policy: Any) -> None:
        """Load the trainer's current weights into vLLM, in memory.

        `policy` is a module (plain, FSDP2-sharded or LoRA) or a state dict with Hugging Face
        names. Collective under FSDP: every rank calls it. The prefix cache is reset, since its
        KV entries were computed by the old weights.
        """
        from ecomrlve.train.distributed import iter_full_weights

        started = time.perf_counter()
        if self.asleep and self.sleep_enabled:
            _free_cached_gpu_memory()
            self.llm.wake_up(tags=["weights"])
        weights = iter_full_weights(policy)
        used = self.llm.collective_rpc(_load_weights_on_worker, args=(weights,))
        if self.asleep and self.sleep_enabled:
            self.llm.wake_up(tags=["kv_cache"])
            self.asleep = False
        self.llm.reset_prefix_cache()
        log.debug("synced weights into vLLM (%s) in %.2fs", used[0], time.perf_counter() - started)

    # -----------------------------------------------------------------------------------------
    # Memory sharing with the trainer
    # -----------------------------------------------------------------------------------------

    def sleep(self) -> None:
        """Free vLLM's GPU memory for the update phase (weights offloaded, KV cache dropped)."""
        if not self.sleep_enabled:
            if not self._logged_sleep_skip:
                log.info("vLLM sleep/wake skipped: sleep mode is off or unsupported (CPU)")
                self._logged_sleep_skip = True
            return
        if not self.asleep:
            self.llm.sleep(level=1)
            self.asleep = True

    def wake_up(self) -> None:
        """Bring weights and KV cache back (a no-op when awake or without sleep mode)."""
        if self.sleep_enabled and self.asleep:
            _free_cached_gpu_memory()
            self.llm.wake_up()
            self.asleep = False
