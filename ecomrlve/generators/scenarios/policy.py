"""policy: answer store-policy questions whose answers branch on category × days × membership.

Topics: can an item still be returned (category × days since delivery × membership), the
restocking fee (department), exchanges (category), refund timing, shipping cost (membership ×
order value) and cancellation (order status). Each topic needs one `search_policy`; when the
question is about "the boots from my order in May" the agent first reads the delivery date
with `list_orders`; a vague question ("something I bought") needs `ask_user`. `policy_branches`
sets how many topics one message asks about.

Success: the final answer states every required fact (the verdict, the window and days left,
the fee, the shipping price, …) and contradicts none of them; no state may change. A question
that depends on an earlier verdict is answered with the verdict: the restocking fee of an item
whose return window has closed is "it can't be returned any more" (there is no return to charge
for), not a fee. Every
yes/no key comes from `PolicyBook` as the tools decide: an exchange follows the return window
and final-sale rules exactly like a return (so answering it needs the returns row too).
"""

from __future__ import annotations

from typing import Any

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
from ecomrlve.generators.draws import between, pick
from ecomrlve.generators.phrasing import money
from ecomrlve.generators.prompts import compose
from ecomrlve.tasks import AnswerFact, Goal

TOPICS: tuple[str, ...] = (
    "return_window",
    "restocking_fee",
    "exchange",
    "refunds",
    "shipping",
    "cancellation",
)
ITEM_TOPICS = frozenset({"return_window", "restocking_fee", "exchange"})
# no order_detail: a policy question does not list the orders, so the order id is never seen
FOLLOWUPS: tuple[str, ...] = ("reorder",)
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
    n_orders: int = Field(ge=1)
    lookup_prob: float = Field(ge=0.0, le=1.0, description="P(the item is named via an order)")
    n_intents: int = Field(ge=1, description="requests in one message: 1 + follow-ups")


class Policy(Scenario):
    name = "policy"
    Config = PolicyConfig

    def tuned(self, difficulty: int, values: dict[str, Any]) -> dict[str, Any]:
        return {"lookup_prob": min(0.8, 0.1 * difficulty)}

    def plan(self, config: PolicyConfig, rng: np.random.Generator) -> Plan:
        b = config.policy_branches
        n_topics = between(rng, max(1, b - 1), b + 1)
        topics = [TOPICS[int(i)] for i in sorted(rng.choice(len(TOPICS), n_topics, replace=False))]
        about_item = any(t in ITEM_TOPICS for t in topics)
        final_sale = about_item and rng.random() < 0.2
        lookup = about_item and rng.random() < config.lookup_prob
        vague = about_item and rng.random() < config.hidden_detail_share
        # one search_policy per policy document: window and fee share the returns rule
        documents = {d for t in topics for d in policy_documents(t, final_sale)}
        more = followups.draw(rng, FOLLOWUPS, config.n_intents - 1, config.difficulty)
        steps = int(vague) + int(lookup) + len(documents) + followups.cost(more)
        return Plan(
            steps,
            {
                "topics": topics,
                "lookup": lookup,
                "vague": vague,
                "final_sale": final_sale,
                "followups": more,
            },
        )

    def build(
        self, config: PolicyConfig, plan: Plan, rng: np.random.Generator, ctx: GenContext
    ) -> Draft:
        topics: list[str] = plan["topics"]
        lookup, vague = plan["lookup"], plan["vague"]
        world = World.new(ctx, rng)
        membership = world.membership
        pool = ctx.final_sale_categories if plan["final_sale"] else ctx.returnable_categories
        category = pick(rng, pool or ctx.categories)
        row = ctx.pick_any(rng, category)
        ids = ctx.order_ids(rng, config.n_orders + 1)
        days = between(rng, 1, 75)
        transit = between(rng, 2, 6)
        order = ctx.order(
            ids[0], [row], [1], "delivered", days + transit, transit_days=transit, user=world.user
        )
        world.orders = [order, *filler_orders(ctx, rng, ids[1:], {category})]
        days = delivered_days_ago(order)

        reference = []
        facts: dict[str, str] = {"category": category}
        if lookup:
            subject = f"{line_phrase(ctx, row, rng)} from my order {order_when(order, rng)}"
            if vague:
                subject = "the thing from one of my recent orders"
                facts["order"] = f"{order_ref(order)}, with {line_phrase(ctx, row, rng)}"
                facts["item"] = line_phrase(ctx, row, rng)
        elif vague:
            subject = f"something I received {days} days ago"
        else:
            subject = f"{category} I received {days} days ago"
        if vague:
            reference.append(ask_call(["order" if lookup else "category"], rng))
        if lookup:
            reference.append(call("list_orders"))
        questions: list[str] = []
        answer_facts: list[AnswerFact] = []
        policies: list[str] = []
        rule = ctx.policies.return_rule(category, membership)
        eligibility = ctx.policies.return_eligibility(category, membership, days)
        looked_up: set[str] = set()
        # durations the answer may state besides its targets: days since delivery, days since
        # the window closed
        context_days = [str(days), str(max(0, days - rule.window_days))]

        def look_up(topic: str) -> None:
            for document in policy_documents(topic, not rule.returnable):
                if document in looked_up:
                    continue
                looked_up.add(document)
                if document == "returns":
                    # the returns row of the category states the window and any restocking fee
                    reference.append(returns_policy_call(ctx, category, membership, rng, policies))
                else:
                    queries = [f"exchange {category}", f"{category} exchanges size colour"]
                    queries = [queries[int(i)] for i in rng.permutation(2)]
                    policy_id = ctx.policy_ids[("exchanges", category, "any")]
                    reference.append(policy_call(ctx, queries, policy_id, policies))

        def add(*facts: AnswerFact) -> None:
            for new in facts:
                if all((f.kind, f.value) != (new.kind, new.value) for f in answer_facts):
                    answer_facts.append(new)

        for topic in topics:
            if topic == "return_window":
                questions.append(f"Can I still return {subject}?")
                look_up(topic)
                if not rule.returnable:
                    add(*final_sale_facts(category))
                elif eligibility.eligible:
                    left = rule.window_days - days
                    # one sentence per fact: the verdict asked for, then its context (the
                    # window and the days left), which a correct answer may leave out
                    window = (
                        f"The return window for {category} is {rule.window_days} days for "
                        f"{membership} members."
                    )
                    add(
                        fact("verdict", "return:yes", "Yes, you can still return it."),
                        window_fact(rule.window_days, window, allowed=context_days, required=False),
                    )
                    if left:
                        told = f"You have {left} more days."
                        add(window_fact(left, told, allowed=context_days, required=False))
                    else:
                        add(fact("term", "last_day", "Today is the last day.", required=False))
                else:
                    add(
                        fact(
                            "verdict",
                            "return:no",
                            f"No, the {rule.window_days}-day return window for {category} "
                            f"closed {days - rule.window_days} days ago, so it can't be returned "
                            "any more.",
                        ),
                        window_fact(rule.window_days, allowed=context_days, required=False),
                    )
            elif topic == "restocking_fee":
                it = "it" if "return_window" in topics else subject
                questions.append(f"Is there a restocking fee if I return {it}?")
                look_up(topic)
                if not rule.returnable:
                    add(*final_sale_facts(category))
                elif eligibility.eligible:
                    add(fee_fact(rule.restocking_fee))
                else:
                    # the fee depends on an earlier verdict: past the window there is no
                    # return to charge for, so the answer says that first (a customer told
                    # "there's no restocking fee" would send it back and be refused)
                    add(
                        fact(
                            "verdict",
                            "return:no",
                            f"It can't be returned any more: the {rule.window_days}-day return "
                            f"window for {category} closed {days - rule.window_days} days "
                            "ago, so the question of a fee doesn't arise.",
                        ),
                        window_fact(rule.window_days, allowed=context_days, required=False),
                    )
            elif topic == "exchange":
                it = "it" if len(questions) else subject
                # not "for another size or colour": the question must not state the answer
                questions.append(f"Could I exchange {it} for a different one instead?")
                look_up(topic)
                if not rule.returnable:
                    add(*final_sale_facts(category))
                elif eligibility.eligible:
                    add(
                        fact(
                            "verdict",
                            "exchange:yes",
                            "You can exchange it for another size or colour of the same product "
                            "while the return window is open.",
                        )
                    )
                else:
                    add(
                        fact(
                            "verdict",
                            "exchange:no",
                            f"Exchanges follow the {rule.window_days}-day return window, which "
                            "has closed, so it can't be exchanged any more either.",
                        ),
                        window_fact(rule.window_days, allowed=context_days, required=False),
                    )
            elif topic == "refunds":
                questions.append("How long does a refund take to come through?")
                query = pick(rng, ("refunds original payment method", "refund business days"))
                policy_id = ctx.policy_ids[("refunds", "", "any")]
                reference.append(policy_call(ctx, query, policy_id, policies))
                low, high = ctx.policies.refund_days  # this shop's book, never a constant
                add(
                    fact(
                        "duration",
                        f"{low}-{high}",
                        f"A refund reaches your original payment method within {low} to {high} "
                        "business days after the returned item is received.",
                    )
                )
            elif topic == "shipping":
                value = float(rng.choice([25, 35, 45, 60, 80, 120]))
                questions.append(f"How much is standard shipping on a {money(value)} order for me?")
                query = f"shipping cost {membership} members"
                policy_id = ctx.policy_ids[("shipping", "", membership)]
                reference.append(policy_call(ctx, query, policy_id, policies))
                fee = ctx.policies.shipping_fee(value, membership)
                threshold = ctx.policies.free_shipping_threshold
                if fee == 0 and membership == "plus":
                    say = "Standard shipping is free for you as a Plus member."
                elif fee == 0:
                    say = f"Standard shipping on a {money(value)} order is free."
                else:
                    say = (
                        f"Standard shipping on a {money(value)} order costs {money(fee)}, since "
                        f"it is under the {money(threshold)} free-shipping "
                        "threshold."
                    )
                allowed = [f"{value:.2f}", f"{threshold:.2f}"]
                add(fact("money", f"{fee:.2f}", say, allowed=allowed))
            else:  # cancellation
                status = pick(rng, ("shipped", "processing"))
                questions.append(f"And can I still cancel an order that is {status}?")
                query = pick(rng, ("cancel order", "cancellation policy"))
                policy_id = ctx.policy_ids[("cancellation", "", "any")]
                reference.append(policy_call(ctx, query, policy_id, policies))
                if ctx.policies.can_cancel(status):
                    add(
                        fact(
                            "verdict",
                            "cancel:yes",
                            f"Yes, an order that is still {status} can be cancelled.",
                        )
                    )
                else:
                    add(
                        fact(
                            "verdict",
                            "cancel:no",
                            "An order that has already shipped can't be cancelled any more; "
                            "you can return it once it's delivered instead.",
                        ),
                        fact("term", "return_instead", required=False),
                    )
        prompt = compose(
            pick(rng, TEMPLATES), {"questions": " ".join(questions)}, rng, config.typo_rate
        )
        extra = followups.add_followups(
            plan["followups"], ctx, rng, world, {category}, typo_rate=config.typo_rate
        )
        extra.merge(reference, answer_facts, policies)
        prompt = extra.prompt(prompt)
        goal = Goal(
            user_facts=facts,
            answer_facts=answer_facts,
            relevant_policies=policies,
            relevant_ids=[order["order_id"], ctx.item_ids[row], *extra.relevant],
            purchase=extra.purchase,
            typo_rate=config.typo_rate,
        )
        return Draft(prompt, goal, world.state(), reference)
