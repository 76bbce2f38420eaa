# ruff: noqa: E501  (the rewrite table reads best one rule per line)
"""Probes of the reward, shared by the tests and `benchmarks/reward_probes.py`.

* `paraphrase(answer)`: a correct answer rewritten into other common formats (dates as "the
  16th of June", "$4.99" as "4.99 USD", "can't" as "cannot", "has shipped" as "is on its
  way"…): it must still pass.
* `CHEAT_SHEET` and `order_dump(task)`: fixed or list-derived dumps of every policy fact,
  status and date: they must not pass.
* `SPAM_QUERIES`: unrelated searches for read-spam episodes that must earn nothing.
"""

from __future__ import annotations

import re

from ecomrlve.env.verifier import MAX_ANSWER_CHARS
from ecomrlve.tasks import Task

REWRITES = [
    (r"\b(January|February|March|April|May|June|July|August|September|October|November|December) (\d{1,2})\b",
     lambda m: f"the {m[2]}{'th' if m[2] not in ('1', '2', '3', '21', '22', '23', '31') else {'1': 'st', '21': 'st', '31': 'st', '2': 'nd', '22': 'nd', '3': 'rd', '23': 'rd'}[m[2]]} of {m[1]}"),
    (r"\$(\d+)\.(\d\d)\b", r"\1.\2 USD"),
    (r"\$(\d+)\b(?!\.)", r"\1 dollars"),
    (r"(\d+)% restocking fee", r"\1 percent restocking fee"),
    (r"no restocking fee", "no fee for restocking"),
    (r"(\d+)-day", r"\1 day"),
    (r"(\d+) more days", r"\1 days left"),
    (r"can't", "cannot"),
    (r"has shipped and should arrive on", "is on its way, arriving"),
    (r"was delivered on", "arrived on"),
    (r"is being processed", "is still being processed"),
    (r"I've cancelled your order", "Your order has been canceled:"),
    (r"you can return it once it arrives", "you can send it back after delivery"),
    (r"5 to 7 business days", "five to seven business days"),
    (r"Yes, you can still return it", "You're still eligible to return it"),
    (r"PayPal account", "paypal"),
    (r"is free", "costs nothing"),
]  # fmt: skip


def paraphrase(answer: str) -> str:
    for pattern, replacement in REWRITES:
        answer = re.sub(pattern, replacement, answer)
    return answer


CHEAT_SHEET = (
    "Here is everything you might need. Returns: apparel, footwear and home 30 days (60 for plus "
    "members, 45 for home), electronics 15 days (30 for plus) with a 10% restocking fee, beauty "
    "14 days (28 for plus), sports 30 days (60 for plus) with a 5% restocking fee; coffee, tea, "
    "fragrance and grocery are final sale and cannot be returned. Exchanges for another size or "
    "colour are possible while the return window is open; once it has closed, no exchange. "
    "Refunds take 5 to 7 business days to reach the original payment method. Standard shipping "
    "costs $4.99, free on orders of $50 or more and always free for plus members; express is "
    "$12.99. Orders can be cancelled while pending or processing; once shipped they can no "
    "longer be cancelled, so return them after delivery instead. Yes, you can return it; no, "
    "you can't. There is no restocking fee on most items. Statuses: pending, processing, "
    "shipped, delivered, cancelled."
)


def order_dump(task: Task) -> str:
    orders = task.initial_state["orders"]
    statuses = ", ".join(f"{o['order_id']} {o['status']}" for o in orders)
    dates = ", ".join(
        str(o.get(k)) for o in orders for k in ("placed", "eta", "delivered") if o.get(k)
    )
    dump = (
        f"Your orders: {statuses}. Dates: {dates}. Yes, you can; no, you can't. Return it instead."
    )
    return dump[:MAX_ANSWER_CHARS]


SPAM_QUERIES = ("shoe", "tea", "lamp", "socks", "phone", "mug", "bag", "towel", "pen", "hat")
