"""The difficulty knobs that the requests about placed orders share (cancel, order_status,
return): how many past orders and requests a task has, and the shares of a cell's tasks with a
twin order (told apart by the day it was placed) and with a purchase that hangs on the outcome.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from ecomrlve.generators.base import ScenarioConfig
from ecomrlve.generators.dependent import DEPENDENT_RAMP
from ecomrlve.generators.difficulty import (
    HistoryLength,
    IntentCount,
    Ramp,
    Share,
    TwinOrderShare,
)


class OrderRequestConfig(ScenarioConfig):
    """The knobs of a request about placed orders, with the two shares' ramps."""

    n_orders: HistoryLength
    n_intents: IntentCount
    twin_order_share: Annotated[TwinOrderShare, Ramp.rising()]
    dependent_share: Annotated[Share, DEPENDENT_RAMP] = Field(
        description="share of tasks with a purchase that hangs on the request's outcome "
        "(`generators/dependent.py`)"
    )
