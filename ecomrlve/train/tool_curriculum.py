"""Tool curriculum: each scenario's own tools first, the full set once success holds (AReaL).

With `training.rollout.tool_curriculum: true` every prompt first offers only its scenario's own
tools, the tools that scenario's reference solutions call (read from the store's tasks), so
prompts are shorter and the choice is smaller. After each RL step the step's success rate is
recorded; once the mean over the last `tool_curriculum_window` steps reaches
`tool_curriculum_threshold`, every prompt offers the full set (`agent.tools`, or every tool) from
the next step on, and the width never narrows again. SFT and held-out evaluation use the width
in force when they run. The width is recorded per RL step (`train_steps.tools_offered`) and per
held-out episode (`eval_episodes.tools_offered`): `scenario` or `all`.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import polars as pl

from ecomrlve.tasks import Task

log = logging.getLogger(__name__)

SCENARIO_WIDTH = "scenario"  # each scenario's own tools
FULL_WIDTH = "all"  # every offered tool (agent.tools, or all of them)

ToolSchema = dict[str, Any]


def scenario_tools(frame: pl.DataFrame, offered: list[str]) -> dict[str, list[str]]:
    """The tools each scenario's reference solutions call, in `offered`'s order (tools outside
    `offered` are left out: a task needing one cannot succeed at any width)."""
    used: dict[str, set[str]] = {}
    for scenario, reference in frame.select("scenario", "reference").iter_rows():
        used.setdefault(scenario, set()).update(call["name"] for call in json.loads(reference))
    return {scenario: [t for t in offered if t in names] for scenario, names in used.items()}


class ToolCurriculum:
    """Which tool schemas a task's prompt offers now, and when to widen to the full set.

    >>> curriculum = ToolCurriculum({"cart": ["search"]}, [search, view], threshold=0.5, window=2)
    >>> curriculum.schemas_for(task)  # a cart task: [search]; after widening: None (all)
    """

    def __init__(
        self,
        own_tools: dict[str, list[str]],
        full: list[ToolSchema],
        *,
        threshold: float,
        window: int,
    ) -> None:
        if not 0.0 <= threshold <= 1.0 or window < 1:
            raise ValueError(f"threshold in [0, 1] and window >= 1, got {threshold}, {window}")
        by_name = {schema["function"]["name"]: schema for schema in full}
        self.own = {s: [by_name[n] for n in names] for s, names in own_tools.items()}
        self.threshold = threshold
        self.window = window
        self.widened_after: int | None = None  # the RL step after which the full set holds
        self.successes: list[float] = []  # per RL step, at the width in force

    @property
    def width(self) -> str:
        return FULL_WIDTH if self.widened_after is not None else SCENARIO_WIDTH

    def schemas_for(self, task: Task) -> list[ToolSchema] | None:
        """The schemas `task`'s prompt offers now; None: the full set (the chat's own)."""
        if self.widened_after is not None:
            return None
        return self.own.get(task.scenario)

    def record(self, step: int, success_rate: float) -> bool:
        """Record an RL step's success rate; True when this widens the set from the next step."""
        self.successes.append(float(success_rate))
        recent = self.successes[-self.window :]
        if self.widened_after is not None or len(recent) < self.window:
            return False
        if sum(recent) / len(recent) < self.threshold:
            return False
        self.widened_after = step
        log.info(
            "tool curriculum: mean success %.2f over the last %d steps >= %.2f; every prompt "
            "offers the full tool set from step %d",
            sum(recent) / len(recent),
            self.window,
            self.threshold,
            step + 1,
        )
        return True

    def state_dict(self) -> dict[str, Any]:
        return {"widened_after": self.widened_after, "successes": list(self.successes)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.widened_after = state["widened_after"]
        self.successes = [float(s) for s in state["successes"]]
