"""The scenario registry: every scenario imported explicitly, registered once, looked up by name.

Adding a tenth scenario = one module under `generators/scenarios/` with a `Scenario` subclass +
one entry in `SCENARIO_TYPES` here. A scenario's seed id is its position in `SCENARIO_TYPES`;
`ecomrlve.config.SCENARIOS` (the contract's list of names, which layers below the generators
read) must name them in the same order, which is checked on import.
"""

from __future__ import annotations

from ecomrlve.config import SCENARIOS
from ecomrlve.generators.base import Scenario
from ecomrlve.generators.scenarios.bundle import Bundle
from ecomrlve.generators.scenarios.cancel import Cancel
from ecomrlve.generators.scenarios.cart import Cart
from ecomrlve.generators.scenarios.journey import Journey
from ecomrlve.generators.scenarios.order_status import OrderStatus
from ecomrlve.generators.scenarios.policy import Policy
from ecomrlve.generators.scenarios.product_discovery import ProductDiscovery
from ecomrlve.generators.scenarios.returns import Return
from ecomrlve.generators.scenarios.substitution import Substitution

# In seed-id order: never reorder (a task id's seed stream depends on the position).
SCENARIO_TYPES: tuple[type[Scenario], ...] = (
    ProductDiscovery,
    Substitution,
    Cart,
    Return,
    OrderStatus,
    Policy,
    Bundle,
    Journey,
    Cancel,
)

REGISTRY: dict[str, Scenario] = {}


def register(scenario: Scenario, registry: dict[str, Scenario] = REGISTRY) -> Scenario:
    """Add `scenario` under its name; a duplicate or an unlisted name is an error."""
    name = scenario.name
    if name in registry:
        raise ValueError(f"scenario {name!r} is already registered")
    if name not in SCENARIOS:
        raise ValueError(
            f"scenario {name!r} is not in ecomrlve.config.SCENARIOS (its position is its seed id)"
        )
    registry[name] = scenario
    return scenario


for _type in SCENARIO_TYPES:
    register(_type())
if tuple(REGISTRY) != SCENARIOS:
    raise RuntimeError(
        f"internal: SCENARIO_TYPES {list(REGISTRY)} and config.SCENARIOS {list(SCENARIOS)} differ"
    )


def get_scenario(name: str) -> Scenario:
    """The registered scenario called `name`, or ValueError listing the known ones."""
    try:
        return REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown scenario {name!r}; known: {', '.join(REGISTRY)}") from None


def parse_scenarios(text: str | None) -> list[str]:
    """`"cart,policy"` -> ["cart", "policy"] (None or "" -> all, in SCENARIOS order)."""
    if text is None or not text.strip():
        return [s for s in SCENARIOS if s in REGISTRY]
    names = [s.strip() for s in text.split(",") if s.strip()]
    for name in names:
        get_scenario(name)
    if len(set(names)) != len(names):
        raise ValueError(f"a scenario is listed twice in {text!r}")
    return names
