"""product_discovery: find products meeting m constraints and answer with `recommend`.

The user wants a product of one category with `n_constraints - 1` attribute constraints (brand,
colour, size, price cap, rating floor, ship days). Harder variants:
* details left out of the prompt (the agent must `ask_user`);
* a constraint given by reference to a past order ("same size as the tee I bought in May"),
  so the agent must `list_orders`;
* a first choice that exists but is out of stock, with a stated fallback, so the strict search
  comes back empty and a relaxed one follows;
* a bulk quantity: only items with that many units in stock count, and stock is only shown
  by `get_product`, so every recommended item is checked;
* a delivery deadline given as a day ("it has to arrive by May 9"), in `deadline_share` of a
  cell's tasks (0 at d0-1, 0.2 a step, 1 from d6; `generators/strata.py` picks which): the
  `max_ship_days` filter is the days from today (the system prompt's date) to that day, and the
  first hits of a search without it include an item that would arrive too late;
* from d3, in `dependent_share` of a cell's tasks (`generators/dependent.py`: 0.25 a step, all
  from d6), the customer also orders the pick ("then order two of your top pick"): the purchase
  depends on what the search found, so `add_to_cart` and `checkout` are core steps.

Success: the final `recommend` names `n_recommend`..3 ids, all in the acceptable set computed
over the whole catalog with `Catalog.filter_mask` (plus the stock floor for bulk requests).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Annotated, Any

import numpy as np
from pydantic import Field

from ecomrlve.generators import followups
from ecomrlve.generators.base import Draft, GenerationError, Plan, Scenario, ScenarioConfig
from ecomrlve.generators.blocks import (
    ATTRIBUTE_KEYS,
    VARIANT_KEYS,
    ProductNeed,
    World,
    ask_call,
    call,
    constraint_values,
    filler_orders,
    hidden_subset,
    line_phrase,
    order_when,
    query_for,
)
from ecomrlve.generators.context import GenContext, today
from ecomrlve.generators.dependent import DEPENDENT_RAMP, dependent_drawn
from ecomrlve.generators.difficulty import (
    Clamp,
    HistoryLength,
    IntentCount,
    Ramp,
    SearchTopK,
    Share,
)
from ecomrlve.generators.draws import below, between, pick
from ecomrlve.generators.phrasing import FACT_KEY, constraint_phrase, render, spoken_date
from ecomrlve.generators.prompts import compose, hidden_signal
from ecomrlve.generators.strata import drawn_in_share
from ecomrlve.tasks import Goal, PurchaseSpec, RecommendSpec, Slot, ToolCall

TEMPLATES: tuple[str, ...] = (
    "I'm looking for {category}{constraints}.{extra} Can you recommend {count} that I can "
    "order right now?",
    "Can you find me {category}{constraints}?{extra} Please suggest {count}, in stock only.",
    "I need {category}{constraints}.{extra} Please recommend {count} — in stock only.",
    "Looking to buy {category}{constraints}.{extra} Please recommend {count} currently in stock.",
    "Could you help me pick {category}{constraints}?{extra} Please suggest {count} from what's "
    "in stock.",
    "I'm shopping for {category}{constraints}.{extra} What would you suggest? {count_cap}, in "
    "stock please.",
    "Do you carry {category}{constraints}?{extra} Recommend {count} I can get right away.",
    "I'm after {category}{constraints}.{extra} Show me {count} available right now.",
    "What do you have in {category}{constraints}?{extra} Recommend {count} that you have in stock.",
    "I'm hunting for {category}{constraints}.{extra} Could you point me to {count} you have in "
    "stock?",
    "Any good {category}{constraints}?{extra} Please recommend {count} — only ones in stock.",
    "I want to buy {category}{constraints}.{extra} What would you recommend? {count_cap} from "
    "what's in stock.",
    "My search for {category}{constraints} keeps coming up empty.{extra} Can you find {count} "
    "in stock?",
    "Help me choose {category}{constraints}.{extra} Just {count}, in stock only.",
)
COUNT_WORDS = {1: "something", 2: "two or three options", 3: "three options"}
ANCHOR_PHRASES = {
    "brand": "from the same brand as {line} I ordered {when}",
    "color": "in the same colour as {line} I ordered {when}",
    "size": "in the same size as {line} I ordered {when}",
}
ANCHOR_POINTERS = {
    "brand": "the same brand as {line} I ordered {when}",
    "color": "the same colour as {line} I ordered {when}",
    "size": "the same size as {line} I ordered {when}",
}
RELAX_WITH_FALLBACK = {
    "color": " Ideally in {strict}, but if there's none in stock, {fallback} is fine.",
    "brand": " I'd love one by {strict}; if they have nothing available, {fallback} is fine.",
}
RELAX_WITHOUT = {
    "color": " Ideally in {strict}, but any colour will do if that isn't available.",
    "brand": " I'd love one by {strict}; if they have nothing available, any brand is fine.",
}
ANCHOR_KEYS = ("brand", "color", "size")
SHIP = "max_ship_days"
DEADLINE_PHRASES: tuple[str, ...] = ("that arrives by {day}", "that I can have by {day}")
RELAX_KEYS = ("color", "brand")


# a discovery request with an unrelated purchase on the side ("…and order me a kettle"), up to d2
FOLLOWUPS: tuple[str, ...] = ("reorder",)
# the customer buys what the search finds ({count}: "one", "4")
ORDER_PICK: tuple[str, ...] = (
    "Then please order {count} of the one you'd pick first, with my saved details.",
    "Once you've found them, buy {count} of your top pick for me.",
    "If one fits, go ahead and order {count} of it right away.",
    "And place the order for {count} of the best match, please.",
)
ORDER_PICK_COST = 2  # add_to_cart, checkout


class DiscoveryConfig(ScenarioConfig):
    n_constraints: int = Field(ge=2, le=7, description="category + attribute constraints")
    n_items: Annotated[int, Clamp(high=3)] = Field(
        ge=1, description="how many items the user wants recommended"
    )
    n_orders: HistoryLength
    out_of_stock_rate: Share = Field(description="P(first choice unavailable)")
    search_top_k: SearchTopK
    anchor_prob: Annotated[Share, Ramp.capped(0.08, 0.7)] = Field(
        description="P(a constraint via order history)"
    )
    bulk_prob: Annotated[Share, Ramp.capped(0.07, 0.7)] = Field(
        description="P(a multi-unit request)"
    )
    n_intents: IntentCount
    deadline_share: Annotated[Share, Ramp.rising()] = Field(
        description="share of tasks with an arrive-by day instead of a day count"
    )
    dependent_share: Annotated[Share, DEPENDENT_RAMP] = Field(
        description="share of tasks that also order the pick"
    )


class ProductDiscovery(Scenario):
    name = "product_discovery"
    seed_id = 0
    Config = DiscoveryConfig

    def lists_orders(self, plan: Plan) -> bool:
        return plan["anchor"] is not None

    def plan(self, config: DiscoveryConfig, rng: np.random.Generator) -> Plan:
        m = config.n_constraints - 1
        keys = [ATTRIBUTE_KEYS[i] for i in sorted(rng.choice(len(ATTRIBUTE_KEYS), m, False))]
        # no draw at share 0: the d0-1 tasks stay what they were before the knob
        deadline = drawn_in_share(config.deadline_share, rng)
        if deadline and "max_ship_days" not in keys:
            keys[below(rng, len(keys))] = "max_ship_days"
            keys = [k for k in ATTRIBUTE_KEYS if k in keys]
        anchorable = [k for k in keys if k in ANCHOR_KEYS]
        anchor = pick(rng, anchorable) if anchorable and rng.random() < config.anchor_prob else None
        relax = pick(rng, RELAX_KEYS) if rng.random() < config.out_of_stock_rate else None
        if relax == anchor:
            relax = None
        # a deadline is stated as a day, never left for the agent to ask about
        stated = [k for k in keys if k not in (anchor, relax) and not (deadline and k == SHIP)]
        hidden = hidden_subset(stated, config.hidden_detail_share, rng)
        bulk = rng.random() < config.bulk_prob
        # two exact attributes (brand, colour, size) leave about one product family: one pick
        exact = sum(k in VARIANT_KEYS for k in keys)
        n_recommend = between(rng, 1, config.n_items + 1) if exact < 2 else 1
        steps = (
            int(bool(hidden))
            + int(anchor is not None)
            + int(relax is not None)
            + 1
            + (n_recommend if bulk else 0)
            + 1
        )
        more = followups.draw(rng, FOLLOWUPS, config.n_intents - 1, config.difficulty)
        # drawn last, and not at share 0: every other draw is the one it was before it
        order_pick = dependent_drawn(config.dependent_share, rng)
        steps += ORDER_PICK_COST * int(order_pick)
        return Plan.with_followups(
            steps,
            more,
            keys=keys,
            anchor=anchor,
            relax=relax,
            hidden=hidden,
            bulk=bulk,
            n_recommend=n_recommend,
            deadline=deadline,
            order_pick=order_pick,
        )

    def build(
        self, config: DiscoveryConfig, plan: Plan, rng: np.random.Generator, ctx: GenContext
    ) -> Draft:
        """The need, then one block per twist it carries: a relaxed value (the first choice is
        only out of stock), an anchor (a value read in a past order), bulk (stock checked per
        pick), hidden constraints (asked for); then the search and the recommendation."""
        anchor, hidden = plan["anchor"], plan["hidden"]
        n_recommend = plan["n_recommend"]
        need, target, deadline, unsaid = self._need(plan, rng, ctx)
        quantity, category = need.quantity, need.category
        world = World.new(ctx, rng)
        twists = self._twists(config, plan, rng, ctx, world, need, target)
        prompt = self._prompt(config, plan, rng, need, twists, deadline)
        # ---- reference ------------------------------------------------------------------------
        reference = []
        if hidden:
            reference.append(ask_call([FACT_KEY[k] for k in hidden], rng))
        if twists.anchored is not None:
            reference.append(call("list_orders"))
        if twists.strict_call is not None:
            reference.append(twists.strict_call)
        chosen = _search_and_recommend(
            ctx, rng, need, target, n_recommend, config, reference, unsaid=unsaid
        )
        acceptable = need.acceptable_ids(ctx)
        purchase = None
        if plan["order_pick"]:
            count = "one" if quantity == 1 else str(quantity)
            sentence = render(pick(rng, ORDER_PICK), {"count": count}, rng, config.typo_rate)
            prompt = followups.before_closer(prompt, [sentence])
            reference += [
                call("add_to_cart", item_id=ctx.item_ids[chosen[0]], quantity=quantity),
                call("checkout"),
            ]
            purchase = PurchaseSpec(slots=[Slot(acceptable=acceptable, quantity=quantity)])
        more = followups.add_followups(
            plan["followups"], ctx, rng, world, {category}, typo_rate=config.typo_rate
        )
        more.merge(reference)
        prompt = more.prompt(prompt)
        facts = need.facts()
        relevant = [*ctx.ids(chosen), *more.relevant]
        if twists.anchored is not None:
            # the anchored value is to be read in the order history: asked about it (or
            # "anything else?"), the customer points there again, never says the value
            facts[FACT_KEY[anchor]] = twists.anchored.pointer
            order = twists.anchored.order
            relevant += [order["order_id"], order["items"][0]["item_id"]]
        goal = Goal(
            user_facts=facts,
            recommend=RecommendSpec(acceptable=acceptable, min_items=n_recommend, max_items=3),
            relevant_ids=relevant,
            purchase=purchase or more.purchase,
            typo_rate=config.typo_rate,
        )
        return Draft(prompt, goal, world.state(), reference, more.addon_calls)

    def _need(
        self, plan: Plan, rng: np.random.Generator, ctx: GenContext
    ) -> tuple[ProductNeed, int, bool, set[str] | None]:
        """The need around an in-stock target (enough units for a bulk request; with a
        deadline, a ship-by day count the fastest items meet), whether a deadline is stated,
        and what the request leaves unsaid that must matter to the first hits (None: no such
        demand)."""
        keys: list[str] = plan["keys"]
        quantity = between(rng, 3, 9) if plan["bulk"] else 1
        target = ctx.pick_in_stock(rng, min_stock=quantity)
        # a relaxed key that is not among `keys` is dropped by the fallback ("any colour")
        values = None
        if plan["deadline"]:
            values = constraint_values(ctx, target, keys, rng)
            values[SHIP] = _fastest_days(ctx, ctx.category.value(target), values, quantity)
        need = ProductNeed.build(ctx, target, keys, rng, quantity=quantity, values=values)
        deadline = plan["deadline"] and _too_late_exists(ctx, need)
        # the hard variant: what the request leaves unsaid (the day count behind a day, a
        # hidden or anchored constraint) must matter to the first hits
        unsaid = None
        if plan["deadline"]:
            anchor = plan["anchor"]
            unsaid = {*plan["hidden"], *([anchor] if anchor else []), *([SHIP] if deadline else [])}
        return need, target, deadline, unsaid

    def _twists(
        self,
        config: DiscoveryConfig,
        plan: Plan,
        rng: np.random.Generator,
        ctx: GenContext,
        world: World,
        need: ProductNeed,
        target: int,
    ) -> _Twists:
        """The relaxed value (its sentence and the strict search) and the anchored one (its
        past order in `world`); else filler orders."""
        relax, anchor = plan["relax"], plan["anchor"]
        twists = _Twists()
        if relax is not None:
            sentence, twists.strict_call = self._relaxed(ctx, rng, need, relax, target, config)
            twists.extra.append(sentence)
        if anchor is not None:
            twists.anchored = self._anchored(ctx, rng, world, need, anchor, target, config.n_orders)
        elif config.n_orders > 0:
            order_ids = ctx.order_ids(rng, config.n_orders)
            world.orders = filler_orders(ctx, rng, order_ids, {need.category})
        return twists

    def _prompt(
        self,
        config: DiscoveryConfig,
        plan: Plan,
        rng: np.random.Generator,
        need: ProductNeed,
        twists: _Twists,
        deadline: bool,
    ) -> str:
        """The request: the stated constraints (not the hidden, anchored or relaxed ones), the
        twists' sentences, a bulk quantity and a hint that more requirements exist."""
        hidden, category, quantity = plan["hidden"], need.category, need.quantity
        stated_parts = [
            _deadline_phrase(v, rng) if deadline and k == SHIP
            else constraint_phrase(k, v, rng, category)
            for k, v in need.values.items()
            if k not in hidden and k != plan["anchor"] and k != plan["relax"]
        ]  # fmt: skip
        if twists.anchored is not None:
            stated_parts.append(twists.anchored.phrase)
        constraints = " " + ", ".join(stated_parts) if stated_parts else ""
        extra = list(twists.extra)
        if quantity > 1:
            extra.append(f" I need {quantity} units, so it has to have enough stock.")
        if hidden:  # say that more requirements exist (the agent must ask for them)
            extra.append(" " + hidden_signal(len(hidden), rng))
        count = COUNT_WORDS[plan["n_recommend"]]
        return compose(
            pick(rng, TEMPLATES),
            {
                "category": category,
                "constraints": constraints,
                "extra": "".join(extra),
                "count": count,
                "count_cap": count.capitalize(),
            },
            rng,
            config.typo_rate,
        )

    def _relaxed(
        self,
        ctx: GenContext,
        rng: np.random.Generator,
        need: ProductNeed,
        relax: str,
        target: int,
        config: DiscoveryConfig,
    ) -> tuple[str, ToolCall]:
        """The first choice for `relax` that is only out of stock: the sentence that asks for it
        (with the fallback when the need keeps that key) and the search that finds it empty."""
        strict_value = self._unavailable_value(ctx, need, relax, target, rng)
        strict_filters = {**need.filters, relax: strict_value}
        if relax in need.values:
            fallback = need.values[relax]
            sentence = RELAX_WITH_FALLBACK[relax].format(strict=strict_value, fallback=fallback)
        else:
            sentence = RELAX_WITHOUT[relax].format(strict=strict_value)
        strict_call = call(
            "search",
            query=query_for(ctx, target, rng),
            filters=strict_filters,
            top_k=config.search_top_k,
        )
        return sentence, strict_call

    def _anchored(
        self,
        ctx: GenContext,
        rng: np.random.Generator,
        world: World,
        need: ProductNeed,
        anchor: str,
        target: int,
        n_orders: int,
    ) -> _Anchor:
        """A past order whose item shares the `anchor` value, put in the history with fillers,
        and how the customer points at it."""
        anchor_row = self._anchor_item(ctx, need, anchor, target, rng)
        ids = ctx.order_ids(rng, n_orders + 1)  # the anchor order and the fillers
        order = ctx.order(
            ids[0], [anchor_row], [1], "delivered", between(rng, 12, 90), user=world.user
        )
        avoid = {need.category, ctx.category.value(anchor_row)}
        world.orders = [order, *filler_orders(ctx, rng, ids[1:], avoid)]
        line = line_phrase(ctx, anchor_row, rng, omit=anchor)
        when = order_when(order, rng)
        return _Anchor(
            order,
            ANCHOR_PHRASES[anchor].format(line=line, when=when),
            ANCHOR_POINTERS[anchor].format(line=line, when=when),
        )

    @staticmethod
    def _unavailable_value(
        ctx: GenContext, need: ProductNeed, key: str, target: int, rng: np.random.Generator
    ) -> str:
        """A value for `key` that the other constraints admit only out of stock."""
        others = {k: v for k, v in need.filters.items() if k not in (key, "in_stock")}
        rows = ctx.rows_where(others)
        column = ctx.color if key == "color" else ctx.brand
        codes = column.codes[rows]
        # the codes these rows have, none of them in stock, ascending (= setdiff1d(unique(
        # codes), in-stock codes), counted rather than sorted: a third of the cost)
        size = len(column.vocab)
        seen = np.bincount(codes, minlength=size) > 0
        stocked = np.bincount(codes[ctx.in_stock[rows]], minlength=size) > 0
        lacking = np.flatnonzero(seen & ~stocked)
        lacking = lacking[lacking != column.codes[target]]
        if len(lacking) == 0:
            raise GenerationError(f"every {key} of this request is in stock")
        return column.vocab[int(lacking[below(rng, len(lacking))])]

    @staticmethod
    def _anchor_item(
        ctx: GenContext, need: ProductNeed, key: str, target: int, rng: np.random.Generator
    ) -> int:
        """A past purchase sharing `key` with the target (another product of the category)."""
        value = need.values[key]
        filters = {key: value} if key == "color" else {"category": need.category, key: value}
        rows = ctx.rows_where(filters)
        family = ctx.family.codes
        rows = rows[family[rows] != family[target]]
        if key == "color":
            rows = rows[ctx.category.codes[rows] != ctx.category.codes[target]]
        if len(rows) == 0:
            raise GenerationError(f"no past purchase shares the {key} {value!r}")
        return int(rows[below(rng, len(rows))])


def _fastest_days(ctx: GenContext, category: str, values: dict[str, Any], quantity: int) -> int:
    """The day count of a deadline: the fastest delivery among the items (with `quantity` in
    stock) that meet the other constraints, so that the slower ones arrive too late."""
    others = {k: v for k, v in values.items() if k != SHIP}
    rows = ctx.rows_where({"category": category, **others, "in_stock": True})
    rows = rows[ctx.stock[rows] >= quantity]
    if len(rows) == 0:
        raise GenerationError("no item meets the other constraints with the stock asked for")
    return int(ctx.ship_days[rows].min())


def _too_late_exists(ctx: GenContext, need: ProductNeed) -> bool:
    """Whether an in-stock item meeting the need's other constraints arrives after its day
    count: where none does (a need of six exact constraints on a small catalog) the day decides
    nothing, and the request says the day count as before."""
    loose = {k: v for k, v in need.filters.items() if k != SHIP}
    rows = ctx.rows_where(loose)
    return bool((ctx.ship_days[rows] > need.values[SHIP]).any())


def _deadline_phrase(days: int, rng: np.random.Generator) -> str:
    """The day count `days` as the day it lands on ("that arrives by May 9"): working the
    count back out needs today's date (the system prompt) and a subtraction."""
    day = today() + dt.timedelta(days=int(days))
    return pick(rng, DEADLINE_PHRASES).format(day=spoken_date(day))


@dataclass
class _Twists:
    """What the relaxed and the anchored value add: prompt sentences, the strict search that
    finds the first choice out of stock, the anchor's past order."""

    extra: list[str] = field(default_factory=list)
    strict_call: ToolCall | None = None
    anchored: _Anchor | None = None


@dataclass(frozen=True)
class _Anchor:
    """The past order an anchored value is read in, how the request names it, and how the
    customer points at it when asked."""

    order: dict[str, Any]
    phrase: str
    pointer: str


def _search_and_recommend(
    ctx: GenContext,
    rng: np.random.Generator,
    need: ProductNeed,
    target: int,
    n_recommend: int,
    config: DiscoveryConfig,
    reference: list[ToolCall],
    *,
    unsaid: set[str] | None = None,
) -> list[int]:
    """The search, a product page per pick when stock matters (bulk), the recommendation;
    returns the rows recommended. With `unsaid` (the hard variant), the same search without
    those filters must show an item the need rejects (too late, too few in stock, another
    brand...) among the first `n_recommend`: the first hits of a search that only keeps what
    the request spells out miss the need."""
    search, good = need.search(
        ctx, query_for(ctx, target, rng), config.search_top_k, min_stock=need.quantity
    )
    if len(good) < n_recommend:
        raise GenerationError("the reference search shows too few acceptable items")
    if unsaid is not None:
        loose = {k: v for k, v in search.arguments["filters"].items() if k not in unsaid}
        first = ctx.search_rows(search.arguments["query"], loose, config.search_top_k)
        accepted = set(need.acceptable.tolist())
        if all(r in accepted and ctx.stock[r] >= need.quantity for r in first[:n_recommend]):
            raise GenerationError("the first hits meet the need without what is left unsaid")
    chosen = good[:n_recommend]
    reference.append(search)
    if need.quantity > 1:
        reference.extend(call("get_product", item_id=ctx.item_ids[r]) for r in chosen)
    reference.append(call("recommend", item_ids=ctx.ids(chosen)))
    return chosen
