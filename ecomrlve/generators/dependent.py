"""A purchase that depends on the main request's outcome: "if it can be cancelled, order the
blue one instead", "once the return goes through, get me size M", "if it's arrived, I'd like
a second one in black".

From d3 order_status, cancel and return may hang such a request on an item of an order the
customer asks about, and policy on the item asked about (`dependent_share`: 0 up to d2, 0.25
a step, 1 from d6; a coin per plan, `dependent_drawn`). It is part of the main request, so its
calls are core steps, and it is a chain: the ordered item's id (from the order) opens its
product page (`get_product`, which lists the variants), whose variant id is what goes in the
cart:

| condition holds | reference                                      | goal                      |
|-----------------|------------------------------------------------|---------------------------|
| yes             | get_product, add_to_cart(variant), checkout    | a purchase of the variant |
| no              | nothing: the answer already says the outcome   | no purchase               |

The conditions (`SENTENCES`): the order was cancelled (cancel), has arrived (order_status), the
item goes back or is refused (return: either way round, so that more refusals at higher
difficulty do not mean fewer purchases), and "either way" (policy, whose return itself is the
conditional part). Four wordings each.

A shallow agent fails either way: one that buys without checking the condition buys when it
must not, and one that never opens the product page has no variant id to buy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ecomrlve.generators.blocks import call
from ecomrlve.generators.context import GenContext
from ecomrlve.generators.difficulty import Ramp, check_difficulty
from ecomrlve.generators.draws import pick
from ecomrlve.generators.errors import GenerationError
from ecomrlve.generators.order_requests import exchange_option
from ecomrlve.generators.phrasing import render
from ecomrlve.tasks import PurchaseSpec, Slot, ToolCall

COST = 3  # get_product, add_to_cart, checkout
FIRST_DIFFICULTY = 3

# the customer's condition, by what the main request finds out; {wanted} is the variant ("the
# hoodie in black", "the hoodie in size M", "the hoodie in black, size M"), {noun} the product
SENTENCES: dict[str, tuple[str, ...]] = {
    # cancel: the order can still be cancelled
    "cancelled": (
        "If you manage to cancel it, please order me {wanted} instead.",
        "Should that cancellation go through, I'd like {wanted} in its place.",
        "Once the {noun} is cancelled, buy me {wanted} — if it's too late, leave it.",
        "If it isn't too late to stop the {noun}, replace it with {wanted}.",
    ),
    # return: the item can still go back
    "returned": (
        "If the {noun} can go back, use the refund toward {wanted} and order that for me.",
        "Assuming the return of the {noun} is accepted, please order {wanted} instead.",
        "Once the return is filed, get me {wanted} — but only if it can be returned.",
        "If you can take the {noun} back, I'd like {wanted} ordered in its place.",
    ),
    # policy: bought whether the item may go back or not (the return is the conditional part)
    "either": (
        "Either way, I'd like {wanted} — please order it.",
        "Whatever the answer, order me {wanted} too.",
        "And whether or not it can go back, buy me {wanted}.",
        "Regardless of the return, please get me {wanted}.",
    ),
    # return: the item cannot go back
    "refused": (
        "If the {noun} can't go back, then at least order me {wanted}.",
        "Should the return of the {noun} be refused, I'd like {wanted} instead — order it.",
        "If it's too late to return the {noun}, buy me {wanted} so I have one that works.",
        "In case the {noun} can't be returned, please order {wanted}.",
    ),
    # order_status: the order has arrived
    "delivered": (
        "If the {noun} has already arrived, please order me {wanted} as well.",
        "Should the {noun} be delivered by now, I'd like a second one too: {wanted}.",
        "If that {noun} has reached me, buy {wanted}; if not, hold off.",
        "Once you see the {noun} has been delivered, order me {wanted} too.",
    ),
}


def wanted_phrase(noun: str, words: str) -> str:
    """`ExchangeOption.words` as a noun phrase: "size M" -> "the hoodie in size M", "the
    black one in size M" -> "the hoodie in black, size M"."""
    if words.startswith("size "):
        return f"the {noun} in {words}"
    colour, _, size = words.removeprefix("the ").partition(" one")
    size = size.removeprefix(" in ")
    return f"the {noun} in {colour}, {size}" if size else f"the {noun} in {colour}"


def dependent_share(difficulty: int) -> float:
    """The share of a cell's tasks with a dependent purchase: 0 up to d2, 0.25 a step from d3,
    1 from d6 (the d0-2 tasks, the CPU demo's, draw nothing for it)."""
    check_difficulty(difficulty)
    return min(1.0, 0.25 * max(0, difficulty - FIRST_DIFFICULTY + 1))


# the `Ramp` of the scenarios' `dependent_share` knobs
DEPENDENT_RAMP = Ramp(dependent_share)


def dependent_drawn(share: float, rng: np.random.Generator) -> bool:
    """Whether this plan carries a dependent purchase: a coin per plan attempt, not the cell
    position the other share knobs use (`strata.in_share`), so that a step band's search over
    attempts finds it at every index; no draw at share 0 (the d0-2 tasks stay as they were)."""
    return share > 0 and bool(rng.random() < share)


VARIANT_TRIES = 24


def with_variant(ctx: GenContext, rng: np.random.Generator, category: str, row: int) -> int:
    """`row`, or another row of `category` whose product has another variant in stock (the
    dependent purchase buys one); `row` when none is found in `VARIANT_TRIES` draws."""
    for _ in range(VARIANT_TRIES):
        if any(int(r) != row and ctx.in_stock[r] for r in ctx.family_rows(row)):
            return row
        row = ctx.pick_any(rng, category)
    return row


@dataclass
class DependentPurchase:
    """What a dependent purchase adds: its sentence, its calls and the goal's purchase."""

    sentence: str
    reference: list[ToolCall]
    purchase: PurchaseSpec | None


def dependent_purchase(
    ctx: GenContext,
    rng: np.random.Generator,
    row: int,
    outcome: str,
    holds: bool,
    typo_rate: float,
    *,
    noun: str | None = None,
) -> DependentPurchase:
    """The request "if `outcome`, buy another variant of `row`" and, when `holds`, the
    calls that do it; `noun` names the product (default: its type). Raises GenerationError
    when no other variant of `row` is in stock (the build is redrawn)."""
    option = exchange_option(ctx, rng, row)
    if option is None:
        raise GenerationError(f"no other variant of row {row} in stock to buy")
    noun = noun or ctx.noun(row)
    values = {"noun": noun, "wanted": wanted_phrase(noun, option.words)}
    sentence = render(pick(rng, SENTENCES[outcome]), values, rng, typo_rate)
    if not holds:
        return DependentPurchase(sentence, [], None)
    item_id = ctx.item_ids[row]
    reference = [
        call("get_product", item_id=item_id),
        call("add_to_cart", item_id=ctx.item_ids[option.new_row], quantity=1),
        call("checkout"),
    ]
    slot = Slot(acceptable=ctx.ids(option.acceptable), quantity=1)
    return DependentPurchase(sentence, reference, PurchaseSpec(slots=[slot]))
