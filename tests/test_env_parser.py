"""The parser on real-shaped Qwen3 / OpenAI outputs, malformed ones, and fuzz (never raises)."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from ecomrlve.config import EnvConfig
from ecomrlve.env import TOOL_NAMES, EcomEnv, FormatError, parse_turn
from ecomrlve.testing import env_tasks as fx

SEARCH = {"name": "search", "arguments": {"query": "boots", "filters": {"size": "9"}}}


def block(obj) -> str:
    return f"<tool_call>\n{json.dumps(obj)}\n</tool_call>"


def test_single_qwen_call():
    turn = parse_turn(block(SEARCH))
    assert [c.to_dict() for c in turn.calls] == [SEARCH]
    assert turn.content == "" and turn.errors == [] and turn.attempted


def test_think_block_and_several_calls():
    text = (
        "<think>\nThe user wants boots. I'll search, then view the cart.\n</think>\n\n"
        "Let me look.\n" + block(SEARCH) + "\n" + block({"name": "view_cart", "arguments": {}})
    )
    turn = parse_turn(text)
    assert [c.name for c in turn.calls] == ["search", "view_cart"]
    assert turn.content == "Let me look."
    assert not turn.errors


def test_think_opened_by_the_template():
    # with enable_thinking the chat template already wrote "<think>\n": only the close appears
    turn = parse_turn("reasoning here\n</think>\n\nYour order has shipped.")
    assert turn.content == "Your order has shipped." and not turn.calls and not turn.attempted


def test_empty_think_of_non_thinking_mode():
    turn = parse_turn("<think>\n\n</think>\n\n" + block(SEARCH))
    assert turn.calls[0].name == "search"


def test_tool_call_inside_think_is_ignored():
    turn = parse_turn("<think>maybe " + block(SEARCH) + "</think>Done, bye.")
    assert not turn.calls and turn.content == "Done, bye."


def test_arguments_as_json_string_and_code_fence():
    turn = parse_turn(
        '<tool_call>\n```json\n{"name": "get_product", "arguments": "{\\"item_id\\": \\"I1\\"}"}'
        "\n```\n</tool_call>"
    )
    assert turn.calls[0].arguments == {"item_id": "I1"} and not turn.errors


def test_openai_message_forms():
    message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "get_order", "arguments": '{"order_id": "O1"}'}},
            {"name": "view_cart", "arguments": {}},
        ],
    }  # fmt: skip
    turn = parse_turn(message)
    assert [c.name for c in turn.calls] == ["get_order", "view_cart"]
    assert turn.calls[0].call_id == "call_1" and turn.calls[0].arguments == {"order_id": "O1"}
    answer = parse_turn({"content": "Here you go.", "tool_calls": []})
    assert answer.content == "Here you go." and not answer.attempted


def test_integral_float_is_accepted_for_int():
    turn = parse_turn(
        block({"name": "add_to_cart", "arguments": {"item_id": "I1", "quantity": 2.0}})
    )
    assert turn.calls[0].arguments["quantity"] == 2 and not turn.errors


def test_missing_arguments_key_means_no_arguments():
    assert parse_turn(block({"name": "list_orders"})).calls[0].arguments == {}


MALFORMED = {
    "bad json": ('<tool_call>\n{"name": "search", "arguments": {"query": }\n</tool_call>', "JSON"),
    "unknown tool": (block({"name": "buy_now", "arguments": {}}), "unknown tool"),
    "wrong type": (block({"name": "search", "arguments": {"query": 3}}), "must be a string"),
    "bool for int": (
        block({"name": "add_to_cart", "arguments": {"item_id": "I1", "quantity": True}}),
        "integer",
    ),
    "missing arg": (block({"name": "get_order", "arguments": {}}), "missing"),
    "extra arg": (block({"name": "view_cart", "arguments": {"all": True}}), "unknown argument"),
    "unclosed": ('<tool_call>\n{"name": "view_cart", "arguments": {}}', "never closed"),
    "stray close": ('{"name": "view_cart"}</tool_call>', "without an opening"),
    "no name": (block({"arguments": {}}), 'no "name"'),
    "list args": (block({"name": "view_cart", "arguments": [1]}), "JSON object"),
    "not object": ("<tool_call>[1, 2]</tool_call>", "JSON object"),
    "bad string args": (
        '<tool_call>{"name": "view_cart", "arguments": "{oops"}</tool_call>',
        "not valid JSON",
    ),
    "bad filters": (
        block({"name": "search", "arguments": {"query": "x", "filters": {"colour": "red"}}}),
        "unknown filter",
    ),
    "list of ints": (block({"name": "recommend", "arguments": {"item_ids": [1, 2]}}), "list"),
}


def test_malformed_outputs_give_clear_errors():
    for label, (text, needle) in MALFORMED.items():
        turn = parse_turn(text)
        assert turn.errors, label
        assert not turn.calls, label
        assert turn.attempted, label
        assert any(needle in e for e in turn.errors), (label, turn.errors)
        assert all(isinstance(e, FormatError) and "\n" not in e for e in turn.errors)


def test_valid_calls_survive_a_bad_sibling():
    turn = parse_turn(block(SEARCH) + "\n<tool_call>{bad}</tool_call>")
    assert [c.name for c in turn.calls] == ["search"] and len(turn.errors) == 1


def test_unclosed_think_is_an_error_but_not_a_call():
    turn = parse_turn("<think>I keep thinking and never stop")
    assert turn.errors and not turn.attempted and not turn.calls


def test_odd_turn_types():
    assert parse_turn(None).errors
    assert parse_turn(42).errors
    assert parse_turn({"role": "tool", "content": "{}"}).errors
    assert parse_turn({"content": 5}).errors
    assert parse_turn({"content": "x", "tool_calls": "nope"}).errors


# ---- fuzz: the parser and the env never raise --------------------------------------------------

FRAGMENTS = st.sampled_from([
    "<tool_call>", "</tool_call>", "<think>", "</think>", '{"name": "search"', '"arguments":',
    "{", "}", "[", "]", '"', ":", ",", "null", "true", "1e999", '"query": "x"', "\n",
    '{"name": "view_cart", "arguments": {}}', '{"name": "add_to_cart", "arguments": {"item_id":',
    "\\u0000", "\\", "I0000001", "AND", "(", "*",
])  # fmt: skip

JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(pieces=st.lists(FRAGMENTS | st.text(max_size=10), max_size=25))
def test_parser_never_raises_on_garbage(pieces):
    turn = parse_turn("".join(pieces))
    assert isinstance(turn.content, str)
    assert all(isinstance(e, str) for e in turn.errors)


@settings(max_examples=200, deadline=None)
@given(name=st.sampled_from(["search", "add_to_cart", "recommend", "checkout", "x"]), args=JSONISH)
def test_any_arguments_never_raise(name, args):
    for turn in (
        {"content": None, "tool_calls": [{"name": name, "arguments": args}]},
        {"tool_calls": [{"type": "function", "function": {"name": name, "arguments": args}}]},
        f"<tool_call>{json.dumps({'name': name, 'arguments': args})}</tool_call>",
    ):
        parsed = parse_turn(turn)
        assert parsed.calls or parsed.errors


@settings(max_examples=60, deadline=None)
@given(turns=st.lists(st.one_of(FRAGMENTS, JSONISH, st.text(max_size=30)), max_size=6))
def test_env_step_never_raises(turns):
    catalog = fx.small_catalog()
    env = EcomEnv(fx.world_task(catalog), catalog, EnvConfig(max_steps=4))
    env.reset()
    for turn in turns:
        result = env.step(turn)
        assert isinstance(result.reward, float)
        if result.done:
            assert "verdict" in result.info
            break


def test_format_errors_go_back_as_tool_messages():
    catalog = fx.small_catalog()
    env = EcomEnv(fx.world_task(catalog), catalog)
    env.reset()
    result = env.step(MALFORMED["wrong type"][0])
    assert not result.done
    message = result.observation[0]
    assert message["role"] == "tool" and message["name"] == "search"
    assert "must be a string" in json.loads(message["content"])["error"]
    assert result.info["format_errors"]


IDS = st.sampled_from(["I0000001", "I0000087", "O5001", "O5003", "N0001", "I9999999", ""])
NUMBERS = st.one_of(
    st.integers(-(10**30), 10**30),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0, 1, 2, 10**400, -(10**400)]),
)
TEXTS = st.one_of(st.text(max_size=12), st.sampled_from(["\ud800", "é", "(*", "AND"]))
FILTER_KEYS = ["category", "brand", "color", "size", "min_price", "max_price", "min_rating",
               "max_ship_days", "in_stock", "colour"]  # fmt: skip
ARGUMENT_KEYS = ["query", "filters", "top_k", "item_id", "quantity", "order_id", "reason",
                 "new_item_id", "item_ids", "question", "shipping_address", "payment_method",
                 "bogus"]  # fmt: skip
VALUES = st.one_of(
    IDS,
    NUMBERS,
    TEXTS,
    st.booleans(),
    st.none(),
    st.dictionaries(
        st.sampled_from(FILTER_KEYS),
        st.one_of(NUMBERS, TEXTS, st.booleans(), st.none()),
        max_size=4,
    ),
    st.lists(st.one_of(IDS, TEXTS, NUMBERS), max_size=4),
)
CALLS = st.tuples(
    st.sampled_from(TOOL_NAMES), st.dictionaries(st.sampled_from(ARGUMENT_KEYS), VALUES, max_size=4)
)


@settings(max_examples=300, deadline=None)
@given(calls=st.lists(CALLS, min_size=1, max_size=6))
def test_well_formed_calls_with_wild_arguments_never_raise(calls):
    """Huge ints, NaN, lone surrogates, wrong shapes, unknown keys: a message, never a raise."""
    catalog = fx.small_catalog()
    env = EcomEnv(fx.world_task(catalog), catalog, EnvConfig(max_steps=8))
    env.reset()
    for name, arguments in calls:
        turn = {"content": None, "tool_calls": [{"name": name, "arguments": arguments}]}
        result = env.step(turn)
        for message in result.observation:
            assert isinstance(json.loads(message["content"]), dict)
        if result.done:
            break
    assert isinstance(env.state(), dict)


@settings(max_examples=300, deadline=None)
@given(pieces=st.lists(FRAGMENTS | st.text(max_size=6), max_size=25))
def test_block_finder_equals_the_regex(pieces):
    from ecomrlve.env.episode.parser import TOOL_CALL, _blocks

    text = "".join(pieces)
    expected = [(m.start(), m.end() - len("</tool_call>")) for m in TOOL_CALL.finditer(text)]
    assert _blocks(text) == expected
