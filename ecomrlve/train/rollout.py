"""Multi-turn episodes against `EcomEnv`, run in lockstep, as trainable token sequences.

Each round, every unfinished episode's full token sequence goes to the engine in one batch;
each completion is decoded, played in its env, and the env's observation (tool results,
user messages) is appended as masked context. An episode stops when the env says done (final
answer or the env's turn limit, `env.max_steps`), or on the token budget:

* a turn that hits `agent.max_new_tokens` without its stop token is played as is, then the
  episode ends (finish "turn_length");
* an episode whose sequence reaches `agent.max_episode_tokens` ends (finish "token_budget").

A cut episode that the env has not closed is judged by `ecomrlve.env.verify` on the turns it
played, as a trajectory that stopped early. `reference_episode` builds the same token layout
from the reference solution, for SFT.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ecomrlve.config import AgentConfig, EnvConfig
from ecomrlve.env import Catalog, EcomEnv, Verdict, reference_turns, verify
from ecomrlve.progress import ProgressEvent, ProgressFn
from ecomrlve.tasks import Task
from ecomrlve.train.chat import ChatFormat, TokenSequence
from ecomrlve.train.engine import Judged, RolloutEngine, SamplingParams

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


@dataclass
class _Live:
    episode: Episode
    env: EcomEnv


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
) -> list[Episode]:
    """Play `samples_per_task` episodes of every task in lockstep; return them grouped by task
    (episode `group` = index of its task in `tasks`).

    With `group_seeds` (one per task) every episode samples from its own seed, derived from its
    group's seed and its sample index, so an episode does not depend on the other tasks in the
    call: ranks that split a batch of tasks play what one process would. `tools_for(task)` is
    the tool schemas the task's prompt offers (None: the chat's own; see tool_curriculum)."""
    if group_seeds is not None and len(group_seeds) != len(tasks):
        raise ValueError(f"{len(group_seeds)} group seeds for {len(tasks)} tasks")
    live: list[_Live] = []
    seeds: dict[int, int] = {}
    for group, task in enumerate(tasks):
        tools = tools_for(task) if tools_for is not None else None
        for sample in range(samples_per_task):
            env = EcomEnv(task, catalog, env_config)
            sequence = TokenSequence()
            sequence.add_prompt(chat.prompt_ids(env.reset(include_tools=False), tools))
            item = _Live(Episode(task, group, sample, sequence), env)
            live.append(item)
            if group_seeds is not None:
                seeds[id(item)] = int(
                    np.random.SeedSequence([group_seeds[group], sample]).generate_state(1)[0]
                )
    episodes = [item.episode for item in live]
    sampling_temperature = agent.temperature if temperature is None else temperature
    active = [item for item in live if not _over_budget(item, agent)]
    round_index = 0

    def report() -> None:  # episodes as they finish, from before the first turn
        if progress:
            done = sum(1 for e in episodes if e.verdict is not None)
            turn = {"turn": round_index + 1} if active else {}
            progress(ProgressEvent("rollout", done, len(episodes), unit="episodes", metrics=turn))

    report()
    while active:
        budgets = [
            min(agent.max_new_tokens, agent.max_episode_tokens - len(item.episode.sequence))
            for item in active
        ]
        sampling = SamplingParams(
            max_new_tokens=max(budgets),
            temperature=sampling_temperature,
            top_p=agent.top_p,
            stop_token_ids=chat.stop_token_ids,
            seed=seed * 10_007 + round_index,
            row_seeds=tuple(seeds[id(i)] * 10_007 + round_index for i in active)
            if group_seeds is not None
            else None,
        )
        completions = engine.generate([i.episode.sequence.token_ids for i in active], sampling)
        still: list[_Live] = []
        for item, completion, budget in zip(active, completions, budgets, strict=True):
            version = completion.extra.get("policy_version")
            if version is not None:
                seen = item.episode.policy_version
                item.episode.policy_version = version if seen is None else min(seen, version)
            ids, logprobs = completion.token_ids[:budget], completion.logprobs[:budget]
            cut = completion.finish_reason == "length" or len(completion.token_ids) > budget
            if _play_turn(item, chat, ids, logprobs, cut, agent, catalog, env_config):
                still.append(item)
        active = still
        round_index += 1
        report()
    return episodes


def _over_budget(item: _Live, agent: AgentConfig) -> bool:
    if len(item.episode.sequence) < agent.max_episode_tokens:
        return False
    item.episode.finish = "token_budget"
    item.episode.truncated = True
    item.episode.verdict = _judge_cut(item)
    return True


def _play_turn(
    item: _Live,
    chat: ChatFormat,
    ids: list[int],
    logprobs: list[float],
    cut: bool,
    agent: AgentConfig,
    catalog: Catalog,
    env_config: EnvConfig,
) -> bool:
    """Append one assistant turn and play it; True while the episode goes on."""
    episode, env = item.episode, item.env
    episode.sequence.add_generated(ids, logprobs)
    text = chat.decode_turn(ids)
    episode.turns.append(text)
    result = env.step(text)
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
        episode.verdict = _judge_cut(item)
        return False
    episode.sequence.add_context(chat.observation_ids(result.observation))
    return not _over_budget(item, agent)


def _judge_cut(item: _Live) -> Verdict:
    """The verdict of an episode stopped before the env closed it."""
    env = item.env
    return verify(env.task, list(item.episode.turns), env.catalog, env.config)


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
