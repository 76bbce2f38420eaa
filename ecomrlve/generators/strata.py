"""Which tasks of a cell carry a knob's hard variant: a share of the cell's indexes, spread
evenly, instead of an independent coin per task.

A knob such as `twin_order_share = 0.25` asks for a quarter of a (scenario, difficulty) cell's
tasks to carry the hard variant. A coin per task gives a cell of 10 tasks anywhere from 0 to 6
of them (a standard deviation of 1.4 tasks, 14 points), more than the 12.5 points one
difficulty step adds, so a difficulty table of 10 tasks a cell rises between steps by chance
alone. Instead the task at `index` of a cell is hard iff

    frac(offset + index * (sqrt(5) - 1) / 2) < share

The golden-ratio (Kronecker) sequence fills [0, 1) evenly: the first n indexes of a cell hold
n * share hard tasks up to one or two, for every n (`generate_tasks` numbers each cell's tasks
0, 1, 2...). The offset comes from (seed, scenario), not the difficulty: an index sits at the
same position at every difficulty, so a task index hard at d is hard at d + 1 and a cell's hard
count never falls as d grows. The position is a function of the task key alone (attempts of
one index share it), so a task is still rebuilt from its id.

`Scenario.plan_task` sets the position while a plan is drawn; `in_share(share, drawn)` decides
with it. Without a position (plan samples that estimate step bands, which have no cell
index) the caller's own uniform `drawn` decides, a coin with the same mean. The caller draws
`drawn` either way, so the rest of the task's draws do not depend on which rule decided.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator

import numpy as np

GOLDEN = 0.6180339887498949  # (sqrt(5) - 1) / 2
STRATA_STREAM = 0x57A7A  # the last entropy word of a cell's offset

_POSITION: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "cell_position", default=None
)


def cell_position(seed: int, scenario_id: int, index: int) -> float:
    """The position in [0, 1) of task `index` of its cell (see the module docstring)."""
    entropy = np.random.SeedSequence([seed, scenario_id, STRATA_STREAM])
    offset = float(np.random.default_rng(entropy).random())
    return (offset + index * GOLDEN) % 1.0


@contextlib.contextmanager
def positioned(position: float) -> Iterator[float]:
    """Decide `in_share` by `position` inside the block."""
    if not 0.0 <= position < 1.0:
        raise ValueError(f"a cell position lies in [0, 1), got {position!r}")
    token = _POSITION.set(position)
    try:
        yield position
    finally:
        _POSITION.reset(token)


def in_share(share: float, drawn: float) -> bool:
    """Whether the current task is among the `share` of its cell that carry a hard variant:
    by the cell position when one is set, else by the caller's uniform draw `drawn`."""
    position = _POSITION.get()
    return (drawn if position is None else position) < share


def drawn_in_share(share: float, rng: np.random.Generator) -> bool:
    """`in_share` with the task's own uniform draw from `rng`, and no draw at share 0: a knob
    that is off moves none of the task's other draws (the tasks before the knob stay as they
    were)."""
    return share > 0 and in_share(share, rng.random())
