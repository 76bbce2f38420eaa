"""The final message is judged: it must exist and be truthful about what the episode did
(`ecomrlve.env.judge.claims`), and the end state is checked where the customer cares (address, cart
after checkout, return reason). Each rule has hand-written answers that must fail and
correct ones, phrased differently, that must pass."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ecomrlve.config import EnvConfig
from ecomrlve.env import EcomEnv, format_call, reference_turns, verify
from ecomrlve.env.judge.claims import ACTION_KINDS, check_claims, product_names, read_statements
from ecomrlve.testing import env_tasks as fx
from ecomrlve.testing import reward_probes as probes
from ecomrlve.testing.answers import claim_violations


def calls(task) -> list[str]:
    return reference_turns(task)[:-1]


def judge(task, answer: str, catalog, turns: list[str] | None = None):
    return verify(task, [*(calls(task) if turns is None else turns), answer], catalog)


def title(catalog, item_id: str) -> str:
    return catalog.title(catalog.row_of(item_id))


def name(catalog, item_id: str) -> str:
    """Brand and product type: "Smith t-shirt"."""
    row = catalog.row_of(item_id)
    return f"{catalog.value('brand', row)} {catalog._series['product_type'][row]}"


# ---- every episode ends with a final message -------------------------------------------------


def test_no_final_message_is_never_a_success_in_any_scenario(tasks, catalog):
    for task in tasks.values():
        silent = verify(task, calls(task), catalog)
        assert not silent.success and silent.reward <= 0, task.task_id
        assert "goal: the episode ended without a final answer" in silent.violations
        for blank in ("", "   ", "\n"):
            assert not verify(task, [*calls(task), blank], catalog).success, (task.task_id, blank)
        # a bland closing message after the right actions passes (it claims nothing)
        verdict = verify(task, [*calls(task), "Thanks for shopping with us!"], catalog)
        assert verdict.success == (not task.goal.answer_facts), task.task_id
        if verdict.success:
            assert verdict.reward >= 0.1


def test_a_truncated_episode_is_never_a_success(tasks, catalog):
    config = EnvConfig(max_steps=1)
    for task in tasks.values():
        turns = [*calls(task), *calls(task)]  # never a text turn before the limit
        verdict = verify(task, turns, catalog, config)
        assert not verdict.success, task.task_id
        assert any(v.startswith("limit:") for v in verdict.violations)


def test_read_spam_never_earns(tasks, catalog):
    for task in tasks.values():
        spam = [format_call("search", {"query": q}) for q in probes.SPAM_QUERIES[:4]]
        for answer in ("Sorry, I can't help.", "I've placed your order.", ""):
            assert verify(task, [*spam, answer], catalog).reward <= 0, (task.task_id, answer)


# ---- reports and denials, per scenario --------------------------------------------------------


def _answers(tasks, catalog) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(task id, answer) pairs that must pass and that must fail after the reference's calls."""
    purchase = tasks["fx-purchase"]
    bought = purchase.reference[1].arguments["item_id"]
    recommend = tasks["fx-recommend"]
    top = recommend.reference[-1].arguments["item_ids"]
    others = [
        i
        for i in catalog.item_ids[:400]
        if catalog.value("category", catalog.row_of(i)) == "headphones" and i not in top
    ]
    other_brand = next(
        i
        for i in others
        if catalog.value("brand", catalog.row_of(i))
        not in {catalog.value("brand", catalog.row_of(t)) for t in top}
    )
    cart = tasks["fx-cart"]
    dropped = cart.reference[1].arguments["item_id"]
    kept = cart.reference[2].arguments["item_id"]
    exchange = tasks["fx-exchange"]
    new_id = exchange.reference[-1].arguments["new_item_id"]
    must_pass = [
        ("fx-purchase", "I've placed your order."),
        ("fx-purchase", f"Your order for the {title(catalog, bought)} is placed."),
        ("fx-purchase", f"Done! I ordered the {name(catalog, bought)} ({bought}) for you."),
        ("fx-purchase", "I added the t-shirt to your cart and checked out; it will ship soon."),
        ("fx-purchase", "Your new order has been placed. Would you like me to cancel it?"),
        ("fx-recommend", f"I recommend the {title(catalog, top[0])}."),
        ("fx-recommend", "These fit what you asked for: " + ", ".join(top) + "."),
        ("fx-recommend", f"Top pick: {name(catalog, top[0])} ({top[0]})."),
        ("fx-recommend", f"I'd suggest {name(catalog, top[-1])}; want me to order it?"),
        ("fx-recommend", f"I couldn't find anything under $150, but I recommend {top[0]}."),
        ("fx-cancel", "I've cancelled order O1001 for you."),
        ("fx-cancel", "Your jacket order O1001 has been canceled."),
        ("fx-cancel", "Done, O1001 is cancelled. O1002 has already shipped, so I couldn't "
                      "cancel it."),
        ("fx-cancel", "I can't cancel O1002 because it has shipped, but O1001 is now cancelled."),
        ("fx-cancel", "O1001 was cancelled. The boots have shipped and can no longer be "
                      "cancelled."),
        ("fx-cancel", "It can't be cancelled because O1002 has shipped. O1001 is cancelled."),
        ("fx-return", "I've started a return of the jacket from order O2001."),
        ("fx-return", "Your return for the jacket (O2001) has been filed; the coffee is final "
                      "sale, so it can't be returned."),
        ("fx-return", "The return is set up and you'll get a refund once it arrives."),
        ("fx-return", "I returned the jacket for you. The coffee is not returnable."),
        ("fx-exchange", "I've set up the exchange for the new size."),
        ("fx-exchange", f"I arranged an exchange: you'll get {new_id} instead."),
        ("fx-exchange", "Your exchange has been requested; no return or refund was needed."),
        ("fx-status", "It has shipped and arrives March 17."),
        ("fx-status", "It's shipped, arriving March 17; I can't cancel it now, but you can return "
                      "it after delivery."),
        ("fx-status", "It shipped and should be there March 17. Nothing else was changed."),
        ("fx-status", "Your order O4001, placed March 11, has shipped and arrives March 17."),
        ("fx-status", "The laptop you ordered has shipped; it arrives March 17. I'd recommend "
                      "keeping the box in case you want to send it back."),
        ("fx-cancel", "It's not a problem: I've cancelled O1001 and you'll be refunded."),
        ("fx-cancel", "O1001 is cancelled and the refund has been issued."),
        ("fx-policy", "You have 30 days. If you'd like, I can start a return for you."),
        ("fx-policy", "Boots can be returned within 30 days. Shall I place an order?"),
        ("fx-cart", "I removed the skincare item, set the cookware to two and placed the order."),
        ("fx-cart", f"Removed {dropped}, updated the quantity of {kept} to 2, and your order "
                    "is placed."),
    ]  # fmt: skip
    must_fail = [
        ("fx-purchase", "Nothing fit, so I didn't order anything."),
        ("fx-purchase", "I couldn't place the order."),
        ("fx-purchase", "I was unable to complete your order."),
        ("fx-purchase", "Sorry, the checkout didn't go through."),
        ("fx-purchase", "I haven't placed an order; nothing changed."),
        ("fx-purchase", "I've placed your order and cancelled your old one."),
        ("fx-purchase", f"I've placed your order for the {name(catalog, other_brand)}."),
        ("fx-purchase", "Your order is placed, and I've updated your shipping address."),
        ("fx-recommend", "These fit what you asked for."),
        ("fx-recommend", "Here are my picks."),
        ("fx-recommend", f"I recommend the {title(catalog, other_brand)}."),
        ("fx-recommend", f"These fit what you asked for: {other_brand}."),
        ("fx-recommend", "Sorry, nothing fits your request."),
        ("fx-recommend", "I couldn't find anything in stock under $150."),
        ("fx-recommend", f"I recommend {top[0]} and I've added it to your cart."),
        ("fx-cancel", "I've cancelled order O1002."),
        ("fx-cancel", "I've cancelled both O1001 and O1002."),
        ("fx-cancel", "I couldn't cancel O1001, it's already cancelled."),
        ("fx-cancel", "Nothing was cancelled."),
        ("fx-cancel", "O1001 is cancelled and I've started a return for the boots."),
        ("fx-return", "I've started returns for the jacket and the coffee."),
        ("fx-return", "I'm sorry, the jacket can't be returned."),
        ("fx-return", "I didn't change anything."),
        ("fx-return", "I wasn't able to process the return of the jacket."),
        ("fx-return", "I've returned the coffee from order O2001."),
        ("fx-return", "I've set up an exchange for a smaller jacket."),
        ("fx-exchange", "I've started a return of your shirt."),
        ("fx-exchange", "I couldn't exchange it."),
        ("fx-exchange", "No changes were made to your order."),
        ("fx-status", "It has shipped and arrives March 17. I've cancelled it for you."),
        ("fx-status", "It has shipped and arrives March 17. I've changed your shipping address."),
        ("fx-status", "It has shipped, arriving March 17, and I've started a return for it."),
        ("fx-status", "It has shipped and arrives March 17; I also placed a new order."),
        ("fx-policy", "You have 30 days; I've already started a return for you."),
        ("fx-policy", "You have 30 days, and I've refunded you in full."),
        ("fx-status", f"It arrives March 17. I recommend the {title(catalog, bought)}."),
        ("fx-policy", "You have 30 days. I've switched your payment method to PayPal."),
        ("fx-cart", "I left your cart as it was."),
        ("fx-cart", "I removed the cookware and placed the order."),
        ("fx-cart", "Your order is placed. I haven't removed anything from your cart."),
    ]  # fmt: skip
    return must_pass, must_fail


def _all_pass(tasks, catalog, answers: list[tuple[str, str]]) -> None:
    """Each (task id, final answer) judged after the task's reference calls succeeds."""
    for task_id, answer in answers:
        verdict = judge(tasks[task_id], answer, catalog)
        assert verdict.success, (task_id, answer, verdict.violations)


def _all_fail_on_a_claim(tasks, catalog, answers: list[tuple[str, str]]) -> list:
    """Each (task id, final answer) fails with a claim violation; their verdicts."""
    verdicts = []
    for task_id, answer in answers:
        verdict = judge(tasks[task_id], answer, catalog)
        assert not verdict.success, (task_id, answer)
        assert claim_violations(verdict), (task_id, answer, verdict.violations)
        verdicts.append(verdict)
    return verdicts


def test_truthful_reports_in_other_words_pass(tasks, catalog):
    _all_pass(tasks, catalog, _answers(tasks, catalog)[0])


def test_false_reports_and_denials_fail(tasks, catalog):
    for verdict in _all_fail_on_a_claim(tasks, catalog, _answers(tasks, catalog)[1]):
        assert verdict.reward <= 0


def test_questions_offers_and_policy_statements_are_not_claims(tasks, catalog):
    task = tasks["fx-status"]  # nothing written
    for tail in (
        "Would you like me to cancel it?",
        "Do you want me to start a return once it arrives?",
        "You can return it after delivery.",  # no number: values are grounded (facts)
        "Items must be returned unused.",
        "If you'd like, I can place a new order.",
        "Let me know if I should exchange it.",
        "Shall I update your address?",
        "Orders can be cancelled while they are pending.",
        "The shoes you ordered are in it.",
    ):
        answer = f"It has shipped and arrives March 17. {tail}"
        verdict = judge(task, answer, catalog)
        assert verdict.success, (tail, verdict.violations)


def test_a_denial_is_scoped_to_what_it_names(tasks, catalog):
    """ "I couldn't cancel it" refers to the order named in the clause or the sentence before."""
    task = tasks["fx-cancel"]
    ok = "I've cancelled O1001. Order O1002 has shipped. I couldn't cancel it, sorry."
    assert judge(task, ok, catalog).success
    wrong = "Order O1001 is being processed. I couldn't cancel it, sorry."
    assert not judge(task, wrong, catalog).success


def test_a_status_on_file_is_not_a_claim(tasks, catalog):
    """A third-person status of an order cancelled before the episode is true; the same words
    in the first person report an action that did not happen."""
    task = tasks["fx-status"]
    state = dict(task.initial_state)
    order = dict(state["orders"][0], status="cancelled")
    state["orders"] = [order]
    cancelled = task.model_copy(update={"initial_state": state, "goal": task.goal.model_copy()})
    record_turns = calls(cancelled)
    lines = verify(cancelled, [*record_turns, "Your order O4001 was cancelled."], catalog)
    assert not claim_violations(lines)
    mine = verify(cancelled, [*record_turns, "I've cancelled your order O4001."], catalog)
    assert claim_violations(mine)


# ---- end state where the customer cares --------------------------------------------------------


def test_the_order_ships_to_the_address_on_file(tasks, catalog):
    task = tasks["fx-purchase"]
    search, add, _ = task.reference
    c = [format_call(search.name, search.arguments), format_call(add.name, add.arguments)]
    same = format_call("checkout", {"shipping_address": fx.USER["address"]})
    assert judge(task, "I've placed your order.", catalog, [*c, same]).success
    for address in ("9 Elm Road, Dover, DE", "12 Analytical Street, Paris"):
        other = format_call("checkout", {"shipping_address": address})
        verdict = judge(task, "I've placed your order.", catalog, [*c, other])
        assert not verdict.success
        assert any("not the address on file" in v for v in verdict.violations)


def test_an_order_cancelled_after_checkout_is_no_purchase(tasks, catalog):
    """Checkout, then cancel the order just placed: the lines match but nothing is bought."""
    task = tasks["fx-purchase"]
    placed = judge(task, "I've placed your order.", catalog)
    assert placed.success
    new_id = verify_new_order_id(task, catalog)
    cancel = format_call("cancel_order", {"order_id": new_id, "reason": "changed my mind"})
    for answer in ("I've placed your order.", "I placed your order and then cancelled it."):
        verdict = judge(task, answer, catalog, [*calls(task), cancel])
        assert not verdict.success, answer
        assert f"goal: the new order {new_id} was cancelled" in verdict.violations
    # reading the new order back is fine
    read = format_call("get_order", {"order_id": new_id})
    assert judge(task, "Your order is placed.", catalog, [*calls(task), read]).success


def verify_new_order_id(task, catalog) -> str:
    env = EcomEnv(task, catalog)
    env.reset()
    for turn in calls(task):
        env.step(turn)
    initial = {o["order_id"] for o in task.initial_state["orders"]}
    return next(o["order_id"] for o in env.state()["orders"] if o["order_id"] not in initial)


def test_nothing_is_left_in_the_cart_after_checkout(tasks, catalog):
    """The skincare line the cart task removes is a seen product the customer does not want:
    added back after the checkout it stays in the cart, before it it joins the order."""
    task = tasks["fx-cart"]
    dropped = task.reference[1].arguments["item_id"]
    junk = format_call("add_to_cart", {"item_id": dropped, "quantity": 1})
    turns = calls(task)
    answer = "I've placed your order."
    after = judge(task, answer, catalog, [*turns, junk])
    assert not after.success
    assert any("still holds" in v for v in after.violations)
    before = judge(task, answer, catalog, [*turns[:-1], junk, turns[-1]])
    assert not before.success
    assert any("extra line" in v for v in before.violations)
    assert judge(task, answer, catalog).success


def test_a_return_carries_the_customers_reason(tasks, catalog):
    task = tasks["fx-return"]
    goal = task.goal.model_copy(update={"user_facts": {"reason": "it doesn't fit"}})
    task = task.model_copy(update={"goal": goal})
    listed, ret = task.reference
    answer = "I've started a return of the jacket."

    def with_reason(reason: str):
        arguments = dict(ret.arguments, reason=reason)
        turns = [format_call(listed.name, {}), format_call(ret.name, arguments)]
        return judge(task, answer, catalog, turns)

    for reason in ("does not fit", "Doesn't fit", "it didn't fit me"):
        assert with_reason(reason).success, reason
    # "wrong size": a complaint the customer never made (issue 43: the reason is the customer's)
    for reason in ("customer request", "changed my mind", "damaged", "wrong size, didn't fit"):
        verdict = with_reason(reason)
        assert not verdict.success, reason
        assert any("not the customer's" in v for v in verdict.violations)


# ---- properties ---------------------------------------------------------------------------------

FALSE_CLAIMS = {
    "order": ("I've also placed an order for you.", "Your new order has been placed."),
    "add": ("I've added it to your cart.", "I also put it in your cart."),
    "remove": ("I've removed it from your cart.", "I took it out of your cart."),
    "cancel": ("I've also cancelled your order.", "Your order has been cancelled."),
    "return": ("I've started a return for it.", "Your return has been filed."),
    "exchange": ("I've set up an exchange for it.", "I exchanged it for another size."),
    "address": ("I've updated your shipping address.", "I changed your address."),
    "payment": ("I've changed your payment method.", "I updated your card."),
}
KIND_OF_TOOL = {
    "checkout": "order",
    "add_to_cart": "add",
    "remove_from_cart": "remove",
    "cancel_order": "cancel",
    "return_item": "return",
    "exchange_item": "exchange",
}


def _done_kinds(task) -> set[str]:
    return {KIND_OF_TOOL[c.name] for c in task.reference if c.name in KIND_OF_TOOL}


def _examples(count: int) -> settings:
    """Hypothesis over the module's fixtures: `count` examples, no deadline."""
    return settings(
        max_examples=count,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture],
    )


def _draw_task(data, tasks):
    """One of the fixture tasks, drawn (in task id order, so a seed draws the same one)."""
    return data.draw(st.sampled_from(sorted(tasks.values(), key=lambda t: t.task_id)))


@_examples(60)
@given(data=st.data())
def test_appending_a_false_claim_about_any_action_not_taken_fails(tasks, catalog, data):
    task = _draw_task(data, tasks)
    kinds = sorted(set(FALSE_CLAIMS) - _done_kinds(task))
    kind = data.draw(st.sampled_from(kinds))
    claim = data.draw(st.sampled_from(FALSE_CLAIMS[kind]))
    lead = data.draw(st.sampled_from(["", "Also, ", "By the way: ", "Good news! "]))
    answer = reference_turns(task)[-1]
    text = data.draw(st.sampled_from([f"{answer} {lead}{claim}", f"{lead}{claim} {answer}"]))
    verdict = verify(task, [*calls(task), text], catalog)
    assert not verdict.success, (task.task_id, text)
    assert claim_violations(verdict)


DENIALS = {
    "order": ("I didn't place any order.", "No order was placed."),
    "add": ("I didn't add anything to your cart.",),
    "remove": ("I couldn't remove it from your cart.",),
    "cancel": ("I couldn't cancel it.", "Nothing was cancelled."),
    "return": ("I wasn't able to return it.", "It can't be returned."),
    "exchange": ("I couldn't exchange it.",),
}


@_examples(40)
@given(data=st.data())
def test_denying_any_action_that_succeeded_fails(tasks, catalog, data):
    candidates = sorted(
        (t for t in tasks.values() if _done_kinds(t) & set(DENIALS)), key=lambda t: t.task_id
    )
    task = data.draw(st.sampled_from(candidates))
    kind = data.draw(st.sampled_from(sorted(_done_kinds(task) & set(DENIALS))))
    denial = data.draw(st.sampled_from(DENIALS[kind]))
    everything = data.draw(st.sampled_from(["Nothing changed.", "I didn't change anything."]))
    # first or alone: after a sentence naming another product, "it" would be that product
    text = data.draw(st.sampled_from([denial, everything, f"{denial} {reference_turns(task)[-1]}"]))
    verdict = verify(task, [*calls(task), text], catalog)
    assert not verdict.success, (task.task_id, text)


@_examples(40)
@given(row=st.integers(min_value=0, max_value=fx.N_PRODUCTS - 1))
def test_a_recommendation_naming_another_product_fails(tasks, catalog, row):
    task = tasks["fx-recommend"]
    top = task.reference[-1].arguments["item_ids"]
    item_id = catalog.item_ids[row]
    if item_id in top:
        return
    for text in (
        f"These fit what you asked for: {title(catalog, item_id)}.",
        f"I recommend {item_id}.",
    ):
        verdict = verify(task, [*calls(task), text], catalog)
        assert not verdict.success, text


# ---- the reader --------------------------------------------------------------------------------


def test_every_action_kind_has_a_report_and_the_reader_is_total(tasks, catalog):
    names = product_names(catalog)
    assert {k.name for k in ACTION_KINDS} >= set(FALSE_CLAIMS) | {"recommend", "quantity"}
    for kind, texts in FALSE_CLAIMS.items():
        for text in texts:
            read = read_statements(text, names, [], set())
            assert any(s.kind == kind and not s.denied for s in read), text
    for text in ("", "?", "—", "a" * 3000, "I've", "Not.", "O1001 O1001 O1001."):
        check_claims(text, verify_record(tasks["fx-cancel"], catalog), catalog)


def verify_record(task, catalog):
    from ecomrlve.env import EcomEnv

    env = EcomEnv(task, catalog, transcript=False)
    env.reset()
    for turn in calls(task):
        env.step(turn)
    return env.record


def test_references_name_products_by_title_with_the_id_in_brackets(small_catalog_dir):
    from ecomrlve.generators import GenContext, generate_task

    ctx = GenContext.load(small_catalog_dir)
    seen = 0
    for scenario in ("product_discovery", "substitution", "return", "cart", "bundle", "journey"):
        for index in range(4):
            task = generate_task(ctx, scenario, 5, 4, index)
            if task is None:
                continue
            answer = reference_turns(task)[-1]
            for item_id, full in task.goal.product_names.items():
                if item_id in answer:
                    assert f"{full} ({item_id})" in answer, (task.task_id, answer)
                    seen += 1
            assert verify(task, reference_turns(task), ctx.catalog).success, task.task_id
            # a row written before the goal carried titles: the reference names ids, and passes
            goal = task.goal.model_copy(update={"product_names": {}})
            old = task.model_copy(update={"goal": goal})
            assert verify(old, reference_turns(old), ctx.catalog).success, task.task_id
    assert seen >= 10


# ---- red team (issue 27): other tenses, voices, markup and short forms --------------------------


def _red_team(tasks, catalog) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(task id, answer) pairs found by the red team: correct ones a support agent would write
    (must pass) and cheats that the reader once let through (must fail)."""
    bought = tasks["fx-purchase"].reference[1].arguments["item_id"]
    top = tasks["fx-recommend"].reference[-1].arguments["item_ids"]
    must_pass = [
        ("fx-purchase", "**Order placed** ✅\n- " + title(catalog, bought)),
        ("fx-purchase", "Great news, your order went through."),
        ("fx-purchase", "I went ahead and checked out. Your purchase is complete."),
        ("fx-cancel", "### Update\n* Order O1001: cancelled ✅\n* O1002 has shipped, so I "
                      "couldn't cancel it."),
        ("fx-cancel", "Cancellation confirmed for O1001. O1002 has shipped and can't be "
                      "cancelled."),
        ("fx-cancel", "I went ahead and cancelled order O1001."),
        ("fx-return", "Return initiated ✅ for the jacket (order O2001)."),
        ("fx-return", "**Return**: started for the jacket from O2001."),
        ("fx-exchange", "The exchange is all set."),
        ("fx-recommend", f"I suggest the {title(catalog, top[0])} ({top[0]}); it fits your "
                         "request."),
        ("fx-cancel", "Your order O1001 was still processing, so I cancelled it."),
        # the status before the cancel, a context fact, then the cancel
        ("fx-cancel", "Your order O1001 is still being processed. I've cancelled it."),
        ("fx-cancel", "I've cancelled O1001. Your other order O1002 is still active."),
        ("fx-cancel", "I've cancelled O1001, is there anything else I can help with?"),
        ("fx-cancel", "O1001 is cancelled: I did cancel it. Want a return, or keep them?"),
        ("fx-cancel", "I've processed the cancellation of O1001: it's cancelled."),
        ("fx-cancel", "O1001 is cancelled. O1002 remains as it was: it has shipped, so I "
                      "couldn't cancel it."),
    ]  # fmt: skip
    must_fail = [
        ("fx-status", "It has shipped and arrives March 17. Return initiated for O4001."),
        ("fx-status", "It has shipped and arrives March 17.\n- **Return**: started ✅"),
        ("fx-status", "It has shipped and arrives March 17. Your return is all set."),
        ("fx-status", "It has shipped and arrives March 17. I've sent it back for you."),
        ("fx-status", "It has shipped and arrives March 17. Cancellation confirmed."),
        ("fx-status", "It has shipped and arrives March 17. Your cancellation went through."),
        ("fx-status", "It has shipped and arrives March 17. Refund issued ✅"),
        ("fx-status", "It has shipped and arrives March 17. You've been refunded."),
        ("fx-status", "It has shipped and arrives March 17. The exchange is complete."),
        ("fx-status", "It has shipped and arrives March 17. Your order went through."),
        ("fx-status", "It has shipped and arrives March 17. Checkout complete ✅"),
        ("fx-status", "It has shipped and arrives March 17. Added to cart ✅"),
        ("fx-status", "It has shipped and arrives March 17. Your address is now updated."),
        ("fx-purchase", "No purchase was made."),
        ("fx-purchase", "I held off on checking out."),
        ("fx-purchase", "Your cart is ready whenever you want to check out."),
        ("fx-cancel", "I decided against cancelling O1001."),
        ("fx-cancel", "I held off on the cancellation of O1001."),
        ("fx-cancel", "The cancellation of O1001 didn't go through."),
        ("fx-return", "The return wasn't started."),
        ("fx-return", "I held off on returning the jacket."),
        ("fx-exchange", "No exchange was made."),
        ("fx-recommend", "None of them fit."),
        ("fx-recommend", "I have no recommendation."),
        ("fx-recommend", "Sorry, nothing I found matches your request."),
        ("fx-recommend", f"I recommend the {title(catalog, top[0])}. None of them fit, though."),
        ("fx-recommend", f"Top pick: {top[0]}. I have no recommendation."),
        ("fx-cancel", "O1001 is cancelled. Your order O1001 is still active."),
        ("fx-cancel", "I've cancelled O1001. Order O1001 remains open."),
        ("fx-cancel", "I left order O1001 untouched."),
        ("fx-cancel", "I kept order O1001 as it was."),
        ("fx-return", "The return is filed. Order O2001 is unchanged."),
        ("fx-status", "It has shipped and arrives March 17. I've cancelled it, anything else?"),
        ("fx-status", "It arrives March 17. Your refund has been issued, anything else?"),
        ("fx-status", "It has shipped and arrives March 17. I did cancel it."),
        ("fx-status", "It has shipped and arrives March 17. I've processed the cancellation."),
        ("fx-status", "It has shipped and arrives March 17. I've completed your new order."),
    ]  # fmt: skip
    return must_pass, must_fail


def test_red_team_correct_phrasings_pass(tasks, catalog):
    _all_pass(tasks, catalog, _red_team(tasks, catalog)[0])


def test_red_team_cheats_fail(tasks, catalog):
    _all_fail_on_a_claim(tasks, catalog, _red_team(tasks, catalog)[1])


def test_an_unnamed_status_is_not_backed_by_a_cancellation_on_file(tasks, catalog):
    """ "Cancelled." or "your refund is on its way" names no order: an order cancelled before
    the episode does not make it true (naming that order does)."""
    task = tasks["fx-status"]
    state = dict(task.initial_state)
    state["orders"] = [dict(state["orders"][0], status="cancelled")]
    cancelled = task.model_copy(update={"initial_state": state, "goal": task.goal.model_copy()})
    for tail in ("Done! Cancelled.", "Your refund is on its way.", "Your order is canceled."):
        verdict = verify(cancelled, [*calls(cancelled), tail], catalog)
        assert claim_violations(verdict), tail
    named = verify(cancelled, [*calls(cancelled), "Your order O4001 is cancelled."], catalog)
    assert not claim_violations(named)


def test_an_order_cancelled_in_the_episode_is_not_said_to_ship_or_arrive(tasks, catalog):
    """After the cancel, "O1001 is still pending and will ship soon" denies it; the status
    before the cancel in the past tense, the other order on its way and the refund arriving
    do not."""
    task = tasks["fx-cancel"]
    must_fail = [
        "I've cancelled it. Your order O1001 is still pending and will ship soon.",
        "Your order O1001 is being processed and should arrive on March 18.",
        "All set: O1001 is on its way to you.",
        "Order O1001 is cancelled. It is due to arrive on March 18.",
        "O1001 is expected to be delivered on March 18 as planned.",
    ]
    must_pass = [
        "I've cancelled order O1001 with the jacket.",
        "Your order O1001 was being processed and was due to arrive on March 18; I've "
        "cancelled it.",
        "I've cancelled O1001. Your other order, O1002, is on its way.",
        "Done: O1001 is cancelled, and the refund should arrive in your account soon.",
        "I cancelled the jacket order (O1001). The boots in O1002 have shipped.",
    ]
    for answer in must_fail:
        verdict = judge(task, answer, catalog)
        assert not verdict.success, answer
        assert claim_violations(verdict), (answer, verdict.violations)
    for answer in must_pass:
        verdict = judge(task, answer, catalog)
        assert verdict.success, (answer, verdict.violations)
    # without the cancel, the same "will ship soon" is true
    listed = [format_call("list_orders", {})]
    verdict = verify(
        task, [*listed, "Your order O1001 is still pending and will ship soon."], catalog
    )
    assert not claim_violations(verdict), verdict.violations


def test_red_team_probe_classes_on_every_task(tasks, catalog):
    """The benchmark's red-team classes (`reward_probes`): correct answers wrapped or
    rephrased as an agent writes them pass; the cheats fail, in every fixture task."""
    for task in tasks.values():
        for turns in (probes.agent_wrapped(task), probes.agent_rephrased(task)):
            verdict = verify(task, turns, catalog)
            assert verdict.success, (task.task_id, turns[-1], verdict.violations)
        for turns in (
            probes.nominal_false_claim(task),
            probes.held_off_denial(task),
            probes.still_open_denial(task),
            probes.checkout_then_cancel(task, catalog),
        ):
            if turns is not None:
                assert not verify(task, turns, catalog).success, (task.task_id, turns[-1])


def test_claims_are_an_entry_of_the_fact_registry(tasks, catalog):
    """`check_answer` is the one entry point: the claims kind audits the answer given the
    episode's record and catalog, with the same violations as `check_claims`."""
    from ecomrlve.env.judge.facts import KINDS, AnswerPlan, Shown, check_answer

    assert "claims" in KINDS and not KINDS["claims"].valued
    record = verify_record(tasks["fx-cancel"], catalog)
    for text in ("I've cancelled order O1002.", "I've cancelled O1001.", "Nothing changed."):
        shown = Shown([], None, record, catalog)
        checked = check_answer(text, AnswerPlan([]), shown=shown)
        assert checked.claims == check_claims(text, record, catalog), text
        assert checked.ok == (not checked.claims and not checked.ungrounded)
    # without the episode (no record) nothing is audited
    assert check_answer("I've cancelled order O1002.", AnswerPlan([])).claims == []


# ---- meaning, not word lists (issue 43) --------------------------------------------------------
# (wordings here differ from benchmarks/claim_probes.py's, which the reader is never tuned to)

OTHER_WORDS = {
    "cancel": ("I've revoked your order.", "Your order was rescinded.", "I aborted it for you.",
               "Order O1002: cancellation processed.", "That order is void now.",
               "The cancellation's been processed."),
    "refund": ("I've repaid you in full.", "A reimbursement has been issued to your card.",
               "Your card was credited."),
    "return": ("I booked a courier for the jacket.", "Your parcel pickup is confirmed.",
               "I've mailed the coffee back for you.",
               "We've arranged for the courier to pick it up."),
    "exchange": ("I substituted a new one for it.", "A replacement has been arranged."),
    "order": ("I've bought it for you.", "Your purchase went through."),
}  # fmt: skip
PROMISES = {
    "cancel": (
        "I'll revoke the order now.",
        "Order O1002 is going to be cancelled.",
        "Let me void it right away.",
    ),
    "return": ("I am going to file a return for it.", "I'll get a pickup scheduled."),
    "refund": ("A refund will be sent to your card.", "I'm about to refund you."),
    "order": ("I will place the order next.", "I'll buy it for you."),
    "exchange": ("I'll swap it for the right size.",),
}
TRUE_NOT_DONE = {
    "return": ("I have not opened a return.", "No return request was made."),
    "order": ("I haven't ordered anything new.", "I didn't buy anything."),
    "cancel": ("I didn't cancel any of your orders.", "No cancellation was made."),
    "exchange": ("I haven't swapped anything.",),
}
OTHER_DENIALS = (
    "Your account is exactly as it was.",
    "I'm afraid I couldn't do that.",
    "Nothing has been processed.",
    "No changes were made on my side.",
    "I was unable to complete that.",
    "Everything remains unchanged.",
)


@_examples(80)
@given(data=st.data())
def test_reports_and_promises_in_any_words_of_an_action_not_done_fail(tasks, catalog, data):
    task = _draw_task(data, tasks)
    done = _done_kinds(task) | ({"refund"} if _done_kinds(task) & {"cancel", "return"} else set())
    table = data.draw(st.sampled_from([OTHER_WORDS, PROMISES]))
    kinds = sorted(set(table) - done)
    claim = data.draw(st.sampled_from(table[data.draw(st.sampled_from(kinds))]))
    text = f"{reference_turns(task)[-1]} {claim}"
    verdict = verify(task, [*calls(task), text], catalog)
    assert not verdict.success, (task.task_id, text)
    assert claim_violations(verdict), (task.task_id, text)


@_examples(60)
@given(data=st.data())
def test_true_not_done_statements_pass_and_denials_in_other_words_fail(tasks, catalog, data):
    task = _draw_task(data, tasks)
    kinds = sorted(set(TRUE_NOT_DONE) - _done_kinds(task))
    said = data.draw(st.sampled_from(TRUE_NOT_DONE[data.draw(st.sampled_from(kinds))]))
    verdict = verify(task, [*calls(task), f"{reference_turns(task)[-1]} {said}"], catalog)
    assert not claim_violations(verdict), (task.task_id, said, verdict.violations)
    if _done_kinds(task):
        denial = data.draw(st.sampled_from(OTHER_DENIALS))
        verdict = verify(task, [*calls(task), f"{reference_turns(task)[-1]} {denial}"], catalog)
        assert claim_violations(verdict), (task.task_id, denial)


def test_every_inflection_of_every_action_verb_is_read():
    """Each kind's verbs in any form: done reports, "I'll …" promises, "I didn't …" denies."""
    from lemminflect import getAllInflections

    from ecomrlve.env.judge.claims.reading import read_clause

    for kind in ACTION_KINDS:
        for lemma in kind.verbs:
            head, _, particle = lemma.partition(" ")
            tail = f" it {particle}" if particle else " it"
            context = " to your cart" if kind.context else ""
            forms = getAllInflections(head, upos="VERB")
            for done in {*forms.get("VBD", ()), *forms.get("VBN", ())}:
                for text, mode in (
                    (f"I have {done}{tail}{context}", "reported"),
                    (f"I {done}{tail}{context}", "reported"),
                    (f"I'll {head}{tail}{context}", "promised"),
                    (f"I didn't {head}{tail}{context}", "denied"),
                ):
                    read = {(k.name, m) for k, m in read_clause(text)}
                    assert (kind.name, mode) in read, (text, read)


def test_a_reply_not_in_the_customers_language_fails_and_short_english_passes(tasks, catalog):
    task = tasks["fx-cancel"]
    for foreign in (
        "Pedido O1001 cancelado; el reembolso llegará en unos días.",
        "Ihre Bestellung O1001 wurde erfolgreich storniert, vielen Dank.",
        "Votre commande O1001 est annulée et vous serez remboursé.",
        "Seu pedido O1001 foi cancelado com sucesso, obrigado pela paciência.",
        "I've cancelled order O1001. Anche il rimborso è stato già elaborato oggi.",
    ):
        verdict = judge(task, foreign, catalog)
        assert any("customer's language" in v for v in verdict.violations), foreign
    for english in (
        "O1001: cancelled.",
        "Cancelled O1001 ✅",
        "Done — O1001 cancelled, refund to Visa ending 4242.",
        "Order O1001 cancelled. Refund: 5-7 business days.",
    ):
        verdict = judge(task, english, catalog)
        assert not any("language" in v for v in verdict.violations), (english, verdict.violations)


def test_a_product_named_by_its_attributes_is_that_product(tasks, catalog):
    task = tasks["fx-purchase"]
    bought = task.reference[1].arguments["item_id"]
    row = catalog.row_of(bought)
    brand, colour = catalog.value("brand", row), catalog.value("color", row)
    kind = catalog.value("product_type", row)
    for named in (
        f"the {brand} {colour} {kind}",
        f"the {colour} {brand} {kind} ({bought})",
        f"the {kind} from {brand} in {colour}",
        f"{brand}'s {kind} in {colour}",
        f"the {title(catalog, bought)}",  # the full title: its commas keep one clause
    ):
        verdict = judge(task, f"I've placed your order for {named}.", catalog)
        assert verdict.success, (named, verdict.violations)
    other = next(
        i
        for i in catalog.item_ids
        if catalog.value("brand", catalog.row_of(i)) == brand
        and catalog.value("product_type", catalog.row_of(i)) != kind
    )
    orow = catalog.row_of(other)
    otype, ocolour = catalog.value("product_type", orow), catalog.value("color", orow)
    verdict = judge(task, f"I've placed your order for the {brand} {ocolour} {otype}.", catalog)
    assert not verdict.success, (other, verdict.violations)


def test_one_reading_of_the_message_clauses_with_subject_polarity_and_modality(catalog):
    """`Message` is the one clause reader: what each clause names and is about, its polarity
    and modality, and the actions it reports, promises or denies."""
    from ecomrlve.env.judge.claims import Message

    jacket = "I0000005"
    named = title(catalog, jacket)
    text = (
        f"O1002 has shipped, so I couldn't cancel it. I've cancelled O1001 (the {named}). "
        "If you like, I can start a return. I'll refund you today. Anything else?"
    )
    message = Message(text, product_names(catalog), ["O1001", "O1002"], {jacket}, [named])
    read = [(c.text, [(k.name, m) for k, m in c.actions]) for c in message.clauses]
    assert read[0] == ("O1002 has shipped", [])
    denied = message.sentences[0][1]
    assert denied.negated and denied.first_person and denied.subject.orders == {"O1002"}
    assert [(k.name, m) for k, m in denied.actions] == [("cancel", "denied")]
    cancelled = message.sentences[1][0]  # the title's comma cuts no clause
    assert cancelled.names.orders == {"O1001"} and named in cancelled.text
    assert [(k.name, m) for k, m in cancelled.actions] == [("cancel", "reported")]
    offer = message.sentences[2][-1]
    assert offer.conditional and not offer.negated
    assert [(k.name, m) for k, m in message.sentences[3][0].actions] == [("refund", "promised")]
    assert message.sentences[4][0].question
