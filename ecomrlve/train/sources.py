"""Where a DAPO step's episodes come from (step 1) and where its new weights go (step 5).

The loop (`loop.py`) sees one interface, `RolloutSource`:

* `start(policy, step)`       before the first step, with the weights it starts from (step 0, or
                              the step a resumed run restored);
* `take(step)`                step 1: the step's groups as `Rollouts`, dynamic sampling applied
                              (at most `prompts_per_step` groups kept);
* `after_update(policy, step, rollouts, updated)`
                              step 5: the weights at the end of step `step` (changed only when
                              `updated`); returns extra metrics for the step's row.

Two sources:

* `SyncRollouts`   plays each step's groups in lockstep with the rollout engine, every rank its
                   share (each episode from its own seed, so the split does not change what is
                   sampled), and pushes the updated weights into the engine;
* `AsyncRollouts`  takes batches that rollout workers (`rollout_workers.py`) played while the
                   previous updates ran, at most `max_staleness` versions behind, and publishes
                   every step's weights to them as a new version.

A third source (say, episodes from a shared world) implements the three methods, builds its
`Rollouts` with `take_batch` (which feeds the adaptive curriculum and applies dynamic sampling)
and `outcomes` (overlong shaping), and is passed as `train_dapo(..., source=...)`.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import torch

from ecomrlve.config import EcomConfig
from ecomrlve.tasks import Task
from ecomrlve.train import dapo
from ecomrlve.train.curriculum import CurriculumSampler
from ecomrlve.train.distributed import DistContext, all_gather_objects, gathered_for_generation
from ecomrlve.train.engine import RolloutEngine
from ecomrlve.train.rollout import Episode, RolloutContext, run_episodes
from ecomrlve.train.rollout_workers import RolloutOrder, RolloutWorkers
from ecomrlve.train.tool_curriculum import ToolCurriculum

log = logging.getLogger(__name__)

PlayFn = Callable[..., list[Episode]]  # run_episodes' signature
Key = tuple[int, int]  # (group within the step, sample within the group)


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


@dataclass
class Rollouts:
    """One step's episodes: every outcome (all ranks), the groups kept for training, and the
    token sequences this rank played."""

    sampled: list[Outcome] = field(default_factory=list)  # all ranks, in (group, sample) order
    groups: dict[int, list[Outcome]] = field(default_factory=dict)
    kept: list[int] = field(default_factory=list)  # at most prompts_per_step, in sampling order
    local: dict[Key, Episode] = field(default_factory=dict)  # the episodes this rank played
    gen_batches: int = 0
    dropped: int = 0  # groups dynamic sampling left out
    play_s: float = 0.0  # time spent playing them (tokens/s)
    metrics: dict[str, Any] = field(default_factory=dict)  # the source's own, for the step row

    @property
    def trained(self) -> list[Outcome]:
        """The kept groups' outcomes, group by group."""
        return [o for g in self.kept for o in self.groups[g]]


class RolloutSource(Protocol):
    """Step 1 and step 5 of the DAPO loop: where episodes come from, where weights go."""

    def start(self, policy: torch.nn.Module, step: int) -> None:
        """Before the first step: `policy` holds the weights at the end of `step`."""
        ...

    def take(self, step: int) -> Rollouts:
        """Step 1: the groups of RL step `step`, dynamic sampling applied."""
        ...

    def after_update(
        self, policy: torch.nn.Module, step: int, rollouts: Rollouts, updated: bool
    ) -> dict[str, Any]:
        """Step 5: `policy` holds the weights at the end of `step` (changed only if `updated`);
        returns metrics to add to the step's row."""
        ...


def rollout_seed(seed: int, step: int, group: int) -> int:
    """The seed of one group of episodes (the `group`-th prompt of the step)."""
    return int(np.random.SeedSequence([seed, 13, step, group]).generate_state(1)[0])


def rollout_source(
    policy: torch.nn.Module,
    context: RolloutContext,
    sampler: CurriculumSampler,
    cfg: EcomConfig,
    ctx: DistContext,
    *,
    play: PlayFn | None,
    tools: ToolCurriculum | None,
    workers: RolloutWorkers | None,
) -> RolloutSource:
    """The source `training.rollout.async` asks for: `workers` when asynchronous (one rank),
    else lockstep rollouts with `play` (`rollout.run_episodes` by default)."""
    if cfg.training.rollout.asynchronous != (workers is not None):
        raise ValueError(
            "training.rollout.async needs rollout workers (rollout_workers.py)"
            if workers is None
            else "rollout workers were given but training.rollout.async is false"
        )
    if workers is not None:
        if ctx.is_distributed:
            raise ValueError("asynchronous rollouts run with one trainer rank")
        return AsyncRollouts(workers, sampler, cfg, tools)
    play = play or run_episodes
    if tools is not None:  # each prompt offers the tools of the width in force at its step
        play = functools.partial(play, tools_for=tools.schemas_for)
    return SyncRollouts(policy, context, sampler, cfg, ctx, play)


@dataclass
class SyncRollouts:
    """Groups played in lockstep by `context.engine`; every rank draws the same tasks, plays its
    share and gathers the outcomes. The engine receives the weights after each update."""

    policy: torch.nn.Module
    context: RolloutContext
    sampler: CurriculumSampler
    cfg: EcomConfig
    ctx: DistContext
    play: PlayFn

    @property
    def engine(self) -> RolloutEngine:
        return self.context.engine

    def start(self, policy: torch.nn.Module, step: int) -> None:
        if step:  # resumed: the engine still holds the weights it was built with
            self.engine.sync_weights(policy)

    def take(self, step: int) -> Rollouts:
        """Play groups until `prompts_per_step` informative ones are kept (or the generation
        budget is spent); then a vLLM engine frees its GPU memory for the update."""
        started = time.perf_counter()
        training = self.cfg.training
        algorithm = training.algorithm
        prompts = training.rollout.prompts_per_step
        max_gen_batches = algorithm.max_num_gen_batches if algorithm.dynamic_sampling else 1
        out = Rollouts()
        while len(out.kept) < prompts and out.gen_batches < max_gen_batches:
            tasks = self.sampler.next_tasks(prompts)
            offset = out.gen_batches * prompts
            mine = list(range(self.ctx.rank, len(tasks), self.ctx.world_size))
            episodes = self._play_share(tasks, mine, offset, step)
            for episode in episodes:
                episode.group = offset + mine[episode.group]
                out.local[(episode.group, episode.sample)] = episode
            local = outcomes(episodes, self.cfg)
            batch = sorted(
                (o for part in all_gather_objects(local, self.ctx) for o in part),
                key=lambda o: o.key,
            )
            take_batch(out, batch, self.sampler, self.cfg)
        out.kept = out.kept[:prompts]
        out.play_s = time.perf_counter() - started
        if hasattr(self.engine, "sleep"):  # vLLM: woken by the weights sync after the update
            self.engine.sleep()
        return out

    def _play_share(
        self, tasks: list[Task], mine: list[int], offset: int, step: int
    ) -> list[Episode]:
        """This rank's groups `mine` of a gen batch whose first group is number `offset`."""
        # HF generate on a sharded policy: gather its weights once so ranks never wait
        shares_policy = getattr(self.engine, "model", None) is self.policy
        generation = (
            gathered_for_generation(self.policy) if shares_policy else contextlib.nullcontext()
        )
        with generation:  # every rank enters it (a collective), whether it plays or not
            if not mine:
                return []
            return _play_groups(
                self.play,
                [tasks[g] for g in mine],
                [offset + g for g in mine],
                self.context,
                self.cfg,
                step,
                first=offset,
            )

    def after_update(
        self, policy: torch.nn.Module, step: int, rollouts: Rollouts, updated: bool
    ) -> dict[str, Any]:
        """The engine samples the next step from the updated policy; with
        `rollout.replay_after_update` (one process), the trained groups are played again."""
        if not updated:
            return {}
        self.engine.sync_weights(policy)
        if self.cfg.training.rollout.replay_after_update and not self.ctx.is_distributed:
            return _replay(rollouts, self.context, self.cfg, step, self.play)
        return {}


@dataclass
class AsyncRollouts:
    """Batches played by rollout workers while the trainer updates (AReaL). Each batch is drawn
    from the curriculum when it is submitted; at most `max_staleness` + 1 are in flight, and a
    batch sampled by weights more than `max_staleness` versions before the update's starting
    ones (version step - 1) is dropped, never trained. Every step is a version, updated or
    not."""

    workers: RolloutWorkers
    sampler: CurriculumSampler
    cfg: EcomConfig
    tools: ToolCurriculum | None

    def start(self, policy: torch.nn.Module, step: int) -> None:
        self.workers.publish(policy, step)  # the weights the first step's batches sample

    def take(self, step: int) -> Rollouts:
        """Take batches as the workers complete them until `prompts_per_step` informative groups
        are kept (or the generation budget is spent), topping up the orders in flight before
        each take."""
        training = self.cfg.training
        algorithm, rollout = training.algorithm, training.rollout
        prompts, eta = rollout.prompts_per_step, rollout.max_staleness
        max_gen_batches = algorithm.max_num_gen_batches if algorithm.dynamic_sampling else 1
        out = Rollouts()
        ready: list[int] = []  # batches waiting at each take
        stale_dropped = 0
        submitted = 0  # orders drawn in this step; with eta = 0 the sync loop's gen batches
        while len(out.kept) < prompts and out.gen_batches < max_gen_batches:
            while self.workers.in_flight <= eta:
                self.workers.submit(self._order(step, submitted))
                submitted += 1
            ready.append(self.workers.ready)
            played = self.workers.next_batch()
            staleness = step - 1 - played.policy_version
            if staleness > eta:
                stale_dropped += 1
                log.info(
                    "step %d: batch %s is %d versions old; dropped", step, played.order, staleness
                )
                continue
            offset = out.gen_batches * prompts
            for episode in played.episodes:
                episode.group = offset + episode.group
                out.local[(episode.group, episode.sample)] = episode
            out.play_s += played.seconds
            batch = sorted(outcomes(played.episodes, self.cfg, staleness), key=lambda o: o.key)
            take_batch(out, batch, self.sampler, self.cfg)
        out.kept = out.kept[:prompts]
        ages = [o.staleness for o in out.trained] or [0]
        out.metrics = {  # how far behind the trained episodes were, how full the queue was
            "staleness_mean": float(np.mean(ages)),
            "staleness_max": int(max(ages)),
            "stale_dropped": stale_dropped,
            "queue_fill": float(np.mean(ready)) if ready else None,
        }
        return out

    def _order(self, step: int, number: int) -> RolloutOrder:
        """The `number`-th batch of prompts drawn in `step`, seeded as the sync loop's."""
        training = self.cfg.training
        tasks = self.sampler.next_tasks(training.rollout.prompts_per_step)
        offset = number * training.rollout.prompts_per_step
        return RolloutOrder(
            order=(step, number),
            tasks=tasks,
            seed=rollout_seed(training.seed, step, offset),
            group_seeds=[rollout_seed(training.seed, step, offset + g) for g in range(len(tasks))],
            tools=[self.tools.schemas_for(t) for t in tasks] if self.tools is not None else None,
        )

    def after_update(
        self, policy: torch.nn.Module, step: int, rollouts: Rollouts, updated: bool
    ) -> dict[str, Any]:
        """Publish version `step` (staleness counts steps, so also when nothing changed)."""
        self.workers.publish(policy, step)
        return {}


def take_batch(
    out: Rollouts, batch: list[Outcome], sampler: CurriculumSampler, cfg: EcomConfig
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


def outcomes(episodes: list[Episode], cfg: EcomConfig, staleness: int = 0) -> list[Outcome]:
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


def _play_groups(
    play: PlayFn,
    tasks: list[Task],
    groups: list[int],
    context: RolloutContext,
    cfg: EcomConfig,
    step: int,
    *,
    first: int,
) -> list[Episode]:
    """`tasks` played as the groups numbered `groups` of RL step `step`: each group samples from
    its own seed (`rollout_seed`), so a group played again later draws what it drew then;
    `first` is the gen batch's first group (the batch seed)."""
    training = cfg.training
    return context.play(
        play,
        tasks,
        samples_per_task=training.rollout.group_size,
        seed=rollout_seed(training.seed, step, first),
        group_seeds=[rollout_seed(training.seed, step, g) for g in groups],
    )


def _replay(
    rollouts: Rollouts,
    context: RolloutContext,
    cfg: EcomConfig,
    step: int,
    play: PlayFn,
) -> dict[str, float]:
    """Diagnosis (`rollout.replay_after_update`): the trained groups played again by the
    updated weights with the seeds that sampled them, so the two success rates differ only by
    the update. One process (every group's episodes are local)."""
    tasks = [rollouts.local[(g, 0)].task for g in rollouts.kept]
    episodes = _play_groups(play, tasks, rollouts.kept, context, cfg, step, first=0)
    before = [o.success for g in rollouts.kept for o in rollouts.groups[g]]
    return {
        "replay_success_before": float(np.mean(before)),
        "replay_success_after": float(np.mean([e.success for e in episodes])),
    }
