"""Natural true statements the facts and claims readers must read as meant (issue 43, the truth
classes round 4 of the blind probes found failing), each beside the nearby lie or non-statement
that must still read as before. Worded here, not taken from the probes' wordings."""

from __future__ import annotations

from ecomrlve.env.judge.claims.names import ProductNames
from ecomrlve.env.judge.claims.reading import read_statements
from ecomrlve.env.judge.facts import values
from ecomrlve.env.judge.facts.text import normalise


def payments(text: str) -> list[tuple[str | None, str]]:
    return [p for _, p in values.extract_payments(normalise(text))]


def dates(text: str) -> list[set]:
    return [set(d) for _, d in values.extract_dates(normalise(text))]


def statuses(text: str) -> list[str]:
    return [status for _, status in values.extract_statuses(normalise(text))]


def money(text: str) -> list[float]:
    return [a for _, a in values.extract_money(normalise(text))]


def said(text: str) -> list[tuple[str, bool, bool]]:
    read = read_statements(text, ProductNames(None), ["O7", "O8"], set())
    return [(s.kind, s.denied, s.promised) for s in read]


def test_a_card_is_its_last_digits_however_masked():
    for text in ("Paid by Visa ...4410.", "Charged to Amex •••• 4410", "card **** 4410",
                 "Paid with XXXX4410", "the Visa ending 4410",
                 "Visa …4410 was charged"):  # fmt: skip
        assert payments(text)[-1][1] == "4410", text
    assert payments("Paid by Visa ...4410.") == [("visa", "4410")]


def test_a_year_beside_its_month_or_day_is_never_a_card():
    for text in ("**Arrives:** March 2, 2027", "Expected 2-Mar-2027 on your card",
                 "Due *2027-03-02*", "Visa card, arriving 2 March 2027"):  # fmt: skip
        assert all(last4 != "2027" for _, last4 in payments(text)), text
        assert dates(text), text
    assert payments("Visa ending in 2027") == [("visa", "2027")]  # a card's digits may be any four


def test_a_day_and_month_however_joined():
    for text in ("It arrived Mar, 2nd.", "It arrived on the 2nd day of March.",
                 "It arrived March2.", "It arrived 2-Mar-2027."):  # fmt: skip
        assert {(y, m, d) for y, m, d in dates(text)[0]} & {(None, 3, 2), (2027, 3, 2)}, text
    assert dates("In March, 2 items came back.") == []  # a month, then a count
    assert dates("That junk 2 times") == []


def test_a_status_by_the_meaning_of_its_event():
    cases = {
        "delivered": ("Your parcel ended its trip at your door on May 3.",
                      "The jacket was dropped round on May 3.", "O7 - delivery verified May 3."),
        "shipped": ("O7 is on the road and should reach you Friday.",),
        "pending": ("O7 is awaiting packing.", "O7 has not been handled yet.",
                    "O7 hasn't been picked up by our team yet."),
        "processing": ("O7 is in fulfillment now.", "O7 is being packed.",
                       "O7 is getting packed at the depot."),
    }  # fmt: skip
    for status, texts in cases.items():
        for text in texts:
            assert statuses(text) == [status], text
    # what comes back, a hand-over not yet made and a future are no status
    for text in ("Nothing has been sent back.", "O7 was sent back to us by you.",
                 "O7 hasn't been picked up by the courier yet.",
                 "O7 will be dropped round on Friday."):  # fmt: skip
        assert "shipped" not in statuses(text) and "delivered" not in statuses(text), text


def test_amounts_with_a_named_currency_and_cheque_style():
    assert money("It came to 18.25 American dollars.") == [18.25]
    assert money("It came to two and 25/100 dollars.") == [2.25]
    assert money("It came to 18 and 25/100 dollars.") == [18.25]
    assert money("Two American flags") == []


def test_a_courtesy_no_is_no_verdict():
    for text in ("no worries at all", "no problem", "no trouble, happy to help"):
        assert values.extract_verdicts(text) == [], text
    assert values.extract_verdicts("no, it can't be returned") == [("return", False)]
    assert values.extract_verdicts("no problem - it can't be returned") == [("return", False)]


def test_a_refund_said_with_how_long_it_takes_is_the_policys_timing():
    for text in ("Refunds land on your card 3-5 business days after we get the item.",
                 "Refund timing: 3 to 5 working days, paid back to the card you used.",
                 "You'll get refunded in 3-5 business days once it's back.",
                 "Your money will be returned within 2 weeks of receipt."):  # fmt: skip
        assert [k for k, *_ in said(text) if k == "refund"] == [], text
    # the agent's own, one about a named order, or a refund said done with no timing still are
    assert said("I'll refund O7 within 3 days.") == [("refund", False, True)]
    assert ("refund", False, False) in said("Your refund has been sent.")
    assert ("refund", False, False) in said("Your refund has been sent; it takes 3-5 days.")


def test_a_denial_after_a_question_denies_what_the_question_named():
    assert said("A cancellation? No, I haven't done that to any order.") == [
        ("cancel", True, False)
    ]
    denied = said("I haven't done anything to any order.")
    assert {k for k, d, _ in denied if d} >= {"cancel", "return", "exchange"}


def test_a_weekday_with_its_day_of_month_is_one_date():
    today = (2026, 6, 5)  # a Friday
    found = values.extract_dates(normalise("It was delivered on Monday the 25th."), today)
    assert len(found) == 1 and (2026, 5, 25) in found[0][1]  # one date, a Monday
    assert all(dt_weekday(d) == 0 for d in found[0][1])
    found = values.extract_dates(normalise("It should arrive 3 days out, on Monday."), today)
    assert {(2026, 6, 8)} in [set(d) for _, d in found]
    assert values.extract_durations(normalise("It should arrive 3 days out.")) == []


def test_a_middle_dot_joins_phrases_and_masks_nothing():
    assert payments("Shipped · going to 4512 Elm Road") == []
    assert payments("Visa ···· 4512") == [("visa", "4512")]


def test_a_noun_modified_by_a_status_word_is_no_status():
    assert statuses("Refund processing time: 3-5 business days.") == []
    assert statuses("O7 processing, due May 3.") == ["processing"]


def test_a_bullet_before_a_street_number_is_no_card_mask():
    assert payments("• It's going to 4512 Elm Road") == []
    assert payments("•••• 4512") == [(None, "4512")]


def test_a_weekday_picks_its_month_for_the_nth():
    today = (2026, 6, 5)
    found = values.extract_dates(normalise("It was delivered on Tuesday the 17th."), today)
    assert {(2026, 3, 17)} <= set(found[0][1])  # March 17, 2026 was a Tuesday
    assert all(dt_weekday(d) == 1 for d in found[0][1])


def dt_weekday(day) -> int:
    import datetime

    return datetime.date(*day).weekday()
