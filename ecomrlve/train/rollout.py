"""Multi-turn episodes against `EcomEnv`, run in lockstep, as trainable token sequences.

Each round, every unfinished episode's full token sequence goes to the engine in one batch;
each completion is decoded, played in its env, and the env's observation (tool results,
user messages) is appended as masked context. An episode stops when the env says done (final
answer or the env's turn limit, `env.max_steps`), or on the token budget:

* a turn that hits `agent.max_new_tokens` without its stop token is played as is, then the
  episode ends (finish "turn_length");
* an episode whose sequence reaches `agent.max_episode_tokens` ends (finish "token_budget").

A cut episode that the env has not closed is judged by `ecomrlve.env.verify` on the turns it
played, as a trajectory that stopped early. Where the episodes play is the call's `seating`:
each in its own env by default, or as seats of shared worlds (`ecomrlve.train.selfplay`); the
rounds are the same. `reference_episode` builds the same token layout from the reference
solution, for SFT.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

import numpy as np

from ecomrlve.config import AgentConfig, EcomConfig, EnvConfig
from ecomrlve.env import Catalog, EcomEnv, Verdict, reference_turns, verify
from ecomrlve.env.episode.environment import StepResult
from ecomrlve.progress import ProgressEvent, ProgressFn
from ecomrlve.tasks import Task
from ecomrlve.train.chat import ChatFormat, TokenSequence
from ecomrlve.train.engine import Completion, Judged, RolloutEngine, SamplingParams

log = logging.getLogger(__name__)


@dataclass
class Episode(Judged):
    """One played episode: its tokens (with loss mask and sampling log-probs) and its verdict."""

    task: Task
    group: int
    sample: int
    sequence: TokenSequence
    turns: list[str] = field(default_factory=list)
    verdict: Verdict | None = None
    finish: str = ""  # "answer" | "turn_limit" | "turn_length" | "token_budget"
    truncated: bool = False  # cut by a token budget
    # the oldest policy version its turns were sampled with (engines that report one in
    # `Completion.extra`, such as the endpoint engine; None otherwise): staleness = now - this
    policy_version: int | None = None


class Player(Protocol):
    """One live episode of a lockstep rollout: a single env's (`run_episodes`) or a shared
    world's seat (`ecomrlve.train.selfplay`)."""

    @property
    def episode(self) -> Episode: ...

    @property
    def seed(self) -> int | None:
        """Its sampling seed (rounds add to it); None: the call's `seed` only."""
        ...

    def judge_cut(self) -> Verdict:
        """The verdict of its episode stopped before the env closed it."""
        ...


@dataclass(frozen=True)
class Turn:
    """A player's sampled turn this round: its text, and whether a token budget cut it."""

    text: str
    cut: bool


P = TypeVar("P", bound=Player)


@dataclass(frozen=True)
class Group:
    """One task's group of a `run_episodes` call, for its seating to open."""

    task: Task
    index: int  # the task's index in the call: its episodes' `group`
    seed: int | None  # the group's seed, if the call has them
    call_seed: int  # the call's `seed`
    samples: int
    tools: list[dict[str, Any]] | None  # the tool schemas its prompts offer
    chat: ChatFormat
    catalog: Catalog
    env_config: EnvConfig


class Seating(Protocol):
    """Where a call's episodes play: each in its own env (`OWN_ENVS`), or as the seats of
    shared worlds (`ecomrlve.train.selfplay.SharedSeats`)."""

    def seat(self, group: Group) -> list[Any]:
        """The group's players, opened and prompted."""
        ...

    def play_round(
        self, active: list[Any], turns: list[Turn], chat: ChatFormat, agent: AgentConfig
    ) -> list[Any]:
        """Play each active player's turn in its env; the players that play on."""
        ...


@dataclass(eq=False)
class _Live:
    episode: Episode
    env: EcomEnv
    seed: int | None = None

    def judge_cut(self) -> Verdict:
        env = self.env
        return verify(env.task, list(self.episode.turns), env.catalog, env.config)


class _OwnEnvs:
    """Every episode in its own env (and shop)."""

    def seat(self, group: Group) -> list[_Live]:
        live = []
        for sample in range(group.samples):
            env = EcomEnv(group.task, group.catalog, group.env_config)
            sequence = TokenSequence()
            sequence.add_prompt(group.chat.prompt_ids(env.reset(include_tools=False), group.tools))
            own = None if group.seed is None else sample_seed(group.seed, sample)
            live.append(_Live(Episode(group.task, group.index, sample, sequence), env, own))
        return live

    def play_round(
        self, active: list[_Live], turns: list[Turn], chat: ChatFormat, agent: AgentConfig
    ) -> list[_Live]:
        return [
            item
            for item, turn in zip(active, turns, strict=True)
            if after_turn(item, item.env.step(turn.text), turn.cut, chat, agent)
        ]


OWN_ENVS: Seating = _OwnEnvs()


@dataclass(frozen=True)
class RolloutContext:
    """What playing episodes needs besides the tasks: the engine that samples, the chat format,
    the catalog the env searches, and the env and agent settings. `play(run_episodes, tasks,
    samples_per_task=4)` plays with them; every caller (training, evaluation) passes this one
    object instead of the five arguments."""

    engine: RolloutEngine
    chat: ChatFormat
    catalog: Catalog
    env_config: EnvConfig
    agent: AgentConfig

    @classmethod
    def of(
        cls, engine: RolloutEngine, chat: ChatFormat, catalog: Catalog, cfg: EcomConfig
    ) -> RolloutContext:
        """The context of a run configured by `cfg` (its env and agent sections)."""
        return cls(engine, chat, catalog, env_config=cfg.env, agent=cfg.agent)

    def play(
        self, play: Callable[..., list[Episode]], tasks: list[Task], **options: Any
    ) -> list[Episode]:
        """`play(tasks, ...)` (`run_episodes` or a stand-in of its signature) in this context;
        `options` are its keyword arguments (samples_per_task, seed, group_seeds, ...)."""
        return play(
            tasks,
            self.engine,
            self.chat,
            self.catalog,
            env_config=self.env_config,
            agent=self.agent,
            **options,
        )


def run_episodes(
    tasks: list[Task],
    engine: RolloutEngine,
    chat: ChatFormat,
    catalog: Catalog,
    *,
    env_config: EnvConfig,
    agent: AgentConfig,
    samples_per_task: int = 1,
    seed: int = 0,
    temperature: float | None = None,
    progress: ProgressFn | None = None,
    group_seeds: list[int] | None = None,
    tools_for: Callable[[Task], list[dict[str, Any]] | None] | None = None,
    seating: Seating = OWN_ENVS,
) -> list[Episode]:
    """Play `samples_per_task` episodes of every task in lockstep; return them grouped by task
    (episode `group` = index of its task in `tasks`).

    With `group_seeds` (one per task) every episode samples from its own seed, derived from its
    group's seed and its sample index, so an episode does not depend on the other tasks in the
    call: ranks that split a batch of tasks play what one process would. `tools_for(task)` is
    the tool schemas the task's prompt offers (None: the chat's own; see tool_curriculum).
    `seating` says where the episodes play (default: each in its own env)."""
    if group_seeds is not None and len(group_seeds) != len(tasks):
        raise ValueError(f"{len(group_seeds)} group seeds for {len(tasks)} tasks")
    players = []
    for index, task in enumerate(tasks):
        group = Group(
            task=task,
            index=index,
            seed=None if group_seeds is None else group_seeds[index],
            call_seed=seed,
            samples=samples_per_task,
            tools=tools_for(task) if tools_for is not None else None,
            chat=chat,
            catalog=catalog,
            env_config=env_config,
        )
        players += seating.seat(group)
    round_play = functools.partial(seating.play_round, chat=chat, agent=agent)
    return _lockstep(
        players,
        engine,
        chat,
        agent,
        round_play,
        seed=seed,
        temperature=temperature,
        progress=progress,
    )


def sample_seed(*words: int) -> int:
    """A sampling (or world) seed drawn from `words`: `SeedSequence(words)`'s first word."""
    return int(np.random.SeedSequence(list(words)).generate_state(1)[0])


def _lockstep(
    players: list[P],
    engine: RolloutEngine,
    chat: ChatFormat,
    agent: AgentConfig,
    play_round: Callable[[list[P], list[Turn]], list[P]],
    *,
    seed: int,
    temperature: float | None,
    progress: ProgressFn | None,
) -> list[Episode]:
    """Play `players` in rounds until every episode ends; return their episodes in order.

    Each round every live player's token sequence goes to the engine in one batch; each
    completion is cut to the player's budget and appended as its turn, then
    `play_round(active, turns)` plays the turns in the env(s) and returns who plays on."""
    episodes = [p.episode for p in players]
    active = [p for p in players if not over_budget(p, agent)]
    round_index = 0
    _report(progress, episodes, round_index)  # episodes as they finish, from before turn 1
    while active:
        budgets = [
            min(agent.max_new_tokens, agent.max_episode_tokens - len(p.episode.sequence))
            for p in active
        ]
        seeds = [p.seed for p in active]
        sampling = SamplingParams(
            max_new_tokens=max(budgets),
            temperature=agent.temperature if temperature is None else temperature,
            top_p=agent.top_p,
            stop_token_ids=chat.stop_token_ids,
            seed=seed * 10_007 + round_index,
            row_seeds=None
            if None in seeds
            else tuple(s * 10_007 + round_index for s in seeds if s is not None),
        )
        completions = engine.generate([p.episode.sequence.token_ids for p in active], sampling)
        turns = [
            _take_turn(p.episode, completion, budget, chat)
            for p, completion, budget in zip(active, completions, budgets, strict=True)
        ]
        active = play_round(active, turns)
        round_index += 1
        _report(progress, episodes, round_index)
    return episodes


def _take_turn(episode: Episode, completion: Completion, budget: int, chat: ChatFormat) -> Turn:
    """Append a completion (cut to `budget` tokens) to the episode as its next turn."""
    version = completion.extra.get("policy_version")
    if version is not None:  # the oldest weights the episode sampled with
        seen = episode.policy_version
        episode.policy_version = version if seen is None else min(seen, version)
    ids, logprobs = completion.token_ids[:budget], completion.logprobs[:budget]
    cut = completion.finish_reason == "length" or len(completion.token_ids) > budget
    episode.sequence.add_generated(ids, logprobs)
    text = chat.decode_turn(ids)
    episode.turns.append(text)
    return Turn(text, cut)


def after_turn(
    player: Player, result: StepResult, cut: bool, chat: ChatFormat, agent: AgentConfig
) -> bool:
    """Book a played turn's outcome; True while the episode goes on."""
    episode = player.episode
    if result.done:
        episode.verdict = result.info["verdict"]
        episode.finish = "turn_limit" if result.info.get("truncated") else "answer"
        if cut:
            episode.truncated = True
        return False
    if cut:
        episode.finish = (
            "token_budget" if len(episode.sequence) >= agent.max_episode_tokens else "turn_length"
        )
        episode.truncated = True
        episode.verdict = player.judge_cut()
        return False
    episode.sequence.add_context(chat.observation_ids(result.observation))
    return not over_budget(player, agent)


def over_budget(player: Player, agent: AgentConfig) -> bool:
    """End an episode whose sequence has used the episode's token budget (judged as cut)."""
    if len(player.episode.sequence) < agent.max_episode_tokens:
        return False
    player.episode.finish = "token_budget"
    player.episode.truncated = True
    player.episode.verdict = player.judge_cut()
    return True


def _report(progress: ProgressFn | None, episodes: list[Episode], round_index: int) -> None:
    if progress:
        done = sum(1 for e in episodes if e.verdict is not None)
        turn = {"turn": round_index + 1} if done < len(episodes) else {}
        progress(ProgressEvent("rollout", done, len(episodes), unit="episodes", metrics=turn))


def reference_episode(
    task: Task,
    chat: ChatFormat,
    catalog: Catalog,
    env_config: EnvConfig,
    tools: list[dict[str, Any]] | None = None,
) -> Episode:
    """The reference solution played in the env, in the rollout's token layout (for SFT)."""
    env = EcomEnv(task, catalog, env_config)
    sequence = TokenSequence()
    sequence.add_prompt(chat.prompt_ids(env.reset(include_tools=False), tools))
    episode = Episode(task, 0, 0, sequence)
    for text in reference_turns(task):
        sequence.add_generated(chat.assistant_ids(text))
        episode.turns.append(text)
        result = env.step(text)
        if result.done:
            episode.verdict = result.info["verdict"]
            episode.finish = "turn_limit" if result.info.get("truncated") else "answer"
            break
        sequence.add_context(chat.observation_ids(result.observation))
    return episode


def episode_row(episode: Episode, **extra: Any) -> dict[str, Any]:
    """The per-episode columns shared by train_rollouts and eval_episodes."""
    return {
        "task_id": episode.task.task_id,
        "scenario": episode.task.scenario,
        "difficulty": episode.task.difficulty,
        "min_steps": episode.task.min_steps,
        "reward": episode.reward,
        "success": episode.success,
        "steps": episode.steps,
        "finish": episode.finish,
        **extra,
    }
