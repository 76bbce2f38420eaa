"""The task record and its hidden goal: the interface between generators, env and trainers.

A generator emits `Task`s; the store writes them as Parquet rows (JSON columns for `goal`,
`initial_state`, `reference`); the env rebuilds the world from `initial_state` and the verifier
judges the end state against `goal`. The goal is declarative, so "any agent path producing an
equivalent end state passes" and acceptable alternatives are explicit sets computed by the
generator over the whole catalog, never guessed.

Goal semantics (checked by `ecomrlve.env.judge.verifier`):
* Parts of the mutable state that the goal does not mention must end unchanged: no new order
  unless `purchase` is set, no cancellation outside `cancel`, no return outside `returns`, etc.
* `purchase`: exactly one new order whose lines match the slots one-to-one (item in the slot's
  acceptable set, exact quantity), no other lines, total within `budget` when given.
* `recommend`: the final `recommend` call names between min_items and max_items ids, all in
  `acceptable`.
* `cancel` / `returns` / `exchanges`: exactly these effects happen.
* `answer_facts`: typed facts (`AnswerFact`: kind, canonical value, the order it is about) that
  the final answer must state without contradicting them; read by kind from free text
  (`ecomrlve.env.judge.facts`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Hashable
from typing import Any, Literal

import duckdb
import orjson
import polars as pl
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from ecomrlve import store
from ecomrlve.config import SCENARIO_NAME
from ecomrlve.read_sql import check_read_query

# Axis columns every task row carries (interpretation is per scenario; unused axes are 0).
DIFFICULTY_AXES: tuple[str, ...] = (
    "n_constraints",
    "n_items",
    "n_orders",
    "n_distractors",
    "hidden_detail_share",
    "typo_rate",
    "intent_switch_prob",
    "out_of_stock_rate",
    "policy_branches",
    "search_top_k",
    "n_intents",
    "budget_slack",
)

# The stored task row, column -> Parquet type: the one schema generators write, publishing
# validates and shards select from. `attempt` is the plan attempt the task id spells.
TASK_SCHEMA: dict[str, pl.DataType] = {
    "task_id": pl.String,
    "scenario": pl.String,
    "difficulty": pl.Int64,
    "min_steps": pl.Int64,
    "core_steps": pl.Int64,
    "seed": pl.Int64,
    "index": pl.Int64,
    "prompt": pl.String,
    "goal": pl.String,
    "initial_state": pl.String,
    "reference": pl.String,
    **{axis: pl.Float64 for axis in DIFFICULTY_AXES},
    "catalog_hash": pl.String,
    "attempt": pl.Int64,
    "events": pl.String,
    "core_calls": pl.String,
}
# Columns added after stores were first written, with the value an older row reads as (in an
# older row every reference call served the main request: `core_steps` reads as `min_steps`,
# `core_calls` as JSON null, all of them).
COLUMN_DEFAULTS: dict[str, pl.Expr] = {
    "events": pl.lit("[]", dtype=pl.String),
    "core_steps": pl.col("min_steps").cast(pl.Int64),
    "core_calls": pl.lit("null", dtype=pl.String),
}
# The task table's contract: every task row has these columns
CONTRACT_COLUMNS: tuple[str, ...] = tuple(
    c
    for c in TASK_SCHEMA
    if c not in DIFFICULTY_AXES and c != "attempt" and c not in COLUMN_DEFAULTS
)
# a trainer shard's task columns, in order
SHARD_COLUMNS: tuple[str, ...] = tuple(c for c in TASK_SCHEMA if c != "attempt")


# Step bands of a task's reference length (`min_steps`), by which the curriculum manifest and
# the evaluation tables count tasks: label -> inclusive (lo, hi); hi None = open.
STEP_BANDS: tuple[tuple[str, int, int | None], ...] = (
    ("0-2", 0, 2),
    ("3-5", 3, 5),
    ("6-8", 6, 8),
    ("9+", 9, None),
)


def step_band(min_steps: int) -> str:
    """The `STEP_BANDS` label of `min_steps` (`step_band(7) == "6-8"`)."""
    for label, lo, hi in STEP_BANDS:
        if min_steps >= lo and (hi is None or min_steps <= hi):
            return label
    raise ValueError(f"min_steps must be >= 0, got {min_steps}")


# Keys of `Goal.user_facts` and the words in an `ask_user` question that refer to each (matched
# at word starts, case-insensitive; synonyms a shopper or an agent would use). The simulated
# user answers a question with every fact whose keywords appear in it; the colour slot also
# covers the variant words of categories without a colour (roast, flavour, scent, skin type).
USER_FACT_KEYWORDS: dict[str, tuple[str, ...]] = {
    "category": ("kind", "type", "category", "looking for", "what product", "what are you after"),
    "brand": ("brand", "make", "maker", "label", "manufacturer", "company"),
    "color": (
        "color",
        "colour",
        "shade",
        "tone",
        "hue",
        "roast",
        "flavour",
        "flavor",
        "scent",
        "skin",
    ),
    "size": (
        "size",
        "fit",
        "storage",
        "capacity",
        "volume",
        "thickness",
        "dimension",
        "measurement",
        "how big",
        "how large",
        "weight",
    ),
    "budget": ("budget", "price", "spend", "afford", "cost", "how much", "money"),
    "min_rating": ("rating", "rated", "stars", "reviews", "review score"),
    "max_ship_days": (
        "ship",
        "deliver",
        "arrive",
        "arrival",
        "soon",
        "days",
        "how fast",
        "how quickly",
        "need it by",
    ),
    "quantity": ("how many", "quantity", "units", "number of", "pieces"),
    "order": ("which order", "order", "purchase", "bought"),
    "item": ("which item", "which product", "item"),
    "reason": ("why", "reason", "wrong", "problem", "issue", "what happened"),
    "preference": ("prefer", "preference", "rather", "alternative", "brand", "make", "label"),
}


class Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=False)


class ToolCall(Model):
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class Slot(Model):
    """One line of an expected order: any id of `acceptable`, with exactly `quantity`."""

    acceptable: list[str]
    quantity: int = Field(1, ge=1)


class PurchaseSpec(Model):
    slots: list[Slot]
    budget: float | None = None


class RecommendSpec(Model):
    acceptable: list[str]
    min_items: int = Field(1, ge=1)
    max_items: int = Field(3, ge=1)


class ReturnSpec(Model):
    order_id: str
    item_id: str


class ExchangeSpec(Model):
    order_id: str
    item_id: str
    acceptable_new: list[str]


FactKind = Literal[
    "date", "money", "percent", "duration", "status", "payment", "address", "verdict", "term",
    "text",
]  # fmt: skip


class AnswerFact(Model):
    """One fact the final answer must state, checked by kind (see `ecomrlve.env.judge.facts`).

    `value` is canonical: an ISO day, dollars ("4.99"), a percent ("10"), days ("30" or
    "5-7"), an order status, "brand-last4", an address, "topic:yes|no" (topic: return,
    exchange, cancel), a policy term name, or for `text` the first accepted spelling.
    """

    kind: FactKind
    value: str
    subject: str = Field("", description="the order the fact is about ('' = the whole request)")
    cues: list[str] = Field(default_factory=list, description="words that name the subject")
    allowed: list[str] = Field(
        default_factory=list, description="other values of this kind the answer may state"
    )
    alternatives: list[str] = Field(default_factory=list, description="`text`: any of these")
    say: str = Field("", description="the sentence the reference answer states it with")
    required: bool = Field(
        True,
        description="what the customer asked for (must be stated); False: context the answer "
        "may leave out but must not contradict (days left, the window of a yes/no question)",
    )
    role: str = Field(
        "",
        description="the role the value has in the answer ('' = any): a duration 'window' or "
        "'left' (days left), a date 'arrival', an amount 'shipping'; a value the answer states "
        "in another role is no statement of this fact (rows written before roles hold '')",
    )
    allowed_roles: list[str] = Field(
        default_factory=list,
        description="the role of each `allowed` value, in the same order ('' or missing = any "
        "role the kind allows context in): the order value 'order', the threshold 'threshold'",
    )


class Goal(Model):
    """What success means for one task. Hidden from the agent."""

    # Facts the simulated user knows and reveals when asked (key -> value as the user says it).
    user_facts: dict[str, str] = Field(default_factory=dict)
    purchase: PurchaseSpec | None = None
    recommend: RecommendSpec | None = None
    cancel: list[str] = Field(default_factory=list)
    returns: list[ReturnSpec] = Field(default_factory=list)
    exchanges: list[ExchangeSpec] = Field(default_factory=list)
    answer_facts: list[AnswerFact] = Field(default_factory=list)
    # titles of the products the reference acts on (id -> catalog title), so its final answer
    # names them as a customer would; rows written before this field name products by id
    product_names: dict[str, str] = Field(default_factory=dict)
    # search_policy results that count as progress (the policy rows the request needs)
    relevant_policies: list[str] = Field(default_factory=list)
    # ids whose use by the agent counts as progress (targets, orders in question, their items)
    relevant_ids: list[str] = Field(default_factory=list)
    # simulated-user behaviour for this task
    typo_rate: float = 0.0
    intent_switch: str | None = Field(None, description="second intent revealed mid-conversation")
    # lookup structures derived from the goal (acceptable sets as frozensets…), built once per
    # Goal object by the env and shared by all its episodes (a group of rollouts, replays)
    _derived: dict[str, Any] = PrivateAttr(default_factory=dict)

    def derived(self, name: Hashable, build: Callable[[], Any]) -> Any:
        """`build()` once per Goal object; later calls return the same value. Assigning a
        field or copying the goal (`model_copy`, `copy`) starts afresh; a field mutated in
        place (`goal.answer_facts.append(...)`) is not noticed."""
        # the private dict read directly: `self._derived` goes through pydantic's
        # `__getattr__` (2.8 us, several times per step) where this costs 0.1 us
        store = self.__pydantic_private__["_derived"]
        value = store.get(name)
        if value is None:
            value = store[name] = build()
        return value

    def __setattr__(self, name: str, value: Any) -> None:
        super().__setattr__(name, value)
        if name in type(self).model_fields:
            self._forget_derived()

    def __copy__(self) -> Goal:
        copied = super().__copy__()
        copied._forget_derived()
        return copied

    def __deepcopy__(self, memo: dict[int, Any] | None = None) -> Goal:
        copied = super().__deepcopy__(memo)
        copied._forget_derived()
        return copied

    def _forget_derived(self) -> None:
        """Drop values derived from the fields (a copy may be updated: `model_copy(update=)`)."""
        private = self.__pydantic_private__
        if private is not None:
            private["_derived"] = {}

    def slot_sets(self) -> list[frozenset[str]]:
        """Each purchase slot's acceptable ids as a set (built once per Goal object)."""
        slots = self.purchase.slots if self.purchase else []
        return self.derived("slot_sets", lambda: [frozenset(s.acceptable) for s in slots])


EventKind = Literal[
    "price_change",
    "out_of_stock",
    "order_shipped",
    "tool_failure",
    "confirm_writes",
    "clarify",
    "change_of_mind",
]
TRANSIENT_ERRORS: tuple[str, ...] = ("timeout", "service_unavailable", "rate_limited")


class WorldEvent(Model):
    """One change of the shop during an episode (issue 29): seeded by the generator, applied by
    the env (`ecomrlve.env.world.events`) once `after_calls` tool calls have run, before the next.

    * `price_change`: `item_id` costs `price` from then on (it cost `old_price`);
    * `out_of_stock`: `item_id` cannot be bought any more;
    * `order_shipped`: `order_id` moves from processing (or pending) to shipped;
    * `tool_failure`: the first call of `tool` from then on fails with `error` (a transient
      fault: a timeout, the service unavailable, a rate limit); the same call again works.
    * `confirm_writes`: a shop rule in force from the first call (issue 44): an order placed,
      cancelled, returned or exchanged needs the customer's explicit yes (`ask_user`) first;
      the system prompt states it.
    * `clarify` (a customer who talks back, issue 44): two of the customer's orders match the
      request and only the customer can say which is meant (`order_id`); the customer fact
      `fact` must be told (`ask_user`) before the agent writes on either order, or, without
      such a write, before the final message. Nothing in the shop changes.
    * `change_of_mind`: asked to confirm the purchase, the customer answers `reply` (they now
      want `quantity` units of `item_id`; the goal records that final wish) instead of a plain
      yes; nothing in the shop changes.

    `substitute` (out of stock) is the product the reference buys instead; `say` the sentence
    the reference's final message tells the customer the change with.

    An event tied to an action (issue 44) fires on the agent's calls, not on their count: with
    `before` set, just before the first call of that tool that names the event's item or order
    (a call without that argument, such as `checkout` or `list_orders`, names every one); with
    `after` set, just after the first successful such call. One more harmless read never moves
    it. `after_calls` is then the reference call it fires at (for readers), and only events
    with neither (rows written before issue 44) fire by the count.
    """

    kind: EventKind
    after_calls: int = Field(ge=0)
    item_id: str = ""
    order_id: str = ""
    price: float | None = None
    old_price: float | None = None
    substitute: str = ""
    tool: str = ""
    error: str = ""
    say: str = ""
    before: str = ""
    after: str = ""
    # a price rise that takes the order over the customer's budget: buying at it needs the
    # customer's yes (an `ask_user` confirmation after the change)
    over_budget: bool = False
    # ... and the customer says no to it: the agent must not buy, and must tell them; with
    # `drop`, they say to leave that product out and buy the rest (`reply`: their words)
    declined: bool = False
    drop: bool = False
    fact: str = ""  # `clarify`: the customer fact that settles the request
    quantity: int = 0  # `change_of_mind`: the units the customer wants in the end
    reply: str = ""  # `change_of_mind` (or a `drop`): what the customer says when asked


class Task(Model):
    task_id: str
    scenario: str
    difficulty: int = Field(ge=0)
    min_steps: int = Field(ge=0)
    seed: int
    index: int = Field(ge=0)
    prompt: str
    goal: Goal
    initial_state: dict[str, Any]
    reference: list[ToolCall]
    axes: dict[str, float] = Field(default_factory=dict)
    catalog_hash: str = ""
    events: list[WorldEvent] = Field(default_factory=list)
    # indexes of the reference calls that serve the customer's main request (not an add-on
    # request beside it, nor the handling of a world event); None: every call (older rows)
    core_calls: list[int] | None = None

    def model_post_init(self, __context: Any) -> None:
        if not SCENARIO_NAME.fullmatch(self.scenario):
            raise ValueError(f"not a scenario name: {self.scenario!r}")
        if self.core_calls is None:
            self.core_calls = list(range(len(self.reference)))
        calls = self.core_calls
        if calls != sorted(set(calls)) or (
            calls and not 0 <= calls[0] <= calls[-1] < len(self.reference)
        ):
            raise ValueError(
                f"core_calls {calls} must be distinct increasing indexes of the "
                f"{len(self.reference)} reference calls"
            )

    @property
    def core_steps(self) -> int:
        """Reference calls that serve the main request: what difficulty and step bands count."""
        return len(self.core_calls or ())

    def to_row(self) -> dict[str, Any]:
        """The Parquet row: JSON columns for nested fields, one column per difficulty axis."""
        row = {
            "task_id": self.task_id,
            "scenario": self.scenario,
            "difficulty": self.difficulty,
            "min_steps": self.min_steps,
            "core_steps": self.core_steps,
            "seed": self.seed,
            "index": self.index,
            "prompt": self.prompt,
            "goal": self.goal.model_dump_json(),
            # orjson (compact, sorted keys): several times faster than json.dumps, and the
            # same bytes for the same task
            "initial_state": _sorted_json(self.initial_state),
            "reference": _sorted_json(
                [{"arguments": c.arguments, "name": c.name} for c in self.reference]
            ),
            "catalog_hash": self.catalog_hash,
            "events": _sorted_json([e.model_dump(exclude_defaults=True) for e in self.events]),
            "core_calls": _sorted_json(self.core_calls),
        }
        for axis in DIFFICULTY_AXES:
            row[axis] = float(self.axes.get(axis, 0.0))
        return row

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Task:
        return cls(
            task_id=row["task_id"],
            scenario=row["scenario"],
            difficulty=int(row["difficulty"]),
            min_steps=int(row["min_steps"]),
            seed=int(row["seed"]),
            index=int(row.get("index", 0)),
            prompt=row["prompt"],
            goal=Goal.model_validate_json(row["goal"]),
            initial_state=json.loads(row["initial_state"]),
            reference=[ToolCall.model_validate(c) for c in json.loads(row["reference"])],
            axes={a: float(row[a]) for a in DIFFICULTY_AXES if a in row},
            catalog_hash=row.get("catalog_hash", ""),
            events=[WorldEvent.model_validate(e) for e in json.loads(row.get("events") or "[]")],
            core_calls=json.loads(row.get("core_calls") or "null"),
        )


def with_column_defaults(frame: pl.DataFrame) -> pl.DataFrame:
    """`frame` with every `COLUMN_DEFAULTS` column present and filled (rows of older stores,
    or of files without it read together with newer ones, get the default)."""
    for column, default in COLUMN_DEFAULTS.items():
        if column in frame.columns:
            frame = frame.with_columns(pl.col(column).fill_null(default))
        else:
            frame = frame.with_columns(default.alias(column))
    return frame


def _sorted_json(value: Any) -> str:
    """Compact JSON with sorted keys (orjson; json for what orjson refuses, e.g. huge ints)."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    except TypeError:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def read_tasks(
    data: str | os.PathLike, where: str | None = None, params: list[Any] | None = None
) -> list[Task]:
    """Tasks from the store's `tasks` view in the data folder `data`, by task id; `where` is
    trusted SQL (with `?` placeholders bound to `params`), run as one SELECT
    (`check_read_query`) on a read-only connection, so it cannot write."""

    con = store.connect(data, read_only=True)
    try:
        views = {r[0] for r in con.execute("SELECT view_name FROM duckdb_views()").fetchall()}
        if "tasks" not in views:
            raise store.StoreError(f"no tasks in {data}: run `ecomrlve generate` first")
        sql = "SELECT * FROM tasks"
        if where:
            sql += f" WHERE ({where})"
        sql += " ORDER BY task_id"
        check_read_query(sql)
        try:
            table = con.sql(sql, params=params or None).to_arrow_table()
            frame = pl.from_arrow(table)
        except duckdb.Error as err:
            raise store.damaged_file_error(data, err) from None
    finally:
        con.close()
    tasks = []
    for row in frame.iter_rows(named=True):
        try:
            tasks.append(Task.from_row(row))
        except (ValueError, KeyError) as err:
            first = str(err).splitlines()[0]
            raise store.StoreError(f"task {row.get('task_id')!r} is malformed: {first}") from None
    return tasks
