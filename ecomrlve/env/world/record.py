"""The record of one episode: what the env wrote down while it played, and what the verifier,
the reward and the claims check judge (`EpisodeRecord`, one `CallRecord` per tool call).

Its own module so that the env (which writes it and asks `verifier.judge` for the verdict) and
the judges (which read it) both import it without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ecomrlve.env.shop.state import WorldState


@dataclass(slots=True)
class CallRecord:
    """One executed tool call and what the reward needs to know about it."""

    turn: int
    name: str
    arguments: dict[str, Any]
    ok: bool
    error: str | None
    repeat: bool
    unseen_ids: tuple[str, ...]
    irrelevant_ids: tuple[str, ...]  # ids off the goal used by a write (reads: always empty)
    # goal milestones this call reached first (`ecomrlve.env.judge.goal_progress`)
    milestones: int = 0
    transient: bool = False  # failed by a world event's transient fault (`env.world.events`)
    # refused by a change of the world the agent could not know of (the first add or checkout
    # of a product that just sold out, the first cancel of an order that just shipped)
    refused_by_event: bool = False

    @property
    def wasted(self) -> bool:
        if self.transient or self.refused_by_event:  # the tool's fault, not the agent's
            return False
        return (not self.ok) or self.repeat or bool(self.irrelevant_ids)

    @property
    def progress(self) -> bool:
        return self.milestones > 0


@dataclass
class EpisodeRecord:
    """Everything the verifier judges: start and end state, calls, answer, format problems."""

    initial: dict[str, Any]
    state: WorldState
    calls: list[CallRecord] = field(default_factory=list)
    format_errors: list[tuple[int, str]] = field(default_factory=list)
    malformed_turns: int = 0
    turns: int = 0
    final_answer: str | None = None
    recommended: list[str] | None = None
    truncated: bool = False
    # what the agent was shown besides the prompt: each successful call's result (by
    # reference) and the user's mid-episode messages; the answer's values are grounded in it
    shown: list[Any] = field(default_factory=list)
    # world events that fired (event index -> tool calls made before it), and the cart then
    events_fired: dict[int, int] = field(default_factory=dict)
    event_carts: dict[int, tuple[str, ...]] = field(default_factory=dict)
    # price changes that fired after the agent had seen the product (its old price): news
    events_seen: set[int] = field(default_factory=set)
    # the calls (indexes) at which the customer said yes to a confirmation question
    confirmations: list[int] = field(default_factory=list)
    # customer fact key -> the call (index) whose answer first stated it
    told: dict[str, int] = field(default_factory=dict)
