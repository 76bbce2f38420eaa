"""Self-play rollouts (issue 47): DAPO groups filled from shared-world episodes, one policy
at K seats.

The `G` samples of a task's group are played as shared worlds of `K` seats each
(`ecomrlve.env.shared.SharedWorld`; the last world has `G mod K` seats when K does not divide
G): every seat plays its own copy of the task (its own customer id) on one shop, where the
first item the task's reference buys is scarce (`units` left; by default the difficulty
ladder's `contention_at(task.difficulty).units`), so the seats compete for it. Sample `s` of
the group is seat `s mod K` of the group's world `s // K`. Every seat's turns come from the
one policy; its reward is its own verdict, judged on what that seat saw (another seat's
purchase reaches it as a world event, as in `SharedWorld`).

All worlds of a call play in lockstep, as `rollout.run_episodes` plays single episodes: each
round every live seat's token sequence goes to the engine in one batch, then each world plays
its seats' turns in its seeded order. The token budgets cut a seat as they cut an episode
there; a cut seat is ended in its world (judged as truncated, on its own view).

    play = shared_play(seats=2)        # train_dapo(..., play=play): rollout.shared_seats = 2
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ecomrlve.config import AgentConfig, EnvConfig
from ecomrlve.env import Catalog
from ecomrlve.env.environment import StepResult
from ecomrlve.env.shared import SharedWorld, draw_shared_tasks
from ecomrlve.progress import ProgressEvent, ProgressFn
from ecomrlve.tasks import Task
from ecomrlve.train.chat import ChatFormat, TokenSequence
from ecomrlve.train.engine import Completion, RolloutEngine, SamplingParams
from ecomrlve.train.rollout import Episode

WORLD_STREAM = 0x5E1F  # the middle entropy word of a group's world seeds


@dataclass(eq=False)
class _Seat:
    """One seat's episode and where it sits."""

    episode: Episode
    world: SharedWorld
    index: int
    seed: int  # its sampling seed (rounds add to it)


def shared_play(seats: int, units: int | None = None) -> Callable[..., list[Episode]] | None:
    """`run_episodes`' stand-in for `train_dapo(play=...)`: groups played `seats` to a shop
    (`training.rollout.shared_seats`); None for one seat (each episode its own shop)."""
    if isinstance(seats, bool) or not isinstance(seats, int) or seats < 1:
        raise ValueError(f"seats must be an integer >= 1, got {seats!r}")
    return functools.partial(play_shared, seats=seats, units=units) if seats > 1 else None


def play_shared(
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
    seats: int = 2,
    units: int | None = None,
) -> list[Episode]:
    """Play `samples_per_task` seats of every task, `seats` to a shared world, in lockstep;
    return the episodes grouped by task (`group` = the task's index, `sample` = its seat in
    the group), as `run_episodes` returns them. `group_seeds` seed each group's worlds and its
    seats' sampling (else `seed`)."""
    if group_seeds is not None and len(group_seeds) != len(tasks):
        raise ValueError(f"{len(group_seeds)} group seeds for {len(tasks)} tasks")
    if group_seeds is None:
        group_seeds = [seed * 10_007 + group for group in range(len(tasks))]
    everyone = [
        seat
        for group, task in enumerate(tasks)
        for seat in _seat_group(task, group, group_seeds[group], samples_per_task, seats, units,
                                chat, catalog, env_config, tools_for)
    ]  # fmt: skip
    episodes = [s.episode for s in everyone]
    active = [s for s in everyone if not _over_budget(s, agent)]
    round_index = 0
    while active:
        _report(progress, episodes, round_index)
        budgets = [
            min(agent.max_new_tokens, agent.max_episode_tokens - len(s.episode.sequence))
            for s in active
        ]
        sampling = SamplingParams(
            max_new_tokens=max(budgets),
            temperature=agent.temperature if temperature is None else temperature,
            top_p=agent.top_p,
            stop_token_ids=chat.stop_token_ids,
            seed=seed * 10_007 + round_index,
            row_seeds=tuple(s.seed * 10_007 + round_index for s in active),
        )
        completions = engine.generate([s.episode.sequence.token_ids for s in active], sampling)
        active = _play_round(active, completions, budgets, chat, agent)
        round_index += 1
    _report(progress, episodes, round_index)
    return episodes


def _seat_group(
    task: Task,
    group: int,
    group_seed: int,
    samples: int,
    seats: int,
    units: int | None,
    chat: ChatFormat,
    catalog: Catalog,
    env_config: EnvConfig,
    tools_for: Callable[[Task], list[dict[str, Any]] | None] | None,
) -> list[_Seat]:
    """The `samples` seats of one group: worlds of `seats` copies of `task`, opened."""
    tools = tools_for(task) if tools_for is not None else None
    out = []
    for first in range(0, samples, seats):
        size = min(seats, samples - first)
        world_seed = _seed(group_seed, WORLD_STREAM, first)
        drawn, scarce = draw_shared_tasks([task], size, world_seed, units=units)
        world = SharedWorld(drawn, catalog, env_config, seed=world_seed, scarce=scarce)
        openings = world.reset(include_tools=False)
        for k in range(size):
            sequence = TokenSequence()
            sequence.add_prompt(chat.prompt_ids(openings[k], tools))
            episode = Episode(task, group, first + k, sequence)
            out.append(_Seat(episode, world, k, _seed(group_seed, first + k)))
    return out


def _play_round(
    active: list[_Seat],
    completions: list[Completion],
    budgets: list[int],
    chat: ChatFormat,
    agent: AgentConfig,
) -> list[_Seat]:
    """Every seat's turn first, then each world plays its seats' turns in its seeded order;
    the seats that play on."""
    turns: dict[int, dict[int, str]] = {}  # world -> seat -> its turn
    cut: dict[int, bool] = {}
    for seat, completion, budget in zip(active, completions, budgets, strict=True):
        version = completion.extra.get("policy_version")
        if version is not None:  # the oldest weights the episode sampled with
            seen = seat.episode.policy_version
            seat.episode.policy_version = version if seen is None else min(seen, version)
        ids, logprobs = completion.token_ids[:budget], completion.logprobs[:budget]
        over = len(completion.token_ids) > budget
        cut[id(seat)] = completion.finish_reason == "length" or over
        seat.episode.sequence.add_generated(ids, logprobs)
        text = chat.decode_turn(ids)
        seat.episode.turns.append(text)
        turns.setdefault(id(seat.world), {})[seat.index] = text
    by_place = {(id(s.world), s.index): s for s in active}
    still: set[int] = set()
    for key, world in {id(s.world): s.world for s in active}.items():
        for index, result in world.step(turns[key]).items():
            seat = by_place[(key, index)]
            if _after_turn(seat, result, cut[id(seat)], chat, agent):
                still.add(id(seat))
    return [s for s in active if id(s) in still]


def _seed(*words: int) -> int:
    return int(np.random.SeedSequence(list(words)).generate_state(1)[0])


def _after_turn(
    seat: _Seat, result: StepResult, cut: bool, chat: ChatFormat, agent: AgentConfig
) -> bool:
    """Book a played turn's outcome; True while the seat plays on."""
    episode = seat.episode
    if result.done:
        episode.verdict = result.info["verdict"]
        episode.finish = "turn_limit" if result.info.get("truncated") else "answer"
        episode.truncated = episode.truncated or cut
        return False
    if cut:
        long = len(episode.sequence) >= agent.max_episode_tokens
        episode.finish = "token_budget" if long else "turn_length"
        episode.truncated = True
        episode.verdict = seat.world.seats[seat.index].env.finish()
        return False
    episode.sequence.add_context(chat.observation_ids(result.observation))
    return not _over_budget(seat, agent)


def _over_budget(seat: _Seat, agent: AgentConfig) -> bool:
    """End a seat whose sequence has used the episode's token budget (judged on its view)."""
    if len(seat.episode.sequence) < agent.max_episode_tokens:
        return False
    seat.episode.finish = "token_budget"
    seat.episode.truncated = True
    seat.episode.verdict = seat.world.seats[seat.index].env.finish()
    return True


def _report(progress: ProgressFn | None, episodes: list[Episode], round_index: int) -> None:
    if progress:
        done = sum(1 for e in episodes if e.verdict is not None)
        turn = {"turn": round_index + 1} if done < len(episodes) else {}
        progress(ProgressEvent("rollout", done, len(episodes), unit="episodes", metrics=turn))
