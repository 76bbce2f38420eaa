"""The update's mechanics: chunked log-probs at trained positions only, token-budget
micro-batches, fp32 master weights under bf16 compute, dual-clip, DAPO's filters."""

from __future__ import annotations

import copy

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from ecomrlve.config import config_from_dict
from ecomrlve.testing.training import tiny_lm_pair
from ecomrlve.train import dapo
from ecomrlve.train.batching import collate, forward_logprobs, token_micro_batches
from ecomrlve.train.chat import TokenSequence
from ecomrlve.train.distributed import DistContext
from ecomrlve.train.plan import apply_plan, resolve_engines


def _sequences(n: int, seed: int = 0) -> list[TokenSequence]:
    gen = torch.Generator().manual_seed(seed)
    out = []
    for i in range(n):
        seq = TokenSequence()
        seq.add_prompt(torch.randint(5, 300, (4 + i,), generator=gen).tolist())
        seq.add_generated(torch.randint(5, 300, (6,), generator=gen).tolist())
        seq.add_context(torch.randint(5, 300, (3,), generator=gen).tolist())
        seq.add_generated(torch.randint(5, 300, (2 + i,), generator=gen).tolist())
        out.append(seq)
    return out


def _full_vocab_logprobs(model, batch, temperature):
    logits = model(input_ids=batch.input_ids, attention_mask=batch.attention_mask).logits
    lp = dapo.token_logprobs(logits[:, :-1], batch.input_ids[:, 1:], temperature)  # (B, L-1)
    ent = dapo.token_entropy(logits[:, :-1], temperature)  # (B, L-1)
    return lp * batch.loss_mask, ent * batch.loss_mask


@pytest.mark.parametrize("chunk_elements", [1 << 26, 3 * 400])  # one chunk; 3 tokens a chunk
def test_chunked_logprobs_equal_the_full_vocab_path_with_gradients(chunk_elements):
    model = copy.deepcopy(tiny_lm_pair()[0])
    batch = collate(_sequences(3), pad_token_id=0)
    got, entropy = forward_logprobs(
        model, batch, temperature=0.7, with_entropy=True, chunk_elements=chunk_elements
    )
    got.sum().backward()
    grads = {n: p.grad.clone() for n, p in model.named_parameters()}
    model.zero_grad()
    want, want_entropy = _full_vocab_logprobs(model, batch, 0.7)
    want.sum().backward()
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(entropy, want_entropy, rtol=1e-5, atol=1e-5)
    assert (
        float((got.detach() * (1 - batch.loss_mask)).abs().sum()) == 0.0
    )  # untrained positions: 0
    for name, param in model.named_parameters():
        torch.testing.assert_close(grads[name], param.grad, rtol=1e-4, atol=1e-6)


def test_token_micro_batches_keep_the_padded_budget_and_sort_by_length():
    lengths = [30, 10, 50, 20, 20, 90, 5]
    cuts = token_micro_batches(range(7), lengths, max_tokens=60, max_sequences=2)
    flat = [i for cut in cuts for i in cut]
    assert sorted(flat) == list(range(7))
    assert flat == sorted(range(7), key=lambda i: lengths[i])  # shortest first, ties in order
    for cut in cuts:
        assert len(cut) <= 2
        assert len(cut) == 1 or len(cut) * max(lengths[i] for i in cut) <= 60
    assert [90 in [lengths[i] for i in cut] for cut in cuts].count(True) == 1


@settings(max_examples=200, deadline=None)
@given(
    lengths=st.lists(st.integers(1, 1500), min_size=1, max_size=32),
    max_tokens=st.sampled_from([512, 2048, 4096, 16384]),
    max_sequences=st.integers(1, 16),
)
def test_micro_batches_hold_every_sequence_once_within_limits_shortest_first(
    lengths, max_tokens, max_sequences
):
    cuts = token_micro_batches(range(len(lengths)), lengths, max_tokens, max_sequences)
    flat = [i for cut in cuts for i in cut]
    assert sorted(flat) == list(range(len(lengths)))
    assert [lengths[i] for i in flat] == sorted(lengths)
    for cut in cuts:
        assert len(cut) <= max_sequences
        assert len(cut) == 1 or len(cut) * max(lengths[i] for i in cut) <= max_tokens


def test_a_long_reference_no_longer_pads_a_steps_short_ones():
    """One 1,000-token sequence among fifteen of 100: one batch padded to the longest computes
    16,000 positions; the CPU budget's length-sorted cut computes 2,500."""
    lengths = [100] * 7 + [1000] + [100] * 8
    cuts = token_micro_batches(range(16), lengths, max_tokens=4096, max_sequences=16)
    assert cuts == [[0, 1, 2, 3, 4, 5, 6, 8, 9, 10, 11, 12, 13, 14, 15], [7]]
    assert sum(len(c) * max(lengths[i] for i in c) for c in cuts) == 2500


def test_bf16_compute_keeps_fp32_master_weights_that_a_1e6_step_moves():
    """dtype bf16 on one process: weights and AdamW stay fp32, the forward runs in bf16
    autocast; one step at lr 1e-6 moves nearly every weight. The same step on bf16 weights (the
    old pure-bf16 path) leaves most of them unchanged."""
    cfg = config_from_dict({"training": {"dtype": "bf16", "distributed": "none"}})
    plan = resolve_engines(cfg, cuda_available=False, world_size=1)
    assert plan.load_dtype_name == "float32"
    batch = collate(_sequences(4), pad_token_id=0)

    def changed_share(model) -> float:
        before = [p.detach().clone() for p in model.parameters()]
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-6, weight_decay=0.0)
        logprobs, _ = forward_logprobs(model, batch)
        dapo.sft_loss(logprobs, batch.loss_mask).backward()
        optimizer.step()
        moved = sum(int((p != b).sum()) for p, b in zip(model.parameters(), before, strict=True))
        return moved / sum(b.numel() for b in before)

    master = apply_plan(copy.deepcopy(tiny_lm_pair()[0]), plan, DistContext())
    assert {p.dtype for p in master.parameters()} == {torch.float32}
    assert master.ecomrlve_autocast == torch.bfloat16
    assert changed_share(master) > 0.9
    pure_bf16 = copy.deepcopy(tiny_lm_pair()[0]).to(torch.bfloat16)
    assert changed_share(pure_bf16) < 0.5


def test_lora_with_bf16_keeps_a_bf16_base():
    cfg = config_from_dict({"training": {"dtype": "bf16", "lora_rank": 8}})
    assert resolve_engines(cfg, cuda_available=True, world_size=1).load_dtype_name == "bfloat16"


def test_dual_clip_caps_negative_advantage_tokens():
    logprobs = torch.log(torch.tensor([[5.0, 1.0, 5.0]]))  # ratios 5, 1, 5 against old = 0
    old = torch.zeros(1, 3)
    mask = torch.ones(1, 3)
    kwargs = {"clip_ratio_low": 0.2, "clip_ratio_high": 0.28, "loss_agg_mode": "token-mean"}
    plain, _ = dapo.policy_loss(logprobs, old, torch.tensor([-1.0]), mask, **kwargs)
    dual, stats = dapo.policy_loss(
        logprobs, old, torch.tensor([-1.0]), mask, clip_ratio_c=3.0, **kwargs
    )
    assert plain.item() == pytest.approx((5 + 1 + 5) / 3)
    assert dual.item() == pytest.approx((3 + 1 + 3) / 3)
    assert stats.clipped == 2
    positive, _ = dapo.policy_loss(
        logprobs, old, torch.tensor([1.0]), mask, clip_ratio_c=3.0, **kwargs
    )
    assert positive.item() == pytest.approx(-(1.28 + 1 + 1.28) / 3)  # A > 0: untouched


def test_dynamic_sampling_filters_on_success_and_overlong_on_the_response():
    # group 0: rewards differ but all succeed -> dropped on success, kept on reward
    success = torch.tensor([1.0, 1.0, 0.0, 1.0])
    rewards = torch.tensor([1.2, 1.1, 0.0, 1.3])
    groups = torch.tensor([0, 0, 1, 1])
    assert dapo.informative_groups(success, groups).tolist() == [False, True]
    assert dapo.informative_groups(rewards, groups).tolist() == [True, True]
    # response budgets differ per episode (episode budget - its prompt)
    penalty = dapo.overlong_penalty(torch.tensor([50, 50]), torch.tensor([100, 60]), 20, 1.0)
    assert penalty.tolist() == [0.0, -0.5]


def test_article_training_keys_map_onto_dapo_settings():
    cfg = config_from_dict(
        {
            "training": {
                "algorithm": "DAPO",
                "batch_size": 4,
                "num_rollout_steps": 32,
                "epochs_per_iteration": 3,
                "clip_epsilon": 0.1,
            }
        }
    )
    t = cfg.training
    assert (
        t.algorithm.name,
        t.rollout.prompts_per_step,
        t.rollout.group_size,
        t.algorithm.ppo_epochs,
    ) == ("dapo", 4, 8, 3)
    assert (t.algorithm.clip_ratio_low, t.algorithm.clip_ratio_high) == (0.1, 0.28)
    with pytest.raises(ValueError, match="multiple of batch_size"):
        config_from_dict({"training": {"batch_size": 3, "num_rollout_steps": 32}})


def test_vllm_outside_the_tested_range_is_a_clear_error():
    from ecomrlve.train.engines.vllm import VLLMUnavailableError, check_vllm_version

    check_vllm_version("0.32.0")
    check_vllm_version("0.34.1+cpu")
    for version in ("0.10.2", "0.35.0"):
        with pytest.raises(VLLMUnavailableError, match="outside the tested range"):
            check_vllm_version(version)
