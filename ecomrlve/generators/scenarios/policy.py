"""policy: answer store-policy questions whose answers branch on category × days × membership.

Topics: can an item still be returned (category × days since delivery × membership), the
restocking fee (department), exchanges (category), refund timing, shipping cost (membership ×
order value) and cancellation (order status). Each topic needs one `search_policy`; when the
question is about "the boots from my order in May" the agent first reads the delivery date
with `list_orders`; a vague question ("something I bought") needs `ask_user`. `policy_branches`
sets how many topics one message asks about.

`comparison_share` is the share of answers that turn on a comparison or a rule against the
customer: the item's return window closed (days since delivery past the window) or the item is
final sale, free shipping (a Plus member, or an order past the free-shipping threshold), an order
that has already shipped. The others are the happy path, a fact the policy text states as it is
(a window still open, a standard member's fee under the threshold, a processing order). It is 0
at d0-1, where every answer is a plain look-up, and grows with difficulty.

From d3, in `dependent_share` of a cell's tasks (`generators/dependent.py`) the customer acts
on the item's verdict: "if it can still go back, return it — and either way, order me the lamp
in blue". The agent looks the order up (the item's ids), files the return only when the window
is open and the item is no final sale, and buys the variant (`get_product`, `add_to_cart`,
`checkout`) in both cases.

Success: the final answer states every required fact (the verdict, the window and days left,
the fee, the shipping price, …) and contradicts none of them; no state may change. A question
that depends on an earlier verdict is answered with the verdict: the restocking fee of an item
whose return window has closed is "it can't be returned any more" (there is no return to charge
for), not a fee. Every
yes/no key comes from `PolicyBook` as the tools decide: an exchange follows the return window
and final-sale rules exactly like a return (so answering it needs the returns row too).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any

import numpy as np
from pydantic import Field

from ecomrlve.generators import followups
from ecomrlve.generators.base import Draft, Plan, Scenario, ScenarioConfig
from ecomrlve.generators.blocks import (
    World,
    ask_call,
    call,
    delivered_days_ago,
    fact,
    fee_fact,
    filler_orders,
    final_sale_facts,
    line_phrase,
    order_ref,
    order_when,
    policy_call,
    returns_policy_call,
    window_fact,
)
from ecomrlve.generators.context import GenContext
from ecomrlve.generators.dependent import COST as DEPENDENT_COST
from ecomrlve.generators.dependent import (
    DEPENDENT_RAMP,
    dependent_drawn,
    dependent_purchase,
    with_variant,
)
from ecomrlve.generators.difficulty import HistoryLength, IntentCount, Ramp, Share
from ecomrlve.generators.draws import between, pick
from ecomrlve.generators.order_requests import OrderRequests, delivered_order
from ecomrlve.generators.phrasing import money, render
from ecomrlve.generators.prompts import compose
from ecomrlve.tasks import AnswerFact, Goal, ToolCall

TOPICS: tuple[str, ...] = (
    "return_window",
    "restocking_fee",
    "exchange",
    "refunds",
    "shipping",
    "cancellation",
)
ITEM_TOPICS = frozenset({"return_window", "restocking_fee", "exchange"})
# P(the item of a turning answer is final sale rather than past its window)
FINAL_SALE_SHARE = 0.35
# order values a shipping question names (dollars); the happy path takes one under the
# free-shipping threshold, a turning answer one at or over it (or a Plus member)
ORDER_VALUES: tuple[float, ...] = (15.0, 20.0, 25.0, 35.0, 45.0, 60.0, 80.0, 120.0)
# days past a closed window, at most
CLOSED_FOR_DAYS = 45
# the answers `comparison_share` may turn: the item's eligibility, shipping, cancellation
TURNING: tuple[str, ...] = ("item", "shipping", "cancellation")
# no order_detail: a policy question does not list the orders, so the order id is never seen
FOLLOWUPS: tuple[str, ...] = ("reorder",)
# the customer acts on the verdict ({reason}: why it goes back)
RETURN_IF_OPEN: tuple[str, ...] = (
    "If it can still go back, please file the return — {reason}.",
    "Should it still be returnable, go ahead and return it; {reason}.",
    "If the window is still open, start the return for me ({reason}).",
    "Assuming it's still returnable, send it back for me: {reason}.",
)
RETURN_REASONS: tuple[str, ...] = ("it doesn't fit", "I changed my mind", "it arrived damaged")
TEMPLATES: tuple[str, ...] = (
    "I have a few questions. {questions}",
    "Quick policy questions: {questions}",
    "Before I decide anything: {questions}",
    "A few questions about your policies. {questions}",
    "Can you help me understand the store rules? {questions}",
    "I'd like to know a few things. {questions}",
    "Some questions before I go further. {questions}",
    "Could you check your policies for me? {questions}",
    "I'm trying to figure out my options. {questions}",
    "Please clarify a couple of things. {questions}",
    "I have some questions about returns and orders. {questions}",
    "Before I contact anyone else: {questions}",
)


def policy_documents(topic: str, final_sale: bool) -> tuple[str, ...]:
    """Which policy texts answer `topic`. An exchange needs the exchanges row and the returns
    row (exchanges follow the return window); a final-sale item's only rule is its returns row."""
    if topic in ("return_window", "restocking_fee") or (topic == "exchange" and final_sale):
        return ("returns",)
    if topic == "exchange":
        return ("returns", "exchanges")
    return (topic,)


class PolicyConfig(ScenarioConfig):
    policy_branches: int = Field(ge=1, le=6, description="topics asked about (at most)")
    n_orders: HistoryLength
    lookup_prob: Annotated[Share, Ramp.capped(0.1, 0.8)] = Field(
        description="P(the item is named via an order)"
    )
    # the happy path at d0-1 (every answer a plain look-up), then 0.12 a step up to 0.9
    comparison_share: Annotated[Share, Ramp.rising(0.12, 0.9)] = Field(
        description="P(an answer turns on a comparison or a refusal)"
    )
    n_intents: IntentCount
    dependent_share: Annotated[Share, DEPENDENT_RAMP] = Field(
        description="share of tasks that return the item if they may, and rebuy"
    )


class Policy(Scenario):
    name = "policy"
    seed_id = 5
    Config = PolicyConfig

    def lists_orders(self, plan: Plan) -> bool:
        return bool(plan["lookup"])

    def plan(self, config: PolicyConfig, rng: np.random.Generator) -> Plan:
        b = config.policy_branches
        n_topics = between(rng, max(1, b - 1), b + 1)
        topics = [TOPICS[int(i)] for i in sorted(rng.choice(len(TOPICS), n_topics, replace=False))]
        about_item = any(t in ITEM_TOPICS for t in topics)
        turns = {answer: bool(rng.random() < config.comparison_share) for answer in TURNING}
        final_sale = about_item and turns["item"] and rng.random() < FINAL_SALE_SHARE
        lookup = about_item and rng.random() < config.lookup_prob
        vague = about_item and rng.random() < config.hidden_detail_share
        # one search_policy per policy document: window and fee share the returns rule
        documents = {d for t in topics for d in policy_documents(t, final_sale)}
        more = followups.draw(rng, FOLLOWUPS, config.n_intents - 1, config.difficulty)
        # drawn last, and not at share 0: every other draw is the one it was before it
        act = dependent_drawn(config.dependent_share, rng) and about_item
        lookup = lookup or act  # the return needs the order's ids
        steps = int(vague) + int(lookup) + len(documents)
        # the variant is bought either way ("…and if it can't go back, I still want the blue
        # one"); the return only when the window is open and the item is no final sale
        steps += (DEPENDENT_COST + int(not turns["item"])) * int(act)
        return Plan.with_followups(
            steps,
            more,
            topics=topics,
            lookup=lookup,
            vague=vague,
            final_sale=final_sale,
            turns=turns,
            act=act,
        )

    def build(
        self, config: PolicyConfig, plan: Plan, rng: np.random.Generator, ctx: GenContext
    ) -> Draft:
        topics: list[str] = plan["topics"]
        vague, turns = plan["vague"], plan["turns"]
        world, category, row, order = self._world(config, plan, rng, ctx)
        days = delivered_days_ago(order)
        asking = _Asking(ctx, rng, world.membership, category, days, turns)
        facts = self._name_the_item(plan, asking, rng, ctx, row, order)
        for topic in topics:
            _TOPICS[topic](asking, topics)
        acted = OrderRequests()
        purchase = None
        if plan["act"]:
            reason = pick(rng, RETURN_REASONS)
            asking.questions.append(
                render(pick(rng, RETURN_IF_OPEN), {"reason": reason}, rng, config.typo_rate)
            )
            # a vague question names no product: nor does the request that hangs on it
            noun = "same thing" if vague else None
            then = dependent_purchase(ctx, rng, row, "either", True, config.typo_rate, noun=noun)
            asking.questions.append(then.sentence)
            if not turns["item"]:  # it can go back
                acted.return_item(ctx, order, row, reason)
                facts["reason"] = reason  # the return's reason is judged against it
            asking.reference += acted.reference + then.reference
            purchase = then.purchase
        prompt = compose(
            pick(rng, TEMPLATES), {"questions": " ".join(asking.questions)}, rng, config.typo_rate
        )
        extra = followups.add_followups(
            plan["followups"], ctx, rng, world, {category}, typo_rate=config.typo_rate
        )
        extra.merge(asking.reference, asking.answer_facts, asking.policies)
        prompt = extra.prompt(prompt)
        goal = Goal(
            user_facts=facts,
            answer_facts=asking.answer_facts,
            relevant_policies=asking.policies,
            relevant_ids=[order["order_id"], ctx.item_ids[row], *extra.relevant],
            purchase=purchase or extra.purchase,
            returns=acted.returns,
            typo_rate=config.typo_rate,
        )
        return Draft(prompt, goal, world.state(), asking.reference, extra.addon_calls)

    def _world(
        self, config: PolicyConfig, plan: Plan, rng: np.random.Generator, ctx: GenContext
    ) -> tuple[World, str, int, dict[str, Any]]:
        """The customer (a standard member for a shipping question's happy path), the item
        (final sale or returnable) and its delivered order: inside the return window, or past it
        when the item's answer is to turn; fillers."""
        topics, turns = plan["topics"], plan["turns"]
        # the happy path of a shipping question is a standard member's fee, stated as it is
        happy_shipping = "shipping" in topics and not turns["shipping"]
        world = World.new(ctx, rng, "standard" if happy_shipping else None)
        pool = ctx.final_sale_categories if plan["final_sale"] else ctx.returnable_categories
        category = pick(rng, pool or ctx.categories)
        row = ctx.pick_any(rng, category)
        if plan["act"]:
            row = with_variant(ctx, rng, category, row)
        ids = ctx.order_ids(rng, config.n_orders + 1)
        rule = ctx.policies.return_rule(category, world.membership)
        if not rule.returnable:
            days = between(rng, 1, 1 + CLOSED_FOR_DAYS)
        elif turns["item"]:  # past the window
            days = between(rng, rule.window_days + 1, rule.window_days + 1 + CLOSED_FOR_DAYS)
        else:  # inside the window, neither its length nor half of it: the prompt states the
            # days since delivery, so they must not repeat the window or the days left
            days = between(rng, 1, rule.window_days)
            if 2 * days == rule.window_days:
                days -= 1
        order = delivered_order(ctx, rng, ids[0], [row], days, world.user)
        world.orders = [order, *filler_orders(ctx, rng, ids[1:], {category})]
        return world, category, row, order

    def _name_the_item(
        self,
        plan: Plan,
        asking: _Asking,
        rng: np.random.Generator,
        ctx: GenContext,
        row: int,
        order: dict[str, Any],
    ) -> dict[str, str]:
        """How the questions name the item (by its order, its category, or vaguely: then the
        agent asks) and the facts the customer knows about it."""
        lookup, vague, category, days = plan["lookup"], plan["vague"], asking.category, asking.days
        facts: dict[str, str] = {"category": category}
        if lookup:
            asking.subject = f"{line_phrase(ctx, row, rng)} from my order {order_when(order, rng)}"
            if vague:
                asking.subject = "the thing from one of my recent orders"
                facts["order"] = f"{order_ref(order)}, with {line_phrase(ctx, row, rng)}"
                facts["item"] = line_phrase(ctx, row, rng)
        elif vague:
            asking.subject = f"something I received {days} days ago"
        else:
            asking.subject = f"{category} I received {days} days ago"
        if vague:
            asking.reference.append(ask_call(["order" if lookup else "category"], rng))
        if lookup:
            asking.reference.append(call("list_orders"))
        return facts


@dataclass
class _Asking:
    """The questions of one message while they are asked, one topic at a time: the item's
    returns rule and eligibility (delivered `days` ago), and what each topic adds."""

    ctx: GenContext
    rng: np.random.Generator
    membership: str
    category: str
    days: int
    turns: dict[str, bool]  # which answers turn on a comparison (`TURNING`)
    subject: str = ""  # how the user names the item
    questions: list[str] = field(default_factory=list)
    reference: list[ToolCall] = field(default_factory=list)
    answer_facts: list[AnswerFact] = field(default_factory=list)
    policies: list[str] = field(default_factory=list)
    looked_up: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        policies = self.ctx.policies
        self.rule = policies.return_rule(self.category, self.membership)
        self.eligibility = policies.return_eligibility(self.category, self.membership, self.days)
        # durations the answer may state besides its targets: days since delivery, days
        # since the window closed
        self.context_days = [str(self.days), str(max(0, self.days - self.rule.window_days))]

    def add(self, *facts: AnswerFact) -> None:
        """Add facts a previous topic has not stated already."""
        for new in facts:
            if all(
                (f.kind, f.value, f.role) != (new.kind, new.value, new.role)
                for f in self.answer_facts
            ):
                self.answer_facts.append(new)

    def look_up(self, topic: str) -> None:
        """One `search_policy` per document the topic needs that no earlier topic read."""
        ctx, category = self.ctx, self.category
        for document in policy_documents(topic, not self.rule.returnable):
            if document in self.looked_up:
                continue
            self.looked_up.add(document)
            if document == "returns":
                # the returns row of the category states the window and any restocking fee
                self.reference.append(
                    returns_policy_call(ctx, category, self.membership, self.rng, self.policies)
                )
            else:
                queries = [f"exchange {category}", f"{category} exchanges size colour"]
                queries = [queries[int(i)] for i in self.rng.permutation(2)]
                policy_id = ctx.policy_ids[("exchanges", category, "any")]
                self.reference.append(policy_call(ctx, queries, policy_id, self.policies))

    def ask_about_item(
        self, topic: str, question: str, open_facts: list[AnswerFact], closed_say: str, closed: str
    ) -> None:
        """An item topic: final sale, or the window still open (`open_facts`), or closed (the
        `closed` verdict, said as `closed_say`, with the window as context)."""
        self.questions.append(question)
        self.look_up(topic)
        window = self.rule.window_days
        if not self.rule.returnable:
            self.add(*final_sale_facts(self.category))
        elif self.eligibility.eligible:
            self.add(*open_facts)
        else:
            self.add(
                fact("verdict", closed, closed_say),
                window_fact(window, allowed=self.context_days, required=False),
            )

    def closed_ago(self) -> str:
        """The closed window in words: "30-day return window for shoes closed 4 days ago"."""
        window, category = self.rule.window_days, self.category
        return f"{window}-day return window for {category} closed {self.days - window} days ago"


def _ask_return_window(asking: _Asking, topics: list[str]) -> None:
    rule, category = asking.rule, asking.category
    # one sentence per fact: the verdict asked for, then its context (the window and the days
    # left), which a correct answer may leave out
    window = (
        f"The return window for {category} is {rule.window_days} days for "
        f"{asking.membership} members."
    )
    context = asking.context_days
    open_facts = [
        fact("verdict", "return:yes", "Yes, you can still return it."),
        window_fact(rule.window_days, window, allowed=context, required=False),
    ]
    left = rule.window_days - asking.days
    if left:
        open_facts.append(
            window_fact(
                left, f"You have {left} more days.", "left", allowed=context, required=False
            )
        )
    else:
        open_facts.append(fact("term", "last_day", "Today is the last day.", required=False))
    closed = f"No, the {asking.closed_ago()}, so it can't be returned any more."
    asking.ask_about_item(
        "return_window", f"Can I still return {asking.subject}?", open_facts, closed, "return:no"
    )


def _ask_restocking_fee(asking: _Asking, topics: list[str]) -> None:
    it = "it" if "return_window" in topics else asking.subject
    # the fee depends on an earlier verdict: past the window there is no return to charge
    # for, so the answer says that first (a customer told "there's no restocking fee" would
    # send it back and be refused)
    closed = (
        f"It can't be returned any more: the {asking.closed_ago()}, so the question of a fee "
        "doesn't arise."
    )
    asking.ask_about_item(
        "restocking_fee",
        f"Is there a restocking fee if I return {it}?",
        [fee_fact(asking.rule.restocking_fee)],
        closed,
        "return:no",
    )


def _ask_exchange(asking: _Asking, topics: list[str]) -> None:
    it = "it" if asking.questions else asking.subject
    can = (
        "You can exchange it for another size or colour of the same product while the return "
        "window is open."
    )
    closed = (
        f"Exchanges follow the {asking.rule.window_days}-day return window, which has closed, "
        "so it can't be exchanged any more either."
    )
    asking.ask_about_item(
        "exchange",
        # not "for another size or colour": the question must not state the answer
        f"Could I exchange {it} for a different one instead?",
        [fact("verdict", "exchange:yes", can)],
        closed,
        "exchange:no",
    )


def _ask_refunds(asking: _Asking, topics: list[str]) -> None:
    ctx = asking.ctx
    asking.questions.append("How long does a refund take to come through?")
    query = pick(asking.rng, ("refunds original payment method", "refund business days"))
    policy_id = ctx.policy_ids[("refunds", "", "any")]
    asking.reference.append(policy_call(ctx, query, policy_id, asking.policies))
    low, high = ctx.policies.refund_days  # this shop's book, never a constant
    told = (
        f"A refund reaches your original payment method within {low} to {high} business days "
        "after the returned item is received."
    )
    asking.add(fact("duration", f"{low}-{high}", told))


def _ask_shipping(asking: _Asking, topics: list[str]) -> None:
    ctx, membership = asking.ctx, asking.membership
    threshold = ctx.policies.free_shipping_threshold
    free = membership == "plus" or asking.turns["shipping"]
    values = [v for v in ORDER_VALUES if (v >= threshold) == free] or [threshold]
    value = float(pick(asking.rng, values))
    asking.questions.append(f"How much is standard shipping on a {money(value)} order for me?")
    query = f"shipping cost {membership} members"
    policy_id = ctx.policy_ids[("shipping", "", membership)]
    asking.reference.append(policy_call(ctx, query, policy_id, asking.policies))
    fee = ctx.policies.shipping_fee(value, membership)
    if fee == 0 and membership == "plus":
        say = "Standard shipping is free for you as a Plus member."
    elif fee == 0:
        say = f"Standard shipping on a {money(value)} order is free."
    else:
        say = (
            f"Standard shipping on a {money(value)} order costs {money(fee)}, since it is under "
            f"the {money(threshold)} free-shipping threshold."
        )
    base = ctx.policies.standard_shipping_fee
    allowed = [f"{value:.2f}", f"{threshold:.2f}", f"{base:.2f}"]
    # each amount in its role: "$50 to ship" is no $4.99 fee, "$35 threshold" no $50 one; the
    # fee of orders under the threshold may be told as the rule ("under $50 it's $4.99")
    roles = ["order", "threshold", "base"]
    asking.add(
        fact("money", f"{fee:.2f}", say, allowed=allowed, allowed_roles=roles, role="shipping")
    )


def _ask_cancellation(asking: _Asking, topics: list[str]) -> None:
    ctx, rng = asking.ctx, asking.rng
    status = "shipped" if asking.turns["cancellation"] else "processing"
    asking.questions.append(f"And can I still cancel an order that is {status}?")
    query = pick(rng, ("cancel order", "cancellation policy"))
    policy_id = ctx.policy_ids[("cancellation", "", "any")]
    asking.reference.append(policy_call(ctx, query, policy_id, asking.policies))
    if ctx.policies.can_cancel(status):
        can = f"Yes, an order that is still {status} can be cancelled."
        asking.add(fact("verdict", "cancel:yes", can))
    else:
        cannot = (
            "An order that has already shipped can't be cancelled any more; you can return it "
            "once it's delivered instead."
        )
        asking.add(
            fact("verdict", "cancel:no", cannot), fact("term", "return_instead", required=False)
        )


_TOPICS: dict[str, Callable[[_Asking, list[str]], None]] = {
    "return_window": _ask_return_window,
    "restocking_fee": _ask_restocking_fee,
    "exchange": _ask_exchange,
    "refunds": _ask_refunds,
    "shipping": _ask_shipping,
    "cancellation": _ask_cancellation,
}
