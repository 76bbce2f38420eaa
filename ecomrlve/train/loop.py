"""The DAPO loop, top to bottom. GRPO is the same loop with DAPO's switches off.

One step:
  1. rollouts    prompts from the curriculum, `group_size` episodes each, in lockstep;
                 dynamic sampling drops groups whose rewards are all equal and samples more
                 prompts until `prompts_per_step` groups remain (at most `max_num_gen_batches`)
  2. rewards     env reward + overlong shaping, then group-normalised advantages
  3. old policy  log-probs of the sampled tokens before the update (no grad)
  4. update      `ppo_epochs` optimizer steps; each accumulates the clipped-surrogate loss over
                 micro-batches of `mini_batch_size` sequences, normalised by the whole batch.
                 A step with a non-finite reward, no trainable token, or a non-finite loss or
                 gradient norm is skipped (weights and optimizer untouched), logged with its
                 reason and recorded in the step's `skipped` / `skip_reason` metrics
  5. sync        push the new weights into the rollout engine
  6. record      metrics, per-scenario success and difficulty windows, rollouts

Mechanics live elsewhere: rollouts in `rollout.py`, tensors in `batching.py`, the loss in
`dapo.py`, curriculum in `curriculum.py`, tables and plots in `results.py`.
"""

from __future__ import annotations

import copy
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
from ecomrlve.train import dapo
from ecomrlve.train.batching import collate, forward_logprobs, micro_batches
from ecomrlve.train.chat import ChatFormat
from ecomrlve.train.checkpoint import Checkpointer
from ecomrlve.train.curriculum import CurriculumSampler
from ecomrlve.train.engine import RolloutEngine
from ecomrlve.train.rollout import Episode, run_episodes

log = logging.getLogger(__name__)

ProgressFn = Callable[[str, float], None]
StepSink = Callable[[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]], None]


@dataclass
class LoopResult:
    steps: int = 0
    updates: int = 0
    history: list[dict[str, Any]] = field(default_factory=list)


def rollout_seed(seed: int, step: int, gen_batch: int) -> int:
    return int(np.random.SeedSequence([seed, 13, step, gen_batch]).generate_state(1)[0])


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
) -> LoopResult:
    """Run `training.total_steps` DAPO steps on `policy`; `record(step_row, scenario_rows,
    rollout_rows)` receives each step's results. With `checkpoints`, a resumed run continues
    after the newest checkpoint's step, exactly where the stopped run was."""
    training, agent = cfg.training, cfg.agent
    device = next(policy.parameters()).device
    optimizer = torch.optim.AdamW(
        policy.parameters(), lr=training.learning_rate, weight_decay=training.weight_decay
    )
    reference = None
    if training.kl_coef > 0:  # DAPO drops the KL term; kept as a switch for ablations
        reference = copy.deepcopy(policy).eval().requires_grad_(False)
    max_gen_batches = training.max_num_gen_batches if training.dynamic_sampling else 1
    result = LoopResult()
    start = 0
    if checkpoints is not None:  # weights, optimizer, sampler + adaptive windows, RNGs
        start = checkpoints.restore(policy, optimizer, {"sampler": sampler})
        if start:
            engine.sync_weights(policy)

    for step in range(start + 1, training.total_steps + 1):
        # ======================================================================================
        # 1. Rollouts, with dynamic sampling
        # ======================================================================================
        started = time.perf_counter()
        kept: list[list[Episode]] = []
        sampled: list[Episode] = []
        shaped: dict[int, float] = {}  # id(episode) -> reward after overlong shaping
        penalties: list[float] = []
        gen_batches = groups_sampled = groups_dropped = 0
        while len(kept) < training.prompts_per_step and gen_batches < max_gen_batches:
            tasks = sampler.next_tasks(training.prompts_per_step)
            episodes = run_episodes(
                tasks,
                engine,
                chat,
                catalog,
                env_config=cfg.env,
                agent=agent,
                samples_per_task=training.group_size,
                seed=rollout_seed(training.seed, step, gen_batches),
            )
            for episode in episodes:
                episode.group += gen_batches * training.prompts_per_step
                if sampler.adaptive is not None:
                    sampler.adaptive.record(
                        episode.task.scenario, episode.task.difficulty, episode.success
                    )
            sampled.extend(episodes)
            gen_batches += 1

            env_rewards = torch.tensor([e.reward for e in episodes])  # (n,)
            lengths = torch.tensor([len(e.sequence) for e in episodes])  # (n,)
            penalty = torch.zeros_like(env_rewards)  # (n,)
            if training.overlong_shaping:
                penalty = dapo.overlong_penalty(
                    lengths,
                    agent.max_episode_tokens,
                    training.overlong_buffer,
                    training.overlong_penalty,
                )  # (n,)
            rewards = env_rewards + penalty  # (n,)
            penalties.extend(penalty.tolist())
            shaped.update({id(e): float(r) for e, r in zip(episodes, rewards, strict=True)})

            groups: dict[int, list[Episode]] = {}
            for episode in episodes:
                groups.setdefault(episode.group, []).append(episode)
            local = {g: i for i, g in enumerate(groups)}
            group_index = torch.tensor([local[e.group] for e in episodes])  # (n,)
            keep = torch.ones(len(groups), dtype=torch.bool)  # (g,)
            if training.dynamic_sampling:
                keep = dapo.informative_groups(rewards, group_index)  # (g,)
            groups_sampled += len(groups)
            groups_dropped += int((~keep).sum())
            kept.extend(members for g, members in groups.items() if keep[local[g]])
        kept = kept[: training.prompts_per_step]
        rollout_s = time.perf_counter() - started
        if hasattr(engine, "sleep"):  # vLLM frees its GPU memory for the update; sync wakes it
            engine.sleep()

        trained = [episode for group in kept for episode in group]
        trained_ids = {id(e) for e in trained}
        metrics: dict[str, Any] = {
            "step": step,
            "gen_batches": gen_batches,
            "groups_sampled": groups_sampled,
            "groups_dropped": groups_dropped,
            "groups_trained": len(kept),
            "sequences_trained": len(trained),
            "rollout_s": rollout_s,
            "overlong_penalty_mean": float(np.mean(penalties)) if penalties else 0.0,
        }
        metrics.update(_rollout_metrics(sampled, shaped, rollout_s))
        skip_reason = _unusable_batch(trained, shaped)
        metrics.update(skipped=skip_reason is not None, skip_reason=skip_reason)

        if trained and skip_reason is None:
            update_started = time.perf_counter()
            # ==================================================================================
            # 2. Advantages: group-normalised shaped rewards
            # ==================================================================================
            sequences = [e.sequence for e in trained]
            rewards = torch.tensor([shaped[id(e)] for e in trained])  # (N,)
            group_index = torch.tensor([g for g, group in enumerate(kept) for _ in group])  # (N,)
            advantages = dapo.group_advantages(rewards, group_index)  # (N,)
            total_tokens = float(sum(s.generated_tokens for s in sequences))
            total_sequences = float(len(sequences))
            order = list(range(len(sequences)))
            batches = micro_batches(order, training.mini_batch_size)

            # ==================================================================================
            # 3. Old policy: log-probs of the sampled tokens before any update
            # ==================================================================================
            old_logprobs: list[torch.Tensor] = []
            ref_logprobs: list[torch.Tensor | None] = []
            mismatch_sum = 0.0
            policy.eval()
            with torch.no_grad():
                for micro in batches:
                    batch = collate([sequences[i] for i in micro], chat.pad_token_id).to(device)
                    old, _ = forward_logprobs(policy, batch, temperature=agent.temperature)
                    old_logprobs.append(old)  # (b, L-1)
                    gap = (old - batch.sampling_logprobs).abs() * batch.loss_mask  # (b, L-1)
                    mismatch_sum += float(gap.sum())
                    if reference is not None:
                        ref, _ = forward_logprobs(reference, batch, temperature=agent.temperature)
                        ref_logprobs.append(ref)  # (b, L-1)
                    else:
                        ref_logprobs.append(None)
            policy.train()

            # ==================================================================================
            # 4. Update: ppo_epochs optimizer steps over micro-batches
            # ==================================================================================
            losses, grad_norms, entropies = [], [], []
            stats = dapo.LossStats(0.0, 0.0, 0.0, 0.0, 0.0)
            for epoch in range(training.ppo_epochs):
                optimizer.zero_grad(set_to_none=True)
                epoch_loss = 0.0
                for k, micro in enumerate(batches):
                    batch = collate([sequences[i] for i in micro], chat.pad_token_id).to(device)
                    logprobs, entropy = forward_logprobs(
                        policy, batch, temperature=agent.temperature, with_entropy=epoch == 0
                    )  # (b, L-1), (b, L-1)
                    loss, micro_stats = dapo.policy_loss(
                        logprobs,
                        old_logprobs[k],
                        advantages[micro].to(device),  # (b,)
                        batch.loss_mask,
                        clip_ratio_low=training.clip_ratio_low,
                        clip_ratio_high=training.clip_ratio_high,
                        loss_agg_mode=training.loss_agg_mode,
                        kl_coef=training.kl_coef,
                        ref_logprobs=ref_logprobs[k],
                        total_tokens=total_tokens,
                        total_sequences=total_sequences,
                    )
                    loss.backward()
                    epoch_loss += float(loss.detach())
                    for name in ("tokens", "clipped", "clipped_low", "clipped_high", "kl"):
                        setattr(stats, name, getattr(stats, name) + getattr(micro_stats, name))
                    if entropy is not None:
                        entropies.append(float((entropy * batch.loss_mask).sum()))
                grad_norm = torch.nn.utils.clip_grad_norm_(
                    policy.parameters(), training.max_grad_norm
                )
                if not (math.isfinite(epoch_loss) and math.isfinite(float(grad_norm))):
                    # one NaN/inf poisons AdamW's moments for good: drop this update instead
                    optimizer.zero_grad(set_to_none=True)
                    skip_reason = (
                        f"non-finite loss {epoch_loss}"
                        if not math.isfinite(epoch_loss)
                        else f"non-finite gradient norm {float(grad_norm)}"
                    )
                    log.warning("step %d epoch %d: %s; update skipped", step, epoch, skip_reason)
                    metrics.update(skipped=True, skip_reason=skip_reason)
                    break
                optimizer.step()
                result.updates += 1
                losses.append(epoch_loss)
                grad_norms.append(float(grad_norm))

            # ==================================================================================
            # 5. Sync: the engine samples the next step from the updated policy
            # ==================================================================================
            engine.sync_weights(policy)

            tokens = max(stats.tokens, 1.0)
            metrics.update(
                loss=float(np.mean(losses)) if losses else None,
                grad_norm=float(np.mean(grad_norms)) if grad_norms else None,
                entropy=sum(entropies) / max(total_tokens, 1.0),
                clip_fraction=stats.clipped / tokens,
                clip_fraction_low=stats.clipped_low / tokens,
                clip_fraction_high=stats.clipped_high / tokens,
                kl=stats.kl / tokens,
                logprob_mismatch=mismatch_sum / max(total_tokens, 1.0),
                update_s=time.perf_counter() - update_started,
            )
        elif skip_reason is not None:
            log.warning("step %d: %s; update skipped", step, skip_reason)
        else:
            log.info("step %d: every group had equal rewards; no update", step)

        # ======================================================================================
        # 6. Record
        # ======================================================================================
        scenario_rows = _scenario_rows(step, sampled, sampler)
        rollout_rows = [
            {
                "step": step,
                "gen_batch": e.group // training.prompts_per_step,
                "group": e.group,
                "task_id": e.task.task_id,
                "scenario": e.task.scenario,
                "difficulty": e.task.difficulty,
                "min_steps": e.task.min_steps,
                "reward": shaped[id(e)],
                "env_reward": e.reward,
                "success": e.success,
                "steps": e.steps,
                "finish": e.finish,
                "truncated": e.truncated,
                "response_tokens": e.sequence.response_length,
                "trained": id(e) in trained_ids,
            }
            for e in sampled
        ]
        if record:
            record(metrics, scenario_rows, rollout_rows)
        result.history.append(metrics)
        result.steps = step
        if checkpoints is not None:
            checkpoints.after_step(
                step, training.total_steps, policy, optimizer, {"sampler": sampler}
            )
        log.info(
            "step %d reward %.3f success %.2f groups %d/%d",
            step,
            metrics["reward_mean"],
            metrics["success_rate"],
            len(kept),
            groups_sampled,
        )
        if progress:
            progress("dapo", step / max(training.total_steps, 1))
    return result


def _unusable_batch(trained: list[Episode], shaped: dict[int, float]) -> str | None:
    """Why the kept episodes cannot be trained on (None when they can).

    A NaN/inf reward would turn every advantage of its group into NaN; a batch without a single
    generated token (every token masked) would divide the token-mean loss by zero.
    """
    if not trained:
        return None  # nothing kept: the plain "no update" path
    bad = [e.task.task_id for e in trained if not math.isfinite(shaped[id(e)])]
    if bad:
        return f"non-finite reward in {len(bad)} episode(s), e.g. {bad[0]}"
    if sum(e.sequence.generated_tokens for e in trained) == 0:
        return "no trainable tokens (every generated token is masked)"
    return None


def _rollout_metrics(
    episodes: list[Episode], shaped: dict[int, float], seconds: float
) -> dict[str, Any]:
    rewards = np.array([shaped[id(e)] for e in episodes], dtype=np.float64)
    lengths = np.array([e.sequence.response_length for e in episodes])
    generated = sum(e.sequence.generated_tokens for e in episodes)
    by_scenario: dict[str, list[bool]] = {}
    for e in episodes:
        by_scenario.setdefault(e.task.scenario, []).append(e.success)
    return {
        "reward_mean": float(rewards.mean()),
        "reward_std": float(rewards.std()),
        "success_rate": float(np.mean([e.success for e in episodes])),
        "success_by_scenario": {s: float(np.mean(v)) for s, v in sorted(by_scenario.items())},
        "response_length_mean": float(lengths.mean()),
        "response_length_max": int(lengths.max()),
        "truncated_rate": float(np.mean([e.truncated for e in episodes])),
        "tokens_generated": int(generated),
        "tokens_per_s": generated / seconds if seconds > 0 else 0.0,
    }


def _scenario_rows(
    step: int, episodes: list[Episode], sampler: CurriculumSampler
) -> list[dict[str, Any]]:
    by_scenario: dict[str, list[Episode]] = {}
    for e in episodes:
        by_scenario.setdefault(e.task.scenario, []).append(e)
    scenarios = sorted(set(by_scenario) | set(sampler.adaptive.windows if sampler.adaptive else ()))
    rows = []
    for scenario in scenarios:
        members = by_scenario.get(scenario, [])
        window = (
            sampler.adaptive.window(scenario)
            if sampler.adaptive is not None and scenario in sampler.adaptive.windows
            else None
        )
        difficulties = [e.task.difficulty for e in members]
        rows.append(
            {
                "step": step,
                "scenario": scenario,
                "episodes": len(members),
                "success_rate": float(np.mean([e.success for e in members])) if members else None,
                "reward_mean": float(np.mean([e.reward for e in members])) if members else None,
                "window_low": window[0] if window else (min(difficulties) if members else None),
                "window_high": window[1] if window else (max(difficulties) if members else None),
            }
        )
    return rows
