"""The shop's tools as typed methods (τ²-bench's pattern) plus their generated schemas.

Each tool is a method of `ShopTools` tagged `@tool(ToolKind.READ | WRITE, milestone=rule)`:
whether it changes the state, and the rule (`ecomrlve/env/shop/milestones.py`) saying which goal
milestones a call of it reaches (what `step_bonus` pays); a tool without a rule is refused
when its class is defined. A write tool also declares `writes=Writes(...)`
(`ecomrlve/env/shop/writes.py`): what a claim of it is called and worded, the action a call of
it is once done, the reference's sentence about it and whether it needs the customer's yes; the
judge and the episode read that declaration, so a write tool is one decorated method (plus its
rules). `add_tool` / `remove_tool` add one at run time (a test's toy tool). Its JSON
schema (OpenAI / Qwen function format) is generated once from the signature and the docstring's
`Args:` section through pydantic, so the schema and the code cannot disagree. Tools raise
`ToolError` subclasses; `ShopTools.call` is the one place that turns them into tool messages.

Argument checking on the hot path does not use pydantic: `ARG_CHECKS` holds one small checker
per parameter, compiled from the same signatures (see `check_arguments`).

Why one module over 700 lines: the 15 tools are methods of the one typed class `ShopTools`
(about 510 lines), and their schemas and argument checkers are built from that class's
signatures and docstrings when this module loads; splitting the class would scatter the one
place a tool is declared, and moving the schema builder out would only trade it for a re-export.
"""

from __future__ import annotations

import inspect
import json
import operator
import re
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, create_model

from ecomrlve.env.shop import milestones, writes
from ecomrlve.env.shop.milestones import MilestoneRule
from ecomrlve.env.shop.products import MAX_TOP_K, Catalog, FilterError, brief, normalise_filters
from ecomrlve.env.shop.search import PolicyIndex, policy_tokens
from ecomrlve.env.shop.state import WorldState
from ecomrlve.env.shop.writes import Writes

MAX_RECOMMEND = 10
# Bounds on agent values, checked before any tool runs: a 10 MB query or an id echoed back in
# an error would otherwise cost seconds and flood the agent's context; ints beyond 64 bits
# cannot be quantities and break str() past 4,300 digits.
MAX_TEXT_ARGUMENT = 2_000
MAX_LIST_ARGUMENT = 50
MAX_INT_ARGUMENT = 2**63 - 1
MAX_VARIANTS_SHOWN = 30
POLICY_RESULTS = 3
# The documented tool order (the order schemas are listed in).
CONTRACT_ORDER: tuple[str, ...] = (
    "search",
    "get_product",
    "add_to_cart",
    "remove_from_cart",
    "set_quantity",
    "view_cart",
    "checkout",
    "list_orders",
    "get_order",
    "cancel_order",
    "return_item",
    "exchange_item",
    "search_policy",
    "ask_user",
    "recommend",
)
ID_ARGUMENTS: tuple[str, ...] = ("item_id", "order_id", "new_item_id", "item_ids")
_NEWEST_FIRST = operator.itemgetter("placed", "order_id")  # list_orders' order (reversed)
# what counts as an id-like token in text the agent is shown (prompt, user replies)
VISIBLE_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")


class ToolKind(StrEnum):
    READ = "read"
    WRITE = "write"


class ToolError(Exception):
    """A refused tool call; its message goes back to the agent as the tool result."""

    code = "error"


class NotFoundError(ToolError):
    code = "not_found"


class RuleError(ToolError):
    """A business rule refuses the action (stock, caps, windows, statuses)."""

    code = "not_allowed"


class ConfirmationError(RuleError):
    """A `confirm_writes` shop rule holds a write until the customer has said yes."""

    code = "needs_confirmation"


class ArgumentError(ToolError):
    code = "invalid_arguments"


class SearchFilters(BaseModel):
    """Exact filters; every field is optional."""

    model_config = ConfigDict(extra="forbid")
    category: str | None = Field(None, description="exact category, e.g. 'sneakers'")
    brand: str | None = Field(None, description="exact brand name")
    color: str | None = Field(
        None,
        description="exact colour, e.g. 'navy'; for products without one, the variant: roast "
        "(coffee, 'dark roast'), flavour (tea, 'jasmine'), scent (fragrance, 'woody'), skin type "
        "(skincare, 'dry skin')",
    )
    size: str | None = Field(
        None, description="exact size, e.g. 'M', '42', '256 GB', '500 g', 'queen', 'over-ear'"
    )
    min_price: float | None = Field(None, description="lowest price, inclusive")
    max_price: float | None = Field(None, description="highest price, inclusive")
    min_rating: float | None = Field(None, description="lowest average rating (1-5), inclusive")
    max_ship_days: int | None = Field(None, description="latest delivery in days, inclusive")
    in_stock: bool | None = Field(None, description="true: only items in stock")


def tool(
    kind: ToolKind, *, milestone: MilestoneRule | None = None, writes: Writes | None = None
) -> Callable[[Callable], Callable]:
    """Mark a `ShopTools` method as a tool that reads or writes the world state, name the
    rule (`ecomrlve/env/shop/milestones.py`) turning its successful calls into goal milestones
    and, for a write, its declaration (`ecomrlve/env/shop/writes.py`)."""

    def mark(fn: Callable) -> Callable:
        if not callable(milestone):
            raise TypeError(
                f"tool {fn.__name__!r} declares no milestone rule: write one in "
                f"ecomrlve/env/shop/milestones.py and pass it as @tool(..., milestone=...)"
            )
        if (writes is None) is (kind is ToolKind.WRITE):
            raise TypeError(
                f"tool {fn.__name__!r}: a write tool declares writes=Writes(...) "
                "(ecomrlve/env/shop/writes.py), a read tool none"
            )
        fn.__tool_kind__ = kind
        fn.__tool_milestone__ = milestone
        fn.__tool_writes__ = writes
        return fn

    return mark


# --------------------------------------------------------------------------------------------
# the tools
# --------------------------------------------------------------------------------------------


class ShopTools:
    """Every tool of the shop (`CONTRACT_ORDER`), acting on one episode's `WorldState`.

    `seen_ids` collects every item/order id a tool result shows the agent (the reward's
    hallucination check); `recommended` holds the ids of the last `recommend` call.
    """

    def __init__(
        self,
        catalog: Catalog,
        state: WorldState,
        *,
        max_quantity: int,
        ask_user: Callable[[str], str],
        seen_ids: set[str],
    ):
        self.catalog = catalog
        self.state = state
        self.max_quantity = max_quantity
        self._ask_user = ask_user
        self.seen_ids = seen_ids
        self.recommended: list[str] | None = None
        self.sold: dict[str, int] = {}
        # world events (`ecomrlve.env.world.events`): prices changed and products withdrawn
        # mid-episode
        self.prices: dict[str, float] = {}
        self.withdrawn: set[str] = set()
        # a shop rule (`confirm_writes` event): the customer's yes before a committing write;
        # `confirmed()` counts the yes answers the customer has given so far
        self.confirm_writes = False
        self.confirmed: Callable[[], int] = lambda: 0

    # ---- dispatch ---------------------------------------------------------------------------
    def call(self, name: str, arguments: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
        """Run a tool whose arguments were already checked; return (ok, result or error)."""
        try:
            if self.confirm_writes and name in CONFIRMED_WRITES and not self.confirmed():
                raise ConfirmationError(
                    f"shop rule: {name} needs the customer's explicit yes first; ask them to "
                    "confirm (ask_user) before placing, cancelling, returning or exchanging"
                )
            return True, getattr(self, name)(**arguments)
        except ToolError as err:
            return False, {"error": str(err), "code": err.code}

    # ---- helpers ----------------------------------------------------------------------------
    def _row(self, item_id: str) -> int:
        row = self.catalog.row_of(item_id)
        if row is None:
            raise NotFoundError(f"no product with item_id {brief(item_id)}")
        return row

    def _order(self, order_id: str) -> dict[str, Any]:
        order = self.state.orders.get(order_id)
        if order is None:
            raise NotFoundError(f"no order with order_id {brief(order_id)} for this customer")
        return order

    def _available(self, item_id: str, row: int) -> int:
        if item_id in self.withdrawn:
            return 0
        return int(self.catalog.stock[row]) - self.sold.get(item_id, 0)

    def _price(self, item_id: str, row: int) -> float:
        price = self.prices.get(item_id)
        return float(self.catalog.price[row]) if price is None else price

    def _live(self, result: dict[str, Any]) -> dict[str, Any]:
        """A catalog row/result with this episode's price and stock."""
        item_id = result["item_id"]
        if item_id in self.prices:
            result["price"] = self.prices[item_id]
        if item_id in self.withdrawn:
            result["in_stock"] = False
        return result

    def _check_quantity(self, item_id: str, row: int, quantity: int) -> None:
        if quantity > self.max_quantity:
            raise RuleError(
                f"at most {self.max_quantity} units of one item per order "
                f"(requested {quantity} of {item_id})"
            )
        if item_id in self.withdrawn:  # a world event: it sold out during the episode
            raise RuleError(
                f"{item_id} is out of stock (it just sold out) and can no longer be bought; "
                "choose another product, and remove it from the cart if it is there"
            )
        available = self._available(item_id, row)
        if available <= 0:
            raise RuleError(f"{item_id} is out of stock")
        if quantity > available:
            raise RuleError(f"only {available} unit(s) of {item_id} in stock")

    def _cart_view(self) -> dict[str, Any]:
        lines = []
        subtotal = 0.0
        for item_id, quantity in self.state.cart.items():
            row = self.catalog.row_of(item_id)
            price = self._price(item_id, row) if row is not None else 0.0
            title = self.catalog.title(row) if row is not None else "(unknown product)"
            lines.append(
                {
                    "item_id": item_id,
                    "title": title,
                    "price": price,
                    "quantity": quantity,
                    "line_total": round(price * quantity, 2),
                    "in_stock": row is not None and self._available(item_id, row) > 0,
                }
            )
            subtotal += price * quantity
            self.seen_ids.add(item_id)
        fee = self.catalog.policies.shipping_fee(subtotal, self.state.user["membership"])
        return {
            "items": lines,
            "subtotal": round(subtotal, 2),
            "shipping": fee if lines else 0.0,
            "total": round(subtotal + fee, 2) if lines else 0.0,
        }

    def _order_line_row(self, order: dict[str, Any], item_id: str) -> dict[str, Any]:
        for line in order["items"]:
            if line["item_id"] == item_id:
                return line
        raise NotFoundError(f"item {brief(item_id)} is not part of order {order['order_id']!r}")

    def _check_returnable(self, order: dict[str, Any], item_id: str, action: str) -> int:
        if order["status"] != "delivered":
            raise RuleError(
                f"order {order['order_id']} is {order['status']}; only delivered items can "
                f"be {action}"
            )
        self._order_line_row(order, item_id)
        for entry in self.state.returns:
            if entry["order_id"] == order["order_id"] and entry["item_id"] == item_id:
                raise RuleError(
                    f"{item_id} from order {order['order_id']} already has a {entry['kind']} "
                    f"({entry['return_id']})"
                )
        row = self.catalog.row_of(item_id)
        if row is None:
            raise RuleError(f"{item_id} is no longer in the catalog; contact support")
        category = self.catalog.value("category", row)
        eligibility = self.catalog.policies.return_eligibility(
            category, self.state.user["membership"], self.state.days_since(order["delivered"])
        )
        if not eligibility.eligible:
            raise RuleError(f"{item_id} cannot be {action}: {eligibility.reason}")
        return row

    # ---- catalog ------------------------------------------------------------------------------
    @tool(ToolKind.READ, milestone=milestones.search)
    def search(
        self, query: str, filters: SearchFilters | None = None, top_k: int = 10
    ) -> dict[str, Any]:
        """Search the product catalog by keywords, optionally with exact filters.

        Results are ordered by relevance (ties by item_id).

        Args:
            query: keywords, e.g. "waterproof hiking boots"; may be empty when filters are given.
            filters: exact constraints (category, brand, color, size, price and rating bounds,
                max_ship_days, in_stock).
            top_k: how many results to return (1-50).
        """
        try:
            if self.prices or self.withdrawn:  # world events: bounds judge today's prices
                found = self.catalog.search_live(query, filters, top_k, self.prices, self.withdrawn)
                results = [self._live(r) for r in found]
            else:
                results = self.catalog.search(query, filters, top_k)
        except FilterError as err:
            raise ArgumentError(str(err)) from None
        self.seen_ids.update(r["item_id"] for r in results)
        out: dict[str, Any] = {"results": results, "count": len(results)}
        if not results:
            out["note"] = "no product matches; try other words or fewer filters"
        return out

    @tool(ToolKind.READ, milestone=milestones.get_product)
    def get_product(self, item_id: str) -> dict[str, Any]:
        """Show one product's details, stock and its other variants (colours/sizes).

        Args:
            item_id: the product's id.
        """
        row = self._row(item_id)
        product = self._live(self.catalog.row(item_id))
        product["stock"] = max(self._available(item_id, row), 0)
        product["in_stock"] = product["stock"] > 0
        variants = []
        for r in self.catalog.family_rows(row)[:MAX_VARIANTS_SHOWN]:
            vid = self.catalog.item_id(r)
            variants.append(
                {
                    "item_id": vid,
                    "color": self.catalog.value("color", r),
                    "size": self.catalog.value("size", r),
                    "price": self._price(vid, r),
                    "in_stock": self._available(vid, r) > 0,
                }
            )
        product["variants"] = variants
        self.seen_ids.add(item_id)
        self.seen_ids.update(v["item_id"] for v in variants)
        return product

    # ---- cart ---------------------------------------------------------------------------------
    @tool(ToolKind.WRITE, milestone=milestones.cart_slot, writes=writes.add_to_cart)
    def add_to_cart(self, item_id: str, quantity: int = 1) -> dict[str, Any]:
        """Add units of a product to the cart (adds to the quantity already there).

        Args:
            item_id: the product's id.
            quantity: units to add, at least 1.
        """
        if quantity < 1:
            raise ArgumentError(f"quantity must be at least 1, got {quantity}")
        row = self._row(item_id)
        new_quantity = self.state.cart.get(item_id, 0) + quantity
        self._check_quantity(item_id, row, new_quantity)
        self.state.cart[item_id] = new_quantity
        self.state.version += 1
        return {"ok": True, "item_id": item_id, "quantity": new_quantity, **self._totals()}

    @tool(ToolKind.WRITE, milestone=milestones.remove_from_cart, writes=writes.remove_from_cart)
    def remove_from_cart(self, item_id: str) -> dict[str, Any]:
        """Remove a product from the cart entirely.

        Args:
            item_id: the product's id.
        """
        if item_id not in self.state.cart:
            raise NotFoundError(f"{brief(item_id)} is not in the cart")
        del self.state.cart[item_id]
        self.state.version += 1
        return {"ok": True, "removed": item_id, **self._totals()}

    @tool(ToolKind.WRITE, milestone=milestones.cart_slot, writes=writes.set_quantity)
    def set_quantity(self, item_id: str, quantity: int) -> dict[str, Any]:
        """Set the quantity of a product already in the cart (0 removes it).

        Args:
            item_id: the product's id.
            quantity: the new number of units, 0 or more.
        """
        if item_id not in self.state.cart:
            raise NotFoundError(f"{brief(item_id)} is not in the cart; use add_to_cart")
        if quantity < 0:
            raise ArgumentError(f"quantity must be 0 or more, got {quantity}")
        if quantity == 0:
            del self.state.cart[item_id]
        else:
            self._check_quantity(item_id, self._row(item_id), quantity)
            self.state.cart[item_id] = quantity
        self.state.version += 1
        return {"ok": True, "item_id": item_id, "quantity": quantity, **self._totals()}

    def _totals(self) -> dict[str, Any]:
        subtotal = 0.0
        for item_id, quantity in self.state.cart.items():
            row = self.catalog.row_of(item_id)
            if row is not None:
                subtotal += self._price(item_id, row) * quantity
        return {"cart_items": len(self.state.cart), "subtotal": round(subtotal, 2)}

    @tool(ToolKind.READ, milestone=milestones.view_cart)
    def view_cart(self) -> dict[str, Any]:
        """Show the cart: lines, prices, subtotal, shipping and total."""
        return self._cart_view()

    @tool(ToolKind.WRITE, milestone=milestones.checkout, writes=writes.checkout)
    def checkout(
        self, shipping_address: str | None = None, payment_method: str | None = None
    ) -> dict[str, Any]:
        """Place an order for everything in the cart and empty the cart.

        Args:
            shipping_address: where to ship; the customer's address on file when omitted.
            payment_method: one of the customer's saved payment methods; the first when omitted.
        """
        state = self.state
        if not state.cart:
            raise RuleError("the cart is empty; add items before checking out")
        methods = state.user["payment_methods"]
        if payment_method is None:
            if not methods:
                raise RuleError("the customer has no saved payment method")
            payment_method = methods[0]
        elif payment_method not in methods:
            raise RuleError(
                f"unknown payment method {brief(payment_method)}; saved: "
                f"{', '.join(methods) or 'none'}"
            )
        address = state.user["address"] if shipping_address is None else shipping_address
        if not address.strip():
            raise ArgumentError("shipping_address must not be empty")
        lines = []
        subtotal = 0.0
        ship_days = 0
        for item_id, quantity in state.cart.items():
            row = self.catalog.row_of(item_id)
            if row is None:
                raise RuleError(f"{item_id} is no longer sold; remove it from the cart")
            self._check_quantity(item_id, row, quantity)
            price = self._price(item_id, row)
            lines.append({"item_id": item_id, "quantity": quantity, "price": price})
            subtotal += price * quantity
            ship_days = max(ship_days, int(self.catalog.ship_days[row]))
        fee = self.catalog.policies.shipping_fee(subtotal, state.user["membership"])
        order_id = state.next_order_id()
        order = {
            "order_id": order_id,
            "status": "pending",
            "placed": state.today,
            "delivered": None,
            "eta": state.add_days(ship_days),
            "items": lines,
            "shipping_address": address,
            "payment_method": payment_method,
            "total": round(subtotal + fee, 2),
        }
        for line in lines:
            self.sold[line["item_id"]] = self.sold.get(line["item_id"], 0) + line["quantity"]
        state.orders[order_id] = order
        state.new_order_ids.append(order_id)
        state.cart.clear()
        state.version += 1
        self.seen_ids.add(order_id)
        return {
            "ok": True,
            "order_id": order_id,
            "status": "pending",
            "items": [dict(line) for line in lines],
            "subtotal": round(subtotal, 2),
            "shipping": fee,
            "total": order["total"],
            "eta": order["eta"],
        }

    # ---- orders -------------------------------------------------------------------------------
    @tool(ToolKind.READ, milestone=milestones.list_orders)
    def list_orders(self) -> dict[str, Any]:
        """List the customer's orders, newest first, with their items and status."""
        orders = sorted(self.state.orders.values(), key=_NEWEST_FIRST, reverse=True)
        out = []
        seen = self.seen_ids
        row_of, title = self.catalog.row_of, self.catalog.title
        for order in orders:
            items = []
            for line in order["items"]:
                item_id = line["item_id"]
                row = row_of(item_id)
                items.append(
                    {
                        "item_id": item_id,
                        "title": title(row) if row is not None else "",
                        "quantity": line["quantity"],
                    }
                )
                seen.add(item_id)
            seen.add(order["order_id"])
            out.append(
                {
                    "order_id": order["order_id"],
                    "status": order["status"],
                    "placed": order["placed"],
                    "delivered": order["delivered"],
                    "eta": order["eta"],
                    "total": order["total"],
                    "items": items,
                }
            )
        return {"orders": out, "count": len(out)}

    @tool(ToolKind.READ, milestone=milestones.get_order)
    def get_order(self, order_id: str) -> dict[str, Any]:
        """Show one order in full: status, dates, lines with prices, returns and exchanges.

        Args:
            order_id: the order's id.
        """
        order = self._order(order_id)
        items = []
        catalog = self.catalog
        for line in order["items"]:
            row = catalog.row_of(line["item_id"])
            items.append(
                {
                    **line,
                    "title": catalog.title(row) if row is not None else "",
                    "category": catalog.value("category", row) if row is not None else "",
                }
            )
            self.seen_ids.add(line["item_id"])
        returns = [dict(r) for r in self.state.returns if r["order_id"] == order_id]
        for entry in returns:
            if entry.get("new_item_id"):
                self.seen_ids.add(entry["new_item_id"])
        self.seen_ids.add(order_id)
        out = {k: v for k, v in order.items() if k != "items"}
        out["items"] = items
        out["returns"] = returns
        out["today"] = self.state.today
        return out

    @tool(ToolKind.WRITE, milestone=milestones.cancel_order, writes=writes.cancel_order)
    def cancel_order(self, order_id: str, reason: str) -> dict[str, Any]:
        """Cancel an order that has not shipped yet (status pending or processing).

        Args:
            order_id: the order's id.
            reason: why the customer cancels.
        """
        if not reason.strip():
            raise ArgumentError("reason must not be empty")
        order = self._order(order_id)
        if order["status"] == "cancelled":
            raise RuleError(f"order {order_id} is already cancelled")
        if not self.catalog.policies.can_cancel(order["status"]):
            raise RuleError(
                f"order {order_id} is {order['status']}; only pending or processing orders can "
                "be cancelled"
            )
        order["status"] = "cancelled"
        order["cancel_reason"] = reason
        self.state.version += 1
        return {"ok": True, "order_id": order_id, "status": "cancelled", "refund": order["total"]}

    @tool(ToolKind.WRITE, milestone=milestones.return_item, writes=writes.return_item)
    def return_item(self, order_id: str, item_id: str, reason: str) -> dict[str, Any]:
        """Start a return of a delivered item for a refund (return window and category rules).

        Args:
            order_id: the order the item was delivered in.
            item_id: the item to return.
            reason: why the customer returns it.
        """
        if not reason.strip():
            raise ArgumentError("reason must not be empty")
        order = self._order(order_id)
        row = self._check_returnable(order, item_id, "returned")
        line = self._order_line_row(order, item_id)
        category = self.catalog.value("category", row)
        fee = self.catalog.policies.return_rule(category, self.state.user["membership"])
        refund = round(line["price"] * line["quantity"] * (1.0 - fee.restocking_fee), 2)
        entry = {
            "return_id": self.state.next_return_id(),
            "order_id": order_id,
            "item_id": item_id,
            "quantity": line["quantity"],
            "kind": "return",
            "new_item_id": None,
            "reason": reason,
            "status": "requested",
            "refund": refund,
        }
        self.state.returns.append(entry)
        self.state.new_return_ids.append(entry["return_id"])
        self.state.version += 1
        return {"ok": True, **entry}

    @tool(ToolKind.WRITE, milestone=milestones.exchange_item, writes=writes.exchange_item)
    def exchange_item(self, order_id: str, item_id: str, new_item_id: str) -> dict[str, Any]:
        """Exchange a delivered item for another variant (size/colour) of the same product.

        Args:
            order_id: the order the item was delivered in.
            item_id: the item to send back.
            new_item_id: the variant to receive instead; same product family, in stock.
        """
        order = self._order(order_id)
        self._check_returnable(order, item_id, "exchanged")
        line = self._order_line_row(order, item_id)
        new_row = self._row(new_item_id)
        if new_item_id == item_id:
            raise RuleError("new_item_id is the same item; pick another size or colour")
        if not self.catalog.same_family(item_id, new_item_id):
            raise RuleError(
                f"{new_item_id} is not a variant of the same product as {item_id}; exchanges "
                "are only for another size or colour"
            )
        self._check_quantity(new_item_id, new_row, line["quantity"])
        entry = {
            "return_id": self.state.next_return_id(),
            "order_id": order_id,
            "item_id": item_id,
            "quantity": line["quantity"],
            "kind": "exchange",
            "new_item_id": new_item_id,
            "reason": "exchange",
            "status": "requested",
            "refund": 0.0,
        }
        self.sold[new_item_id] = self.sold.get(new_item_id, 0) + line["quantity"]
        self.state.returns.append(entry)
        self.state.new_return_ids.append(entry["return_id"])
        self.state.version += 1
        return {"ok": True, **entry}

    # ---- policies, user, answer ----------------------------------------------------------------
    @tool(ToolKind.READ, milestone=milestones.search_policy)
    def search_policy(self, query: str) -> dict[str, Any]:
        """Search the store policies (returns, exchanges, cancellation, shipping, refunds).

        Args:
            query: what the policy is about, e.g. "return window for boots".
        """
        return {"policies": policy_search(self.catalog, query)}

    @tool(ToolKind.READ, milestone=milestones.ask_user)
    def ask_user(self, question: str) -> dict[str, Any]:
        """Ask the customer a clarifying question; they answer from what they know.

        Args:
            question: the question, in plain words.
        """
        if not question.strip():
            raise ArgumentError("question must not be empty")
        answer = self._ask_user(question)
        self.seen_ids.update(VISIBLE_TOKEN.findall(answer))  # e.g. an order id the user names
        return {"answer": answer}

    @tool(ToolKind.WRITE, milestone=milestones.recommend, writes=writes.recommend)
    def recommend(self, item_ids: list[str]) -> dict[str, Any]:
        """Give the customer your final product recommendation (the last call counts).

        Args:
            item_ids: ids of the recommended products, best first.
        """
        if not item_ids:
            raise ArgumentError("item_ids must name at least one product")
        if len(item_ids) > MAX_RECOMMEND:
            raise ArgumentError(f"recommend at most {MAX_RECOMMEND} products")
        if len(set(item_ids)) != len(item_ids):
            raise ArgumentError("item_ids lists a product twice")
        for item_id in item_ids:
            self._row(item_id)
        self.recommended = list(item_ids)
        return {"ok": True, "recommended": list(item_ids)}


# --------------------------------------------------------------------------------------------
# policy search
# --------------------------------------------------------------------------------------------

_POLICY_INDEXES: dict[int, tuple[PolicyIndex, list[tuple[str, str, str, str]]]] = {}
_POLICY_RANKINGS: dict[tuple[int, frozenset[str], int], tuple[tuple[str, str, str, str], ...]] = {}
POLICY_MEMO_SIZE = 8192


def policy_search(catalog: Catalog, query: str, limit: int = POLICY_RESULTS) -> list[dict]:
    """Policies ranked by BM25 over their section titles and texts (`search.PolicyIndex`:
    tantivy, English stop words plus question words, stemming); ties by policy_id."""
    key = id(catalog.policies)
    built = _POLICY_INDEXES.get(key)
    if built is None:
        rows = catalog.policies.frame.sort("policy_id").to_dicts()
        docs = [(r["policy_id"], r["topic"], r.get("title") or "", r["text"]) for r in rows]
        built = _POLICY_INDEXES[key] = (PolicyIndex(rows), docs)
    index, docs = built
    wanted = frozenset(policy_tokens(query))
    # the ranking depends only on the query's word set: generators and replays ask the same
    # few hundred questions over and over (fresh dicts each time: callers may mutate them)
    memo_key = (key, wanted, limit)
    ranked = _POLICY_RANKINGS.get(memo_key)
    if ranked is None:
        ranked = tuple(docs[i] for i in index.search(tuple(sorted(wanted)), limit))
        if len(_POLICY_RANKINGS) >= POLICY_MEMO_SIZE:
            _POLICY_RANKINGS.clear()
        _POLICY_RANKINGS[memo_key] = ranked
    return [
        {"policy_id": pid, "topic": topic, "title": title, "text": text}
        for pid, topic, title, text in ranked
    ]


# --------------------------------------------------------------------------------------------
# schemas and argument checks, generated from the signatures
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ToolSpec:
    name: str
    kind: ToolKind
    description: str
    # which goal milestones a successful call reaches (`progress.Progress.credit`)
    milestone: MilestoneRule = field(repr=False)
    params: tuple[str, ...]
    required: frozenset[str]
    checks: dict[str, Callable[[Any], Any]] = field(repr=False)
    schema: dict[str, Any] = field(repr=False)
    # the pydantic model the schema comes from (strict validation off the hot path)
    arguments_model: type[BaseModel] = field(repr=False)
    # a write's declaration: its action kind, done action, reference sentence (`writes.py`)
    writes: Writes | None = field(default=None, repr=False)


_ARGS_LINE = re.compile(r"^\s{4,}(\w+):\s*(.*)$")


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """Split a Google-style docstring into (description, {arg: text})."""
    doc = inspect.cleandoc(doc or "")
    head, _, args_block = doc.partition("Args:")
    description = " ".join(head.split())
    args: dict[str, str] = {}
    current = None
    for line in args_block.splitlines():
        match = _ARGS_LINE.match(line)
        if match and len(line) - len(line.lstrip()) <= 4:
            current = match.group(1)
            args[current] = match.group(2).strip()
        elif current and line.strip():
            args[current] += " " + line.strip()
    return description, args


def _inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """Resolve `$ref`s, drop titles and collapse `X | None` to X (None means 'omit it')."""
    defs = schema.pop("$defs", {})

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            if "$ref" in node:
                target = defs[node["$ref"].rsplit("/", 1)[-1]]
                merged = {**walk(dict(target)), **{k: v for k, v in node.items() if k != "$ref"}}
                return walk(merged)
            if "anyOf" in node:
                options = [o for o in node["anyOf"] if o != {"type": "null"}]
                if len(options) == 1:
                    rest = {k: v for k, v in node.items() if k != "anyOf"}
                    return walk({**options[0], **rest})
            out = {}
            for key, value in node.items():
                if key == "title" and isinstance(value, str):
                    continue
                if key == "default" and value is None:
                    continue
                out[key] = walk(value)
            return out
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    return walk(schema)


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _checker(param: str, annotation: Any) -> Callable[[Any], Any]:
    """A fast validator for one parameter; returns the (possibly coerced) value or raises."""
    optional = False
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        optional = len(args) != len(typing.get_args(annotation))
        annotation = args[0]
        origin = typing.get_origin(annotation)

    def none_or(check: Callable[[Any], Any]) -> Callable[[Any], Any]:
        if not optional:
            return check
        return lambda v: None if v is None else check(v)

    if annotation is str:

        def check_str(v: Any) -> str:
            if not isinstance(v, str):
                raise TypeError(f"'{param}' must be a string, got {_type_name(v)}")
            if len(v) > MAX_TEXT_ARGUMENT:
                raise TypeError(
                    f"'{param}' is too long ({len(v):,} characters; at most {MAX_TEXT_ARGUMENT:,})"
                )
            return v

        return none_or(check_str)
    if annotation is int:

        def check_int(v: Any) -> int:
            if isinstance(v, bool) or not isinstance(v, int | float):
                raise TypeError(f"'{param}' must be an integer, got {_type_name(v)}")
            if isinstance(v, float):
                if not v.is_integer():
                    raise TypeError(f"'{param}' must be an integer, got {v!r}")
                v = int(v)
            if abs(v) > MAX_INT_ARGUMENT:
                raise TypeError(f"'{param}' is out of range (more than 64 bits)")
            return v

        return none_or(check_int)
    if origin is list:

        def check_list(v: Any) -> list[str]:
            if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
                raise TypeError(f"'{param}' must be a list of strings")
            if len(v) > MAX_LIST_ARGUMENT or any(len(x) > MAX_TEXT_ARGUMENT for x in v):
                raise TypeError(
                    f"'{param}' is too long (at most {MAX_LIST_ARGUMENT} strings of "
                    f"{MAX_TEXT_ARGUMENT:,} characters)"
                )
            return v

        return none_or(check_list)
    if annotation is SearchFilters:

        def check_filters(v: Any) -> dict[str, Any]:
            try:
                normalise_filters(v)
            except FilterError as err:
                raise TypeError(str(err)) from None
            return v

        return none_or(check_filters)
    raise TypeError(f"no checker for parameter {param!r} of type {annotation!r}")


def _spec(name: str, fn: Callable) -> ToolSpec:
    """A tool's spec from its tagged method: schema and checkers from signature and docstring."""
    milestone = getattr(fn, "__tool_milestone__", None)
    if not callable(milestone):  # set only through `tool`, which refuses a missing rule
        raise TypeError(f"tool {name!r} declares no milestone rule; tag it with @tool")
    hints = typing.get_type_hints(fn, globalns={**globals(), **fn.__globals__})
    description, arg_docs = _parse_docstring(fn.__doc__ or "")
    signature = inspect.signature(fn)
    fields: dict[str, Any] = {}
    checks: dict[str, Callable[[Any], Any]] = {}
    required = set()
    params = []
    for pname, param in signature.parameters.items():
        if pname == "self":
            continue
        params.append(pname)
        annotation = hints[pname]
        default = ... if param.default is inspect.Parameter.empty else param.default
        if default is ...:
            required.add(pname)
        fields[pname] = (annotation, Field(default, description=arg_docs.get(pname)))
        checks[pname] = _checker(pname, annotation)
    model = create_model(f"{name}_arguments", **fields)
    parameters = _inline_refs(model.model_json_schema())
    parameters.setdefault("properties", {})
    # always present (verl's OpenAIFunctionToolSchema and strict clients want it)
    parameters.setdefault("required", [])
    if top_k := parameters["properties"].get("top_k"):
        top_k.update(minimum=1, maximum=MAX_TOP_K)
    schema = {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": parameters},
    }
    return ToolSpec(
        name=name,
        kind=fn.__tool_kind__,
        description=description,
        milestone=milestone,
        params=tuple(params),
        required=frozenset(required),
        checks=checks,
        schema=schema,
        arguments_model=model,
        writes=getattr(fn, "__tool_writes__", None),
    )


def _build_specs() -> dict[str, ToolSpec]:
    specs: dict[str, ToolSpec] = {}
    for name, fn in inspect.getmembers(ShopTools, inspect.isfunction):
        if getattr(fn, "__tool_kind__", None) is None:
            continue
        if name in specs:
            raise ValueError(f"duplicate tool {name!r}")
        specs[name] = _spec(name, fn)
    missing = [n for n in CONTRACT_ORDER if n not in specs]
    if missing or len(specs) != len(CONTRACT_ORDER):
        raise ValueError(f"tools and CONTRACT_ORDER disagree: {sorted(specs)} vs {CONTRACT_ORDER}")
    return {name: specs[name] for name in CONTRACT_ORDER}


TOOL_SPECS: dict[str, ToolSpec] = _build_specs()
# derived from TOOL_SPECS (`_derive`, again on `add_tool` / `remove_tool`): read them as
# `tools.NAME` where a tool added at run time must count
TOOL_NAMES: tuple[str, ...] = ()
WRITE_TOOLS: frozenset[str] = frozenset()
# the writes a `confirm_writes` shop rule holds until the customer says yes
CONFIRMED_WRITES: frozenset[str] = frozenset()
TOOL_SCHEMAS_JSON: str = ""
# called after a tool is added or removed: the layers above rebuild what they derive from the
# tools (the claim reader's words)
ON_TOOLS_CHANGED: list[Callable[[], None]] = []


def _derive() -> None:
    global TOOL_NAMES, WRITE_TOOLS, CONFIRMED_WRITES, TOOL_SCHEMAS_JSON
    TOOL_NAMES = tuple(TOOL_SPECS)
    WRITE_TOOLS = frozenset(n for n, s in TOOL_SPECS.items() if s.kind is ToolKind.WRITE)
    CONFIRMED_WRITES = frozenset(
        n for n, s in TOOL_SPECS.items() if s.writes is not None and s.writes.confirmed
    )
    TOOL_SCHEMAS_JSON = json.dumps([spec.schema for spec in TOOL_SPECS.values()])


_derive()


def add_tool(fn: Callable) -> ToolSpec:
    """Add a tool at run time: `fn(self, ...)`, tagged with `@tool`, becomes a `ShopTools`
    method listed after the contract's tools (its schema, checks, milestone and, for a write,
    its declaration read as for the built-in ones). `remove_tool` takes it away again.

    Example (`tests/test_env_tool_declarations.py` adds a toy `gift_wrap` so)::

        @tool(ToolKind.WRITE, milestone=wrapped, writes=GIFT_WRAP)
        def gift_wrap(self, order_id: str) -> dict[str, Any]: ...

        add_tool(gift_wrap)
    """
    name = fn.__name__
    if getattr(fn, "__tool_kind__", None) is None:
        raise TypeError(f"tool {name!r} is not tagged with @tool")
    if name in TOOL_SPECS or hasattr(ShopTools, name):
        raise ValueError(f"duplicate tool {name!r}")
    spec = _spec(name, fn)
    setattr(ShopTools, name, fn)
    TOOL_SPECS[name] = spec
    try:
        _changed()
    except Exception:  # a layer above refused it (an action kind's name taken): undo, re-raise
        remove_tool(name)
        raise
    return spec


def remove_tool(name: str) -> None:
    """Take away a tool `add_tool` added (the contract's tools stay)."""
    if name in CONTRACT_ORDER or name not in TOOL_SPECS:
        raise ValueError(f"{name!r} is no tool added with add_tool")
    del TOOL_SPECS[name]
    delattr(ShopTools, name)
    _changed()


def _changed() -> None:
    _derive()
    for listener in ON_TOOLS_CHANGED:
        listener()


def tool_schemas() -> list[dict[str, Any]]:
    """Every tool's function schema in OpenAI format (pass as `tools=` to a chat template).

    A fresh copy on every call, so callers may modify it.
    """
    return json.loads(TOOL_SCHEMAS_JSON)


def check_arguments(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """Validate a call against its tool's signature; return the (coerced) arguments.

    Raises `TypeError` with a one-line message (unknown tool, unknown/missing argument, type).
    """
    spec = TOOL_SPECS.get(name)
    if spec is None:
        raise TypeError(f"unknown tool {brief(name)}; tools: {', '.join(TOOL_NAMES)}")
    out: dict[str, Any] = {}
    for key, value in arguments.items():
        check = spec.checks.get(key)
        if check is None:
            allowed = ", ".join(spec.params) or "none"
            raise TypeError(f"{name}: unknown argument {brief(key)} (arguments: {allowed})")
        try:
            out[key] = check(value)
        except TypeError as err:
            raise TypeError(f"{name}: {err}") from None
    if not spec.required <= out.keys():
        missing = [p for p in spec.params if p in spec.required and p not in out]
        raise TypeError(f"{name}: missing argument(s) {', '.join(map(repr, missing))}")
    return out
