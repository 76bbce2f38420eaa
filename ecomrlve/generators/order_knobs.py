"""The difficulty knobs that the requests about placed orders share (cancel, order_status,
return): how many past orders and requests a task has, and the shares of a cell's tasks with a
twin order (told apart by the day it was placed) and with a purchase that hangs on the outcome.
"""

from __future__ import annotations

from pydantic import Field

from ecomrlve.generators.base import ScenarioConfig
from ecomrlve.generators.dependent import dependent_share
from ecomrlve.generators.difficulty import (
    HistoryLength,
    IntentCount,
    Share,
    TwinOrderShare,
    rising_share,
)


class OrderRequestConfig(ScenarioConfig):
    """The knobs of a request about placed orders; `shares_at(d)` sets the two shares."""

    n_orders: HistoryLength
    n_intents: IntentCount
    twin_order_share: TwinOrderShare
    dependent_share: Share = Field(
        description="share of tasks with a purchase that hangs on the request's outcome "
        "(`generators/dependent.py`)"
    )

    @staticmethod
    def shares_at(difficulty: int) -> dict[str, float]:
        """The twin-order and dependent-purchase shares of difficulty `difficulty`."""
        return {
            "twin_order_share": rising_share(difficulty),
            "dependent_share": dependent_share(difficulty),
        }
