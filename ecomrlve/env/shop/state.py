"""The mutable world of one episode: user profile, cart, orders and returns.

`initial_state` (a task's JSON column, written by the generators) has exactly this shape::

    {
      "today": "2025-03-14",                       # the shop's current date (ISO)
      "user": {"user_id": "U0001", "name": "Ada Lovelace",
               "membership": "standard" | "plus",
               "address": "12 Analytical St, London",
               "payment_methods": ["visa-4242", "paypal"]},   # first one is the default
      "cart": [{"item_id": "I0000042", "quantity": 1}],       # optional, default []
      "orders": [                                             # optional, default []
        {"order_id": "O1001", "status": "delivered",          # one of ORDER_STATUSES
         "placed": "2025-03-01", "delivered": "2025-03-05" | null, "eta": "2025-03-05" | null,
         "items": [{"item_id": "I0000042", "quantity": 1, "price": 19.99}],
         "shipping_address": "12 Analytical St, London", "total": 24.98}
      ],
      "returns": [                                            # optional, default []
        {"return_id": "R1", "order_id": "O1001", "item_id": "I0000042", "quantity": 1,
         "kind": "return" | "exchange", "new_item_id": null, "reason": "too small",
         "status": "requested", "refund": 19.99}
      ]
    }

Ids in `initial_state` are not shown to the agent: it sees an id only when the prompt or a tool
result contains it. Orders the agent places get ids `N0001`, `N0002`, … (skipping ids in use),
returns/exchanges it starts get `RN001`, ….

`canonical_hash()` hashes the mutable part (user, cart, orders, returns) as JSON with sorted keys,
so two paths to the same end state hash alike.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import threading
from collections import OrderedDict
from typing import Any

import orjson

from ecomrlve.catalogs.policies import MEMBERSHIPS, ORDER_STATUSES

RETURN_KINDS = ("return", "exchange")


class StateError(ValueError):
    """An `initial_state` that does not follow the documented schema."""


# A field's path is passed as parts ("orders", 2, "items", 0, "price") and spelled
# ("orders[2].items[0].price") only for the error: a state of a few orders has dozens of
# fields, and formatting every path up front was a third of the validation.
FieldPath = tuple[str | int, ...]


def _spelled(path: FieldPath) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".")


def _date(value: Any, *path: str | int, optional: bool = False) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise StateError(
            f"initial_state: {_spelled(path)} must be a YYYY-MM-DD string, got {value!r}"
        )
    try:
        dt.date.fromisoformat(value)
    except ValueError:
        raise StateError(f"initial_state: {_spelled(path)} is not a date: {value!r}") from None
    return value


def _str(value: Any, *path: str | int) -> str:
    if not isinstance(value, str) or not value:
        raise StateError(
            f"initial_state: {_spelled(path)} must be a non-empty string, got {value!r}"
        )
    return value


def _int(value: Any, *path: str | int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise StateError(f"initial_state: {_spelled(path)} must be an integer >= 1, got {value!r}")
    return value


def _number(value: Any, *path: str | int) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise StateError(f"initial_state: {_spelled(path)} must be a number, got {value!r}")
    return float(value)


def validate_initial_state(raw: Any) -> dict[str, Any]:
    """Check `raw` against the schema above; return a normalised deep copy.

    Raises `StateError` naming the first offending path.
    """
    if not isinstance(raw, dict):
        raise StateError(f"initial_state must be an object, got {type(raw).__name__}")
    unknown = sorted(set(raw) - {"today", "user", "cart", "orders", "returns"})
    if unknown:
        raise StateError(f"initial_state: unknown key(s) {unknown}")
    today = _date(raw.get("today"), "today")
    user = _user(raw.get("user"))
    cart = _cart(raw.get("cart", []) or [])
    orders = [
        _order(i, order, user["address"]) for i, order in enumerate(raw.get("orders", []) or [])
    ]
    if len({o["order_id"] for o in orders}) != len(orders):
        raise StateError("initial_state: two orders share an order_id")
    returns = [_return(i, entry) for i, entry in enumerate(raw.get("returns", []) or [])]
    return {"today": today, "user": user, "cart": cart, "orders": orders, "returns": returns}


def _user(user_raw: Any) -> dict[str, Any]:
    if not isinstance(user_raw, dict):
        raise StateError("initial_state: user must be an object")
    membership = user_raw.get("membership", "standard")
    if membership not in MEMBERSHIPS:
        raise StateError(f"initial_state: user.membership must be one of {MEMBERSHIPS}")
    payment = user_raw.get("payment_methods", [])
    if not isinstance(payment, list) or not all(isinstance(p, str) and p for p in payment):
        raise StateError("initial_state: user.payment_methods must be a list of strings")
    return {
        "user_id": str(user_raw.get("user_id", "U0")),
        "name": str(user_raw.get("name", "")),
        "membership": membership,
        "address": str(user_raw.get("address", "")),
        "payment_methods": list(payment),
    }


def _cart(raw_lines: list[Any]) -> list[dict[str, Any]]:
    cart: list[dict[str, Any]] = []
    for i, line in enumerate(raw_lines):
        if not isinstance(line, dict):
            raise StateError(f"initial_state: cart[{i}] must be an object")
        cart.append(
            {
                "item_id": _str(line.get("item_id"), "cart", i, "item_id"),
                "quantity": _int(line.get("quantity", 1), "cart", i, "quantity"),
            }
        )
    if len({line["item_id"] for line in cart}) != len(cart):
        raise StateError("initial_state: cart lists an item_id twice")
    return cart


def _order(i: int, order: Any, address: str) -> dict[str, Any]:
    """`orders[i]`, its shipping address defaulting to the user's `address`."""
    where = f"orders[{i}]"
    if not isinstance(order, dict):
        raise StateError(f"initial_state: {where} must be an object")
    status = order.get("status")
    if status not in ORDER_STATUSES:
        raise StateError(f"initial_state: {where}.status must be one of {ORDER_STATUSES}")
    items = order.get("items")
    if not isinstance(items, list) or not items:
        raise StateError(f"initial_state: {where}.items must be a non-empty list")
    lines = []
    for j, line in enumerate(items):
        if not isinstance(line, dict):
            raise StateError(f"initial_state: {where}.items[{j}] must be an object")
        lines.append(
            {
                "item_id": _str(line.get("item_id"), "orders", i, "items", j, "item_id"),
                "quantity": _int(line.get("quantity", 1), "orders", i, "items", j, "quantity"),
                "price": _number(line.get("price"), "orders", i, "items", j, "price"),
            }
        )
    checked = {
        "order_id": _str(order.get("order_id"), "orders", i, "order_id"),
        "status": status,
        "placed": _date(order.get("placed"), "orders", i, "placed"),
        "delivered": _date(order.get("delivered"), "orders", i, "delivered", optional=True),
        "eta": _date(order.get("eta"), "orders", i, "eta", optional=True),
        "items": lines,
        "shipping_address": str(order.get("shipping_address", address)),
        "total": _number(
            order["total"] if "total" in order else sum(x["price"] * x["quantity"] for x in lines),
            "orders",
            i,
            "total",
        ),
    }
    for optional in ("payment_method", "cancel_reason"):
        if isinstance(order.get(optional), str):
            checked[optional] = order[optional]
    if status == "delivered" and checked["delivered"] is None:
        raise StateError(f"initial_state: {where} is delivered but has no delivered date")
    return checked


def _return(i: int, entry: Any) -> dict[str, Any]:
    where = f"returns[{i}]"
    if not isinstance(entry, dict):
        raise StateError(f"initial_state: {where} must be an object")
    kind = entry.get("kind", "return")
    if kind not in RETURN_KINDS:
        raise StateError(f"initial_state: {where}.kind must be one of {RETURN_KINDS}")
    return {
        "return_id": _str(entry.get("return_id"), "returns", i, "return_id"),
        "order_id": _str(entry.get("order_id"), "returns", i, "order_id"),
        "item_id": _str(entry.get("item_id"), "returns", i, "item_id"),
        "quantity": _int(entry.get("quantity", 1), "returns", i, "quantity"),
        "kind": kind,
        "new_item_id": entry.get("new_item_id"),
        "reason": str(entry.get("reason", "")),
        "status": str(entry.get("status", "requested")),
        "refund": _number(entry.get("refund", 0.0), "returns", i, "refund"),
    }


_NORMALISED: OrderedDict[bytes, dict[str, Any]] = OrderedDict()
_NORMALISED_SIZE = 4096
_NORMALISED_LOCK = threading.Lock()


def normalised_initial_state(raw: Any) -> dict[str, Any]:
    """`validate_initial_state`, memoised on the state's JSON bytes (so the many episodes of
    one task validate once). Treat the result as read-only: `WorldState` copies it."""
    try:
        key = orjson.dumps(raw)
    except TypeError:  # not JSON-able: let validation name the problem
        return validate_initial_state(raw)
    with _NORMALISED_LOCK:
        hit = _NORMALISED.get(key)
        if hit is not None:
            _NORMALISED.move_to_end(key)
            return hit
    normalised = validate_initial_state(raw)
    with _NORMALISED_LOCK:
        _NORMALISED[key] = normalised
        if len(_NORMALISED) > _NORMALISED_SIZE:
            _NORMALISED.popitem(last=False)
    return normalised


def _copy_state(data: dict[str, Any]) -> dict[str, Any]:
    """A deep copy of a normalised state (its shape is known: much faster than deepcopy)."""
    user = dict(data["user"])
    user["payment_methods"] = list(user["payment_methods"])
    orders = []
    for order in data["orders"]:
        copied = dict(order)
        copied["items"] = [dict(line) for line in order["items"]]
        orders.append(copied)
    return {
        "today": data["today"],
        "user": user,
        "cart": [dict(line) for line in data["cart"]],
        "orders": orders,
        "returns": [dict(entry) for entry in data["returns"]],
    }


class WorldState:
    """The mutable world: plain dicts and lists so a step costs microseconds.

    `cart` maps item_id -> quantity (insertion-ordered); `orders` maps order_id -> order.
    `version` counts successful writes (the reward uses it to tell a useful re-read from a
    repeat).
    """

    __slots__ = (
        "cart",
        "new_order_ids",
        "new_return_ids",
        "orders",
        "returns",
        "today",
        "today_date",
        "user",
        "version",
    )

    def __init__(self, normalised: dict[str, Any]):
        data = _copy_state(normalised)
        self.today: str = data["today"]
        self.today_date = dt.date.fromisoformat(self.today)
        self.user: dict[str, Any] = data["user"]
        self.cart: dict[str, int] = {line["item_id"]: line["quantity"] for line in data["cart"]}
        self.orders: dict[str, dict[str, Any]] = {o["order_id"]: o for o in data["orders"]}
        self.returns: list[dict[str, Any]] = data["returns"]
        self.new_order_ids: list[str] = []
        self.new_return_ids: list[str] = []
        self.version = 0

    # ---- id allocation ----------------------------------------------------------------------
    def next_order_id(self) -> str:
        k = len(self.new_order_ids) + 1
        while f"N{k:04d}" in self.orders:
            k += 1
        return f"N{k:04d}"

    def next_return_id(self) -> str:
        used = {r["return_id"] for r in self.returns}
        k = len(self.new_return_ids) + 1
        while f"RN{k:03d}" in used:
            k += 1
        return f"RN{k:03d}"

    # ---- views ------------------------------------------------------------------------------
    def mutable(self) -> dict[str, Any]:
        """The part of the state an end-state comparison looks at (JSON-ready)."""
        return {
            "user": self.user,
            "cart": [{"item_id": k, "quantity": q} for k, q in self.cart.items()],
            "orders": sorted(self.orders.values(), key=lambda o: o["order_id"]),
            "returns": sorted(self.returns, key=lambda r: r["return_id"]),
        }

    def to_json(self) -> dict[str, Any]:
        return {"today": self.today, **json.loads(json.dumps(self.mutable()))}

    def canonical_hash(self) -> str:
        """sha256 prefix of the mutable state as JSON with sorted keys."""
        text = json.dumps(self.mutable(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def days_since(self, date_text: str) -> int:
        return (self.today_date - dt.date.fromisoformat(date_text)).days

    def add_days(self, days: int) -> str:
        return (self.today_date + dt.timedelta(days=days)).isoformat()
