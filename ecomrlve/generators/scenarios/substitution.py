"""substitution: the wanted item is out of stock; recommend the closest in-stock alternative.

Stated rules: same size, the same defining variant where the category has one instead of a
colour (skin type for skincare, scent for fragrance, roast for coffee, flavour for tea: a
customer who wanted a dry-skin cream does not accept an oily-skin one), price within ±p% of
the wanted item's price, brands in a preference order (the first brand that has any such item
of the category in stock wins), and the same product type as the wanted item ("crew neck
shirt", not just "t-shirts") — unless the winning brand has none of that type, which the
prompt allows: then its other items of the category do.
The agent first looks the wanted item up (a search by its name, or `list_orders` +
`get_product` when it is "the one I bought before") to learn its price, then searches brand by
brand. Harder variants put more preferred brands with nothing available first (more empty
searches), leave the preference or the price rule out of the prompt (`ask_user`), narrow the
price band, and make the price rule bite (`price_trap_prob`): the winning brand's top match for
the product type, the price rule left out, is priced outside the band, so a recommendation that
does not apply the rule is wrong. Otherwise that top match is inside the band (the rule is
stated but does not bite): 0 at d0-1, every task from d9.

Acceptable: every in-stock item of the catalog with that category, size, price band and the
winning brand (computed with `Catalog.filter_mask`), narrowed to the wanted product type when
the winning brand has any. The reference searches by the product type, so its hits of that
type come first.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Annotated, Any

import numpy as np
from pydantic import Field

from ecomrlve.catalogs.taxonomy import size_words, variant_label
from ecomrlve.generators.base import Draft, GenerationError, Plan, Scenario, ScenarioConfig
from ecomrlve.generators.blocks import (
    World,
    ask_call,
    call,
    filler_orders,
    line_phrase,
    order_when,
)
from ecomrlve.generators.context import GenContext
from ecomrlve.generators.difficulty import HistoryLength, Ramp, SearchTopK, Share
from ecomrlve.generators.draws import below, between, pick
from ecomrlve.generators.phrasing import size_phrase, variant_phrase
from ecomrlve.generators.prompts import compose, hidden_signal
from ecomrlve.generators.strata import in_share
from ecomrlve.tasks import Goal, RecommendSpec, ToolCall

TEMPLATES: tuple[str, ...] = (
    "I wanted {item}, but it's out of stock.{rules} What's the closest alternative you can "
    "recommend?",
    "{item_cap} seems to be sold out.{rules} Can you recommend a substitute?",
    "{item_cap} isn't available any more.{rules} Please suggest the best replacement.",
    "I was going to buy {item}, but it's sold out.{rules} What would you suggest instead?",
    "{item_cap} is out of stock again.{rules} Could you find me something close?",
    "No luck with {item}: out of stock.{rules} Which replacement would you pick?",
    "I can't order {item} because it's unavailable.{rules} Recommend the nearest match, please.",
    "{item_cap} was my first choice, but you've run out.{rules} What's the best stand-in?",
    "Your shop says {item} is out of stock.{rules} Please recommend a similar one I can buy.",
    "Looks like {item} is gone.{rules} Can you suggest a comparable alternative?",
    "{item_cap} is sold out, unfortunately.{rules} Help me find a good swap.",
    (
        "I needed {item}, but there's none left.{rules} Which product would you recommend in "
        "its place?"
    ),
)
HISTORY_TEMPLATES: tuple[str, ...] = (
    "I'd like to buy {item} again, the one I ordered {when}, but it's out of stock.{rules} "
    "What's the closest alternative?",
    "I wanted to reorder {item} from my order {when}; it's sold out now.{rules} Can you "
    "recommend a substitute?",
    (
        "Last time I bought {item} ({when}), and now it's sold out.{rules} What should I get "
        "instead?"
    ),
    "I'd order {item} again, like I did {when}, but it's out of stock.{rules} Any substitute?",
    "I got {item} {when} and loved it, but it's out of stock now.{rules} What's closest?",
)
RULES = (
    " It has to be the same type of product ({noun}) in the same size{variant}{price}{brands};"
    " failing that, other {category} from the brand I prefer will do."
)
VARIANT_RULE = ", with the same {label} ({value})"
# P(the winning brand is drawn among those that have the wanted type, when some have it)
SAME_TYPE_WINNER = 0.85
PRICE_RULE = ", priced within {pct}% of the original"
BRAND_RULE = ", and by brand I prefer {order}"


class SubstitutionConfig(ScenarioConfig):
    n_orders: HistoryLength
    out_of_stock_rate: Share = Field(description="P(a preferred brand is empty)")
    search_top_k: SearchTopK
    budget_slack: Share = Field(description="sets the price band width")
    history_prob: Annotated[Share, Ramp.capped(0.07, 0.6)] = Field(
        description="P(the item is from a past order)"
    )
    # 0 at d0-1, 0.125 a step up to 1 from d9
    price_trap_prob: Annotated[Share, Ramp.rising(0.125)] = Field(
        description="P(the top match without the price rule is outside the band)"
    )


class Substitution(Scenario):
    name = "substitution"
    seed_id = 1
    Config = SubstitutionConfig

    def lists_orders(self, plan: Plan) -> bool:
        return bool(plan["history"])

    def plan(self, config: SubstitutionConfig, rng: np.random.Generator) -> Plan:
        history = bool(rng.random() < config.history_prob)
        empty_brands = int(rng.binomial(3, config.out_of_stock_rate))
        hidden = [k for k in ("preference", "budget") if rng.random() < config.hidden_detail_share]
        pct = int(5 * round(20 * (0.1 + 0.5 * config.budget_slack) * rng.uniform(0.8, 1.2)))
        steps = int(bool(hidden)) + (2 if history else 1) + empty_brands + 1 + 1
        trap = in_share(config.price_trap_prob, rng.random())
        choices = {"history": history, "empty_brands": empty_brands, "hidden": hidden, "pct": pct}
        return Plan(steps, {**choices, "price_trap": trap})

    def build(
        self, config: SubstitutionConfig, plan: Plan, rng: np.random.Generator, ctx: GenContext
    ) -> Draft:
        """A sold-out item and its price band; the brands in order of preference (some with
        nothing left); the item named through a past order or by its name; one search per
        brand until the first with an acceptable item, recommended."""
        pct: int = max(5, plan["pct"])
        category, wanted = _sold_out_item(ctx, rng)
        product = ctx.product(wanted)
        base = _price_band(category, product, pct)
        label = variant_label(category)
        candidates = ctx.rows_where({**base, "in_stock": True})
        noun = ctx.noun(wanted)

        def as_planned(brand: str, acceptable: np.ndarray, typed: bool) -> bool:
            """The price rule bites (a brand with the wanted type) or not, as planned."""
            if not plan["price_trap"]:
                return not _price_trap(ctx, noun, base, brand, acceptable, config)
            return typed and _price_trap(ctx, noun, base, brand, acceptable, config)

        order, acceptable = _brand_preference(
            ctx, rng, wanted, category, candidates, plan["empty_brands"], as_planned
        )

        world = World.new(ctx, rng)
        ids = ctx.order_ids(rng, config.n_orders + 1)  # a past order and the fillers
        reference = []
        hidden: list[str] = plan["hidden"]
        if hidden:
            reference.append(ask_call(hidden, rng))
        item, template, when = _name_item(
            ctx, rng, world, ids, wanted, config, reference, from_history=plan["history"]
        )
        for brand in order:
            filters = {**base, "brand": brand, "in_stock": True}
            reference.append(call("search", query=noun, filters=filters, top_k=config.search_top_k))
        results = ctx.search_rows(
            noun, {**base, "brand": order[-1], "in_stock": True}, config.search_top_k
        )
        accepted = set(acceptable.tolist())
        pick_row = next((r for r in results if r in accepted), None)
        if pick_row is None:
            raise GenerationError("the winning brand's search shows no acceptable item")
        reference.append(call("recommend", item_ids=[ctx.item_ids[pick_row]]))

        preference_text = ", then ".join(order)
        rules = RULES.format(
            noun=noun,
            category=category,
            variant=""
            if label == "colour"
            else VARIANT_RULE.format(label=label, value=product["color"]),
            price="" if "budget" in hidden else PRICE_RULE.format(pct=pct),
            brands="" if "preference" in hidden else BRAND_RULE.format(order=preference_text),
        )
        if hidden:  # say that more requirements exist (the agent must ask for them)
            rules += " " + hidden_signal(len(hidden), rng)
        prompt = compose(
            template,
            {"item": item, "item_cap": item[0].upper() + item[1:], "rules": rules, "when": when},
            rng,
            config.typo_rate,
        )
        facts = {
            "category": category,
            "size": product["size"],
            "budget": f"within {pct}% of the original price",
            "preference": preference_text,
        }
        goal = Goal(
            user_facts=facts,
            recommend=RecommendSpec(acceptable=ctx.ids(acceptable), min_items=1, max_items=3),
            relevant_ids=[product["item_id"], ctx.item_ids[pick_row]]
            + ([world.orders[0]["order_id"]] if plan["history"] else []),
            typo_rate=config.typo_rate,
        )
        return Draft(prompt, goal, world.state(), reference)


def _sold_out_item(ctx: GenContext, rng: np.random.Generator) -> tuple[str, int]:
    """A category and a sold-out row of it."""
    category = ctx.categories[below(rng, len(ctx.categories))]
    sold_out = ctx.sold_out_by_category[category]
    if len(sold_out) == 0:
        raise GenerationError(f"nothing in {category} is out of stock")
    return category, int(sold_out[below(rng, len(sold_out))])


def _price_trap(
    ctx: GenContext,
    noun: str,
    base: dict[str, Any],
    winner: str,
    acceptable: np.ndarray,
    config: SubstitutionConfig,
) -> bool:
    """Whether the winning brand's top match for `noun`, the price band left out, is not
    acceptable (so only applying the price rule finds the substitute)."""
    unpriced = {k: v for k, v in base.items() if k not in ("min_price", "max_price")}
    top = ctx.search_rows(
        noun, {**unpriced, "brand": winner, "in_stock": True}, config.search_top_k
    )
    if not len(top):
        return True
    at = int(np.searchsorted(acceptable, top[0]))
    return not (at < len(acceptable) and acceptable[at] == top[0])


def _price_band(category: str, product: dict[str, Any], pct: int) -> dict[str, Any]:
    """The filters every alternative meets: category, size, price within `pct`% and, where the
    variant defines the product, its colour (any colour may change otherwise)."""
    low = math.ceil(product["price"] * (1 - pct / 100) * 100) / 100
    high = math.floor(product["price"] * (1 + pct / 100) * 100) / 100
    base = {"category": category, "size": product["size"], "min_price": low, "max_price": high}
    if variant_label(category) != "colour":
        base["color"] = product["color"]
    return base


def _brand_preference(
    ctx: GenContext,
    rng: np.random.Generator,
    wanted: int,
    category: str,
    candidates: np.ndarray,
    empty_brands: int,
    as_planned: Callable[[str, np.ndarray, bool], bool],
) -> tuple[list[str], np.ndarray]:
    """The brands in order of preference (`empty_brands` with nothing in the band, often the
    item's own brand among them, then the winner) and the winner's acceptable rows (of the
    same product type when it has any). The winner is one whose search `as_planned` accepts
    (the price rule bites or not, as the plan says)."""
    # brand codes as masks over the vocabulary (np.unique / setdiff1d cost ~0.1 ms each
    # here); np.flatnonzero gives the same ascending codes
    n_brands = len(ctx.brand.vocab)
    has_items = np.bincount(ctx.brand.codes[candidates], minlength=n_brands) > 0
    with_items = np.flatnonzero(has_items)
    noun = ctx.noun(wanted)
    types = ctx.product_type
    if types is not None:
        same_type = types.codes[candidates] == types.codes[wanted]
    else:  # a catalog written before product_type was a column
        same_type = np.array([ctx.noun(r) == noun for r in candidates], dtype=bool)
    with_type = np.flatnonzero(
        np.bincount(ctx.brand.codes[candidates[same_type]], minlength=n_brands)
    )
    without = np.flatnonzero(ctx.brands_in(category) & ~has_items)
    if len(with_items) == 0 or len(without) < empty_brands:
        raise GenerationError("not enough brands with / without alternatives")
    empty = [int(b) for b in rng.permutation(without)[:empty_brands]]
    own = ctx.brand.codes[wanted]
    if own in without and own not in empty and empty and rng.random() < 0.5:
        empty[0] = int(own)  # "ideally the same brand again" — which has nothing left
    pool = with_type if len(with_type) and rng.random() < SAME_TYPE_WINNER else with_items
    tries = [int(b) for b in rng.permutation(pool)]
    if empty_brands == 0 and own in pool and rng.random() < 0.5:
        tries.insert(0, int(own))
    for winner in tries:
        of_winner = ctx.brand.codes[candidates] == winner
        typed = bool((of_winner & same_type).any())
        if typed:
            of_winner &= same_type
        if as_planned(ctx.brand.vocab[winner], candidates[of_winner], typed):
            return [ctx.brand.vocab[b] for b in [*empty, winner]], candidates[of_winner]
    raise GenerationError("no brand whose price rule bites (or not) as the plan says")


def _name_item(
    ctx: GenContext,
    rng: np.random.Generator,
    world: World,
    ids: list[str],
    wanted: int,
    config: SubstitutionConfig,
    reference: list[ToolCall],
    from_history: bool,
) -> tuple[str, str, str]:
    """How the prompt names the wanted item, with the calls that find it and the customer's
    orders: as a past purchase (read in the orders, then its product page), else by its name,
    variant and size (one search must single it out). Returns (item phrase, prompt template,
    when it was bought; "" by name)."""
    product = ctx.product(wanted)
    category = product["category"]
    if from_history:
        placed = between(rng, 20, 150)
        past = ctx.order(ids[0], [wanted], [1], "delivered", placed, user=world.user)
        world.orders = [past, *filler_orders(ctx, rng, ids[1:], {category})]
        item = f"{line_phrase(ctx, wanted, rng)} {size_phrase(product['size'])}".rstrip()
        template = pick(rng, HISTORY_TEMPLATES)
        reference += [call("list_orders"), call("get_product", item_id=product["item_id"])]
        return item, template, order_when(past, rng)
    world.orders = filler_orders(ctx, rng, ids[1:], {category})
    variant = variant_phrase(category, product["color"], rng)
    item = f"the {product['name']} {variant}, {size_words(product['size'])}"
    lookup_filters = {
        "category": category,
        "brand": product["brand"],
        "color": product["color"],
        "size": product["size"],
    }
    found = ctx.search_rows(product["name"], lookup_filters, config.search_top_k)
    if wanted not in found or not ctx.title_unique[wanted]:
        raise GenerationError("the wanted item is not singled out by its name")
    template = pick(rng, TEMPLATES)
    reference.append(
        call("search", query=product["name"], filters=lookup_filters, top_k=config.search_top_k)
    )
    return item, template, ""
