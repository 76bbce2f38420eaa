"""cancel: cancel the right open orders; a shipped one must stay and the answer says why.

The user names the orders to cancel by what is in them and when they were placed. Orders that
are pending or processing are cancelled with the user's reason; a requested order that has
already shipped must not be cancelled: the agent reads the cancellation policy and tells the
user to wait for delivery and return it instead (a partial request: only part of it can be
done). Look-alike open orders the user did not mention stay untouched. Harder variants cancel
more orders, mix in a shipped one, add look-alikes and leave the reason out of the prompt
(`cancel_order` needs one, so the agent must `ask_user`). `twin_order_share` of a cell's tasks
(0 at d0-1, 0.2 a step, 1 from d6; `generators/strata.py` picks which) have the first order
named bought twice: a later order of the same products (the same titles, listed first) must
stay, and only the day the user gives ("placed on May 3") tells which one to cancel. From d3,
`dependent_share` of a cell's tasks hang a purchase on a cancellation ("if you manage to cancel
it, order me the hoodie in black instead": `generators/dependent.py`): the first order's, or
the shipped one's when it is the only one named, when nothing may be bought.

Success: exactly the requested cancellable orders end cancelled, nothing else changes, and the
final answer confirms each cancellation; for a shipped order it says that it has shipped, that it
can't be cancelled and that a return is the way out, about that order.
"""

from __future__ import annotations

from typing import Annotated, Any

import numpy as np
from pydantic import Field

from ecomrlve.generators import followups
from ecomrlve.generators.base import Draft, Plan, Scenario
from ecomrlve.generators.blocks import (
    AskedOrders,
    World,
    ask_call,
    call,
    line_phrase,
    look_alike,
    named_order,
    order_ref,
    placed_days_ago_for,
    policy_call,
    shipped_no_cancel_facts,
)
from ecomrlve.generators.context import GenContext
from ecomrlve.generators.dependent import COST as DEPENDENT_COST
from ecomrlve.generators.dependent import (
    dependent_drawn,
    dependent_purchase,
    with_variant,
)
from ecomrlve.generators.difficulty import Clamp, Ramp, Share
from ecomrlve.generators.draws import between, pick
from ecomrlve.generators.order_knobs import OrderRequestConfig
from ecomrlve.generators.order_requests import OrderRequests
from ecomrlve.generators.phrasing import join_words
from ecomrlve.generators.prompts import compose
from ecomrlve.generators.strata import drawn_in_share
from ecomrlve.tasks import Goal

REASONS: tuple[str, ...] = (
    "I ordered it by mistake",
    "I found it cheaper elsewhere",
    "I don't need it any more",
    "it would arrive too late",
)
TEMPLATES: tuple[str, ...] = (
    "Please cancel {orders}.{reason}",
    "I need to cancel {orders}.{reason} Thanks!",
    "Can you cancel {orders} for me?{reason}",
    "Please stop {orders} from going out.{reason}",
    "I'd like to cancel {orders}, please.{reason}",
    "Could you call off {orders}?{reason}",
    "Change of plans: cancel {orders}.{reason}",
    "Is it too late to cancel {orders}? If not, please cancel.{reason}",
    "Please cancel {orders} before anything ships.{reason}",
    "I want to cancel {orders}.{reason} Let me know once it's done.",
    "Can you cancel {orders} right away?{reason}",
    "Cancel {orders}, please.{reason} Let me know once that's done.",
)
CANCELLATION_POLICY = ("cancellation", "", "any")
FOLLOWUPS: tuple[str, ...] = ("order_detail", "reorder")


class CancelConfig(OrderRequestConfig):
    n_items: Annotated[int, Clamp(high=4)] = Field(
        ge=1, description="orders the user asks to cancel"
    )
    n_distractors: int = Field(ge=0, description="open look-alike orders that must stay")
    shipped_prob: Annotated[Share, Ramp.capped(0.08, 0.6)] = Field(
        description="P(one requested order shipped)"
    )


class Cancel(Scenario):
    name = "cancel"
    seed_id = 8
    Config = CancelConfig
    lists_every_order = True

    def plan(self, config: CancelConfig, rng: np.random.Generator) -> Plan:
        n_requested = between(rng, 1, config.n_items + 1)
        shipped = bool(rng.random() < config.shipped_prob)
        n_cancel = n_requested - int(shipped)
        hide_reason = n_cancel > 0 and bool(rng.random() < config.hidden_detail_share)
        statuses = [pick(rng, ("pending", "processing")) for _ in range(n_cancel)]
        more = followups.draw(rng, FOLLOWUPS, config.n_intents - 1, config.difficulty)
        steps = int(hide_reason) + 1 + n_cancel + int(shipped)
        # no draw at share 0: the d0-1 tasks stay what they were before the knob
        twin = drawn_in_share(config.twin_order_share, rng)
        # drawn last, and not at share 0: every other draw is the one it was before it
        dependent = dependent_drawn(config.dependent_share, rng)
        # on the first order, or on the shipped one (nothing may be bought) when it is the only
        # one asked about: a share of failed conditions that shrinks as more orders are named
        on_shipped = dependent and n_cancel == 0
        steps += DEPENDENT_COST * int(dependent and not on_shipped)
        return Plan.with_followups(
            steps,
            more,
            statuses=statuses,
            shipped=shipped,
            hide_reason=hide_reason,
            twin=twin,
            dependent=dependent,
            on_shipped=on_shipped,
        )

    def build(
        self, config: CancelConfig, plan: Plan, rng: np.random.Generator, ctx: GenContext
    ) -> Draft:
        world, targets, categories = self._world(config, plan, rng, ctx)
        reason = pick(rng, REASONS)
        requests, phrases = self._requests(plan, targets, reason, rng, ctx)
        reason_text = "" if plan["hide_reason"] else f" The reason: {reason}."
        prompt = compose(
            pick(rng, TEMPLATES),
            {"orders": join_words(phrases), "reason": reason_text},
            rng,
            config.typo_rate,
        )
        purchase = None
        if plan["dependent"]:
            order, row = targets[_bought_on(plan, len(targets))]
            holds = order["status"] != "shipped"
            then = dependent_purchase(ctx, rng, row, "cancelled", holds, config.typo_rate)
            prompt = followups.before_closer(prompt, [then.sentence])
            requests.reference += then.reference
            purchase = then.purchase
        extra = followups.add_followups(
            plan["followups"], ctx, rng, world, set(categories), typo_rate=config.typo_rate
        )
        extra.merge(requests.reference, requests.answer_facts, requests.policies)
        prompt = extra.prompt(prompt)
        order0, row0 = targets[0]
        goal = Goal(
            **requests.goal_parts(),
            user_facts={
                "reason": reason,
                "order": f"{order_ref(order0)}, with {line_phrase(ctx, row0, rng)}",
            },
            purchase=purchase or extra.purchase,
            relevant_ids=[o["order_id"] for o, _ in targets]
            + [ctx.item_ids[r] for _, r in targets]
            + extra.relevant,
            typo_rate=config.typo_rate,
        )
        return Draft(prompt, goal, world.state(), requests.reference, extra.addon_calls)

    def _world(
        self, config: CancelConfig, plan: Plan, rng: np.random.Generator, ctx: GenContext
    ) -> tuple[World, list[tuple[dict[str, Any], int]], list[str]]:
        """The customer's orders: the requested ones (open, the shipped one last) as (order, row),
        open look-alikes that must stay, fillers and the first order's later twin."""
        statuses: list[str] = list(plan["statuses"]) + (["shipped"] if plan["shipped"] else [])
        world = World.new(ctx, rng)
        n = len(statuses)
        orders = AskedOrders.draw(ctx, rng, n, config.n_distractors, config.n_orders, plan["twin"])
        targets = []
        bought_on = _bought_on(plan, n)
        for k, (status, category) in enumerate(zip(statuses, orders.categories, strict=True)):
            row = ctx.pick_any(rng, category)
            if k == bought_on:
                row = with_variant(ctx, rng, category, row)
            placed = placed_days_ago_for(status, rng)
            order = ctx.order(orders.ids[k], [row], [1], status, placed, user=world.user)
            targets.append((order, row))
        distractors = []
        for k in range(config.n_distractors):
            other = look_alike(ctx, rng, targets[k % n][1])
            if other is None:
                continue
            status = pick(rng, ("pending", "processing", "shipped"))
            placed = placed_days_ago_for(status, rng)
            order_id = orders.ids[n + k]
            distractors.append(ctx.order(order_id, [other], [1], status, placed, user=world.user))
        orders.fill(ctx, rng, world, [o for o, _ in targets], distractors)
        return world, targets, orders.categories

    def _requests(
        self,
        plan: Plan,
        targets: list[tuple[dict[str, Any], int]],
        reason: str,
        rng: np.random.Generator,
        ctx: GenContext,
    ) -> tuple[OrderRequests, list[str]]:
        """The reference of the cancellations (a shipped order: the policy and why not) and how
        the prompt names each order."""
        requests = OrderRequests()
        if plan["hide_reason"]:
            requests.reference.append(ask_call(["reason"], rng))
        requests.reference.append(call("list_orders"))
        phrases = []
        for k, (order, row) in enumerate(targets):
            # a twin is told apart by the day, not the month
            phrases.append(named_order(ctx, order, row, rng, by_day=plan["twin"] and not k))
            if order["status"] == "shipped":
                query = pick(rng, ("cancel shipped order", "cancellation policy"))
                policy_id = ctx.policy_ids[CANCELLATION_POLICY]
                requests.reference.append(policy_call(ctx, query, policy_id, requests.policies))
                requests.answer_facts += shipped_no_cancel_facts(ctx, order, row)
            else:
                requests.cancel_order(ctx, order, row, reason)
        return requests, phrases


def _bought_on(plan: Plan, n_targets: int) -> int | None:
    """The requested order a dependent purchase hangs on: the first, or the shipped one when it
    is the only one named; None without one."""
    if not plan["dependent"]:
        return None
    return n_targets - 1 if plan["on_shipped"] else 0
