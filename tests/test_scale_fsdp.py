"""FSDP2 data parallelism on CPU: 2 ranks on gloo under torchrun against one plain process.

Run as a script (`torchrun --nproc_per_node 2 tests/test_scale_fsdp.py OUT`), this file is the
worker: a few DAPO steps on a tiny Qwen3, built from the training core's pieces (HF engine,
`collate`, `forward_logprobs`, `dapo.policy_loss`). Each rank samples its share of the episodes
with the FSDP model gathered (ranks stop at different lengths, which would deadlock a sharded
forward), the episodes are exchanged, and each rank computes the loss of its half normalised by
the global token count; FSDP sums the gradients. The test runs the same script once without
torchrun and checks that both ranks end with identical weights that match the single process,
and that the per-step losses agree.
"""

from __future__ import annotations

import json
import socket
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # torchrun subprocesses

STEPS = 3
PROMPTS = 4
GROUP = 2
VOCAB = 64
EOS = 3


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---------------------------------------------------------------------------------------------
# The worker
# ---------------------------------------------------------------------------------------------


def _tiny_qwen3():
    from transformers import Qwen3ForCausalLM

    from ecomrlve.testing.training import small_qwen3_config

    config = small_qwen3_config(
        vocab_size=VOCAB, hidden_size=64, intermediate_size=128, eos_token_id=EOS
    )
    return Qwen3ForCausalLM(config)


def worker(out: Path) -> None:
    import numpy as np
    import torch

    from ecomrlve.train import dapo
    from ecomrlve.train.batching import collate, forward_logprobs
    from ecomrlve.train.chat import TokenSequence
    from ecomrlve.train.checkpoint import save_checkpoint
    from ecomrlve.train.distributed import (
        all_gather_objects,
        all_reduce_sum,
        enable_gradient_checkpointing,
        exit_rank,
        gathered_for_generation,
        init_distributed,
        iter_full_weights,
        shard_items,
        shard_model,
        shutdown_distributed,
    )
    from ecomrlve.train.engine import SamplingParams
    from ecomrlve.train.engines.hf import HFEngine

    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    ctx = init_distributed()
    torch.manual_seed(0)
    policy = _tiny_qwen3()
    enable_gradient_checkpointing(policy)
    if ctx.is_distributed:
        shard_model(policy, ctx)
    optimizer = torch.optim.AdamW(policy.parameters(), lr=3e-3, weight_decay=0.1)
    engine = HFEngine(policy, pad_token_id=0)
    rng = np.random.default_rng(np.random.SeedSequence([7]))
    lengths = rng.integers(3, 9, size=PROMPTS)
    prompts = [rng.integers(4, VOCAB, size=int(n)).tolist() for n in lengths]
    episodes = list(range(PROMPTS * GROUP))  # episode i answers prompt i // GROUP
    losses, generated_by_rank = [], []

    for step in range(STEPS):
        # ---- rollouts: this rank's episodes, one seed per global episode index
        mine = shard_items(episodes, ctx)
        local = []
        with gathered_for_generation(policy):
            for i in mine:
                sampling = SamplingParams(
                    max_new_tokens=12, temperature=1.0, stop_token_ids=(EOS,), seed=1000 * step + i
                )
                done = engine.generate([prompts[i // GROUP]], sampling)[0]
                local.append((i, done.token_ids, done.logprobs))
        generated_by_rank.append(sum(len(t) for _, t, _ in local))
        rollouts = sorted(r for part in all_gather_objects(local, ctx) for r in part)

        sequences = []
        for i, tokens, logprobs in rollouts:
            seq = TokenSequence()
            seq.add_prompt(prompts[i // GROUP])
            seq.add_generated(tokens, logprobs)
            sequences.append(seq)
        rewards = torch.tensor([sum(t % 2 == 0 for t in s.token_ids) / len(s) for s in sequences])
        group_index = torch.tensor([i // GROUP for i in episodes])  # (N,)
        advantages = dapo.group_advantages(rewards, group_index)  # (N,)
        total_tokens = float(sum(sum(s.loss_mask) for s in sequences))

        # ---- update: this rank's sequences, normalised by the global token count
        own = shard_items(episodes, ctx)
        batch = collate([sequences[i] for i in own], pad_token_id=0)
        policy.eval()
        with torch.no_grad():
            old, _ = forward_logprobs(policy, batch)  # (b, L-1)
        policy.train()
        optimizer.zero_grad(set_to_none=True)
        logprobs, _ = forward_logprobs(policy, batch)  # (b, L-1)
        loss, _ = dapo.policy_loss(
            logprobs,
            old,
            advantages[own],
            batch.loss_mask,
            clip_ratio_low=0.2,
            clip_ratio_high=0.28,
            loss_agg_mode="token-mean",
            total_tokens=total_tokens,
        )
        # A sequence-level term too, so the gradient is not zero at ratio 1 with zero-mean A.
        loss = loss + dapo.sft_loss(logprobs, batch.loss_mask, total_tokens=total_tokens)
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(policy.parameters(), 0.5)
        grad_norm = grad_norm.full_tensor() if hasattr(grad_norm, "full_tensor") else grad_norm
        optimizer.step()
        losses.append(
            {
                "loss": all_reduce_sum(float(loss), ctx),
                "grad_norm": float(grad_norm),
                "tokens": total_tokens,
                "rollouts": [r[1] for r in rollouts],
            }
        )

    # Sharded checkpoint: each rank writes its own shards (resumable on another world size).
    save_checkpoint(out / "ckpt", STEPS, model=policy, optimizer=optimizer, state={"steps": STEPS})
    weights = {name: t.clone() for name, t in iter_full_weights(policy)}
    torch.save(weights, out / f"weights-rank{ctx.rank}.pt")
    (out / f"log-rank{ctx.rank}.json").write_text(
        json.dumps({"world_size": ctx.world_size, "steps": losses, "generated": generated_by_rank})
    )
    print(f"rank {ctx.rank} done")  # not flushed: exit_rank must flush it
    if shutdown_distributed():
        exit_rank(0)


# ---------------------------------------------------------------------------------------------
# The test
# ---------------------------------------------------------------------------------------------


def _run(args: list[str], out: Path) -> str:
    from ecomrlve.testing.training import run_offline  # imports stay in functions in this file

    return run_offline([*args, str(Path(__file__).resolve()), str(out)], timeout=240)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory):
    single = tmp_path_factory.mktemp("single")
    fsdp = tmp_path_factory.mktemp("fsdp")
    assert "rank 0 done" in _run([sys.executable], single)
    stdout = _run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--nproc_per_node",
            "2",
            "--master_addr",
            "127.0.0.1",
            "--master_port",
            str(_free_port()),
        ],
        fsdp,
    )
    # Both ranks ended through exit_rank (no interpreter teardown), their output flushed.
    assert "rank 0 done" in stdout and "rank 1 done" in stdout
    return single, fsdp


def _load(folder: Path, rank: int):
    import torch

    weights = torch.load(folder / f"weights-rank{rank}.pt", weights_only=True)
    log = json.loads((folder / f"log-rank{rank}.json").read_text())
    return weights, log


def test_both_ranks_end_with_identical_weights(runs) -> None:
    import torch

    _, fsdp = runs
    w0, log0 = _load(fsdp, 0)
    w1, log1 = _load(fsdp, 1)
    assert log0["world_size"] == log1["world_size"] == 2
    assert w0.keys() == w1.keys() and w0
    for name in w0:
        assert torch.equal(w0[name], w1[name]), name
    # The ranks really did split the work: each sampled its own episodes.
    assert log0["generated"] != log1["generated"]


def test_fsdp_matches_single_process(runs) -> None:
    import torch

    single, fsdp = runs
    ws, log_single = _load(single, 0)
    wf, log_fsdp = _load(fsdp, 0)
    assert log_single["world_size"] == 1
    for ref, got in zip(log_single["steps"], log_fsdp["steps"], strict=True):
        assert got["rollouts"] == ref["rollouts"]  # same episodes, sampled on other ranks
        assert got["tokens"] == ref["tokens"]
        assert got["loss"] == pytest.approx(ref["loss"], rel=1e-5, abs=1e-6)
        assert got["grad_norm"] == pytest.approx(ref["grad_norm"], rel=1e-5)
    assert ws.keys() == wf.keys()
    # Summing gradients over ranks reorders float additions (~1e-7 relative); Adam divides by
    # sqrt(v), which turns that into at most a few 1e-6 on elements whose gradient is ~0, after
    # 3 steps at lr 3e-3 (0.05% of the distance the weights move).
    for name in ws:
        torch.testing.assert_close(wf[name], ws[name], rtol=1e-5, atol=2e-5, msg=name)
    # And training moved the weights (a no-op run would pass the checks above trivially).
    initial_loss = log_single["steps"][0]["loss"]
    assert any(s["loss"] != initial_loss for s in log_single["steps"][1:])


def test_sharded_checkpoint_resumes_in_one_process(runs) -> None:
    """The 2-rank FSDP checkpoint loads into a plain model and optimizer (DCP reshards)."""
    import torch

    from ecomrlve.train.checkpoint import latest_checkpoint, load_checkpoint

    _, fsdp = runs
    gathered, _ = _load(fsdp, 0)
    path = latest_checkpoint(fsdp / "ckpt")
    assert path is not None and sorted(p.name for p in path.glob("rng-rank*.json")) == [
        "rng-rank0.json",
        "rng-rank1.json",
    ]
    model = _tiny_qwen3()
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.1)
    with torch.random.fork_rng(devices=[]):
        meta = load_checkpoint(path, model=model, optimizer=optimizer)
    assert meta["world_size"] == 2 and meta["step"] == STEPS
    for name, tensor in model.state_dict().items():
        assert torch.equal(tensor, gathered[name]), name
    steps = {int(s["step"]) for s in optimizer.state_dict()["state"].values()}
    assert steps == {STEPS}


if __name__ == "__main__":
    worker(Path(sys.argv[1]))
