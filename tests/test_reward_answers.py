"""The reward means what it says: facts read by kind, cheat sheets and dumps fail, paraphrased
correct answers pass, read spam earns nothing, and every yes/no key agrees with the tools.

Three suites over generated tasks (the five scenarios with answer facts, d 0-10):
* paraphrases: each reference answer rewritten into other common formats must still pass
  (>= 95%);
* cheat sheets and dumps: a fixed policy cheat sheet, a dump of every status and date the
  order list shows, facts swapped between orders (<= 2% may pass);
* read spam: unrelated (and related) reads, then giving up, never earns more than 0.
"""

# ruff: noqa: E501  (tables of hand-written answers read best one per line)
from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ecomrlve.config import EnvConfig
from ecomrlve.env import EcomEnv, format_call, reference_turns, verify
from ecomrlve.env.judge import facts
from ecomrlve.env.judge.facts import check_answer, extract_dates, normalise
from ecomrlve.env.judge.verifier import MAX_ANSWER_CHARS
from ecomrlve.generators import GenContext, generate_task
from ecomrlve.tasks import AnswerFact, Task
from ecomrlve.testing.reward_probes import CHEAT_SHEET, SPAM_QUERIES, order_dump, paraphrase

FACT_SCENARIOS = ("policy", "order_status", "cancel", "return", "journey")


@pytest.fixture(scope="module")
def ctx(small_catalog_dir) -> GenContext:
    return GenContext.load(small_catalog_dir)


@pytest.fixture(scope="module")
def fact_tasks(ctx) -> list[Task]:
    """Tasks with answer facts: 5 scenarios x d 0-10 x 6 indexes (seed 21)."""
    tasks = []
    for scenario in FACT_SCENARIOS:
        for d in range(11):
            for i in range(6):
                task = generate_task(ctx, scenario, 21, d, i)
                if task is not None and task.goal.answer_facts:
                    tasks.append(task)
    return tasks


def _episode(task: Task, answer: str, ctx: GenContext, calls: list[str] | None = None):
    turns = calls if calls is not None else reference_turns(task)[:-1]
    return verify(task, [*turns, answer], ctx.catalog)


# ---- hand-written answers of both classes ---------------------------------------------------
def fact(kind: str, value: str, **fields) -> AnswerFact:
    return AnswerFact(kind=kind, value=value, **fields)


CORRECT = [
    ("It was paid with your PayPal account ending in 6458.", [fact("payment", "paypal-6458")]),
    ("You paid 498.99 USD for it.", [fact("money", "498.99")]),
    ("It cost you 498.99 dollars.", [fact("money", "498.99")]),
    ("Standard shipping is $0 for you.", [fact("money", "0.00")]),
    ("There is no charge for shipping.", [fact("money", "0.00")]),
    ("Shipping is free of charge.", [fact("money", "0.00")]),
    ("There's a five percent restocking fee.", [fact("percent", "5")]),
    ("No restocking fee applies.", [fact("percent", "0")]),
    ("You won't be charged a restocking fee.", [fact("percent", "0")]),
    ("It has a 45‑day return window.", [fact("duration", "45")]),
    ("You have forty-five days.", [fact("duration", "45")]),
    ("Refunds take five to seven business days.", [fact("duration", "5-7")]),
    ("Yes, you can cancel it.", [fact("verdict", "cancel:yes")]),
    ("No, the window has closed.", [fact("verdict", "exchange:no")]),
    ("It's past the return window, so it's not eligible for a return.", [fact("verdict", "return:no")]),
    ("It can no longer be exchanged.", [fact("verdict", "exchange:no")]),
    ("Unfortunately it's final sale.", [fact("verdict", "return:no"), fact("term", "final_sale")]),
    ("It has shipped, so I can't cancel it, but you can send it back once it arrives.",
     [fact("verdict", "cancel:no"), fact("term", "return_instead"), fact("status", "shipped")]),
    ("It arrived on the 16th of June.", [fact("status", "delivered"), fact("date", "2026-06-16")]),
    ("It's on its way and should be delivered on 6/16.", [fact("status", "shipped"), fact("date", "2026-06-16")]),
    ("It's in transit; expected June 16th, 2026.", [fact("status", "shipped"), fact("date", "2026-06-16")]),
    ("It's being processed and should reach you by 16 June.", [fact("status", "processing"), fact("date", "2026-06-16")]),
    ("Order O1 (placed June 3) was delivered June 16.",
     [fact("status", "delivered"), fact("date", "2026-06-16", allowed=["2026-06-03"])]),
    ("It's going to 4120 Oak Street, Springfield, OH.", [fact("address", "4120 Oak St, Springfield, OH")]),
]  # fmt: skip

WRONG = [
    ("Paid with visa-1234 and paypal-6458.", [fact("payment", "paypal-6458")]),
    ("It cost $498.99, or $12.99 with express shipping.", [fact("money", "498.99")]),
    ("Shipping is $4.99, or free.", [fact("money", "4.99")]),
    ("There's a 5% fee, 10% on electronics.", [fact("percent", "5")]),
    ("There's a 10% fee.", [fact("percent", "0")]),
    ("Windows are 14, 30 or 45 days.", [fact("duration", "45")]),
    ("Orders can be cancelled while pending. Once shipped, they can no longer be cancelled.",
     [fact("verdict", "cancel:yes")]),
    ("Yes, you can exchange it for another size or colour.", [fact("verdict", "exchange:no")]),
    ("Sure!", [fact("verdict", "return:no")]),
    ("Sure! It can't be returned.", [fact("verdict", "return:yes")]),
    ("Certainly. Yes, you can return it. No.", [fact("verdict", "return:no")]),
    ("It was delivered.", [fact("status", "shipped")]),
    ("Shipped. Dates: June 3, June 16, May 30.", [fact("status", "shipped"), fact("date", "2026-06-16")]),
    ("It will be delivered on June 16.", [fact("status", "delivered"), fact("date", "2026-06-16")]),
    ("It's going to 4120 Oak Street or 9 Elm Road.",
     [fact("address", "4120 Oak St, Springfield, OH")]),
]  # fmt: skip


# an opening "Sure!" / "Certainly," before the verdict is a greeting, not a yes
CORRECT += [
    ("Sure! Unfortunately it can't be returned.", [fact("verdict", "return:no")]),
    (
        "Certainly, let me check. It can no longer be cancelled since it has shipped.",
        [fact("verdict", "cancel:no")],
    ),
    ("Sure. You can still return it.", [fact("verdict", "return:yes")]),
    # the order's status said through its cancellation
    ("Cancellation confirmed for order O1.", [fact("status", "cancelled")]),
    ("Your cancellation has been processed.", [fact("status", "cancelled")]),
]
WRONG += [
    ("Cancellation confirmed for order O1.", [fact("status", "pending")]),
    ("The cancellation wasn't confirmed.", [fact("status", "cancelled")]),
]


@pytest.mark.parametrize(("answer", "facts"), CORRECT)
def test_correct_answers_in_other_formats_pass(answer, facts):
    checked = check_answer(answer, facts, known_addresses=["9 Elm Road, Dover, DE"])
    assert checked.ok, (answer, checked)


@pytest.mark.parametrize(("answer", "facts"), WRONG)
def test_conflicting_or_wrong_answers_fail(answer, facts):
    checked = check_answer(answer, facts, known_addresses=["9 Elm Road, Dover, DE"])
    assert not checked.ok, answer


def test_a_date_in_the_prompt_allows_that_date_only():
    facts = [fact("status", "delivered"), fact("date", "2026-05-25")]
    prompt = "Where is my order placed on May 22?"
    assert check_answer("Placed May 22, delivered May 25.", facts, prompt).ok
    dump = "Delivered. Dates: 2026-05-22, 2026-05-25, 2026-04-18."
    assert not check_answer(dump, facts, prompt).ok


def test_today_may_be_mentioned_but_no_other_date():
    facts = [fact("status", "shipped"), fact("date", "2026-06-18")]
    assert check_answer(
        "As of today, June 15, it has shipped; it arrives June 18.", facts, today="2026-06-15"
    ).ok
    assert not check_answer(
        "It has shipped; it arrives June 18 or June 20.", facts, today="2026-06-15"
    ).ok


def test_values_the_user_stated_are_allowed():
    facts = [fact("duration", "30"), fact("duration", "12")]
    prompt = "Can I still return the boots I received 18 days ago?"
    assert check_answer(
        "You got them 18 days ago; the window is 30 days: 12 days left.", facts, prompt
    ).ok
    assert not check_answer("The window is 30 days: 12 days left, or 60 days for plus.", facts, prompt).ok  # fmt: skip


@pytest.mark.parametrize(
    "answer",
    ["x" * 1400 + " 1e309 ٣٠ days", "Delivered 31/02, fee 1e309%", "١٢/٠٦ ３０ days", "\x00\ud7ff"],
)
def test_bad_input_never_raises_and_fails_with_a_reason(answer):
    facts = [fact("date", "2026-06-16"), fact("duration", "30"), fact("status", "delivered")]
    checked = check_answer(answer, facts)
    assert not checked.ok and checked.missing


def test_unreadable_dates_are_not_dates():
    assert extract_dates(normalise("on 31/02 and on February 30")) == []
    assert extract_dates(normalise("on 6/7")) != []


_NUMBERISH = st.lists(
    st.sampled_from(
        ["one", "tenth", "fifteen", "nineteenth", "canteen", "often", "phone", "someone", "ten",
         "forty-five", "twenty", "_one", "one_", "4", "days", " ", ",", ".", "-", "x", "ë", "١"]
    ),
    max_size=12,
).map("".join)  # fmt: skip


@given(st.one_of(_NUMBERISH, st.text(max_size=40)))
def test_the_number_word_hint_never_misses_a_number_word(text):
    """`normalise` skips alpha2digit unless the cheap hint matches: it must match every text
    the exact number-word pattern matches."""
    text = text.lower()
    assert not facts._NUMBER_WORD.search(text) or facts._NUMBER_HINT.search(text)


# ---- suites over generated tasks ------------------------------------------------------------
def test_paraphrased_reference_answers_pass(fact_tasks, ctx):
    changed = passed = 0
    failures = []
    for task in fact_tasks:
        reference = reference_turns(task)[-1]
        rewritten = paraphrase(reference)
        if rewritten == reference:
            continue
        changed += 1
        verdict = _episode(task, rewritten, ctx)
        passed += verdict.success
        if not verdict.success:
            failures.append((task.task_id, rewritten, verdict.violations))
    assert changed >= 200
    assert passed / changed >= 0.95, failures[:5]


def _history_beyond_the_task(task: Task) -> bool:
    """The history holds an order the task is not about (at d0-1 it may hold only the asked-about
    ones: then a dump of every order's status and dates is the honest answer, not a cheat)."""
    return any(o["order_id"] not in task.goal.relevant_ids for o in task.initial_state["orders"])


def test_cheat_sheets_and_dumps_do_not_pass(fact_tasks, ctx):
    passed = tried = 0
    winners = []
    for task in fact_tasks:
        first_calls = [turn for turn in reference_turns(task)[:-1]][:2]
        dumps = [order_dump(task)] if _history_beyond_the_task(task) else []
        for answer in (CHEAT_SHEET, *dumps):
            assert len(answer) <= MAX_ANSWER_CHARS
            verdict = _episode(task, answer, ctx, first_calls)
            tried += 1
            if verdict.success:
                passed += 1
                winners.append(task.task_id)
    assert tried >= 500
    assert passed / tried <= 0.02, winners[:10]


def test_facts_about_the_wrong_order_fail(fact_tasks, ctx):
    swapped = 0
    for task in fact_tasks:
        orders = list(dict.fromkeys(f.subject for f in task.goal.answer_facts if f.subject))
        facts = task.goal.answer_facts
        if task.scenario != "order_status" or len(orders) < 2:
            continue
        a, b = orders[:2]
        if {(f.kind, f.value) for f in facts if f.subject == a} == {
            (f.kind, f.value) for f in facts if f.subject == b
        }:
            continue
        answer = reference_turns(task)[-1].replace(a, "@@").replace(b, a).replace("@@", b)
        # the product nouns name the orders too: swap them as well
        nouns = {s: next(f.cues[2] for f in facts if f.subject == s) for s in (a, b)}
        if nouns[a] == nouns[b]:
            continue
        answer = answer.replace(nouns[a], "@@").replace(nouns[b], nouns[a]).replace("@@", nouns[b])
        swapped += 1
        assert not _episode(task, answer, ctx).success, (task.task_id, answer)
    assert swapped >= 5


def test_read_spam_then_giving_up_earns_nothing(fact_tasks, ctx):
    config = EnvConfig()
    for task in fact_tasks:
        unrelated = [format_call("search", {"query": q}) for q in SPAM_QUERIES[: task.min_steps]]
        related = [
            format_call("list_orders", {}),
            format_call("search_policy", {"query": "returns"}),
        ]
        for calls in (unrelated, related, reference_turns(task)[:-1]):
            verdict = _episode(task, "Sorry, I can't help with that.", ctx, calls)
            assert not verdict.success
            assert verdict.reward <= 0.0, (task.task_id, verdict.components)
        best_failure = verdict.reward
        success = verify(task, reference_turns(task), ctx.catalog, config)
        assert success.success and success.reward > best_failure


def test_reference_answers_are_sentences_and_never_done_when_refused(fact_tasks):
    for task in fact_tasks:
        answer = reference_turns(task)[-1]
        assert "All done" not in answer and "; " not in answer.split(".")[0][:5]
        refused = any(
            f.kind == "verdict" and f.value.endswith(":no") for f in task.goal.answer_facts
        )
        if refused:
            assert re.search(r"can't|cannot|no longer|final sale", answer), answer


# ---- answer keys agree with the tools -------------------------------------------------------
def test_every_yes_no_key_is_what_the_tools_decide(fact_tasks, ctx):
    """Whenever a key says an action is allowed, the tool call succeeds on the initial state,
    and vice versa (returns, exchanges, cancellations on the item/order the fact is about)."""
    checked = 0
    for task in fact_tasks:
        for f in task.goal.answer_facts:
            if f.kind != "verdict":
                continue
            topic, _, said = f.value.partition(":")
            if topic == "cancel" and not f.subject:
                continue  # a policy question about a hypothetical order status
            order_id, item_id = _order_and_item(task, f)
            env = EcomEnv(task, ctx.catalog)
            env.reset()
            tools = env.tools
            if topic == "cancel" and order_id:
                ok, result = tools.call("cancel_order", {"order_id": order_id, "reason": "test"})
            elif topic == "return" and order_id:
                ok, result = tools.call(
                    "return_item", {"order_id": order_id, "item_id": item_id, "reason": "test"}
                )
            elif topic == "exchange" and order_id:
                row = ctx.catalog.row_of(item_id)
                variants = [ctx.catalog.item_ids[r] for r in ctx.catalog.family_rows(row)]
                new = next((v for v in variants if v != item_id), item_id)
                ok, result = tools.call(
                    "exchange_item", {"order_id": order_id, "item_id": item_id, "new_item_id": new}
                )
                if not ok and "cannot be exchanged" not in result["error"]:
                    ok = (
                        True  # refused for another reason (no variant in stock): the rule allows it
                    )
            else:
                continue
            checked += 1
            assert ok == (said == "yes"), (task.task_id, f.value, result)
    assert checked >= 30


def _order_and_item(task: Task, f: AnswerFact) -> tuple[str | None, str | None]:
    """The order and item a verdict is about: its subject's, else the task's delivered item."""
    orders = {o["order_id"]: o for o in task.initial_state["orders"]}
    for cue in f.cues:
        if cue in orders:
            item = next(
                (c for c in f.cues if c.startswith("I")), orders[cue]["items"][0]["item_id"]
            )
            return cue, item
    if f.subject in orders:
        return f.subject, orders[f.subject]["items"][0]["item_id"]
    if task.scenario == "policy":  # the question is about the delivered item it names
        order_id, item_id = task.goal.relevant_ids[:2]
        return order_id, item_id
    return None, None


def test_every_number_word_holds_a_stem() -> None:
    """`normalise` skips the number-word regexes when no stem is in the text: each word the
    hint matches must hold one (else "thirty days" would stay unread)."""
    from ecomrlve.env.judge.facts import _NUMBER_HINT, _NUMBER_STEMS

    bare = re.sub(r"\(\?<!\\w\)|\(\?!\\w\)|\(\?:|\)", "", _NUMBER_HINT.pattern)
    words = bare.split("|")
    assert all(w.isalpha() for w in words) and {"zero", "thirty", "teen"} <= set(words)
    for word in words:
        assert any(stem in word for stem in _NUMBER_STEMS), word
    assert normalise("within thirty days") == "within 30 days"


_DATE_BITS = ["june 16", "jun 16th, 2026", "16 june", "the 16th of june", "6/16", "31/02",
              "2026-06-16", "2026-6-1", "may", "dismay 5", "5 may", "05 may 2026", "x12 june",
              "june12", "12june", "12 of june", "sept 3", "sep. 3", "3rd of sept.", "jan 1 2027",
              "1/2/27", "12-05-2026", "2026-12-05x", "mar 3 mar 4", "o1234567", "$4.99",
              "\u0661\u0662 june", "june \u0661\u0662"]  # fmt: skip


@given(
    st.lists(st.sampled_from(_DATE_BITS), min_size=1, max_size=6),
    st.lists(st.sampled_from([" ", "", ". ", ", ", "\n"]), min_size=6, max_size=6),
)
def test_dates_read_at_candidate_offsets_equal_a_full_scan(bits, gaps) -> None:
    """`extract_dates` tries its patterns only where a match can start (month names, digit
    runs): the same dates as scanning every offset."""
    from unittest import mock

    text = "".join(b + g for b, g in zip(bits, gaps, strict=False))
    fast = extract_dates(text)
    with mock.patch.object(facts.values, "_matches_at", lambda p, t, _starts: list(p.finditer(t))):
        assert extract_dates(text) == fast


def test_a_brand_named_may_is_not_the_modal_may():
    """ "the May Works saucepan" beside "return" is a product, not "may return" (yes): the
    answer still says no; the modal "may" and the month "May 3" read as before."""
    no = [fact("verdict", "return:no")]
    for answer in (
        "The coffee can't be returned. I've started a return of the May Works saucepan.",
        "It can no longer be returned. Your return of the May Works saucepan is filed.",
    ):
        assert check_answer(answer, no).ok, answer
    # a cheat that hedges with the modal still conflicts
    assert not check_answer("It can't be returned. Well, you may return it.", no).ok
    yes = [fact("verdict", "return:yes")]
    assert check_answer("You may return the May Works saucepan.", yes).ok
    assert not check_answer("The May Works saucepan: return it? No.", yes).ok
    delivered = [fact("status", "delivered"), fact("date", "2026-05-03")]
    assert check_answer("It was delivered on May 3; you may return it.", delivered).ok
