"""One integer difficulty `d` mapped to the twelve named axes every task row carries.

Each scenario reads the axes it uses into its typed config (`Scenario.config_for`) and stores
the values it actually used; axes a scenario does not use are stored as 0, so a curriculum is a
SQL `WHERE` over real knob values.

| axis                | d=0 | d=5  | d=10 | formula                 | harder because            |
|---------------------|-----|------|------|-------------------------|---------------------------|
| n_constraints       | 2   | 4    | 7    | 2 + d//2                | more filters to satisfy   |
| n_items             | 1   | 2    | 4    | 1 + d//3                | more lines / targets      |
| n_orders            | 0   | 3    | 7    | 3d//4                   | more orders to tell apart |
| n_distractors       | 0   | 2    | 5    | d//2                    | look-alike orders / items |
| hidden_detail_share | 0   | 0.3  | 0.6  | 0.06 d                  | details only via ask_user |
| typo_rate           | 0   | 0.03 | 0.08 | 0.01 max(0, d-2)        | misspelt prompt words     |
| intent_switch_prob  | 0   | 0.1  | 0.6  | 0.1 max(0, d-4)         | intent revealed mid-way   |
| out_of_stock_rate   | 0   | 0.25 | 0.5  | 0.05 d                  | first choices unavailable |
| policy_branches     | 1   | 2    | 4    | 1 + d//3                | rule dimensions involved  |
| search_top_k        | 10  | 8    | 5    | 10 - d//2               | fewer results per search  |
| n_intents           | 1   | 3    | 3    | 1 + (d>=2) + (d>=5)     | intents in one dialogue   |
| budget_slack        | 0.5 | 0.275| 0.05 | 0.5 - 0.045 d           | tighter total budget      |

`n_orders` counts the past orders besides the ones a task is about: at d0-1 the history holds
only those (the look-up is reading the one order listed), and each difficulty step adds orders
to tell apart by item and date (with `n_distractors`, look-alikes of the same product). A tiny
model learns the one-order look-up within the CPU demo's SFT budget; picking one record of
several it does not (`benchmarks/copy_skills.py`).

Every axis is monotone in `d` (non-decreasing, or non-increasing where smaller is harder:
`search_top_k`, `budget_slack`).

Besides the axes, scenarios derive knobs of their own from `d` (each declared with its `Ramp`
beside its field; `Clamp` bounds an axis a scenario reads), each making
the shallow choice (the first search hit, a fact copied as it is, the top of a list) right at
d0-1 and wrong more often each step, so that reasoning is what difficulty adds (issue 29):

| scenario          | knob                 | d0-1 | d5   | d9-10 | the shallow choice fails when…  |
|-------------------|----------------------|------|------|-------|---------------------------------|
| policy            | `comparison_share`   | 0    | 0.48 | 0.9   | an answer turns on a comparison |
| bundle            | `budget_bind_prob`   | 0    | 0.5  | 1     | the first hits overrun budget   |
| substitution      | `price_trap_prob`    | 0    | 0.5  | 1     | the top match is out of band    |
| cart              | `usual_size_prob`    | 0    | 0.8  | 1     | the size is "my usual size"     |
| journey           | `twin_order_share`   | 0    | 0.8  | 1     | (as below; and an exchange      |
|                   |                      |      |      |       | wants another variant)          |
| order_status      | `twin_order_share`   | 0    | 0.8  | 1     | a later order, same products:   |
| cancel            | `twin_order_share`   | 0    | 0.8  | 1     | the first listed is not the     |
| return            | `twin_order_share`   | 0    | 0.8  | 1     | one meant; only the day tells   |
| product_discovery | `deadline_share`     | 0    | 0.8  | 1     | the first hits arrive too late  |

Policy's share grows 0.12 a step to 0.9; bundle's and substitution's 0.125 a step from d1 to
d9; cart's, journey's and the last four's (`rising_share`) 0.2 a step from d1 to d6. Before the
last four, product_discovery, return, order_status and cancel grew only where `n_items` and
`policy_branches` step (d3, d6, d9), and their baseline rows in `benchmarks/difficulty.py` sat
flat in between; at 0.125 a step they reached 10-20% by d5 and then rose and fell by a task of
ten between steps, while 0.2 a step leaves a cell of ten at most 8, 6, 4, 2, 0 tasks without
the hard variant from d2 to d6.

* cart's `usual_size_prob`: the plan keeps a new line for the usual size wherever the share
  says so, and no other line of the request is in that size (the request would say it).
* journey's `twin_order_share`: every story writes on its order (return, exchange or cancel),
  which gets a later twin told apart by the day; an exchange then asks for another variant than
  the first listed (at share 0 the first listed). Journey's `order_detail` follow-up (a second
  order named in the request, which the baseline's word match takes for the story's) is placed
  like the share from d2, so the tasks that carry it are among those with a twin.
* `twin_order_share`: a later order holds the same products (the same titles, so `list_orders`
  shows it first and no word of the request tells them apart); the user names theirs by the
  day it was placed (order_status also asks which card paid, which only the right `get_order`
  shows, adding that call where no detail was asked).
* `deadline_share`: "it has to arrive by May 9" is the `max_ship_days` filter worked out from
  today's date in the system prompt (the fastest delivery among the items meeting the other
  constraints; where all of them ship alike the day decides nothing and the request keeps the
  day count), and the first hits of the search without what the request leaves unsaid (that
  day count, hidden or anchored constraints) miss the need.

The four and journey's are 0 at d0-1 with no draw there, so the d0-1 tasks (the CPU demo's
training set) are byte-identical to those before them.

Which tasks of a cell carry a share knob's hard variant (all above but policy's per-answer
draws) is the share of the cell's task indexes that
`generators/strata.py` spreads evenly, not a coin per task: with 10 tasks a cell a coin gives
the hard count a standard deviation of about 1.4 tasks, more than the 1.25 a step adds.

From d3, `dependent_share` (`generators/dependent.py`: 0.25 a step, 1 from d6; a coin per
plan) deepens the main request of order_status, cancel, return, policy and product_discovery
with a purchase that hangs on its outcome (core steps, which step bands count; the unrelated
add-on purchase of `generators/followups.py` stops at d2).

World events (`generators/events.py`, from d8) grow too: `failure_prob` 1/2, 3/4, 1 and
`acting_first_prob` 0, 1/2, 1 at d8, d9, d10.

The knobs above reach their full share by d6. From d7 every scenario adds questions about the
customer's history that the goal checks (`generators/reasoning.py`, `late_demands`), more
each step: a chained look-up from d7 (what they paid for what they bought on a day: the listing
gives the order, whose page gives the price), a product told apart from two near-twins only by
its colour and size together from d8, a total (what their orders of a span of days came to) and
a conditional (the refund if an item went back, else its price: the order's returns decide)
from d9, and a cost with a refund or a gift card taken off from d10. The reasoning features a
plan carries (`reasoning.reasoning_features`: the hard variants drawn and the late demands) so
rise at every step from d6 to d10 in every scenario.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated

from pydantic import Field

from ecomrlve.tasks import DIFFICULTY_AXES

# Axis knobs several scenario configs share, declared once (`Scenario.config_for` reads an
# annotated int as `int`).
HistoryLength = Annotated[
    int, Field(ge=0, description="past orders besides the ones the task is about")
]
IntentCount = Annotated[int, Field(ge=1, description="requests in one message: 1 + follow-ups")]
SearchTopK = Annotated[int, Field(ge=1, le=50, description="top_k of the reference searches")]
# A probability, or a knob's share of a cell's tasks (`generators/strata.py` places the share)
Share = Annotated[float, Field(ge=0.0, le=1.0)]
TwinOrderShare = Annotated[
    float,
    Field(ge=0.0, le=1.0, description="share of tasks whose order has a later twin, told by date"),
]


@dataclass(frozen=True)
class Ramp:
    """How a knob that no axis sets follows the difficulty, declared beside its field
    (`lookup_prob: Annotated[Share, Ramp.capped(0.1, 0.8)]`): `Scenario.config_for` sets it to
    `rule(d)`."""

    rule: Callable[[int], float]

    @classmethod
    def capped(cls, step: float, cap: float) -> Ramp:
        """`step` a difficulty step from 0 at d0, at most `cap`: `min(cap, step * d)`."""
        return cls(lambda d: min(cap, step * d))

    @classmethod
    def rising(cls, step: float = 0.2, cap: float = 1.0) -> Ramp:
        """0 at d0-1, then `step` a step up to `cap`: `rising_share`."""
        return cls(lambda d: rising_share(d, step, cap))


@dataclass(frozen=True)
class Clamp:
    """The range a scenario keeps an axis knob in, declared beside its field
    (`n_items: Annotated[int, Clamp(high=3)]`): `Scenario.config_for` clamps the axis value."""

    low: int | None = None
    high: int | None = None

    def __call__(self, value: int) -> int:
        if self.high is not None:
            value = min(self.high, value)
        return value if self.low is None else max(self.low, value)


MIN_DIFFICULTY = 0
MAX_DIFFICULTY = 10

# Axes where a smaller value makes a task harder.
DECREASING_AXES: frozenset[str] = frozenset({"search_top_k", "budget_slack"})


def check_difficulty(d: int) -> int:
    """Return `d` if it is a supported difficulty, else raise ValueError naming the range."""
    if isinstance(d, bool) or not isinstance(d, int) or not MIN_DIFFICULTY <= d <= MAX_DIFFICULTY:
        raise ValueError(
            f"difficulty must be an integer in {MIN_DIFFICULTY}..{MAX_DIFFICULTY}, got {d!r}"
        )
    return d


def axes_for(d: int) -> dict[str, float]:
    """The twelve axis values of difficulty `d` (see the module table)."""
    check_difficulty(d)
    axes = {
        "n_constraints": 2 + d // 2,
        "n_items": 1 + d // 3,
        "n_orders": (3 * d) // 4,
        "n_distractors": d // 2,
        "hidden_detail_share": round(0.06 * d, 4),
        "typo_rate": round(0.01 * max(0, d - 2), 4),
        "intent_switch_prob": round(0.1 * max(0, d - 4), 4),
        "out_of_stock_rate": round(0.05 * d, 4),
        "policy_branches": 1 + d // 3,
        "search_top_k": 10 - d // 2,
        "n_intents": 1 + int(d >= 2) + int(d >= 5),
        "budget_slack": round(0.5 - 0.045 * d, 4),
    }
    if tuple(axes) != DIFFICULTY_AXES:
        raise RuntimeError("internal: difficulty axes out of sync with ecomrlve.tasks")
    return {k: float(v) for k, v in axes.items()}


def rising_share(d: int, step: float = 0.2, cap: float = 1.0) -> float:
    """A knob's share of hard tasks: 0 at d0-1, then `step` a step up to `cap` (by default 0.2
    a step, 1 from d6)."""
    check_difficulty(d)
    return round(min(cap, step * max(0, d - 1)), 4)


def parse_difficulty_range(text: str) -> tuple[int, int]:
    """Parse `"3-7"` or `"5"` into an inclusive range, or raise ValueError with one line."""
    raw = text.strip()
    parts = raw.split("-")
    try:
        if len(parts) == 1:
            lo = hi = int(parts[0])
        elif len(parts) == 2:
            lo, hi = int(parts[0]), int(parts[1])
        else:
            raise ValueError
    except ValueError:
        raise ValueError(f"difficulty must look like 3-7 or 5, got {text!r}") from None
    if not MIN_DIFFICULTY <= lo <= hi <= MAX_DIFFICULTY:
        raise ValueError(
            f"difficulty range must satisfy {MIN_DIFFICULTY} <= lo <= hi <= {MAX_DIFFICULTY}, "
            f"got {text!r}"
        )
    return lo, hi
