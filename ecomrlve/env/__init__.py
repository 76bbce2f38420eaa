"""The shop environment, in four layers (each imports only the ones below it):

* `shop/`: products, search, state and the tools with their milestone declarations;
* `world/`: one episode's record of calls and the world's events;
* `judge/`: progress, facts, claims, verifier and reward;
* `episode/`: the environment, parser, simulated user, reference solutions, replay, shared seats.

Public API (other packages import from here):
`Catalog`, `EcomEnv`, `StepResult`, `parse_turn`, `ParsedTurn`, `verify`, `Verdict`,
`reference_turns`, `tool_schemas`, `system_prompt`, `initial_messages`.
"""

from ecomrlve.env.episode.environment import (
    EcomEnv,
    StepResult,
    goal_ids,
    initial_messages,
    needed_ids,
    system_prompt,
)
from ecomrlve.env.episode.parser import FormatError, ParsedCall, ParsedTurn, format_call, parse_turn
from ecomrlve.env.episode.reference import final_answer, reference_turns
from ecomrlve.env.episode.replay import verify
from ecomrlve.env.episode.user import SimulatedUser
from ecomrlve.env.judge.reward import COMPONENTS, reward_components, total_reward
from ecomrlve.env.judge.verifier import Verdict
from ecomrlve.env.shop.products import Catalog, FilterError, normalise_filters
from ecomrlve.env.shop.state import StateError, WorldState, validate_initial_state
from ecomrlve.env.shop.tools import TOOL_NAMES, TOOL_SPECS, WRITE_TOOLS, ToolKind, tool_schemas

__all__ = [
    "COMPONENTS",
    "TOOL_NAMES",
    "TOOL_SPECS",
    "WRITE_TOOLS",
    "Catalog",
    "EcomEnv",
    "FilterError",
    "FormatError",
    "ParsedCall",
    "ParsedTurn",
    "SimulatedUser",
    "StateError",
    "StepResult",
    "ToolKind",
    "Verdict",
    "WorldState",
    "final_answer",
    "format_call",
    "goal_ids",
    "initial_messages",
    "needed_ids",
    "normalise_filters",
    "parse_turn",
    "reference_turns",
    "reward_components",
    "system_prompt",
    "tool_schemas",
    "total_reward",
    "validate_initial_state",
    "verify",
]
