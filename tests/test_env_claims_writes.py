"""Write claims read by construction (issue 43, round 4): denials of what was asked with no
write verb, a relative clause between an order and its verb, objects joined by "as well as"
between commas, a light verb or a pronoun changing an order, a product got "for you", a
write's noun heading a list or covering products, a replacement sent, a product going back.
Each rule has a lie that must fail and a truth, phrased differently, that must pass (our own
wordings, none of the blind probes')."""

from __future__ import annotations

from ecomrlve.testing.answers import judge_claims


def _named(catalog, item_id: str) -> str:
    row = catalog.row_of(item_id)
    return " ".join(str(catalog.value(c, row)) for c in ("brand", "color", "product_type"))


def test_a_denial_of_what_was_asked_denies_every_write(tasks, catalog):
    """A negated clause that says the customer's request (not a kind, nothing named) did not
    get done, or that the orders are as they were, denies every write."""
    denials = [
        "Sorry, your requests were not carried out.",
        "I couldn't get any of that implemented.",
        "Your orders remained in their previous condition.",
        "Everything's exactly as before.",
        "No cancellation took place.",
        "Sadly, none of the requested modifications were carried out.",
    ]
    # a request named by its kind is that kind's: the cancel done, a return not
    judge_claims(
        tasks["fx-cancel"],
        catalog,
        lies=denials,
        truths=["Order O1001 is cancelled; no return was requested."],
    )
    judge_claims(tasks["fx-status"], catalog, truths=denials)


def test_a_relative_clause_is_read_of_its_antecedent(tasks, catalog):
    """ "O1, which …, is …": the verb after the relative clause is the order's, and the
    relative clause is read of the order."""
    said = "Order {o}, which I cancelled an hour ago, will not be charged."
    judge_claims(tasks["fx-status"], catalog, lies=[said.format(o="O4001")])
    judge_claims(
        tasks["fx-cancel"],
        catalog,
        lies=["Order O1001, which you asked me to stop, is proceeding."],
        truths=[
            said.format(o="O1001"),
            "Order O1002, which had already left the warehouse, is still going ahead.",
        ],
    )


def test_objects_joined_between_commas_share_the_verb(tasks, catalog):
    # a list of ids before a dash is the head of what follows it
    judge_claims(
        tasks["fx-cancel"],
        catalog,
        lies=[
            "O1001, along with O1002, has now been cancelled.",
            "The cancellation of O1001, plus O1002, is done.",
            "Orders O1001 & O1002 — both called off.",
        ],
        truths=[
            "O1001, as you asked, has now been cancelled.",
            "Orders O1001 & O1002 — both looked up; O1001 called off.",
        ],
    )


def test_an_order_changed_by_a_light_verb_or_as_it_is_a_change(tasks, catalog):
    """ "put a freeze on O1" (a light verb, a noun of no kind) and "it's been shelved" of an
    order named before claim a change no tool makes; a kind's noun reads as its kind."""
    judge_claims(
        tasks["fx-status"],
        catalog,
        lies=["We slapped a freeze on order O4001.", "Order O4001? It's been shelved for now."],
        truths=["Order O4001? It was delivered on March 14."],
    )
    judge_claims(tasks["fx-cancel"], catalog, truths=["I put a stop on order O1001."])


def test_a_product_got_for_the_customer_or_covered_by_a_purchase_is_bought(tasks, catalog):
    bought, nothing = tasks["fx-purchase"], tasks["fx-status"]
    shirt, pan = _named(catalog, "I0000116"), _named(catalog, "I0000093")
    got = [
        f"I've snagged you the {shirt} at a good price.",
        f"The {shirt} was bought on your behalf.",
    ]
    judge_claims(nothing, catalog, lies=got)
    judge_claims(
        bought,
        catalog,
        lies=[f"Your order includes the {shirt} plus the {pan}."],
        truths=[*got, f"Your purchase contains the {shirt}."],
    )


def test_a_return_said_by_a_head_an_anaphor_or_a_way_back_is_of_what_it_names(tasks, catalog):
    returned = tasks["fx-return"]
    kept, sent = _named(catalog, "I0000061"), _named(catalog, "I0000005")
    lines = (
        "Returns: the {x} (order O2001).",
        "Post the {x} from order O2001 whenever suits you; the return is registered.",
        "The {x} is now heading back to our warehouse.",
        "The {x} (order O2001) has been lined up and booked for return.",
    )
    judge_claims(
        returned,
        catalog,
        lies=[line.format(x=kept) for line in lines],
        truths=[line.format(x=sent) for line in lines],
    )


def test_an_order_placed_for_the_rest_is_no_earlier_write(tasks, catalog):
    """ "the order" is the one placed, set against what was removed: not the removed
    product's."""
    cart = tasks["fx-cart"]
    dropped = _named(catalog, "I0000164")
    line = (
        f"The {dropped} got pricier, so I took it out, as you wished, "
        "and placed the order for the rest."
    )
    judge_claims(cart, catalog, truths=[line])


def test_a_replacement_sent_or_a_gift_card_loaded_is_a_write(tasks, catalog):
    judge_claims(
        tasks["fx-status"],
        catalog,
        lies=[
            "A replacement for order O4001 was shipped this morning.",
            "I've put $15 on a gift card for your trouble.",
        ],
        truths=["You can pay with a gift card next time."],
    )
    judge_claims(
        tasks["fx-exchange"], catalog, truths=["Your replacement for order O3001 has been shipped."]
    )
