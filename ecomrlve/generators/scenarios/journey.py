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

Harder variant (`twin_order_share`, 0 at d0-1, 0.2 a step, 1 from d6, placed over the cell's
indexes by `generators/strata.py`): every story writes on its order, and that order gets a later
twin of the same product (listed first; only the day the user gives tells them apart); an
exchange then asks for another variant than the first `get_product` lists. The `order_detail`
follow-up (a second order named in the request) is placed the same way from d2, so it comes
with a twin, not on an easy task.

Success: every intent's effect and facts together (returns / exchanges / cancellations /
purchase / answer facts), nothing else changed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any

import numpy as np
from pydantic import Field

from ecomrlve.env.episode.user import INTENT_SWITCH_TURN
from ecomrlve.generators import followups
from ecomrlve.generators.base import Draft, GenerationError, Plan, Scenario, ScenarioConfig
from ecomrlve.generators.blocks import (
    VARIANT_KEYS,
    ProductNeed,
    World,
    ask_call,
    call,
    filler_orders,
    line_phrase,
    order_ref,
    order_when,
    placed_days_ago_for,
    query_for,
    returns_policy_call,
    spoken_day,
    status_facts,
    twin_order,
    window_fact,
)
from ecomrlve.generators.context import GenContext
from ecomrlve.generators.difficulty import (
    Clamp,
    HistoryLength,
    Ramp,
    SearchTopK,
    Share,
)
from ecomrlve.generators.draws import between, pick
from ecomrlve.generators.order_requests import (
    ExchangeOption,
    OrderRequests,
    delivered_order,
    exchange_option,
)
from ecomrlve.generators.phrasing import render
from ecomrlve.generators.prompts import frame
from ecomrlve.generators.strata import drawn_in_share
from ecomrlve.tasks import (
    Goal,
    PurchaseSpec,
    Slot,
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
    n_intents: Annotated[int, Clamp(low=2, high=3)] = Field(ge=2, le=3)
    n_orders: HistoryLength
    intent_switch_prob: Share
    search_top_k: SearchTopK
    twin_order_share: Annotated[Share, Ramp.rising()] = Field(
        description="share of tasks whose order has a later twin, told by date (and an exchange "
        "asks for another variant than the first listed)",
    )


class Journey(Scenario):
    name = "journey"
    seed_id = 7
    Config = JourneyConfig

    def lists_orders(self, plan: Plan) -> bool:
        return any(intent in ORDER_INTENTS for intent in plan["story"])

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
        # (from d2, where the twin share starts, placed like it: the tasks that ask about a
        # second order are among those with a twin, so an easy task names one order only; a coin
        # at d0-1 keeps those tasks what they were)
        allowed = ("order_detail",) if uses_orders else ()
        more = followups.draw(rng, allowed, 1, config.difficulty, placed=config.difficulty >= 2)
        steps = int(hide_reason) + int(uses_orders) + sum(INTENT_CALLS[i] for i in story)
        # every story writes on its order (return, exchange or cancel); no draw at share 0, so
        # the d0-1 tasks stay what they were before the knob
        twin = drawn_in_share(config.twin_order_share, rng)
        return Plan.with_followups(
            steps,
            more,
            story=story,
            hide_reason=hide_reason,
            switch=switch,
            twin=twin,
        )

    def build(
        self, config: JourneyConfig, plan: Plan, rng: np.random.Generator, ctx: GenContext
    ) -> Draft:
        story: tuple[str, ...] = plan["story"]
        trip = _order_of_story(ctx, rng, config, story, plan["twin"])
        thing = line_phrase(ctx, trip.row, rng)
        # a twin is told apart by the day, not the month
        when = f"on {spoken_day(trip.order['placed'])}" if plan["twin"] else None
        when = when or order_when(trip.order, rng)
        reason = pick(rng, CANCEL_REASONS if trip.order_intent == "cancel" else REASONS)
        told = _Told(trip, ctx, rng, config, thing, when, reason, plan["hide_reason"])
        if plan["hide_reason"]:
            told.requests.reference.append(ask_call(["reason"], rng))
        for intent in story:
            if intent in ORDER_INTENTS and not told.listed:
                told.requests.reference.append(call("list_orders"))
                told.listed = True
            told.mentioned = bool(told.sentences) and story[0] == "status"
            _INTENTS[intent](told, story)
        switch_text = told.sentences.pop() if plan["switch"] else None
        prompt = frame(" ".join(told.sentences), rng, config.typo_rate)
        requests = told.requests
        more = followups.add_followups(
            plan["followups"], ctx, rng, trip.world, {trip.category}, typo_rate=config.typo_rate
        )
        more.merge(requests.reference, requests.answer_facts, requests.policies)
        slots = told.slots + more.slots
        prompt = more.prompt(prompt)
        goal = Goal(
            **requests.goal_parts(),
            user_facts={
                "reason": reason,
                "order": f"{order_ref(trip.order)}, with {told.thing}",
                "item": told.thing,
            },
            purchase=PurchaseSpec(slots=slots) if slots else None,
            relevant_ids=told.relevant + more.relevant,
            typo_rate=config.typo_rate,
            intent_switch=switch_text,
        )
        return Draft(prompt, goal, trip.world.state(), requests.reference, more.addon_calls)


@dataclass
class _Trip:
    """The order a story is about: its one line `row` (of `category`), the variant an exchange
    asks for, and the world it sits in. `order_intent` is the story's write on it."""

    world: World
    order: dict[str, Any]
    row: int
    category: str
    order_intent: str
    exchange: ExchangeOption | None


def _order_of_story(
    ctx: GenContext,
    rng: np.random.Generator,
    config: JourneyConfig,
    story: tuple[str, ...],
    twin: bool,
) -> _Trip:
    """A delivered order inside its return window when the story returns or exchanges, else
    a pending or processing one; filler orders in other categories around it. With `twin`, a
    later order of the same product too (listed first; only the day the user gives tells them
    apart), and an exchange asks for another variant than the first `get_product` lists."""
    world = World.new(ctx, rng)
    order_intent = next((i for i in story if i in ORDER_INTENTS and i != "status"), "status")
    category = pick(rng, ctx.returnable_categories)
    row = ctx.pick_any(rng, category)
    exchange = None
    if order_intent == "exchange":
        rng.random()  # the draw of the coin this replaced: the d0-1 tasks stay byte-identical
        exchange = exchange_option(ctx, rng, row, first_listed=not twin)
        if exchange is None:
            raise GenerationError("no variant to exchange for")
    ids = ctx.order_ids(rng, config.n_orders + 1)
    if order_intent in ("return", "exchange"):
        window = ctx.policies.return_rule(category, world.membership).window_days
        days = between(rng, 1, window + 1)
        order = delivered_order(ctx, rng, ids[0], [row], days, world.user)
    else:
        status = pick(rng, ("pending", "processing"))
        placed = placed_days_ago_for(status, rng)
        order = ctx.order(ids[0], [row], [1], status, placed, user=world.user)
    world.orders = [order, *filler_orders(ctx, rng, ids[1:], {category})]
    if twin:
        taken = {o["order_id"] for o in world.orders}
        twin_id = next(i for i in ctx.order_ids(rng, len(taken) + 1) if i not in taken)
        world.orders.append(twin_order(ctx, rng, twin_id, order, world.user))
    return _Trip(world, order, row, category, order_intent, exchange)


@dataclass
class _Told:
    """A story while it is told, one intent at a time: the sentences, the calls and goal parts
    (`requests`), the purchase slots. `mentioned`: an earlier sentence named the order."""

    trip: _Trip
    ctx: GenContext
    rng: np.random.Generator
    config: JourneyConfig
    thing: str  # how the user names the order's item
    when: str  # and when it was ordered
    reason: str
    hide_reason: bool
    requests: OrderRequests = field(default_factory=OrderRequests)
    sentences: list[str] = field(default_factory=list)
    slots: list[Slot] = field(default_factory=list)
    relevant: list[str] = field(default_factory=list)
    listed: bool = False
    mentioned: bool = False

    def __post_init__(self) -> None:
        self.relevant = [self.trip.order["order_id"], self.ctx.item_ids[self.trip.row]]

    @property
    def reason_text(self) -> str:
        return "" if self.hide_reason else f" ({self.reason})"

    def say(self, template: str, **values: str) -> None:
        self.sentences.append(render(template, values, self.rng, self.config.typo_rate))


def _tell_status(told: _Told, story: tuple[str, ...]) -> None:
    told.say(pick(told.rng, STATUS_SAYS), thing=told.thing, when=told.when)
    # the story may cancel it afterwards: "cancelled" is then allowed too
    cancelled = "cancel" in story
    told.requests.answer_facts += status_facts(
        told.ctx,
        told.trip.order,
        told.trip.row,
        allowed=("cancelled",) if cancelled else (),
        then_cancelled=cancelled,
    )


def _tell_return(told: _Told, story: tuple[str, ...]) -> None:
    it = "it" if told.mentioned else f"{told.thing} I ordered {told.when}"
    told.say(pick(told.rng, RETURN_SAYS), it=it, reason=told.reason_text)
    told.requests.return_item(told.ctx, told.trip.order, told.trip.row, told.reason)


def _tell_exchange(told: _Told, story: tuple[str, ...]) -> None:
    option = told.trip.exchange  # drawn with the order for every story that exchanges
    if option is None:
        raise ValueError("an exchange intent without a variant to exchange for")
    told.say(pick(told.rng, EXCHANGE_SAYS), words=option.words)
    told.requests.exchange_item(told.ctx, told.trip.order, told.trip.row, option)


def _tell_cancel(told: _Told, story: tuple[str, ...]) -> None:
    it = "it" if told.mentioned else f"my order with {told.thing} (placed {told.when})"
    told.say(pick(told.rng, CANCEL_SAYS), it=it, reason=told.reason_text)
    told.requests.cancel_order(told.ctx, told.trip.order, told.trip.row, told.reason)


def _tell_policy(told: _Told, story: tuple[str, ...]) -> None:
    ctx, category, membership = told.ctx, told.trip.category, told.trip.world.membership
    told.say(pick(told.rng, POLICY_SAYS), category=category)
    requests = told.requests
    requests.reference.append(
        returns_policy_call(ctx, category, membership, told.rng, requests.policies)
    )
    window = ctx.policies.return_rule(category, membership).window_days
    said = f"You have {window} days from delivery to return {category}."
    requests.answer_facts.append(window_fact(window, said))


def _tell_buy(told: _Told, story: tuple[str, ...]) -> None:
    """A replacement of the same kind: search, add to cart, check out."""
    ctx, rng, category = told.ctx, told.rng, told.trip.category
    target = ctx.pick_in_stock(rng, category)
    need = ProductNeed.build(ctx, target, VARIANT_KEYS, rng)
    search, good = need.search(ctx, query_for(ctx, target, rng), told.config.search_top_k)
    chosen = ctx.item_ids[good[0]]
    told.requests.reference += [
        search,
        call("add_to_cart", item_id=chosen, quantity=1),
        call("checkout"),
    ]
    told.slots.append(Slot(acceptable=need.acceptable_ids(ctx), quantity=1))
    told.relevant.append(chosen)
    told.say(pick(rng, BUY_SAYS), what=f"{category} {need.phrase(rng)}")


_INTENTS: dict[str, Callable[[_Told, tuple[str, ...]], None]] = {
    "status": _tell_status,
    "return": _tell_return,
    "exchange": _tell_exchange,
    "cancel": _tell_cancel,
    "policy": _tell_policy,
    "buy": _tell_buy,
}
