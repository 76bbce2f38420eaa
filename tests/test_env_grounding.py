"""Every value a final answer states is grounded; context facts are optional; the kind registry.

Issue 27, items 2, 3 and 8: a value of any kind (date, money, percent, duration, status,
payment method, street address) must be a target or allowed value of the task, a value of the
prompt, today, the customer's details or a value a successful tool call of the episode showed
— hedged lists and invented values fail, in tasks with and without facts. Context facts
(`required=False`) may be left out but never contradicted. Hand-written answers of both kinds
per rule, over `check_answer` and over replayed episodes of generated tasks.
"""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ecomrlve.env import EcomEnv, format_call, reference_turns, verify
from ecomrlve.env.judge.facts import KINDS, AnswerPlan, Kind, Shown, check_answer, register
from ecomrlve.generators import GenContext, generate_task
from ecomrlve.generators.difficulty import MAX_DIFFICULTY
from ecomrlve.tasks import AnswerFact, Task
from ecomrlve.testing.reward_probes import (
    HEDGE_LIST,
    INVENTED,
    context_omitting,
    without_context,
)

SCENARIOS = ("policy", "order_status", "cancel", "return", "journey", "cart", "bundle",
             "product_discovery", "substitution")  # fmt: skip

NO_EVENTS = MAX_DIFFICULTY + 1  # events_from above every difficulty: a static shop


def fact(kind: str, value: str, **fields) -> AnswerFact:
    return AnswerFact(kind=kind, value=value, **fields)


@pytest.fixture(scope="module")
def ctx(small_catalog_dir) -> GenContext:
    return GenContext.load(small_catalog_dir)


@pytest.fixture(scope="module")
def tasks(ctx) -> list[Task]:
    """All nine scenarios x d 0, 3, 6, 9 x 3 indexes (seed 27), in a shop without world events
    (they change what the answer must say; tests/test_env_events.py covers them)."""
    out = []
    for scenario in SCENARIOS:
        for d in (0, 3, 6, 9):
            for i in range(3):
                task = generate_task(ctx, scenario, 27, d, i, events_from=NO_EVENTS)
                if task is not None:
                    out.append(task)
    return out


def _with_calls(task: Task, answer: str, ctx: GenContext):
    return verify(task, [*reference_turns(task)[:-1], answer], ctx.catalog)


# ---- the clause reader: correct answers the issue lists ---------------------------------------
EXCHANGE_CLOSED = [fact("verdict", "exchange:no"),
                   fact("duration", "30", allowed=["72", "42"], required=False)]  # fmt: skip
RETURN_OPEN = [
    fact("verdict", "return:yes"),
    fact("duration", "30", allowed=["17", "13"], required=False),
    fact("duration", "13", allowed=["17", "13"], required=False),
]
FINAL_SALE = [fact("verdict", "return:no"), fact("term", "final_sale", required=False)]

MUST_PASS = [
    ("Unfortunately not: exchanges follow the return window\u2026 72 days have passed.",
     EXCHANGE_CLOSED),
    ("An exchange isn't possible: exchanges are only possible within the 30-day return window, "
     "which closed 42 days ago.", EXCHANGE_CLOSED),
    ("An exchange isn\u2019t possible any more, I'm afraid.", EXCHANGE_CLOSED),
    ("I'm afraid not. The window closed 42 days ago.", EXCHANGE_CLOSED),
    ("Sadly, no: it is no longer eligible for an exchange.", EXCHANGE_CLOSED),
    ("Sorry, coffee is a final-sale item.", FINAL_SALE),
    ("No, it can't be returned: coffee is final sale.", FINAL_SALE),
    ("No, it can't be returned. Good luck with the next one!", FINAL_SALE),
    ("Sure! It's still within the window.", RETURN_OPEN),
    ("Yes, it's within the 30-day window, delivered 17 days ago.", RETURN_OPEN),
    ("Yes, you can still return it.", RETURN_OPEN),
    ("Yes: you have 13 more days.", RETURN_OPEN),
]  # fmt: skip

MUST_FAIL = [
    ("Yes, you can exchange it.", EXCHANGE_CLOSED),  # the opposite verdict
    ("Unfortunately not: the 45-day window closed.", EXCHANGE_CLOSED),  # a context value wrong
    ("The exchange window is 30 days.", EXCHANGE_CLOSED),  # context only, no verdict
    ("Sure, you can return it: it's a final-sale item.", FINAL_SALE),  # both polarities
    ("It's within the 30-day window.", RETURN_OPEN),  # the asked verdict left out
    ("Yes, you can return it, you have 20 more days.", RETURN_OPEN),  # a conflicting context
    ("Unfortunately not: it can no longer be returned.", RETURN_OPEN),
    # the right verdict for a reason this shop does not have (another shop's policy book)
    ("Unfortunately bedding items are final sale, so it can't be exchanged.", EXCHANGE_CLOSED),
]  # fmt: skip


@pytest.mark.parametrize(("answer", "facts"), MUST_PASS)
def test_issue_answers_and_their_rephrasings_pass(answer, facts) -> None:
    checked = check_answer(answer, facts)
    assert checked.ok, (answer, checked)


@pytest.mark.parametrize(("answer", "facts"), MUST_FAIL)
def test_wrong_or_unasked_only_answers_fail(answer, facts) -> None:
    assert not check_answer(answer, facts).ok, answer


def test_context_facts_left_out_are_listed_but_not_missing() -> None:
    checked = check_answer("Yes, you can still return it.", RETURN_OPEN)
    assert checked.ok and not checked.missing
    assert checked.unstated == ["duration '30'", "duration '13'"]


def test_old_rows_load_as_required() -> None:
    loaded = AnswerFact.model_validate({"kind": "duration", "value": "30"})
    assert loaded.required is True


# ---- grounding --------------------------------------------------------------------------------
SHOWN = [
    "4120 Oak St, Springfield, OH",
    "visa-1234",
    {"order_id": "O1", "status": "delivered", "delivered": "2026-06-03", "total": 45.98},
    {"policies": [{"text": "Refunds take 5 to 7 business days; a 10% restocking fee applies."}]},
    {"item_id": "I1", "price": 19.99, "stock": 83, "window_days": 30},
]

GROUNDED = [
    "Your order was delivered on June 3, 12 days ago.",  # a date shown; days since it
    "It cost $45.98 and went to 4120 Oak Street.",
    "Refunds take 5 to 7 business days, with a 10% restocking fee.",
    "You paid with your Visa ending in 1234; the item is $19.99 and the window is 30 days.",
    "As of today, June 15, you asked about a $50 budget.",  # today, a value of the prompt
]
UNGROUNDED = [
    "Your order was delivered on June 4.",
    "It arrives June 3 and shipping is $12.",
    "It has shipped.",  # the status shown is delivered
    "Refunds take 3 to 5 business days.",
    "There's a 15% restocking fee.",
    "You paid with your Mastercard ending in 1234.",
    "It ships to 12 Pine Lane.",
    "It cost $83.",  # a stock count is no price
    "The return window is 83 days.",  # nor a duration
    "free, 30 days, 0%, final sale, it can not be returned",
]


@pytest.mark.parametrize("answer", GROUNDED)
def test_values_the_episode_showed_are_grounded(answer) -> None:
    checked = check_answer(
        answer, [], "Anything under $50?", today="2026-06-15", shown=Shown(SHOWN, "2026-06-15")
    )
    assert checked.ok, (answer, checked)


@pytest.mark.parametrize("answer", UNGROUNDED)
def test_values_nothing_showed_fail(answer) -> None:
    checked = check_answer(
        answer, [], "Anything under $50?", today="2026-06-15", shown=Shown(SHOWN, "2026-06-15")
    )
    assert checked.ungrounded, answer


def test_a_date_the_request_names_grounds_only_the_nearest_years() -> None:
    prompt = "Where is the lamp I ordered on December 30?"
    shown = Shown([], "2026-03-01")
    said = check_answer("You ordered it on December 30.", [], prompt, (), "2026-03-01", shown)
    other_year = check_answer("It arrives December 30, 2031.", [], prompt, (), "2026-03-01", shown)
    assert said.ok and other_year.ungrounded == ["date 12-30"]


def test_without_shown_only_checked_kinds_are_read() -> None:
    """Callers that pass no `Shown` (fact-only checks) keep the old reading."""
    assert check_answer("It arrives June 3 and costs $12.", []).ok


def test_checked_kinds_are_not_grounded_by_observations() -> None:
    """A dump of every order's dates stays a conflict, even though the tools showed them."""
    facts = [fact("date", "2026-06-03", subject="O1", cues=["O1"])]
    shown = Shown([{"placed": "2026-05-20", "delivered": "2026-06-03"}], "2026-06-15")
    checked = check_answer("Delivered June 3 (placed May 20).", facts, shown=shown)
    assert checked.conflicts == ["date 05-20"]


# ---- replayed episodes ------------------------------------------------------------------------
def test_references_pass_and_say_nothing_ungrounded(tasks, ctx) -> None:
    for task in tasks:
        verdict = verify(task, reference_turns(task), ctx.catalog)
        assert verdict.success, (task.task_id, verdict.violations)
        assert "ungrounded" not in verdict.answer


def test_hedge_list_after_the_reference_calls_fails(tasks, ctx) -> None:
    with_facts = [t for t in tasks if t.goal.answer_facts]
    passed = [t.task_id for t in with_facts if _with_calls(t, HEDGE_LIST, ctx).success]
    assert len(passed) <= 0.02 * len(with_facts) + 1, passed


@pytest.mark.parametrize("kind", sorted(INVENTED))
def test_an_invented_value_of_any_kind_fails_every_task(tasks, ctx, kind) -> None:
    """Including tasks without facts: a cart task that invents a delivery date or a fee."""
    for task in tasks:
        answer = f"{reference_turns(task)[-1]} {INVENTED[kind]}"
        verdict = _with_calls(task, answer, ctx)
        assert not verdict.success, (task.task_id, answer)
        assert any("nothing showed" in v or "conflicting" in v for v in verdict.violations)


def test_cart_task_inventing_a_delivery_date_fails_and_the_shown_total_passes(tasks, ctx) -> None:
    cart = next(t for t in tasks if t.scenario == "cart" and not t.goal.answer_facts)
    env = EcomEnv(cart, ctx.catalog)
    env.reset()
    for turn in reference_turns(cart)[:-1]:
        env.step(turn)
    totals = [r["total"] for r in env.record.shown if isinstance(r, dict) and "total" in r]
    answer = reference_turns(cart)[-1]
    assert totals, "checkout shows the order total"
    assert _with_calls(cart, f"{answer} The total was ${totals[-1]:.2f}.", ctx).success
    invented = _with_calls(cart, f"{answer} It will arrive June 3, with $12 shipping.", ctx)
    assert not invented.success
    assert set(invented.answer["ungrounded"]) >= {"money 12.0"}


def test_failed_calls_show_nothing(tasks, ctx) -> None:
    task = tasks[0]
    env = EcomEnv(task, ctx.catalog)
    env.reset()
    env.step(format_call("get_order", {"order_id": "O0000000"}))
    assert env.record.shown == [] and not env.record.calls[0].ok


def test_context_omitting_answers_pass(tasks, ctx) -> None:
    with_facts = [t for t in tasks if t.goal.answer_facts]
    assert any(not f.required for t in with_facts for f in t.goal.answer_facts)
    for task in with_facts:
        for answer in [without_context(task), *(context_omitting(task, k) for k in range(3))]:
            verdict = _with_calls(task, answer, ctx)
            assert verdict.success, (task.task_id, answer, verdict.violations)


def test_leaving_out_a_required_fact_fails(tasks, ctx) -> None:
    tried = failed = 0
    for task in [t for t in tasks if t.goal.answer_facts]:
        required = [f for f in task.goal.answer_facts if f.required and f.kind != "text"]
        if not required:
            continue
        dropped = required[-1]
        short = task.goal.model_copy(
            update={"answer_facts": [f for f in task.goal.answer_facts if f is not dropped]}
        )
        verdict = _with_calls(task, context_omitting(task.model_copy(update={"goal": short})), ctx)
        tried += 1
        if not verdict.success:
            failed += 1
            assert any("does not state" in v for v in verdict.violations), verdict.violations
    # a sibling's sentence may state the dropped fact too ("final sale" is also return:no)
    assert tried >= 20 and failed >= 0.8 * tried, (failed, tried)


def _grounded_extras(task: Task, ctx: GenContext) -> list[str]:
    """Sentences whose values are grounded: today, and an amount a reference call showed
    (where money is not a kind the facts check: checked kinds allow only their targets)."""
    today = dt.date.fromisoformat(task.initial_state["today"])
    extras = [f"As of today, {today:%B} {today.day}, that's everything.", "Thanks for asking!"]
    if all(f.kind != "money" for f in task.goal.answer_facts):
        env = EcomEnv(task, ctx.catalog, transcript=False)
        env.reset()
        for turn in reference_turns(task)[:-1]:
            env.step(turn)
        shown = [r for r in env.record.shown if isinstance(r, dict)]
        amounts = [r[k] for r in shown for k in ("price", "total", "subtotal") if k in r]
        extras += [f"That came to ${amount:.2f}." for amount in amounts[:2]]
    return extras


def _invented(kind: str, n: int, task: Task) -> str:
    """A sentence stating a value of `kind` out of reach of every generated task: amounts
    beyond any order, dates of another year, durations beyond any order's age, rates above
    any policy's, card digits of no card in the task."""
    if kind == "money":
        return f"You also get ${10_000 + n / 100:,.2f} back."
    if kind == "date":
        day = dt.date(2029, 1, 1) + dt.timedelta(days=n % 365)
        return f"It arrives on {day:%B} {day.day}, 2029."
    if kind == "duration":
        return f"It takes {3000 + n % 800} days."  # (200 days can be two shown dates apart)
    if kind == "percent":
        return f"You get a {41 + n % 59}% discount."
    if kind == "payment":
        last4 = f"{n % 10_000:04d}"
        if last4 in str(task.initial_state):
            last4 = "0000" if "0000" not in str(task.initial_state) else "9999"
        return f"It was charged to your Mastercard ending in {last4}."
    return f"It ships to {1 + n % 9000} Nowhere Lane."


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow,
          HealthCheck.function_scoped_fixture])  # fmt: skip
@given(data=st.data())
def test_property_appending_ungrounded_fails_and_grounded_keeps_passing(tasks, ctx, data) -> None:
    task = data.draw(st.sampled_from(tasks))
    kind = data.draw(st.sampled_from(sorted(INVENTED)))
    invented = _invented(kind, data.draw(st.integers(0, 10**6)), task)
    answer = reference_turns(task)[-1]
    for extra in (invented, INVENTED[kind]):
        verdict = _with_calls(task, f"{answer} {extra}", ctx)
        assert not verdict.success, (task.task_id, extra)
    extra = data.draw(st.sampled_from(_grounded_extras(task, ctx)))
    verdict = _with_calls(task, f"{answer} {extra}", ctx)
    assert verdict.success, (task.task_id, extra, verdict.violations)


# ---- the registry -----------------------------------------------------------------------------
def test_registering_a_kind_twice_raises() -> None:
    with pytest.raises(ValueError, match="registered twice"):
        register(KINDS["date"])


def test_a_new_kind_is_one_class() -> None:
    class Colour(Kind):
        name = "colour_test"

        def extract(self, text, reading):
            return [(text.find(w), w) for w in ("red", "blue", "green") if w in text]

    register(Colour())
    try:
        # `kind` is a Literal of the task schema: a test kind skips validation
        red = AnswerFact.model_construct(**{**fact("date", "2026-06-16").__dict__,
                                            "kind": "colour_test", "value": "red"})  # fmt: skip
        plan = AnswerPlan([red])
        assert check_answer("It comes in red.", plan).ok
        assert check_answer("It comes in red or blue.", plan).conflicts == ["colour_test blue"]
        assert check_answer("It comes in green.", plan).missing
    finally:
        del KINDS["colour_test"]
