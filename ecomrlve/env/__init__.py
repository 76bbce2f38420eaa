"""The shop environment: tools, simulated user, parser, verifier and reward.

Public API (other packages import from here):
`Catalog`, `EcomEnv`, `StepResult`, `parse_turn`, `ParsedTurn`, `verify`, `Verdict`,
`reference_turns`, `tool_schemas`, `system_prompt`, `initial_messages`.
"""

from ecomrlve.env.catalog import Catalog, FilterError, normalise_filters
from ecomrlve.env.environment import (
    EcomEnv,
    StepResult,
    initial_messages,
    needed_ids,
    system_prompt,
)
from ecomrlve.env.parser import FormatError, ParsedCall, ParsedTurn, format_call, parse_turn
from ecomrlve.env.reference import final_answer, reference_turns
from ecomrlve.env.replay import verify
from ecomrlve.env.reward import COMPONENTS, reward_components, total_reward
from ecomrlve.env.state import StateError, WorldState, validate_initial_state
from ecomrlve.env.tools import TOOL_NAMES, TOOL_SPECS, WRITE_TOOLS, ToolKind, tool_schemas
from ecomrlve.env.user import SimulatedUser
from ecomrlve.env.verifier import Verdict, judge

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
    "initial_messages",
    "judge",
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
