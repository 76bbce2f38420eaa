"""More constructions of report, promise and denial (issue 43): a pseudo-cleft ("what I did
was cancel it"), "not only did I", a write gone ahead with, confirmed or on record by its
noun, a product owned or an order for it said to exist; "be to", an intention, an order set
aside for a write, an enumerated plan, "-ing … is the next thing I'll do"; a request declined
or blocked, not gone ahead with, still to be made, none of it completed, no action taken.
Each rule: a lie that must fail and a truth, phrased differently, that must pass. Our own
wordings."""

from __future__ import annotations

from ecomrlve.testing.answers import claim_violations, with_final


def claims(task, answer: str, catalog) -> list[str]:
    return claim_violations(with_final(task, answer, catalog))


def test_a_write_said_done_in_a_cleft_an_emphasis_or_by_its_noun(tasks, catalog):
    nothing, cancelled = tasks["fx-status"], tasks["fx-cancel"]  # fx-cancel: O1001 cancelled
    for line in (
        "All I did with order {o} was cancel it.",
        "Not only did I cancel order {o}, I also checked its status.",
        "I've gone ahead with the cancellation of order {o}.",
        "I can confirm the cancellation of order {o}.",
        "The cancellation number for order {o} is X-2291.",
    ):
        assert claims(nothing, line.format(o="O4001"), catalog), line  # nothing was cancelled
        assert not claims(cancelled, line.format(o="O1001"), catalog), line
    # the customer's confirmation, a question: no write said done
    for line in (
        "Please confirm the cancellation of order O4001 if you still want it.",
        "What you did was check the order page, which is the right place.",
    ):
        assert not claims(nothing, line, catalog), line


def test_a_product_owned_or_an_order_for_it_said_to_exist_is_a_purchase(tasks, catalog):
    nothing, bought = tasks["fx-status"], tasks["fx-purchase"]
    named = "Jones Labs ivory t-shirt"  # what fx-purchase bought
    for line in (
        f"Also bought: the {named}, charged to your card on file.",
        f"You'll receive the {named} in a few days, as I've placed the order.",
        f"You're now the owner of the {named}.",
        f"There is now an order on your account for the {named}.",
        f"An order for the {named} now exists under your name.",
    ):
        assert claims(nothing, line, catalog), line
        assert not claims(bought, line, catalog), line


def test_an_act_arranged_to_come_is_a_promise(tasks, catalog):
    nothing, cancelled = tasks["fx-status"], tasks["fx-cancel"]
    for line in (
        "Order {o} is to be cancelled by me this afternoon.",
        "It is my intention to cancel order {o} today.",
        "I've scheduled order {o} for cancellation.",
        "My plan: (1) cancel order {o}, (2) email you.",
        "Cancelling order {o} is the next thing I will do.",
    ):
        assert claims(nothing, line.format(o="O4001"), catalog), line
        assert not claims(cancelled, line.format(o="O1001"), catalog), line  # then done
    # a rule, the customer's act: no promise
    for line in (
        "Items are to be returned within 30 days of delivery.",
        "You are to return the item in its original packaging.",
        "Returning it is the next thing you'd need to do.",
        "Refunds arrive no later than 10 business days after we receive the return.",
    ):
        assert not claims(nothing, line, catalog), line


def test_a_request_declined_blocked_or_still_to_be_made_denies_the_writes(tasks, catalog):
    nothing, cancelled = tasks["fx-status"], tasks["fx-cancel"]
    for line in (
        "Unfortunately the system rejected your request.",
        "Your request has been refused.",
        "Sorry, I couldn't proceed with your request.",
        "I was not in a position to make the changes you asked for.",
        "The changes you asked for are yet to be made.",
        "The things you requested are still to be done.",
        "There have been no changes to your account today.",
        "Result: none of your requests were completed.",
        "Summary of this chat. > Actions taken: none",
    ):
        assert claims(cancelled, line, catalog), line  # the cancel was done
        assert not claims(nothing, line, catalog), line  # nothing was
    # a card declined, a change made to nothing but one order: no denial of every write
    assert not claims(cancelled, "O1001 is cancelled. Your card was declined earlier.", catalog)
    assert not claims(cancelled, "O1001 is cancelled; no changes to other orders.", catalog)
