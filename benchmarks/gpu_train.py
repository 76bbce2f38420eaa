"""Update-phase and rollout throughput, and peak memory against the dry-run plan, on one GPU.

    python benchmarks/gpu_train.py            # Qwen3-8B shape (16 of its 36 layers); <= 8 min
    python benchmarks/gpu_train.py --layers 36 --max-tokens 4096   # the full depth, if it fits
    python benchmarks/gpu_train.py --tiny     # the same code on CPU in seconds

Weights cannot be downloaded on the GPU machine, so the model is Qwen3-8B's architecture
(hidden 4096, 32 heads, 8 KV heads, head_dim 128, intermediate 12288, vocab 151936) randomly
initialised; throughput does not depend on the values of the weights. A full fine-tune of all
36 layers does not fit one GPU with fp32 master weights (the dry-run says so), hence the
default depth of 16 layers on one card; per-token cost scales with depth.

The update runs the trainer's memory path: fp32 master weights and AdamW states, bf16 autocast
compute (`ecomrlve_autocast`, as `plan.apply_plan` sets it on one process), micro-batches cut
by a token budget (`batching.token_micro_batches`), log-probs through the chunked LM head at
trained positions only (`batching.forward_logprobs`), fused AdamW.

Measured, each beside its baseline:
- update: one DAPO optimizer step (old-log-prob pass, clipped-surrogate loss with
  `dapo.policy_loss`, backward, clip, AdamW) on synthetic episodes, with gradient checkpointing
  (the article's setting) and without (baseline). tokens/s counts every position of every
  sequence; MFU = 6·N·tokens/s over the peak bf16 dense rate (H200/H100 ≈ 990 TFLOP/s; attention
  FLOPs and the checkpoint recompute are not counted, as is usual for MFU). The old-log-prob
  pass is timed apart, so MFU covers the update only. Peak GB is `max_memory_allocated`;
  "plan GB" is `ecomrlve.train.memory`'s update-phase estimate for the same shape and token
  budget (without the CUDA context, which the allocator does not count).
- rollout: the HF `generate` engine at batch B (what the loop runs without vLLM) against
  batch 1 (baseline).
"""

from __future__ import annotations

import argparse
import functools
import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from rich.console import Console
from rich.table import Table

from ecomrlve.config import EcomConfig
from ecomrlve.train import dapo
from ecomrlve.train.batching import collate, forward_logprobs, token_micro_batches
from ecomrlve.train.chat import TokenSequence
from ecomrlve.train.engine import SamplingParams
from ecomrlve.train.engines.hf import HFEngine
from ecomrlve.train.memory import CONTEXT_BYTES, GIB, ModelShape, plan_memory

PEAK_BF16_TFLOPS = 990.0  # H200 (and H100 SXM) dense bf16
QWEN3_8B = {
    "vocab_size": 151_936,
    "hidden_size": 4096,
    "intermediate_size": 12_288,
    "num_hidden_layers": 36,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "max_position_embeddings": 40_960,
    "rope_theta": 1_000_000.0,
    "tie_word_embeddings": False,
}
TINY = {
    "vocab_size": 512,
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "num_key_value_heads": 1,
    "head_dim": 32,
    "max_position_embeddings": 2048,
    "tie_word_embeddings": False,
}


@dataclass
class Row:
    phase: str
    variant: str
    tokens: int
    seconds: float
    tokens_per_s: float
    tflops: float | None
    mfu: float | None
    peak_mem_gb: float | None
    plan_gb: float | None = None
    note: str = ""


def qwen3_config(shape: dict):
    from transformers import Qwen3Config

    cfg = dict(shape)
    rope_theta = cfg.pop("rope_theta", None)
    config = Qwen3Config(**cfg, pad_token_id=0, eos_token_id=None, bos_token_id=None)
    if rope_theta is not None:
        config.rope_parameters = {"rope_type": "default", "rope_theta": rope_theta}
    return config


def count_parameters(shape: dict) -> int:
    """Parameters of the shape, counted on the meta device (no memory)."""
    from transformers import Qwen3ForCausalLM

    with torch.device("meta"):
        model = Qwen3ForCausalLM(qwen3_config(shape))
    return sum(p.numel() for p in model.parameters())


def build_model(shape: dict, device: torch.device, dtype: torch.dtype):
    from transformers import Qwen3ForCausalLM

    previous = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        torch.manual_seed(0)
        with device:
            model = Qwen3ForCausalLM(qwen3_config(shape))
    finally:
        torch.set_default_dtype(previous)
    model.generation_config.eos_token_id = None  # random weights: always run to max tokens
    model.generation_config.pad_token_id = 0
    return model


def synthetic_episodes(
    n: int, prompt_len: int, response_len: int, vocab: int, seed: int
) -> list[TokenSequence]:
    gen = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(n):
        seq = TokenSequence()
        seq.add_prompt(torch.randint(1, vocab, (prompt_len,), generator=gen).tolist())
        ids = torch.randint(1, vocab, (response_len,), generator=gen).tolist()
        seq.add_generated(ids, (-torch.rand(response_len, generator=gen) * 3).tolist())
        out.append(seq)
    return out


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def peak_gb(device: torch.device) -> float | None:
    if device.type != "cuda":
        return None
    return torch.cuda.max_memory_allocated(device) / 2**30


def reset_peak(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)


def update_phase(
    model,
    episodes,
    *,
    max_tokens: int,
    steps: int,
    device: torch.device,
    n_params: int,
    checkpointing: bool,
    deadline: float,
) -> Row:
    from ecomrlve.train.distributed import enable_gradient_checkpointing

    variant = "grad checkpointing" if checkpointing else "no checkpointing (baseline)"
    if checkpointing:
        enable_gradient_checkpointing(model)
    elif hasattr(model, "activation_checkpointing_disable"):  # transformers >= 5.2x
        model.activation_checkpointing_disable()
    else:
        model.gradient_checkpointing_disable()
    fused = device.type == "cuda"
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-6, weight_decay=0.1, fused=fused)
    cuts = token_micro_batches(
        range(len(episodes)), [len(s) for s in episodes], max_tokens, len(episodes)
    )
    batches = [[episodes[i] for i in cut] for cut in cuts]
    starts = [cut[0] for cut in cuts]
    total_tokens = float(sum(s.generated_tokens for s in episodes))
    positions = sum(len(s) for s in episodes)
    advantages = torch.randn(len(episodes), generator=torch.Generator().manual_seed(1))
    reset_peak(device)

    def one_step() -> tuple[float, float]:
        started = time.perf_counter()
        model.eval()
        old = []
        with torch.no_grad():
            for chunk in batches:
                old.append(forward_logprobs(model, collate(chunk, 0).to(device))[0])  # (b, L-1)
        sync(device)
        old_s = time.perf_counter() - started
        model.train()
        optimizer.zero_grad(set_to_none=True)
        for k, chunk in enumerate(batches):
            batch = collate(chunk, 0).to(device)
            logprobs, _ = forward_logprobs(model, batch)  # (b, L-1)
            adv = advantages[starts[k] : starts[k] + len(chunk)].to(device)  # (b,)
            loss, _ = dapo.policy_loss(
                logprobs,
                old[k],
                adv,
                batch.loss_mask,
                clip_ratio_low=0.2,
                clip_ratio_high=0.28,
                loss_agg_mode="token-mean",
                total_tokens=total_tokens,
            )
            loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        sync(device)
        return old_s, time.perf_counter() - started - old_s

    try:
        one_step()  # warm-up: allocator, kernels, optimizer state
        times = []
        for _ in range(steps):
            if times and time.perf_counter() > deadline:
                break
            times.append(one_step()[1])
    except torch.OutOfMemoryError:
        optimizer.state.clear()
        reset_peak(device)
        return Row("update", variant, positions, 0.0, 0.0, None, None, None, None, "out of memory")
    finally:
        model.zero_grad(set_to_none=True)
    optimizer.state.clear()  # free the moments before the next variant builds its own
    seconds = sum(times) / len(times)
    rate = positions / seconds
    tflops = 6.0 * n_params * rate / 1e12
    mfu = tflops / PEAK_BF16_TFLOPS if device.type == "cuda" else None
    return Row(
        "update",
        variant,
        positions,
        seconds,
        rate,
        tflops,
        mfu,
        peak_gb(device),
        plan_gb(model, max_tokens, checkpointing),
        f"{len(times)} steps, {len(episodes)} seqs x {len(episodes[0])} tokens, "
        f"{len(batches)} micro-batches <= {max_tokens} tokens",
    )


def plan_gb(model, tokens: int, checkpointing: bool) -> float:
    """The dry-run's update-phase estimate for this model on one GPU (no vLLM, no context)."""
    c = model.config
    shape = ModelShape(
        c.hidden_size,
        c.num_hidden_layers,
        c.intermediate_size,
        c.num_attention_heads,
        c.num_key_value_heads,
        c.head_dim,
        c.vocab_size,
        bool(c.tie_word_embeddings),
    )
    cfg = EcomConfig.model_validate(
        {
            "training": {
                "gradient_checkpointing": checkpointing,
                "max_tokens_per_micro_batch": tokens,
            }
        }
    )
    plan = plan_memory(cfg, gpus=1, gpu_memory_gb=1000.0, shape=shape)
    return (plan.update_peak - CONTEXT_BYTES) / GIB


def rollout_phase(
    model,
    *,
    prompts: int,
    prompt_len: int,
    new_tokens: int,
    vocab: int,
    device: torch.device,
    baseline: bool,
) -> Row:
    engine = HFEngine(model, pad_token_id=0, max_batch_size=max(prompts, 1))
    gen = torch.Generator().manual_seed(2)
    batch = [torch.randint(1, vocab, (prompt_len,), generator=gen).tolist() for _ in range(prompts)]
    sampling = SamplingParams(max_new_tokens=new_tokens, temperature=1.0, seed=3)
    reset_peak(device)
    model.eval()
    engine.generate(batch[:1], SamplingParams(max_new_tokens=2, temperature=1.0))  # warm-up
    sync(device)
    started = time.perf_counter()
    if baseline:
        done = [engine.generate([p], sampling)[0] for p in batch]
    else:
        done = engine.generate(batch, sampling)
    sync(device)
    seconds = time.perf_counter() - started
    tokens = sum(len(c.token_ids) for c in done)
    variant = "HF generate, batch 1 (baseline)" if baseline else f"HF generate, batch {prompts}"
    return Row(
        "rollout",
        variant,
        tokens,
        seconds,
        tokens / seconds,
        None,
        None,
        peak_gb(device),
        None,
        f"{prompts} prompts x {prompt_len} + {new_tokens} new tokens",
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tiny", action="store_true", help="tiny shape on CPU (seconds)")
    parser.add_argument("--sequences", type=int, default=None, help="episodes per update")
    parser.add_argument("--max-tokens", type=int, default=None, help="tokens per micro-batch")
    parser.add_argument("--layers", type=int, default=None, help="decoder layers (8B: 16)")
    parser.add_argument("--prompt-len", type=int, default=None)
    parser.add_argument("--response-len", type=int, default=None)
    parser.add_argument("--steps", type=int, default=3, help="timed optimizer steps")
    parser.add_argument("--rollout-prompts", type=int, default=None)
    parser.add_argument("--rollout-tokens", type=int, default=None)
    parser.add_argument("--budget-s", type=float, default=420.0, help="stop timing after this")
    parser.add_argument("--json", type=Path, default=None, help="also write the rows here")
    args = parser.parse_args()

    started = time.perf_counter()
    cuda = torch.cuda.is_available() and not args.tiny
    device = torch.device("cuda" if cuda else "cpu")
    dtype = torch.float32  # fp32 master weights; bf16 compute comes from autocast on CUDA
    shape = dict(TINY if args.tiny else QWEN3_8B)
    if args.layers or not args.tiny:
        shape["num_hidden_layers"] = args.layers or 16
    # Defaults: an 8B update of 8 x 2048 tokens in micro-batches of 2; rollouts of 32 x 256.
    big = not args.tiny
    sequences = args.sequences or 8
    max_tokens = args.max_tokens or (4096 if big else 128)
    prompt_len = args.prompt_len or (1024 if big else 32)
    response_len = args.response_len or (1024 if big else 32)
    rollout_prompts = args.rollout_prompts or (32 if big else 4)
    rollout_tokens = args.rollout_tokens or (256 if big else 16)
    if not cuda and not args.tiny:
        Console(stderr=True).print("no CUDA device: the 8B shape needs a GPU; use --tiny on CPU")
        raise SystemExit(2)

    n_params = count_parameters(shape)
    model = build_model(shape, device, dtype)
    if cuda:
        model.ecomrlve_autocast = torch.bfloat16  # what plan.apply_plan sets on one process
    build_s = time.perf_counter() - started
    deadline = started + args.budget_s
    episodes = synthetic_episodes(sequences, prompt_len, response_len, shape["vocab_size"], 0)

    update = functools.partial(
        update_phase,
        model,
        episodes,
        max_tokens=max_tokens,
        steps=args.steps,
        device=device,
        n_params=n_params,
        deadline=deadline,
    )
    rollout = functools.partial(
        rollout_phase,
        model,
        prompt_len=prompt_len // 4 or 1,
        new_tokens=rollout_tokens,
        vocab=shape["vocab_size"],
        device=device,
    )
    rows = [
        update(checkpointing=True),
        update(checkpointing=False),
        rollout(prompts=rollout_prompts, baseline=False),
    ]
    baseline_prompts = max(1, min(rollout_prompts, 4 if big else rollout_prompts))
    rows.append(rollout(prompts=baseline_prompts, baseline=True))

    name = torch.cuda.get_device_name(device) if cuda else "CPU"
    size = f"{n_params / 1e9:.2f}B" if n_params >= 1e8 else f"{n_params / 1e6:.2f}M"
    table = Table(
        title=f"{'tiny' if args.tiny else 'Qwen3-8B'}-shaped policy, {size} params "
        f"({shape['num_hidden_layers']} layers), fp32 master"
        f"{' + bf16 autocast' if cuda else ''} on {name} (built in {build_s:.0f}s)"
    )
    for col in (
        "phase",
        "variant",
        "tokens",
        "s / step",
        "tokens/s",
        "TFLOP/s",
        "MFU",
        "peak GB",
        "plan GB",
        "note",
    ):
        table.add_column(col, justify="left" if col in ("phase", "variant", "note") else "right")
    for r in rows:
        table.add_row(
            r.phase,
            r.variant,
            f"{r.tokens:,}",
            f"{r.seconds:.3f}",
            f"{r.tokens_per_s:,.0f}",
            "-" if r.tflops is None else f"{r.tflops:.1f}",
            "-" if r.mfu is None else f"{100 * r.mfu:.1f}%",
            "-" if r.peak_mem_gb is None else f"{r.peak_mem_gb:.1f}",
            "-" if r.plan_gb is None else f"{r.plan_gb:.1f}",
            r.note,
        )
    console = Console(width=160)
    console.print(table)
    console.print(
        f"MFU against {PEAK_BF16_TFLOPS:.0f} TFLOP/s bf16 dense; 6·N·tokens FLOPs, "
        f"N = {n_params:,}; total wall {time.perf_counter() - started:.0f}s"
    )
    if args.json:
        args.json.write_text(
            json.dumps({"params": n_params, "device": name, "rows": [asdict(r) for r in rows]})
        )


if __name__ == "__main__":
    main()
