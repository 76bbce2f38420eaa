"""policy: answer store-policy questions whose answers branch on category × days × membership.

Topics: can an item still be returned (category × days since delivery × membership), the
restocking fee (department), exchanges (category), refund timing, shipping cost (membership ×
order value) and cancellation (order status). Each topic needs one `search_policy`; when the
question is about "the boots from my order in May" the agent first reads the delivery date
with `list_orders`; a vague question ("something I bought") needs `ask_user`. `policy_branches`
sets how many topics one message asks about.

Success: every required fact is in the final answer (the window or days left, the fee, the
shipping price, …), each with its accepted spellings; no state may change.
"""

from __future__ import annotations

import numpy as np
from pydantic import Field

from ecomrlve.catalogs.policies import FREE_SHIPPING_THRESHOLD, SHIPPING_FEE
from ecomrlve.generators.base import Draft, Plan, Scenario, ScenarioConfig
from ecomrlve.generators.blocks import (
    FINAL_SALE_FACTS,
    World,
    ask_call,
    call,
    delivered_days_ago,
    fee_facts,
    filler_orders,
    line_phrase,
    order_ref,
    order_when,
    policy_call,
    return_policy_id,
    returns_policy_call,
    window_facts,
)
from ecomrlve.generators.context import GenContext
from ecomrlve.generators.draws import between, pick
from ecomrlve.generators.phrasing import money, render
from ecomrlve.tasks import Goal, ToolCall

TOPICS: tuple[str, ...] = (
    "return_window",
    "restocking_fee",
    "exchange",
    "refunds",
    "shipping",
    "cancellation",
)
ITEM_TOPICS = frozenset({"return_window", "restocking_fee", "exchange"})
CLOSED_FACTS = ["closed", "expired", "passed", "ended", "no longer", "too late"]
REFUND_FACTS = ["5 to 7 business days", "5-7 business days", "5–7 business days"]
EXCHANGE_FACTS = [
    "another size or colour",
    "another size or color",
    "size or colour",
    "size or color",
]
CANCELLABLE_FACTS = [
    "pending or processing",
    "can be cancelled",
    "can be canceled",
    "can still be cancelled",
    "can still be canceled",
]
TEMPLATES: tuple[str, ...] = (
    "Hi, I have a few questions. {questions}",
    "Quick policy questions: {questions}",
    "Before I decide anything: {questions}",
)


def policy_document(topic: str, final_sale: bool) -> str:
    """Which policy text answers `topic` (a final-sale item's exchange rule is its returns row)."""
    if topic in ("return_window", "restocking_fee") or (topic == "exchange" and final_sale):
        return "returns"
    return topic


class PolicyConfig(ScenarioConfig):
    policy_branches: int = Field(ge=1, le=6, description="topics asked about (at most)")
    n_orders: int = Field(ge=1)
    hidden_detail_share: float = Field(ge=0.0, le=1.0)
    typo_rate: float = Field(ge=0.0, le=1.0)
    lookup_prob: float = Field(ge=0.0, le=1.0, description="P(the item is named via an order)")


class Policy(Scenario):
    name = "policy"
    Config = PolicyConfig

    def config_for(self, difficulty: int, axes: dict[str, float]) -> PolicyConfig:
        return PolicyConfig(
            difficulty=difficulty,
            policy_branches=int(axes["policy_branches"]),
            n_orders=int(axes["n_orders"]),
            hidden_detail_share=axes["hidden_detail_share"],
            typo_rate=axes["typo_rate"],
            lookup_prob=min(0.8, 0.1 * difficulty),
        )

    def plan(self, config: PolicyConfig, rng: np.random.Generator) -> Plan:
        b = config.policy_branches
        n_topics = between(rng, max(1, b - 1), b + 1)
        topics = [TOPICS[int(i)] for i in sorted(rng.choice(len(TOPICS), n_topics, replace=False))]
        about_item = any(t in ITEM_TOPICS for t in topics)
        final_sale = about_item and rng.random() < 0.2
        lookup = about_item and rng.random() < config.lookup_prob
        vague = about_item and rng.random() < config.hidden_detail_share
        # one search_policy per policy document: window and fee share the returns rule
        documents = {policy_document(t, final_sale) for t in topics}
        steps = int(vague) + int(lookup) + len(documents)
        return Plan(
            steps,
            {"topics": topics, "lookup": lookup, "vague": vague, "final_sale": final_sale},
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
        answer_facts: list[list[str]] = []
        rule = ctx.policies.return_rule(category, membership)
        looked_up: set[str] = set()

        def returns_call() -> ToolCall:
            # the returns row of the category states the window and any restocking fee
            return returns_policy_call(ctx, category, membership, rng)

        def look_up(topic: str, make) -> None:
            document = policy_document(topic, not rule.returnable)
            if document not in looked_up:
                looked_up.add(document)
                reference.append(make())

        for topic in topics:
            if topic == "return_window":
                questions.append(f"Can I still return {subject}?")
                look_up(topic, returns_call)
                if not rule.returnable:
                    answer_facts.append(FINAL_SALE_FACTS)
                elif days <= rule.window_days:
                    left = rule.window_days - days
                    answer_facts.append(window_facts(rule.window_days))
                    answer_facts.append(
                        [
                            f"{left} more days",
                            f"{left} more day",
                            f"{left} days left",
                            f"{left} day left",
                        ]
                    )
                else:
                    answer_facts.append(window_facts(rule.window_days))
                    answer_facts.append(CLOSED_FACTS)
            elif topic == "restocking_fee":
                it = "it" if "return_window" in topics else subject
                questions.append(f"Is there a restocking fee if I return {it}?")
                look_up(topic, returns_call)
                answer_facts.append(
                    FINAL_SALE_FACTS if not rule.returnable else fee_facts(rule.restocking_fee)
                )
            elif topic == "exchange":
                it = "it" if len(questions) else subject
                # not "for another size or colour": the question must not state the answer
                questions.append(f"Could I exchange {it} for a different one instead?")
                if rule.returnable:
                    policy_id = ctx.policy_ids[("exchanges", category, "any")]
                    answer_facts.append(EXCHANGE_FACTS)
                else:
                    policy_id = return_policy_id(ctx, category, membership)
                    answer_facts.append(FINAL_SALE_FACTS)
                queries = [f"exchange {category}", f"{category} exchanges size colour"]
                queries = [queries[int(i)] for i in rng.permutation(2)] + [f"{category} returns"]
                look_up(topic, lambda q=queries, p=policy_id: policy_call(ctx, q, p))
            elif topic == "refunds":
                questions.append("How long does a refund take to come through?")
                query = pick(rng, ("refunds original payment method", "refund business days"))
                reference.append(policy_call(ctx, query, ctx.policy_ids[("refunds", "", "any")]))
                answer_facts.append(REFUND_FACTS)
            elif topic == "shipping":
                value = float(rng.choice([25, 35, 45, 60, 80, 120]))
                questions.append(f"How much is standard shipping on a {money(value)} order for me?")
                query = f"shipping cost {membership} members"
                reference.append(
                    policy_call(ctx, query, ctx.policy_ids[("shipping", "", membership)])
                )
                free = membership == "plus" or value >= FREE_SHIPPING_THRESHOLD
                answer_facts.append(["free"] if free else [money(SHIPPING_FEE)])
            else:  # cancellation
                status = pick(rng, ("shipped", "processing"))
                questions.append(f"And can I still cancel an order that is {status}?")
                query = pick(rng, ("cancel order", "cancellation policy"))
                reference.append(
                    policy_call(ctx, query, ctx.policy_ids[("cancellation", "", "any")])
                )
                if status == "shipped":
                    answer_facts.append(["return"])
                else:
                    # not a bare "processing": the question says it, so echoing would pass
                    answer_facts.append(CANCELLABLE_FACTS)
        prompt = render(
            pick(rng, TEMPLATES), {"questions": " ".join(questions)}, rng, config.typo_rate
        )
        goal = Goal(
            user_facts=facts,
            answer_facts=answer_facts,
            relevant_ids=[order["order_id"], ctx.item_ids[row]],
            typo_rate=config.typo_rate,
        )
        return Draft(prompt, goal, world.state(), reference)
