"""`Plan` and `Draft`: what a scenario draws before the catalog and what it builds (its own
module so that `generators/base.py` and `generators/reasoning.py` both import it and not each
other)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ecomrlve.generators import followups
from ecomrlve.tasks import Goal, ToolCall


@dataclass
class Plan:
    """Structural choices drawn before the catalog is touched. `steps` is the reference length,
    `addon_steps` the part of it an add-on request beside the main one takes (a purchase or a
    question about an unrelated order: `followups.ADDONS`); step bands count `core_steps`."""

    steps: int
    choices: dict[str, Any] = field(default_factory=dict)
    addon_steps: int = 0

    def __getitem__(self, key: str) -> Any:
        return self.choices[key]

    @property
    def core_steps(self) -> int:
        """The reference calls that serve the customer's main request."""
        return self.steps - self.addon_steps

    @classmethod
    def with_followups(
        cls, steps: int, more: list[str], core: frozenset[str] = frozenset(), **choices: Any
    ) -> Plan:
        """A plan of `steps` calls for the main request and the follow-up requests `more`
        (`generators/followups.py`): their calls are added, those of add-on requests (not in
        `core`) counted as `addon_steps`, and `more` is the choice "followups"."""
        return cls(
            steps + followups.cost(more),
            {"followups": more, **choices},
            addon_steps=followups.addon_cost(more, core),
        )


@dataclass
class Draft:
    """What a scenario builds; `generate` turns it into a `Task`."""

    prompt: str
    goal: Goal
    initial_state: dict[str, Any]
    reference: list[ToolCall]
    # the calls of `reference` that serve an add-on request, not the main one (the very objects)
    addon_calls: list[ToolCall] = field(default_factory=list)

    def core_calls(self) -> list[int]:
        """Indexes of the reference calls that serve the main request."""
        addon = {id(c) for c in self.addon_calls}
        return [i for i, c in enumerate(self.reference) if id(c) not in addon]
