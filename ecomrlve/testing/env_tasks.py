"""Hand-made tasks over a small synthetic catalog, one per goal kind (tests and benchmarks).

Items are picked from the catalog by rules (first family that fits), so the fixtures follow the
catalog synthesis instead of hard-coding ids; every acceptance set is computed with
`Catalog.filter_mask`, exactly as a generator would.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from ecomrlve.catalogs import CLASSIC_SHOP, build_policies, build_products
from ecomrlve.env import Catalog, reference_turns
from ecomrlve.tasks import (
    AnswerFact,
    ExchangeSpec,
    Goal,
    PurchaseSpec,
    RecommendSpec,
    ReturnSpec,
    Slot,
    Task,
    ToolCall,
    WorldEvent,
)

# Text the search index must tokenise like tantivy: hyphens, tabs, doubled spaces, accents and
# ligatures, CJK, tokens at and over the 40-character limit, punctuation, empty strings.
TRICKY_TEXTS = [
    "Bradshaw travel aluminium hybrid bike - grey, frame size S",
    "  padded\ttabs\nand  double  spaces ",
    "2-in-1 LAPTOPS: 15.6\" (USB-C), 4K/60Hz; don't",
    "Crème brûlée Ärmel straße ﬁne 東京 café",
    "x" * 39 + " " + "y" * 40 + " " + "z" * 80 + " short",
    "",
    " ",
    "running runs ran runner's, (jackets) [boots] {shoes} <hats>",
]
# lower-cased, "İ" gives "i" + a combining dot, which the plain tokenizer splits off: text with
# it cannot be pre-analysed (`search.index_terms` gives None) and tantivy analyses it itself
UNSPLITTABLE_TEXT = "İstanbul rug"

N_PRODUCTS = 3000
CATALOG_SEED = 7
TODAY = "2025-03-14"
USER = {
    "user_id": "U0001",
    "name": "Ada Lovelace",
    "membership": "standard",
    "address": "12 Analytical St, London",
    "payment_methods": ["visa-4242", "paypal"],
}


@functools.lru_cache(maxsize=1)
def small_catalog() -> Catalog:
    return Catalog.from_frames(
        build_products(N_PRODUCTS, CATALOG_SEED), build_policies(CLASSIC_SHOP)
    )


def _ids(catalog: Catalog, filters: dict[str, Any]) -> list[str]:
    return [catalog.item_ids[i] for i in np.flatnonzero(catalog.filter_mask(filters))]


def _first(catalog: Catalog, predicate) -> dict[str, Any]:
    for item_id in catalog.item_ids:
        row = catalog.row(item_id)
        if predicate(row):
            return row
    raise LookupError("no product fits the fixture rule")


def _variant_filters(row: dict[str, Any]) -> dict[str, Any]:
    """Search filters that find `row`'s exact variant (category, brand, colour, size), in stock."""
    return {
        "category": row["category"],
        "brand": row["brand"],
        "color": row["color"],
        "size": row["size"],
        "in_stock": True,
    }


def make_state(
    cart: list | None = None, orders: list | None = None, membership: str = "standard"
) -> dict[str, Any]:
    user = dict(USER, membership=membership)
    return {"today": TODAY, "user": user, "cart": cart or [], "orders": orders or [], "returns": []}


def _order(
    order_id: str,
    status: str,
    items: list[dict],
    placed: str,
    delivered: str | None,
    eta: str | None,
) -> dict[str, Any]:
    lines = [{"item_id": r["item_id"], "quantity": 1, "price": r["price"]} for r in items]
    return {
        "order_id": order_id,
        "status": status,
        "placed": placed,
        "delivered": delivered,
        "eta": eta,
        "items": lines,
        "shipping_address": USER["address"],
        "total": round(sum(x["price"] for x in lines), 2),
    }


def _task(
    task_id: str,
    scenario: str,
    prompt: str,
    goal: Goal,
    initial_state: dict[str, Any],
    reference: list[tuple[str, dict[str, Any]]],
    seed: int = 1,
) -> Task:
    return Task(
        task_id=task_id,
        scenario=scenario,
        difficulty=1,
        min_steps=len(reference),
        seed=seed,
        index=0,
        prompt=prompt,
        goal=goal,
        initial_state=initial_state,
        reference=[ToolCall(name=n, arguments=a) for n, a in reference],
    )


# --------------------------------------------------------------------------------------------
# the tasks
# --------------------------------------------------------------------------------------------


def purchase_task(catalog: Catalog | None = None) -> Task:
    """Buy one t-shirt of a given brand, colour and size."""
    catalog = catalog or small_catalog()

    def other_variant_in_stock(r: dict[str, Any]) -> bool:  # the wrong-variant hack needs one
        rows = catalog.family_rows(catalog.row_of(r["item_id"]))
        own = (r["color"], r["size"])
        return any(
            catalog.stock[x] > 0 and (catalog.value("color", x), catalog.value("size", x)) != own
            for x in rows
        )

    target = _first(
        catalog,
        lambda r: r["category"] == "t-shirts" and r["stock"] >= 3 and other_variant_in_stock(r),
    )
    filters = _variant_filters(target)
    acceptable = _ids(catalog, filters)
    return _task(
        "fx-purchase",
        "product_discovery",
        f"Hi! Please buy me a {target['brand']} t-shirt in {target['color']}, size "
        f"{target['size']}.",
        Goal(
            purchase=PurchaseSpec(slots=[Slot(acceptable=acceptable, quantity=1)]),
            relevant_ids=acceptable,
        ),
        make_state(),
        [
            ("search", {"query": "t-shirt", "filters": filters, "top_k": 5}),
            ("add_to_cart", {"item_id": target["item_id"], "quantity": 1}),
            ("checkout", {}),
        ],
    )


def recommend_task(catalog: Catalog | None = None) -> Task:
    """Recommend well-rated headphones under a price limit."""
    catalog = catalog or small_catalog()
    filters = {"category": "headphones", "max_price": 150.0, "min_rating": 4.0, "in_stock": True}
    acceptable = _ids(catalog, filters)
    top = [r["item_id"] for r in catalog.search("headphones", filters, 3)]
    return _task(
        "fx-recommend",
        "product_discovery",
        "Can you recommend some headphones rated 4 stars or more, at most $150, in stock?",
        Goal(
            recommend=RecommendSpec(acceptable=acceptable, min_items=1, max_items=3),
            relevant_ids=acceptable,
        ),
        make_state(),
        [
            ("search", {"query": "headphones", "filters": filters, "top_k": 3}),
            ("recommend", {"item_ids": top}),
        ],
        seed=2,
    )


def cancel_task(catalog: Catalog | None = None) -> Task:
    """Cancel the processing order; the shipped one must stay."""
    catalog = catalog or small_catalog()
    a = _first(catalog, lambda r: r["category"] == "jackets")
    b = _first(catalog, lambda r: r["category"] == "boots")
    orders = [
        _order("O1001", "processing", [a], "2025-03-12", None, "2025-03-18"),
        _order("O1002", "shipped", [b], "2025-03-10", None, "2025-03-16"),
    ]
    return _task(
        "fx-cancel",
        "cancel",
        "I ordered a jacket two days ago by mistake. Please cancel that order.",
        Goal(
            cancel=["O1001"],
            relevant_ids=["O1001", a["item_id"]],
            answer_facts=[
                AnswerFact(kind="text", value="cancelled", alternatives=["cancelled", "canceled"])
            ],
        ),
        make_state(orders=orders),
        [
            ("list_orders", {}),
            ("cancel_order", {"order_id": "O1001", "reason": "ordered by mistake"}),
        ],
        seed=3,
    )


def return_task(catalog: Catalog | None = None) -> Task:
    """Return a delivered jacket (inside its window); a coffee in the same order is final sale."""
    catalog = catalog or small_catalog()
    jacket = _first(catalog, lambda r: r["category"] == "jackets")
    coffee = _first(catalog, lambda r: r["category"] == "coffee")
    orders = [
        _order("O2001", "delivered", [jacket, coffee], "2025-03-01", "2025-03-05", "2025-03-05")
    ]
    return _task(
        "fx-return",
        "return",
        "The jacket I got last week doesn't fit. I'd like to return it.",
        Goal(
            returns=[ReturnSpec(order_id="O2001", item_id=jacket["item_id"])],
            relevant_ids=["O2001", jacket["item_id"]],
        ),
        make_state(orders=orders),
        [
            ("list_orders", {}),
            (
                "return_item",
                {"order_id": "O2001", "item_id": jacket["item_id"], "reason": "does not fit"},
            ),
        ],
        seed=4,
    )


def _exchange_pair(catalog: Catalog) -> tuple[dict, dict]:
    for item_id in catalog.item_ids:
        row = catalog.row(item_id)
        if row["department"] != "apparel":
            continue
        for r in catalog.family_rows(catalog.row_of(item_id)):
            other = catalog.row(catalog.item_ids[r])
            if (
                other["item_id"] != item_id
                and other["color"] == row["color"]
                and other["size"] != row["size"]
                and other["stock"] >= 2
            ):
                return row, other
    raise LookupError("no apparel family with two sizes")


def exchange_task(catalog: Catalog | None = None) -> Task:
    """Exchange a delivered shirt for another size of the same product."""
    catalog = catalog or small_catalog()
    old, new = _exchange_pair(catalog)
    acceptable = [
        catalog.item_ids[r]
        for r in catalog.family_rows(catalog.row_of(old["item_id"]))
        if catalog.value("color", r) == old["color"]
        and catalog.value("size", r) == new["size"]
        and catalog.stock[r] > 0
    ]
    orders = [_order("O3001", "delivered", [old], "2025-03-02", "2025-03-06", "2025-03-06")]
    return _task(
        "fx-exchange",
        "return",
        f"The {old['category']} I bought is the wrong size. Can I swap it for size {new['size']}, "
        "same colour?",
        Goal(
            exchanges=[
                ExchangeSpec(order_id="O3001", item_id=old["item_id"], acceptable_new=acceptable)
            ],
            relevant_ids=["O3001", old["item_id"], *acceptable],
        ),
        make_state(orders=orders),
        [
            ("list_orders", {}),
            ("get_product", {"item_id": old["item_id"]}),
            (
                "exchange_item",
                {"order_id": "O3001", "item_id": old["item_id"], "new_item_id": new["item_id"]},
            ),
        ],
        seed=5,
    )


def order_status_task(catalog: Catalog | None = None) -> Task:
    """Answer when a shipped order arrives (answer facts only)."""
    catalog = catalog or small_catalog()
    item = _first(catalog, lambda r: r["category"] == "laptops")
    orders = [_order("O4001", "shipped", [item], "2025-03-11", None, "2025-03-17")]
    return _task(
        "fx-status",
        "order_status",
        "Where is my laptop? When will it arrive?",
        Goal(
            answer_facts=[
                AnswerFact(
                    kind="text", value="2025-03-17", alternatives=["2025-03-17", "March 17"]
                ),
                AnswerFact(kind="text", value="shipped", alternatives=["shipped"]),
            ],
            relevant_ids=["O4001"],
        ),
        make_state(orders=orders),
        [("list_orders", {})],
        seed=6,
    )


def policy_task(catalog: Catalog | None = None) -> Task:
    """Answer a policy question (boots, standard membership), from `catalog`'s policy book
    (a store built by `write_store` has its seed's book, not the classic shop's)."""
    catalog = catalog or small_catalog()
    days = catalog.policies.return_rule("boots", "standard").window_days
    return _task(
        "fx-policy",
        "policy",
        "How many days do I have to return boots? I'm a standard member.",
        Goal(
            answer_facts=[
                AnswerFact(
                    kind="text",
                    value=f"{days} days",
                    alternatives=[f"{days} days", f"{days}-day"],
                )
            ]
        ),
        make_state(),
        [("search_policy", {"query": "return boots standard"})],
        seed=8,
    )


def ask_user_task(
    catalog: Catalog | None = None, typo_rate: float = 0.0, intent_switch: str | None = None
) -> Task:
    """Buy two items of a sneaker whose colour and size only the user knows."""
    catalog = catalog or small_catalog()
    target = _first(catalog, lambda r: r["category"] == "sneakers" and r["stock"] >= 4)
    filters = _variant_filters(target)
    acceptable = _ids(catalog, filters)
    return _task(
        "fx-ask",
        "product_discovery",
        f"I need two pairs of {target['brand']} sneakers.",
        Goal(
            user_facts={"color": target["color"], "size": target["size"], "quantity": "two pairs"},
            purchase=PurchaseSpec(
                slots=[Slot(acceptable=acceptable, quantity=2)],
                budget=round(target["price"] * 2 + 1, 2),
            ),
            relevant_ids=acceptable,
            typo_rate=typo_rate,
            intent_switch=intent_switch,
        ),
        make_state(),
        [
            ("ask_user", {"question": "Which colour and size would you like?"}),
            ("search", {"query": "sneakers", "filters": filters, "top_k": 5}),
            ("add_to_cart", {"item_id": target["item_id"], "quantity": 2}),
            ("checkout", {}),
        ],
        seed=9,
    )


def cart_task(catalog: Catalog | None = None) -> Task:
    """The cart holds two things; buy two of the mug-like item, drop the other, check out."""
    catalog = catalog or small_catalog()
    keep = _first(catalog, lambda r: r["category"] == "cookware" and r["stock"] >= 3)
    drop = _first(catalog, lambda r: r["category"] == "skincare" and r["stock"] >= 1)
    return _task(
        "fx-cart",
        "cart",
        "Please remove the skincare item from my cart, make it two of the cookware and order.",
        Goal(
            purchase=PurchaseSpec(slots=[Slot(acceptable=[keep["item_id"]], quantity=2)]),
            relevant_ids=[keep["item_id"], drop["item_id"]],
        ),
        make_state(
            cart=[
                {"item_id": keep["item_id"], "quantity": 1},
                {"item_id": drop["item_id"], "quantity": 1},
            ]
        ),
        [
            ("view_cart", {}),
            ("remove_from_cart", {"item_id": drop["item_id"]}),
            ("set_quantity", {"item_id": keep["item_id"], "quantity": 2}),
            ("checkout", {}),
        ],
        seed=10,
    )


def event_task(catalog: Catalog | None = None) -> Task:
    """`purchase_task` in a shop that changes (issue 29): the checkout times out once, and the
    shirt's price drops by 10% after it is added; the reference retries and tells the price."""
    catalog = catalog or small_catalog()
    task = purchase_task(catalog)
    item_id = task.reference[1].arguments["item_id"]
    old = float(catalog.row(item_id)["price"])
    new = round(old * 0.9, 2)
    events = [
        WorldEvent(
            kind="tool_failure", after_calls=2, tool="checkout", error="service_unavailable"
        ),
        WorldEvent(kind="price_change", after_calls=2, item_id=item_id, price=new, old_price=old,
                   say=f"Note: the shirt's price changed from ${old:.2f} to ${new:.2f} before "
                   "checkout; you were charged the new price."),
    ]  # fmt: skip
    reference = [*task.reference, ToolCall(name="checkout")]
    return task.model_copy(
        update={
            "task_id": "fx-events",
            "difficulty": 8,
            "min_steps": len(reference),
            "reference": reference,
            "events": events,
        }
    )


def all_tasks(catalog: Catalog | None = None) -> list[Task]:
    catalog = catalog or small_catalog()
    return [
        purchase_task(catalog),
        recommend_task(catalog),
        cancel_task(catalog),
        return_task(catalog),
        exchange_task(catalog),
        order_status_task(catalog),
        policy_task(catalog),
        ask_user_task(catalog),
        cart_task(catalog),
    ]


def reference(task: Task) -> list[str]:
    return reference_turns(task)


def sql_rows(data_dir: Any, query: str, params: list[Any] | None = None) -> list[tuple]:
    """The rows of a read-only query on the store in `data_dir` (what a command wrote)."""
    from ecomrlve import store

    con = store.connect(data_dir, read_only=True)
    try:
        return con.execute(query, params or []).fetchall()
    finally:
        con.close()


def write_store(data_dir, tasks: list[Task] | None = None) -> Catalog:
    """A data directory with the fixture catalog, the fixture tasks and the DuckDB views."""
    import polars as pl

    from ecomrlve.catalogs import build_catalog
    from ecomrlve.store import DataPaths, atomic_write_parquet, refresh_views

    build_catalog(data_dir, N_PRODUCTS, CATALOG_SEED)
    catalog = Catalog.load(data_dir)
    tasks = tasks if tasks is not None else all_tasks(catalog)
    paths = DataPaths.of(data_dir)
    for task in tasks:
        part = paths.tasks / f"scenario={task.scenario}" / f"difficulty={task.difficulty}"
        row = task.to_row()
        row.pop("scenario")
        row.pop("difficulty")
        atomic_write_parquet(pl.DataFrame([row]), part / f"{task.task_id}.parquet")
    refresh_views(data_dir)
    return catalog


def world_task(catalog: Catalog | None = None, membership: str = "standard") -> Task:
    """A task whose world has an order in every status, for testing each tool's rules.

    O5001 processing, O5002 shipped, O5003 delivered 9 days ago (jacket + coffee),
    O5004 delivered 45 days ago (jacket), O5005 cancelled, O5006 pending. The prompt names them
    all so any of them may be used without a hallucination penalty.
    """
    catalog = catalog or small_catalog()
    jacket = _first(catalog, lambda r: r["category"] == "jackets")
    coffee = _first(catalog, lambda r: r["category"] == "coffee")
    boots = _first(catalog, lambda r: r["category"] == "boots")
    orders = [
        _order("O5001", "processing", [boots], "2025-03-13", None, "2025-03-19"),
        _order("O5002", "shipped", [boots], "2025-03-09", None, "2025-03-15"),
        _order("O5003", "delivered", [jacket, coffee], "2025-03-01", "2025-03-05", "2025-03-05"),
        _order("O5004", "delivered", [jacket], "2025-01-20", "2025-01-28", "2025-01-28"),
        _order("O5005", "cancelled", [boots], "2025-03-02", None, None),
        _order("O5006", "pending", [coffee], "2025-03-14", None, "2025-03-20"),
    ]
    return _task(
        "fx-world",
        "journey",
        "My orders are O5001, O5002, O5003, O5004, O5005 and O5006.",
        Goal(answer_facts=[]),
        make_state(orders=orders, membership=membership),
        [],
        seed=11,
    )
