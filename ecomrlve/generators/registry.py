"""The scenario registry: every scenario found in its module, registered once, looked up by name.

Adding a scenario is one module under `generators/scenarios/` that defines a `Scenario` subclass
with its `name`, its `seed_id` (the next free number: it is part of every task's seed, so it is
never changed or reused) and its `Config`. `discover` imports each module of that package and
registers the subclasses it defines; nothing else lists the scenarios. The layers below the
generators (`config`, `tasks`) check only the shape of a scenario name; the names themselves are
checked here (`check_scenarios`) and by the layers above.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from types import ModuleType

import ecomrlve.generators.scenarios as scenario_package
from ecomrlve.config import SCENARIO_NAME
from ecomrlve.generators.base import REGISTRY, Scenario


def scenario_types(package: ModuleType = scenario_package) -> list[type[Scenario]]:
    """The concrete `Scenario` subclasses defined in the modules of `package`, in seed-id order."""
    found = []
    for info in pkgutil.iter_modules(package.__path__, f"{package.__name__}."):
        module = importlib.import_module(info.name)
        found += [
            value
            for value in vars(module).values()
            if inspect.isclass(value)
            and issubclass(value, Scenario)
            and value.__module__ == module.__name__
            and not inspect.isabstract(value)
        ]
    return sorted(found, key=lambda t: t.seed_id)


def register(scenario: Scenario, registry: dict[str, Scenario] = REGISTRY) -> Scenario:
    """Add `scenario` under its name, keeping `registry` in seed-id order; a name or a seed id
    that is taken is an error."""
    name, seed_id = getattr(scenario, "name", None), getattr(scenario, "seed_id", None)
    if not isinstance(name, str) or not SCENARIO_NAME.fullmatch(name):
        raise ValueError(f"{type(scenario).__name__}: name must be lower-case letters and _")
    if name in registry:
        raise ValueError(f"scenario {name!r} is already registered")
    if isinstance(seed_id, bool) or not isinstance(seed_id, int) or seed_id < 0:
        raise ValueError(f"scenario {name!r}: seed_id must be an int >= 0, got {seed_id!r}")
    taken = {s.seed_id: s.name for s in registry.values()}
    if seed_id in taken:
        raise ValueError(f"scenario {name!r}: seed_id {seed_id} is taken by {taken[seed_id]!r}")
    ordered = sorted([*registry.values(), scenario], key=lambda s: s.seed_id)
    registry.clear()
    registry.update((s.name, s) for s in ordered)
    return scenario


def discover(registry: dict[str, Scenario] = REGISTRY) -> dict[str, Scenario]:
    """Fill `registry` (emptied first) with one instance of every scenario of the package."""
    registry.clear()
    for scenario_type in scenario_types():
        register(scenario_type(), registry)
    return registry


discover()


@contextmanager
def registered(*scenarios: Scenario) -> Iterator[None]:
    """`scenarios` registered for the block only (a test's own scenario); the registry is as it
    was afterwards, whatever the block raised."""
    before = dict(REGISTRY)
    try:
        for scenario in scenarios:
            register(scenario)
        yield
    finally:
        REGISTRY.clear()
        REGISTRY.update(before)


def scenario_names() -> tuple[str, ...]:
    """The registered scenario names, in seed-id order."""
    return tuple(REGISTRY)


def get_scenario(name: str) -> Scenario:
    """The registered scenario called `name`, or ValueError listing the known ones."""
    try:
        return REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown scenario {name!r}; known: {', '.join(REGISTRY)}") from None


def check_scenarios(names: Iterable[str]) -> None:
    """ValueError naming the `names` that are no registered scenario."""
    unknown = [s for s in names if s not in REGISTRY]
    if unknown:
        raise ValueError(f"unknown scenario(s) {unknown}; known: {list(REGISTRY)}")


def parse_scenarios(text: str | None) -> list[str]:
    """`"cart,policy"` -> ["cart", "policy"] (None or "" -> all, in seed-id order)."""
    if text is None or not text.strip():
        return list(REGISTRY)
    names = [s.strip() for s in text.split(",") if s.strip()]
    for name in names:
        get_scenario(name)
    if len(set(names)) != len(names):
        raise ValueError(f"a scenario is listed twice in {text!r}")
    return names
