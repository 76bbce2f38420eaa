"""What every scenario module provides, and the task coordinates that make tasks reproducible.

A scenario is a small class with
* a typed `Config` whose fields are the difficulty knobs it uses (fields named like the axes in
  `ecomrlve.tasks.DIFFICULTY_AXES` are stored as the task's axis columns);
* `config_for(d, axes)`: the config of difficulty `d`;
* `plan(config, rng)`: the cheap structural draws (how many searches, asks, look-ups…) that fix
  the reference length `plan.steps` before any catalog work, so step-band targeting rejects
  plans, not whole tasks;
* `build(config, plan, rng, ctx)`: the world (user, cart, orders), the prompt, the hidden
  declarative `Goal` (the success check, judged by the env's verifier) and the reference tool
  calls. `generate` = plan + build. `plan_task(config, rng, key)` is `plan` with the task's
  position in its (scenario, difficulty) cell set, so a knob's share of hard variants is spread
  over the cell's indexes rather than drawn per task (`generators/strata.py`).

Every task is a pure function of its `TaskKey` (seed, scenario, difficulty, index, attempt):
`rng_for(key)` seeds numpy from `SeedSequence([seed, scenario_id, index, difficulty, attempt])`,
where `scenario_id` is the scenario's own `seed_id` (set in its module, never reused).
"""

from __future__ import annotations

import datetime as dt
import re
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from ecomrlve.generators.context import dated, today_of
from ecomrlve.generators.difficulty import Clamp, Ramp, Share, check_difficulty
from ecomrlve.generators.draft import Draft, Plan
from ecomrlve.generators.draws import seed_sequence
from ecomrlve.generators.errors import GenerationError
from ecomrlve.generators.reasoning import add_late_demands, late_cost, late_demands, late_rng
from ecomrlve.generators.strata import cell_position, positioned
from ecomrlve.tasks import DIFFICULTY_AXES, Task, ToolCall

if TYPE_CHECKING:
    from ecomrlve.generators.context import GenContext


BUILD_TRIES = 12
TODAY_STREAM = 0x70DA7  # the last entropy word of a task's `today` stream


class ScenarioConfig(BaseModel):
    """Base of every scenario config: the difficulty plus the knobs the scenario uses."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    difficulty: int = Field(ge=0)
    hidden_detail_share: Share
    typo_rate: Share

    def axes(self) -> dict[str, float]:
        """The twelve axis columns: the knob values this config uses, 0 for the others."""
        fields = type(self).model_fields
        return {a: float(getattr(self, a)) if a in fields else 0.0 for a in DIFFICULTY_AXES}


# The registered scenarios by name, in seed-id order. `ecomrlve.generators.registry` fills it from
# the modules of `generators/scenarios/`; it lives here because `TaskKey` reads the seed ids.
REGISTRY: dict[str, Scenario] = {}

_TASK_ID = re.compile(r"^(?P<scenario>[a-z_]+)-s(?P<seed>\d+)-d(?P<d>\d+)-i(?P<i>\d+)-a(?P<a>\d+)$")


@dataclass(frozen=True)
class TaskKey:
    """The coordinates of one task; `task_id` spells them, `parse` reads them back."""

    scenario: str
    seed: int
    difficulty: int
    index: int
    attempt: int = 0

    def __post_init__(self) -> None:
        if self.scenario not in REGISTRY:
            raise ValueError(f"unknown scenario {self.scenario!r}; known: {', '.join(REGISTRY)}")
        if self.seed < 0 or self.index < 0 or self.attempt < 0:
            raise ValueError("seed, index and attempt must be >= 0")
        check_difficulty(self.difficulty)

    @property
    def scenario_id(self) -> int:
        """The scenario's `seed_id`: stable across releases, part of the seed entropy."""
        return REGISTRY[self.scenario].seed_id

    @property
    def task_id(self) -> str:
        return f"{self.scenario}-s{self.seed}-d{self.difficulty}-i{self.index}-a{self.attempt}"

    @classmethod
    def parse(cls, task_id: str) -> TaskKey:
        match = _TASK_ID.match(task_id.strip())
        if not match:
            raise ValueError(
                f"not a generated task id: {task_id!r} (expected SCENARIO-sSEED-dD-iINDEX-aATTEMPT)"
            )
        return cls(
            scenario=match["scenario"],
            seed=int(match["seed"]),
            difficulty=int(match["d"]),
            index=int(match["i"]),
            attempt=int(match["a"]),
        )

    def entropy(self) -> list[int]:
        """The words every stream of the task is seeded from."""
        return [self.seed, self.scenario_id, self.index, self.difficulty, self.attempt]

    def rng(self) -> np.random.Generator:
        """The task's own generator. Seed 42 task 1 never equals seed 43 task 0."""
        return np.random.default_rng(seed_sequence(self.entropy()))

    def today(self) -> dt.date:
        """The task's date, from a stream of its own (the task's other draws do not move it,
        and it moves none of them)."""
        entropy = [self.seed, self.scenario_id, self.index, self.difficulty, self.attempt]
        return today_of(seed_sequence([*entropy, TODAY_STREAM]))


class Scenario(ABC):
    """One task family. Subclasses set `name`, `seed_id` and `Config` and implement the three
    steps; the registry finds every subclass defined in a module of `generators/scenarios/`."""

    name: ClassVar[str]
    # the scenario's word in every task's seed entropy: fixed once released, never reused
    seed_id: ClassVar[int]
    Config: ClassVar[type[ScenarioConfig]]

    def config_for(self, difficulty: int, axes: dict[str, float]) -> ScenarioConfig:
        """The knobs of difficulty `difficulty`: each `Config` field named like an axis reads
        its value from `axes` (`int()` for int fields, kept in the field's `Clamp` if it
        declares one), each field that declares a `Ramp` is set to the ramp's value at
        `difficulty`, then `tuned` replaces what neither says."""
        values: dict[str, Any] = {}
        for name, field in self.Config.model_fields.items():
            if name in axes:
                values[name] = int(axes[name]) if field.annotation is int else axes[name]
            for rule in field.metadata:
                if isinstance(rule, Clamp):
                    values[name] = rule(values[name])
                elif isinstance(rule, Ramp):
                    values[name] = rule.rule(difficulty)
        return self.Config(difficulty=difficulty, **{**values, **self.tuned(difficulty, values)})

    def tuned(self, difficulty: int, values: dict[str, Any]) -> dict[str, Any]:
        """Replacements for knob `values` that no `Clamp` or `Ramp` expresses, e.g.
        `{"n_constraints": min(4, 2 + values["n_constraints"] // 4)}`."""
        return {}

    # whether the reference of every plan lists the customer's orders (`lists_orders`)
    lists_every_order: ClassVar[bool] = False

    @abstractmethod
    def plan(self, config: ScenarioConfig, rng: np.random.Generator) -> Plan:
        """Draw the structure of one task; `Plan.steps` must equal the reference length."""

    @abstractmethod
    def build(
        self, config: ScenarioConfig, plan: Plan, rng: np.random.Generator, ctx: GenContext
    ) -> Draft:
        """Build the world, prompt, goal and reference for `plan`."""

    def plan_task(self, config: ScenarioConfig, rng: np.random.Generator, key: TaskKey) -> Plan:
        """`plan` for the task at `key`: knob shares are decided by the index's position in its
        cell (`ecomrlve.generators.strata`), not by a coin per task."""
        with positioned(cell_position(key.seed, key.scenario_id, key.index)):
            plan = self.plan(config, rng)
        # the demands past d6 (`generators/reasoning.py`): questions beside the main request
        # (add-on steps: the core steps are the plan's)
        demands = late_demands(key.difficulty)
        if demands:
            plan.choices["late"] = demands
            cost = late_cost(demands, listed=self.lists_orders(plan))
            plan.steps += cost
            plan.addon_steps += cost
        return plan

    def lists_orders(self, plan: Plan) -> bool:
        """Whether the reference of `plan` lists the customer's orders (`list_orders`): the
        late demands read that listing rather than list them again. Scenarios where only some
        plans list them say which."""
        return self.lists_every_order

    def generate(
        self, config: ScenarioConfig, rng: np.random.Generator, ctx: GenContext, key: TaskKey
    ) -> Task:
        """Plan and build one task (no step-band rejection: see `generate.generate_task`)."""
        return self.finish(config, self.plan_task(config, rng, key), rng, ctx, key)

    def finish(
        self,
        config: ScenarioConfig,
        plan: Plan,
        rng: np.random.Generator,
        ctx: GenContext,
        key: TaskKey,
    ) -> Task:
        # Catalog draws (target items, look-alikes) may not fit; redraw them for the same plan,
        # so the step counts of kept tasks follow the plan distribution exactly.
        demands = plan.choices.get("late", ())
        # on a stream of their own: every other draw is the one it was without them
        late = late_rng(key.entropy()) if demands else None
        with dated(key.today()):
            for tries_left in range(BUILD_TRIES - 1, -1, -1):
                try:
                    draft = self.build(config, plan, rng, ctx)
                    if late is not None:
                        listed = self.lists_orders(plan)
                        add_late_demands(draft, demands, ctx, late, config.typo_rate, listed=listed)
                    break
                except GenerationError:
                    if not tries_left:
                        raise
        core_calls = draft.core_calls()
        if len(draft.reference) != plan.steps or len(core_calls) != plan.core_steps:
            raise GenerationError(
                f"{self.name}: reference has {len(draft.reference)} calls ({len(core_calls)} "
                f"core), plan said {plan.steps} ({plan.core_steps})"
            )
        draft.goal.product_names = _product_names(draft.reference, ctx)
        return Task(
            task_id=key.task_id,
            scenario=self.name,
            difficulty=config.difficulty,
            min_steps=len(draft.reference),
            seed=key.seed,
            index=key.index,
            prompt=draft.prompt,
            goal=draft.goal,
            initial_state=draft.initial_state,
            reference=draft.reference,
            axes=config.axes(),
            catalog_hash=ctx.catalog_hash,
            core_calls=core_calls,
        )


# the arguments of reference write calls that name products the final answer reports on
_PRODUCT_ARGUMENTS = ("item_id", "new_item_id", "item_ids")


def _product_names(reference: list[ToolCall], ctx: GenContext) -> dict[str, str]:
    """Catalog titles of the products the reference's writes act on (the reference answer
    names them: `ecomrlve.env.episode.reference`)."""
    names: dict[str, str] = {}
    for call in reference:
        if call.name in ("search", "get_product"):
            continue
        for key in _PRODUCT_ARGUMENTS:
            value = call.arguments.get(key)
            for item_id in value if isinstance(value, list) else [value]:
                row = ctx.catalog.row_of(item_id) if isinstance(item_id, str) else None
                if row is not None:
                    names[item_id] = ctx.titles[row]
    return names
