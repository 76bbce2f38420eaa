"""The scenario registry: every scenario imported explicitly, registered once, looked up by name.

Adding a tenth scenario = one module with a `Scenario` subclass + one `register(...)` line here
(and its name in `ecomrlve.config.SCENARIOS`, which fixes its seed id).
"""

from __future__ import annotations

from ecomrlve.config import SCENARIOS
from ecomrlve.generators.base import Scenario
from ecomrlve.generators.bundle import Bundle
from ecomrlve.generators.cancel import Cancel
from ecomrlve.generators.cart import Cart
from ecomrlve.generators.journey import Journey
from ecomrlve.generators.order_status import OrderStatus
from ecomrlve.generators.policy import Policy
from ecomrlve.generators.product_discovery import ProductDiscovery
from ecomrlve.generators.returns import Return
from ecomrlve.generators.substitution import Substitution

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


register(ProductDiscovery())
register(Substitution())
register(Cart())
register(Return())
register(OrderStatus())
register(Policy())
register(Bundle())
register(Journey())
register(Cancel())


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
