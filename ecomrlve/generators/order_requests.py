"""Requests about placed orders (return, exchange, cancel) that several scenarios make.

`return`, `journey` and `cancel` each ask the agent to change orders; what one such request
adds is the same wherever it is asked: its reference calls, its part of the goal (the
`ReturnSpec`, `ExchangeSpec` or cancelled id) and, for a cancel, the fact the answer states.
`OrderRequests` collects them; `exchange_option` and `delivered_order` draw what a return or
exchange needs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ecomrlve.generators.blocks import ReferenceParts, call, cancelled_fact
from ecomrlve.generators.context import GenContext
from ecomrlve.generators.draws import below, between
from ecomrlve.tasks import ExchangeSpec, ReturnSpec


@dataclass(frozen=True)
class ExchangeOption:
    """Another in-stock variant of an owned product: the one the reference picks (`new_row`),
    how the user names it (`words`) and every row that matches those words (`acceptable`)."""

    new_row: int
    words: str
    acceptable: np.ndarray


def exchange_option(
    ctx: GenContext, rng: np.random.Generator, row: int, first_listed: bool | None = None
) -> ExchangeOption | None:
    """An in-stock variant of `row`'s product in another size and/or colour (None: no other
    variant is in stock). `first_listed` True: the first such variant the product page lists
    (`get_product` lists the family in order); False: one that differs from it in colour or
    size where the family has one; None: any."""
    family = ctx.family_rows(row)
    options = [int(r) for r in family if int(r) != row and ctx.in_stock[r]]
    if not options:
        return None
    first = options[0]
    if first_listed is False:
        key = (ctx.color.codes[first], ctx.size_col.codes[first])
        options = [
            r for r in options if (ctx.color.codes[r], ctx.size_col.codes[r]) != key
        ] or options
    new = options[below(rng, len(options))]
    if first_listed:
        new = first
    same_color = ctx.color.codes[new] == ctx.color.codes[row]
    same_size = ctx.size_col.codes[new] == ctx.size_col.codes[row]
    if same_color and not same_size:
        words = f"size {ctx.size_col.value(new)}"
    elif same_size and not same_color:
        words = f"the {ctx.color.value(new)} one"
    else:
        words = f"the {ctx.color.value(new)} one in size {ctx.size_col.value(new)}"
    acceptable = [
        int(r)
        for r in family
        if ctx.in_stock[r]
        and ctx.color.codes[r] == ctx.color.codes[new]
        and ctx.size_col.codes[r] == ctx.size_col.codes[new]
    ]
    return ExchangeOption(new, words, np.array(acceptable))


def delivered_order(
    ctx: GenContext,
    rng: np.random.Generator,
    order_id: str,
    rows: list[int],
    days: int,
    user: dict[str, Any],
) -> dict[str, Any]:
    """An order of one each of `rows`, delivered `days` ago after 2-5 days in transit."""
    transit = between(rng, 2, 6)
    return ctx.order(
        order_id,
        rows,
        [1] * len(rows),
        "delivered",
        days + transit,
        transit_days=transit,
        user=user,
    )


@dataclass
class OrderRequests(ReferenceParts):
    """The reference calls and goal parts that a task's requests add up to, in call order."""

    returns: list[ReturnSpec] = field(default_factory=list)
    exchanges: list[ExchangeSpec] = field(default_factory=list)
    cancel: list[str] = field(default_factory=list)

    def return_item(self, ctx: GenContext, order: dict[str, Any], row: int, reason: str) -> None:
        """`return_item` on line `row` of a delivered `order`."""
        item_id, order_id = ctx.item_ids[row], order["order_id"]
        self.reference.append(
            call("return_item", order_id=order_id, item_id=item_id, reason=reason)
        )
        self.returns.append(ReturnSpec(order_id=order_id, item_id=item_id))

    def exchange_item(
        self, ctx: GenContext, order: dict[str, Any], row: int, option: ExchangeOption
    ) -> None:
        """`get_product` (to see the variants), then `exchange_item` for `option`."""
        item_id, order_id = ctx.item_ids[row], order["order_id"]
        new_item_id = ctx.item_ids[option.new_row]
        self.reference += [
            call("get_product", item_id=item_id),
            call("exchange_item", order_id=order_id, item_id=item_id, new_item_id=new_item_id),
        ]
        acceptable = ctx.ids(option.acceptable)
        self.exchanges.append(
            ExchangeSpec(order_id=order_id, item_id=item_id, acceptable_new=acceptable)
        )

    def cancel_order(self, ctx: GenContext, order: dict[str, Any], row: int, reason: str) -> None:
        """`cancel_order` on a pending or processing `order`; the answer says it is cancelled."""
        self.reference.append(call("cancel_order", order_id=order["order_id"], reason=reason))
        self.cancel.append(order["order_id"])
        self.answer_facts.append(cancelled_fact(ctx, order, row, was=order["status"]))

    def goal_parts(self) -> dict[str, Any]:
        """The `Goal` fields these requests decide."""
        return {
            "returns": self.returns,
            "exchanges": self.exchanges,
            "cancel": self.cancel,
            "answer_facts": self.answer_facts,
            "relevant_policies": self.policies,
        }
