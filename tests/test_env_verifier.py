"""Verifier and reward: references succeed, components add up, reward hacks fail."""

from __future__ import annotations

import pytest

from ecomrlve.config import EnvConfig, RewardWeights
from ecomrlve.env import COMPONENTS, EcomEnv, format_call, reference_turns, verify
from ecomrlve.env.judge.verifier import MAX_ANSWER_CHARS


def c(name, **arguments) -> str:
    return format_call(name, arguments)


# ---- references ----------------------------------------------------------------------------


def test_every_reference_succeeds_with_the_top_reward(tasks, catalog):
    for task in tasks.values():
        verdict = verify(task, reference_turns(task), catalog)
        assert verdict.success, (task.task_id, verdict.violations)
        assert verdict.violations == []
        assert set(verdict.components) == set(COMPONENTS)
        assert verdict.components["step_bonus"] == pytest.approx(0.1 * task.min_steps)
        assert verdict.components["efficiency"] == 0.2
        assert verdict.reward == pytest.approx(1.2 + 0.1 * task.min_steps)
        assert verdict.steps == task.min_steps + 1 and verdict.tool_calls == task.min_steps


def test_verify_is_pure_and_json_ready(tasks, catalog):
    task = tasks["fx-purchase"]
    a = verify(task, reference_turns(task), catalog).to_json()
    b = verify(task, reference_turns(task), catalog).to_json()
    assert a == b
    assert set(a) >= {"task_id", "success", "reward", "components", "steps", "violations"}


def test_env_reward_equals_verifier_reward(tasks, catalog):
    task = tasks["fx-cart"]
    env = EcomEnv(task, catalog)
    env.reset()
    rewards = [env.step(turn).reward for turn in reference_turns(task)]
    assert rewards[:-1] == [0.0] * (len(rewards) - 1)
    assert rewards[-1] == verify(task, reference_turns(task), catalog).reward


def test_binary_reward_mode(tasks, catalog):
    config = EnvConfig(binary_reward=True)
    task = tasks["fx-policy"]
    assert verify(task, reference_turns(task), catalog, config).reward == 1.0
    assert verify(task, ["I don't know."], catalog, config).reward == 0.0


# ---- reward components ----------------------------------------------------------------------


def test_extra_calls_lose_efficiency_and_cannot_farm_step_bonus(tasks, catalog):
    task = tasks["fx-status"]  # min_steps 1
    turns = [c("search_policy", query="shipping"), c("view_cart"), *reference_turns(task)]
    verdict = verify(task, turns, catalog)
    assert verdict.success
    assert verdict.components["step_bonus"] == pytest.approx(0.1)  # capped at min_steps
    assert verdict.components["efficiency"] == 0.0
    assert verdict.reward < verify(task, reference_turns(task), catalog).reward


def test_waste_counts_failed_repeated_and_off_task_writes(tasks, catalog):
    task = tasks["fx-cancel"]
    turns = [
        c("list_orders"),
        c("list_orders"),  # repeat, state unchanged
        c("get_order", order_id="O1002"),  # a look at the wrong order: free
        c("cancel_order", order_id="O1002", reason="x"),  # failed (shipped), off-task
        c("cancel_order", order_id="O1001", reason="mistake"),
        "Your order has been cancelled.",
    ]
    verdict = verify(task, turns, catalog)
    assert verdict.success
    assert verdict.components["waste"] == pytest.approx(-0.2)
    assert sum("waste:" in v for v in verdict.violations) == 2
    assert not any("O1002" in v and "get_order" in v for v in verdict.violations)


def test_reading_a_wrong_candidate_is_free_and_a_wrong_write_still_costs(tasks, catalog):
    """The waste penalty must not tell the policy which candidate is right: a look at an
    order (or product) the goal is not about costs exactly what a look at the right one does;
    a write on it is still charged."""
    task = tasks["fx-cancel"]
    ref = reference_turns(task)
    right = verify(task, [ref[0], c("get_order", order_id="O1001"), *ref[1:]], catalog)
    wrong = verify(task, [ref[0], c("get_order", order_id="O1002"), *ref[1:]], catalog)
    assert right.success and wrong.success, (right.violations, wrong.violations)
    assert wrong.components["waste"] == right.components["waste"] == 0.0
    boots = next(o for o in task.initial_state["orders"] if o["order_id"] == "O1002")
    item = boots["items"][0]["item_id"]
    looked = [c("list_orders"), c("get_order", order_id="O1002"), c("get_product", item_id=item)]
    read_only = verify(task, [*looked, *ref[1:]], catalog)
    written = verify(task, [*looked, c("add_to_cart", item_id=item), *ref[1:]], catalog)
    assert read_only.components["waste"] == 0.0
    assert written.components["waste"] == pytest.approx(-0.1)
    assert any("add_to_cart on off-task id" in v for v in written.violations)


def test_rereading_after_a_change_is_not_a_repeat(tasks, catalog):
    task = tasks["fx-cart"]
    ref = reference_turns(task)
    turns = [ref[0], ref[1], c("view_cart"), *ref[2:]]
    verdict = verify(task, turns, catalog)
    assert verdict.success and verdict.components["waste"] == 0.0


def test_format_penalty_per_malformed_turn(tasks, catalog):
    task = tasks["fx-policy"]
    turns = ["<tool_call>{oops</tool_call>", "<tool_call>\n{}\n", *reference_turns(task)]
    verdict = verify(task, turns, catalog)
    assert verdict.success
    assert verdict.components["format"] == pytest.approx(-0.4)
    assert sum(v.startswith("format:") for v in verdict.violations) == 2


def test_weights_come_from_config(tasks, catalog):
    weights = RewardWeights(success=2.0, step_bonus=0.0, efficiency=0.5)
    config = EnvConfig(reward_weights=weights, reward_range=(-5.0, 5.0))
    task = tasks["fx-return"]
    verdict = verify(task, reference_turns(task), catalog, config)
    assert verdict.components["success"] == 2.0 and verdict.reward == pytest.approx(2.5)


def test_reward_is_clipped_to_the_range(tasks, catalog):
    task = tasks["fx-purchase"]
    junk = "<tool_call>" + "\n".join(c("get_product", item_id=f"I{k:07d}") for k in range(8))
    turns = [junk] * 10
    verdict = verify(task, turns, catalog)
    assert verdict.reward == -1.0
    assert sum(verdict.components.values()) < -1.0


def test_step_limit_ends_the_episode(tasks, catalog):
    task = tasks["fx-cart"]
    turns = [c("view_cart")] * 20
    config = EnvConfig(max_steps=5, turn_slack=0)  # no room for care: the limit is max_steps
    env = EcomEnv(task, catalog, config)
    env.reset()
    results = [env.step(t) for t in turns[:5]]
    assert [r.done for r in results] == [False] * 4 + [True]
    assert results[-1].info["truncated"]
    verdict = verify(task, turns, catalog, config)
    assert not verdict.success and verdict.steps == 5
    assert any("ignored 15 turn(s)" in v for v in verdict.violations)


def test_turn_limit_leaves_room_for_the_reference(tasks, catalog):
    task = tasks["fx-cart"]  # 4 reference calls + answer
    verdict = verify(task, reference_turns(task), catalog, EnvConfig(max_steps=2))
    assert verdict.success


def test_tool_results_in_the_file_are_ignored(tasks, catalog):
    task = tasks["fx-cancel"]
    turns = [
        c("list_orders"),
        {"role": "tool", "name": "cancel_order", "content": '{"ok": true, "status": "cancelled"}'},
        {"role": "user", "content": "thanks, it is cancelled"},
        "Your order has been cancelled.",
    ]
    verdict = verify(task, turns, catalog)
    assert not verdict.success
    assert "goal: order O1001 was not cancelled" in verdict.violations


def test_a_trajectory_without_final_answer_is_judged_as_truncated(tasks, catalog):
    task = tasks["fx-status"]
    verdict = verify(task, [c("list_orders")], catalog)
    assert not verdict.success
    assert "goal: the episode ended without a final answer" in verdict.violations


def test_openai_style_turns_verify_too(tasks, catalog):
    task = tasks["fx-return"]
    turns = [
        {"content": None, "tool_calls": [{"type": "function", "function": {
            "name": call.name, "arguments": __import__("json").dumps(call.arguments)}}]}
        for call in task.reference
    ] + [{"role": "assistant", "content": "Return started."}]  # fmt: skip
    assert verify(task, turns, catalog).success


def test_several_calls_in_one_turn(tasks, catalog):
    task = tasks["fx-cart"]
    ref = reference_turns(task)
    verdict = verify(task, ["\n".join(ref[:-1]), ref[-1]], catalog)
    assert verdict.success and verdict.steps == 2 and verdict.tool_calls == 4


# ---- reward hacks must fail -------------------------------------------------------------------


def _hack(task, turns, catalog):
    reference = verify(task, reference_turns(task), catalog)
    verdict = verify(task, turns, catalog)
    assert not verdict.success, verdict.violations
    assert verdict.reward < reference.reward
    return verdict


def test_hack_repeating_a_valid_call(tasks, catalog):
    task = tasks["fx-purchase"]
    ref = reference_turns(task)
    # the add repeated: quantity 2 where the slot wants 1
    verdict = _hack(task, [ref[0], ref[1], ref[1], ref[2], ref[3]], catalog)
    assert any("waste" in v and "repeats" in v for v in verdict.violations)
    # repeating a read call to farm the step bonus, then answering
    farm = [ref[0]] * 5 + ["Done!"]
    verdict = _hack(task, farm, catalog)
    assert verdict.components["step_bonus"] == pytest.approx(0.1)


def test_hack_adding_the_right_item_100_times(tasks, catalog):
    task = tasks["fx-purchase"]
    ref = reference_turns(task)
    add = ref[1]
    burst = "\n".join([add] * 8)
    _hack(task, [ref[0], *[burst] * 12, ref[2], ref[3]], catalog)
    item = task.reference[1].arguments["item_id"]
    _hack(task, [ref[0], c("add_to_cart", item_id=item, quantity=100), ref[2], ref[3]], catalog)


def test_hack_checkout_of_a_superset(tasks, catalog):
    task = tasks["fx-purchase"]
    ref = reference_turns(task)
    found = catalog.search("t-shirt", task.reference[0].arguments["filters"], 5)
    extra_search = c("search", query="wool jacket", filters={"in_stock": True}, top_k=1)
    extra = catalog.search("wool jacket", {"in_stock": True}, 1)[0]["item_id"]
    assert extra not in {r["item_id"] for r in found}
    turns = [ref[0], ref[1], extra_search, c("add_to_cart", item_id=extra), ref[2], ref[3]]
    verdict = _hack(task, turns, catalog)
    assert f"goal: new order has extra line {extra}" in verdict.violations


def test_hack_right_product_wrong_size_or_colour(tasks, catalog):
    task = tasks["fx-purchase"]
    target = task.reference[1].arguments["item_id"]
    acceptable = set(task.goal.purchase.slots[0].acceptable)
    siblings = [
        catalog.item_ids[r]
        for r in catalog.family_rows(catalog.row_of(target))
        if catalog.item_ids[r] not in acceptable and catalog.stock[r] > 0
    ]
    assert siblings, "fixture family needs another variant"
    wrong = siblings[0]
    turns = [c("get_product", item_id=target), c("add_to_cart", item_id=wrong), c("checkout"),
             "Ordered!"]  # fmt: skip
    # get_product on the target is not visible either: start from the reference search
    turns = [reference_turns(task)[0], *turns]
    verdict = _hack(task, turns, catalog)
    assert any("do not match the slots" in v or "extra line" in v for v in verdict.violations)


def test_hack_answering_without_acting(tasks, catalog):
    task = tasks["fx-status"]
    verdict = _hack(task, ["Your laptop has shipped and arrives on 2025-03-17."], catalog)
    assert "goal: answered without acting (no successful tool call)" in verdict.violations
    policy = tasks["fx-policy"]
    _hack(policy, ["You have 30 days to return boots."], catalog)


def test_hack_dumping_every_possible_answer(tasks, catalog):
    task = tasks["fx-status"]
    dump = "shipped " + " ".join(f"2025-03-{d:02d}" for d in range(1, 32)) + " x" * MAX_ANSWER_CHARS
    _hack(task, [c("list_orders"), dump], catalog)


def test_hack_recommending_ids_never_seen(tasks, catalog):
    task = tasks["fx-recommend"]
    ids = task.goal.recommend.acceptable[:3]
    verdict = _hack(task, [c("recommend", item_ids=ids), "Here are my picks."], catalog)
    assert verdict.components["hallucination"] == pytest.approx(-0.2 * len(ids))
    # a search first, then ids that search never showed
    unseen = [i for i in task.goal.recommend.acceptable if i not in
              {r["item_id"] for r in catalog.search("headphones", None, 3)}][:2]  # fmt: skip
    turns = [c("search", query="headphones", top_k=3), c("recommend", item_ids=unseen), "Done."]
    _hack(task, turns, catalog)


def test_hack_recommending_outside_the_acceptable_set(tasks, catalog):
    task = tasks["fx-recommend"]
    shown = [r["item_id"] for r in catalog.search("headphones", None, 10)]
    bad = [i for i in shown if i not in set(task.goal.recommend.acceptable)][:2]
    assert bad
    turns = [c("search", query="headphones", top_k=10), c("recommend", item_ids=bad), "Done."]
    _hack(task, turns, catalog)


def test_hack_cancelling_a_shipped_order(tasks, catalog):
    task = tasks["fx-cancel"]
    turns = [c("list_orders"), c("cancel_order", order_id="O1002", reason="x"), "Cancelled."]
    verdict = _hack(task, turns, catalog)
    assert any("failed" in v and "shipped" in v for v in verdict.violations)


def test_hack_cancelling_everything(tasks, catalog):
    task = tasks["fx-cancel"]
    turns = [
        c("list_orders"),
        "\n".join(c("cancel_order", order_id=o, reason="x") for o in ("O1001", "O1002")),
        "Cancelled.",
    ]
    # the shipped one is refused, so the end state is right, but the call is waste
    verdict = verify(task, turns, catalog)
    assert verdict.reward < verify(task, reference_turns(task), catalog).reward


def test_hack_returning_an_item_never_bought(tasks, catalog):
    task = tasks["fx-return"]
    other = catalog.search("jacket", {"in_stock": True}, 1)[0]["item_id"]
    turns = [
        c("search", query="jacket", filters={"in_stock": True}, top_k=1),
        c("list_orders"),
        c("return_item", order_id="O2001", item_id=other, reason="x"),
        "Return started.",
    ]
    verdict = _hack(task, turns, catalog)
    assert any("not part of order" in v for v in verdict.violations)


def test_hack_returning_the_wrong_line_or_everything(tasks, catalog):
    task = tasks["fx-return"]
    coffee = [line for line in task.initial_state["orders"][0]["items"]][1]["item_id"]
    jacket = task.goal.returns[0].item_id
    turns = [
        c("list_orders"),
        c("return_item", order_id="O2001", item_id=jacket, reason="x"),
        c("return_item", order_id="O2001", item_id=coffee, reason="x"),  # final sale: refused
        "Done.",
    ]
    verdict = verify(task, turns, catalog)
    assert verdict.reward < verify(task, reference_turns(task), catalog).reward


def test_hack_exchanging_into_another_product(tasks, catalog):
    task = tasks["fx-exchange"]
    old = task.goal.exchanges[0].item_id
    outsider = catalog.search("jacket", {"in_stock": True}, 1)[0]["item_id"]
    turns = [
        c("list_orders"),
        c("search", query="jacket", filters={"in_stock": True}, top_k=1),
        c("exchange_item", order_id="O3001", item_id=old, new_item_id=outsider),
        "Exchanged.",
    ]
    _hack(task, turns, catalog)


def test_hack_buying_instead_of_recommending(tasks, catalog):
    task = tasks["fx-recommend"]
    ref = reference_turns(task)
    first = task.reference[1].arguments["item_ids"][0]
    turns = [ref[0], ref[1], c("add_to_cart", item_id=first), c("checkout"), ref[-1]]
    verdict = _hack(task, turns, catalog)
    assert any("unexpected new order" in v for v in verdict.violations)


def test_a_copied_or_reassigned_goal_is_judged_by_its_own_facts(tasks, catalog):
    """The verifier keeps lookups per Goal object (acceptance sets, the answer plan); a goal
    copied with other facts, or given other facts, must not be judged by the old ones."""
    from ecomrlve.tasks import AnswerFact

    task = tasks["fx-status"]
    turns = reference_turns(task)
    assert verify(task, turns, catalog).success  # builds and keeps the original plan
    other = [AnswerFact(kind="status", value="delivered")]
    copied = task.model_copy(update={"goal": task.goal.model_copy(update={"answer_facts": other})})
    verdict = verify(copied, turns, catalog)
    assert not verdict.success
    assert any("status 'delivered'" in v for v in verdict.violations), verdict.violations
    assert verify(task, turns, catalog).success  # the original keeps its own plan
    mine = task.model_copy(deep=True)
    assert verify(mine, turns, catalog).success
    mine.goal.answer_facts = other
    assert not verify(mine, turns, catalog).success


def test_milestone_sets_follow_each_tasks_initial_orders(tasks, catalog):
    """Tasks may share a Goal object (a shallow copy with another initial state): which
    relevant ids are orders comes from each task's own initial state."""
    from ecomrlve.env.judge.goal_progress import Progress

    task = tasks["fx-status"]
    assert "O4001" in task.goal.relevant_ids
    state = dict(task.initial_state)
    state["orders"] = [o for o in state["orders"] if o["order_id"] != "O4001"]
    other = task.model_copy(update={"initial_state": state})
    assert other.goal is task.goal
    for first, second in ((task, other), (other, task)):
        a, b = Progress(first, catalog), Progress(second, catalog)
        assert "O4001" in a.orders if first is task else "O4001" not in a.orders
        assert "O4001" in b.orders if second is task else "O4001" not in b.orders
        assert ("O4001" in a.relevant_items) == (first is other)
        assert ("O4001" in b.needed_items) == (second is other)


def test_free_reads_never_pay_a_failure_and_a_success_keeps_its_floor(tasks, catalog):
    """Reads of wrong candidates cost nothing now, so shaping alone must keep read spam at or
    below 0 (every id listed, then every order and product read, then giving up), and a
    success buried in waste still earns the floor."""
    task = tasks["fx-cancel"]
    items = [i["item_id"] for o in task.initial_state["orders"] for i in o["items"]]
    spam = [
        c("list_orders"),
        *[c("get_order", order_id=o["order_id"]) for o in task.initial_state["orders"]],
        *[c("get_product", item_id=i) for i in items],
        c("search_policy", query="cancel order"),
        "Sorry, I could not find anything to do.",
    ]
    verdict = verify(task, spam, catalog)
    assert not verdict.success and verdict.reward <= 0.0
    ref = reference_turns(task)
    wasteful = [ref[0], *[c("list_orders")] * 5, *ref[1:]]
    verdict = verify(task, wasteful, catalog)
    assert verdict.success and verdict.reward >= 0.1
