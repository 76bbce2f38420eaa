"""Natural true final messages the verifier must pass, each beside the nearby lie that must
still fail (issue 43, the truth classes round 3 of the blind probes found failing): a brand
hyphen-joined to a suffix, "not a single" / "no order was" statements, offers on the
customer's word, ranges said with "between", statements in a note, a question, an exchange's
terms. Worded here, not taken from the probes' wordings."""

from __future__ import annotations

from ecomrlve.env.judge.facts import values
from ecomrlve.env.judge.facts.text import normalise, sentences
from ecomrlve.testing.answers import claim_violations, judge_claims, with_final


def claims(task, answer: str, catalog) -> list[str]:
    return claim_violations(with_final(task, answer, catalog))


def statuses(text: str) -> list[str]:
    return [status for _, status in values.extract_statuses(normalise(text))]


def test_a_brand_hyphen_joined_to_a_suffix_is_still_the_brand(tasks, catalog):
    bought = tasks["fx-purchase"]  # the Jones Labs relaxed modal t-shirt - ivory, size XS
    for said in (
        "Your Jones Labs-made ivory t-shirt is ordered.",
        "I've ordered the ivory Jones Labs-brand t-shirt for you.",
        "The Jones Labs-designed t-shirt in ivory, size XS, is on order now.",
    ):
        assert not claims(bought, said, catalog), said
    # the same brand, another variant of its family; another brand's product never bought
    for said in (
        "I've ordered the khaki Jones Labs-made t-shirt for you.",
        "I've ordered the Rivera-brand straight jeans for you.",
    ):
        assert claims(bought, said, catalog), said


def test_not_a_single_one_and_no_order_was_are_statements_of_nothing_done(tasks, catalog):
    bought, cancelled = tasks["fx-purchase"], tasks["fx-cancel"]
    for said in ("I didn't cancel a single order.", "Not one order was cancelled today."):
        assert not claims(bought, said, catalog), said  # an order placed is no cancel
        assert claims(cancelled, said, catalog), said  # a cancel was done
    assert not claims(tasks["fx-status"], "No order of yours was cancelled.", catalog)
    assert claims(cancelled, "No order of yours was cancelled.", catalog)
    assert claims(bought, "I did not place a single order.", catalog)
    # a negated list: every item denied, the order placed among them
    listed = "No cancellations, returns or purchases were made."
    assert claims(bought, listed, catalog)
    assert claims(tasks["fx-return"], listed, catalog)
    assert not claims(tasks["fx-status"], listed, catalog)
    # what happened is no verdict on what can be done
    for clause in (
        "no order was placed today.",
        "no return was requested.",
        "i didn't cancel a single order.",
        "no order of yours has been cancelled.",
        "not one of your orders was cancelled.",
        "none of your items were returned.",
    ):
        assert values.extract_verdicts(clause) == [], clause
    assert values.extract_verdicts("no, it can't be cancelled any more.") == [("cancel", False)]
    assert values.extract_verdicts("no exchange is possible now.") == [("exchange", False)]
    assert values.extract_verdicts("i couldn't cancel it.") == [("cancel", False)]


def test_a_promise_on_the_customers_word_is_an_offer(tasks, catalog):
    task = tasks["fx-status"]  # nothing written
    for said in (
        "If you'd like, I'll cancel order O4001.",
        "If you want the purple ultrabook gone too, tell me and I'll cancel O4001.",
        "Just reply yes and I'll cancel O4001 straight away.",
        "Say the word and I'll cancel it.",
        "If you're ready, I'll set up a return for it.",
    ):
        assert not claims(task, said, catalog), said
    for said in (  # a default or a condition of the world's: still a promise
        "Hang on and I'll cancel order O4001.",
        "Unless you object, I'll cancel order O4001 tonight.",
        "If you don't reply, I'll cancel order O4001.",
        "If the courier is late, I'll cancel order O4001.",
        "Once you confirm, I'm cancelling order O4001 straight away.",  # counted on: a promise
        "I'll cancel order O4001.",
    ):
        assert claims(task, said, catalog), said


def test_a_question_a_wish_or_no_one_states_no_status():
    assert statuses("Would you like order O2 cancelled as well?") == []
    assert statuses("Should you want O2 cancelled, reply and I'll see to it.") == []
    assert statuses("Not one of your orders was cancelled.") == []
    assert statuses("Not a single order has shipped yet.") == []
    assert statuses("Has it shipped? Yes: it shipped on May 3.") == ["shipped"]
    assert statuses("Your order O1 was cancelled. Anything else?") == ["cancelled"]


def test_a_range_said_with_between_is_the_range(tasks, catalog):
    def read(text: str):
        return [(d.low, d.high) for _, d in values.extract_durations(normalise(text))]

    assert read("you'll get it back between 7 and 10 business days later") == [(7, 10)]
    assert read("between seven and ten working days") == [(7, 10)]
    assert read("anywhere from 5 through 9 business days") == [(5, 9)]
    assert read("30 days and then 5 more days") == [(30, 30), (5, 5)]
    # how refunds go, after a condition, names no one: a rule; the agent's own is a promise
    policy, status = tasks["fx-policy"], tasks["fx-status"]
    rule = "Once the item reaches us, you'll see the refund between 7 and 10 business days later."
    assert not claims(policy, rule, catalog)
    assert claims(
        policy, "Once the item arrives, I'll refund you in 7 to 10 business days.", catalog
    )
    assert claims(status, "When O4001 comes back to us, it will be refunded.", catalog)
    told = "Once the item is back with us, expect your money back in 7 through 10 business days."
    assert not claims(policy, told, catalog)
    assert claims(status, "Expect your money back for order O4001 within 7 days.", catalog)


def test_statements_in_a_note_and_with_an_elided_subject(tasks, catalog):
    note = "O1 already shipped, can't cancel; return it after delivery. O2: delivered May 2."
    assert statuses(note) == ["shipped", "delivered"]
    aside = "Your order O1 hasn't shipped yet - it's being prepared - and arrives soon."
    assert statuses(aside) == ["processing"]
    assert statuses("It hasn't shipped yet.") == []
    cancelled = tasks["fx-cancel"]  # O1001 cancelled; O1002 shipped
    assert not claims(cancelled, "Cancelled O1001. O1002 already shipped, can't cancel.", catalog)
    assert claims(cancelled, "O1001, can't cancel.", catalog)  # the denial is O1001's
    assert claims(cancelled, "Cancelled O1001. Can't cancel.", catalog)
    # joined by "so" / "and": the gerund's object is still the order named before it
    judge_claims(
        cancelled,
        catalog,
        truths=[
            "Cancelled O1001. O1002 is already in transit, so cancelling isn't possible.",
            "I cancelled O1001; O1002 has shipped and so cancelling it is no longer possible.",
            "O1001 is cancelled. O1002 shipped already, so unable to cancel that one.",
        ],
        lies=[
            "O1001 is on its way, so cancelling isn't possible.",  # O1001 was cancelled
            "I looked at O1001, so cancelling isn't possible.",
        ],
    )


def test_despatched_is_the_british_spelling_of_dispatched(tasks, catalog):
    assert statuses("Your order O1 has been despatched and is due on May 3.") == ["shipped"]
    assert statuses("O1 will be despatched tomorrow.") == []
    cancelled = tasks["fx-cancel"]  # O1001 cancelled; O1002 shipped
    assert not claims(cancelled, "Cancelled O1001. O1002 has been despatched.", catalog)
    # a status is no change the agent made, but a cancelled order said to go out is a lie
    assert claims(cancelled, "O1001 has been despatched and will arrive Friday.", catalog)


def test_statuses_said_as_moving_with_the_carrier():
    assert statuses("Your order O1 is moving through the carrier network.") == ["shipped"]
    assert statuses("It is travelling with the courier, due May 3.") == ["shipped"]
    assert statuses("It will be moving through the carrier network soon.") == []


def test_an_exchange_in_its_own_terms_and_a_bracketed_order_id(tasks, catalog):
    exchanged, status = tasks["fx-exchange"], tasks["fx-status"]
    terms = "I've set up an exchange in which the {old} is returned and the {new} is sent to you."
    said = terms.format(old="I0000003", new="I0000004")
    assert not with_final(exchanged, said, catalog).violations
    assert statuses(said) == []
    assert statuses("The new jeans have been sent to you.") == ["shipped"]
    assert claims(status, terms.format(old="I0000181", new="purple ultrabook"), catalog)
    assert claims(exchanged, "I've started a return of your jeans.", catalog)  # no return
    returned = tasks["fx-return"]
    assert not claims(
        returned, "Your return of the I0000005 (order O2001) has been started.", catalog
    )
    assert claims(status, "The ultrabook (order N0001) is placed.", catalog)


def test_an_order_number_abbreviated_stays_in_its_sentence():
    text = (
        "It shipped to O1. Grand total $52.98, order no. N0001, arriving May 3. Say no. 3 is odd."
    )
    assert sentences(normalise(text)) == [
        "it shipped to o1",
        "grand total $52.98, order no. n0001, arriving may 3",
        "say no",
        "3 is odd",
    ]


def test_a_tally_of_none_and_a_contracted_nothing_deny(tasks, catalog):
    lines = [
        "Returns opened in this chat: 0.",
        "Cancellations made today: none.",
        "Ordered the t-shirt.\n- Returns: none\n- Cancellations: zero",
        "Just so you know, nothing's been sent back on your behalf.",
    ]
    judge_claims(tasks["fx-purchase"], catalog, truths=lines)  # only an order was placed
    judge_claims(tasks["fx-return"], catalog, lies=[lines[0], lines[3]])  # a return was
    judge_claims(tasks["fx-purchase"], catalog, lies=["Returns opened in this chat: 1."])


def test_shorthand_done_verbs_are_read_as_the_verb(tasks, catalog):
    from ecomrlve.env.judge.shorthand import spelled_out

    assert spelled_out("O1 dlvd May 3; O2 shpd; Cxl'd O3; rcvd.") == (
        "O1 delivered May 3; O2 shipped; cancelled O3; received."
    )
    # an English word, a base form ("rfnd": refund or refunded) or two verbs: left as it is
    for said in ("and", "std", "shd", "rfnd issued", "prcd", "Shed"):
        assert spelled_out(said) == said
    assert statuses("O1: shpd, ETA May 9.") == ["shipped"]
    assert statuses("O1 dlvd May 3.") == ["delivered"]
    cancelled = tasks["fx-cancel"]  # O1001 cancelled; O1002 shipped
    assert not claims(cancelled, "Cxl'd O1001. O1002 shpd, can't cancel.", catalog)
    assert claims(cancelled, "Cxl'd O1002.", catalog)  # shipped, never cancelled
    assert claims(tasks["fx-status"], "Cxl'd O1001.", catalog)  # nothing was cancelled


def test_a_full_stop_then_a_semicolon_ends_a_sentence(catalog):
    from ecomrlve.env.judge.claims import Message
    from ecomrlve.env.judge.claims.names import product_names

    text = "Jeans: purchased.; O1001 cancelled (t-shirt).; O1002: delivered May 2."
    message = Message(text, product_names(catalog), ["O1001", "O1002"])
    said = [clauses[0].sentence for clauses in message.sentences]
    assert said == ["Jeans: purchased.;", "O1001 cancelled (t-shirt).;", "O1002: delivered May 2."]
