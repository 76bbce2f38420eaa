"""Store policies: one table that the policy tool searches and that every rule is read from.

The rows are data (`policies.parquet`); `PolicyBook` answers rule questions from those rows, so
the env's tools, the generators' eligibility checks and the text the agent can search all agree.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from ecomrlve.catalogs.taxonomy import CATEGORIES, Category

MEMBERSHIPS: tuple[str, ...] = ("standard", "plus")
CANCELLABLE_STATUSES: tuple[str, ...] = ("pending", "processing")
ORDER_STATUSES: tuple[str, ...] = ("pending", "processing", "shipped", "delivered", "cancelled")
POLICY_STREAM = 0x5A0B  # the last entropy word of the policy draw: SeedSequence([seed, this])

# What a shop's terms are drawn from (`Shop.for_seed`): every value a policy answer states
# varies with the catalog seed, so an answer has to be read from this store's book.
WINDOW_CHOICES: tuple[int, ...] = (14, 21, 30, 45, 60, 90)
PLUS_EXTRA_CHOICES: tuple[int, ...] = (7, 14, 15, 30, 45)
RESTOCKING_FEE_CHOICES: tuple[float, ...] = (0.0, 0.0, 0.05, 0.10, 0.15, 0.20)
FINAL_SALE_CANDIDATES: tuple[str, ...] = (
    "coffee", "tea", "fragrance", "skincare", "bedding", "headphones", "yoga mats",
)  # fmt: skip
SHIPPING_FEE_CHOICES: tuple[float, ...] = (3.99, 4.99, 5.99, 6.99, 7.99)
THRESHOLD_CHOICES: tuple[float, ...] = (25.0, 35.0, 49.0, 50.0, 59.0, 75.0, 99.0)
EXPRESS_FEE_CHOICES: tuple[float, ...] = (9.99, 12.99, 14.99, 19.99)
PLUS_PRICE_CHOICES: tuple[float, ...] = (39.0, 49.0, 59.0, 79.0, 99.0)
REFUND_DAYS_CHOICES: tuple[tuple[int, int], ...] = ((3, 5), (5, 7), (5, 10), (7, 10), (7, 14))


@dataclass(frozen=True)
class Shop:
    """One store's terms, from which `build_policies` writes the policy rows.

    `windows`: department -> (return window in days for standard members, extra days for
    Plus members, restocking fee on opened items); `final_sale`: categories that can never be
    returned or exchanged.
    """

    windows: dict[str, tuple[int, int, float]]
    final_sale: frozenset[str]
    shipping_fee: float
    free_shipping_threshold: float
    express_fee: float
    plus_price: float
    refund_days: tuple[int, int]

    @classmethod
    def for_seed(cls, seed: int) -> Shop:
        """The shop of catalog seed `seed` (same seed, same shop)."""
        rng = np.random.default_rng(np.random.SeedSequence([seed, POLICY_STREAM]))

        def choose(options: tuple[Any, ...]) -> Any:
            return options[int(rng.integers(len(options)))]

        departments = sorted({c.department for c in CATEGORIES})
        windows = {
            d: (choose(WINDOW_CHOICES), choose(PLUS_EXTRA_CHOICES), choose(RESTOCKING_FEE_CHOICES))
            for d in departments
        }
        if not any(fee for _, _, fee in windows.values()):  # at least one fee to ask about
            d = choose(tuple(departments))
            windows[d] = (*windows[d][:2], choose(RESTOCKING_FEE_CHOICES[2:]))
        k = 2 + int(rng.integers(3))  # two to four final-sale categories
        picked = rng.choice(len(FINAL_SALE_CANDIDATES), size=k, replace=False)
        return cls(
            windows=windows,
            final_sale=frozenset(FINAL_SALE_CANDIDATES[int(i)] for i in picked),
            shipping_fee=choose(SHIPPING_FEE_CHOICES),
            free_shipping_threshold=choose(THRESHOLD_CHOICES),
            express_fee=choose(EXPRESS_FEE_CHOICES),
            plus_price=choose(PLUS_PRICE_CHOICES),
            refund_days=choose(REFUND_DAYS_CHOICES),
        )


# The book every store had before shops were drawn per seed: hand-written fixtures
# (`ecomrlve.testing.env_tasks`) state its numbers, and a policies table written without the
# numeric shipping/refund columns is read with these.
CLASSIC_SHOP = Shop(
    windows={
        "apparel": (30, 30, 0.0),
        "footwear": (30, 30, 0.0),
        "electronics": (15, 15, 0.10),
        "home": (30, 15, 0.0),
        "beauty": (14, 14, 0.0),
        "sports": (30, 30, 0.05),
        "grocery": (0, 0, 0.0),
    },
    final_sale=frozenset({"coffee", "tea", "fragrance"}),
    shipping_fee=4.99,
    free_shipping_threshold=50.0,
    express_fee=12.99,
    plus_price=49.0,
    refund_days=(5, 7),
)


@dataclass(frozen=True)
class ReturnRule:
    category: str
    membership: str
    returnable: bool
    window_days: int
    restocking_fee: float


@dataclass(frozen=True)
class Eligibility:
    eligible: bool
    reason: str
    window_days: int


def _dollars(amount: float) -> str:
    """ "$50" for whole dollars, "$49.50" otherwise."""
    return f"${amount:.0f}" if float(amount).is_integer() else f"${amount:.2f}"


def _are(category: str) -> str:
    """The verb for a category name: "t-shirts are", but "coffee is" (a mass noun)."""
    return "are" if category.endswith("s") else "is"


POLICY_COLUMNS = {
    "policy_id": pl.String,
    "topic": pl.String,
    "title": pl.String,  # the section title, phrased the way customers ask
    "department": pl.String,
    "category": pl.String,
    "membership": pl.String,
    "returnable": pl.Boolean,
    "window_days": pl.Int64,
    "fee": pl.Float64,
    "threshold": pl.Float64,  # free-shipping threshold (shipping rows)
    "express_fee": pl.Float64,  # express price (shipping rows)
    "min_days": pl.Int64,  # refunds: from `min_days` to `window_days` business days
    "text": pl.String,
}


def build_policies(shop: Shop) -> pl.DataFrame:
    """The policy table of `shop` (`Shop.for_seed(catalog seed)` for a built catalog)."""
    rows = _PolicyRows()
    for cat in CATEGORIES:
        _add_category_policies(rows, shop, cat)
    _add_order_and_shipping_policies(rows, shop)
    _add_membership_and_refund_policies(rows, shop)
    return pl.DataFrame(rows.rows, schema=POLICY_COLUMNS)


class _PolicyRows:
    """The policy rows in order; `add` numbers them `POL-001`, `POL-002`, ..."""

    def __init__(self) -> None:
        self.rows: list[dict] = []

    def add(
        self,
        topic: str,
        category: str,
        membership: str,
        text: str,
        *,
        returnable: bool = True,
        window: int | None = None,
        fee: float = 0.0,
        department: str = "",
        title: str = "",
        threshold: float | None = None,
        express_fee: float | None = None,
        min_days: int | None = None,
    ) -> None:
        self.rows.append(
            {
                "policy_id": f"POL-{len(self.rows) + 1:03d}",
                "topic": topic,
                "title": title,
                "department": department,
                "category": category,
                "membership": membership,
                "returnable": returnable,
                "window_days": window,
                "fee": fee,
                "threshold": threshold,
                "express_fee": express_fee,
                "min_days": min_days,
                "text": text,
            }
        )


def _add_category_policies(rows: _PolicyRows, shop: Shop, cat: Category) -> None:
    """A category's returns (final sale, or one row per membership) and exchanges."""
    base, extra, fee = shop.windows[cat.department]
    if cat.name in shop.final_sale or base == 0:
        rows.add(
            "returns",
            cat.name,
            "any",
            f"{cat.name.capitalize()} {_are(cat.name)} final sale and cannot be returned or "
            "exchanged, "
            "for any membership.",
            returnable=False,
            window=0,
            department=cat.department,
            title=f"Can I return {cat.name}? {cat.name.capitalize()} {_are(cat.name)} "
            "final sale: no returns, refunds or exchanges",
        )
        return
    for membership, window in (("standard", base), ("plus", base + extra)):
        fee_text = f" A restocking fee of {fee:.0%} applies to opened items." if fee else ""
        rows.add(
            "returns",
            cat.name,
            membership,
            f"Returns of {cat.name} for {membership} members: accepted within {window} days "
            f"of delivery for a full refund.{fee_text}",
            window=window,
            fee=fee,
            department=cat.department,
            title=f"Returning {cat.name} ({membership} members): how many days I have to "
            f"send {cat.name} back, refund" + (" and restocking fee" if fee else ""),
        )
    rows.add(
        "exchanges",
        cat.name,
        "any",
        f"{cat.name.capitalize()} can be exchanged for another size or colour of the same "
        "product while the return window is open.",
        department=cat.department,
        title=f"Exchanging {cat.name}: swap for a different size or colour",
    )


def _add_order_and_shipping_policies(rows: _PolicyRows, shop: Shop) -> None:
    """Cancellation, and shipping for standard and Plus members."""
    rows.add(
        "cancellation",
        "",
        "any",
        "Orders can be cancelled while they are pending or processing. Once an order has "
        "shipped it can no longer be cancelled: wait for delivery and start a return instead.",
        title="Cancelling an order: can I cancel my order, and what if it has already shipped",
    )
    threshold, express = shop.free_shipping_threshold, shop.express_fee
    rows.add(
        "shipping",
        "",
        "standard",
        f"Standard shipping costs ${shop.shipping_fee:.2f}; orders of {_dollars(threshold)} "
        f"or more ship free. Express shipping costs ${express:.2f}.",
        fee=shop.shipping_fee,
        threshold=threshold,
        express_fee=express,
        title="Shipping fees for standard members: how much delivery is, the free shipping "
        "threshold and express delivery",
    )
    rows.add(
        "shipping",
        "",
        "plus",
        "Plus members get free standard shipping on every order and free express shipping on "
        f"orders of {_dollars(threshold)} or more.",
        fee=0.0,
        threshold=threshold,
        express_fee=express,
        title="Shipping costs for Plus members: free delivery and free express shipping for "
        "Plus members",
    )


def _add_membership_and_refund_policies(rows: _PolicyRows, shop: Shop) -> None:
    """What Plus membership gives and costs; how long refunds take."""
    rows.add(
        "membership",
        "",
        "plus",
        "Plus members get longer return windows and free shipping; Plus membership costs "
        f"{_dollars(shop.plus_price)} a year.",
        fee=shop.plus_price,
        title="Plus membership: what Plus members get, the benefits for Plus members and what "
        "the membership costs per year",
    )
    low, high = shop.refund_days
    rows.add(
        "refunds",
        "",
        "any",
        f"Refunds go back to the original payment method within {low} to {high} business days "
        "after the returned item is received.",
        window=high,
        min_days=low,
        title="Refunds: how long refunds take and when I get my money back",
    )


class PolicyBook:
    """Rule look-ups answered from the policy rows (the tools and the generators ask here)."""

    def __init__(self, policies: pl.DataFrame):
        self.frame = policies
        self._returns: dict[tuple[str, str], ReturnRule] = {}
        for row in policies.filter(pl.col("topic") == "returns").iter_rows(named=True):
            memberships = MEMBERSHIPS if row["membership"] == "any" else (row["membership"],)
            for membership in memberships:
                self._returns[(row["category"], membership)] = ReturnRule(
                    category=row["category"],
                    membership=membership,
                    returnable=bool(row["returnable"]),
                    window_days=int(row["window_days"] or 0),
                    restocking_fee=float(row["fee"] or 0.0),
                )
        # a table written before the numeric shipping / refund columns is the classic book
        numeric = {"threshold", "express_fee", "min_days"} <= set(policies.columns)
        standard = self._row(policies, "shipping", "standard")
        refunds = self._row(policies, "refunds", "any")
        plus = self._row(policies, "membership", "plus")
        classic = CLASSIC_SHOP
        self.standard_shipping_fee = float(standard["fee"]) if standard else classic.shipping_fee
        self.free_shipping_threshold = (
            float(standard["threshold"])
            if numeric and standard
            else classic.free_shipping_threshold
        )
        self.express_fee = (
            float(standard["express_fee"]) if numeric and standard else classic.express_fee
        )
        self.plus_price = float(plus["fee"]) if numeric and plus else classic.plus_price
        self.refund_days: tuple[int, int] = (
            (int(refunds["min_days"]), int(refunds["window_days"]))
            if numeric and refunds
            else classic.refund_days
        )

    @staticmethod
    def _row(policies: pl.DataFrame, topic: str, membership: str) -> dict[str, Any] | None:
        rows = policies.filter(
            (pl.col("topic") == topic) & (pl.col("membership") == membership)
        ).to_dicts()
        return rows[0] if rows else None

    def return_rule(self, category: str, membership: str) -> ReturnRule:
        try:
            return self._returns[(category, membership)]
        except KeyError:
            raise ValueError(
                f"no return policy for category {category!r}, membership {membership!r}"
            ) from None

    def return_eligibility(
        self, category: str, membership: str, days_since_delivery: int
    ) -> Eligibility:
        rule = self.return_rule(category, membership)
        if not rule.returnable:
            return Eligibility(
                False, f"{category} {_are(category)} final sale and cannot be returned", 0
            )
        if days_since_delivery > rule.window_days:
            return Eligibility(
                False,
                f"the {rule.window_days}-day return window for {category} closed "
                f"{days_since_delivery - rule.window_days} day(s) ago",
                rule.window_days,
            )
        return Eligibility(
            True, f"within the {rule.window_days}-day return window", rule.window_days
        )

    @staticmethod
    def can_cancel(status: str) -> bool:
        return status in CANCELLABLE_STATUSES

    def shipping_fee(self, subtotal: float, membership: str) -> float:
        if membership == "plus" or subtotal >= self.free_shipping_threshold:
            return 0.0
        return self.standard_shipping_fee
