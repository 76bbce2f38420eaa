"""Self-play rollouts (issue 47): DAPO groups filled from shared-world episodes, one policy
at K seats.

The `G` samples of a task's group are played as shared worlds of `K` seats each
(`ecomrlve.env.episode.shared.SharedWorld`; the last world has `G mod K` seats when K does not
divide G): every seat plays its own copy of the task (its own customer id) on one shop, where the
first item the task's reference buys is scarce (`units` left; by default the difficulty ladder's
`contention_at(task.difficulty).units`), so the seats compete for it. Sample `s` of the group is
seat `s mod K` of the group's world `s // K`. Every seat's turns come from the one policy; its
reward is its own verdict, judged on what that seat saw (another seat's purchase reaches it as a
world event, as in `SharedWorld`).

`rollout.run_episodes` plays them, seated by `SharedSeats`: all worlds of a call in lockstep,
each round every live seat's token sequence to the engine in one batch, then each world plays
its seats' turns in its seeded order. The token budgets cut a seat as they cut an episode
there; a cut seat is ended in its world (judged as truncated, on its own view).

    play = shared_play(seats=2)        # train_dapo(..., play=play): rollout.shared_seats = 2
    play(tasks, engine, chat, catalog, env_config=..., agent=...)  # run_episodes, seated 2 a world
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

from ecomrlve.config import AgentConfig
from ecomrlve.env import Verdict
from ecomrlve.env.episode.shared import SharedWorld, draw_shared_tasks
from ecomrlve.train.chat import ChatFormat, TokenSequence
from ecomrlve.train.rollout import Episode, Group, Turn, after_turn, run_episodes, sample_seed

WORLD_STREAM = 0x5E1F  # the middle entropy word of a group's world seeds


@dataclass(eq=False)
class _Seat:
    """One seat's episode and where it sits."""

    episode: Episode
    world: SharedWorld
    index: int
    seed: int  # its sampling seed (rounds add to it)

    def judge_cut(self) -> Verdict:
        """Its episode ended early: judged on its own view of the world."""
        return self.world.seats[self.index].env.finish()


def shared_play(seats: int, units: int | None = None) -> Callable[..., list[Episode]] | None:
    """`run_episodes`' stand-in for `train_dapo(play=...)`: groups played `seats` to a shop
    (`training.rollout.shared_seats`); None for one seat (each episode its own shop).

    Its episodes come back grouped by task (`group` = the task's index, `sample` = its seat in
    the group), as `run_episodes` returns them; `group_seeds` seed each group's worlds and its
    seats' sampling (else `seed`)."""
    if isinstance(seats, bool) or not isinstance(seats, int) or seats < 1:
        raise ValueError(f"seats must be an integer >= 1, got {seats!r}")
    seating = SharedSeats(seats, units)
    return functools.partial(run_episodes, seating=seating) if seats > 1 else None


@dataclass(frozen=True)
class SharedSeats:
    """`run_episodes`' seating for self-play: a group's samples sit `seats` to a shared world,
    whose first scarce item has `units` left (None: the difficulty ladder's)."""

    seats: int
    units: int | None = None

    def seat(self, group: Group) -> list[_Seat]:
        """The group's seats: worlds of `seats` copies of its task, opened."""
        task = group.task
        group_seed = group.call_seed * 10_007 + group.index if group.seed is None else group.seed
        out = []
        for first in range(0, group.samples, self.seats):
            size = min(self.seats, group.samples - first)
            world_seed = sample_seed(group_seed, WORLD_STREAM, first)
            drawn, scarce = draw_shared_tasks([task], size, world_seed, units=self.units)
            world = SharedWorld(
                drawn, group.catalog, group.env_config, seed=world_seed, scarce=scarce
            )
            openings = world.reset(include_tools=False)
            for k in range(size):
                sequence = TokenSequence()
                sequence.add_prompt(group.chat.prompt_ids(openings[k], group.tools))
                episode = Episode(task, group.index, first + k, sequence)
                out.append(_Seat(episode, world, k, sample_seed(group_seed, first + k)))
        return out

    def play_round(
        self, active: list[_Seat], turns: list[Turn], chat: ChatFormat, agent: AgentConfig
    ) -> list[_Seat]:
        """Each world plays its seats' turns in its seeded order; the seats that play on."""
        by_world: dict[int, dict[int, str]] = {}  # world -> seat -> its turn
        for seat, turn in zip(active, turns, strict=True):
            by_world.setdefault(id(seat.world), {})[seat.index] = turn.text
        cut = {id(seat): turn.cut for seat, turn in zip(active, turns, strict=True)}
        by_place = {(id(s.world), s.index): s for s in active}
        still: set[int] = set()
        for key, world in {id(s.world): s.world for s in active}.items():
            for index, result in world.step(by_world[key]).items():
                seat = by_place[(key, index)]
                if after_turn(seat, result, cut[id(seat)], chat, agent):
                    still.add(id(seat))
        return [s for s in active if id(s) in still]
