"""Evidence, not knowledge (issue 43): a value the final message states counts only if the
episode made it known, in whatever words a customer would use.

Trajectories that try to get paid without doing the task (the reference answer after its
look-ups are replaced by one unrelated search, a return/cancel reason listing every complaint, a
date hedged with today or the placed date) fail; correct answers phrased differently (amounts
in words, "reached you on", the checkout's own order number/total/arrival, a refund timing
from the policy read, a price change the agent never saw left untold) pass. The probes are
`ecomrlve.testing.evidence_probes`, also run at scale by `benchmarks/reward_probes.py`.
"""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ecomrlve.env import Catalog
from ecomrlve.env.judge.facts import Shown, check_answer, extract_money, normalise
from ecomrlve.env.judge.verifier import customers_reason
from ecomrlve.generators import GenContext, generate_task
from ecomrlve.tasks import AnswerFact, Task
from ecomrlve.testing import evidence_probes as probes

SCENARIOS = ("policy", "order_status", "cancel", "return", "journey", "cart", "bundle",
             "product_discovery", "substitution")  # fmt: skip
TODAY = "2026-06-20"


@pytest.fixture(scope="module")
def catalog(small_catalog_dir) -> Catalog:
    return Catalog.load(small_catalog_dir)


@pytest.fixture(scope="module")
def tasks(small_catalog_dir) -> list[Task]:
    """Nine scenarios x d 0, 4, 8, 10 x 3 indexes (seed 43), world events on from d 8."""
    ctx = GenContext.load(small_catalog_dir)
    out = []
    for scenario in SCENARIOS:
        for d in (0, 4, 8, 10):
            for i in range(3):
                task = generate_task(ctx, scenario, 43, d, i)
                if task is not None:
                    out.append(task)
    return out


# statuses the claims reader (ecomrlve/env/claims, not this reader) takes for reports of a
# write: "was dropped off on" (a remove), "shows as cancelled" (a cancel)
CLAIMS_SIDE = frozenset({"status: was dropped off on", "status: shows as cancelled"})


def _facts_side(violations: list[str]) -> list[str]:
    return [x for x in violations if x.startswith("goal:")]


@pytest.mark.parametrize("name", list(probes.CLASSES))
def test_each_probe_class(name, tasks, catalog) -> None:
    build, must_pass = probes.CLASSES[name]
    verdicts = []
    for task in tasks:
        probe = build(task, catalog)
        if probe is not None:
            played, turns = probe
            verdicts.append((task.task_id, probes.verify(played, turns, catalog)))
    if not verdicts:
        pytest.skip(f"no task of this set fits {name!r}")
    if name in CLAIMS_SIDE:  # the facts are read right; the claims reader still misreads them
        wrong = [(t, v.violations[:2]) for t, v in verdicts if _facts_side(v.violations)]
    else:
        wrong = [(t, v.violations[:2]) for t, v in verdicts if v.success != must_pass]
    assert not wrong, f"{name}: {len(wrong)}/{len(verdicts)} judged wrongly: {wrong[:3]}"


# ---- the rules, by hand --------------------------------------------------------------------
def _fact(kind: str, value: str, **fields) -> AnswerFact:
    return AnswerFact(kind=kind, value=value, **fields)


ORDER = "O1234567"
STATUS = _fact("status", "shipped", subject=ORDER, cues=[ORDER])
ARRIVAL = _fact("date", "2026-06-24", subject=ORDER, cues=[ORDER], role="arrival")
SAID = f"Your order {ORDER} has shipped and should arrive on June 24."


def _shown(*items) -> Shown:
    return Shown(list(items), TODAY)


def test_a_goal_fact_counts_only_once_the_episode_showed_it() -> None:
    facts = [STATUS, ARRIVAL]
    unread = check_answer(SAID, facts, "Where is my order?", today=TODAY, shown=_shown())
    assert not unread.ok and unread.ungrounded
    # shown of another order: still not evidence about this one
    other = {"order_id": "O7654321", "status": "shipped", "eta": "2026-06-24"}
    assert not check_answer(SAID, facts, "", today=TODAY, shown=_shown(other)).ok
    read = {"order_id": ORDER, "status": "shipped", "eta": "2026-06-24"}
    assert check_answer(SAID, facts, "", today=TODAY, shown=_shown(read)).ok


def test_a_verdict_needs_the_policy_read() -> None:
    facts = [_fact("verdict", "cancel:yes")]
    answer = "Yes, an order that is still processing can be cancelled."
    unread = Shown([], TODAY, policies=["POL-001"])
    assert not check_answer(answer, facts, "", today=TODAY, shown=unread).ok
    read = Shown([{"policies": [{"policy_id": "POL-001", "text": "..."}]}], TODAY,
                 policies=["POL-001"])  # fmt: skip
    assert check_answer(answer, facts, "", today=TODAY, shown=read).ok


def _days_before(days: int) -> str:
    return (dt.date.fromisoformat(TODAY) - dt.timedelta(days=days)).isoformat()


RETURNS_ROW = {"policies": [{"policy_id": "POL-002", "text": "Returns of t-shirts for plus "
               "members: accepted within 135 days of delivery for a full refund. A restocking "
               "fee of 15% applies to opened items."}]}  # fmt: skip


def test_a_window_needs_the_policy_read_not_a_date_that_far_back() -> None:
    facts = [_fact("duration", "135", role="window")]
    answer = "You have 135 days from delivery to return t-shirts."
    # an order placed 135 days ago, another 60: neither the elapsed days nor their difference
    # (75) is a return window
    orders = {"orders": [{"order_id": ORDER, "placed": _days_before(135)},
                         {"order_id": "O7654321", "placed": _days_before(60)}]}  # fmt: skip
    assert not check_answer(answer, facts, "", today=TODAY, shown=_shown(orders)).ok
    shorter = [_fact("duration", "75", role="window")]
    said = "Returns are accepted for 75 days after delivery."
    assert not check_answer(said, shorter, "", today=TODAY, shown=_shown(orders)).ok
    assert check_answer(answer, facts, "", today=TODAY, shown=_shown(orders, RETURNS_ROW)).ok
    # the days left are worked out from the window read and the delivery date shown
    left = [*facts, _fact("duration", "35", role="left")]
    delivered = {"orders": [{"order_id": ORDER, "delivered": _days_before(100)}]}
    both = f"{answer} That leaves you 35 more days."
    assert check_answer(both, left, "", today=TODAY, shown=_shown(delivered, RETURNS_ROW)).ok


def test_a_fee_on_an_item_needs_the_policy_read() -> None:
    item = "I0016107"
    facts = [_fact("percent", "15", subject=item, cues=["smartphone"])]
    answer = "Returning the smartphone costs a 15% restocking fee."
    seen = {"orders": [{"order_id": ORDER, "items": [{"item_id": item, "title": "smartphone"}]}]}
    returned = {"ok": True, "order_id": ORDER, "item_id": item, "refund": 496.39}
    unread = _shown(seen, returned)
    assert not check_answer(answer, facts, "", today=TODAY, shown=unread).ok
    assert check_answer(answer, facts, "", today=TODAY, shown=_shown(seen, RETURNS_ROW)).ok


@pytest.mark.parametrize("other", ["today", "June 18", "June 23"])
def test_hedged_alternatives_state_no_value(other) -> None:
    read = {"order_id": ORDER, "status": "shipped", "eta": "2026-06-24", "placed": "2026-06-18"}
    for answer in (
        f"Your order {ORDER} has shipped and should arrive either {other} or June 24.",
        f"Your order {ORDER} has shipped and should arrive June 24 or {other}.",
    ):
        checked = check_answer(answer, [STATUS, ARRIVAL], "", today=TODAY, shown=_shown(read))
        assert not checked.ok, answer


def test_a_refund_in_business_days_is_no_return_window() -> None:
    facts = [_fact("duration", "30", role="window")]
    policy = {"policies": [{"policy_id": "P", "text": "Returns are accepted within 30 days. "
                            "Refunds arrive within 7 to 10 business days."}]}  # fmt: skip
    answer = "You have 30 days to return it; the refund arrives within 7 to 10 business days."
    assert check_answer(answer, facts, "", today=TODAY, shown=_shown(policy)).ok
    wrong = "You have 30 days to return it; the refund arrives within 3 to 5 business days."
    assert not check_answer(wrong, facts, "", today=TODAY, shown=_shown(policy)).ok


def test_values_of_the_order_just_placed_are_judged_by_evidence() -> None:
    placed = {"ok": True, "order_id": "N0001", "total": 69.99, "eta": "2026-06-27"}
    read = {"order_id": ORDER, "status": "shipped", "eta": "2026-06-24"}
    answer = f"{SAID} Your new order is N0001; it came to $69.99 and arrives by June 27."
    shown = _shown(read, placed)
    assert check_answer(answer, [STATUS, ARRIVAL], "", today=TODAY, shown=shown).ok
    invented = answer.replace("June 27", "June 29")
    assert not check_answer(invented, [STATUS, ARRIVAL], "", today=TODAY, shown=shown).ok


@given(st.integers(min_value=0, max_value=99_999), st.integers(min_value=0, max_value=1))
def test_amounts_in_words_read_as_amounts(cents, variant) -> None:
    dollars = cents / 100
    said = f"You paid {probes.say_amount(dollars, variant)} for it."
    assert [round(x, 2) for _, x in extract_money(normalise(said))] == [round(dollars, 2)]


@pytest.mark.parametrize(
    ("given_reason", "ok"),
    [
        ("it doesn't fit", True),
        ("Customer says it doesn't fit", True),
        ("doesn't fit", True),
        (probes.EVERY_COMPLAINT, False),
        ("it doesn't fit and it arrived damaged", False),
        ("customer request", False),
    ],
)
def test_a_reason_is_the_customers(given_reason, ok) -> None:
    prompt = "Please return the jeans from my May order, it doesn't fit."
    assert customers_reason(given_reason, "it doesn't fit", prompt) is ok


def test_a_fee_on_one_item_is_no_verdict_on_a_final_sale_item_of_its_order() -> None:
    order = "O2222222"
    jeans, coffee = "I0000001", "I0000002"
    facts = [
        _fact("percent", "5", subject=jeans, cues=[order, jeans, "jeans"]),
        _fact("verdict", "return:no", subject=coffee, cues=[order, coffee, "coffee beans"]),
        _fact("term", "final_sale", subject=coffee, cues=[order, coffee, "coffee beans"]),
    ]
    shown = Shown(
        [{"order_id": order, "items": [{"item_id": jeans}, {"item_id": coffee}]},
         {"policies": [{"policy_id": "P1", "text": "A restocking fee of 5% applies."}]}],
        TODAY, policies=["P1"],
    )  # fmt: skip
    for answer in (
        "Yes, there is a 5% restocking fee on the jeans. The coffee beans can't be returned: "
        "they are final sale.",
        f"Yes, there is a 5% restocking fee on the jeans from order {order}. The coffee beans "
        "can't be returned: they are final sale.",
    ):
        assert check_answer(answer, facts, "", today=TODAY, shown=shown).ok, answer
    wrong = "Yes, you can return the coffee beans. There is a 5% restocking fee on the jeans."
    assert not check_answer(wrong, facts, "", today=TODAY, shown=shown).ok


# ---- fresh wordings, ten or more of each (issue 43, the round after the blind probes) ------
# Written for these tests, none of them the blind set's: hedges by any word of doubt, statuses
# said as a movement, the checkout's own values in short forms. Each lie must fail, each truth
# pass.
READ = {"order_id": ORDER, "status": "shipped", "eta": "2026-06-24", "placed": "2026-06-18"}
ARRIVAL_BESIDE_PLACED = _fact(
    "date", "2026-06-24", subject=ORDER, cues=[ORDER], role="arrival",
    allowed=["2026-06-18"], allowed_roles=["placed"],
)  # fmt: skip
HEDGED = (  # the true date beside another by "or", a slash or a word of doubt
    "should arrive on June 24/today",
    "should arrive June 18/June 24",
    "should arrive on June 24, or possibly June 18",
    "should arrive June 24 (perhaps June 18)",
    "should arrive June 24, though it could have been today",
    "should arrive today, or else June 24",
    "should arrive today or maybe June 24",
    "should arrive June 18, though it might be June 24",
    "should arrive June 18, though it may be June 24",
    "should arrive June 24, or even today",
    "may have arrived today, or perhaps June 24",
    "should arrive around June 24 (possibly today)",
)
COMMITTED = (  # one date, or an "or" / a modal that offers no other value
    "should arrive on June 24",
    "should arrive on 6/24",
    "was placed June 18 and should arrive June 24",
    "should arrive on June 24, and you can track it or call us",
    "should arrive on June 24 at your door or in your mailbox",
    "should arrive on June 24 (a Wednesday)",
    "is due June 24; you could also pick it up at the depot",
    "should arrive June 24 and you may return it after that",
    "should arrive on June 24 or so we're told by the carrier",
    "should arrive June 24, so it might be worth keeping an eye out",
)


@pytest.mark.parametrize("said", HEDGED)
def test_a_date_offered_beside_another_states_none(said) -> None:
    answer = f"Your order {ORDER} has shipped and {said}."
    checked = check_answer(
        answer, [STATUS, ARRIVAL_BESIDE_PLACED], "", today=TODAY, shown=_shown(READ)
    )
    assert not checked.ok, answer


@pytest.mark.parametrize("said", COMMITTED)
def test_a_date_said_once_is_stated(said) -> None:
    answer = f"Your order {ORDER} has shipped and {said}."
    checked = check_answer(
        answer, [STATUS, ARRIVAL_BESIDE_PLACED], "", today=TODAY, shown=_shown(READ)
    )
    assert checked.ok, (answer, checked)


DELIVERED = (  # done, to the customer's place
    "made it to your door",
    "turned up on your porch",
    "came to your house last week",
    "was left at your front door",
    "wound up in your mailbox",
    "reached your doorstep",
    "got to you already",
    "was handed to you in person",
    "popped up on your doorstep",
    "landed in your letterbox",
    "showed up at your building's reception",
)
SHIPPED = (  # gone from the shop's place, or on the way to the customer's
    "has left our warehouse",
    "departed the warehouse this morning",
    "went out of our depot yesterday",
    "is heading your way",
    "is coming to you",
    "is travelling to your address",
    "is moving to your house now",
    "pulled out of our fulfilment centre",
    "rolled out of the distribution center",
    "is making its way to you",
    "exited our warehouse",
)
NOT_YET = (  # a movement to come, denied or of something else: no status
    "should get to you soon",
    "will make it to your door",
    "hasn't reached your doorstep",
    "has not left our warehouse yet",
    "will leave our warehouse tomorrow",
    "should head your way soon",
    "can be left at your door if you like",
    "is not coming to you",
    "reached the warehouse",  # a return that came back, no departure
    "may wind up in your mailbox",
)


@pytest.mark.parametrize("status", ["delivered", "shipped"])
def test_a_status_said_as_a_movement(status) -> None:
    fact = _fact("status", status, subject=ORDER, cues=[ORDER])
    shown = _shown({"order_id": ORDER, "status": status})
    for said in DELIVERED if status == "delivered" else SHIPPED:
        answer = f"Your order {ORDER} {said}."
        assert check_answer(answer, [fact], "", today=TODAY, shown=shown).ok, answer
    for said in (*NOT_YET, *(SHIPPED if status == "delivered" else DELIVERED)):
        answer = f"Your order {ORDER} {said}."
        assert not check_answer(answer, [fact], "", today=TODAY, shown=shown).ok, answer


CHECKOUT_SAID = (  # the order just placed, its number, total and arrival in short forms
    "Done! Order #N0001, {total}, ETA {eta}.",
    "Order #N0001 is in: {total}, arriving {eta}.",
    "Confirmation #N0001. You paid {total}; it arrives {eta}.",
    "Your new order (N0001) came to {total}. It should be with you by {eta}.",
    "N0001 placed. Charged: {total}. Expected: {eta}.",
    "Order no. N0001 - total {total} - delivery {eta}.",
    "Ref N0001: {total} total. ETA: {eta}.",
    "Order number N0001 went through. The total was {total} and it lands {eta}.",
    "Placed as #N0001. {total} was charged. Delivery by {eta}.",
    "We've got order #N0001 for {total}. Expect it {eta}.",
)


@pytest.mark.parametrize("template", CHECKOUT_SAID)
def test_the_checkouts_own_values_in_short_forms(template) -> None:
    placed = {"ok": True, "order_id": "N0001", "total": 69.99, "eta": "2026-06-27"}
    read = {"order_id": ORDER, "status": "shipped", "eta": "2026-06-24"}
    shown, facts = _shown(read, placed), [STATUS, ARRIVAL]
    true = f"{SAID} {template.format(total='$69.99', eta='June 27')}"
    checked = check_answer(true, facts, "", today=TODAY, shown=shown)
    assert checked.ok, (true, checked)
    for total, eta in (("$79.99", "June 27"), ("$69.99", "June 29")):
        invented = f"{SAID} {template.format(total=total, eta=eta)}"
        assert not check_answer(invented, facts, "", today=TODAY, shown=shown).ok, invented
