"""Each tool's business rules: the happy path and every refusal."""

from __future__ import annotations

import dataclasses
import inspect
import json

import numpy as np
import pytest

from ecomrlve.config import EnvConfig
from ecomrlve.env import (
    TOOL_NAMES,
    TOOL_SPECS,
    WRITE_TOOLS,
    EcomEnv,
    format_call,
    tool_schemas,
)
from ecomrlve.env.judge.goal_progress import Progress
from ecomrlve.env.shop import milestones
from ecomrlve.env.shop.tools import ShopTools, ToolKind, tool
from ecomrlve.tasks import ToolCall
from ecomrlve.testing import env_tasks as fx

CONFIG = EnvConfig(max_steps=64)


@pytest.fixture
def env(catalog):
    env = EcomEnv(fx.world_task(catalog), catalog, CONFIG)
    env.reset()
    return env


def call(env: EcomEnv, name: str, **arguments) -> dict:
    """Play one turn with one tool call; return the parsed tool result."""
    result = env.step(format_call(name, arguments))
    assert not result.done
    return json.loads(result.observation[0]["content"])


def rows_where(catalog, predicate) -> list[str]:
    return [i for i in catalog.item_ids if predicate(catalog.row(i))]


def in_stock_item(catalog, min_stock=1, max_stock=10_000) -> str:
    return rows_where(catalog, lambda r: min_stock <= r["stock"] <= max_stock)[0]


# ---- schemas ---------------------------------------------------------------------------------


def test_every_contract_tool_has_a_schema_and_a_tag():
    contract = {
        "search": {"query", "filters", "top_k"},
        "get_product": {"item_id"},
        "add_to_cart": {"item_id", "quantity"},
        "remove_from_cart": {"item_id"},
        "set_quantity": {"item_id", "quantity"},
        "view_cart": set(),
        "checkout": {"shipping_address", "payment_method"},
        "list_orders": set(),
        "get_order": {"order_id"},
        "cancel_order": {"order_id", "reason"},
        "return_item": {"order_id", "item_id", "reason"},
        "exchange_item": {"order_id", "item_id", "new_item_id"},
        "search_policy": {"query"},
        "ask_user": {"question"},
        "recommend": {"item_ids"},
    }
    assert list(TOOL_NAMES) == list(contract)
    for schema in tool_schemas():
        fn = schema["function"]
        assert schema["type"] == "function"
        assert set(fn["parameters"]["properties"]) == contract[fn["name"]]
        assert fn["description"]
        for prop in fn["parameters"]["properties"].values():
            assert "type" in prop and "description" in prop
    filters = tool_schemas()[0]["function"]["parameters"]["properties"]["filters"]
    assert set(filters["properties"]) == {
        "category", "brand", "color", "size", "min_price", "max_price", "min_rating",
        "max_ship_days", "in_stock",
    }  # fmt: skip
    assert {
        "add_to_cart", "remove_from_cart", "set_quantity", "checkout", "cancel_order",
        "return_item", "exchange_item", "recommend",
    } == WRITE_TOOLS  # fmt: skip
    assert TOOL_SPECS["cancel_order"].required == {"order_id", "reason"}


def test_every_tool_declares_its_milestone_rule_next_to_its_method():
    for name, spec in TOOL_SPECS.items():
        rule = spec.milestone
        assert getattr(ShopTools, name).__tool_milestone__ is rule
        assert rule.__module__ == milestones.__name__ and getattr(milestones, rule.__name__) is rule
        assert list(inspect.signature(rule).parameters) == ["p", "arguments", "result"]
    # the cart writes share one rule; every other tool has its own, named after it
    assert {n for n, s in TOOL_SPECS.items() if s.milestone.__name__ != n} == {
        "add_to_cart",
        "set_quantity",
    }


def test_a_tool_without_a_milestone_rule_is_refused_when_its_class_is_defined():
    with pytest.raises(TypeError, match="tool 'peek' declares no milestone rule"):

        class FakeTools:  # a new tool someone forgot to give a rule
            @tool(ToolKind.READ)
            def peek(self) -> dict:
                return {}

    with pytest.raises(TypeError, match="tool 'poke' declares no milestone rule"):

        class OtherFakeTools:
            @tool(ToolKind.WRITE, milestone=None)
            def poke(self) -> dict:
                return {}


def test_progress_credits_a_call_through_its_tools_declared_rule(monkeypatch, catalog):
    def probe(p, arguments, result):
        return [("probe", str(arguments.get("order_id")))]

    for name in ("cancel_order", "get_order", "list_orders"):
        monkeypatch.setitem(
            TOOL_SPECS, name, dataclasses.replace(TOOL_SPECS[name], milestone=probe)
        )
    get = ToolCall(name="get_order", arguments={"order_id": "O5002"})
    task = fx.world_task(catalog).model_copy(update={"reference": [get]})
    progress = Progress(task, catalog)
    assert progress.credit("cancel_order", {"order_id": "O5001"}, {}, None) == 1
    assert progress.credit("cancel_order", {"order_id": "O5001"}, {}, None) == 0  # once only
    assert progress.credit("get_order", {"order_id": "O5002"}, {}, None) == 1
    # a read's rule counts only when the reference solution uses that tool
    assert progress.credit("list_orders", {"order_id": "O5003"}, {}, None) == 0
    assert progress.reached == {("probe", "O5001"), ("probe", "O5002")}


def test_schemas_are_plain_json_without_refs():
    text = json.dumps(tool_schemas())
    assert "$ref" not in text and "$defs" not in text and "anyOf" not in text


# ---- catalog tools ---------------------------------------------------------------------------


def test_search_returns_short_records_and_marks_ids_seen(env):
    out = call(env, "search", query="jacket", filters={"category": "jackets"}, top_k=4)
    assert 1 <= out["count"] <= 4
    for hit in out["results"]:
        assert set(hit) == {
            "item_id", "title", "brand", "category", "color", "size", "price", "rating",
            "in_stock", "ship_days",
        }  # fmt: skip
        assert hit["category"] == "jackets"
        assert hit["item_id"] in env.seen_ids


def test_search_refuses_bad_top_k_and_unknown_filters(env):
    assert call(env, "search", query="x", top_k=0)["code"] == "invalid_arguments"
    assert call(env, "search", query="x", top_k=51)["code"] == "invalid_arguments"
    assert call(env, "search", query="x", filters={"colour": "red"})["code"] == "format"
    assert call(env, "search", query="x", filters={"max_price": "cheap"})["code"] == "format"


def test_search_with_no_match_says_so(env):
    out = call(env, "search", query="jacket", filters={"brand": "No Such Brand"})
    assert out["count"] == 0 and "note" in out


def test_get_product_lists_variants_of_the_family(env, catalog):
    item = catalog.item_ids[0]
    out = call(env, "get_product", item_id=item)
    assert out["item_id"] == item and "description" in out
    family = {catalog.item_ids[r] for r in catalog.family_rows(0)}
    assert {v["item_id"] for v in out["variants"]} == family
    assert family <= env.seen_ids
    assert call(env, "get_product", item_id="I9999999")["code"] == "not_found"


# ---- cart ------------------------------------------------------------------------------------


def test_add_to_cart_and_quantity_caps(env, catalog):
    item = in_stock_item(catalog, min_stock=20)
    assert call(env, "add_to_cart", item_id=item, quantity=4)["quantity"] == 4
    assert call(env, "add_to_cart", item_id=item, quantity=6)["quantity"] == 10
    refused = call(env, "add_to_cart", item_id=item, quantity=1)
    assert refused["code"] == "not_allowed" and "at most 10" in refused["error"]
    assert env.record.state.cart[item] == 10
    assert call(env, "add_to_cart", item_id=item, quantity=0)["code"] == "invalid_arguments"
    assert call(env, "add_to_cart", item_id="I9999999")["code"] == "not_found"


def test_add_to_cart_respects_stock(env, catalog):
    low = in_stock_item(catalog, min_stock=1, max_stock=3)
    stock = int(catalog.stock[catalog.row_of(low)])
    refused = call(env, "add_to_cart", item_id=low, quantity=stock + 1)
    assert refused["code"] == "not_allowed" and "in stock" in refused["error"]
    out_of_stock = rows_where(catalog, lambda r: r["stock"] == 0)[0]
    assert "out of stock" in call(env, "add_to_cart", item_id=out_of_stock)["error"]


def test_quantity_cap_comes_from_config(catalog):
    env = EcomEnv(fx.world_task(catalog), catalog, EnvConfig(max_steps=64, max_quantity_per_item=2))
    env.reset()
    item = in_stock_item(catalog, min_stock=5)
    assert call(env, "add_to_cart", item_id=item, quantity=3)["code"] == "not_allowed"
    assert call(env, "add_to_cart", item_id=item, quantity=2)["ok"]


def test_remove_and_set_quantity(env, catalog):
    item = in_stock_item(catalog, min_stock=20)
    assert call(env, "remove_from_cart", item_id=item)["code"] == "not_found"
    assert call(env, "set_quantity", item_id=item, quantity=2)["code"] == "not_found"
    call(env, "add_to_cart", item_id=item)
    assert call(env, "set_quantity", item_id=item, quantity=3)["quantity"] == 3
    assert call(env, "set_quantity", item_id=item, quantity=11)["code"] == "not_allowed"
    assert call(env, "set_quantity", item_id=item, quantity=-1)["code"] == "invalid_arguments"
    assert call(env, "set_quantity", item_id=item, quantity=0)["ok"]
    assert item not in env.record.state.cart
    call(env, "add_to_cart", item_id=item)
    assert call(env, "remove_from_cart", item_id=item)["cart_items"] == 0


def test_view_cart_totals_and_shipping(env, catalog):
    cheap = rows_where(catalog, lambda r: r["stock"] >= 2 and r["price"] < 20)[0]
    call(env, "add_to_cart", item_id=cheap, quantity=2)
    cart = call(env, "view_cart")
    price = float(catalog.price[catalog.row_of(cheap)])
    assert cart["subtotal"] == pytest.approx(2 * price)
    expected_fee = 4.99 if 2 * price < 50 else 0.0
    assert cart["shipping"] == expected_fee
    assert cart["total"] == pytest.approx(2 * price + expected_fee)


def test_plus_members_ship_free(catalog):
    env = EcomEnv(fx.world_task(catalog, membership="plus"), catalog, CONFIG)
    env.reset()
    cheap = rows_where(catalog, lambda r: r["stock"] >= 1 and r["price"] < 20)[0]
    call(env, "add_to_cart", item_id=cheap)
    assert call(env, "view_cart")["shipping"] == 0.0


# ---- checkout ---------------------------------------------------------------------------------


def test_checkout_refuses_an_empty_cart_and_unknown_payment(env, catalog):
    assert call(env, "checkout")["code"] == "not_allowed"
    call(env, "add_to_cart", item_id=in_stock_item(catalog, 5))
    assert "payment" in call(env, "checkout", payment_method="bitcoin")["error"]
    assert call(env, "checkout", shipping_address="   ")["code"] == "invalid_arguments"


def test_checkout_places_a_pending_order_and_uses_up_stock(env, catalog):
    item = in_stock_item(catalog, min_stock=2, max_stock=4)
    stock = int(catalog.stock[catalog.row_of(item)])
    call(env, "add_to_cart", item_id=item, quantity=stock)
    out = call(env, "checkout", payment_method="paypal")
    assert out["order_id"] == "N0001" and out["status"] == "pending"
    order = env.record.state.orders["N0001"]
    assert order["payment_method"] == "paypal" and order["placed"] == fx.TODAY
    assert order["items"] == [
        {"item_id": item, "quantity": stock, "price": out["items"][0]["price"]}
    ]
    assert env.record.state.cart == {}
    assert "out of stock" in call(env, "add_to_cart", item_id=item)["error"]


def test_checkout_refuses_an_out_of_stock_line_from_the_initial_cart(catalog):
    gone = rows_where(catalog, lambda r: r["stock"] == 0)[0]
    task = fx.world_task(catalog)
    task.initial_state["cart"] = [{"item_id": gone, "quantity": 1}]
    env = EcomEnv(task, catalog, CONFIG)
    env.reset()
    refused = call(env, "checkout")
    assert refused["code"] == "not_allowed" and gone in refused["error"]
    assert env.record.state.new_order_ids == []


# ---- orders -----------------------------------------------------------------------------------


def test_list_and_get_orders(env):
    listed = call(env, "list_orders")
    assert listed["count"] == 6
    assert listed["orders"][0]["order_id"] == "O5006"  # newest first
    order = call(env, "get_order", order_id="O5003")
    assert order["status"] == "delivered" and len(order["items"]) == 2
    assert call(env, "get_order", order_id="O0000")["code"] == "not_found"


@pytest.mark.parametrize("order_id", ["O5001", "O5006"])
def test_cancel_pending_or_processing(env, order_id):
    out = call(env, "cancel_order", order_id=order_id, reason="changed my mind")
    assert out["status"] == "cancelled"
    assert env.record.state.orders[order_id]["status"] == "cancelled"
    again = call(env, "cancel_order", order_id=order_id, reason="again")
    assert "already cancelled" in again["error"]


@pytest.mark.parametrize("order_id", ["O5002", "O5003", "O5005"])
def test_cancel_refused_after_shipping(env, order_id):
    out = call(env, "cancel_order", order_id=order_id, reason="too late")
    assert out["code"] == "not_allowed"
    assert env.record.state.orders[order_id]["status"] != "cancelled" or order_id == "O5005"


def test_cancel_needs_a_reason_and_a_known_order(env):
    assert call(env, "cancel_order", order_id="O5001", reason=" ")["code"] == "invalid_arguments"
    assert call(env, "cancel_order", order_id="O404", reason="x")["code"] == "not_found"


# ---- returns and exchanges ---------------------------------------------------------------------


def _line(env, order_id, k=0):
    return env.record.state.orders[order_id]["items"][k]["item_id"]


def test_return_happy_path_and_no_second_return(env):
    jacket = _line(env, "O5003")
    out = call(env, "return_item", order_id="O5003", item_id=jacket, reason="too big")
    assert out["kind"] == "return" and out["refund"] > 0 and out["return_id"] == "RN001"
    again = call(env, "return_item", order_id="O5003", item_id=jacket, reason="too big")
    assert again["code"] == "not_allowed" and "already" in again["error"]


def test_return_refusals(env):
    coffee = _line(env, "O5003", 1)
    final_sale = call(env, "return_item", order_id="O5003", item_id=coffee, reason="stale")
    assert "final sale" in final_sale["error"]
    boots = _line(env, "O5002")
    shipped = call(env, "return_item", order_id="O5002", item_id=boots, reason="x")
    assert "only delivered" in shipped["error"]
    jacket = _line(env, "O5004")
    late = call(env, "return_item", order_id="O5004", item_id=jacket, reason="x")
    assert "window" in late["error"]
    never_bought = call(env, "return_item", order_id="O5003", item_id=boots, reason="x")
    assert never_bought["code"] == "not_found"
    assert env.record.state.returns == []


def test_plus_membership_extends_the_return_window(catalog):
    env = EcomEnv(fx.world_task(catalog, membership="plus"), catalog, CONFIG)
    env.reset()
    jacket = _line(env, "O5004")
    assert call(env, "return_item", order_id="O5004", item_id=jacket, reason="x")["ok"]


def test_exchange_rules(env, catalog):
    jacket = _line(env, "O5003")
    row = catalog.row_of(jacket)
    family = [catalog.item_ids[r] for r in catalog.family_rows(row)]
    stocked = [i for i in family if i != jacket and catalog.stock[catalog.row_of(i)] > 0]
    other_family = next(i for i in catalog.item_ids if i not in family)
    same = call(env, "exchange_item", order_id="O5003", item_id=jacket, new_item_id=jacket)
    assert same["code"] == "not_allowed"
    wrong = call(env, "exchange_item", order_id="O5003", item_id=jacket, new_item_id=other_family)
    assert "same product" in wrong["error"]
    unknown = call(env, "exchange_item", order_id="O5003", item_id=jacket, new_item_id="I9999999")
    assert unknown["code"] == "not_found"
    coffee = _line(env, "O5003", 1)
    assert (
        call(env, "exchange_item", order_id="O5003", item_id=coffee, new_item_id=coffee)["code"]
        == "not_allowed"
    )
    if stocked:
        out = call(env, "exchange_item", order_id="O5003", item_id=jacket, new_item_id=stocked[0])
        assert out["kind"] == "exchange" and out["new_item_id"] == stocked[0]


def test_exchange_refuses_an_out_of_stock_variant(catalog):
    # find a family with a delivered-able apparel item and an out-of-stock sibling
    for item in catalog.item_ids:
        row = catalog.row_of(item)
        if catalog.value("department", row) != "apparel":
            continue
        gone = [catalog.item_ids[r] for r in catalog.family_rows(row) if catalog.stock[r] == 0]
        if gone and gone[0] != item:
            break
    else:
        pytest.skip("no family with an out-of-stock variant")
    task = fx.world_task(catalog)
    task.initial_state["orders"][2]["items"][0]["item_id"] = item
    env = EcomEnv(task, catalog, CONFIG)
    env.reset()
    out = call(env, "exchange_item", order_id="O5003", item_id=item, new_item_id=gone[0])
    assert out["code"] == "not_allowed" and "out of stock" in out["error"]


# ---- policies, user, recommend ---------------------------------------------------------------


def test_search_policy_finds_the_rule(env):
    out = call(env, "search_policy", query="return window boots standard")
    assert out["policies"] and "boots" in out["policies"][0]["text"].lower()
    assert call(env, "search_policy", query="zzzz qqqq")["policies"] == []


def test_ask_user_needs_a_question(env):
    assert call(env, "ask_user", question="  ")["code"] == "invalid_arguments"
    assert "answer" in call(env, "ask_user", question="What colour?")


def test_recommend_rules(env, catalog):
    ids = catalog.item_ids[:3]
    assert call(env, "recommend", item_ids=[])["code"] == "invalid_arguments"
    assert call(env, "recommend", item_ids=[ids[0], ids[0]])["code"] == "invalid_arguments"
    assert call(env, "recommend", item_ids=["I9999999"])["code"] == "not_found"
    assert call(env, "recommend", item_ids=catalog.item_ids[:11])["code"] == "invalid_arguments"
    assert call(env, "recommend", item_ids=ids)["recommended"] == ids
    assert env.tools.recommended == ids


# ---- state ------------------------------------------------------------------------------------


def test_state_is_json_and_hash_is_path_independent(catalog):
    item = in_stock_item(catalog, min_stock=5)
    hashes = []
    for plan in ([2], [1, 1]):
        env = EcomEnv(fx.world_task(catalog), catalog, CONFIG)
        env.reset()
        for quantity in plan:
            call(env, "add_to_cart", item_id=item, quantity=quantity)
        state = env.state()
        json.dumps(state)
        assert state["cart"] == [{"item_id": item, "quantity": 2}]
        assert state["page"]["tool"] == "add_to_cart"
        hashes.append(env.state_hash())
    assert hashes[0] == hashes[1]
    fresh = EcomEnv(fx.world_task(catalog), catalog, CONFIG)
    fresh.reset()
    assert fresh.state_hash() != hashes[0]


def test_reset_restores_the_initial_world(env, catalog):
    before = env.state_hash()
    call(env, "cancel_order", order_id="O5001", reason="x")
    assert env.state_hash() != before
    env.reset()
    assert env.state_hash() == before
    assert env.record.state.orders["O5001"]["status"] == "processing"
    assert np.all(catalog.stock >= 0)  # the shared catalog is never mutated
