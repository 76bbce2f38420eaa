"""return: return (or exchange) items of delivered orders, respecting windows and final sale.

Each requested item is one of
* eligible for a return: the agent files `return_item` with the user's reason;
* eligible for an exchange to another size/colour: `get_product` shows the variants, then
  `exchange_item`;
* not eligible (final-sale category, or the return window for the user's membership closed):
  nothing may be filed, the agent reads the policy (`search_policy`) and the final answer says
  why (final sale, or the window length).
Harder variants: several items over several orders, look-alike items in other orders (same
product, other colour), a restocking-fee question, the reason left out of the prompt
(`return_item` needs one, so the agent must `ask_user`).

The module is called `returns` because `return` is a Python keyword; the scenario is "return".
"""

from __future__ import annotations

from typing import Any

import numpy as np
from pydantic import Field

from ecomrlve.generators import followups
from ecomrlve.generators.base import Draft, GenerationError, Plan, Scenario, ScenarioConfig
from ecomrlve.generators.blocks import (
    World,
    about,
    ask_call,
    call,
    delivered_days_ago,
    fee_fact,
    filler_orders,
    final_sale_facts,
    line_phrase,
    look_alike,
    order_ref,
    order_when,
    returns_policy_call,
    window_fact,
)
from ecomrlve.generators.context import GenContext
from ecomrlve.generators.draws import below, between, pick
from ecomrlve.generators.phrasing import join_words
from ecomrlve.generators.prompts import compose
from ecomrlve.tasks import AnswerFact, ExchangeSpec, Goal, ReturnSpec

REASONS: tuple[str, ...] = (
    "it doesn't fit",
    "it arrived damaged",
    "I changed my mind",
    "it's not what I expected",
    "the colour looks different from the photos",
)
TEMPLATES: tuple[str, ...] = (
    "{requests_cap}.{reason}{question}",
    "I need some help with my orders: {requests}.{reason}{question}",
    "Could you sort this out for me? {requests_cap}.{reason}{question}",
    "Hello, returns question: {requests}.{reason}{question}",
    "I'd like to sort out some returns: {requests}.{reason}{question}",
    "Can you handle this for me? {requests_cap}.{reason}{question}",
    "A couple of items need to go back: {requests}.{reason}{question}",
    "Please take care of the following: {requests}.{reason}{question}",
    "I'm not happy with some things I bought: {requests}.{reason}{question}",
    "Please help with these orders: {requests}.{reason}{question}",
    "Here's the situation: {requests}.{reason}{question}",
    "I need to send some things back: {requests}.{reason}{question}",
)
FOLLOWUPS: tuple[str, ...] = ("refund", "order_detail", "reorder")
FEE_QUESTIONS: tuple[str, ...] = (
    " Will I be charged a restocking fee for the {noun}?",
    " Is there a restocking fee on the {noun}?",
)


def refusal_facts(ctx: GenContext, order: dict, row: int, membership: str) -> list[AnswerFact]:
    """Why an item cannot be returned: final sale, or its window (and when it closed)."""
    category = ctx.category.value(row)
    subject = about(ctx, order, row, ctx.item_ids[row])
    rule = ctx.policies.return_rule(category, membership)
    if not rule.returnable:
        facts = final_sale_facts(category, subject)
        facts[0].say = f"The {ctx.noun(row)} can't be returned: {category} items are final sale."
        return facts
    days = delivered_days_ago(order)
    say = (
        f"The {ctx.noun(row)} can't be returned any more: its {rule.window_days}-day return "
        f"window closed {days - rule.window_days} days ago."
    )
    allowed = [str(days), str(days - rule.window_days)]
    return [
        AnswerFact(kind="verdict", value="return:no", say=say, **subject),
        window_fact(rule.window_days, allowed=allowed, required=False, **subject),
    ]


class ReturnConfig(ScenarioConfig):
    n_items: int = Field(ge=1, description="items the user wants returned or exchanged (<= 3)")
    n_orders: int = Field(ge=1)
    n_distractors: int = Field(ge=0, description="look-alike items in other orders")
    policy_branches: int = Field(ge=1, description="rule dimensions: eligibility, fee, membership")
    n_intents: int = Field(ge=1, description="requests in one message: 1 + follow-ups")


class Return(Scenario):
    name = "return"
    Config = ReturnConfig

    def tuned(self, difficulty: int, values: dict[str, Any]) -> dict[str, Any]:
        return {"n_items": min(3, values["n_items"])}

    def plan(self, config: ReturnConfig, rng: np.random.Generator) -> Plan:
        n_requests = between(rng, 1, config.n_items + 1)
        p_ineligible = 0.15 + 0.1 * (config.policy_branches - 1)
        kinds: list[str] = []
        for _ in range(n_requests):
            u = rng.random()
            if u < p_ineligible:
                kinds.append("ineligible")
            elif u < p_ineligible + 0.3 and "exchange" not in kinds and config.difficulty >= 2:
                kinds.append("exchange")
            else:
                kinds.append("return")
        fee_question = "return" in kinds and rng.random() < 0.15 * (config.policy_branches - 1)
        hide_reason = "return" in kinds and rng.random() < config.hidden_detail_share
        two_orders = n_requests > 1 and rng.random() < 0.5
        steps = (
            int(hide_reason)
            + 1
            + sum({"return": 1, "exchange": 2, "ineligible": 1}[k] for k in kinds)
            + int(fee_question)
        )
        more = followups.draw(rng, FOLLOWUPS, config.n_intents - 1, config.difficulty)
        steps += followups.cost(more)
        return Plan(
            steps,
            {
                "followups": more,
                "kinds": kinds,
                "fee_question": fee_question,
                "hide_reason": hide_reason,
                "two_orders": two_orders,
            },
        )

    def build(
        self, config: ReturnConfig, plan: Plan, rng: np.random.Generator, ctx: GenContext
    ) -> Draft:
        kinds: list[str] = plan["kinds"]
        world = World.new(ctx, rng)
        membership = world.membership
        used_categories: set[str] = set()
        items: list[dict] = []  # row, kind, days since delivery, extra
        for kind in kinds:
            items.append(self._pick_item(ctx, rng, kind, membership, used_categories))
        # orders: the requested items in one or two delivered orders; the delivery date of
        # each order is drawn inside every eligible item's window and past every
        # window-closed item's window
        n_orders = 2 if plan["two_orders"] else 1
        groups = [items[k::n_orders] for k in range(n_orders)]
        ids = ctx.order_ids(rng, n_orders + config.n_orders + config.n_distractors)
        orders = []
        for order_id, group in zip(ids[:n_orders], groups, strict=True):
            days = self._delivery_age(ctx, rng, group, membership)
            transit = between(rng, 2, 6)
            order = ctx.order(
                order_id,
                [it["row"] for it in group],
                [1] * len(group),
                "delivered",
                days + transit,
                transit_days=transit,
                user=world.user,
            )
            for it in group:
                it["order"] = order
            orders.append(order)
        n_distractors = min(config.n_distractors, len(items) * 2)
        distractors = []
        for k in range(n_distractors):
            target = items[k % len(items)]["row"]
            row = look_alike(ctx, rng, target)
            if row is not None:
                distractors.append(
                    ctx.order(
                        ids[n_orders + k],
                        [row],
                        [1],
                        "delivered",
                        between(rng, 10, 120),
                        user=world.user,
                    )
                )
        fillers = filler_orders(ctx, rng, ids[n_orders + n_distractors :], used_categories)
        world.orders = orders + distractors + fillers

        reason = pick(rng, REASONS)
        reference = []
        if plan["hide_reason"]:
            reference.append(ask_call(["reason"], rng))
        reference.append(call("list_orders"))
        returns, exchanges, requests = [], [], []
        answer_facts: list[AnswerFact] = []
        policy_calls, policies = [], []
        for it in items:
            row, order = it["row"], it["order"]
            item_id, order_id = ctx.item_ids[row], order["order_id"]
            phrase = f"{line_phrase(ctx, row, rng)} I ordered {order_when(order, rng)}"
            category = ctx.category.value(row)
            if it["kind"] == "return":
                requests.append(f"I want to return {phrase}")
                reference.append(
                    call("return_item", order_id=order_id, item_id=item_id, reason=reason)
                )
                returns.append(ReturnSpec(order_id=order_id, item_id=item_id))
            elif it["kind"] == "exchange":
                new_row, words = it["new_row"], it["words"]
                requests.append(f"please exchange {phrase} for {words}")
                reference += [
                    call("get_product", item_id=item_id),
                    call(
                        "exchange_item",
                        order_id=order_id,
                        item_id=item_id,
                        new_item_id=ctx.item_ids[new_row],
                    ),
                ]
                exchanges.append(
                    ExchangeSpec(
                        order_id=order_id,
                        item_id=item_id,
                        acceptable_new=ctx.ids(it["acceptable_new"]),
                    )
                )
            else:
                requests.append(f"I'd like to return {phrase}")
                policy_calls.append(returns_policy_call(ctx, category, membership, rng, policies))
                answer_facts += refusal_facts(ctx, order, row, membership)
        question = ""
        if plan["fee_question"]:
            asked = next(it for it in items if it["kind"] == "return")
            category = ctx.category.value(asked["row"])
            policy_calls.append(returns_policy_call(ctx, category, membership, rng, policies))
            fee = ctx.policies.return_rule(category, membership).restocking_fee
            item = ctx.item_ids[asked["row"]]
            noun = ctx.noun(asked["row"])
            told = (
                f"Returning the {noun} costs a {round(fee * 100)}% restocking fee."
                if fee
                else f"There's no restocking fee on the {noun}."
            )
            subject = about(ctx, asked["order"], asked["row"], item)
            answer_facts.append(fee_fact(fee, told, **subject))
            question = pick(rng, FEE_QUESTIONS).format(noun=ctx.noun(asked["row"]))
        # read the policy before acting on anything
        list_at = 1 if plan["hide_reason"] else 0
        reference[list_at + 1 : list_at + 1] = policy_calls
        reason_text = "" if plan["hide_reason"] or not returns else f" The reason: {reason}."
        text = join_words(requests)
        prompt = compose(
            pick(rng, TEMPLATES),
            {
                "requests": text,
                "requests_cap": text[0].upper() + text[1:],
                "reason": reason_text,
                "question": question,
            },
            rng,
            config.typo_rate,
        )
        extra = followups.add_followups(
            plan["followups"], ctx, rng, world, used_categories, typo_rate=config.typo_rate
        )
        extra.merge(reference, answer_facts, policies)
        prompt = extra.prompt(prompt)
        first = items[0]
        facts = {
            "reason": reason,
            "item": line_phrase(ctx, first["row"], rng),
            "order": order_ref(first["order"]),
        }
        relevant = [o["order_id"] for o in orders] + [ctx.item_ids[it["row"]] for it in items]
        goal = Goal(
            purchase=extra.purchase,
            user_facts=facts,
            returns=returns,
            exchanges=exchanges,
            answer_facts=answer_facts,
            relevant_policies=policies,
            relevant_ids=relevant + extra.relevant,
            typo_rate=config.typo_rate,
        )
        return Draft(prompt, goal, world.state(), reference)

    # ---- item draws ------------------------------------------------------------------------------
    def _pick_item(
        self,
        ctx: GenContext,
        rng: np.random.Generator,
        kind: str,
        membership: str,
        used: set[str],
    ) -> dict:
        if kind == "ineligible" and rng.random() < 0.4:
            pool = [c for c in ctx.final_sale_categories if c not in used]
            if pool:
                category = pick(rng, pool)
                used.add(category)
                row = ctx.pick_any(rng, category)
                return {"row": row, "kind": kind}
        pool = [c for c in ctx.returnable_categories if c not in used]
        if not pool:
            raise GenerationError("no returnable category left")
        category = pick(rng, pool)
        used.add(category)
        if kind != "exchange":
            return {"row": ctx.pick_any(rng, category), "kind": kind}
        for _ in range(12):
            row = ctx.pick_any(rng, category)
            option = self._exchange_option(ctx, rng, row)
            if option is not None:
                new_row, words, acceptable = option
                return {
                    "row": row,
                    "kind": kind,
                    "new_row": new_row,
                    "words": words,
                    "acceptable_new": acceptable,
                }
        raise GenerationError(f"no {category} with an in-stock variant to exchange for")

    @staticmethod
    def _delivery_age(
        ctx: GenContext, rng: np.random.Generator, group: list[dict], membership: str
    ) -> int:
        """Days since delivery that make each item of one order (in)eligible as planned."""
        low, high = 1, 150
        for it in group:
            rule = ctx.policies.return_rule(ctx.category.value(it["row"]), membership)
            if not rule.returnable:
                continue
            if it["kind"] == "ineligible":
                low = max(low, rule.window_days + 1)
            else:
                high = min(high, rule.window_days)
        if low > high:
            raise GenerationError("no delivery date fits every item of the order")
        return between(rng, low, min(high, low + 45) + 1)

    @staticmethod
    def _exchange_option(ctx: GenContext, rng: np.random.Generator, row: int):
        """Another in-stock variant of the same product: (row, words, acceptable rows)."""
        family = ctx.family_rows(row)
        options = [int(r) for r in family if int(r) != row and ctx.in_stock[r]]
        if not options:
            return None
        new = options[below(rng, len(options))]
        same_color = ctx.color.codes[new] == ctx.color.codes[row]
        same_size = ctx.size_col.codes[new] == ctx.size_col.codes[row]
        if same_color and not same_size:
            words = f"size {ctx.size_col.value(new)}"
        elif same_size and not same_color:
            words = f"the {ctx.color.value(new)} one"
        else:
            words = f"the {ctx.color.value(new)} one in size {ctx.size_col.value(new)}"
        acceptable = [
            int(r)
            for r in family
            if ctx.in_stock[r]
            and ctx.color.codes[r] == ctx.color.codes[new]
            and ctx.size_col.codes[r] == ctx.size_col.codes[new]
        ]
        return new, words, np.array(acceptable)
