"""The simulated user: facts by keyword, don't-know, typos, intent switch, no leaked ids."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ecomrlve.config import EnvConfig
from ecomrlve.env import EcomEnv, SimulatedUser, format_call
from ecomrlve.env.episode.user import DONT_KNOW, INTENT_SWITCH_TURN
from ecomrlve.tasks import USER_FACT_KEYWORDS, RecommendSpec
from ecomrlve.testing import env_tasks as fx


def user_for(task, catalog):
    return SimulatedUser(task, catalog.__contains__)


def test_answers_every_fact_whose_keywords_appear(catalog):
    task = fx.ask_user_task(catalog)
    facts = task.goal.user_facts
    user = user_for(task, catalog)
    both = user.answer("Which colour and size do you want?")
    assert facts["color"] in both and facts["size"] in both
    assert facts["quantity"] not in both
    only_color = user_for(task, catalog).answer("What shade?")
    assert facts["color"] in only_color and facts["size"] not in only_color


def test_every_keyword_reaches_its_fact(catalog):
    task = fx.ask_user_task(catalog)
    task.goal.user_facts = {key: f"value-of-{key}" for key in USER_FACT_KEYWORDS}
    for key, words in USER_FACT_KEYWORDS.items():
        for word in words:
            reply = user_for(task, catalog).answer(f"Could you tell me: {word.upper()}?")
            assert f"value-of-{key}" in reply, (key, word)


def test_unknown_question_gets_dont_know(catalog):
    user = user_for(fx.ask_user_task(catalog), catalog)
    assert user.answer("What is your favourite film?") in DONT_KNOW


def test_replies_are_deterministic_and_vary_by_question_number(catalog):
    task = fx.ask_user_task(catalog)
    first = [user_for(task, catalog).answer("which colour?") for _ in range(2)]
    assert first[0] == first[1]
    user = user_for(task, catalog)
    replies = {user.answer("which colour?") for _ in range(6)}
    assert len(replies) > 1  # paraphrase templates rotate


def test_typos_are_seeded_and_spare_fact_values(catalog):
    noisy = fx.ask_user_task(catalog, typo_rate=0.9)
    clean = fx.ask_user_task(catalog, typo_rate=0.0)
    question = "Which colour and size, and how many?"
    a = user_for(noisy, catalog).answer(question)
    assert a == user_for(noisy, catalog).answer(question)
    assert a != user_for(clean, catalog).answer(question)
    for value in noisy.goal.user_facts.values():
        assert value in a


def test_never_leaks_item_ids_or_acceptance_sets(catalog):
    task = fx.purchase_task(catalog)
    secret = task.goal.purchase.slots[0].acceptable[0]
    task.goal.user_facts = {"item": f"the one with id {secret}", "brand": "I0000001 please"}
    task.goal.intent_switch = f"also buy {secret}"
    user = user_for(task, catalog)
    reply = user.answer("Which item and brand?")
    assert secret not in reply and "I0000001" not in reply
    assert "the one I mentioned" in reply
    assert secret not in user.reveal_intent()


def _ask(env, question):
    result = env.step(format_call("ask_user", {"question": question}))
    return result, json.loads(result.observation[0]["content"])["answer"]


def test_intent_switch_comes_with_the_first_answer(catalog):
    task = fx.ask_user_task(catalog, intent_switch="please also check my last order")
    env = EcomEnv(task, catalog, EnvConfig(max_steps=8))
    env.reset()
    _, answer = _ask(env, "What colour?")
    assert "please also check my last order" in answer
    _, again = _ask(env, "What size?")
    assert "please also check my last order" not in again


def test_intent_switch_arrives_at_a_fixed_turn_without_questions(catalog):
    task = fx.ask_user_task(catalog, intent_switch="please also check my last order")
    env = EcomEnv(task, catalog, EnvConfig(max_steps=8))
    env.reset()
    for turn in range(1, INTENT_SWITCH_TURN + 2):
        result = env.step(format_call("view_cart", {}))
        users = [m for m in result.observation if m["role"] == "user"]
        if turn == INTENT_SWITCH_TURN:
            assert len(users) == 1 and "check my last order" in users[0]["content"]
        else:
            assert not users


def test_ids_the_user_says_count_as_seen(catalog):
    task = fx.cancel_task(catalog)
    task.goal.user_facts = {"order": "order O1001"}
    turns = [
        format_call("ask_user", {"question": "Which order?"}),
        format_call("cancel_order", {"order_id": "O1001", "reason": "mistake"}),
        "It is cancelled.",
    ]
    from ecomrlve.env import verify

    verdict = verify(task, turns, catalog)
    assert verdict.components["hallucination"] == 0.0 and verdict.success


# ---- slots, synonyms, catch-all, open slots (issue 13) -----------------------------------------
def _discovery_task(catalog, **facts):
    task = fx.ask_user_task(catalog)
    task.goal.purchase = None
    task.goal.recommend = RecommendSpec(acceptable=[catalog.item_ids[0]])
    task.goal.user_facts = {"category": "sneakers", **facts}
    return task


@pytest.mark.parametrize("word", ["brand", "make", "label", "manufacturer", "maker"])
def test_brand_synonyms_reach_a_required_brand(catalog, word):
    task = _discovery_task(catalog, brand="Smith Labs")
    reply = user_for(task, catalog).answer(f"Which {word} would you like?")
    assert "Smith Labs" in reply and "matter" not in reply


def test_brand_question_reaches_a_brand_preference(catalog):
    task = _discovery_task(catalog, preference="Acme, then Zed")
    reply = user_for(task, catalog).answer("Which brand would you like?")
    assert "Acme, then Zed" in reply and "matter" not in reply


def test_several_slots_in_one_question_and_open_slots(catalog):
    task = _discovery_task(catalog, color="navy", budget="$40")
    reply = user_for(task, catalog).answer("Any preferred shade, brand or size? And your budget?")
    assert "navy" in reply and "$40" in reply
    # brand and size are left open by a recommend goal whose facts name the category
    assert reply.count(".") >= 4


def test_open_slot_only_when_the_goal_leaves_it_open(catalog):
    # a purchase goal whose facts do not describe the product: never "doesn't matter"
    task = fx.ask_user_task(catalog)
    reply = user_for(task, catalog).answer("Which brand?")
    assert "matter" not in reply and "fine" not in reply and "mind" not in reply


def test_catch_all_question_gets_every_fact(catalog):
    task = _discovery_task(catalog, brand="Smith Labs", size="42", max_ship_days="3 days")
    for question in ("Anything else I should know?", "Any other requirements?"):
        reply = user_for(task, catalog).answer(question)
        for value in task.goal.user_facts.values():
            assert value in reply, (question, value)


def test_replies_are_grammatical_for_every_form(catalog):
    facts = {
        "category": "yoga mats",
        "brand": "Smith Labs",
        "color": "navy",
        "size": "5 mm",
        "budget": "$40",
        "min_rating": "4 stars",
        "max_ship_days": "3 days",
    }
    task = _discovery_task(catalog, **facts)
    user = user_for(task, catalog)
    forms: dict[str, set[str]] = {k: set() for k in facts}
    for _ in range(60):
        reply = user.answer("Anything else I should know?")
        assert not re.search(r"\b(\w+) \1\b", reply, re.IGNORECASE), reply
        assert "stars or more stars" not in reply and "within within" not in reply
        assert "No more than within" not in reply and "{" not in reply
        for key, value in facts.items():
            sentence = next(s for s in re.split(r"(?<=\.) ", reply) if value in s)
            forms[key].add(sentence.replace(value, "<v>"))
    assert all(len(f) >= 6 for f in forms.values()), {k: len(f) for k, f in forms.items()}


def test_replies_are_consistent_across_turns(catalog):
    task = _discovery_task(catalog, brand="Smith Labs", color="navy")
    user = user_for(task, catalog)
    for _ in range(5):
        reply = user.answer("Which brand and colour?")
        assert "Smith Labs" in reply and "navy" in reply


SLOT_WORDS = {
    "brand": ["brand", "make", "label", "manufacturer"],
    "color": ["colour", "color", "shade"],
    "size": ["size", "fit"],
    "budget": ["budget", "price"],
    "min_rating": ["rating", "stars"],
    "max_ship_days": ["delivery", "shipping"],
}
FACT_VALUES = {
    "brand": "Smith Labs",
    "color": "navy",
    "size": "42",
    "budget": "$40",
    "min_rating": "4 stars",
    "max_ship_days": "3 days",
}


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    known=st.sets(st.sampled_from(sorted(FACT_VALUES)), min_size=1),
    asked=st.lists(st.sampled_from(sorted(SLOT_WORDS)), min_size=1, max_size=3, unique=True),
    pick=st.integers(0, 3),
    opener=st.sampled_from(["Which", "Any preferred", "What", "Could you tell me the"]),
)
def test_asked_slots_are_answered_and_known_slots_never_waved_off(
    catalog, known, asked, pick, opener
):
    task = _discovery_task(catalog, **{k: FACT_VALUES[k] for k in known})
    words = [SLOT_WORDS[k][pick % len(SLOT_WORDS[k])] for k in asked]
    reply = user_for(task, catalog).answer(f"{opener} {' and '.join(words)}?")
    for key in asked:
        if key in known:
            assert FACT_VALUES[key] in reply, (key, reply)
    open_slots = [k for k in asked if k not in known]
    waved_off = any(w in reply for w in ("matter", "fine", "mind", "flexible", "important"))
    assert waved_off == bool(open_slots), reply
    assert not re.search(r"\b(\w+) \1\b", reply, re.IGNORECASE)


_QUESTION_WORDS = sorted(
    {w for words in USER_FACT_KEYWORDS.values() for k in words for w in k.split()}
    | {"make sure", "label for", "ſize", "KOLOR", "which", "your", "?", "-", "é"}
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.one_of(st.sampled_from(_QUESTION_WORDS), st.text(max_size=4)), min_size=1, max_size=8
    ),
    st.sampled_from(["", " ", "_"]),
)
def test_the_keyword_prefilter_agrees_with_the_keyword_patterns(pieces, glue) -> None:
    """`_asks` skips a key's regex when no keyword is a substring of the lower-cased ASCII
    question: it must answer exactly what the regex answers, for any casing or script."""
    from ecomrlve.env.episode.user import OPEN_SLOTS, _asks, _pattern

    question = glue.join(p.upper() if i % 3 == 1 else p for i, p in enumerate(pieces))
    folded = question.lower() if question.isascii() else None
    for key in [*USER_FACT_KEYWORDS, *OPEN_SLOTS, "quantity", "gift_wrap"]:
        assert _asks(key, question, folded) == bool(_pattern(key).search(question)), key


# ---- the user says only what the goal holds (issue 27) ---------------------------------------
CLAIMS_PRIOR_WORDS = re.compile(
    r"\b(?:I (?:said|wrote|told you)|first message|as I wrote|at the start)\b", re.I
)
ATTRIBUTE_QUESTIONS = (
    "What size do you need?",
    "Which colour?",
    "How many do you want?",
    "Which brand?",
    "What's your budget?",
    "Any rating you need?",
)


def test_never_claims_to_have_said_what_the_prompt_did_not_say(catalog):
    """No reply, to any attribute question in any fixture task, says the first message already
    told it (the prompt may not have); an attribute the goal fixes and no fact states gets a
    reply that claims nothing."""
    for task in fx.all_tasks(catalog):
        for question in ATTRIBUTE_QUESTIONS:
            reply = user_for(task, catalog).answer(question)
            assert not CLAIMS_PRIOR_WORDS.search(reply), (task.task_id, question, reply)
    task = fx.purchase_task(catalog)
    task.goal.user_facts = {}
    reply = user_for(task, catalog).answer("Which size?")
    assert "size" in reply
    assert "nothing" in reply.lower() or "no more" in reply.lower()


def _with_quantities(task, quantities, catalog=None):
    """`task` whose purchase has one line per quantity (the later lines: other items)."""
    first = task.goal.purchase.slots[0]
    others = [i for i in (catalog.item_ids if catalog else []) if i not in first.acceptable]
    slots = [first.model_copy(update={"quantity": quantities[0]})]
    for k, quantity in enumerate(quantities[1:]):
        slots.append(first.model_copy(update={"quantity": quantity, "acceptable": [others[k]]}))
    task.goal.purchase = task.goal.purchase.model_copy(update={"slots": slots})
    task.goal.user_facts = {}
    return task


@pytest.mark.parametrize(
    "question",
    [
        "You already have one pair in your cart. Should I keep it, or add two more?",
        "How many do you need?",
        "Keep the one in your cart?",
        "What quantity should I order?",
    ],
)
def test_quantity_and_keep_questions_are_answered_from_the_goal(catalog, question):
    """The goal needs two: the reply says two (never "whatever works", "just one", or a
    claim about the first message)."""
    task = _with_quantities(fx.purchase_task(catalog), [2])
    reply = user_for(task, catalog).answer(question)
    assert "2 units" in reply, reply
    assert "Whatever" not in reply and "one" not in reply.lower().replace("the one", "")
    assert not CLAIMS_PRIOR_WORDS.search(reply)


def test_quantity_of_a_named_line_and_of_several_lines(catalog):
    task = _with_quantities(fx.purchase_task(catalog), [3, 1], catalog)
    second = task.goal.purchase.slots[1].acceptable[0]
    named = user_for(task, catalog).answer(f"How many of {second} should the order have?")
    assert "1 unit" in named and "3 units" not in named
    both = user_for(task, catalog).answer("How many of each?")
    assert both.index("3 units") < both.index("1 unit")
    stranger = next(i for i in catalog.item_ids if i not in set().union(
        *(s.acceptable for s in task.goal.purchase.slots)))  # fmt: skip
    refused = user_for(task, catalog).answer(f"Should I keep {stranger} in your cart?")
    assert "don't" in refused.lower() and "unit" not in refused


def test_anything_else_does_not_reveal_what_the_order_history_holds(small_catalog_dir):
    """Discovery tasks anchored on a past order ("the same brand as the tee I ordered in
    May"): asked directly or with a catch-all, the customer points at the order again and
    never says the anchored value, so skipping `list_orders` cannot pass."""
    from ecomrlve.generators import generate_task
    from ecomrlve.generators.context import GenContext

    ctx = GenContext.load(small_catalog_dir)
    checked = 0
    for d in range(4, 11):
        for i in range(12):
            task = generate_task(ctx, "product_discovery", 31, d, i)
            # a past order the main request hangs on (from d7 a late question may look orders
            # up too: an add-on call, not a core one)
            core = [task.reference[i] for i in task.core_calls] if task is not None else []
            if not any(c.name == "list_orders" for c in core):
                continue
            anchored = [k for k, v in task.goal.user_facts.items() if v.startswith("the same ")]
            assert len(anchored) == 1, task.goal.user_facts
            key = anchored[0]
            anchor = next(
                o for o in task.initial_state["orders"] if o["order_id"] in task.goal.relevant_ids
            )
            row = ctx.catalog.row_of(anchor["items"][0]["item_id"])
            value = ctx.product(row)[key]
            for question in ("Anything else I should know?", f"Which {key}?"):
                reply = user_for(task, ctx.catalog).answer(question)
                said = re.search(rf"(?<![\w-]){re.escape(value)}(?![\w-])", reply)
                assert said is None, (task.task_id, question, reply)
                assert "I ordered" in reply
            checked += 1
    assert checked >= 3
