"""cart: end with an order of exactly the wanted lines, fixing a pre-filled cart first.

The user lists the products they want (brand, category, colour, size) with quantities. The cart
may already hold lines: a wanted product at the wrong quantity (`set_quantity`), a wrong variant
of a wanted product or something unrelated (`remove_from_cart`); the agent must `view_cart` to
see their ids. Every missing product is found with `search` and added, then `checkout`.
Harder variants: more lines, more pre-filled mistakes, a quantity or variant detail left out
of the prompt (`ask_user`), and a line wanted "in my usual size" (`usual_size_prob`): the size is
the one of the customer's past order of that category, read with `list_orders` (its line's title
names the size) before the search; a search without the size finds another size first. The
plan keeps a new line wherever the share (placed by `generators/strata.py`) asks for the usual
size, and no other line of the request is in that size.

Success: one new order whose lines match the wanted slots one-to-one; each slot accepts every
in-stock item of the catalog with that brand, category, colour and size and enough stock.
"""

from __future__ import annotations

from typing import Annotated, Any

import numpy as np
from pydantic import Field

from ecomrlve.generators.base import Draft, GenerationError, Plan, Scenario, ScenarioConfig
from ecomrlve.generators.blocks import (
    VARIANT_KEYS,
    ProductNeed,
    World,
    ask_call,
    call,
    query_for,
)
from ecomrlve.generators.context import GenContext
from ecomrlve.generators.difficulty import Clamp, Ramp, SearchTopK, Share
from ecomrlve.generators.draws import below, between, pick
from ecomrlve.generators.phrasing import join_words, size_phrase
from ecomrlve.generators.prompts import compose, counted
from ecomrlve.generators.strata import in_share
from ecomrlve.tasks import Goal, PurchaseSpec, Slot, ToolCall

MAX_STEPS = 9
USUAL_SIZE = "in my usual size (the one I ordered last time)"
TEMPLATES_FRESH: tuple[str, ...] = (
    "Please put {lines} in my cart and check out.",
    "I'd like to order {lines}. Add them to the cart and place the order, please.",
    "Can you buy {lines} for me? Check out when the cart is ready.",
    "I want {lines}. Please add them to my cart and complete the checkout.",
    "Order {lines} for me, please, and check out with my saved details.",
    "Could you place an order for {lines}? Add them and check out.",
    "Time to restock: {lines}. Put them in the cart and check out.",
    "Please buy {lines} and finish the checkout for me.",
    "I'd like to get {lines}. Can you add them and place the order?",
    "Add {lines} to my cart, then check out please.",
    "Let's order {lines}. Fill the cart and check out when it's done.",
    "My shopping list: {lines}. Please order exactly that.",
)
TEMPLATES_FIX: tuple[str, ...] = (
    "My cart is a mess. I want to check out with exactly {lines} — nothing else. Please fix "
    "the cart and place the order.",
    "Please fix my cart so it holds exactly {lines}, then check out. Anything else in there "
    "should go.",
    "I need my order to be exactly {lines}. There's already some stuff in the cart; sort it out "
    "and check out.",
    "My cart has the wrong things in it. I only want {lines}; remove the rest and check out.",
    "Please tidy up my cart: it should be exactly {lines}, nothing more. Then place the order.",
    "Clean up my cart so it's only {lines}, and check out after that.",
    "I left a few things in my cart by mistake. Make it exactly {lines} and order it.",
    "Can you correct my cart? I want {lines} and nothing else, then check out.",
    (
        "The cart should contain {lines} only. Fix the quantities, drop anything extra and "
        "check out."
    ),
    "Before I pay: the order has to be exactly {lines}. Please adjust the cart and check out.",
    "Sort out my cart for me — exactly {lines}, everything else removed — and place the order.",
    "I changed my mind about some items. Keep it to exactly {lines} and check out.",
)


class CartConfig(ScenarioConfig):
    n_items: Annotated[int, Clamp(high=3)] = Field(ge=1, description="wanted lines")
    n_distractors: Annotated[int, Clamp(high=3)] = Field(
        ge=0, description="pre-filled mistakes in the cart (at most)"
    )
    search_top_k: SearchTopK
    # 0 at d0-1, 0.2 a step up to 1 from d6 (at 0.125 a step to d9 the baseline's cart row
    # rose between steps at 10 tasks a cell)
    usual_size_prob: Annotated[Share, Ramp.rising()] = Field(
        description="P(a new line's size is 'my usual size', from past orders)"
    )


def spec_words(
    ctx: GenContext, need: ProductNeed, quantity_hidden: bool, usual_size: bool = False
) -> str:
    """ "two navy t-shirts from Smith Labs in size M", "a bag of dark roast coffee from …"."""
    v = need.values
    count = None if quantity_hidden else need.quantity
    words = f"{counted(count, need.category, v['color'])} from {v['brand']}"
    size = USUAL_SIZE if usual_size else size_phrase(v["size"])
    return f"{words} {size}".rstrip()


class Cart(Scenario):
    name = "cart"
    seed_id = 2
    Config = CartConfig

    def lists_orders(self, plan: Plan) -> bool:
        return bool(plan["usual_size"])

    def plan(self, config: CartConfig, rng: np.random.Generator) -> Plan:
        n_wanted = between(rng, max(1, config.n_items - 1), config.n_items + 1)
        n_mistakes = between(rng, 0, config.n_distractors + 1)
        # a mistake is a wanted product at the wrong quantity, or a line to remove
        n_fixed = min(int(rng.binomial(n_mistakes, 0.4)), n_wanted)
        n_remove = n_mistakes - n_fixed
        hide_quantity = bool(rng.random() < config.hidden_detail_share)
        usual = in_share(config.usual_size_prob, rng.random())
        if usual and n_fixed >= n_wanted:  # the usual size is a new line's: keep one new line
            n_fixed = n_wanted - 1
            n_remove = n_mistakes - n_fixed

        def steps() -> int:
            prefilled = n_fixed + n_remove
            n_new = n_wanted - n_fixed
            lookup = int(usual)  # list_orders, for the usual size (a new line has it)
            return int(hide_quantity) + int(prefilled > 0) + prefilled + 2 * n_new + 1 + lookup

        while steps() > MAX_STEPS and n_remove:
            n_remove -= 1
        while steps() > MAX_STEPS:
            n_wanted -= 1
            n_fixed = min(n_fixed, n_wanted - int(usual))
        return Plan(
            steps(),
            {
                "n_new": n_wanted - n_fixed,
                "n_fixed": n_fixed,
                "n_remove": n_remove,
                "hide_quantity": hide_quantity,
                "usual_size": usual,
            },
        )

    def build(
        self, config: CartConfig, plan: Plan, rng: np.random.Generator, ctx: GenContext
    ) -> Draft:
        """The wanted lines, then one block per kind of change: quantities to fix and mistakes
        to remove (both already in the cart, done after `view_cart` in a shuffled order), new
        lines to search and add; then checkout."""
        n_new = plan["n_new"]
        needs, targets = _wanted_lines(ctx, rng, n_new + plan["n_fixed"])
        world = World.new(ctx, rng)
        reference = []
        hide_quantity = plan["hide_quantity"]
        hidden_need = below(rng, len(needs)) if hide_quantity else -1
        if hide_quantity:
            reference.append(ask_call(["quantity"], rng))
        # wanted lines already in the cart at a wrong quantity: the last n_fixed needs
        cart, fixes = _wrong_quantities(ctx, rng, needs[n_new:], targets[n_new:])
        mistakes, removals = self._mistakes(ctx, rng, needs, targets, plan["n_remove"])
        cart += mistakes
        order = rng.permutation(len(cart))
        world.cart = [cart[int(i)] for i in order]
        if world.cart:
            reference.append(call("view_cart"))
            changes = fixes + removals
            reference += [changes[int(i)] for i in rng.permutation(len(changes))]
        relevant = [line["item_id"] for line in world.cart]
        if plan["usual_size"]:  # the first new line's size, from a past order
            size = needs[0].values["size"]
            if any(need.values["size"] == size for need in needs[1:]):
                raise GenerationError("another line in the usual size would say it")
            world.orders = [_past_order_of_size(ctx, rng, needs[0], targets[0], world)]
            relevant.append(world.orders[0]["order_id"])
            reference.append(call("list_orders"))
        for k, (need, row) in enumerate(zip(needs[:n_new], targets[:n_new], strict=True)):
            size_decides = plan["usual_size"] and k == 0
            reference += _add_line(ctx, rng, need, row, config.search_top_k, relevant, size_decides)
        reference.append(call("checkout"))

        lines = join_words(
            [
                spec_words(ctx, need, k == hidden_need, usual_size=plan["usual_size"] and k == 0)
                for k, need in enumerate(needs)
            ]
        )
        template = pick(rng, TEMPLATES_FIX if world.cart else TEMPLATES_FRESH)
        prompt = compose(template, {"lines": lines}, rng, config.typo_rate)
        facts: dict[str, str] = {}
        if hide_quantity:
            need = needs[hidden_need]
            facts["quantity"] = counted(need.quantity, need.category, need.values["color"])
        goal = Goal(
            user_facts=facts,
            purchase=PurchaseSpec(
                slots=[
                    Slot(acceptable=need.acceptable_ids(ctx), quantity=need.quantity)
                    for need in needs
                ]
            ),
            relevant_ids=relevant,
            typo_rate=config.typo_rate,
        )
        return Draft(prompt, goal, world.state(), reference)

    def _mistakes(
        self,
        ctx: GenContext,
        rng: np.random.Generator,
        needs: list[ProductNeed],
        targets: list[int],
        n_remove: int,
    ) -> tuple[list[dict], list[ToolCall]]:
        """`n_remove` cart lines that must go, and the `remove_from_cart` call of each."""
        cart, removals = [], []
        taken = {r for need in needs for r in need.acceptable.tolist()}
        for k in range(n_remove):
            row = self._mistake(ctx, rng, targets[k % len(targets)], taken)
            taken.add(row)
            cart.append({"item_id": ctx.item_ids[row], "quantity": between(rng, 1, 3)})
            removals.append(call("remove_from_cart", item_id=ctx.item_ids[row]))
        return cart, removals

    @staticmethod
    def _mistake(ctx: GenContext, rng: np.random.Generator, target: int, taken: set[int]) -> int:
        """A line that must go: another variant of a wanted product, or something unrelated."""
        if rng.random() < 0.6:
            family = [int(r) for r in ctx.family_rows(target) if int(r) not in taken]
            family = [r for r in family if ctx.in_stock[r]]
            if family:
                return family[below(rng, len(family))]
        for _ in range(8):
            row = ctx.pick_in_stock(rng)
            if row not in taken:
                return row
        raise GenerationError("no distinct line to put in the cart by mistake")


def _past_order_of_size(
    ctx: GenContext, rng: np.random.Generator, need: ProductNeed, target: int, world: World
) -> dict[str, Any]:
    """A delivered past order of another product of `need`'s category in its size (the
    customer's "usual size"), not one the need accepts."""
    size = need.values["size"]
    if size == "one size":
        raise GenerationError("a one-size product has no usual size")
    same = ctx.rows_where({"category": need.category, "size": size})
    others = np.setdiff1d(same, need.acceptable)
    if len(others) == 0:
        raise GenerationError("no other product of the category in that size")
    row = int(others[below(rng, len(others))])
    order_id = ctx.order_ids(rng, 1)[0]
    return ctx.order(order_id, [row], [1], "delivered", between(rng, 20, 150), user=world.user)


def _wanted_lines(
    ctx: GenContext, rng: np.random.Generator, n_wanted: int
) -> tuple[list[ProductNeed], list[int]]:
    """One product need (1-3 units, enough in stock) per wanted line, each of another category,
    and the catalog row each was drawn from."""
    categories = rng.permutation(len(ctx.categories))[:n_wanted]
    needs: list[ProductNeed] = []
    targets: list[int] = []
    for c in categories:
        quantity = int(rng.choice([1, 1, 2, 2, 3]))
        row = ctx.pick_in_stock(rng, ctx.categories[int(c)], min_stock=quantity + 2)
        needs.append(ProductNeed.build(ctx, row, VARIANT_KEYS, rng, quantity=quantity))
        targets.append(row)
    return needs, targets


def _wrong_quantities(
    ctx: GenContext, rng: np.random.Generator, needs: list[ProductNeed], targets: list[int]
) -> tuple[list[dict], list[ToolCall]]:
    """Wanted lines already in the cart at a wrong quantity, and the `set_quantity` fixes."""
    cart, fixes = [], []
    for need, row in zip(needs, targets, strict=True):
        wrong = int(rng.choice([q for q in (1, 2, 3, 4) if q != need.quantity]))
        cart.append({"item_id": ctx.item_ids[row], "quantity": wrong})
        fixes.append(call("set_quantity", item_id=ctx.item_ids[row], quantity=need.quantity))
    return cart, fixes


def _add_line(
    ctx: GenContext,
    rng: np.random.Generator,
    need: ProductNeed,
    row: int,
    top_k: int,
    relevant: list[str],
    size_decides: bool = False,
) -> list[ToolCall]:
    """A new line: its search and the `add_to_cart` of the first acceptable result (its id
    appended to `relevant`). With `size_decides`, the same search without the size must show
    another size first (or the usual size would not matter)."""
    query = query_for(ctx, row, rng)
    search, good = need.search(ctx, query, top_k, min_stock=need.quantity)
    if size_decides:
        unsized = {k: v for k, v in need.filters.items() if k != "size"}
        top = ctx.search_rows(query, unsized, top_k)
        if len(top) and ctx.size_col.value(int(top[0])) == need.values["size"]:
            raise GenerationError("the search without the size shows that size first")
    relevant.append(ctx.item_ids[good[0]])
    return [search, call("add_to_cart", item_id=ctx.item_ids[good[0]], quantity=need.quantity)]
