"""World events during an episode (issue 29): the shop changes while the agent works.

A task's `events` (`ecomrlve.tasks.WorldEvent`, drawn by `ecomrlve.generators.events`) are
played by `WorldEvents`, which the env asks before every tool call (`before_call`) and after it
(`after_call`): an event tied to an action (issue 44) fires just before the first call of its
`before` tool, or just after the first successful call of its `after` tool, that names its item
or order; one without (rows written before) fires once `after_calls` calls were made. A
transient tool failure answers the call instead of the tool. The first refusal an event causes
(an add or checkout of a product that sold out, the cancel of an order that shipped) is
`refused`: news to the agent, not waste, and the same call again is no repeat. What fired,
and when, is kept on the `EpisodeRecord` (`events_fired`: event index -> number of calls made
before it fired), so the verifier judges every action on the world as it was when taken:

* a change that fired after the action it could have touched asks nothing more (a cancel made
  before the order shipped stays a valid cancel; an order placed before a price change paid the
  old price and nothing needs telling), and so does a price change before the agent ever saw
  the product (it only ever saw one price);
* a change the agent ran into must be told to the customer in the final message
  (`episode_facts`): the new price of a product it ordered after the change; that a product
  in the cart or asked for went out of stock; that an order shipped before the agent cancelled
  it (the cancel the goal asked for is then no longer expected: `expected_cancels`); the
  status "shipped" of an order asked about that shipped before the agent last looked at it;
* a transient failure is only a fault of the tool: the failed call is not waste and the same
  call again is not a repeat (`CallRecord.transient`); not retrying it leaves the goal undone.
"""

from __future__ import annotations

from typing import Any

from ecomrlve.env.shop.state import WorldState
from ecomrlve.env.shop.tools import ShopTools
from ecomrlve.env.world.record import EpisodeRecord
from ecomrlve.tasks import AnswerFact, Task, WorldEvent

TRANSIENT_MESSAGES: dict[str, str] = {
    "timeout": "the {tool} service timed out; nothing was done, please try again",
    "service_unavailable": "{tool} is temporarily unavailable (503); nothing was done, try again",
    "rate_limited": "too many requests to {tool} (429 rate limited); nothing was done, try again",
}
TRANSIENT_CODE = "transient"
# what a customer is told when a product they wanted cannot be had any more
OUT_OF_STOCK_WORDS: tuple[str, ...] = (
    "out of stock",
    "no longer in stock",
    "not in stock",
    "sold out",
    "no longer available",
    "unavailable",
    "not available",
    "ran out",
    "run out",
)
SHIPPABLE = frozenset({"pending", "processing"})
# events that change nothing in the shop: a shop rule, and the customer's side of the talk
# (`generators/talk.py`); they hang on no action
TALK_KINDS = frozenset({"confirm_writes", "clarify", "change_of_mind"})


def names(event: WorldEvent, arguments: dict[str, Any]) -> bool:
    """Whether a call with `arguments` names the event's item or order (a call without that
    argument, such as `checkout` or `list_orders`, names every one)."""
    for key, value in (("item_id", event.item_id), ("order_id", event.order_id)):
        if value and key in arguments and arguments[key] != value:
            return False
    return True


class WorldEvents:
    """The events of one episode, fired on `tools` / `state` as calls are made."""

    def __init__(self, events: list[WorldEvent], tools: ShopTools, record: EpisodeRecord):
        self.events = events
        self.tools = tools
        self.record = record
        self.state: WorldState = record.state
        self._armed: dict[str, int] = {}  # tool -> index of the failure waiting for its call
        self._excused: set[int] = set()  # events whose first refusal was excused

    def before_call(
        self, calls_made: int, tool: str, arguments: dict[str, Any] | None = None
    ) -> dict[str, Any] | None:
        """Fire the events due before this call of `tool` (by the count, or tied to this
        action: `WorldEvent.before`); the transient error that answers this call instead of
        the tool, or None to run it."""
        arguments = arguments or {}
        for k, event in enumerate(self.events):
            if k in self.record.events_fired or event.after:
                continue
            if event.before:
                if event.before == tool and names(event, arguments):
                    self._fire(k, event, calls_made)
            elif event.after_calls <= calls_made:
                self._fire(k, event, calls_made)
        k = self._armed.pop(tool, None)
        if k is None:
            return None
        message = TRANSIENT_MESSAGES.get(self.events[k].error, TRANSIENT_MESSAGES["timeout"])
        return {"error": message.format(tool=tool), "code": TRANSIENT_CODE}

    def after_call(self, calls_made: int, tool: str, arguments: dict[str, Any], ok: bool) -> None:
        """Fire the events tied to the end of this call (`WorldEvent.after`), if it succeeded;
        `calls_made` counts this call."""
        if not ok:
            return
        for k, event in enumerate(self.events):
            if (
                k not in self.record.events_fired
                and event.after == tool
                and names(event, arguments)
            ):
                self._fire(k, event, calls_made)

    def refused(self, tool: str, arguments: dict[str, Any]) -> bool:
        """Whether a refused call is the first one a fired event caused: an add, a quantity
        or a checkout refused for a product that sold out, a cancel of an order that shipped."""
        for k, event in enumerate(self.events):
            if k not in self.record.events_fired or k in self._excused:
                continue
            if (
                event.kind == "out_of_stock"
                and tool in ("add_to_cart", "set_quantity", "checkout")
                and (tool == "checkout" or arguments.get("item_id") == event.item_id)
                and (tool != "checkout" or event.item_id in self.state.cart)
            ) or (
                event.kind == "order_shipped"
                and tool == "cancel_order"
                and arguments.get("order_id") == event.order_id
            ):
                self._excused.add(k)
                return True
        return False

    def _fire(self, k: int, event: WorldEvent, calls_made: int) -> None:
        self.record.events_fired[k] = calls_made
        self.record.event_carts[k] = tuple(self.state.cart)
        if event.item_id in self.tools.seen_ids:
            self.record.events_seen.add(k)
        self._apply(k, event)

    def _apply(self, k: int, event: WorldEvent) -> None:
        if event.kind == "price_change" and event.price is not None:
            self.tools.prices[event.item_id] = event.price
        elif event.kind == "out_of_stock":
            self.tools.withdrawn.add(event.item_id)
        elif event.kind == "order_shipped":
            order = self.state.orders.get(event.order_id)
            if order is not None and order["status"] in SHIPPABLE:
                order["status"] = "shipped"
                self.state.version += 1
        elif event.kind == "confirm_writes":
            self.tools.confirm_writes = True
        elif event.kind == "tool_failure":
            self._armed.setdefault(event.tool or "", k)


# ---- judging -------------------------------------------------------------------------------------
def _ordered_after(record: EpisodeRecord, fired_at: int, item_id: str) -> bool:
    """A successful checkout after the event bought `item_id` (the k-th successful checkout
    placed the k-th new order)."""
    before = sum(1 for call in record.calls[:fired_at] if call.name == "checkout" and call.ok)
    state = record.state
    for order_id in state.new_order_ids[before:]:
        if any(line["item_id"] == item_id for line in state.orders[order_id]["items"]):
            return True
    return False


def ran_into_stock(record: EpisodeRecord, k: int, fired_at: int, event: WorldEvent) -> bool:
    """The product was in the cart when it went out of stock, or the agent tried to buy it
    after (an add or a checkout refused)."""
    if event.item_id in record.event_carts.get(k, ()):
        return True
    for call in record.calls[fired_at:]:
        if not call.ok and event.item_id in (call.error or ""):
            return True
    return False


def _cancel_too_late(record: EpisodeRecord, fired_at: int, event: WorldEvent) -> bool:
    """The order shipped before any successful cancel of it."""
    for call in record.calls[:fired_at]:
        if call.name == "cancel_order" and call.ok and call.arguments["order_id"] == event.order_id:
            return False
    return True


def _looked_after(record: EpisodeRecord, fired_at: int, order_id: str) -> bool:
    """The agent's last look at the order came after the event fired: a listing of the orders,
    the order itself, or a cancel refused because of its status (transient failures show
    nothing)."""
    last = None
    for k, call in enumerate(record.calls):
        if call.transient:
            continue
        if (call.name == "list_orders" and call.ok) or (
            call.name in ("get_order", "cancel_order")
            and call.arguments.get("order_id") == order_id
        ):
            last = k
    return last is not None and last >= fired_at


def _shipped_under_the_agent(record: EpisodeRecord, fired_at: int, event: WorldEvent) -> bool:
    """The event shipped the order (it was pending or processing, and not cancelled first) and
    what the agent last saw of the order was after it: its status is now "shipped"."""
    initial = {o["order_id"]: o["status"] for o in record.initial["orders"]}
    return (
        initial.get(event.order_id) in SHIPPABLE
        and _cancel_too_late(record, fired_at, event)
        and _looked_after(record, fired_at, event.order_id)
    )


def consented_rise(task: Task, record: EpisodeRecord, lines: list[dict[str, Any]]) -> float:
    """How far the customer let the order go over budget: the rise of each price that went
    over it (`WorldEvent.over_budget`) and that they said yes to buying at, asked after the
    change and before the checkout, told of the new price (0: none; the budget holds)."""
    checkouts = [k for k, c in enumerate(record.calls) if c.name == "checkout" and c.ok]
    if not checkouts:
        return 0.0
    rise = 0.0
    for k, event in enumerate(task.events):
        fired_at = record.events_fired.get(k)
        if not event.over_budget or fired_at is None or event.old_price is None:
            continue
        if not any(
            fired_at <= c < checkouts[0] and _about_the_rise(record.calls[c].arguments, event)
            for c in record.confirmations
        ):
            continue
        for line in lines:
            if line["item_id"] == event.item_id:
                rise += (line["price"] - event.old_price) * line["quantity"]
    return max(0.0, rise)


def _about_the_rise(arguments: dict[str, Any], event: WorldEvent) -> bool:
    """A yes counts as consent to the new price only when the question told of it (its price,
    or the price or budget in words); "shall I place the order?" alone does not."""
    question = str(arguments.get("question", "")).lower()
    return any(w in question for w in ("budget", "price", "cost", f"{event.price:.2f}"))


def declined_rise(task: Task, record: EpisodeRecord) -> WorldEvent | None:
    """The price rise past the budget that fired in this episode and that the customer turns
    down when told (`WorldEvent.declined`): the purchase is then no longer wanted, or, with
    `drop`, only without that product (None: none)."""
    for k, event in enumerate(task.events):
        if event.over_budget and event.declined and k in record.events_fired:
            return event
    return None


DECLINED_WORDS: tuple[str, ...] = (
    "did not place",
    "didn't place",
    "have not placed",
    "haven't placed",
    "not placed",
    "did not order",
    "didn't order",
    "have not ordered",
    "haven't ordered",
    "not ordered",
    "did not buy",
    "didn't buy",
    "have not bought",
    "haven't bought",
    "not bought",
    "no order was placed",
    "not go ahead",
    "didn't go ahead",
    "did not purchase",
    "didn't purchase",
    "not purchased",
)
# a product left out of the order (`WorldEvent.drop`)
DROPPED_WORDS: tuple[str, ...] = (
    "left out",
    "left it out",
    "removed",
    "took out",
    "took it out",
    "taken out",
    "dropped",
    "without the",
    "not included",
    "didn't include",
    "did not include",
)
_COMMITTING = ("checkout", "cancel_order", "return_item", "exchange_item")


def unsettled(task: Task, record: EpisodeRecord) -> list[str]:
    """Violations of `clarify` events: the agent acted on one of the matching orders (a
    successful write naming either), or ended the episode, before the customer told the fact
    that says which order they mean."""
    out = []
    for event in task.events:
        if event.kind != "clarify":
            continue
        told = record.told.get(event.fact)
        twins = _matching_orders(record, event.order_id)
        acted = next(
            (k for k, call in enumerate(record.calls)
             if call.ok and call.name in _COMMITTING
             and (call.arguments.get("order_id") in twins or call.name == "checkout")),
            None,
        )  # fmt: skip
        if told is None or (acted is not None and acted < told):
            out.append(
                f"goal: two orders match the request and the agent did not ask which one the "
                f"customer means ({event.fact}) before acting"
            )
    return out


def _matching_orders(record: EpisodeRecord, order_id: str) -> set[str]:
    """`order_id` and the orders holding the same products (its twins)."""
    orders = {o["order_id"]: o for o in record.initial["orders"]}
    meant = orders.get(order_id)
    if meant is None:
        return {order_id}
    items = sorted(line["item_id"] for line in meant["items"])
    return {k for k, o in orders.items() if sorted(x["item_id"] for x in o["items"]) == items}


def expected_cancels(task: Task, record: EpisodeRecord) -> list[str]:
    """The goal's cancellations still possible in this episode: an order that shipped before
    the agent cancelled it can no longer be cancelled (the agent must say so instead)."""
    shipped = {
        event.order_id
        for k, event in enumerate(task.events)
        if event.kind == "order_shipped"
        and k in record.events_fired
        and _cancel_too_late(record, record.events_fired[k], event)
    }
    return [order_id for order_id in task.goal.cancel if order_id not in shipped]


def episode_facts(task: Task, record: EpisodeRecord) -> list[AnswerFact] | None:
    """The facts the final message must state in this episode: the goal's, changed by the
    events it ran into (None: no event changed them, the goal's own facts stand).

    * a price change before the checkout that bought the product: its new price (the old one
      may be stated too);
    * a product that went out of stock in the cart, or that the agent then failed to buy: that
      it is out of stock (the substitute is checked by the purchase goal and the claims);
    * an order to cancel that shipped before the agent cancelled it: that it has shipped and
      cannot be cancelled, instead of the goal's facts about that order;
    * another order that shipped before the agent last looked at it: its status is "shipped"
      (the status it had may be told too). Looked at only before, the status the agent saw
      stands: an answer right when the agent looked stays right.
    """
    facts = list(task.goal.answer_facts)
    changed = False
    for k, event in enumerate(task.events):
        fired_at = record.events_fired.get(k)
        if fired_at is None:
            continue
        if event.over_budget and event.declined:
            # turned down: no order (or none of it); the customer is told the new price and that
            # it was not bought
            words = DROPPED_WORDS if event.drop else DECLINED_WORDS
            facts += [
                AnswerFact(kind="money", value=f"{event.price:.2f}", say=event.say, role="price",
                           allowed=[f"{event.old_price:.2f}"], allowed_roles=["was"]),
                AnswerFact(kind="text", value=words[0], alternatives=list(words), say=event.say),
            ]  # fmt: skip
            changed = True
        elif (
            event.kind == "price_change"
            and k in record.events_seen  # a change is news only to an agent that saw the old price
            and _ordered_after(record, fired_at, event.item_id)
        ):
            allowed = [f"{event.old_price:.2f}"] if event.old_price is not None else []
            # the new price as the price, the old one as what it was ("from $25 to $20" swaps)
            facts.append(
                AnswerFact(kind="money", value=f"{event.price:.2f}", allowed=allowed, say=event.say,
                           role="price", allowed_roles=["was"] * len(allowed))
            )  # fmt: skip
            changed = True
        elif event.kind == "out_of_stock" and ran_into_stock(record, k, fired_at, event):
            facts.append(
                AnswerFact(
                    kind="text",
                    value=OUT_OF_STOCK_WORDS[0],
                    alternatives=list(OUT_OF_STOCK_WORDS),
                    say=event.say,
                )
            )
            changed = True
        elif (
            event.kind == "order_shipped"
            and event.order_id in task.goal.cancel
            and _cancel_too_late(record, fired_at, event)
        ):
            about = [f for f in facts if f.subject == event.order_id]
            cues = about[0].cues if about else [event.order_id]
            facts = [f for f in facts if f.subject != event.order_id]
            facts += [
                AnswerFact(kind="status", value="shipped", subject=event.order_id, cues=cues,
                           say=event.say),
                AnswerFact(kind="verdict", value="cancel:no", subject=event.order_id, cues=cues),
            ]  # fmt: skip
            changed = True
        elif event.kind == "order_shipped" and _shipped_under_the_agent(record, fired_at, event):
            told = [
                AnswerFact(kind="status", value="shipped", subject=f.subject, cues=f.cues,
                           allowed=[f.value], say=event.say or f.say)
                if f.kind == "status" and f.subject == event.order_id and f.value in SHIPPABLE
                else f
                for f in facts
            ]  # fmt: skip
            changed = changed or told != facts
            facts = told
    return facts if changed else None
