"""DAPO's pieces against hand-computed values, the loss mask, and a one-step bandit."""

from __future__ import annotations

import functools
import math

import pytest
import torch

from ecomrlve.config import ConfigError, config_from_dict
from ecomrlve.testing.training import tiny_lm_pair
from ecomrlve.train import dapo


@pytest.fixture(scope="session")
def tiny_lm():
    return tiny_lm_pair()


def test_overlong_penalty_shape():
    lengths = torch.tensor([0, 60, 61, 80, 90, 100, 101, 500])
    got = dapo.overlong_penalty(lengths, max_length=100, buffer=40, penalty=1.0)
    # flat 0 up to L_max - buffer, linear to -penalty at L_max, flat -penalty beyond
    assert got.tolist() == pytest.approx([0, 0, -1 / 40, -0.5, -0.75, -1, -1, -1])
    scaled = dapo.overlong_penalty(lengths, max_length=100, buffer=40, penalty=0.5)
    assert scaled.tolist() == pytest.approx((got * 0.5).tolist())
    hard = dapo.overlong_penalty(torch.tensor([99, 100, 101]), 100, 0, 1.0)
    assert hard.tolist() == [0.0, 0.0, -1.0]


def test_group_advantages_hand_computed():
    rewards = torch.tensor([1.0, 0.0, 0.0, 0.0, 2.0, 2.0])
    groups = torch.tensor([0, 0, 0, 0, 1, 1])
    adv = dapo.group_advantages(rewards, groups, eps=0.0 + 1e-12)
    # group 0: mean 0.25, population std sqrt(3)/4
    std = math.sqrt(3) / 4
    assert adv[:4].tolist() == pytest.approx([0.75 / std, -0.25 / std, -0.25 / std, -0.25 / std])
    assert adv[4:].tolist() == [0.0, 0.0]  # zero-variance group: no signal


def test_dynamic_sampling_filter_drops_zero_variance_groups():
    rewards = torch.tensor([1.0, 1.0, 0.0, 1.0, 0.3, 0.3, 0.0, 0.0, 5.0])
    groups = torch.tensor([0, 0, 1, 1, 2, 2, 3, 3, 4])
    keep = dapo.informative_groups(rewards, groups)
    assert keep.tolist() == [False, True, False, False, False]  # a single sample has no variance


def _loss(ratio: float, advantage: float, low=0.2, high=0.28):
    logp = torch.tensor([[math.log(ratio)]], requires_grad=True)
    loss, stats = dapo.policy_loss(
        logp,
        torch.zeros(1, 1),
        torch.tensor([advantage]),
        torch.ones(1, 1),
        clip_ratio_low=low,
        clip_ratio_high=high,
        loss_agg_mode="token-mean",
    )
    loss.backward()
    return float(loss.detach()), float(logp.grad), stats


def test_clip_higher_is_asymmetric():
    # positive advantage: the ratio may grow to 1 + eps_high = 1.28 before the clip binds
    loss, grad, stats = _loss(1.25, 1.0)
    assert loss == pytest.approx(-1.25) and grad != 0 and stats.clipped == 0
    loss, grad, stats = _loss(1.5, 1.0)
    assert loss == pytest.approx(-1.28) and grad == 0
    assert stats.clipped == 1 and stats.clipped_high == 1 and stats.clipped_low == 0
    # negative advantage: it may only shrink to 1 - eps_low = 0.8
    loss, grad, stats = _loss(0.85, -1.0)
    assert loss == pytest.approx(0.85) and grad != 0
    loss, grad, stats = _loss(0.5, -1.0)
    assert loss == pytest.approx(0.8) and grad == 0 and stats.clipped_low == 1
    # the symmetric GRPO clip binds at 1.2 already
    loss, grad, _ = _loss(1.25, 1.0, low=0.2, high=0.2)
    assert loss == pytest.approx(-1.2) and grad == 0
    # the pessimistic side is never clipped: a large ratio with negative advantage keeps its grad
    loss, grad, stats = _loss(2.0, -1.0)
    assert loss == pytest.approx(2.0) and grad != 0 and stats.clipped == 0


def test_token_mean_vs_sequence_mean():
    values = torch.tensor([[4.0, 0.0, 0.0], [1.0, 2.0, 3.0]])
    mask = torch.tensor([[1.0, 0.0, 0.0], [1.0, 1.0, 1.0]])
    # token-mean: (4 + 1 + 2 + 3) / 4 tokens; the long sequence weighs 3x
    assert float(dapo.aggregate(values, mask, "token-mean")) == pytest.approx(2.5)
    # seq-mean-token-mean: mean(4/1, 6/3)
    assert float(dapo.aggregate(values, mask, "seq-mean-token-mean")) == pytest.approx(3.0)
    # seq-mean-token-sum: mean(4, 6)
    assert float(dapo.aggregate(values, mask, "seq-mean-token-sum")) == pytest.approx(5.0)
    with pytest.raises(ValueError, match="loss_agg_mode"):
        dapo.aggregate(values, mask, "median")


@pytest.mark.parametrize("mode", dapo.LOSS_AGG_MODES)
def test_micro_batches_with_global_normaliser_equal_the_full_batch(mode):
    gen = torch.Generator().manual_seed(0)
    logp = torch.randn(6, 5, generator=gen) * 0.1
    old = logp + torch.randn(6, 5, generator=gen) * 0.2
    adv = torch.randn(6, generator=gen)
    mask = (torch.rand(6, 5, generator=gen) > 0.3).float()
    kwargs = dict(clip_ratio_low=0.2, clip_ratio_high=0.28, loss_agg_mode=mode)
    full = logp.clone().requires_grad_(True)
    loss, _ = dapo.policy_loss(full, old, adv, mask, **kwargs)
    loss.backward()
    parts = logp.clone().requires_grad_(True)
    total = 0.0
    for rows in ([0, 1], [2, 3, 4], [5]):
        part, _ = dapo.policy_loss(
            parts[rows],
            old[rows],
            adv[rows],
            mask[rows],
            total_tokens=float(mask.sum()),
            total_sequences=6.0,
            **kwargs,
        )
        part.backward()
        total += float(part.detach())
    assert total == pytest.approx(float(loss.detach()), abs=1e-6)
    assert torch.allclose(parts.grad, full.grad, atol=1e-6)


@pytest.mark.parametrize("mode", dapo.LOSS_AGG_MODES)
def test_no_gradient_through_masked_tokens(mode):
    gen = torch.Generator().manual_seed(1)
    logp = (torch.randn(3, 6, generator=gen) * 0.1).requires_grad_(True)
    mask = torch.tensor(
        [[0, 0, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1], [0, 0, 0, 0, 0, 1]], dtype=torch.float32
    )
    loss_of = functools.partial(
        dapo.policy_loss,
        advantages=torch.tensor([1.0, -0.5, 2.0]),
        mask=mask,
        clip_ratio_low=0.2,
        clip_ratio_high=0.28,
        loss_agg_mode=mode,
        kl_coef=0.1,
        ref_logprobs=torch.zeros(3, 6),
    )
    loss, _ = loss_of(logp, torch.zeros(3, 6))
    loss.backward()
    assert torch.all(logp.grad[mask == 0] == 0)
    assert torch.all(logp.grad[mask == 1] != 0)
    # garbage in masked positions (even inf/nan-free huge values) changes nothing
    noisy_old = torch.where(mask == 0, torch.full((3, 6), 50.0), torch.zeros(3, 6))
    loss2, _ = loss_of(logp.detach(), noisy_old)
    assert float(loss2) == pytest.approx(float(loss.detach()))


def test_loss_mask_blocks_gradient_through_the_model(tiny_lm):
    """Through a real model: the loss only depends on the assistant positions' log-probs."""
    from ecomrlve.train.batching import collate, forward_logprobs
    from ecomrlve.train.chat import TokenSequence

    model, _ = tiny_lm
    seq = TokenSequence()
    seq.add_prompt([5, 6, 7, 8])
    seq.add_generated([9, 10], [-1.0, -1.0])
    seq.add_context([11, 12])
    seq.add_generated([13], [-1.0])
    batch = collate([seq], pad_token_id=0)
    assert batch.loss_mask.tolist() == [[0, 0, 0, 1, 1, 0, 0, 1]]
    logprobs, _ = forward_logprobs(model, batch)
    logprobs.retain_grad()
    loss, _ = dapo.policy_loss(
        logprobs,
        logprobs.detach(),
        torch.tensor([1.0]),
        batch.loss_mask,
        clip_ratio_low=0.2,
        clip_ratio_high=0.28,
        loss_agg_mode="token-mean",
    )
    loss.backward()
    model.zero_grad(set_to_none=True)
    grad = logprobs.grad[0]
    assert torch.all(grad[batch.loss_mask[0] == 0] == 0)
    assert torch.all(grad[batch.loss_mask[0] == 1] != 0)


def test_bandit_one_step_moves_probability_to_the_rewarded_completion(tiny_lm):
    from ecomrlve.train.batching import collate, forward_logprobs
    from ecomrlve.train.chat import TokenSequence

    model, _ = tiny_lm
    model = __import__("copy").deepcopy(model)
    prompt = [5, 6, 7, 8, 9]
    good, bad = [20, 21, 22], [30, 31, 32]
    seqs = []
    for completion in (good, bad):
        seq = TokenSequence()
        seq.add_prompt(prompt)
        seq.add_generated(completion)
        seqs.append(seq)
    batch = collate(seqs, pad_token_id=0)

    def completion_logprob() -> torch.Tensor:
        with torch.no_grad():
            logprobs, _ = forward_logprobs(model, batch)
        return (logprobs * batch.loss_mask).sum(-1)  # (2,)

    before = completion_logprob()
    advantages = dapo.group_advantages(torch.tensor([1.0, 0.0]), torch.tensor([0, 0]))
    assert advantages.tolist() == pytest.approx([1.0, -1.0], abs=1e-4)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    logprobs, _ = forward_logprobs(model, batch)
    loss, _ = dapo.policy_loss(
        logprobs,
        logprobs.detach(),
        advantages,
        batch.loss_mask,
        clip_ratio_low=0.2,
        clip_ratio_high=0.28,
        loss_agg_mode="token-mean",
    )
    loss.backward()
    optimizer.step()
    after = completion_logprob()
    assert after[0] > before[0]  # rewarded completion more likely
    assert after[1] < before[1]  # the other less likely


def test_grpo_is_dapo_with_the_switches_off():
    grpo = config_from_dict({"training": {"algorithm": "grpo"}}).training
    assert (grpo.algorithm.clip_ratio_low, grpo.algorithm.clip_ratio_high) == (0.2, 0.2)
    assert not grpo.algorithm.dynamic_sampling and not grpo.algorithm.overlong_shaping
    assert grpo.algorithm.loss_agg_mode == "seq-mean-token-mean"
    ablation = config_from_dict({"training": {"algorithm": "grpo", "clip_ratio_high": 0.28}})
    assert ablation.training.algorithm.clip_ratio_high == 0.28
    dapo_cfg = config_from_dict({}).training
    assert dapo_cfg.algorithm.dynamic_sampling and dapo_cfg.algorithm.overlong_shaping
    assert (
        dapo_cfg.algorithm.loss_agg_mode == "token-mean"
        and dapo_cfg.algorithm.clip_ratio_high == 0.28
    )


def test_overlong_buffer_must_fit_the_episode_budget():
    with pytest.raises(ConfigError, match="overlong_buffer"):
        config_from_dict(
            {"agent": {"max_episode_tokens": 512}, "training": {"overlong_buffer": 512}}
        )
    ok = config_from_dict(
        {"agent": {"max_episode_tokens": 512}, "training": {"overlong_shaping": False}}
    )
    assert ok.training.algorithm.overlong_buffer == 1024
