"""The DAPO loop, top to bottom. GRPO is the same loop with DAPO's switches off.

One step:
  1. rollouts    prompts from the curriculum, `group_size` episodes each, in lockstep; each
                 rank plays every world_size-th group (each episode sampled from its own seed,
                 so the split does not change what is sampled) and the outcomes are gathered;
                 dynamic sampling drops groups that are all successes or all failures
                 (`dynamic_sampling_metric`) and samples more prompts until `prompts_per_step`
                 groups remain (at most `max_num_gen_batches`)
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
  5. sync        push the new weights into the rollout engine
  6. record      metrics, per-scenario success and difficulty windows, rollouts (rank 0)

Asynchronous (`training.rollout.async`, one rank, `workers` given): step 1 takes batches that a
rollout process has played while the previous updates ran (`rollout_workers.py`) instead of
playing them. Each batch is drawn from the curriculum when it is submitted; at most
`max_staleness` + 1 are in flight, so an episode is at most `max_staleness` (eta) weight versions
behind the update that trains on it, and a batch that is older anyway (a pool that completes out
of order) is dropped, never trained. Weights version v is the policy at the end of step v; step 5
publishes it to the workers every step. Step 4 then uses AReaL's decoupled objective: the clip
is taken against the proximal policy (the weights at the start of the update, step 3's old
log-probs, as in the synchronous loop) and each token of a stale episode is weighted by
pi_proximal / pi_behaviour (its sampling log-probs), left out above `behaviour_ratio_cap`. An
episode sampled by the very weights the update starts from has weight exactly 1, so with eta = 0
the asynchronous loop computes the synchronous loop's losses bit for bit.

Mechanics live elsewhere: rollouts in `rollout.py`, tensors in `batching.py`, the loss in
`dapo.py`, curriculum in `curriculum.py`, ranks in `distributed.py`, tables in `results.py`.
"""

from __future__ import annotations

import contextlib
import copy
import functools
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
from ecomrlve.tasks import Task
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
from ecomrlve.train.distributed import (
    DistContext,
    all_gather_objects,
    all_reduce_sum,
    gathered_for_generation,
)
from ecomrlve.train.engine import RolloutEngine
from ecomrlve.train.memory import micro_batch_tokens
from ecomrlve.train.rollout import Episode, run_episodes
from ecomrlve.train.rollout_workers import RolloutOrder, RolloutWorkers
from ecomrlve.train.schedule import lr_factor, set_lr
from ecomrlve.train.tool_curriculum import FULL_WIDTH, ToolCurriculum

log = logging.getLogger(__name__)

StepSink = Callable[[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]], None]
PlayFn = Callable[..., list[Episode]]  # run_episodes' signature
Key = tuple[int, int]  # (group within the step, sample within the group)


@dataclass
class LoopResult:
    steps: int = 0
    updates: int = 0
    history: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class Outcome:
    """What every rank learns about an episode; its token sequence stays on the rank that
    played it (which also trains on it)."""

    group: int
    sample: int
    task_id: str
    scenario: str
    difficulty: int
    min_steps: int
    env_reward: float
    reward: float  # after overlong shaping
    penalty: float
    success: bool
    steps: int
    finish: str
    truncated: bool
    response_tokens: int
    generated_tokens: int
    policy_version: int | None = None  # the weights version a server pool sampled it with
    staleness: int = 0  # versions between its sampling weights and the update's starting ones

    @property
    def key(self) -> Key:
        return (self.group, self.sample)


def rollout_seed(seed: int, step: int, group: int) -> int:
    """The seed of one group of episodes (the `group`-th prompt of the step)."""
    return int(np.random.SeedSequence([seed, 13, step, group]).generate_state(1)[0])


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
) -> LoopResult:
    """Run `training.algorithm.total_steps` DAPO steps on `policy`; `record(step_row, scenario_rows,
    rollout_rows)` receives each step's results (on rank 0). With `checkpoints`, a resumed run
    continues after the newest checkpoint's step, exactly where the stopped run was. Under
    torchrun every rank calls this with the same sampler and config (`ctx` says which rank).
    `play` plays the episodes (`rollout.run_episodes` against `EcomEnv`; a test swaps in a
    tiny rewardable task). `tools`, the tool curriculum, says which tools each prompt offers
    and widens to the full set when the steps' success holds. With `training.rollout.async`,
    `workers` play the episodes (`rollout_workers`; `play` is theirs)."""
    training = cfg.training
    algorithm = training.algorithm
    ctx = ctx or DistContext(device=next(policy.parameters()).device)
    if training.rollout.asynchronous != (workers is not None):
        raise ValueError(
            "training.rollout.async needs rollout workers (rollout_workers.py)"
            if workers is None
            else "rollout workers were given but training.rollout.async is false"
        )
    if workers is not None and ctx.is_distributed:
        raise ValueError("asynchronous rollouts run with one trainer rank")
    play = play or run_episodes
    if tools is not None:  # each prompt offers the tools of the width in force at its step
        play = functools.partial(play, tools_for=tools.schemas_for)
    optimizer = torch.optim.AdamW(
        policy.parameters(),
        lr=algorithm.learning_rate,
        weight_decay=algorithm.weight_decay,
    )
    reference = None
    if algorithm.kl_coef > 0:  # DAPO drops the KL term; kept as a switch for ablations
        reference = copy.deepcopy(policy).eval().requires_grad_(False)
    result = LoopResult()
    start = 0
    stateful: dict[str, Any] = {"sampler": sampler, **({"tools": tools} if tools else {})}
    if checkpoints is not None:  # weights, optimizer, sampler + adaptive windows, RNGs
        start = checkpoints.restore(policy, optimizer, stateful)
        if start and workers is None:  # workers receive the restored weights by publish
            engine.sync_weights(policy)
    if workers is not None:  # version `start`: the weights the first step's batches sample
        workers.publish(policy, start)

    for step in range(start + 1, algorithm.total_steps + 1):
        # ======================================================================================
        # 1. Rollouts, with dynamic sampling
        # ======================================================================================
        set_lr(
            optimizer,
            algorithm.learning_rate
            * lr_factor(
                step,
                algorithm.total_steps,
                warmup=algorithm.warmup_steps,
                schedule=algorithm.lr_schedule,
            ),
        )
        started = time.perf_counter()
        tools_offered = tools.width if tools is not None else FULL_WIDTH
        if workers is None:
            rollouts = _rollouts(policy, engine, chat, catalog, sampler, cfg, step, ctx, play)
        else:
            rollouts = _async_rollouts(workers, sampler, cfg, step, tools)
        rollout_s = time.perf_counter() - started
        if hasattr(engine, "sleep"):  # vLLM frees its GPU memory for the update; sync wakes it
            engine.sleep()

        trained = [o for g in rollouts.kept for o in rollouts.groups[g]]
        metrics: dict[str, Any] = {
            "step": step,
            "gen_batches": rollouts.gen_batches,
            "groups_sampled": len(rollouts.groups),
            "groups_dropped": rollouts.dropped,
            "groups_trained": len(rollouts.kept),
            "sequences_trained": len(trained),
            "rollout_s": rollout_s,
            "lr": optimizer.param_groups[0]["lr"],
            "overlong_penalty_mean": float(np.mean([o.penalty for o in rollouts.sampled])),
            "tools_offered": tools_offered,
        }
        metrics.update(_rollout_metrics(rollouts.sampled, rollouts.play_s or rollout_s))
        if workers is not None:
            metrics.update(_staleness_metrics(rollouts, trained))
        if tools is not None:  # widens from the next step when success at this width holds
            tools.record(step, metrics["success_rate"])
        skip_reason = _unusable_batch(trained)
        metrics.update(skipped=skip_reason is not None, skip_reason=skip_reason)

        if trained and skip_reason is None:
            # ==================================================================================
            # 2.-4. Advantages, old log-probs, PPO mini-batch updates
            # ==================================================================================
            update = _update(policy, reference, optimizer, rollouts, cfg, chat, ctx, step)
            result.updates += update.pop("optimizer_steps")
            metrics.update(update)
            # ==================================================================================
            # 5. Sync: the engine samples the next step from the updated policy
            # ==================================================================================
            if workers is None:
                engine.sync_weights(policy)
                if training.rollout.replay_after_update and not ctx.is_distributed:
                    metrics.update(_replay(rollouts, engine, chat, catalog, cfg, step, play))
        elif skip_reason is not None:
            log.warning("step %d: %s; update skipped", step, skip_reason)
        else:
            log.info("step %d: every group was all success or all failure; no update", step)
        if workers is not None:  # every step is a version, updated or not: staleness counts steps
            workers.publish(policy, step)

        # ======================================================================================
        # 6. Record
        # ======================================================================================
        trained_keys = {o.key for o in trained}
        rollout_rows = [
            {
                "step": step,
                "gen_batch": o.group // training.rollout.prompts_per_step,
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
        if record and ctx.is_main:
            record(metrics, _scenario_rows(step, rollouts.sampled, sampler), rollout_rows)
        result.history.append(metrics)
        result.steps = step
        if checkpoints is not None:
            checkpoints.after_step(step, algorithm.total_steps, policy, optimizer, stateful)
        log.info(
            "step %d reward %.3f success %.2f groups %d/%d",
            step,
            metrics["reward_mean"],
            metrics["success_rate"],
            len(rollouts.kept),
            len(rollouts.groups),
        )
        if progress:
            progress(
                ProgressEvent(
                    "dapo",
                    step,
                    algorithm.total_steps,
                    unit="step",
                    metrics={
                        "reward": metrics["reward_mean"],
                        "success": metrics["success_rate"],
                        "groups kept": f"{len(rollouts.kept)}/{len(rollouts.groups)}",
                    },
                )
            )
    return result


@dataclass
class _Rollouts:
    sampled: list[Outcome]  # every episode of the step, all ranks, in (group, sample) order
    groups: dict[int, list[Outcome]]
    kept: list[int]  # groups to train on, at most prompts_per_step, in sampling order
    local: dict[Key, Episode]  # the episodes this rank played
    gen_batches: int
    dropped: int
    play_s: float = 0.0  # asynchronous: the workers' time playing the taken batches
    stale_dropped: int = 0  # asynchronous: batches older than max_staleness, never trained
    ready: list[int] = field(default_factory=list)  # batches waiting at each take (async)


def _rollouts(
    policy: torch.nn.Module,
    engine: RolloutEngine,
    chat: ChatFormat,
    catalog: Catalog,
    sampler: CurriculumSampler,
    cfg: EcomConfig,
    step: int,
    ctx: DistContext,
    play: PlayFn,
) -> _Rollouts:
    """Step 1: play groups until `prompts_per_step` informative ones are kept (or the
    generation budget is spent). Every rank draws the same tasks and plays its share."""
    training = cfg.training
    algorithm = training.algorithm
    prompts = training.rollout.prompts_per_step
    max_gen_batches = algorithm.max_num_gen_batches if algorithm.dynamic_sampling else 1
    out = _Rollouts([], {}, [], {}, 0, 0)
    # HF generate on a sharded policy: gather its weights once so ranks never wait on each other
    shares_policy = getattr(engine, "model", None) is policy
    while len(out.kept) < prompts and out.gen_batches < max_gen_batches:
        tasks = sampler.next_tasks(prompts)
        offset = out.gen_batches * prompts
        mine = list(range(ctx.rank, len(tasks), ctx.world_size))
        episodes: list[Episode] = []
        generation = gathered_for_generation(policy) if shares_policy else contextlib.nullcontext()
        with generation:
            if mine:
                episodes = _play_groups(
                    play,
                    [tasks[g] for g in mine],
                    [offset + g for g in mine],
                    engine,
                    chat,
                    catalog,
                    cfg,
                    step,
                    first=offset,
                )
        for episode in episodes:
            episode.group = offset + mine[episode.group]
            out.local[(episode.group, episode.sample)] = episode
        local = _outcomes(episodes, cfg)
        batch = sorted(
            (o for part in all_gather_objects(local, ctx) for o in part), key=lambda o: o.key
        )
        _take_batch(out, batch, sampler, cfg)
    out.kept = out.kept[:prompts]
    return out


def _async_rollouts(
    workers: RolloutWorkers,
    sampler: CurriculumSampler,
    cfg: EcomConfig,
    step: int,
    tools: ToolCurriculum | None,
) -> _Rollouts:
    """Step 1, asynchronously: take batches as the workers complete them until
    `prompts_per_step` informative groups are kept (or the generation budget is spent). Before
    each take, orders are topped up to `max_staleness` + 1 in flight; a batch sampled by weights
    more than `max_staleness` versions before this update's (version step - 1) is dropped."""
    training = cfg.training
    algorithm, rollout = training.algorithm, training.rollout
    prompts, eta = rollout.prompts_per_step, rollout.max_staleness
    max_gen_batches = algorithm.max_num_gen_batches if algorithm.dynamic_sampling else 1
    out = _Rollouts([], {}, [], {}, 0, 0)
    submitted = 0  # orders drawn in this step; with eta = 0 the sync loop's gen batches
    while len(out.kept) < prompts and out.gen_batches < max_gen_batches:
        while workers.in_flight <= eta:
            tasks = sampler.next_tasks(prompts)
            offset = submitted * prompts
            workers.submit(
                RolloutOrder(
                    order=(step, submitted),
                    tasks=tasks,
                    seed=rollout_seed(training.seed, step, offset),
                    group_seeds=[
                        rollout_seed(training.seed, step, offset + g) for g in range(len(tasks))
                    ],
                    tools=[tools.schemas_for(t) for t in tasks] if tools is not None else None,
                )
            )
            submitted += 1
        out.ready.append(workers.ready)
        played = workers.next_batch()
        staleness = step - 1 - played.policy_version
        if staleness > eta:
            out.stale_dropped += 1
            log.info("step %d: batch %s is %d versions old; dropped", step, played.order, staleness)
            continue
        offset = out.gen_batches * prompts
        for episode in played.episodes:
            episode.group = offset + episode.group
            out.local[(episode.group, episode.sample)] = episode
        out.play_s += played.seconds
        batch = sorted(_outcomes(played.episodes, cfg, staleness), key=lambda o: o.key)
        _take_batch(out, batch, sampler, cfg)
    out.kept = out.kept[:prompts]
    return out


def _play_groups(
    play: PlayFn,
    tasks: list[Task],
    groups: list[int],
    engine: RolloutEngine,
    chat: ChatFormat,
    catalog: Catalog,
    cfg: EcomConfig,
    step: int,
    *,
    first: int,
) -> list[Episode]:
    """`tasks` played as the groups numbered `groups` of RL step `step`: each group samples from
    its own seed (`rollout_seed`), so a group played again later draws what it drew then;
    `first` is the gen batch's first group (the batch seed)."""
    training = cfg.training
    return play(
        tasks,
        engine,
        chat,
        catalog,
        env_config=cfg.env,
        agent=cfg.agent,
        samples_per_task=training.rollout.group_size,
        seed=rollout_seed(training.seed, step, first),
        group_seeds=[rollout_seed(training.seed, step, g) for g in groups],
    )


def _replay(
    rollouts: _Rollouts,
    engine: RolloutEngine,
    chat: ChatFormat,
    catalog: Catalog,
    cfg: EcomConfig,
    step: int,
    play: PlayFn,
) -> dict[str, float]:
    """Diagnosis (`rollout.replay_after_update`): the trained groups played again by the
    updated weights with the seeds that sampled them, so the two success rates differ only by
    the update. One process (every group's episodes are local)."""
    tasks = [rollouts.local[(g, 0)].task for g in rollouts.kept]
    episodes = _play_groups(play, tasks, rollouts.kept, engine, chat, catalog, cfg, step, first=0)
    before = [o.success for g in rollouts.kept for o in rollouts.groups[g]]
    return {
        "replay_success_before": float(np.mean(before)),
        "replay_success_after": float(np.mean([e.success for e in episodes])),
    }


def _take_batch(
    out: _Rollouts, batch: list[Outcome], sampler: CurriculumSampler, cfg: EcomConfig
) -> None:
    """One complete gen batch into `out`: the adaptive curriculum sees every episode, and dynamic
    sampling keeps the groups whose samples differ (`dynamic_sampling_metric`)."""
    algorithm = cfg.training.algorithm
    out.gen_batches += 1
    if sampler.adaptive is not None:
        for o in batch:
            sampler.adaptive.record(o.scenario, o.difficulty, o.success)
    out.sampled.extend(batch)
    groups: dict[int, list[Outcome]] = {}
    for o in batch:
        groups.setdefault(o.group, []).append(o)
    out.groups.update(groups)
    keep = [True] * len(groups)
    if algorithm.dynamic_sampling:
        success = algorithm.dynamic_sampling_metric == "success"
        values = torch.tensor([float(o.success) if success else o.reward for o in batch])
        local_index = {g: i for i, g in enumerate(groups)}
        group_index = torch.tensor([local_index[o.group] for o in batch])  # (n,)
        keep = dapo.informative_groups(values, group_index).tolist()  # (g,)
    out.dropped += sum(not k for k in keep)
    out.kept.extend(g for g, k in zip(groups, keep, strict=True) if k)


def _outcomes(episodes: list[Episode], cfg: EcomConfig, staleness: int = 0) -> list[Outcome]:
    """Step 2's shaping: DAPO's soft overlong penalty on each episode's response length against
    its response budget (the episode budget minus its prompt)."""
    if not episodes:
        return []
    training, agent = cfg.training, cfg.agent
    algorithm = training.algorithm
    lengths = torch.tensor([e.sequence.response_length for e in episodes])  # (n,)
    budgets = torch.tensor(
        [agent.max_episode_tokens - e.sequence.prompt_length for e in episodes]
    )  # (n,)
    penalty = torch.zeros(len(episodes))  # (n,)
    if algorithm.overlong_shaping:
        penalty = dapo.overlong_penalty(
            lengths,
            budgets,
            algorithm.overlong_buffer,
            algorithm.overlong_penalty,
        )  # (n,)
    return [
        Outcome(
            group=e.group,
            sample=e.sample,
            task_id=e.task.task_id,
            scenario=e.task.scenario,
            difficulty=e.task.difficulty,
            min_steps=e.task.min_steps,
            env_reward=e.reward,
            reward=e.reward + float(p),
            penalty=float(p),
            success=e.success,
            steps=e.steps,
            finish=e.finish,
            truncated=e.truncated,
            response_tokens=e.sequence.response_length,
            generated_tokens=e.sequence.generated_tokens,
            policy_version=e.policy_version,
            staleness=staleness,
        )
        for e, p in zip(episodes, penalty.tolist(), strict=True)
    ]


def _update(
    policy: torch.nn.Module,
    reference: torch.nn.Module | None,
    optimizer: torch.optim.Optimizer,
    rollouts: _Rollouts,
    cfg: EcomConfig,
    chat: ChatFormat,
    ctx: DistContext,
    step: int,
) -> dict[str, Any]:
    """Steps 2-4 on the kept groups; returns the update's metrics (and `optimizer_steps`)."""
    training, agent = cfg.training, cfg.agent
    algorithm = training.algorithm
    started = time.perf_counter()
    # ---- 2. advantages: group-normalised shaped rewards (identical on every rank)
    trained = [o for g in rollouts.kept for o in rollouts.groups[g]]
    rewards = torch.tensor([o.reward for o in trained])  # (N,)
    rank_of_group = {g: i for i, g in enumerate(rollouts.kept)}
    group_index = torch.tensor([rank_of_group[o.group] for o in trained])  # (N,)
    advantages = dict(
        zip(
            (o.key for o in trained),
            dapo.group_advantages(rewards, group_index).tolist(),
            strict=True,
        )
    )  # key -> A
    per_mini = algorithm.ppo_mini_batch_size or training.rollout.prompts_per_step
    minis = [rollouts.kept[i : i + per_mini] for i in range(0, len(rollouts.kept), per_mini)]
    plans = [_mini_batch(mini, rollouts, cfg, chat, ctx) for mini in minis]
    stale = {o.key for o in trained if o.staleness > 0}  # sampled by older weights (async)

    # ---- 3. old (proximal) policy: log-probs of the sampled tokens before any update (no grad)
    policy.eval()
    mismatch = 0.0
    with torch.no_grad():
        for plan in plans:
            for micro in plan.micros:
                batch = micro.batch
                old, _ = forward_logprobs(policy, batch, temperature=agent.temperature)
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
                        reference, batch, temperature=agent.temperature
                    )  # (b, L-1)
    policy.train()

    # ---- 4. update: ppo_epochs x mini-batches optimizer steps, micro-batches accumulated
    losses, grad_norms = [], []
    # tokens, clipped, low, high, kl, entropy, stale tokens left out by behaviour_ratio_cap
    totals = torch.zeros(7, dtype=torch.float64)
    skip_reason = None
    for epoch in range(algorithm.ppo_epochs):
        for plan in plans:
            optimizer.zero_grad(set_to_none=True)
            step_loss = 0.0
            for micro in plan.micros:
                batch = micro.batch
                logprobs, entropy = forward_logprobs(
                    policy, batch, temperature=agent.temperature, with_entropy=epoch == 0
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
                step_loss += float(loss.detach()) * micro.weight
                ent = float((entropy * batch.loss_mask).sum()) if entropy is not None else 0.0
                totals += micro.weight * torch.tensor(
                    [
                        stats.tokens,
                        stats.clipped,
                        stats.clipped_low,
                        stats.clipped_high,
                        stats.kl,
                        ent,
                        stats.behaviour_capped,
                    ],
                    dtype=torch.float64,
                )
            step_loss = all_reduce_sum(step_loss, ctx)
            grad_norm = torch.nn.utils.clip_grad_norm_(policy.parameters(), algorithm.max_grad_norm)
            if hasattr(grad_norm, "full_tensor"):  # FSDP2: a DTensor over the ranks
                grad_norm = grad_norm.full_tensor()
            if not (math.isfinite(step_loss) and math.isfinite(float(grad_norm))):
                # one NaN/inf poisons AdamW's moments for good: drop this update instead
                optimizer.zero_grad(set_to_none=True)
                skip_reason = (
                    f"non-finite loss {step_loss}"
                    if not math.isfinite(step_loss)
                    else f"non-finite gradient norm {float(grad_norm)}"
                )
                log.warning("step %d epoch %d: %s; update skipped", step, epoch, skip_reason)
                break
            optimizer.step()
            losses.append(step_loss)
            grad_norms.append(float(grad_norm))
        if skip_reason is not None:
            break

    if ctx.is_distributed:
        summed = torch.tensor([*totals.tolist(), mismatch], dtype=torch.float64)
        torch.distributed.all_reduce(summed)
        totals, mismatch = summed[:-1], float(summed[-1])
    tokens_once = float(sum(o.generated_tokens for o in trained))
    passes = max(totals[0].item(), 1.0)  # trained tokens summed over every optimizer step
    # where the signal lives: how large the advantages are, and which tokens carry them
    magnitudes = [abs(advantages[o.key]) for o in trained]
    positive_tokens = sum(o.generated_tokens for o in trained if advantages[o.key] > 0)
    out: dict[str, Any] = {
        "optimizer_steps": len(losses),
        "loss": float(np.mean(losses)) if losses else None,
        "grad_norm": float(np.mean(grad_norms)) if grad_norms else None,
        "entropy": float(totals[5]) / max(tokens_once, 1.0),
        "clip_fraction": float(totals[1]) / passes,
        "clip_fraction_low": float(totals[2]) / passes,
        "clip_fraction_high": float(totals[3]) / passes,
        "kl": float(totals[4]) / passes,
        "behaviour_capped_fraction": float(totals[6]) / passes,
        "logprob_mismatch": mismatch / max(tokens_once, 1.0),
        "advantage_abs_mean": float(np.mean(magnitudes)),
        "positive_token_fraction": positive_tokens / max(tokens_once, 1.0),
        "update_s": time.perf_counter() - started,
    }
    if skip_reason is not None:
        out.update(skipped=True, skip_reason=skip_reason)
    return out


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
    groups: list[int], rollouts: _Rollouts, cfg: EcomConfig, chat: ChatFormat, ctx: DistContext
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


def _staleness_metrics(rollouts: _Rollouts, trained: list[Outcome]) -> dict[str, Any]:
    """How far behind the trained episodes were, and how full the workers kept the queue."""
    ages = [o.staleness for o in trained] or [0]
    return {
        "staleness_mean": float(np.mean(ages)),
        "staleness_max": int(max(ages)),
        "stale_dropped": rollouts.stale_dropped,
        "queue_fill": float(np.mean(rollouts.ready)) if rollouts.ready else None,
    }


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
