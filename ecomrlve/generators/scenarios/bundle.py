"""bundle: buy a set of complementary products under one total budget.

The user wants 2–4 products that go together (a yoga mat, a t-shirt and sneakers; a laptop
and headphones…), each with its own constraints, and a budget for the goods. The agent
searches each, picks options that keep the total under budget (the first result is often too
expensive when the budget is tight), adds them and checks out.

Success: one new order whose lines match the slots one-to-one (each slot's acceptable set is
computed over the whole catalog with `Catalog.filter_mask`), subtotal within the budget.

Whether the budget binds is a knob, `budget_bind_prob`: a loose budget is the total of each
slot's first acceptable search hit plus `budget_slack` (buying the first hits fits it); a
binding one is the reference picks' (the cheapest hits') subtotal plus `budget_slack`, capped
below the first hits' total, so the first hits overrun it and only comparing prices fits. Either
way the reference basket fits, so a valid basket always exists. 0 at d0-1, all binding from d9.
"""

from __future__ import annotations

import math
from typing import Annotated, Any

import numpy as np
from pydantic import Field

from ecomrlve.generators.base import Draft, Plan, Scenario, ScenarioConfig
from ecomrlve.generators.blocks import ProductNeed, World, ask_call, call, query_for
from ecomrlve.generators.context import GenContext
from ecomrlve.generators.difficulty import Clamp, Ramp, SearchTopK, Share
from ecomrlve.generators.draws import below, between, pick
from ecomrlve.generators.errors import GenerationError
from ecomrlve.generators.phrasing import join_words, money
from ecomrlve.generators.prompts import compose
from ecomrlve.generators.strata import in_share
from ecomrlve.tasks import Goal, PurchaseSpec, Slot, ToolCall

GROUPS: tuple[tuple[str, ...], ...] = (
    ("yoga mats", "t-shirts", "sneakers", "headphones"),
    ("laptops", "headphones", "smartphones"),
    ("cookware", "coffee", "tea", "bedding"),
    ("jackets", "boots", "jeans", "t-shirts"),
    ("bicycles", "t-shirts", "sneakers", "headphones"),
    ("dresses", "fragrance", "skincare", "sneakers"),
)
SLOT_KEYS: tuple[str, ...] = ("brand", "color", "size", "min_rating", "max_ship_days")
SELECTIVE_KEYS: tuple[str, ...] = ("brand", "color")
MAX_STEPS = 9
TEMPLATES: tuple[str, ...] = (
    "I'm putting together a set: {items}. {budget} Please order it.",
    "Can you buy {items} for me? {budget}",
    "I need {items}. {budget} Add them to my cart and check out.",
    "I'm assembling a kit: {items}. {budget} Please put it all in one order.",
    "Could you order {items} together? {budget}",
    "Please get me {items} in one go. {budget} Check out when it's ready.",
    "I'd like a bundle of {items}. {budget} Add everything and check out.",
    "Help me buy {items} as one order. {budget}",
    "Shopping list for one order: {items}. {budget} Please place it.",
    "Put together {items} for me. {budget} Then check out.",
    "Order {items} for me, please. {budget}",
    "I need a complete set: {items}. {budget} Please order all of it at once.",
)
BUDGET_STATED: tuple[str, ...] = (
    "My budget for everything is {v}.",
    "All together it must stay within {v}.",
    "I can spend {v} in total at most.",
)
BUDGET_HIDDEN: tuple[str, ...] = (
    "I have a fixed budget for all of it.",
    "Keep it within my budget, please.",
)


class BundleConfig(ScenarioConfig):
    n_items: Annotated[int, Clamp(low=2, high=4)] = Field(
        ge=2, le=4, description="products in the bundle"
    )
    n_constraints: int = Field(ge=2, description="constraints per product, category included")
    search_top_k: SearchTopK
    budget_slack: Share
    # 0 at d0-1 (the first hits fit), 0.125 a step up to 1 from d9
    budget_bind_prob: Annotated[Share, Ramp.rising(0.125)] = Field(
        description="P(the first search hits' total exceeds the budget)"
    )


class Bundle(Scenario):
    name = "bundle"
    seed_id = 6
    Config = BundleConfig

    def tuned(self, difficulty: int, values: dict[str, Any]) -> dict[str, Any]:
        return {
            "n_constraints": min(4, 2 + values["n_constraints"] // 4),
        }

    def plan(self, config: BundleConfig, rng: np.random.Generator) -> Plan:
        n = between(rng, max(2, config.n_items - 1), config.n_items + 1)
        keys = []
        for _ in range(n):
            # one selective key keeps each acceptable set specific; the others add traps
            first = pick(rng, SELECTIVE_KEYS)
            rest = [k for k in SLOT_KEYS if k != first]
            extra = rng.choice(len(rest), config.n_constraints - 2, replace=False)
            keys.append([first, *(rest[int(i)] for i in sorted(extra))])
        hide_budget = bool(rng.random() < config.hidden_detail_share) and 2 * n + 2 <= MAX_STEPS
        steps = int(hide_budget) + 2 * n + 1
        binds = in_share(config.budget_bind_prob, rng.random())
        return Plan(steps, {"n": n, "keys": keys, "hide_budget": hide_budget, "binds": binds})

    def build(
        self, config: BundleConfig, plan: Plan, rng: np.random.Generator, ctx: GenContext
    ) -> Draft:
        """The categories, then per slot its need and the cheapest acceptable pick (search,
        add), checkout; the budget fits the picks and binds or not as the plan says."""
        categories = _categories(ctx, rng, plan["n"])
        world = World.new(ctx, rng)
        reference = []
        if plan["hide_budget"]:
            reference.append(ask_call(["budget"], rng))
        needs, picks, firsts = [], [], []
        for category, keys in zip(categories, plan["keys"], strict=True):
            need, hits, calls = _cheapest_slot(ctx, rng, category, keys, config.search_top_k)
            reference += calls
            needs.append(need)
            picks.append(min(hits, key=lambda r: (ctx.price[r], r)))
            firsts.append(hits[0])
        reference.append(call("checkout"))
        budget = _budget(ctx, picks, firsts, config.budget_slack, binds=plan["binds"])
        items = join_words([f"{need.category} ({need.phrase(rng, sep=', ')})" for need in needs])
        if plan["hide_budget"]:
            budget_text = pick(rng, BUDGET_HIDDEN)
        else:
            budget_text = pick(rng, BUDGET_STATED).format(v=money(budget))
        prompt = compose(
            pick(rng, TEMPLATES), {"items": items, "budget": budget_text}, rng, config.typo_rate
        )
        facts = {
            "budget": f"{money(budget)} in total",
            "category": join_words([need.category for need in needs]),
        }
        goal = Goal(
            user_facts=facts,
            purchase=PurchaseSpec(
                slots=[Slot(acceptable=need.acceptable_ids(ctx), quantity=1) for need in needs],
                budget=budget,
            ),
            relevant_ids=ctx.ids(picks),
            typo_rate=config.typo_rate,
        )
        return Draft(prompt, goal, world.state(), reference)


def _categories(ctx: GenContext, rng: np.random.Generator, n: int) -> list[str]:
    """`n` categories: a group that goes together, shuffled, topped up with others."""
    group = [c for c in pick(rng, GROUPS) if c in ctx.categories]
    others = [c for c in ctx.categories if c not in group]
    categories = list(rng.permutation(group))[:n]
    while len(categories) < n:
        categories.append(others.pop(below(rng, len(others))))
    return [str(c) for c in categories]


def _budget(
    ctx: GenContext, picks: list[int], firsts: list[int], slack: float, *, binds: bool
) -> float:
    """The budget in whole dollars: the first hits' total plus `slack` (loose), or the picks'
    subtotal plus `slack` but below the first hits' total (binding)."""
    subtotal = float(sum(ctx.price[r] for r in picks))
    first_total = float(sum(ctx.price[r] for r in firsts))
    if not binds:
        return float(math.ceil(first_total * (1.0 + slack)))
    budget = float(min(math.ceil(subtotal * (1.0 + slack)), math.ceil(first_total) - 1))
    if budget < subtotal:
        raise GenerationError("the first hits cost about what the cheapest do: no budget binds")
    return budget


def _cheapest_slot(
    ctx: GenContext, rng: np.random.Generator, category: str, keys: list[str], top_k: int
) -> tuple[ProductNeed, list[int], list[ToolCall]]:
    """One slot: the need drawn from an in-stock product of `category`, the acceptable rows
    its search shows (in rank order), and the search + `add_to_cart` (of the cheapest) calls."""
    row = ctx.pick_in_stock(rng, category)
    need = ProductNeed.build(ctx, row, keys, rng)
    search, good = need.search(ctx, query_for(ctx, row, rng), top_k)
    cheapest = min(good, key=lambda r: (ctx.price[r], r))
    return need, good, [search, call("add_to_cart", item_id=ctx.item_ids[cheapest], quantity=1)]
