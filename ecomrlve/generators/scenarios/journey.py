"""journey: two or three intents in one conversation, e.g. status, then return, then a new buy.

Stories are fixed, coherent sequences of intents about one order or one product category:
"has my jacket arrived? then I want to return it, and buy a replacement". Each intent adds its
own calls (status: none beyond `list_orders`; return: `return_item`; exchange: `get_product` +
`exchange_item`; cancel: `cancel_order`; policy: `search_policy`; buy: `search` +
`add_to_cart` + `checkout`) and its part of the goal. `n_intents` picks two- or three-intent
stories; with probability `intent_switch_prob` the last intent is not in the prompt: the
simulated user reveals it mid-conversation (`Goal.intent_switch`), and the plan only does this
when the reference reaches that intent after the env has revealed it (after an `ask_user`, or
from assistant turn 3 on).

Success: every intent's effect and facts together (returns / exchanges / cancellations /
purchase / answer facts), nothing else changed.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from pydantic import Field

from ecomrlve.env.user import INTENT_SWITCH_TURN
from ecomrlve.generators import followups
from ecomrlve.generators.base import Draft, GenerationError, Plan, Scenario, ScenarioConfig
from ecomrlve.generators.blocks import (
    ProductNeed,
    World,
    ask_call,
    call,
    cancelled_fact,
    filler_orders,
    line_phrase,
    order_ref,
    order_when,
    placed_days_ago_for,
    query_for,
    returns_policy_call,
    status_facts,
    window_fact,
)
from ecomrlve.generators.context import GenContext
from ecomrlve.generators.draws import between, pick
from ecomrlve.generators.phrasing import render
from ecomrlve.generators.prompts import frame
from ecomrlve.generators.scenarios.returns import Return
from ecomrlve.tasks import (
    AnswerFact,
    ExchangeSpec,
    Goal,
    PurchaseSpec,
    ReturnSpec,
    Slot,
    ToolCall,
)

INTENT_CALLS: dict[str, int] = {
    "status": 0,
    "return": 1,
    "exchange": 2,
    "cancel": 1,
    "policy": 1,
    "buy": 3,
}
ORDER_INTENTS = frozenset({"status", "return", "exchange", "cancel"})
STORIES: dict[int, tuple[tuple[str, ...], ...]] = {
    2: (
        ("status", "return"),
        ("status", "cancel"),
        ("return", "buy"),
        ("cancel", "buy"),
        ("policy", "return"),
        ("status", "exchange"),
    ),
    3: (
        ("status", "return", "buy"),
        ("status", "exchange", "buy"),
        ("policy", "return", "buy"),
        ("status", "cancel", "buy"),
    ),
}
REASONS: tuple[str, ...] = ("it doesn't fit", "it arrived damaged", "I changed my mind")
CANCEL_REASONS: tuple[str, ...] = ("it takes too long to arrive", "I ordered the wrong one")
BUY_KEYS = ["brand", "color", "size"]
# Each intent's sentence in several forms: a story of 2-3 intents has 16-64 request frames.
STATUS_SAYS: tuple[str, ...] = (
    "Can you check the status and delivery date of my order with {thing} (placed {when})?",
    "What's the status of my order with {thing} (placed {when}), and when does it arrive?",
    "Could you look up my order with {thing} (placed {when}) — status and delivery date?",
    "Where is my order with {thing} (placed {when})? I'd like the status and the date.",
)
RETURN_SAYS: tuple[str, ...] = (
    "I want to return {it}{reason}.",
    "Please start a return for {it}{reason}.",
    "I'd like to send back {it}{reason}.",
    "Can you set up a return for {it}{reason}?",
)
EXCHANGE_SAYS: tuple[str, ...] = (
    "Then please exchange it for {words}.",
    "After that, swap it for {words}, please.",
    "I'd rather exchange it for {words}.",
    "Could you exchange it for {words}?",
)
CANCEL_SAYS: tuple[str, ...] = (
    "Please cancel {it}{reason}.",
    "I'd like to cancel {it}{reason}.",
    "Can you cancel {it}{reason}?",
    "Go ahead and cancel {it}{reason}.",
)
POLICY_SAYS: tuple[str, ...] = (
    "How long do I have to return {category}?",
    "What's the return window for {category}?",
    "How many days do I get to return {category}?",
    "For {category}, how many days do I have to send them back?",
)
BUY_SAYS: tuple[str, ...] = (
    "Also, please order me a new one: {what}.",
    "And please buy me a replacement: {what}.",
    "Then order a new one for me: {what}.",
    "I'll need a new one too, so please order {what}.",
)


class JourneyConfig(ScenarioConfig):
    n_intents: int = Field(ge=2, le=3)
    n_orders: int = Field(ge=1)
    intent_switch_prob: float = Field(ge=0.0, le=1.0)
    search_top_k: int = Field(ge=1, le=50)


class Journey(Scenario):
    name = "journey"
    Config = JourneyConfig

    def tuned(self, difficulty: int, values: dict[str, Any]) -> dict[str, Any]:
        return {"n_intents": max(2, min(3, values["n_intents"]))}

    def plan(self, config: JourneyConfig, rng: np.random.Generator) -> Plan:
        # three intents from d5 on, more often as d grows
        three = config.n_intents == 3 and rng.random() < min(
            0.9, 0.4 + 0.1 * (config.difficulty - 5)
        )
        n = 3 if three else 2
        story = pick(rng, STORIES[n])
        asks_reason = any(i in ("return", "cancel") for i in story)
        hide_reason = asks_reason and bool(rng.random() < config.hidden_detail_share)
        uses_orders = any(i in ORDER_INTENTS for i in story)
        # where the last intent's first call sits in the reference: the env reveals a switched
        # intent in the reply to an ask_user, or after assistant turn INTENT_SWITCH_TURN
        first_of_last = int(hide_reason) + sum(INTENT_CALLS[i] for i in story[:-1])
        first_of_last += int(any(i in ORDER_INTENTS for i in story[:-1]))
        revealed_in_time = hide_reason or first_of_last >= INTENT_SWITCH_TURN
        switch = revealed_in_time and bool(rng.random() < config.intent_switch_prob)
        # one more question about another order (its id comes from the listed orders)
        more = followups.draw(rng, ("order_detail",) if uses_orders else (), 1, config.difficulty)
        steps = int(hide_reason) + int(uses_orders) + sum(INTENT_CALLS[i] for i in story)
        steps += followups.cost(more)
        return Plan(
            steps,
            {"story": story, "hide_reason": hide_reason, "switch": switch, "followups": more},
        )

    def build(
        self, config: JourneyConfig, plan: Plan, rng: np.random.Generator, ctx: GenContext
    ) -> Draft:
        story: tuple[str, ...] = plan["story"]
        world = World.new(ctx, rng)
        membership = world.membership
        order_intent = next((i for i in story if i in ORDER_INTENTS and i != "status"), "status")
        category = pick(rng, ctx.returnable_categories)
        row = ctx.pick_any(rng, category)
        exchange = None
        if order_intent == "exchange":
            exchange = Return._exchange_option(ctx, rng, row)
            if exchange is None:
                raise GenerationError("no variant to exchange for")
        ids = ctx.order_ids(rng, config.n_orders + 1)
        if order_intent in ("return", "exchange"):
            window = ctx.policies.return_rule(category, membership).window_days
            days = between(rng, 1, window + 1)
            transit = between(rng, 2, 6)
            order = ctx.order(
                ids[0],
                [row],
                [1],
                "delivered",
                days + transit,
                transit_days=transit,
                user=world.user,
            )
        else:
            status = pick(rng, ("pending", "processing"))
            order = ctx.order(
                ids[0], [row], [1], status, placed_days_ago_for(status, rng), user=world.user
            )
        world.orders = [order, *filler_orders(ctx, rng, ids[1:], {category})]
        item_id, order_id = ctx.item_ids[row], order["order_id"]
        thing = line_phrase(ctx, row, rng)
        when = order_when(order, rng)
        reason = pick(rng, CANCEL_REASONS if order_intent == "cancel" else REASONS)

        reference: list[ToolCall] = []
        if plan["hide_reason"]:
            reference.append(ask_call(["reason"], rng))
        sentences: list[str] = []
        answer_facts: list[AnswerFact] = []
        policies: list[str] = []
        returns, exchanges, cancel, slots = [], [], [], []
        relevant = [order_id, item_id]
        listed = False
        reason_text = "" if plan["hide_reason"] else f" ({reason})"

        def say(template: str, **values: str) -> None:
            sentences.append(render(template, values, rng, config.typo_rate))

        for intent in story:
            if intent in ORDER_INTENTS and not listed:
                reference.append(call("list_orders"))
                listed = True
            mentioned = bool(sentences) and story[0] == "status"
            if intent == "status":
                say(pick(rng, STATUS_SAYS), thing=thing, when=when)
                # the story may cancel it afterwards: "cancelled" is then allowed too
                cancelled = "cancel" in story
                answer_facts += status_facts(
                    ctx,
                    order,
                    row,
                    allowed=("cancelled",) if cancelled else (),
                    then_cancelled=cancelled,
                )
            elif intent == "return":
                it = "it" if mentioned else f"{thing} I ordered {when}"
                say(pick(rng, RETURN_SAYS), it=it, reason=reason_text)
                reference.append(
                    call("return_item", order_id=order_id, item_id=item_id, reason=reason)
                )
                returns.append(ReturnSpec(order_id=order_id, item_id=item_id))
            elif intent == "exchange":
                new_row, words, acceptable = exchange
                say(pick(rng, EXCHANGE_SAYS), words=words)
                reference += [
                    call("get_product", item_id=item_id),
                    call(
                        "exchange_item",
                        order_id=order_id,
                        item_id=item_id,
                        new_item_id=ctx.item_ids[new_row],
                    ),
                ]
                exchanges.append(
                    ExchangeSpec(
                        order_id=order_id, item_id=item_id, acceptable_new=ctx.ids(acceptable)
                    )
                )
            elif intent == "cancel":
                it = "it" if mentioned else f"my order with {thing} (placed {when})"
                say(pick(rng, CANCEL_SAYS), it=it, reason=reason_text)
                reference.append(call("cancel_order", order_id=order_id, reason=reason))
                cancel.append(order_id)
                answer_facts.append(cancelled_fact(ctx, order, row, was=order["status"]))
            elif intent == "policy":
                say(pick(rng, POLICY_SAYS), category=category)
                reference.append(returns_policy_call(ctx, category, membership, rng, policies))
                window = ctx.policies.return_rule(category, membership).window_days
                told = f"You have {window} days from delivery to return {category}."
                answer_facts.append(window_fact(window, told))
            else:  # buy a replacement of the same kind
                target = ctx.pick_in_stock(rng, category)
                need = ProductNeed.build(ctx, target, BUY_KEYS, rng)
                search, good = need.search(ctx, query_for(ctx, target, rng), config.search_top_k)
                pick_row = good[0]
                reference += [
                    search,
                    call("add_to_cart", item_id=ctx.item_ids[pick_row], quantity=1),
                    call("checkout"),
                ]
                slots.append(Slot(acceptable=need.acceptable_ids(ctx), quantity=1))
                relevant.append(ctx.item_ids[pick_row])
                say(pick(rng, BUY_SAYS), what=f"{category} {need.phrase(rng)}")
        switch_text = None
        if plan["switch"]:
            switch_text = sentences.pop()
        prompt = frame(" ".join(sentences), rng, config.typo_rate)
        more = followups.add_followups(
            plan["followups"], ctx, rng, world, {category}, typo_rate=config.typo_rate
        )
        more.merge(reference, answer_facts, policies)
        slots += more.slots
        prompt = more.prompt(prompt)
        relevant += more.relevant
        goal = Goal(
            user_facts={
                "reason": reason,
                "order": f"{order_ref(order)}, with {thing}",
                "item": thing,
            },
            purchase=PurchaseSpec(slots=slots) if slots else None,
            cancel=cancel,
            returns=returns,
            exchanges=exchanges,
            answer_facts=answer_facts,
            relevant_policies=policies,
            relevant_ids=relevant,
            typo_rate=config.typo_rate,
            intent_switch=switch_text,
        )
        return Draft(prompt, goal, world.state(), reference)
