"""return: return (or exchange) items of delivered orders, respecting windows and final sale.

Each requested item is one of
* eligible for a return: the agent files `return_item` with the user's reason;
* eligible for an exchange to another size/colour: `get_product` shows the variants, then
  `exchange_item`;
* not eligible (final-sale category, or the return window for the user's membership closed):
  nothing may be filed, the agent reads the policy (`search_policy`) and the final answer says
  why (final sale, or the window length).
Harder variants: several items over several orders, look-alike items in other orders (same
product, other colour), a restocking-fee question, the reason left out of the prompt
(`return_item` needs one, so the agent must `ask_user`). `twin_order_share` of a cell's tasks (0
at d0-1, 0.2 a step, 1 from d6; `generators/strata.py` picks which) have the first item's order
bought twice: a later order of the same products (the same titles, listed first) is not the one
meant, and only the day the user gives ("I ordered on May 3") tells which order to act on.
From d3, `dependent_share` of a cell's tasks hang a purchase on the first item to return (or
the first refused one): "if the mug can go back, use the refund toward the mug in blue", or
"if it can't go back, at least order me the mug in blue" (`generators/dependent.py`); the
condition holds in 3 of 4 such tasks, whichever way it is put.

The module is called `returns` because `return` is a Python keyword; the scenario is "return".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any

import numpy as np
from pydantic import Field

from ecomrlve.generators import followups
from ecomrlve.generators.base import Draft, GenerationError, Plan, Scenario
from ecomrlve.generators.blocks import (
    World,
    about,
    ask_call,
    call,
    delivered_days_ago,
    fee_fact,
    filler_orders,
    final_sale_facts,
    line_phrase,
    look_alike,
    order_ref,
    order_when,
    returns_policy_call,
    spoken_day,
    twin_order,
    window_fact,
)
from ecomrlve.generators.context import GenContext
from ecomrlve.generators.dependent import COST as DEPENDENT_COST
from ecomrlve.generators.dependent import (
    dependent_drawn,
    dependent_purchase,
    with_variant,
)
from ecomrlve.generators.difficulty import Clamp
from ecomrlve.generators.draws import between, pick
from ecomrlve.generators.order_knobs import OrderRequestConfig
from ecomrlve.generators.order_requests import (
    ExchangeOption,
    OrderRequests,
    delivered_order,
    exchange_option,
)
from ecomrlve.generators.phrasing import join_words
from ecomrlve.generators.prompts import compose
from ecomrlve.generators.strata import drawn_in_share
from ecomrlve.tasks import AnswerFact, Goal, ToolCall

REASONS: tuple[str, ...] = (
    "it doesn't fit",
    "it arrived damaged",
    "I changed my mind",
    "it's not what I expected",
    "the colour looks different from the photos",
)
TEMPLATES: tuple[str, ...] = (
    "{requests_cap}.{reason}{question}",
    "I need some help with my orders: {requests}.{reason}{question}",
    "Could you sort this out for me? {requests_cap}.{reason}{question}",
    "Hello, returns question: {requests}.{reason}{question}",
    "I'd like to sort out some returns: {requests}.{reason}{question}",
    "Can you handle this for me? {requests_cap}.{reason}{question}",
    "A couple of items need to go back: {requests}.{reason}{question}",
    "Please take care of the following: {requests}.{reason}{question}",
    "I'm not happy with some things I bought: {requests}.{reason}{question}",
    "Please help with these orders: {requests}.{reason}{question}",
    "Here's the situation: {requests}.{reason}{question}",
    "I need to send some things back: {requests}.{reason}{question}",
)
FOLLOWUPS: tuple[str, ...] = ("refund", "order_detail", "reorder")
HOLDS_SHARE = 0.75  # P(a dependent purchase's condition holds)
FEE_QUESTIONS: tuple[str, ...] = (
    " Will I be charged a restocking fee for the {noun}?",
    " Is there a restocking fee on the {noun}?",
)


def refusal_facts(ctx: GenContext, order: dict, row: int, membership: str) -> list[AnswerFact]:
    """Why an item cannot be returned: final sale, or its window (and when it closed)."""
    category = ctx.category.value(row)
    subject = about(ctx, order, row, ctx.item_ids[row])
    rule = ctx.policies.return_rule(category, membership)
    if not rule.returnable:
        facts = final_sale_facts(category, subject)
        facts[0].say = f"The {ctx.noun(row)} can't be returned: {category} items are final sale."
        return facts
    days = delivered_days_ago(order)
    say = (
        f"The {ctx.noun(row)} can't be returned any more: its {rule.window_days}-day return "
        f"window closed {days - rule.window_days} days ago."
    )
    allowed = [str(days), str(days - rule.window_days)]
    return [
        AnswerFact(kind="verdict", value="return:no", say=say, **subject),
        window_fact(rule.window_days, allowed=allowed, required=False, **subject),
    ]


class ReturnConfig(OrderRequestConfig):
    n_items: Annotated[int, Clamp(high=3)] = Field(
        ge=1, description="items the user wants returned or exchanged"
    )
    n_distractors: int = Field(ge=0, description="look-alike items in other orders")
    policy_branches: int = Field(ge=1, description="rule dimensions: eligibility, fee, membership")


class Return(Scenario):
    name = "return"
    seed_id = 3
    Config = ReturnConfig
    lists_every_order = True

    def plan(self, config: ReturnConfig, rng: np.random.Generator) -> Plan:
        n_requests = between(rng, 1, config.n_items + 1)
        p_ineligible = 0.15 + 0.1 * (config.policy_branches - 1)
        kinds: list[str] = []
        for _ in range(n_requests):
            u = rng.random()
            if u < p_ineligible:
                kinds.append("ineligible")
            elif u < p_ineligible + 0.3 and "exchange" not in kinds and config.difficulty >= 2:
                kinds.append("exchange")
            else:
                kinds.append("return")
        fee_question = "return" in kinds and rng.random() < 0.15 * (config.policy_branches - 1)
        hide_reason = "return" in kinds and rng.random() < config.hidden_detail_share
        two_orders = n_requests > 1 and rng.random() < 0.5
        steps = (
            int(hide_reason)
            + 1
            + sum({"return": 1, "exchange": 2, "ineligible": 1}[k] for k in kinds)
            + int(fee_question)
        )
        more = followups.draw(rng, FOLLOWUPS, config.n_intents - 1, config.difficulty)
        # no draw at share 0: the d0-1 tasks stay what they were before the knob
        twin = drawn_in_share(config.twin_order_share, rng)
        # drawn last, and not at share 0: every other draw is the one it was before it; on the
        # first item to return, else the first refused one (an exchange is a swap already)
        bought_on = None
        if dependent_drawn(config.dependent_share, rng):
            order = [k for k, kind in enumerate(kinds) if kind == "return"]
            order += [k for k, kind in enumerate(kinds) if kind == "ineligible"]
            bought_on = order[0] if order else None
        # the customer buys if the return goes through, or if it is refused: the condition holds
        # in a share of tasks that does not fall as refusals grow with the difficulty
        holds = bought_on is not None and bool(rng.random() < HOLDS_SHARE)
        steps += DEPENDENT_COST * int(holds)
        return Plan.with_followups(
            steps,
            more,
            twin=twin,
            bought_on=bought_on,
            holds=holds,
            kinds=kinds,
            fee_question=fee_question,
            hide_reason=hide_reason,
            two_orders=two_orders,
        )

    def build(
        self, config: ReturnConfig, plan: Plan, rng: np.random.Generator, ctx: GenContext
    ) -> Draft:
        world = World.new(ctx, rng)
        used_categories: set[str] = set()
        items = [
            _pick_item(ctx, rng, kind, world.membership, used_categories) for kind in plan["kinds"]
        ]
        bought_on = plan["bought_on"]
        if bought_on is not None:  # the same category: the same return rule
            item = items[bought_on]
            item.row = with_variant(ctx, rng, ctx.category.value(item.row), item.row)
        orders = _place_orders(ctx, rng, config, world, items, plan["two_orders"], used_categories)
        twin = plan["twin"]
        if twin:
            taken = {o["order_id"] for o in world.orders}
            twin_id = next(i for i in ctx.order_ids(rng, len(taken) + 1) if i not in taken)
            world.orders.append(twin_order(ctx, rng, twin_id, items[0].order, world.user))

        asked = _Asked(ctx, rng, world.membership, reason=pick(rng, REASONS))
        if plan["hide_reason"]:
            asked.requests.reference.append(ask_call(["reason"], rng))
        asked.requests.reference.append(call("list_orders"))
        for k, it in enumerate(items):
            line = line_phrase(ctx, it.row, rng)  # drawn first: the d0-1 tasks stay as they were
            # a twin is told apart by the day, not the month
            when = f"on {spoken_day(it.order['placed'])}" if twin and not k else None
            phrase = f"{line} I ordered {when or order_when(it.order, rng)}"
            asked.said.append(_REQUESTS[it.kind](asked, it, phrase))
        question = asked.fee_question(items) if plan["fee_question"] else ""
        # read the policy before acting on anything
        list_at = 1 if plan["hide_reason"] else 0
        asked.requests.reference[list_at + 1 : list_at + 1] = asked.policy_calls
        returning = bool(asked.requests.returns)
        reason_text = (
            "" if plan["hide_reason"] or not returning else f" The reason: {asked.reason}."
        )
        text = join_words(asked.said)
        prompt = compose(
            pick(rng, TEMPLATES),
            {
                "requests": text,
                "requests_cap": text[0].upper() + text[1:],
                "reason": reason_text,
                "question": question,
            },
            rng,
            config.typo_rate,
        )
        requests = asked.requests
        purchase = None
        if bought_on is not None:
            it = items[bought_on]
            # "returned" buys when the item goes back, "refused" when it cannot
            outcome = "returned" if (it.kind == "return") == plan["holds"] else "refused"
            then = dependent_purchase(ctx, rng, it.row, outcome, plan["holds"], config.typo_rate)
            prompt = followups.before_closer(prompt, [then.sentence])
            requests.reference += then.reference
            purchase = then.purchase
        extra = followups.add_followups(
            plan["followups"], ctx, rng, world, used_categories, typo_rate=config.typo_rate
        )
        extra.merge(requests.reference, requests.answer_facts, requests.policies)
        prompt = extra.prompt(prompt)
        facts = {
            "reason": asked.reason,
            "item": line_phrase(ctx, items[0].row, rng),
            "order": order_ref(items[0].order),
        }
        relevant = [o["order_id"] for o in orders] + [ctx.item_ids[it.row] for it in items]
        goal = Goal(
            **requests.goal_parts(),
            purchase=purchase or extra.purchase,
            user_facts=facts,
            relevant_ids=relevant + extra.relevant,
            typo_rate=config.typo_rate,
        )
        return Draft(prompt, goal, world.state(), requests.reference, extra.addon_calls)


@dataclass
class _Item:
    """One requested item: its catalog row, what is asked (`return`, `exchange` or
    `ineligible`), the variant to exchange it for, and the order it is placed in."""

    row: int
    kind: str
    option: ExchangeOption | None = None
    order: dict[str, Any] = field(default_factory=dict)


@dataclass
class _Asked:
    """What the requests of one task add up to while they are built, one item at a time."""

    ctx: GenContext
    rng: np.random.Generator
    membership: str
    reason: str
    requests: OrderRequests = field(default_factory=OrderRequests)
    policy_calls: list[ToolCall] = field(default_factory=list)  # read before any write
    said: list[str] = field(default_factory=list)

    def fee_question(self, items: list[_Item]) -> str:
        """The restocking-fee question about the first item to return: its policy read and
        the fee fact; returns the sentence the user adds."""
        ctx, asked = self.ctx, next(it for it in items if it.kind == "return")
        category = ctx.category.value(asked.row)
        self.policy_calls.append(
            returns_policy_call(ctx, category, self.membership, self.rng, self.requests.policies)
        )
        fee = ctx.policies.return_rule(category, self.membership).restocking_fee
        noun = ctx.noun(asked.row)
        told = (
            f"Returning the {noun} costs a {round(fee * 100)}% restocking fee."
            if fee
            else f"There's no restocking fee on the {noun}."
        )
        subject = about(ctx, asked.order, asked.row, ctx.item_ids[asked.row])
        self.requests.answer_facts.append(fee_fact(fee, told, **subject))
        return pick(self.rng, FEE_QUESTIONS).format(noun=noun)


def _ask_return(asked: _Asked, it: _Item, phrase: str) -> str:
    asked.requests.return_item(asked.ctx, it.order, it.row, asked.reason)
    return f"I want to return {phrase}"


def _ask_exchange(asked: _Asked, it: _Item, phrase: str) -> str:
    option = it.option  # _pick_item draws one for every exchange
    if option is None:
        raise ValueError(f"exchange of row {it.row} without a variant to exchange for")
    asked.requests.exchange_item(asked.ctx, it.order, it.row, option)
    return f"please exchange {phrase} for {option.words}"


def _ask_ineligible(asked: _Asked, it: _Item, phrase: str) -> str:
    """Nothing may be filed: the agent reads the rule and the answer says why not."""
    ctx, requests = asked.ctx, asked.requests
    category = ctx.category.value(it.row)
    asked.policy_calls.append(
        returns_policy_call(ctx, category, asked.membership, asked.rng, requests.policies)
    )
    requests.answer_facts += refusal_facts(ctx, it.order, it.row, asked.membership)
    return f"I'd like to return {phrase}"


_REQUESTS: dict[str, Callable[[_Asked, _Item, str], str]] = {
    "return": _ask_return,
    "exchange": _ask_exchange,
    "ineligible": _ask_ineligible,
}


# ---- item and order draws ----------------------------------------------------------------------
def _pick_item(
    ctx: GenContext, rng: np.random.Generator, kind: str, membership: str, used: set[str]
) -> _Item:
    if kind == "ineligible" and rng.random() < 0.4:
        pool = [c for c in ctx.final_sale_categories if c not in used]
        if pool:
            category = pick(rng, pool)
            used.add(category)
            return _Item(ctx.pick_any(rng, category), kind)
    pool = [c for c in ctx.returnable_categories if c not in used]
    if not pool:
        raise GenerationError("no returnable category left")
    category = pick(rng, pool)
    used.add(category)
    if kind != "exchange":
        return _Item(ctx.pick_any(rng, category), kind)
    for _ in range(12):
        row = ctx.pick_any(rng, category)
        option = exchange_option(ctx, rng, row)
        if option is not None:
            return _Item(row, kind, option)
    raise GenerationError(f"no {category} with an in-stock variant to exchange for")


def _place_orders(
    ctx: GenContext,
    rng: np.random.Generator,
    config: ReturnConfig,
    world: World,
    items: list[_Item],
    two_orders: bool,
    used_categories: set[str],
) -> list[dict[str, Any]]:
    """The requested items in one or two delivered orders (each item's `order` is set),
    look-alike orders and fillers as the world's history; returns the requested orders.

    Each order's delivery date is drawn inside every eligible item's window and past every
    window-closed item's window."""
    n_orders = 2 if two_orders else 1
    groups = [items[k::n_orders] for k in range(n_orders)]
    ids = ctx.order_ids(rng, n_orders + config.n_orders + config.n_distractors)
    orders = []
    for order_id, group in zip(ids[:n_orders], groups, strict=True):
        days = _delivery_age(ctx, rng, group, world.membership)
        order = delivered_order(ctx, rng, order_id, [it.row for it in group], days, world.user)
        for it in group:
            it.order = order
        orders.append(order)
    n_distractors = min(config.n_distractors, len(items) * 2)
    distractors = []
    for k in range(n_distractors):
        row = look_alike(ctx, rng, items[k % len(items)].row)
        if row is not None:
            placed = between(rng, 10, 120)
            distractors.append(
                ctx.order(ids[n_orders + k], [row], [1], "delivered", placed, user=world.user)
            )
    fillers = filler_orders(ctx, rng, ids[n_orders + n_distractors :], used_categories)
    world.orders = orders + distractors + fillers
    return orders


def _delivery_age(
    ctx: GenContext, rng: np.random.Generator, group: list[_Item], membership: str
) -> int:
    """Days since delivery that make each item of one order (in)eligible as planned."""
    low, high = 1, 150
    for it in group:
        rule = ctx.policies.return_rule(ctx.category.value(it.row), membership)
        if not rule.returnable:
            continue
        if it.kind == "ineligible":
            low = max(low, rule.window_days + 1)
        else:
            high = min(high, rule.window_days)
    if low > high:
        raise GenerationError("no delivery date fits every item of the order")
    return between(rng, low, min(high, low + 45) + 1)
