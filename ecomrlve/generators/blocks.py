"""Building blocks the scenario modules share: the world, tool calls, product needs, orders.

* `World` collects the user, cart and order history and renders the env's `initial_state`
  (schema in `ecomrlve.env.shop.state`).
* `ProductNeed` is one wanted product stated as exact constraints: its acceptable rows computed
  over the whole catalog with `Catalog.filter_mask`, the words the user says, the facts the
  simulated user reveals, and a reference `search` call checked against the real index.
* Order helpers build look-alike histories and phrases that single out one order line.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ecomrlve.catalogs.taxonomy import variant_label
from ecomrlve.generators.context import GenContext, iso, today
from ecomrlve.generators.draws import below, between, pick
from ecomrlve.generators.errors import GenerationError
from ecomrlve.generators.phrasing import (
    FACT_KEY,
    ask_question,
    constraint_phrase,
    join_words,
    money,
    month_phrase,
    spoken_date,
    user_fact,
)
from ecomrlve.tasks import AnswerFact, ToolCall

# At most this many acceptable ids per need: a bigger set means the request was too vague to
# be a good task (and the goal JSON would bloat). Builders draw another target instead.
MAX_ACCEPTABLE = 1500
# brands of the retired card an order was paid with (`paid_with`)
RETIRED_CARD_BRANDS: tuple[str, ...] = ("visa", "mastercard", "amex")
ATTRIBUTE_KEYS: tuple[str, ...] = (
    "brand",
    "color",
    "size",
    "max_price",
    "min_rating",
    "max_ship_days",
)


def call(name: str, **arguments: Any) -> ToolCall:
    """A reference tool call (the verifier checks it against the tool schemas when it replays
    it). Validated: pydantic-core builds a small model faster than `model_construct` does."""
    return ToolCall(name=name, arguments=arguments)


def hidden_subset(keys: list[str], share: float, rng: np.random.Generator) -> list[str]:
    """Each key independently with probability `share` (the details the prompt leaves out)."""
    draws = rng.random(len(keys))
    return [k for k, u in zip(keys, draws, strict=True) if u < share]


def ask_call(fact_keys: list[str], rng: np.random.Generator) -> ToolCall:
    """One `ask_user` whose question names every fact key (by a `USER_FACT_KEYWORDS` word)."""
    return call("ask_user", question=ask_question(list(dict.fromkeys(fact_keys)), rng))


# ---- the world ---------------------------------------------------------------------------------
@dataclass
class ReferenceParts:
    """What a part of a task adds to its reference and its answer: tool calls in call order,
    the facts the final answer must state, the policy rows it rests on."""

    reference: list[ToolCall] = field(default_factory=list)
    answer_facts: list[AnswerFact] = field(default_factory=list)
    policies: list[str] = field(default_factory=list)


@dataclass
class World:
    """User, cart and orders of one task; `state()` is the env's `initial_state`."""

    user: dict[str, Any]
    cart: list[dict[str, Any]] = field(default_factory=list)
    orders: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def new(cls, ctx: GenContext, rng: np.random.Generator, membership: str | None = None) -> World:
        return cls(user=ctx.make_user(rng, membership))

    @property
    def membership(self) -> str:
        return self.user["membership"]

    def state(self) -> dict[str, Any]:
        return {
            "today": iso(today()),
            "user": self.user,
            "cart": self.cart,
            "orders": sorted(self.orders, key=lambda o: (o["placed"], o["order_id"]), reverse=True),
            "returns": [],
        }


# ---- product needs -----------------------------------------------------------------------------
# the attributes a need matches exactly, as the product has them: all three name one variant
VARIANT_KEYS: tuple[str, ...] = ("brand", "color", "size")


def constraint_values(ctx: GenContext, row: int, keys: Sequence[str], rng: np.random.Generator):
    """Constraint values that `row` satisfies, drawn so they also admit some other items."""
    from ecomrlve.generators.phrasing import nice_cap

    product = ctx.product(row)
    values: dict[str, Any] = {}
    for key in keys:
        if key in VARIANT_KEYS:
            values[key] = product[key]
        elif key == "max_price":
            values[key] = nice_cap(product["price"], float(rng.uniform(0.05, 0.4)))
        elif key == "min_rating":
            values[key] = max(1.0, float(np.floor(product["rating"] * 2) / 2))
        elif key == "max_ship_days":
            values[key] = int(product["ship_days"]) + below(rng, 2)
    return values


@dataclass
class ProductNeed:
    """One wanted product: exact constraints, acceptable rows, words and a checked search."""

    category: str
    values: dict[str, Any]  # attribute key -> value (filters, without category / in_stock)
    quantity: int
    acceptable: np.ndarray  # rows over the whole catalog, ascending

    @property
    def filters(self) -> dict[str, Any]:
        return {"category": self.category, **self.values, "in_stock": True}

    @classmethod
    def build(
        cls,
        ctx: GenContext,
        row: int,
        keys: Sequence[str],
        rng: np.random.Generator,
        quantity: int = 1,
        values: dict[str, Any] | None = None,
    ) -> ProductNeed:
        category = ctx.category.value(row)
        values = values if values is not None else constraint_values(ctx, row, keys, rng)
        need = cls(category, values, quantity, np.empty(0, dtype=np.int64))
        rows = ctx.rows_where(need.filters)
        if quantity > 1:
            rows = rows[ctx.stock[rows] >= quantity]
        if len(rows) == 0:
            raise GenerationError("a product need with no acceptable item")
        if len(rows) > MAX_ACCEPTABLE:
            raise GenerationError(f"a product need with {len(rows)} acceptable items (too vague)")
        need.acceptable = rows
        return need

    def acceptable_ids(self, ctx: GenContext) -> list[str]:
        return ctx.ids(self.acceptable)

    def phrase(self, rng: np.random.Generator, sep: str | None = None) -> str:
        """The constraints in words, e.g. "from Smith Labs, in navy and under $40"."""
        parts = [constraint_phrase(k, v, rng, self.category) for k, v in self.values.items()]
        return sep.join(parts) if sep is not None else join_words(parts)

    def facts(self) -> dict[str, str]:
        """What the simulated user says about this need when asked."""
        facts = {"category": self.category}
        for key, value in self.values.items():
            facts[FACT_KEY[key]] = user_fact(key, value)
        if self.quantity > 1:
            facts["quantity"] = f"{self.quantity} units"
        return facts

    def search(
        self, ctx: GenContext, query: str, top_k: int, *, min_stock: int = 1
    ) -> tuple[ToolCall, list[int]]:
        """The reference search and the rows it returns that the need accepts with stock.

        Raises GenerationError when the real index returns none of them within `top_k`.
        """
        filters = self.filters
        rows = ctx.search_rows(query, filters, top_k)
        # membership of <= 50 hits in the (ascending) acceptable rows: a binary search each,
        # not a set of up to MAX_ACCEPTABLE ints per search
        found = np.asarray(rows, dtype=np.int64)
        if len(self.acceptable):
            at = np.minimum(np.searchsorted(self.acceptable, found), len(self.acceptable) - 1)
            accepted = (self.acceptable[at] == found).tolist()
        else:
            accepted = [False] * len(rows)
        good = [
            r
            for r, ok in zip(rows, accepted, strict=True)
            if ok and ctx.stock[r] >= max(min_stock, 1)
        ]
        if not good:
            raise GenerationError("the reference search does not surface an acceptable item")
        return call("search", query=query, filters=filters, top_k=top_k), good


def query_for(ctx: GenContext, row: int, rng: np.random.Generator) -> str:
    """Search words a shopper would type for the product at `row`."""
    return pick(rng, (ctx.category.value(row), ctx.noun(row)))


# ---- orders ------------------------------------------------------------------------------------
def filler_orders(
    ctx: GenContext,
    rng: np.random.Generator,
    order_ids: list[str],
    avoid_categories: set[str],
    *,
    max_days_ago: int = 150,
) -> list[dict[str, Any]]:
    """Unrelated past orders (mostly delivered) in other categories than the task's."""
    allowed = [c for c in ctx.categories if c not in avoid_categories] or ctx.categories
    orders = []
    for order_id in order_ids:
        n_lines = 1 + int(rng.random() < 0.3)
        cats = [allowed[below(rng, len(allowed))] for _ in range(n_lines)]
        rows = list(dict.fromkeys(ctx.pick_any(rng, c) for c in cats))
        status = "cancelled" if rng.random() < 0.1 else "delivered"
        placed = between(rng, 20, max_days_ago)
        orders.append(ctx.order(order_id, rows, [1] * len(rows), status, placed))
    return orders


def look_alike(ctx: GenContext, rng: np.random.Generator, target: int) -> int | None:
    """A trap for an order look-up: the same kind of product (the same noun when one turns
    up) in another colour, so only the colour in the user's words tells them apart."""
    rows = ctx.rows_by_category[ctx.category.value(target)]
    fallback = None
    for _ in range(8):
        row = int(rows[below(rng, len(rows))])
        if ctx.color.codes[row] == ctx.color.codes[target]:
            continue
        if ctx.noun(row) == ctx.noun(target):
            return row
        fallback = row if fallback is None else fallback
    return fallback


def twin_order(
    ctx: GenContext,
    rng: np.random.Generator,
    order_id: str,
    order: dict[str, Any],
    user: dict[str, Any],
) -> dict[str, Any]:
    """The same products bought again later: an order of `order`'s lines placed after it, so
    `list_orders` shows it first and only the date the user gives tells the two apart (the
    titles are the same). Delivered when its transit allows, else shipped or processing.
    Raises GenerationError when `order` was placed today (no later day for the twin)."""
    age = (today() - dt.date.fromisoformat(order["placed"])).days
    if age < 1:
        raise GenerationError("an order placed today has no later twin")
    rows = [ctx.catalog.row_of(line["item_id"]) for line in order["items"]]
    quantities = [line["quantity"] for line in order["items"]]
    placed = between(rng, 0, age)
    transit = max(max(int(ctx.ship_days[r]) for r in rows), 1)
    status = "delivered" if placed > transit else "shipped" if placed >= 2 else "processing"
    return ctx.order(order_id, rows, quantities, status, placed, user=user)


@dataclass(frozen=True)
class AskedOrders:
    """The ids and categories of a task about `n` of the customer's orders (cancel,
    order_status): one category per asked-about order, then ids for them, for `n_distractors`
    look-alikes, for the fillers and, with `twin`, for a later twin of the first one."""

    categories: list[str]
    ids: list[str]
    n_distractors: int
    twin: bool

    @classmethod
    def draw(
        cls,
        ctx: GenContext,
        rng: np.random.Generator,
        n: int,
        n_distractors: int,
        n_fillers: int,
        twin: bool,
    ) -> AskedOrders:
        categories = [ctx.categories[int(i)] for i in rng.permutation(len(ctx.categories))[:n]]
        ids = ctx.order_ids(rng, n + n_distractors + n_fillers + int(twin))
        return cls(categories, ids, n_distractors, twin)

    def fill(
        self,
        ctx: GenContext,
        rng: np.random.Generator,
        world: World,
        asked: list[dict[str, Any]],
        look_alikes: list[dict[str, Any]],
    ) -> None:
        """`world.orders`: the `asked` orders, their look-alikes, fillers in other categories
        and, with `twin`, a later twin of the first asked one."""
        n = len(self.categories)
        filler_ids = self.ids[n + self.n_distractors : len(self.ids) - int(self.twin)]
        world.orders = (
            asked + look_alikes + filler_orders(ctx, rng, filler_ids, set(self.categories))
        )
        if self.twin:
            world.orders.append(twin_order(ctx, rng, self.ids[-1], asked[0], world.user))


def named_order(
    ctx: GenContext, order: dict[str, Any], row: int, rng: np.random.Generator, by_day: bool
) -> str:
    """How the user names an order: "my order with the navy shirt from Smith Labs (placed in
    early May)"; `by_day`: the day it was placed, which tells a twin order apart."""
    line = line_phrase(ctx, row, rng)  # drawn first: the d0-1 tasks stay as they were
    when = f"on {spoken_day(order['placed'])}" if by_day else order_when(order, rng)
    return f"my order with {line} (placed {when})"


def delivered_days_ago(order: dict[str, Any]) -> int:
    return (today() - dt.date.fromisoformat(order["delivered"])).days


def line_phrase(ctx: GenContext, row: int, rng: np.random.Generator, omit: str = "") -> str:
    """How a user names an item they own: "the navy crew neck shirt from Smith Labs".

    `omit` ("brand" or "color") leaves that attribute out, when the point is to look it up.
    """
    product = ctx.product(row)
    noun = ctx.noun(row)
    if omit == "brand":
        return f"the {product['color']} {noun}"
    if omit == "color":
        return f"the {noun} from {product['brand']}"
    # "the Smith Labs tee in navy", but "the Ware aquatic body mist" (a variant, not a colour)
    in_variant = (
        f"{noun} in {product['color']}"
        if variant_label(product["category"]) == "colour"
        else f"{product['color']} {noun}"
    )
    return pick(
        rng,
        (
            f"the {product['color']} {noun} from {product['brand']}",
            f"the {product['brand']} {in_variant}",
        ),
    )


def order_when(order: dict[str, Any], rng: np.random.Generator) -> str:
    """When the user placed an order, in words ("on May 3" / "in early May")."""
    placed = dt.date.fromisoformat(order["placed"])
    return pick(rng, (f"on {spoken_date(placed)}", f"in {month_phrase(placed)}"))


def order_ref(order: dict[str, Any]) -> str:
    """The order as the simulated user names it when asked which one."""
    placed = dt.date.fromisoformat(order["placed"])
    return f"the order I placed on {spoken_date(placed)}"


def placed_days_ago_for(status: str, rng: np.random.Generator) -> int:
    """A plausible age for an order in `status` (open orders are recent)."""
    if status == "pending":
        return between(rng, 0, 2)
    if status == "processing":
        return between(rng, 1, 3)
    if status == "shipped":
        return between(rng, 2, 6)
    return between(rng, 8, 120)


# ---- answers the final message must state --------------------------------------------------------
# Typed facts (`ecomrlve.env.judge.facts` reads them back from free text); `say` is the sentence the
# reference answer uses. Subject-bound facts name their order by id, item id and product noun.
PAYMENT_NAMES = {"visa": "Visa card", "mastercard": "Mastercard", "amex": "American Express card",
                 "paypal": "PayPal account", "gift card": "gift card"}  # fmt: skip
STATUS_SAYINGS = {
    "pending": "is pending",
    "processing": "is being processed",
    "shipped": "has shipped",
    "delivered": "was delivered",
    "cancelled": "was cancelled",
}
# the status of an order the same conversation then cancels (only these can be cancelled)
STATUS_SAID_BEFORE_CANCEL = {"pending": "was pending", "processing": "was being processed"}


def about(ctx: GenContext, order: dict[str, Any], row: int, key: str = "") -> dict[str, Any]:
    """Subject fields for a fact about `order` (its line `row`): the key and the cues that
    name it in an answer. `key` defaults to the order id (pass the item id for facts about
    one line of an order that holds several)."""
    return {
        "subject": key or order["order_id"],
        "cues": [order["order_id"], ctx.item_ids[row], ctx.noun(row)],
    }


def fact(kind: str, value: Any, say: str = "", **fields: Any) -> AnswerFact:
    return AnswerFact(kind=kind, value=str(value), say=say, **fields)


def spoken_day(iso_day: str) -> str:
    return spoken_date(dt.date.fromisoformat(iso_day))


def status_facts(
    ctx: GenContext,
    order: dict[str, Any],
    row: int,
    allowed: tuple[str, ...] = (),
    *,
    then_cancelled: bool = False,
) -> list[AnswerFact]:
    """The order's status and its delivery date (or the expected one), as one sentence.

    `then_cancelled`: the same conversation cancels the order, so its status and arrival are
    told in the past ("was being processed and was due to arrive on…"): said in the present
    after the cancel they would deny it (`ecomrlve.env.judge.claims`)."""
    status, subject = order["status"], about(ctx, order, row)
    saying = STATUS_SAYINGS[status]
    if then_cancelled:
        saying = STATUS_SAID_BEFORE_CANCEL.get(status, saying)
    say = f"Your order {order['order_id']} with the {ctx.noun(row)} {saying}"
    facts = [fact("status", status, allowed=list(allowed), **subject)]
    date = order["delivered"] or order["eta"]
    if date is not None:
        placed = [order["placed"]]
        if order["delivered"]:
            say += f" on {spoken_day(date)}"
        elif then_cancelled:
            say += f" and was due to arrive on {spoken_day(date)}"
        else:
            say += f" and should arrive on {spoken_day(date)}"
        # the arrival date (delivered or expected): "placed June 16" states no arrival
        facts.append(
            fact("date", date, allowed=placed, allowed_roles=["placed"], role="arrival", **subject)
        )
    facts[0].say = say + "."
    return facts


def cancelled_fact(ctx: GenContext, order: dict[str, Any], row: int, was: str = "") -> AnswerFact:
    say = f"I've cancelled your order {order['order_id']} with the {ctx.noun(row)}."
    return fact("status", "cancelled", say, allowed=[was] if was else [], **about(ctx, order, row))


def shipped_no_cancel_facts(ctx: GenContext, order: dict[str, Any], row: int) -> list[AnswerFact]:
    """A shipped order cannot be cancelled: say so, and that a return is the way out."""
    subject = about(ctx, order, row)
    say = (
        f"Your order {order['order_id']} with the {ctx.noun(row)} has already shipped, so it "
        "can't be cancelled any more; you can return it once it arrives."
    )
    return [
        fact("status", "shipped", required=False, **subject),
        fact("verdict", "cancel:no", say, **subject),
        fact("term", "return_instead", required=False, **subject),
    ]


def final_sale_facts(category: str, subject: dict[str, Any] | None = None) -> list[AnswerFact]:
    say = f"Unfortunately {category} items are final sale, so it can't be returned or exchanged."
    subject = subject or {}
    return [
        fact("verdict", "return:no", say, **subject),
        fact("term", "final_sale", required=False, **subject),
    ]


def window_fact(days: int, say: str = "", role: str = "window", **fields: Any) -> AnswerFact:
    """A return window in days (`role` "window"), or the days left of it (`role` "left"): the
    answer must state each value in its own role ("the 30-day window", "9 more days")."""
    return fact("duration", days, say, role=role, **fields)


def fee_fact(fee: float, say: str = "", **fields: Any) -> AnswerFact:
    pct = round(fee * 100)
    say = say or (
        f"There's a {pct}% restocking fee on opened items." if pct else "There's no restocking fee."
    )
    return fact("percent", pct, say, **fields)


def paid_with(rng: np.random.Generator, saved: list[str]) -> str:
    """The card an order was paid with: an older card that is no longer saved, its brand and
    last four digits drawn from `rng` (independent of the order id, so only `get_order` tells
    it; the system prompt lists the saved cards, none of which is the answer)."""
    for _ in range(8):
        card = f"{pick(rng, RETIRED_CARD_BRANDS)}-{between(rng, 1000, 10000)}"
        if card not in saved:
            return card
    raise GenerationError("no retired card outside the saved ones")


def detail_fact(ctx: GenContext, order: dict, row: int, detail: str) -> AnswerFact:
    """The detail only `get_order` shows: where it goes, what paid for it, what it cost."""
    subject = about(ctx, order, row)
    if detail == "address":
        address = order["shipping_address"]
        return fact("address", address, f"It's going to {address}.", **subject)
    if detail == "payment":
        method = order["payment_method"]
        brand, _, last4 = method.rpartition("-")
        say = f"It was paid with your {PAYMENT_NAMES.get(brand, brand)} ending in {last4}."
        return fact("payment", method, say, **subject)
    line = order["items"][0]
    paid = [f"{line['price'] * line['quantity']:.2f}", f"{order['total']:.2f}"]
    price = f"{line['price']:.2f}"
    say = f"You paid {money(line['price'])} for it."
    # the item's price and the order's total (shipping in) each in its role: "you paid $34.98
    # for it; the order total was $29.99" swaps them
    roles = ["price", "order"]
    return fact("money", price, say, allowed=paid, allowed_roles=roles, role="price", **subject)


# ---- policy look-ups ---------------------------------------------------------------------------
def policy_call(
    ctx: GenContext, queries: str | list[str], policy_id: str, found: list[str] | None = None
) -> ToolCall:
    """A `search_policy` call with the first of `queries` whose results (the env's own
    ranking) include `policy_id`; the id is appended to `found` (the goal's
    `relevant_policies`: retrieving it is progress)."""
    for query in [queries] if isinstance(queries, str) else queries:
        if policy_id in ctx.policy_hits(query):
            if found is not None and policy_id not in found:
                found.append(policy_id)
            return call("search_policy", query=query)
    raise GenerationError(f"no policy search among {queries!r} finds {policy_id}")


def return_policy_id(ctx: GenContext, category: str, membership: str) -> str:
    """The id of the returns policy row that decides (category, membership)."""
    ids = ctx.policy_ids
    return ids.get(("returns", category, membership)) or ids[("returns", category, "any")]


def returns_policy_call(
    ctx: GenContext,
    category: str,
    membership: str,
    rng: np.random.Generator,
    found: list[str] | None = None,
) -> ToolCall:
    """A `search_policy` that finds the returns rule of (category, membership), phrased as a
    careful agent would; a final-sale category has one rule for every membership."""
    words = list(rng.permutation(["return policy", "returns", "return window"]))
    queries = [f"{w} {category} {membership} members" for w in words]
    queries += [f"{category} {w}" for w in words] + [f"can I return {category}"]
    return policy_call(ctx, queries, return_policy_id(ctx, category, membership), found)
