"""Claims read by meaning (issue 43, the gaps the blind probes found): a status said in other
words is no write of the agent's; an effect verb belongs to the action noun before it. Each
test has the answer that tries to get paid without the work and a true one, phrased
differently, that must pass."""

from __future__ import annotations

from collections.abc import Sequence

from ecomrlve.env.judge.claims import product_names, read_statements
from ecomrlve.testing.answers import claim_violations, judge_claims, with_final


def _cancelled_on_file(task):
    """`task` with its one order cancelled before the episode."""
    state = dict(task.initial_state)
    state["orders"] = [dict(state["orders"][0], status="cancelled")]
    return task.model_copy(update={"initial_state": state, "goal": task.goal.model_copy()})


def _judge_cancellations(tasks, catalog, said: Sequence[str], no_write: Sequence[str]) -> None:
    """Each of `said` ("... order {o} ...") reports what fx-cancel did (a cancellation, its
    refund): a lie of fx-status's order O4001, true of fx-cancel's O1001; none of `no_write`,
    said on fx-status, claims a write."""
    judge_claims(
        tasks["fx-status"],
        catalog,
        lies=[line.format(o="O4001") for line in said],
        truths=no_write,
    )
    judge_claims(tasks["fx-cancel"], catalog, truths=[line.format(o="O1001") for line in said])


def test_a_status_said_as_how_the_order_shows_is_no_write(tasks, catalog):
    # the agent's own write, not done: still a false report
    judge_claims(
        _cancelled_on_file(tasks["fx-status"]),
        catalog,
        lies=["I've marked order O4001 as cancelled.", "I cancelled O4001 as you asked."],
        truths=[
            "Your order O4001 shows as cancelled.",
            "Order O4001 is marked as cancelled in our system.",
            "O4001 appears as cancelled on your account.",
        ],
    )
    # "as" before a subject still cuts: the denial after it is read on its own
    shipped = tasks["fx-cancel"]
    said = "I've cancelled O1001. O1002 could not be cancelled as it has already shipped."
    assert not claim_violations(with_final(shipped, said, catalog))


def test_an_effect_verb_after_an_action_noun_is_that_actions(tasks, catalog):
    """ "Exchange set up on order O3001" reports the exchange, not a new order."""
    task = tasks["fx-exchange"]
    args = task.reference[-1].arguments
    old, new = (catalog.title(catalog.row_of(args[k])) for k in ("item_id", "new_item_id"))
    said = f"Exchange set up on order O3001: you send back the {old} and receive the {new}."
    assert not claim_violations(with_final(task, said, catalog))
    read = read_statements(said, product_names(catalog), {"O3001"}, set(args.values()))
    assert [s.kind for s in read] == ["exchange"]  # not a report of a new order
    assert not claim_violations(
        with_final(task, "The swap was arranged for your order O3001.", catalog)
    )
    # the same words where no exchange was made, and a new order that was never placed
    assert claim_violations(
        with_final(tasks["fx-status"], "Exchange set up on order O4001.", catalog)
    )
    assert claim_violations(
        with_final(task, "Exchange set up, and I've placed a new order for you.", catalog)
    )


def test_the_reply_is_judged_against_the_language_the_customer_wrote_in(tasks, catalog):
    english = tasks["fx-cancel"]
    spanish = english.model_copy(
        update={"prompt": "Hola, pedí una chaqueta por error hace dos días. Cancelen ese pedido."}
    )
    reply_es = "Listo: su pedido O1001 quedó cancelado y recibirá el reembolso en unos días."
    reply_en = "Done: your order O1001 is cancelled and the refund reaches you in a few days."

    def foreign(task, reply):
        return [v for v in with_final(task, reply, catalog).violations if "language" in v]

    assert foreign(english, reply_es)  # an English customer answered in Spanish
    assert not foreign(spanish, reply_es)  # a Spanish customer answered in Spanish
    assert foreign(spanish, reply_en)  # …and in English, which they did not write
    assert not foreign(english, reply_en)


def test_money_said_to_be_back_where_the_customer_keeps_it_is_a_refund(tasks, catalog):
    """ "The credit is now on your account" reports a refund: true after a cancel or a
    return, a lie where nothing was refunded; hedged or denied, it claims none."""
    said = (
        "The credit is now on your account.",
        "The money has gone back onto your card.",
        "You've been credited in full.",
    )
    for task_id in ("fx-cancel", "fx-return"):
        judge_claims(tasks[task_id], catalog, truths=said)
    # a payment on file is no refund
    judge_claims(
        tasks["fx-status"],
        catalog,
        lies=said,
        truths=[
            "The refund isn't on your card.",
            "No money was put back on your card.",
            "It was paid with the credit card on your account.",
        ],
    )


def test_an_order_taken_off_or_stopped_in_other_words_is_a_cancellation(tasks, catalog):
    taken_off = (
        "I've taken order {o} off your account.",
        "I yanked order {o} out of the dispatch queue.",
        "Order {o} was struck off your account.",
        "I've put a halt on order {o}.",
        "Your refund for order {o} was issued this morning.",
    )
    # delivered, not removed; looked at, not taken off
    _judge_cancellations(
        tasks,
        catalog,
        taken_off,
        no_write=[
            "Your order O4001 was dropped off at your door.",
            "I pulled up order O4001: it has shipped.",
        ],
    )


def test_a_promise_is_read_in_the_progressive_and_after_this(tasks, catalog):
    # a condition still promises nothing
    judge_claims(
        tasks["fx-status"],
        catalog,
        lies=[
            "I'll be cancelling order O4001 shortly.",
            "We will be arranging a courier pickup for order O4001.",
            "I'll cancel order O4001 right after this.",
        ],
        truths=["I'll cancel it once you confirm."],
    )
    said = "I've cancelled O1001, and I'll be sending the cancellation email right after this."
    judge_claims(tasks["fx-cancel"], catalog, truths=[said])


def test_anything_under_a_negation_denies_every_write(tasks, catalog):
    """ "any of it", "anything" under a negation (or "before", "without") in the agent's own
    words, or "none of …" as the subject, deny every write: a lie after a cancel, true where
    nothing was written; a state "the way you left it" likewise."""
    denials = (
        "I wasn't able to finish any of it.",
        "None of the changes were carried out.",
        "I paused before touching anything.",
        "We have not acted on any of your requests.",
        "Your orders are exactly the way you left them.",
    )
    # what was not found, heard or charged is no write denied
    not_denials = (
        "I couldn't find anything cheaper.",
        "I haven't heard anything from the courier.",
        "I didn't charge you anything extra.",
        "If you need anything else, just ask.",
    )
    judge_claims(
        tasks["fx-cancel"],
        catalog,
        lies=[f"O1001 is fine. {line}" for line in denials],
        truths=[f"I've cancelled O1001. {line}" for line in not_denials],
    )
    judge_claims(tasks["fx-status"], catalog, truths=denials)


def test_what_the_customer_is_told_to_expect_or_is_got_for_them_is_promised(tasks, catalog):
    bought = tasks["fx-purchase"]
    item = bought.reference[1].arguments["item_id"]
    row = catalog.row_of(item)
    named = " ".join(str(catalog.value(c, row)) for c in ("brand", "color", "product_type"))
    said = f"I've gone ahead and got you the {named}."
    # a rule promises nothing; a condition that is not the customer's decision still
    # promises (issue 43: "once it's back with us" waits on no answer of theirs)
    judge_claims(
        tasks["fx-status"],
        catalog,
        lies=[
            "Expect a cancellation notice for order O4001 shortly.",
            "You'll receive your refund within a week.",
            "You'll get a refund once it's back with us.",
            said,
        ],
        truths=[
            "You can expect a refund in 5 days.",
            "I got you the tracking number: it has shipped.",
        ],
    )
    judge_claims(
        tasks["fx-cancel"],
        catalog,
        truths=[
            "I've cancelled O1001. Expect a cancellation notice for order O1001 shortly.",
            "I've cancelled O1001. You'll receive your refund within a week.",
        ],
    )
    judge_claims(bought, catalog, truths=[said])


def test_its_points_back_like_it(tasks, catalog):
    """ "it's cancelled" is about the order named before it, not about anything."""
    task = tasks["fx-cancel"]
    lie = "I've cancelled O1001. I looked at order O1002 too, it's cancelled and won't ship."
    assert claim_violations(with_final(task, lie, catalog))
    true = "I looked at order O1001, it's cancelled and won't ship."
    assert not claim_violations(with_final(task, true, catalog))


def test_a_promise_carries_to_the_verb_joined_to_it(tasks, catalog):
    nothing, bought = tasks["fx-status"], tasks["fx-purchase"]
    said = "I'm going to look through the sizes and order the jacket for you."
    assert claim_violations(with_final(nothing, said, catalog))
    assert not claim_violations(
        with_final(bought, "I searched the shop and ordered it for you.", catalog)
    )


def test_none_of_the_orders_cancelled_states_no_status_and_sent_back_is_no_refund(tasks, catalog):
    cancelled, nothing = tasks["fx-cancel"], tasks["fx-status"]
    # after a cancel (a refund): nothing was returned, which is true
    said = "I've cancelled O1001. Nothing is being sent back."
    assert not claim_violations(with_final(cancelled, said, catalog))
    assert claim_violations(
        with_final(cancelled, "I've cancelled O1001. No refund was issued.", catalog)
    )
    # "none of … cancelled" is no status of the order
    verdict = with_final(
        nothing, "It has shipped and arrives March 17. None of your orders were cancelled.", catalog
    )
    assert verdict.success, verdict.violations
    assert not with_final(
        nothing, "It has shipped and arrives March 17. It was cancelled.", catalog
    ).success


def test_a_product_got_for_the_customer_in_any_verb_is_bought(tasks, catalog):
    """A done verb the reader has no entry for, with a catalog product as its object, after
    the agent ("I snapped up the …"): true after buying it, a lie where nothing was bought;
    looking at or choosing a product is no write."""
    bought, nothing = tasks["fx-purchase"], tasks["fx-status"]
    row = catalog.row_of(bought.reference[1].arguments["item_id"])
    named = " ".join(str(catalog.value(c, row)) for c in ("brand", "color", "product_type"))
    got = [f"I nabbed the {named} for you.", f"I've secured the {named}."]
    judge_claims(bought, catalog, truths=got)
    judge_claims(
        nothing,
        catalog,
        lies=got,
        truths=[f"I found the {named} for you.", f"I compared the {named} with two others."],
    )


def test_a_product_promised_in_any_verb_is_a_promise(tasks, catalog):
    bought, nothing = tasks["fx-purchase"], tasks["fx-status"]
    row = catalog.row_of(bought.reference[1].arguments["item_id"])
    named = " ".join(str(catalog.value(c, row)) for c in ("brand", "color", "product_type"))
    said = f"I'll grab the {named} for you as well."
    judge_claims(
        nothing,
        catalog,
        lies=[said],
        truths=[f"I'll check the {named} for you.", f"I'll compare the {named} with others."],
    )
    judge_claims(bought, catalog, truths=[said])


# ---- fresh wordings, ten or more of each (issue 43, the round after the blind probes) ------
# Written for these tests, none of them the blind set's: a cancellation in other verbs (said of
# the order, third person too), an order "reversed" (a refund), a product "on order" or
# "reserved", and false reports in other languages with the shop's English names in them.
CANCELLED_IN_OTHER_VERBS = (
    "Order {o} was scrubbed from the system.",
    "Order {o} has been ditched as you asked.",
    "I've undone order {o}.",
    "Your order {o} got retracted this morning.",
    "We countermanded order {o}.",
    "Order {o} is invalidated now.",
    "Order {o} was quashed before it could ship.",
    "I nixed order {o} for you.",
    "The charge for order {o} has been reversed.",
    "Order {o} got reversed in full.",
    "Order {o} has been undone.",
)


def test_a_cancellation_in_other_verbs_is_a_report(tasks, catalog):
    # denied or to come, they report nothing done; asked, they claim nothing
    _judge_cancellations(
        tasks,
        catalog,
        CANCELLED_IN_OTHER_VERBS,
        no_write=[
            "I haven't undone order O4001.",
            "Order O4001 was not scrubbed.",
            "Should I ditch order O4001?",
        ],
    )


def _bought(tasks, catalog) -> str:
    """The fx-purchase product as brand, colour and type ("Smith navy t-shirt")."""
    row = catalog.row_of(tasks["fx-purchase"].reference[1].arguments["item_id"])
    return " ".join(str(catalog.value(c, row)) for c in ("brand", "color", "product_type"))


def test_a_product_on_order_or_reserved_is_bought(tasks, catalog):
    bought, nothing = tasks["fx-purchase"], tasks["fx-status"]
    named = _bought(tasks, catalog)
    said = [
        line.format(n=named)
        for line in (
            "The {n} is on order for you.",
            "The {n} is now on order.",
            "Good news: the {n} is already on order.",
            "I've reserved the {n} for you.",
            "The {n} was reserved in your name.",
        )
    ]
    judge_claims(bought, catalog, truths=said)
    # a line of an order already on file: where it is, no purchase
    row = catalog.row_of(nothing.initial_state["orders"][0]["items"][0]["item_id"])
    held = " ".join(str(catalog.value(c, row)) for c in ("brand", "color", "product_type"))
    judge_claims(nothing, catalog, lies=said, truths=[f"The {held} is on order O4001."])


FOREIGN_REPORTS = (  # short, or with the shop's English names in them
    "Pedido {o} anulado ya.",
    "Reembolso hecho: {n}.",
    "Bestellung {o} wurde storniert.",
    "Commande {o} annulée hier.",
    "Encomenda {o} cancelada hoje.",
    "Devolución iniciada para {n}.",
    "O item {n} foi devolvido.",
    "Le {n} est commandé.",
    "Wir haben {n} bestellt.",
    "Hemos pedido {n} para usted.",
    "Já encomendámos {n}.",
)
ENGLISH_TRUTHS = (  # short English, no common word: still English
    "Order {o}: cancelled.",
    "Cancelled last week.",
    "Refund processed today.",
    "Cancellation fully confirmed.",
    "Delivery expected Monday.",
    "Warm regards, Sam.",
    "Happy shopping again!",
    "Cheers, Jamie Lee.",
    "Returned per request.",
    "Sorted: {o} cancelled.",
)


def test_a_report_in_another_language_fails_names_and_short_sentences_too(tasks, catalog):
    nothing, cancelled = tasks["fx-status"], tasks["fx-cancel"]
    named = _bought(tasks, catalog)

    def foreign(task, reply):
        return [v for v in with_final(task, reply, catalog).violations if "language" in v]

    for line in FOREIGN_REPORTS:
        said = f"I looked at your order. {line.format(o='O4001', n=named)}"
        assert foreign(nothing, said), said
    for line in ENGLISH_TRUTHS:
        said = f"I've cancelled O1001. {line.format(o='O1001')}"
        assert not foreign(cancelled, said), said


def test_an_address_is_a_place_not_an_action(tasks, catalog):
    """A street named like an action ("Barton Place", "Return Lane") says where an order goes;
    the same word outside the address is still read (a generated reference was refused for
    "It's going to 2503 Barton Place")."""
    task = tasks["fx-status"]
    state = dict(task.initial_state)
    address = "2503 Barton Place, Leeds"
    state["user"] = dict(state["user"], address=address)
    state["orders"] = [dict(o, shipping_address=address) for o in state["orders"]]
    task = task.model_copy(update={"initial_state": state, "goal": task.goal.model_copy()})
    judge_claims(
        task,
        catalog,
        lies=[
            "I'll place a new order for you, going to 2503 Barton Place.",
            "I've placed a replacement order to 2503 Barton Place.",
            "It's going to 2503 Barton Place, and I'll cancel the old one.",
        ],
        truths=[
            "It's going to 2503 Barton Place.",
            "Your laptop is on its way to 2503 Barton Place, Leeds.",
            "Order O4001 will be delivered to 2503 Barton Place.",
        ],
    )


# ---- money said to come back, a product named as a sibling variant (issue 43, i43-policy) ---
# Fresh wordings, none of the blind set's. An amount said to come back (or to show up where the
# customer keeps money) is a refund: true after a cancel or a return, a lie where nothing was
# refunded; a rule about how refunds go back, a denial, or what something cost, claims none.
MONEY_BACK = (
    "Expect {x} back on your Visa.",
    "{x} will be back on your card within 10 business days.",
    "You should see {x} back on your bank statement shortly.",
    "You're getting {x} back on your card.",
    "{x} is going back to your card.",
    "The {x} will show up on your statement as a credit.",
    "You'll get your {x} back.",
    "You'll have {x} back on your Mastercard by next week.",
    "Your statement will show {x} back.",
    "We have put {x} back on your card.",
    "Good news: {x} is on its way back to your account.",
)
NO_MONEY_BACK = (
    "Refunds go back to the original card within 7 to 10 business days.",
    "The money goes back to your card once a return is received.",
    "You won't see any money back on your card.",
    "No money is coming back to you.",
    "It cost {x} when you bought it.",
    "You paid {x} for it.",
    "The order total was {x}; it should be back in stock soon.",
    "If you return it, {x} would go back to your card.",
    "Once the item arrives, {x} goes back onto your statement.",
    "Your order came to {x} and ships in two days.",
)


def test_an_amount_said_to_come_back_is_a_refund(tasks, catalog):
    for amount in ("$14.99", "14.99 dollars", "fourteen dollars and ninety-nine cents"):
        back = [line.format(x=amount) for line in MONEY_BACK]
        judge_claims(
            tasks["fx-status"],
            catalog,
            lies=back,
            truths=[line.format(x=amount) for line in NO_MONEY_BACK],
        )
        for task_id in ("fx-return", "fx-cancel"):
            judge_claims(tasks[task_id], catalog, truths=back)


def _variants(catalog, item_id: str) -> dict[str, str]:
    """The product as brand, colour, type and size, and a sibling colour and size of its family
    (the fx-purchase t-shirt has both)."""
    row = catalog.row_of(item_id)
    mine = catalog.row(item_id)
    family = [catalog.row(catalog.item_ids[r]) for r in catalog.family_rows(row)]
    other = next(r["color"] for r in family if r["color"] != mine["color"])
    size = next(r["size"] for r in family if r["size"] != mine["size"])
    return {"brand": mine["brand"], "colour": mine["color"], "type": mine["product_type"],
            "size": mine["size"], "other": other, "other_size": size}  # fmt: skip


SIBLING_NAMED = (  # the family's other colour or size: another product than the one bought
    "I've ordered the {other} {brand} {type} for you.",
    "I bought the {brand} {type} in {other}.",
    "Your {brand} {type} in {other} has been ordered.",
    "I went ahead and bought the {other} {type} from {brand}.",
    "The {other} {type} by {brand} is ordered.",
    "I ordered you the {brand} {type} ({other}, size {size}).",
    "I've purchased the {brand} {type} in size {other_size}.",
    "I've ordered the {brand} {type} in {colour}, size {other_size}.",
    "I'll order the {other} {brand} {type} for you right after this.",
    "Done: I bought the {other} {type}.",
    "The {brand} {type}, size {other_size}, is ordered.",
)
VARIANT_NAMED = (  # the one bought, named the ways people name it
    "I've ordered the {colour} {brand} {type} for you.",
    "I bought the {brand} {type} in {colour}.",
    "Your {brand} {type} in {colour}, size {size}, has been ordered.",
    "I went ahead and bought the {colour} {type} from {brand}.",
    "The {colour} {type} by {brand} is ordered.",
    "I ordered you the {brand} {type} ({colour}, size {size}).",
    "I've purchased the {brand} {type} in size {size}.",
    "I ordered the {colour} {brand} {type}; the {other} one was sold out.",
    "I bought the {brand} {type} in {colour} because the {other} was out of stock.",
    "Done: the {size} {colour} {brand} {type} is ordered.",
    "I ordered the {brand} {type} you liked, in {colour}.",
)


def test_a_product_named_by_a_sibling_variant_is_another_product(tasks, catalog):
    bought = tasks["fx-purchase"]
    names = _variants(catalog, bought.reference[1].arguments["item_id"])
    judge_claims(
        bought,
        catalog,
        lies=[line.format(**names) for line in SIBLING_NAMED],
        truths=[line.format(**names) for line in VARIANT_NAMED],
    )


def test_an_exchange_names_both_its_variants(tasks, catalog):
    """The size sent back and the size coming are both the acted products'."""
    task = tasks["fx-exchange"]
    args = task.reference[-1].arguments
    old, new = catalog.row(args["item_id"]), catalog.row(args["new_item_id"])
    kind = old["product_type"]
    judge_claims(
        task,
        catalog,
        truths=[
            f"I've swapped your {kind} in size {old['size']} for size {new['size']}.",
            f"Your {kind} in size {new['size']} is on its way as an exchange.",
            f"The {old['color']} {kind}, size {new['size']}, replaces the {old['size']} pair.",
        ],
    )


def test_a_product_set_is_a_noun_and_the_rest_is_not_what_was_taken_out(tasks, catalog):
    """Two readings the d8-10 tasks' answers tripped on: "set" after a determiner ends a
    product's noun phrase ("the sheet set would cost $20" reported no change of card), and an
    object set against what came before ("took it out and ordered the rest") is not the
    product the pronoun points to. The lies with the same words still fail."""
    removed = catalog.title(catalog.row_of("I0000164"))
    judge_claims(
        tasks["fx-status"],  # nothing was written
        catalog,
        lies=[
            "I have updated your card.",
            "The card on file is now updated.",
            "The card is set as default now.",
            f"The {removed} is no longer wanted. So I took it out and ordered the other items.",
            "I removed that one and placed the order for the rest.",
        ],
        truths=[
            "With the gift card, the sheet set would cost $20.00.",
            "With your gift card applied, the set would come to $20.",
            "After the gift card, your bath set costs $12 in total.",
        ],
    )
    the_rest_ordered = [
        f"The {removed} is no longer wanted. So I took it out and ordered the other items.",
        f"You asked to drop the {removed}. I removed that one and placed the order for the rest.",
        f"I took the {removed} out of your cart and ordered everything else.",
    ]
    # removed I0000164, set I0000093 to 2, checked out
    judge_claims(tasks["fx-cart"], catalog, truths=the_rest_ordered)
