"""DAPO (arXiv 2503.14476) as pure tensor functions; the loop in `loop.py` calls them in order.

Each of DAPO's four techniques is one `TrainingConfig` field, and GRPO is the same code with
them switched off:

| technique | field(s) | here |
|---|---|---|
| clip-higher | clip_ratio_low / clip_ratio_high | `policy_loss` |
| dynamic sampling | dynamic_sampling, max_num_gen_batches | `informative_groups` (+ loop) |
| token-level loss | loss_agg_mode | `aggregate` |
| overlong shaping | overlong_shaping, overlong_buffer, overlong_penalty | `overlong_penalty` |

Asynchronous training (`training.async`) adds AReaL's decoupled objective to `policy_loss`: the
clip is taken against the proximal policy (the trainer's weights when the update starts, the
`old_logprobs` of the synchronous loop) and each token of a stale episode is weighted by
pi_proximal / pi_behaviour, the behaviour policy being the older weights that sampled it
(`behaviour_logprobs`); tokens whose weight exceeds `behaviour_ratio_cap` are left out.

Advantages are group-normalised outcome rewards, (r - mean_group) / (std_group + eps), with the
population std of the group, broadcast to every token of the sequence.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

LOSS_AGG_MODES = ("token-mean", "seq-mean-token-mean", "seq-mean-token-sum")


def overlong_penalty(
    lengths: torch.Tensor, max_length: int | torch.Tensor, buffer: int, penalty: float
) -> torch.Tensor:
    """DAPO's soft overlong punishment (eq. 13), scaled by `penalty`.

    0 while length <= max_length - buffer, then falling linearly to -penalty at max_length,
    and -penalty beyond. With buffer 0 it is a hard -penalty above max_length. `lengths` are
    response lengths; `max_length` is the response budget, one number or one per sequence
    (the episode budget minus that episode's prompt).

    >>> overlong_penalty(torch.tensor([60, 80, 90, 100, 120]), 100, 40, 1.0).tolist()
    [0.0, -0.5, -0.75, -1.0, -1.0]
    """
    lengths = lengths.to(torch.float64)  # (N,)
    max_length = torch.as_tensor(max_length, dtype=torch.float64)  # () or (N,)
    if buffer <= 0:
        return torch.where(lengths > max_length, -penalty, 0.0).to(torch.float32)
    start = (max_length - buffer).clamp(min=0.0)  # () or (N,)
    over = ((lengths - start) / buffer).clamp(min=0.0, max=1.0)  # (N,)
    return (-penalty * over).to(torch.float32)  # (N,)


def _group_stats(
    rewards: torch.Tensor, group_index: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    n_groups = int(group_index.max()) + 1 if group_index.numel() else 0
    rewards = rewards.to(torch.float64)  # (N,)
    count = torch.zeros(n_groups, dtype=torch.float64).index_add_(
        0, group_index, torch.ones_like(rewards)
    )  # (G,)
    mean = torch.zeros(n_groups, dtype=torch.float64).index_add_(0, group_index, rewards)
    mean = mean / count.clamp(min=1)  # (G,)
    sq = (rewards - mean[group_index]) ** 2  # (N,)
    var = torch.zeros(n_groups, dtype=torch.float64).index_add_(0, group_index, sq)
    std = (var / count.clamp(min=1)).sqrt()  # (G,)  population std
    return mean, std, count


def group_advantages(
    rewards: torch.Tensor, group_index: torch.Tensor, eps: float = 1e-6
) -> torch.Tensor:
    """(r_i - mean of its group) / (std of its group + eps); one scalar per sequence.

    `group_index[i]` is the group (prompt) of sequence i, numbered 0..G-1.
    """
    mean, std, _ = _group_stats(rewards, group_index)  # (G,), (G,)
    advantages = (rewards.to(torch.float64) - mean[group_index]) / (std[group_index] + eps)
    return advantages.to(torch.float32)  # (N,)


def informative_groups(
    rewards: torch.Tensor, group_index: torch.Tensor, tol: float = 1e-9
) -> torch.Tensor:
    """Dynamic sampling's filter: True for groups whose values are not all equal.

    DAPO and verl filter on accuracy (`training.algorithm.dynamic_sampling_metric: success`): a
    group that is all correct or all wrong teaches nothing about success. With `reward`, groups of
    equal shaped reward (zero advantage everywhere) are dropped instead.
    """
    _, std, count = _group_stats(rewards, group_index)  # (G,)
    return (std > tol) & (count > 1)  # (G,)


def token_logprobs(
    logits: torch.Tensor, targets: torch.Tensor, temperature: float = 1.0
) -> torch.Tensor:
    """log softmax(logits / T) at the target ids; logits (B, T, V), targets (B, T) -> (B, T)."""
    scaled = logits.float() / (temperature if temperature > 0 else 1.0)  # (B, T, V)
    logz = torch.logsumexp(scaled, dim=-1)  # (B, T)
    picked = scaled.gather(-1, targets.unsqueeze(-1)).squeeze(-1)  # (B, T)
    return picked - logz  # (B, T)


@torch.no_grad()
def token_entropy(logits: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
    """Entropy of softmax(logits / T) per position; (B, T, V) -> (B, T)."""
    scaled = logits.float() / (temperature if temperature > 0 else 1.0)  # (B, T, V)
    logp = torch.log_softmax(scaled, dim=-1)  # (B, T, V)
    return -(logp.exp() * logp).sum(-1)  # (B, T)


def aggregate(
    values: torch.Tensor,
    mask: torch.Tensor,
    mode: str,
    *,
    total_tokens: float | None = None,
    total_sequences: float | None = None,
) -> torch.Tensor:
    """Reduce per-token values (B, T) under `mask` (B, T) to a scalar, as `loss_agg_mode` says.

    token-mean: sum over all tokens / number of tokens (DAPO: long answers weigh more);
    seq-mean-token-mean: mean over sequences of each sequence's token mean (GRPO);
    seq-mean-token-sum: mean over sequences of each sequence's token sum (Dr. GRPO style).
    `total_tokens` / `total_sequences` give the denominators of the whole batch when it is
    split into micro-batches, so that the accumulated gradient equals the full-batch one.
    """
    mask = mask.to(values.dtype)  # (B, T)
    if mode == "token-mean":
        denom = total_tokens if total_tokens is not None else mask.sum().clamp(min=1.0)
        return (values * mask).sum() / denom
    per_seq_sum = (values * mask).sum(-1)  # (B,)
    if mode == "seq-mean-token-mean":
        per_seq = per_seq_sum / mask.sum(-1).clamp(min=1.0)  # (B,)
    elif mode == "seq-mean-token-sum":
        per_seq = per_seq_sum  # (B,)
    else:
        raise ValueError(f"unknown loss_agg_mode {mode!r}; known: {list(LOSS_AGG_MODES)}")
    denom = total_sequences if total_sequences is not None else max(values.shape[0], 1)
    return per_seq.sum() / denom


@dataclass
class LossStats:
    """Token counts behind the clip fractions, so micro-batches can be summed exactly."""

    tokens: float
    clipped: float
    clipped_low: float
    clipped_high: float
    kl: float
    behaviour_capped: float = 0.0  # stale tokens left out: pi_prox / pi_behaviour above the cap


def policy_loss(
    logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    *,
    clip_ratio_low: float,
    clip_ratio_high: float,
    loss_agg_mode: str,
    clip_ratio_c: float | None = None,
    kl_coef: float = 0.0,
    ref_logprobs: torch.Tensor | None = None,
    total_tokens: float | None = None,
    total_sequences: float | None = None,
    behaviour_logprobs: torch.Tensor | None = None,
    behaviour_ratio_cap: float | None = None,
) -> tuple[torch.Tensor, LossStats]:
    """The clipped surrogate with DAPO's decoupled clip range, aggregated by `loss_agg_mode`.

    per token: max(-A * r, -A * clip(r, 1 - eps_low, 1 + eps_high)), r = exp(logp - logp_old);
    with dual-clip (`clip_ratio_c` = c > 1), tokens with A < 0 are capped at -A * c, so a huge
    ratio on a bad token cannot blow up the loss; plus kl_coef * k3(pi || pi_ref) when
    kl_coef > 0 (DAPO uses none).

    Decoupled PPO (AReaL, for asynchronous training): `old_logprobs` are the proximal policy's
    and `behaviour_logprobs` those of the policy that sampled the tokens. The clipped term is
    then weighted per token by w = pi_prox / pi_behaviour (no gradient), and tokens with
    w > `behaviour_ratio_cap` are left out of the sum (they stay in the denominator). Where
    behaviour_logprobs equal old_logprobs, w is exactly 1 and the loss is the plain one.
    Shapes: logprobs, old_logprobs, mask, ref_logprobs, behaviour_logprobs (B, T); advantages (B,).
    """
    if kl_coef > 0 and ref_logprobs is None:
        raise ValueError("kl_coef > 0 needs ref_logprobs")
    if behaviour_ratio_cap is not None and behaviour_ratio_cap <= 1.0:
        raise ValueError(f"behaviour_ratio_cap must be > 1, got {behaviour_ratio_cap}")
    mask = mask.to(logprobs.dtype)  # (B, T)
    adv = advantages[:, None].to(logprobs.dtype)  # (B, 1)
    ratio = torch.exp(logprobs - old_logprobs)  # (B, T)
    unclipped = -adv * ratio  # (B, T)
    clipped = -adv * ratio.clamp(1.0 - clip_ratio_low, 1.0 + clip_ratio_high)  # (B, T)
    per_token = torch.maximum(unclipped, clipped)  # (B, T)
    dual = torch.zeros_like(per_token, dtype=torch.bool)  # (B, T)
    if clip_ratio_c is not None:
        capped = torch.minimum(per_token, -adv * clip_ratio_c)  # (B, T)
        dual = (adv < 0) & (capped < per_token)  # (B, T)
        per_token = torch.where(adv < 0, capped, per_token)  # (B, T)
    capped_out = torch.zeros_like(mask)  # (B, T)
    if behaviour_logprobs is not None:
        weight = torch.exp(old_logprobs - behaviour_logprobs).detach()  # (B, T) pi_prox / pi_behav
        if behaviour_ratio_cap is not None:
            over = weight > behaviour_ratio_cap  # (B, T)
            capped_out = over.to(mask.dtype) * mask
            weight = torch.where(over, torch.zeros_like(weight), weight)  # (B, T)
        per_token = per_token * weight  # (B, T)
    kl_value = 0.0
    if kl_coef > 0:
        log_ratio_ref = ref_logprobs - logprobs  # (B, T)
        k3 = torch.exp(log_ratio_ref) - log_ratio_ref - 1.0  # (B, T)  low-variance KL estimate
        per_token = per_token + kl_coef * k3
        kl_value = float((k3.detach() * mask).sum())
    loss = aggregate(
        per_token,
        mask,
        loss_agg_mode,
        total_tokens=total_tokens,
        total_sequences=total_sequences,
    )
    with torch.no_grad():
        binds = ((clipped > unclipped) | dual).to(mask.dtype) * mask  # (B, T)
        low = binds * (ratio < 1.0 - clip_ratio_low).to(mask.dtype)  # (B, T)
        high = binds * (ratio > 1.0 + clip_ratio_high).to(mask.dtype)  # (B, T)
        stats = LossStats(
            tokens=float(mask.sum()),
            clipped=float(binds.sum()),
            clipped_low=float(low.sum()),
            clipped_high=float(high.sum()),
            kl=kl_value,
            behaviour_capped=float(capped_out.sum()),
        )
    return loss, stats


def sft_loss(
    logprobs: torch.Tensor, mask: torch.Tensor, *, total_tokens: float | None = None
) -> torch.Tensor:
    """Negative log-likelihood of the assistant tokens only; (B, T) each -> scalar."""
    return aggregate(-logprobs, mask, "token-mean", total_tokens=total_tokens)
