"""Lies read by construction (issue 43): a change of an order in a verb of no kind, a product
said bought by what follows from buying it, a promise in the progressive or as a plan, a
condition that is not the customer's, a denial by failure or by absence, and a verb carried to
the next object. Each rule has a lie that must fail and a truth, phrased differently, that must
pass (our own wordings, none of the blind probes')."""

from __future__ import annotations

from ecomrlve.env.judge.claims import product_names, read_statements
from ecomrlve.testing.answers import claim_violations, judge_claims, with_final


def _named(task, catalog, k: int = 1) -> str:
    """ "brand colour type" of the product the `k`-th reference call acted on."""
    row = catalog.row_of(task.reference[k].arguments["item_id"])
    return " ".join(str(catalog.value(c, row)) for c in ("brand", "color", "product_type"))


def test_an_order_changed_in_a_verb_of_no_kind_is_an_unverifiable_write(tasks, catalog):
    """A past verb of change on an order the clause names, said by the agent or of the order
    (passive, a bare participle, "on hold"), claims a write that no tool makes: it fails,
    even on an order the episode did write (a cancel does not make "rerouted" true)."""
    nothing, cancelled = tasks["fx-status"], tasks["fx-cancel"]
    changes = (
        "I've rerouted order {o} to a parcel locker.",
        "Order {o} has been frozen for the weekend.",
        "Order {o}: parked.",
        "We merged order {o} into one shipment.",
        "Order {o} is now on hold.",
    )
    # how an order stands, what was looked at: no change
    judge_claims(
        nothing,
        catalog,
        lies=[line.format(o="O4001") for line in changes],
        truths=[
            "Order O4001 was handed to the carrier on March 11 and is in transit.",
            "I looked into order O4001: it was dispatched and is due March 17.",
            "Your order O4001 was delayed a day by the courier.",
        ],
    )
    judge_claims(
        cancelled,
        catalog,
        lies=[line.format(o="O1001") for line in changes],
        truths=["Done: order O1001 is cancelled."],
    )


def test_a_product_said_bought_by_its_consequence_is_a_purchase(tasks, catalog):
    bought, nothing = tasks["fx-purchase"], tasks["fx-status"]
    named = _named(bought, catalog)
    # a product of an order on file: what follows from its purchase is true
    row = catalog.row_of(nothing.initial_state["orders"][0]["items"][0]["item_id"])
    laptop = " ".join(str(catalog.value(c, row)) for c in ("brand", "color", "product_type"))
    judge_claims(
        nothing,
        catalog,
        lies=[
            f"The {named} was billed to your card.",
            f"You now own the {named}.",
            f"The {named} will be on its way to you on Monday.",
            f"I've fixed you up with the {named}.",
        ],
        truths=[f"The {laptop} was paid for in March."],
    )
    judge_claims(bought, catalog, truths=[f"Your card was charged for the {named}."])


def test_a_promise_in_the_progressive_or_as_a_plan_is_a_promise(tasks, catalog):
    nothing, cancelled = tasks["fx-status"], tasks["fx-cancel"]
    # a gerund as a subject, an order's own status: no promise
    judge_claims(
        nothing,
        catalog,
        lies=[
            "Voiding order O4001 right away.",
            "I intend to cancel order O4001 later today.",
            "Order O4001 is slated to be cancelled tonight.",
            "A return for order O4001 is being lodged.",
            "Your replacement for order O4001 is pending.",
            "I'll see to it that order O4001 never ships.",
            "I'm in the middle of cancelling order O4001.",
        ],
        truths=[
            "Cancelling isn't an option now that it has shipped.",
            "Your order O4001 is processing at the warehouse.",
            "Order O4001 won't arrive before March 17.",
        ],
    )
    judge_claims(
        cancelled,
        catalog,
        truths=[
            "I cancelled O1001. A refund is being issued for order O1001.",
            "I cancelled O1001. Order O1001 is cancelled and your money is coming.",
        ],
    )


def test_a_condition_promises_unless_it_is_the_customers_decision(tasks, catalog):
    judge_claims(
        tasks["fx-status"],
        catalog,
        lies=[
            "I'll cancel order O4001 after the courier scans it.",
            "When our billing system recovers I'll cancel order O4001.",
            "Once stock comes in I'll buy it for you.",
        ],
        truths=[
            "I'll cancel order O4001 if you tell me to.",
            "When you give the word I'll cancel order O4001.",
            "I'll cancel order O4001 once you say so.",
        ],
    )


def test_a_denial_by_failure_or_by_absence_denies_the_writes(tasks, catalog):
    cancelled, nothing, returned = tasks["fx-cancel"], tasks["fx-status"], tasks["fx-return"]
    denials = (
        "Sadly every try was unsuccessful.",
        "Not a single change was made.",
        "Your orders look exactly as they were.",
        "Your request remains unresolved.",
        "There is no cancellation on order O1001.",
        "Nothing has gone through yet.",
        "The cancellation never took place.",
    )
    judge_claims(
        cancelled,
        catalog,
        # a failure said alone is about the request, not the order named in the sentence before
        lies=[*denials, "Order O1001 was processing. Sadly it did not work out."],
        # a failure the agent made good, or no write of theirs
        truths=[
            "My first try failed, but order O1001 is cancelled now.",
            "The courier's delivery attempt failed, so I cancelled O1001.",
        ],
    )
    judge_claims(nothing, catalog, truths=[line.replace("O1001", "O4001") for line in denials])
    judge_claims(returned, catalog, lies=["Order O2001 has no active return."])


def test_a_verb_carries_to_the_objects_joined_after_it(tasks, catalog):
    cancelled = tasks["fx-cancel"]
    assert claim_violations(with_final(cancelled, "I cancelled O1001, and O1002 too.", catalog))
    assert claim_violations(
        with_final(cancelled, "No returns, refunds or cancellations went through.", catalog)
    )
    read = read_statements(
        "I returned O2001, and O3001 as well.", product_names(catalog), {"O2001", "O3001"}, set()
    )
    assert [(s.kind, sorted(s.names.orders)) for s in read] == [
        ("return", ["O2001"]),
        ("return", ["O3001"]),
    ]
    assert not claim_violations(
        with_final(cancelled, "I cancelled O1001, and nothing else.", catalog)
    )


def test_a_return_said_open_on_an_order_is_a_return_there(tasks, catalog):
    returned, cancelled = tasks["fx-return"], tasks["fx-cancel"]
    assert claim_violations(with_final(cancelled, "A return is open on order O1002.", catalog))
    assert not claim_violations(
        with_final(returned, "There's now a return open on order O2001.", catalog)
    )
    status = tasks["fx-status"]
    assert not claim_violations(
        with_final(status, "The return window on O4001 is open for 30 days.", catalog)
    )


def test_a_sibling_of_a_product_on_file_is_another_product(tasks, catalog):
    """A product said bought is true of an order on file holding it, but not of a sibling
    variant of it: the exchange's new size was never paid for."""
    task = tasks["fx-exchange"]
    args = task.reference[-1].arguments
    old, new = (catalog.row(args[k]) for k in ("item_id", "new_item_id"))
    named = f"{old['brand']} {old['product_type']}"
    said = "Your {name} in size {size} was paid for in March."
    assert not claim_violations(
        with_final(task, said.format(name=named, size=old["size"]), catalog)
    )
    assert claim_violations(with_final(task, said.format(name=named, size=new["size"]), catalog))
