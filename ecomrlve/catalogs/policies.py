"""Store policies: one table that the policy tool searches and that every rule is read from.

The rows are data (`policies.parquet`); `PolicyBook` answers rule questions from those rows, so
the env's tools, the generators' eligibility checks and the text the agent can search all agree.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from ecomrlve.catalogs.taxonomy import CATEGORIES

MEMBERSHIPS: tuple[str, ...] = ("standard", "plus")

# department -> (return window days for standard, extra days for plus members, restocking fee)
RETURN_WINDOWS: dict[str, tuple[int, int, float]] = {
    "apparel": (30, 30, 0.0),
    "footwear": (30, 30, 0.0),
    "electronics": (15, 15, 0.10),
    "home": (30, 15, 0.0),
    "beauty": (14, 14, 0.0),
    "sports": (30, 30, 0.05),
    "grocery": (0, 0, 0.0),
}
NON_RETURNABLE: frozenset[str] = frozenset({"coffee", "tea", "fragrance"})
CANCELLABLE_STATUSES: tuple[str, ...] = ("pending", "processing")
ORDER_STATUSES: tuple[str, ...] = ("pending", "processing", "shipped", "delivered", "cancelled")
SHIPPING_FEE = 4.99
EXPRESS_FEE = 12.99
FREE_SHIPPING_THRESHOLD = 50.0


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


def _are(category: str) -> str:
    """The verb for a category name: "t-shirts are", but "coffee is" (a mass noun)."""
    return "are" if category.endswith("s") else "is"


def build_policies() -> pl.DataFrame:
    """The policy table; deterministic (policies do not depend on the catalog seed)."""
    rows: list[dict] = []

    def add(
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
    ) -> None:
        rows.append(
            {
                "policy_id": f"POL-{len(rows) + 1:03d}",
                "topic": topic,
                "title": title,
                "department": department,
                "category": category,
                "membership": membership,
                "returnable": returnable,
                "window_days": window,
                "fee": fee,
                "text": text,
            }
        )

    for cat in CATEGORIES:
        base, extra, fee = RETURN_WINDOWS[cat.department]
        if cat.name in NON_RETURNABLE or base == 0:
            add(
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
            continue
        for membership, window in (("standard", base), ("plus", base + extra)):
            fee_text = f" A restocking fee of {fee:.0%} applies to opened items." if fee else ""
            add(
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
        add(
            "exchanges",
            cat.name,
            "any",
            f"{cat.name.capitalize()} can be exchanged for another size or colour of the same "
            "product while the return window is open.",
            department=cat.department,
            title=f"Exchanging {cat.name}: swap for a different size or colour",
        )
    add(
        "cancellation",
        "",
        "any",
        "Orders can be cancelled while they are pending or processing. Once an order has "
        "shipped it can no longer be cancelled: wait for delivery and start a return instead.",
        title="Cancelling an order: can I cancel my order, and what if it has already shipped",
    )
    add(
        "shipping",
        "",
        "standard",
        f"Standard shipping costs ${SHIPPING_FEE:.2f}; orders of ${FREE_SHIPPING_THRESHOLD:.0f} "
        f"or more ship free. Express shipping costs ${EXPRESS_FEE:.2f}.",
        fee=SHIPPING_FEE,
        title="Shipping fees for standard members: how much delivery is, the free shipping "
        "threshold and express delivery",
    )
    add(
        "shipping",
        "",
        "plus",
        "Plus members get free standard shipping on every order and free express shipping on "
        f"orders of ${FREE_SHIPPING_THRESHOLD:.0f} or more.",
        fee=0.0,
        title="Shipping costs for Plus members: free delivery and free express shipping for "
        "Plus members",
    )
    add(
        "membership",
        "",
        "plus",
        "Plus membership extends return windows, adds free shipping and costs $49 a year.",
        title="Plus membership: what Plus members get, the benefits for Plus members and what "
        "the membership costs per year",
    )
    add(
        "refunds",
        "",
        "any",
        "Refunds go back to the original payment method within 5 to 7 business days after the "
        "returned item is received.",
        title="Refunds: how long refunds take and when I get my money back",
    )
    return pl.DataFrame(
        rows,
        schema={
            "policy_id": pl.String,
            "topic": pl.String,
            "title": pl.String,  # the section title, phrased the way customers ask
            "department": pl.String,
            "category": pl.String,
            "membership": pl.String,
            "returnable": pl.Boolean,
            "window_days": pl.Int64,
            "fee": pl.Float64,
            "text": pl.String,
        },
    )


class PolicyBook:
    """Rule look-ups answered from the policy rows."""

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
            return Eligibility(False, f"{category} are final sale and cannot be returned", 0)
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

    @staticmethod
    def shipping_fee(subtotal: float, membership: str) -> float:
        if membership == "plus" or subtotal >= FREE_SHIPPING_THRESHOLD:
            return 0.0
        return SHIPPING_FEE
