"""order_status: identify the order(s) the user means and answer with status and dates.

The user describes each order by what was in it and when it was placed; look-alike orders
(the same kind of product, another colour or date) sit in the history. `list_orders` shows
statuses and dates; details only `get_order` shows (the shipping address of a gift, the card
it was paid with, the price paid) need one `get_order` per order. Harder variants ask about
more orders, add such details, leave the order description out of the prompt (`ask_user`) and
add a policy question (can a shipped order still be cancelled?). `twin_order_share` of a cell's
tasks (0 at d0-1, 0.2 a step, 1 from d6; `generators/strata.py` picks which) have the first
order asked about bought twice: a later order holds the same products (so the same titles, and
it is listed first), only the date the user gives tells them apart, and the user asks which card
paid for theirs, so the `get_order` must be the right one (the two were paid with different
cards). From d3, `dependent_share` of a cell's tasks ask every order's detail and hang a
purchase on the last order's delivery ("if the lamp has already arrived, order me the lamp in
black as well": `generators/dependent.py`); mostly it has arrived, else nothing is bought.

Success: the final answer states, for every order asked about, its status and its delivery
date (or expected date), plus every detail asked for, each about the right order, and states no
other order's status or date for it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
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
    detail_fact,
    line_phrase,
    look_alike,
    named_order,
    order_ref,
    paid_with,
    placed_days_ago_for,
    policy_call,
    shipped_no_cancel_facts,
    status_facts,
)
from ecomrlve.generators.context import GenContext
from ecomrlve.generators.dependent import COST as DEPENDENT_COST
from ecomrlve.generators.dependent import (
    dependent_drawn,
    dependent_purchase,
    with_variant,
)
from ecomrlve.generators.difficulty import (
    Clamp,
    Ramp,
    Share,
)
from ecomrlve.generators.draws import between, pick
from ecomrlve.generators.order_knobs import OrderRequestConfig
from ecomrlve.generators.phrasing import join_words
from ecomrlve.generators.prompts import compose
from ecomrlve.generators.strata import drawn_in_share
from ecomrlve.tasks import AnswerFact, Goal, ToolCall

STATUSES: tuple[str, ...] = ("pending", "processing", "shipped", "delivered", "cancelled")
DETAILS: tuple[str, ...] = ("address", "payment", "price")
DETAIL_QUESTIONS = {
    "address": "which address it's going to",
    "payment": "which card I paid with",
    "price": "how much I paid for it",
}
TEMPLATES: tuple[str, ...] = (
    "Can you tell me the status of {orders}?{question}",
    "Where is {orders}? I'd like the status and the delivery date.{question}",
    "Could you check on {orders} for me — status and when it arrives?{question}",
    "Any update on {orders}? Status and delivery date, please.{question}",
    "Has {orders} arrived or shipped yet? I need the status and the date.{question}",
    "I'm waiting on {orders}. What's its status, and when does it arrive?{question}",
    "Can you track {orders} for me? Status plus delivery date, please.{question}",
    "What's the latest on {orders}? I'd like to know the status and the delivery date.{question}",
    "Please look up {orders}: is it on its way, and when will it be here?{question}",
    "Checking in on {orders}. Status and expected delivery, please.{question}",
    "Could you tell me where {orders} is and when I'll get it?{question}",
    "I'd like a status update on {orders}, with the delivery date.{question}",
)
MANY_TEMPLATES: tuple[str, ...] = (
    "Could you check {n} of my orders — status and delivery date of each? {orders}.{question}",
    "Where are my orders? For each, the status and the delivery date: {orders}.{question}",
    "Can you track {n} orders for me? Status and delivery date of each: {orders}.{question}",
    (
        "Please give me an update on these {n} orders, with status and delivery date: "
        "{orders}.{question}"
    ),
    "I'm waiting on {n} orders. For each, what's the status and the date? {orders}.{question}",
)
VAGUE_TEMPLATES: tuple[str, ...] = (
    "What's going on with {vague}? I'd like the status and the delivery date.{question}",
    "Can you check {vague} for me? Status and delivery date, please.{question}",
)
CANCEL_QUESTION = " If the one with the {noun} has already shipped, can I still cancel it?"
CANCELLATION_POLICY = ("cancellation", "", "any")
DELIVERED_SHARE = 0.75  # P(the order a dependent purchase hangs on has arrived)
FOLLOWUPS: tuple[str, ...] = ("order_detail", "reorder")
# another order asked about is the main request once more (its status and the card it was paid with)
CORE_FOLLOWUPS = frozenset({"order_detail"})


class OrderStatusConfig(OrderRequestConfig):
    n_items: Annotated[int, Clamp(high=4)] = Field(ge=1, description="orders asked about")
    n_distractors: int = Field(ge=0)
    policy_branches: int = Field(ge=1)
    detail_prob: Annotated[Share, Ramp.capped(0.1, 0.85)] = Field(
        description="P(a detail only get_order shows)"
    )


class OrderStatus(Scenario):
    name = "order_status"
    seed_id = 4
    Config = OrderStatusConfig
    lists_every_order = True

    def plan(self, config: OrderStatusConfig, rng: np.random.Generator) -> Plan:
        n_targets = between(rng, 1, config.n_items + 1)
        details = [
            pick(rng, DETAILS) if rng.random() < config.detail_prob else None
            for _ in range(n_targets)
        ]
        # a vague request ("my order") names one order; which details go with which order
        # would be lost for several
        vague = n_targets == 1 and bool(rng.random() < config.hidden_detail_share)
        statuses = [pick(rng, STATUSES) for _ in range(n_targets)]
        cancel_question = bool(rng.random() < 0.2 * (config.policy_branches - 1))
        if cancel_question:
            statuses[0] = "shipped"
        more = followups.draw(rng, FOLLOWUPS, config.n_intents - 1, config.difficulty)
        # no draw at share 0: the d0-1 tasks stay what they were before the knob
        twin = drawn_in_share(config.twin_order_share, rng)
        if twin:
            details[0] = "payment"  # which card paid tells the twins apart in get_order
        # drawn last, and not at share 0: every other draw is the one it was before it
        # (not with a vague request: its sentence would name the product the customer withholds)
        dependent = dependent_drawn(config.dependent_share, rng) and not vague
        delivered = False
        if dependent:
            details = [d if d is not None else pick(rng, DETAILS) for d in details]
            # the first order of a cancellation question has shipped: it is not delivered
            if not (cancel_question and n_targets == 1) and rng.random() < DELIVERED_SHARE:
                statuses[-1] = "delivered"
            delivered = statuses[-1] == "delivered"
        steps = int(vague) + 1 + sum(d is not None for d in details) + int(cancel_question)
        steps += DEPENDENT_COST * int(delivered)
        return Plan.with_followups(
            steps,
            more,
            core=CORE_FOLLOWUPS,
            details=details,
            vague=vague,
            statuses=statuses,
            cancel_question=cancel_question,
            twin=twin,
            dependent=dependent,
        )

    def build(
        self, config: OrderStatusConfig, plan: Plan, rng: np.random.Generator, ctx: GenContext
    ) -> Draft:
        """The orders asked about (each with its detail question), look-alikes and fillers;
        then one status block per order and the cancellation question when there is one."""
        world, targets, categories = self._world(config, plan, rng, ctx)
        asked = _status_requests(ctx, rng, plan, targets)
        prompt = compose(*_prompt_parts(rng, plan, asked), rng, config.typo_rate)
        reference, answer_facts, policies = asked.reference, asked.answer_facts, asked.policies
        purchase = None
        if plan["dependent"]:
            order, row = targets[-1]
            holds = order["status"] == "delivered"
            then = dependent_purchase(ctx, rng, row, "delivered", holds, config.typo_rate)
            prompt = followups.before_closer(prompt, [then.sentence])
            reference += then.reference
            purchase = then.purchase
        extra = followups.add_followups(
            plan["followups"],
            ctx,
            rng,
            world,
            set(categories),
            typo_rate=config.typo_rate,
            core=CORE_FOLLOWUPS,
        )
        extra.merge(reference, answer_facts, policies)
        prompt = extra.prompt(prompt)
        described = [f"{order_ref(o)}, with {line_phrase(ctx, r, rng)}" for o, r in targets]
        facts = {
            "order": join_words(described),
            "item": join_words([line_phrase(ctx, r, rng) for _, r in targets]),
        }
        relevant = [o["order_id"] for o, _ in targets] + [ctx.item_ids[r] for _, r in targets]
        goal = Goal(
            purchase=purchase or extra.purchase,
            user_facts=facts,
            answer_facts=answer_facts,
            relevant_policies=policies,
            relevant_ids=relevant + extra.relevant,
            typo_rate=config.typo_rate,
        )
        return Draft(prompt, goal, world.state(), reference, extra.addon_calls)

    def _world(
        self, config: OrderStatusConfig, plan: Plan, rng: np.random.Generator, ctx: GenContext
    ) -> tuple[World, list[tuple[dict[str, Any], int]], list[str]]:
        """The orders asked about as (order, row), their look-alikes, fillers and the first
        one's later twin."""
        details: list[str | None] = plan["details"]
        statuses: list[str] = plan["statuses"]
        world = World.new(ctx, rng)
        n = len(statuses)
        orders = AskedOrders.draw(ctx, rng, n, config.n_distractors, config.n_orders, plan["twin"])
        targets = [
            _target_order(
                ctx, rng, world, order_id, status, category, detail,
                variant=plan["dependent"] and k == n - 1,
            )
            for k, (order_id, status, category, detail) in enumerate(
                zip(orders.ids[:n], statuses, orders.categories, details, strict=True)
            )
        ]  # fmt: skip
        distractors = _look_alikes(ctx, rng, world, targets, orders.ids[n:], config.n_distractors)
        orders.fill(ctx, rng, world, [o for o, _ in targets], distractors)
        return world, targets, orders.categories


@dataclass
class _AskedAbout:
    """What the questions about the orders add up to, in call order."""

    reference: list[ToolCall] = field(default_factory=list)
    answer_facts: list[AnswerFact] = field(default_factory=list)
    policies: list[str] = field(default_factory=list)
    phrases: list[str] = field(default_factory=list)  # how the prompt names each order
    detail_asks: list[str] = field(default_factory=list)
    question: str = ""  # the cancellation question, when there is one


def _status_requests(
    ctx: GenContext,
    rng: np.random.Generator,
    plan: Plan,
    targets: list[tuple[dict[str, Any], int]],
) -> _AskedAbout:
    """The reference and answer of each order's status block (and detail), then of the
    cancellation question; how the prompt names each order."""
    asked = _AskedAbout()
    if plan["vague"]:
        asked.reference.append(ask_call(["order"], rng))
    asked.reference.append(call("list_orders"))
    for k, ((order, row), detail) in enumerate(zip(targets, plan["details"], strict=True)):
        # a twin is told apart by the day, not the month
        phrase = named_order(ctx, order, row, rng, by_day=plan["twin"] and not k)
        asked.answer_facts += status_facts(ctx, order, row)
        if detail is not None:
            phrase += f", and {DETAIL_QUESTIONS[detail]}"
            asked.detail_asks.append(DETAIL_QUESTIONS[detail])
            _ask_detail(ctx, order, row, detail, asked.reference, asked.answer_facts)
        asked.phrases.append(phrase)
    if plan["cancel_question"]:
        asked.question = _cancel_question(
            ctx, rng, targets[0], asked.reference, asked.answer_facts, asked.policies
        )
    return asked


def _prompt_parts(
    rng: np.random.Generator, plan: Plan, asked: _AskedAbout
) -> tuple[str, dict[str, str]]:
    """The prompt's template and values: the orders numbered when there are several; a
    vague request ("my order") asks its details in a sentence of their own."""
    phrases, question = asked.phrases, asked.question
    if len(phrases) > 1:
        orders_text = "; ".join(f"({k}) {p}" for k, p in enumerate(phrases, start=1))
    else:
        orders_text = phrases[0]
    if plan["vague"]:
        template = pick(rng, VAGUE_TEMPLATES)
        if asked.detail_asks:
            question = f" Also tell me {join_words(asked.detail_asks)}." + question
    else:
        template = pick(rng, TEMPLATES if len(phrases) == 1 else MANY_TEMPLATES)
    n = str(len(phrases))
    return template, {"orders": orders_text, "question": question, "vague": "my order", "n": n}


def _target_order(
    ctx: GenContext,
    rng: np.random.Generator,
    world: World,
    order_id: str,
    status: str,
    category: str,
    detail: str | None,
    *,
    variant: bool = False,
) -> tuple[dict[str, Any], int]:
    """An order asked about (one line of `category`) and its row; a price question buys one
    unit, an address question is often a gift, a payment question names the card used. With
    `variant`, a product with another variant in stock (a dependent purchase buys it)."""
    row = ctx.pick_any(rng, category)
    if variant:
        row = with_variant(ctx, rng, category, row)
    quantity = 1 if detail == "price" else between(rng, 1, 3)
    placed = placed_days_ago_for(status, rng)
    order = ctx.order(order_id, [row], [quantity], status, placed, user=world.user)
    if detail == "address" and rng.random() < 0.7:
        order["shipping_address"] = ctx.make_user(rng)["address"]  # a gift
    if detail == "payment":
        order["payment_method"] = paid_with(rng, world.user["payment_methods"])
    return order, row


def _look_alikes(
    ctx: GenContext,
    rng: np.random.Generator,
    world: World,
    targets: list[tuple[dict[str, Any], int]],
    ids: list[str],
    n_distractors: int,
) -> list[dict[str, Any]]:
    """Look-alikes: the same kind of product in another colour, another status and date."""
    distractors = []
    for k in range(n_distractors):
        other = look_alike(ctx, rng, targets[k % len(targets)][1])
        if other is None:
            continue
        status = pick(rng, STATUSES)
        placed = placed_days_ago_for(status, rng)
        distractors.append(ctx.order(ids[k], [other], [1], status, placed, user=world.user))
    return distractors


def _ask_detail(
    ctx: GenContext,
    order: dict[str, Any],
    row: int,
    detail: str,
    reference: list[ToolCall],
    answer_facts: list[AnswerFact],
) -> None:
    """A detail question (price, address, payment, ...) is answered from `get_order`."""
    reference.append(call("get_order", order_id=order["order_id"]))
    answer_facts.append(detail_fact(ctx, order, row, detail))


def _cancel_question(
    ctx: GenContext,
    rng: np.random.Generator,
    target: tuple[dict[str, Any], int],
    reference: list[ToolCall],
    answer_facts: list[AnswerFact],
    policies: list[str],
) -> str:
    """Can the (shipped) first order still be cancelled: the policy lookup, the question, and
    the verdict with the way out (its status fact already says "shipped")."""
    policy_id = ctx.policy_ids[CANCELLATION_POLICY]
    query = pick(rng, ("cancel shipped order", "cancellation policy shipped orders"))
    reference.append(policy_call(ctx, query, policy_id, policies))
    answer_facts += shipped_no_cancel_facts(ctx, *target)[1:]
    return CANCEL_QUESTION.format(noun=ctx.noun(target[1]))
