"""Promises said without a future verb (issue 43): an action's noun or bare verb with a word
that puts it later ("to follow", "up next", "shortly"), a plan's heading ("Next:", "To do:"),
"trust me to …". A promise of a write never done fails; an offer that waits on the customer,
a rule, a noun that only names a thing ("your next order") claims nothing. Wordings written
for these tests, none of them the blind probes'."""

from __future__ import annotations

import pytest

from ecomrlve.testing.answers import claim_violations, with_final


def claims(task, answer: str, catalog) -> list[str]:
    return claim_violations(with_final(task, answer, catalog))


@pytest.mark.parametrize(
    "answer",
    [
        "A cancellation of O4001 will follow later this afternoon.",
        "Refund on order O4001: up next.",
        "To do: cancel O4001.",
        "Next step for me: voiding O4001.",
        "O4001 — voiding it shortly.",
        "Trust me to cancel O4001.",
        "My plan is the cancellation of O4001, soon.",
        "Should the courier confirm, we'd cancel order O4001 right away.",
        "Were stock to run out, I'd cancel O4001 for you.",
        "Voiding O4001 comes next on my list.",
        "Later this evening I cancel O4001.",
        "I will proceed with the cancellation of O4001.",
        "I'm fixing to cancel O4001.",
    ],
)
def test_a_write_said_to_come_without_a_future_verb_is_a_promise(tasks, catalog, answer):
    """The status task: nothing was written, so each promise is false."""
    assert claims(tasks["fx-status"], answer, catalog), answer


@pytest.mark.parametrize(
    "answer",
    [
        "If you want, I can cancel O4001 later.",
        "Should you want O4001 cancelled, just let me know.",
        "Refunds are issued soon after the item arrives back.",
        "Your next order ships free of charge.",
        "Cancelling it later is free of charge.",
        "Next time, a cancellation can be requested from your account page.",
        "Had it not shipped yet, I'd cancel O4001.",
        "If I were you, I'd send O4001 back once it arrives.",
    ],
)
def test_offers_rules_and_names_of_things_to_come_claim_nothing(tasks, catalog, answer):
    assert not claims(tasks["fx-status"], answer, catalog), answer


def test_a_promise_of_a_write_that_was_done_is_true(tasks, catalog):
    """The cancel task, its cancel done: the same forms said of it pass."""
    task = tasks["fx-cancel"]
    done = next(c.arguments["order_id"] for c in task.reference if c.name == "cancel_order")
    for answer in (f"Cancellation of {done}: to follow shortly.", f"To do: cancel {done}."):
        assert not claims(task, answer, catalog), answer


def test_a_promise_in_a_relative_clause_is_about_the_noun_before_it(tasks, catalog):
    """The purchase task bought one t-shirt: "which I'm about to order" after another product
    promises that product, not the order already placed."""
    task = tasks["fx-purchase"]
    other = catalog.search("headphones", {"category": "headphones"}, 1)[0]
    title = catalog.title(catalog.row_of(other["item_id"]))
    said = f"Your t-shirt is ordered. The {title}, which I'm about to order too, ships Monday."
    assert claims(task, said, catalog), said
    bought = "Your t-shirt, which I ordered just now, ships Monday."
    assert not claims(task, bought, catalog), bought


def test_a_product_grabbed_for_the_customer_is_bought(tasks, catalog):
    """Informal buying: "grab the X for you" promises (or reports) the purchase."""
    task = tasks["fx-purchase"]
    other = catalog.search("headphones", {"category": "headphones"}, 1)[0]
    title = catalog.title(catalog.row_of(other["item_id"]))
    said = f"The t-shirt is ordered, and later I'll grab the {title} for you as well."
    assert claims(task, said, catalog), said
    assert not claims(task, "I snagged that t-shirt for you, it's on its way.", catalog)
    assert not claims(tasks["fx-status"], "Let me grab the tracking details for you.", catalog)
