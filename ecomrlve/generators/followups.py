"""Follow-up requests: a second, independent thing the customer asks for in the same message.

Real customers bundle requests ("cancel this — and while you're at it, which card did I pay
the boots with?"). A scenario draws up to `n_followups` of them in its plan (their reference
cost is fixed, so the plan still knows its step count) and appends them after its own work:

============  ====  ===================================================================
follow-up     cost  what the agent must do
============  ====  ===================================================================
order_detail  1     `get_order` on another order the user describes: its status, its
                    delivery date and the card it was paid with (only `get_order` shows it)
refund        1     `search_policy` for refund timing: the days of this shop's policy book
reorder       3     search with the stated constraints, add one acceptable item, checkout
============  ====  ===================================================================

Each follow-up is stated in the prompt (nothing hidden), adds its own facts or purchase slot to
the goal, and touches nothing the scenario's own goal checks.

`reorder` and `order_detail` are add-ons (`ADDONS`): they serve a request beside the customer's
main one, so their calls are not the task's core steps (`Task.core_calls`), which difficulty and
step bands count; order_status counts an `order_detail` as core (one more order asked about).
The unrelated purchase (`reorder`) is drawn only up to `REORDER_UNTIL` (d2: 6% of the tasks
there; the d0-2 tasks stay byte-identical); from d3 a task's depth comes from its main request.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ecomrlve.generators.blocks import (
    VARIANT_KEYS,
    ProductNeed,
    ReferenceParts,
    World,
    call,
    detail_fact,
    fact,
    line_phrase,
    order_when,
    paid_with,
    placed_days_ago_for,
    policy_call,
    query_for,
    status_facts,
)
from ecomrlve.generators.context import GenContext
from ecomrlve.generators.draws import pick
from ecomrlve.generators.errors import GenerationError
from ecomrlve.generators.phrasing import render
from ecomrlve.generators.prompts import CLOSERS, counted
from ecomrlve.generators.strata import in_share
from ecomrlve.tasks import AnswerFact, PurchaseSpec, Slot, ToolCall

COST: dict[str, int] = {"order_detail": 1, "refund": 1, "reorder": 3}
ADDONS: frozenset[str] = frozenset({"order_detail", "reorder"})
REORDER_UNTIL = 2  # the last difficulty that may append an unrelated purchase
CLOSERS_LONGEST_FIRST = sorted((c for c in CLOSERS if c), key=len, reverse=True)
REFUND_POLICY = ("refunds", "", "any")

DETAIL_SENTENCES: tuple[str, ...] = (
    "Also, which card did I pay with for my order with {thing} (placed {when}), and has it "
    "arrived yet?",
    "One more thing: my order with {thing} (placed {when}) — where is it, and which card was "
    "it charged to?",
    "While you're at it, could you check my order with {thing} (placed {when})? I'd like its "
    "status, the delivery date and the card I paid with.",
)
REFUND_SENTENCES: tuple[str, ...] = (
    "How long will the refund take to reach me?",
    "And when should I expect the money back?",
    "Also, how long until the refund shows up on my card?",
)
REORDER_SENTENCES: tuple[str, ...] = (
    "Also, please order me {what}.",
    "And while you're at it, buy me {what} and check out with my saved details.",
    "Then please place an order for {what}.",
)


def draw(
    rng: np.random.Generator,
    allowed: tuple[str, ...],
    most: int,
    difficulty: int,
    *,
    placed: bool = False,
) -> list[str]:
    """Up to `most` distinct follow-ups of `allowed`: each of `most` chances is taken with
    probability `followup_prob(difficulty)`, then the kinds are uniform. With `placed`, a
    chance is taken by the task's position in its cell (`strata.in_share`, the same draws):
    the tasks of a cell that take it are those that carry the scenario's share knobs first."""
    if difficulty > REORDER_UNTIL:
        allowed = tuple(kind for kind in allowed if kind != "reorder")
    chance = followup_prob(difficulty)
    taken = (
        in_share(chance, rng.random()) if placed else bool(rng.random() < chance)
        for _ in range(most)
    )
    count = min(sum(taken), len(allowed))
    if count == 0:
        return []
    order = rng.permutation(len(allowed))[:count]
    return [allowed[int(i)] for i in sorted(order)]


def followup_prob(difficulty: int) -> float:
    """Harder tasks bundle more requests: 0.16 at d2, 0.4 at d5, 0.6 from d8 on."""
    return min(0.6, 0.08 * difficulty)


def cost(followups: list[str]) -> int:
    return sum(COST[f] for f in followups)


def before_closer(prompt: str, sentences: list[str]) -> str:
    """`prompt` with `sentences` added before its closing thanks, if it has one."""
    if not sentences:
        return prompt
    closer = next((c for c in CLOSERS_LONGEST_FIRST if prompt.endswith(" " + c)), "")
    body = prompt[: len(prompt) - len(closer)].rstrip() if closer else prompt
    return " ".join([body, *sentences, closer]).strip()


def addon_cost(followups: list[str], core: frozenset[str] = frozenset()) -> int:
    """The calls of `followups` that serve an add-on request (`ADDONS` but those in `core`)."""
    return sum(COST[f] for f in followups if f in ADDONS - core)


@dataclass
class FollowUps(ReferenceParts):
    """What the follow-ups add to a task: reference calls, facts, goal parts, prompt text."""

    relevant: list[str] = field(default_factory=list)
    slots: list[Slot] = field(default_factory=list)
    sentences: list[str] = field(default_factory=list)
    addon_calls: list[ToolCall] = field(default_factory=list)  # of `reference`: `Draft.addon_calls`

    def prompt(self, prompt: str) -> str:
        """`prompt` with the follow-up sentences, before its closing thanks if it has one."""
        return before_closer(prompt, self.sentences)

    def merge(
        self,
        reference: list[ToolCall],
        facts: list[AnswerFact] | None = None,
        policies: list[str] | None = None,
    ) -> None:
        """Append the follow-ups' calls, facts and policy rows to a scenario's own lists; a
        part the scenario keeps no list for must be empty (nothing is dropped silently)."""
        for mine, theirs, name in (
            (reference, self.reference, "calls"),
            (facts, self.answer_facts, "facts"),
            (policies, self.policies, "policy rows"),
        ):
            if mine is not None:
                mine += theirs
            elif theirs:
                raise GenerationError(f"this scenario has no place for follow-up {name}")

    @property
    def purchase(self) -> PurchaseSpec | None:
        """The goal's purchase when a follow-up buys something (else None)."""
        return PurchaseSpec(slots=self.slots) if self.slots else None


def add_followups(
    followups: list[str],
    ctx: GenContext,
    rng: np.random.Generator,
    world: World,
    avoid_categories: set[str],
    *,
    typo_rate: float,
    top_k: int = 10,
    core: frozenset[str] = frozenset(),
) -> FollowUps:
    """Build `followups` into `world` (a new order for `order_detail`) and return what they
    add; their categories avoid `avoid_categories` so no look-alike of a target appears. The
    calls of the `ADDONS` kinds not in `core` are listed in `addon_calls`."""
    out = FollowUps()

    def say(templates: tuple[str, ...], **values: Any) -> None:
        out.sentences.append(render(pick(rng, templates), values, rng, typo_rate))

    pool = [c for c in ctx.categories if c not in avoid_categories] or list(ctx.categories)
    for kind in followups:
        category = pick(rng, pool)
        pool = [c for c in pool if c != category] or pool
        if kind == "order_detail":
            order, row = _described_order(ctx, rng, world, category)
            out.reference.append(call("get_order", order_id=order["order_id"]))
            out.answer_facts += status_facts(ctx, order, row)
            out.answer_facts.append(detail_fact(ctx, order, row, "payment"))
            out.relevant += [order["order_id"], ctx.item_ids[row]]
            say(DETAIL_SENTENCES, thing=line_phrase(ctx, row, rng), when=order_when(order, rng))
        elif kind == "refund":
            query = pick(rng, ("refund business days", "refunds original payment method"))
            policy_id = ctx.policy_ids[REFUND_POLICY]
            out.reference.append(policy_call(ctx, query, policy_id, out.policies))
            low, high = ctx.policies.refund_days  # this shop's book, never a constant
            told = (
                f"Refunds reach your original payment method within {low} to {high} business "
                "days after the returned item is received."
            )
            out.answer_facts.append(fact("duration", f"{low}-{high}", told))
            say(REFUND_SENTENCES)
        elif kind == "reorder":
            target = ctx.pick_in_stock(rng, category)
            need = ProductNeed.build(ctx, target, VARIANT_KEYS, rng)
            search, good = need.search(ctx, query_for(ctx, target, rng), top_k)
            chosen = ctx.item_ids[good[0]]
            out.reference += [
                search,
                call("add_to_cart", item_id=chosen, quantity=1),
                call("checkout"),
            ]
            out.slots.append(Slot(acceptable=need.acceptable_ids(ctx), quantity=1))
            out.relevant.append(chosen)
            say(REORDER_SENTENCES, what=f"{counted(1, category)} {need.phrase(rng)}")
        else:
            raise ValueError(f"unknown follow-up {kind!r}")
        if kind in ADDONS - core:
            out.addon_calls += out.reference[len(out.reference) - COST[kind] :]
    return out


_DATE_KEYS = ("placed", "delivered", "eta")
_MAX_SHIFT = 30  # days a follow-up order moves back to keep its dates its own


def _described_order(
    ctx: GenContext, rng: np.random.Generator, world: World, category: str
) -> tuple[dict[str, Any], int]:
    """A shipped or delivered order of one `category` item, paid with a card only
    `get_order` shows, added to the world's history."""
    taken = {o["order_id"] for o in world.orders}
    ids = [i for i in ctx.order_ids(rng, 4) if i not in taken]
    if not ids:
        raise GenerationError("no free order id for a follow-up")
    status = pick(rng, ("shipped", "delivered"))
    row = ctx.pick_any(rng, category)
    # its dates are answers: none may be a date of another order, which the customer may say
    # when asked about that one ("the order I placed on June 14")
    taken_dates = {o.get(k) for o in world.orders for k in _DATE_KEYS} - {None}
    days = placed_days_ago_for(status, rng)
    for shift in range(_MAX_SHIFT + 1):
        order = ctx.order(ids[0], [row], [1], status, days + shift, user=world.user)
        if not taken_dates & {order.get(k) for k in _DATE_KEYS}:
            break
    else:
        raise GenerationError("every date of a follow-up order is another order's date")
    order["payment_method"] = paid_with(rng, world.user["payment_methods"])
    world.orders.append(order)
    return order, row
