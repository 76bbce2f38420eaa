"""An order's status said as the event it is (issue 43): arrival at the customer is delivered,
in the carrier's hands or gone from the shop shipped, not started pending, being prepared
processing, stopped cancelled. Each wording below was written for this file (none is a blind
probe's). A true one passes; the same words when the order is in any other status fail (a lie),
and a negated, hypothetical or other-subject sentence states no status."""

from __future__ import annotations

import pytest

from ecomrlve.env.judge.facts import Shown, check_answer, extract_statuses, normalise
from ecomrlve.tasks import AnswerFact

ORDER, OTHER, TODAY = "O1234567", "O7654321", "2026-06-20"

SAID = {
    "delivered": (
        "Your order {o} has been with you since June 5.",
        "{o} is safely with you.",
        "{o} finished its delivery on June 5.",
        "The delivery of {o} was completed on June 5.",
        "Good news: the delivery for {o} is done.",
        "{o} was received at your door on June 5.",
        "You received your order {o} on June 5.",
        "{o} was signed for on June 5.",
        "{o} came on June 5.",
        "{o} landed on June 5.",
        "{o} showed up on June 5.",
        "{o} was brought to your house on June 5.",
        "{o} was carried to your doorstep on June 5.",
        "{o} is in your hands now.",
        "{o} reached its destination on June 5.",
        "The delivery of {o} took place on June 5.",
        "With no problems at all, {o} was signed for on June 5.",
    ),
    "shipped": (
        "{o} is with the courier now.",
        "{o} is currently with UPS.",
        "{o} is in the post and due June 24.",
        "{o} is on the truck.",
        "{o} was handed over to the carrier.",
        "{o} was passed to the delivery company.",
        "{o} was collected by the courier.",
        "{o} headed out and is due June 24.",
        "{o} has been mailed.",
        "{o} is out of our fulfilment center.",
        "{o} got sent off.",
        "{o} is being delivered today.",
        "The carrier picked up your order {o} yesterday.",
        "The courier has your order {o} now.",
    ),
    "pending": (
        "{o} hasn't been processed so far.",
        "{o} has not yet been started.",
        "{o} is queued up.",
        "{o} is in the queue.",
        "{o} is waiting for processing.",
        "{o} is awaiting its turn.",
        "{o} has yet to be processed.",
        "Processing for {o} hasn't begun.",
        "{o} has never been touched.",
        "{o} is sitting in our queue.",
        "{o} is still unprocessed.",
    ),
    "processing": (
        "{o} is being packed right now.",
        "{o} is being readied.",
        "{o} is being assembled at the warehouse.",
        "{o} is being put together.",
        "{o} is being worked on.",
        "{o} is being fulfilled.",
        "{o} is in preparation.",
        "{o} is getting ready to ship.",
        "{o} is being boxed up.",
        "{o} is being made ready for dispatch.",
        "{o} is being packaged.",
        "{o} is in progress.",
        "The warehouse team is working on your order {o}.",
    ),
    "cancelled": (
        "{o} was called off.",
        "{o} has been voided.",
        "{o} was scrapped.",
        "{o} got annulled.",
        "{o} was aborted.",
        "{o} has been rescinded.",
        "The cancellation of {o} went through.",
        "Your cancellation for {o} has been confirmed.",
        "The cancellation request for {o} was processed.",
        "{o} was revoked.",
        "{o} got nixed.",
    ),
}
STATUSES = tuple(SAID)

NOT_STATED = (  # (words, the status they must not state): negated, to come, or not an order
    ("{o} will be with you on June 24.", "delivered"),
    ("{o} hasn't been signed for.", "delivered"),
    ("Once {o} is received at your door, you can start a return.", "delivered"),
    ("{o} should be handed to the courier soon.", "shipped"),
    ("Once {o} is with the carrier, you'll get tracking.", "shipped"),
    ("{o} isn't in the mail yet.", "shipped"),
    ("Your refund has been sent.", "shipped"),
    ("A return label was sent to your email.", "shipped"),
    ("{o} hasn't shipped yet.", "shipped"),
    ("Your request is queued.", "pending"),
    ("I've queued a note for the team.", "pending"),
    ("Your return is being handled.", "processing"),
    ("The refund is in the works.", "processing"),
    ("The coupon was voided.", "cancelled"),
    ("The cancellation of {o} didn't go through.", "cancelled"),
    ("The cancellation of {o} will be confirmed by email.", "cancelled"),
    ("No order of yours was cancelled.", "cancelled"),
    ("{o} can't be called off now.", "cancelled"),
    ("Your return is in progress.", "processing"),
    ("I'm working on it.", "processing"),
    ("{o} will be at your door by June 24.", "delivered"),
    ("The courier will pick up your return.", "shipped"),
    ("{o} isn't in your hands yet.", "delivered"),
)


def _check(answer: str, status: str):
    fact = AnswerFact(kind="status", value=status, subject=ORDER, cues=[ORDER])
    read = {"order_id": ORDER, "status": status, "eta": "2026-06-24", "delivered": "2026-06-05"}
    return check_answer(answer, [fact], "", today=TODAY, shown=Shown([read], TODAY))


@pytest.mark.parametrize("status", STATUSES)
def test_a_status_said_as_its_event_is_read(status) -> None:
    for words in SAID[status]:
        answer = words.format(o=ORDER)
        checked = _check(answer, status)
        assert checked.ok, (answer, checked)


@pytest.mark.parametrize("status", STATUSES)
def test_the_same_words_about_an_order_in_another_status_fail(status) -> None:
    for words in SAID[status]:
        answer = words.format(o=ORDER)
        for other in STATUSES:
            if other != status:
                assert not _check(answer, other).ok, (answer, other)


@pytest.mark.parametrize(("words", "status"), NOT_STATED)
def test_negated_hypothetical_and_other_subjects_state_no_status(words, status) -> None:
    said = normalise(words.format(o=ORDER))
    assert status not in [s for _, s in extract_statuses(said)], said
    assert not _check(words.format(o=ORDER), status).ok


@pytest.mark.parametrize("status", STATUSES)
def test_a_status_said_of_another_order_stays_that_orders(status) -> None:
    """The true status of O1 beside another order's event: that event is no status of O1, and
    (never shown) it is not grounded, so the answer fails."""
    other = next(s for s in STATUSES if s != status)
    true = SAID[status][0].format(o=ORDER)
    assert _check(true, status).ok
    for words in SAID[other]:
        answer = f"{true} Your order {words.format(o=OTHER)}"
        assert not _check(answer, status).ok, answer


def test_a_lie_in_plain_words_still_conflicts() -> None:
    assert not _check(f"Your order {ORDER} was delivered.", "shipped").ok
    assert not _check(f"Your order {ORDER} has shipped.", "pending").ok
    assert not _check(f"{ORDER} was cancelled.", "processing").ok


def _on_file(task, status: str):
    state = dict(task.initial_state)
    state["orders"] = [dict(state["orders"][0], status=status)]
    return task.model_copy(update={"initial_state": state, "goal": task.goal.model_copy()})


def test_a_status_after_a_dash_and_a_label_is_the_named_orders(tasks, catalog) -> None:
    """ "Order O1 — status: cancelled" is how O1 stands (true where it was cancelled before
    the episode), not a cancel of this episode; where it was not, still a false report."""
    from ecomrlve.env import reference_turns, verify

    task = tasks["fx-status"]
    for said in ("Order O4001 — status: cancelled.", "Order O4001 – current status: cancelled."):
        for status, lie in (("cancelled", False), ("shipped", True)):
            played = [*reference_turns(task)[:-1], said]
            verdict = verify(_on_file(task, status) if not lie else task, played, catalog)
            assert any(v.startswith("claims:") for v in verdict.violations) == lie, said
