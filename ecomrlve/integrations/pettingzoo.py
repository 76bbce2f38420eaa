"""PettingZoo: several shoppers in one shop (`ecomrlve.env.episode.shared`) as a `ParallelEnv`.

    from ecomrlve.integrations.pettingzoo import parallel_env

    env = parallel_env(data="data", agents=4, seed=7)
    observations, infos = env.reset()             # seat_0..seat_3 -> opening messages (JSON text)
    while env.agents:
        actions = {agent: policy(observations[agent]) for agent in env.agents}
        observations, rewards, terminations, truncations, infos = env.step(actions)
    env.group_metrics()                            # served customers, revenue, contention

By PettingZoo's convention: `possible_agents` are the K seats; `agents` the ones still
playing; `step` takes one assistant turn per live seat (raw text, e.g. Qwen3 `<tool_call>`
blocks, or a final answer to the customer) and returns per-seat dicts. The shop plays the turns
of a step in a seeded order (the seat that buys first gets the last unit). A seat's observation
is the JSON text (ASCII) of the messages its turn produced (tool results, the customer's
words); at reset, its system prompt and its customer's request. Its reward is 0 until its
episode ends, then the verifier's reward; `terminations` says it answered its customer,
`truncations` that it hit the turn limit; the final info carries the `verdict`.

Spaces are `gymnasium.spaces.Text` over printable ASCII: observations always lie in theirs;
any text is accepted as an action (the space is what `sample()` draws from).

Each reset draws K tasks from the store's `tasks` view (`where`: an SQL filter) so that they
contend for one scarce item (`contention`: the probability a seat wants it too; None: the
difficulty ladder's, `ecomrlve.env.episode.shared.contention_at`;
`ecomrlve.env.episode.shared.draw_shared_tasks`).
"""

from __future__ import annotations

import json
import os
import string
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from gymnasium.spaces import Text
from pettingzoo import ParallelEnv

from ecomrlve.config import EnvConfig
from ecomrlve.env.episode.shared import DemandRule, SharedWorld, draw_shared_tasks
from ecomrlve.env.shop.products import Catalog
from ecomrlve.tasks import Task, read_tasks

MAX_OBSERVATION_CHARS = 1_000_000
MAX_ACTION_CHARS = 32_768
CHARSET = string.printable


class EcomParallelEnv(ParallelEnv):
    """K seats on one shop; see the module docstring."""

    metadata: ClassVar[dict[str, Any]] = {"name": "ecomrlve_shared_v0", "render_modes": []}

    def __init__(
        self,
        pool: list[Task],
        catalog: Catalog,
        agents: int = 2,
        seed: int = 0,
        *,
        contention: float | None = 1.0,
        demand: DemandRule | None = None,
        env_config: EnvConfig | None = None,
    ):
        if isinstance(agents, bool) or not isinstance(agents, int) or agents < 1:
            raise ValueError(f"agents must be an integer >= 1, got {agents!r}")
        if not pool:
            raise ValueError("no tasks to draw from")
        self.pool = pool
        self.catalog = catalog
        self.contention = contention
        self.demand = demand
        self.env_config = env_config
        self.seed = seed
        self.possible_agents = [f"seat_{i}" for i in range(agents)]
        self.agents: list[str] = []
        self.observation_spaces = {
            a: Text(MAX_OBSERVATION_CHARS, min_length=0, charset=CHARSET)
            for a in self.possible_agents
        }
        self.action_spaces = {
            a: Text(MAX_ACTION_CHARS, min_length=0, charset=CHARSET) for a in self.possible_agents
        }
        self.world: SharedWorld | None = None
        self._episode = 0

    def observation_space(self, agent: str) -> Text:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> Text:
        return self.action_spaces[agent]

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, str], dict[str, dict[str, Any]]]:
        """Draw K contending tasks and open a fresh shop. `seed` restarts the sequence of
        episodes (episode e of seed S is the same world whenever it is played)."""
        if seed is not None:
            self.seed = seed
            self._episode = 0
        entropy = np.random.SeedSequence([self.seed, self._episode]).generate_state(1)
        world_seed = int(entropy[0])
        self._episode += 1
        tasks, scarce = draw_shared_tasks(
            self.pool, len(self.possible_agents), world_seed, contention=self.contention
        )
        self.world = SharedWorld(
            tasks, self.catalog, self.env_config, seed=world_seed, scarce=scarce,
            demand=self.demand,
        )  # fmt: skip
        openings = self.world.reset()
        self.agents = list(self.possible_agents)
        observations = {a: _text(openings[i]) for i, a in enumerate(self.possible_agents)}
        infos = {
            a: {"task_id": tasks[i].task_id, "scenario": tasks[i].scenario, "scarce": scarce}
            for i, a in enumerate(self.possible_agents)
        }
        return observations, infos

    def step(self, actions: dict[str, str]) -> tuple[dict, dict, dict, dict, dict]:
        """One turn per live seat, played in the shop's seeded order."""
        if self.world is None:
            raise RuntimeError("call reset() before step()")
        index = {a: i for i, a in enumerate(self.possible_agents)}
        unknown = [a for a in actions if a not in index]
        if unknown:
            raise ValueError(f"unknown agent(s) {unknown}; agents are {self.possible_agents}")
        acting = list(self.agents)
        results = self.world.step({index[a]: actions[a] for a in acting if a in actions})
        observations, rewards, terminations, truncations, infos = {}, {}, {}, {}, {}
        for agent in acting:
            result = results.get(index[agent])
            done = result is not None and result.done
            truncated = done and bool(result.info.get("truncated"))
            observations[agent] = _text(result.observation) if result is not None else ""
            rewards[agent] = float(result.reward) if result is not None else 0.0
            terminations[agent] = done and not truncated
            truncations[agent] = truncated
            info = dict(result.info) if result is not None else {}
            if "verdict" in info:
                info["verdict"] = info["verdict"].to_json()
            infos[agent] = info
        self.agents = [a for a in acting if not (terminations[a] or truncations[a])]
        return observations, rewards, terminations, truncations, infos

    def group_metrics(self) -> dict[str, Any]:
        """The shop's view of the episode (`SharedWorld.group_metrics`)."""
        if self.world is None:
            raise RuntimeError("call reset() first")
        return self.world.group_metrics()

    def render(self) -> None:
        return None

    def close(self) -> None:
        self.world = None


def _text(messages: list[dict[str, Any]]) -> str:
    """Messages as JSON text in printable ASCII (the observation space's charset)."""
    return json.dumps(messages, ensure_ascii=True) if messages else ""


def parallel_env(
    data: str | os.PathLike = "data",
    agents: int = 2,
    seed: int = 0,
    *,
    where: str | None = None,
    contention: float | None = 1.0,
    demand: DemandRule | None = None,
    env_config: EnvConfig | None = None,
) -> EcomParallelEnv:
    """A shared shop of `agents` seats over the data folder `data` (its catalog and tasks)."""
    pool = read_tasks(Path(data), where)
    return EcomParallelEnv(
        pool, Catalog.load(data), agents, seed, contention=contention, demand=demand,
        env_config=env_config,
    )  # fmt: skip
