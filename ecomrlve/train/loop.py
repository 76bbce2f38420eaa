"""The DAPO loop, top to bottom. GRPO is the same loop with DAPO's switches off.

One step:
  1. rollouts    prompts from the curriculum, `group_size` episodes each, taken from a rollout
                 source (`sources.py`): played in lockstep, each rank every world_size-th group
                 (each episode sampled from its own seed, so the split does not change what is
                 sampled), or by asynchronous rollout workers; dynamic sampling drops groups
                 that are all successes or all failures (`dynamic_sampling_metric`) and samples
                 more prompts until `prompts_per_step` groups remain (at most
                 `max_num_gen_batches`)
  2. rewards     env reward + overlong shaping on the response length, then group-normalised
                 advantages
  3. old policy  log-probs of the sampled tokens before the update (no grad)
  4. update      `ppo_epochs` passes; each splits the batch into mini-batches of
                 `ppo_mini_batch_size` prompts, one optimizer step each (so from the second
                 step on the ratio moves and the clip binds). A mini-batch's loss accumulates
                 over micro-batches of at most `max_tokens_per_micro_batch` padded tokens,
                 normalised by the mini-batch's global token (or sequence) count. A step with a
                 non-finite reward, no trainable token, or a non-finite loss or gradient norm is
                 skipped, logged with its reason and recorded in `skipped` / `skip_reason`
  5. sync        the rollout source receives the new weights
  6. record      metrics, per-scenario success and difficulty windows, rollouts (rank 0)

Asynchronous (`training.rollout.async`, one rank, `workers` given): step 1 takes batches that a
rollout process has played while the previous updates ran (`sources.AsyncRollouts`,
`rollout_workers.py`) instead of playing them. Each batch is drawn from the curriculum when it is
submitted; at most `max_staleness` + 1 are in flight, so an episode is at most `max_staleness`
(eta) weight versions behind the update that trains on it, and a batch that is older anyway (a
pool that completes out of order) is dropped, never trained. Weights version v is the policy at
the end of step v; step 5 publishes it to the workers every step. Step 4 then uses AReaL's
decoupled objective: the clip is taken against the proximal policy (the weights at the start of
the update, step 3's old log-probs, as in the synchronous loop) and each token of a stale episode
is weighted by pi_proximal / pi_behaviour (its sampling log-probs), left out above
`behaviour_ratio_cap`. An episode sampled by the very weights the update starts from has weight
exactly 1, so with eta = 0 the asynchronous loop computes the synchronous loop's losses bit for
bit.

Mechanics live elsewhere: rollout sources in `sources.py`, episodes in `rollout.py`, tensors in
`batching.py`, the loss in `dapo.py`, curriculum in `curriculum.py`, ranks in `distributed.py`,
tables in `results.py`.
"""

from __future__ import annotations

import copy
import dataclasses
import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from ecomrlve.config import EcomConfig
from ecomrlve.env import Catalog
from ecomrlve.progress import ProgressEvent, ProgressFn
from ecomrlve.train import dapo
from ecomrlve.train.batching import (
    collate,
    forward_logprobs,
    padding_sequence,
    token_micro_batches,
)
from ecomrlve.train.chat import ChatFormat
from ecomrlve.train.checkpoint import Checkpointer
from ecomrlve.train.curriculum import CurriculumSampler
from ecomrlve.train.distributed import DistContext, all_gather_objects, all_reduce_sum
from ecomrlve.train.engine import RolloutEngine
from ecomrlve.train.memory import micro_batch_tokens
from ecomrlve.train.rollout import RolloutContext
from ecomrlve.train.rollout_workers import RolloutWorkers
from ecomrlve.train.schedule import lr_factor, set_lr
from ecomrlve.train.sources import (
    Key,
    Outcome,
    PlayFn,
    Rollouts,
    RolloutSource,
    rollout_seed,
    rollout_source,
)
from ecomrlve.train.tool_curriculum import FULL_WIDTH, ToolCurriculum

__all__ = ["LoopResult", "Outcome", "RolloutSource", "rollout_seed", "train_dapo"]

log = logging.getLogger(__name__)

StepSink = Callable[[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]], None]


@dataclass
class LoopResult:
    steps: int = 0
    updates: int = 0
    history: list[dict[str, Any]] = field(default_factory=list)


def train_dapo(
    policy: torch.nn.Module,
    engine: RolloutEngine,
    chat: ChatFormat,
    catalog: Catalog,
    sampler: CurriculumSampler,
    cfg: EcomConfig,
    *,
    record: StepSink | None = None,
    progress: ProgressFn | None = None,
    checkpoints: Checkpointer | None = None,
    ctx: DistContext | None = None,
    play: PlayFn | None = None,
    tools: ToolCurriculum | None = None,
    workers: RolloutWorkers | None = None,
    source: RolloutSource | None = None,
) -> LoopResult:
    """Run `training.algorithm.total_steps` DAPO steps on `policy`; `record(step_row, scenario_rows,
    rollout_rows)` receives each step's results (rank 0). With `checkpoints`, a resumed run goes
    on after the newest checkpoint's step exactly as the stopped run would have. Under torchrun
    every rank calls this alike (`ctx` says which rank). `tools`, the tool curriculum, says which
    tools each prompt offers. The episodes come from `source` (`sources.RolloutSource`); by
    default `play` in lockstep (`rollout.run_episodes`), or `workers` with `rollout.async`."""
    algorithm = cfg.training.algorithm
    ctx = ctx or DistContext(device=next(policy.parameters()).device)
    context = RolloutContext.of(engine, chat, catalog, cfg)
    source = source or rollout_source(
        policy, context, sampler, cfg, ctx, play=play, tools=tools, workers=workers
    )
    optimizer, reference = _optimizer(policy, cfg), _reference(policy, cfg)
    stateful: dict[str, Any] = {"sampler": sampler, **({"tools": tools} if tools else {})}
    # weights, optimizer, sampler + adaptive windows, RNGs
    start = checkpoints.restore(policy, optimizer, stateful) if checkpoints is not None else 0
    source.start(policy, start)
    result = LoopResult()
    for step in range(start + 1, algorithm.total_steps + 1):
        # ---- 1. Rollouts, with dynamic sampling (and the tool curriculum's record of them)
        set_lr(optimizer, algorithm.learning_rate * _lr_factor(step, cfg))
        rollouts, metrics = _take(source, step, optimizer, tools)
        # ---- 2.-4. Advantages, old log-probs, PPO mini-batch updates
        updated = bool(rollouts.kept) and not metrics["skipped"]
        if updated:
            update = _update(policy, reference, optimizer, rollouts, cfg, chat, ctx, step)
            result.updates += update.optimizer_steps
            metrics.update(update.row())
        else:
            _log_no_update(step, metrics["skip_reason"])
        # ---- 5. Sync: the source samples the next step from the updated policy
        metrics.update(source.after_update(policy, step, rollouts, updated))
        # ---- 6. Record
        if record and ctx.is_main:
            scenarios = _scenario_rows(step, rollouts.sampled, sampler)
            record(metrics, scenarios, _rollout_rows(step, rollouts, cfg))
        result.history.append(metrics)
        result.steps = step
        if checkpoints is not None:
            checkpoints.after_step(step, algorithm.total_steps, policy, optimizer, stateful)
        _report(step, metrics, rollouts, cfg, progress)
    return result


def _optimizer(policy: torch.nn.Module, cfg: EcomConfig) -> torch.optim.Optimizer:
    algorithm = cfg.training.algorithm
    return torch.optim.AdamW(
        policy.parameters(), lr=algorithm.learning_rate, weight_decay=algorithm.weight_decay
    )


def _reference(policy: torch.nn.Module, cfg: EcomConfig) -> torch.nn.Module | None:
    """A frozen copy of the starting policy for the KL term, which DAPO drops (`kl_coef` 0);
    kept as a switch for ablations."""
    if cfg.training.algorithm.kl_coef <= 0:
        return None
    return copy.deepcopy(policy).eval().requires_grad_(False)


def _take(
    source: RolloutSource,
    step: int,
    optimizer: torch.optim.Optimizer,
    tools: ToolCurriculum | None,
) -> tuple[Rollouts, dict[str, Any]]:
    """Step 1: the step's rollouts from `source` and its row so far (with `skipped` and
    `skip_reason` when the kept episodes cannot be trained on); the tool curriculum records the
    step's success at the width in force, and widens from the next step when it holds."""
    started = time.perf_counter()
    tools_offered = tools.width if tools is not None else FULL_WIDTH
    rollouts = source.take(step)
    metrics = _rollouts_row(step, rollouts, time.perf_counter() - started, optimizer, tools_offered)
    if tools is not None:
        tools.record(step, metrics["success_rate"])
    skip_reason = _unusable_batch(rollouts.trained)
    metrics.update(skipped=skip_reason is not None, skip_reason=skip_reason)
    return rollouts, metrics


def _lr_factor(step: int, cfg: EcomConfig) -> float:
    algorithm = cfg.training.algorithm
    return lr_factor(
        step, algorithm.total_steps, warmup=algorithm.warmup_steps, schedule=algorithm.lr_schedule
    )


def _rollouts_row(
    step: int,
    rollouts: Rollouts,
    seconds: float,
    optimizer: torch.optim.Optimizer,
    tools_offered: str,
) -> dict[str, Any]:
    """Step 1's part of the step row: how many groups were sampled, kept and dropped, the
    rewards and lengths, and the source's own metrics (asynchronous: staleness)."""
    trained = rollouts.trained
    row: dict[str, Any] = {
        "step": step,
        "gen_batches": rollouts.gen_batches,
        "groups_sampled": len(rollouts.groups),
        "groups_dropped": rollouts.dropped,
        "groups_trained": len(rollouts.kept),
        "sequences_trained": len(trained),
        "rollout_s": seconds,
        "lr": optimizer.param_groups[0]["lr"],
        "overlong_penalty_mean": float(np.mean([o.penalty for o in rollouts.sampled])),
        "tools_offered": tools_offered,
    }
    row.update(_rollout_metrics(rollouts.sampled, rollouts.play_s or seconds))
    row.update(rollouts.metrics)
    return row


def _log_no_update(step: int, skip_reason: str | None) -> None:
    if skip_reason is not None:
        log.warning("step %d: %s; update skipped", step, skip_reason)
    else:
        log.info("step %d: every group was all success or all failure; no update", step)


def _rollout_rows(step: int, rollouts: Rollouts, cfg: EcomConfig) -> list[dict[str, Any]]:
    """Step 6: one train_rollouts row per episode sampled in the step."""
    trained_keys = {o.key for o in rollouts.trained}
    prompts = cfg.training.rollout.prompts_per_step
    return [
        {
            "step": step,
            "gen_batch": o.group // prompts,
            "group": o.group,
            "task_id": o.task_id,
            "scenario": o.scenario,
            "difficulty": o.difficulty,
            "min_steps": o.min_steps,
            "reward": o.reward,
            "env_reward": o.env_reward,
            "success": o.success,
            "steps": o.steps,
            "finish": o.finish,
            "truncated": o.truncated,
            "response_tokens": o.response_tokens,
            "trained": o.key in trained_keys,
            "policy_version": o.policy_version,
            "staleness": o.staleness,
        }
        for o in rollouts.sampled
    ]


def _report(
    step: int,
    metrics: dict[str, Any],
    rollouts: Rollouts,
    cfg: EcomConfig,
    progress: ProgressFn | None,
) -> None:
    """Step 6: the step's log line and progress event."""
    kept = f"{len(rollouts.kept)}/{len(rollouts.groups)}"
    log.info(
        "step %d reward %.3f success %.2f groups %s",
        step,
        metrics["reward_mean"],
        metrics["success_rate"],
        kept,
    )
    if progress:
        reported = {
            "reward": metrics["reward_mean"],
            "success": metrics["success_rate"],
            "groups kept": kept,
        }
        total = cfg.training.algorithm.total_steps
        progress(ProgressEvent("dapo", step, total, unit="step", metrics=reported))


# ==============================================================================================
# Steps 2-4: advantages, old log-probs, PPO mini-batch updates
# ==============================================================================================


@dataclass
class UpdateMetrics:
    """What one step's update measured; `row()` is its part of the step row."""

    optimizer_steps: int
    loss: float | None  # mean over the optimizer steps
    grad_norm: float | None
    entropy: float  # per generated token, first epoch
    clip_fraction: float  # of the trained tokens, summed over every optimizer step
    clip_fraction_low: float
    clip_fraction_high: float
    kl: float
    behaviour_capped_fraction: float  # stale tokens left out by behaviour_ratio_cap (async)
    logprob_mismatch: float  # |old - sampling| log-prob per generated token
    advantage_abs_mean: float
    positive_token_fraction: float  # generated tokens with a positive advantage
    update_s: float
    skip_reason: str | None = None  # a non-finite loss or gradient norm stopped the update

    def row(self) -> dict[str, Any]:
        row = dataclasses.asdict(self)
        del row["optimizer_steps"], row["skip_reason"]
        return {**row, "skipped": self.skip_reason is not None, "skip_reason": self.skip_reason}


@dataclass
class _TokenSums:
    """Token statistics summed over every optimizer step's micro-batches (by their weight)."""

    tokens: float = 0.0
    clipped: float = 0.0
    clipped_low: float = 0.0
    clipped_high: float = 0.0
    kl: float = 0.0
    entropy: float = 0.0
    behaviour_capped: float = 0.0

    def add(self, weight: float, stats: dapo.LossStats, entropy: float) -> None:
        self.tokens += weight * stats.tokens
        self.clipped += weight * stats.clipped
        self.clipped_low += weight * stats.clipped_low
        self.clipped_high += weight * stats.clipped_high
        self.kl += weight * stats.kl
        self.entropy += weight * entropy
        self.behaviour_capped += weight * stats.behaviour_capped


@dataclass
class _Passes:
    """Step 4's outcome: one loss and gradient norm per optimizer step taken."""

    losses: list[float] = field(default_factory=list)
    grad_norms: list[float] = field(default_factory=list)
    sums: _TokenSums = field(default_factory=_TokenSums)
    skip_reason: str | None = None


def _update(
    policy: torch.nn.Module,
    reference: torch.nn.Module | None,
    optimizer: torch.optim.Optimizer,
    rollouts: Rollouts,
    cfg: EcomConfig,
    chat: ChatFormat,
    ctx: DistContext,
    step: int,
) -> UpdateMetrics:
    """Steps 2-4 on the kept groups."""
    training = cfg.training
    started = time.perf_counter()
    trained = rollouts.trained
    advantages = _advantages(rollouts)  # 2.
    per_mini = training.algorithm.ppo_mini_batch_size or training.rollout.prompts_per_step
    minis = [rollouts.kept[i : i + per_mini] for i in range(0, len(rollouts.kept), per_mini)]
    plans = [_mini_batch(mini, rollouts, cfg, chat, ctx) for mini in minis]
    stale = {o.key for o in trained if o.staleness > 0}  # sampled by older weights (async)
    mismatch = _old_logprobs(policy, reference, plans, stale, cfg)  # 3.
    passes = _ppo_passes(policy, optimizer, plans, advantages, cfg, ctx, step)  # 4.
    sums = passes.sums
    if ctx.is_distributed:
        summed = torch.tensor([*dataclasses.astuple(sums), mismatch], dtype=torch.float64)
        torch.distributed.all_reduce(summed)
        sums, mismatch = _TokenSums(*summed[:-1].tolist()), float(summed[-1])
    tokens_once = max(float(sum(o.generated_tokens for o in trained)), 1.0)
    steps_tokens = max(sums.tokens, 1.0)  # trained tokens summed over every optimizer step
    # where the signal lives: how large the advantages are, and which tokens carry them
    positive_tokens = sum(o.generated_tokens for o in trained if advantages[o.key] > 0)
    return UpdateMetrics(
        optimizer_steps=len(passes.losses),
        loss=float(np.mean(passes.losses)) if passes.losses else None,
        grad_norm=float(np.mean(passes.grad_norms)) if passes.grad_norms else None,
        entropy=sums.entropy / tokens_once,
        clip_fraction=sums.clipped / steps_tokens,
        clip_fraction_low=sums.clipped_low / steps_tokens,
        clip_fraction_high=sums.clipped_high / steps_tokens,
        kl=sums.kl / steps_tokens,
        behaviour_capped_fraction=sums.behaviour_capped / steps_tokens,
        logprob_mismatch=mismatch / tokens_once,
        advantage_abs_mean=float(np.mean([abs(advantages[o.key]) for o in trained])),
        positive_token_fraction=positive_tokens / tokens_once,
        update_s=time.perf_counter() - started,
        skip_reason=passes.skip_reason,
    )


def _advantages(rollouts: Rollouts) -> dict[Key, float]:
    """Step 2: group-normalised shaped rewards (identical on every rank), by episode."""
    trained = rollouts.trained
    rewards = torch.tensor([o.reward for o in trained])  # (N,)
    rank_of_group = {g: i for i, g in enumerate(rollouts.kept)}
    group_index = torch.tensor([rank_of_group[o.group] for o in trained])  # (N,)
    return dict(
        zip(
            (o.key for o in trained),
            dapo.group_advantages(rewards, group_index).tolist(),
            strict=True,
        )
    )  # key -> A


def _old_logprobs(
    policy: torch.nn.Module,
    reference: torch.nn.Module | None,
    plans: list[_MiniBatch],
    stale: set[Key],
    cfg: EcomConfig,
) -> float:
    """Step 3: the old (proximal) policy's log-probs of the sampled tokens before any update
    (no grad), the behaviour log-probs of stale rows and the reference's; returns the summed
    |old - sampling| gap over the generated tokens."""
    temperature = cfg.agent.temperature
    policy.eval()
    mismatch = 0.0
    with torch.no_grad():
        for plan in plans:
            for micro in plan.micros:
                batch = micro.batch
                old, _ = forward_logprobs(policy, batch, temperature=temperature)
                micro.old = old  # (b, L-1)
                rows = torch.tensor([k in stale for k in micro.keys], device=old.device)  # (b,)
                if bool(rows.any()):  # behaviour policy: the older weights that sampled them
                    micro.behaviour = torch.where(
                        rows[:, None], batch.sampling_logprobs.to(old.dtype), old
                    )  # (b, L-1)
                gap = (old - batch.sampling_logprobs).abs() * batch.loss_mask * micro.weight
                mismatch += float(gap.sum())
                if reference is not None:
                    micro.ref, _ = forward_logprobs(
                        reference, batch, temperature=temperature
                    )  # (b, L-1)
    policy.train()
    return mismatch


def _ppo_passes(
    policy: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    plans: list[_MiniBatch],
    advantages: dict[Key, float],
    cfg: EcomConfig,
    ctx: DistContext,
    step: int,
) -> _Passes:
    """Step 4: `ppo_epochs` x mini-batches optimizer steps, micro-batches accumulated; the
    first non-finite loss or gradient norm stops the update."""
    algorithm = cfg.training.algorithm
    out = _Passes()
    for epoch in range(algorithm.ppo_epochs):
        for plan in plans:
            optimizer.zero_grad(set_to_none=True)
            step_loss = 0.0
            for micro in plan.micros:
                step_loss += _micro_step(policy, micro, plan, advantages, cfg, epoch, out.sums)
            step_loss = all_reduce_sum(step_loss, ctx)
            grad_norm = torch.nn.utils.clip_grad_norm_(policy.parameters(), algorithm.max_grad_norm)
            if hasattr(grad_norm, "full_tensor"):  # FSDP2: a DTensor over the ranks
                grad_norm = grad_norm.full_tensor()
            if not (math.isfinite(step_loss) and math.isfinite(float(grad_norm))):
                # one NaN/inf poisons AdamW's moments for good: drop this update instead
                optimizer.zero_grad(set_to_none=True)
                out.skip_reason = (
                    f"non-finite loss {step_loss}"
                    if not math.isfinite(step_loss)
                    else f"non-finite gradient norm {float(grad_norm)}"
                )
                log.warning("step %d epoch %d: %s; update skipped", step, epoch, out.skip_reason)
                return out
            optimizer.step()
            out.losses.append(step_loss)
            out.grad_norms.append(float(grad_norm))
    return out


def _micro_step(
    policy: torch.nn.Module,
    micro: _Micro,
    plan: _MiniBatch,
    advantages: dict[Key, float],
    cfg: EcomConfig,
    epoch: int,
    sums: _TokenSums,
) -> float:
    """One micro-batch's loss, backpropagated with its weight (gradients accumulate over the
    mini-batch); adds its token statistics to `sums` and returns its weighted loss."""
    algorithm = cfg.training.algorithm
    batch = micro.batch
    logprobs, entropy = forward_logprobs(
        policy, batch, temperature=cfg.agent.temperature, with_entropy=epoch == 0
    )  # (b, L-1), (b, L-1)
    adv = torch.tensor([advantages.get(k, 0.0) for k in micro.keys])  # (b,)
    loss, stats = dapo.policy_loss(
        logprobs,
        micro.old,
        adv.to(logprobs.device),
        batch.loss_mask,
        clip_ratio_low=algorithm.clip_ratio_low,
        clip_ratio_high=algorithm.clip_ratio_high,
        clip_ratio_c=algorithm.clip_ratio_c,
        loss_agg_mode=algorithm.loss_agg_mode,
        kl_coef=algorithm.kl_coef,
        ref_logprobs=micro.ref,
        total_tokens=plan.tokens,
        total_sequences=plan.sequences,
        behaviour_logprobs=micro.behaviour,
        behaviour_ratio_cap=algorithm.behaviour_ratio_cap,
    )
    (loss * micro.weight).backward()
    ent = float((entropy * batch.loss_mask).sum()) if entropy is not None else 0.0
    sums.add(micro.weight, stats, ent)
    return float(loss.detach()) * micro.weight


@dataclass
class _Micro:
    keys: list[Key]
    batch: Any  # batching.Batch on the policy's device
    weight: float  # 0 for the padding micro-batch of a rank with fewer micro-batches
    old: torch.Tensor | None = None
    ref: torch.Tensor | None = None
    behaviour: torch.Tensor | None = None  # set only where some row is stale (async)


@dataclass
class _MiniBatch:
    tokens: float  # trained tokens of the mini-batch over all ranks (token-mean denominator)
    sequences: float  # its sequences over all ranks
    micros: list[_Micro]


def _mini_batch(
    groups: list[int], rollouts: Rollouts, cfg: EcomConfig, chat: ChatFormat, ctx: DistContext
) -> _MiniBatch:
    """One optimizer step's data on this rank, cut into token-budget micro-batches. Every rank
    runs the same number of micro-batches (FSDP gathers layers in each forward): a rank with
    fewer pads with a weight-0 micro-batch."""
    training = cfg.training
    members = [o for g in groups for o in rollouts.groups[g]]
    keys = [o.key for o in members if o.key in rollouts.local]
    sequences = [rollouts.local[k].sequence for k in keys]
    cuts = token_micro_batches(
        list(range(len(keys))),
        [len(s) for s in sequences],
        micro_batch_tokens(training),
        training.scale.mini_batch_size,
    )
    count = max(all_gather_objects(len(cuts), ctx))
    device = ctx.device
    micros = [
        _Micro(
            [keys[i] for i in cut],
            collate([sequences[i] for i in cut], chat.pad_token_id).to(device),
            1.0,
        )
        for cut in cuts
    ]
    while len(micros) < count:
        micros.append(
            _Micro(
                [(-1, -1)],
                collate([padding_sequence(chat.pad_token_id)], chat.pad_token_id).to(device),
                0.0,
            )
        )
    return _MiniBatch(
        tokens=float(sum(o.generated_tokens for o in members)),
        sequences=float(len(members)),
        micros=micros,
    )


def _unusable_batch(trained: list[Outcome]) -> str | None:
    """Why the kept episodes cannot be trained on (None when they can).

    A NaN/inf reward would turn every advantage of its group into NaN; a batch without a single
    generated token (every token masked) would divide the token-mean loss by zero.
    """
    if not trained:
        return None  # nothing kept: the plain "no update" path
    bad = [o.task_id for o in trained if not math.isfinite(o.reward)]
    if bad:
        return f"non-finite reward in {len(bad)} episode(s), e.g. {bad[0]}"
    if sum(o.generated_tokens for o in trained) == 0:
        return "no trainable tokens (every generated token is masked)"
    return None


def _rollout_metrics(outcomes: list[Outcome], seconds: float) -> dict[str, Any]:
    rewards = np.array([o.reward for o in outcomes], dtype=np.float64)
    lengths = np.array([o.response_tokens for o in outcomes])
    generated = sum(o.generated_tokens for o in outcomes)
    by_scenario: dict[str, list[bool]] = {}
    for o in outcomes:
        by_scenario.setdefault(o.scenario, []).append(o.success)
    return {
        "reward_mean": float(rewards.mean()),
        "reward_std": float(rewards.std()),
        "success_rate": float(np.mean([o.success for o in outcomes])),
        "success_by_scenario": {s: float(np.mean(v)) for s, v in sorted(by_scenario.items())},
        "response_length_mean": float(lengths.mean()),
        "response_length_max": int(lengths.max()),
        "truncated_rate": float(np.mean([o.truncated for o in outcomes])),
        "tokens_generated": int(generated),
        "tokens_per_s": generated / seconds if seconds > 0 else 0.0,
    }


def _scenario_rows(
    step: int, outcomes: list[Outcome], sampler: CurriculumSampler
) -> list[dict[str, Any]]:
    by_scenario: dict[str, list[Outcome]] = {}
    for o in outcomes:
        by_scenario.setdefault(o.scenario, []).append(o)
    scenarios = sorted(set(by_scenario) | set(sampler.adaptive.windows if sampler.adaptive else ()))
    rows = []
    for scenario in scenarios:
        members = by_scenario.get(scenario, [])
        window = (
            sampler.adaptive.window(scenario)
            if sampler.adaptive is not None and scenario in sampler.adaptive.windows
            else None
        )
        difficulties = [o.difficulty for o in members]
        rows.append(
            {
                "step": step,
                "scenario": scenario,
                "episodes": len(members),
                "success_rate": float(np.mean([o.success for o in members])) if members else None,
                "reward_mean": float(np.mean([o.env_reward for o in members])) if members else None,
                "window_low": window[0] if window else (min(difficulties) if members else None),
                "window_high": window[1] if window else (max(difficulties) if members else None),
            }
        )
    return rows
