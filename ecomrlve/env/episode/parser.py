"""Parse raw assistant output into tool calls, final-answer text and format errors.

Accepted shapes (an assistant turn, as the trajectory file stores it):
* a string as Qwen3 emits it: an optional leading `<think>…</think>` (or just the closing tag,
  when the chat template opened the think block), then text and any number of
  `<tool_call>\\n{"name": …, "arguments": {…}}\\n</tool_call>` blocks;
* an OpenAI-style message `{"content": str | None, "tool_calls": [...]}` whose calls are
  `{"name", "arguments"}` or `{"type": "function", "function": {"name", "arguments"}}`;
  `arguments` may be an object or a JSON string.

Nothing here raises on bad input: every problem (bad JSON, unknown tool, wrong argument types,
a missing tag) becomes a `FormatError` in `ParsedTurn.errors`, a string the env sends back to
the agent as a tool message. Valid calls of the same turn are still returned.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import orjson

from ecomrlve.env.shop.products import brief
from ecomrlve.env.shop.tools import TOOL_SPECS, check_arguments


def _loads(text: str) -> Any:
    """orjson for speed; the json module for what orjson refuses (NaN, huge ints) and for its
    error messages. Raises `json.JSONDecodeError` only (also for an int over 4,300 digits,
    which `json` refuses with a bare ValueError)."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            raise
        except ValueError:
            raise json.JSONDecodeError("a number is too long", text, 0) from None


TOOL_CALL = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL)
# one encoder for every call: `json.dumps(..., ensure_ascii=False)` builds a new one each time
_CALL_JSON = json.JSONEncoder(ensure_ascii=False).encode
_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL)


class FormatError(str):
    """A format problem, as a one-line string; `tool` names the tool when it is known."""

    tool: str | None

    def __new__(cls, message: str, tool: str | None = None) -> FormatError:
        obj = super().__new__(cls, message)
        obj.tool = tool
        return obj


@dataclass(slots=True)
class ParsedCall:
    name: str
    arguments: dict[str, Any]
    call_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "arguments": self.arguments}


@dataclass
class ParsedTurn:
    """Calls to run (in order), the visible text, and format errors."""

    calls: list[ParsedCall] = field(default_factory=list)
    content: str = ""
    errors: list[FormatError] = field(default_factory=list)
    # True when the turn tried to call a tool (a tag or a tool_calls entry), valid or not:
    # such a turn never ends the episode.
    attempted: bool = False


def strip_think(text: str) -> tuple[str, FormatError | None]:
    """Drop a leading think block; an unterminated `<think>` is a format error."""
    close = text.find("</think>")
    if close >= 0:
        opening = text.find("<think>")
        if opening < 0 or opening < close:
            return text[close + len("</think>") :], None
    if "<think>" in text:
        start = text.find("<think>")
        return text[:start], FormatError("<think> is never closed with </think>", "think")
    return text, None


def _call_from_object(obj: Any, where: str | int) -> ParsedCall | FormatError:
    """A call from its JSON object; `where` names it in errors (an int k: `<tool_call> #k`,
    formatted only when there is an error)."""
    if not isinstance(obj, dict):
        return FormatError(
            f"{_where(where)}: a tool call must be a JSON object, got {type(obj).__name__}"
        )
    call_id = obj.get("id")
    if not isinstance(call_id, str):
        call_id = None
    function = obj.get("function")
    if isinstance(function, dict):
        obj = function
    name = obj.get("name")
    if not isinstance(name, str) or not name:
        return FormatError(f'{_where(where)}: the tool call has no "name"')
    if name not in TOOL_SPECS:  # before parsing its arguments, and with the name clipped
        return FormatError(
            f"{_where(where)}: unknown tool {brief(name)}; tools: {', '.join(TOOL_SPECS)}"
        )
    arguments = obj.get("arguments", {})
    if arguments is None:
        arguments = {}
    elif isinstance(arguments, str):
        text = arguments.strip()
        if not text:
            arguments = {}
        else:
            try:
                arguments = _loads(text)
            except json.JSONDecodeError as err:
                return FormatError(
                    f"{_where(where)}: {name}: arguments are not valid JSON ({err.msg})", name
                )
    if not isinstance(arguments, dict):
        return FormatError(f"{_where(where)}: {name}: arguments must be a JSON object", name)
    try:
        checked = check_arguments(name, arguments)
    except TypeError as err:
        return FormatError(f"{_where(where)}: {err}", name)
    return ParsedCall(name, checked, call_id)


def _where(where: str | int) -> str:
    return where if isinstance(where, str) else f"<tool_call> #{where}"


OPEN, CLOSE = "<tool_call>", "</tool_call>"


def _blocks(text: str) -> list[tuple[int, int]]:
    """(start of `<tool_call>`, start of its `</tool_call>`) for every complete block; the same
    spans as `TOOL_CALL.finditer`, found with `str.find` (several times faster)."""
    spans = []
    start = text.find(OPEN)
    while start >= 0:
        end = text.find(CLOSE, start + len(OPEN))
        if end < 0:
            break
        spans.append((start, end))
        start = text.find(OPEN, end + len(CLOSE))
    return spans


def _parse_text(text: str, turn: ParsedTurn) -> None:
    if "think>" in text:  # both tags end so; most turns have neither
        text, think_error = strip_think(text)
        if think_error is not None:
            turn.errors.append(think_error)
    # no tag at all (a reply to the customer): all of it is content
    rest = text if "tool_call>" not in text else _parse_blocks(text, turn)
    turn.content = (turn.content + "\n" + rest).strip() if turn.content else rest.strip()


def _parse_blocks(text: str, turn: ParsedTurn) -> str:
    """Add the calls of every `<tool_call>` block to `turn`; return the text around them."""
    pieces: list[str] = []
    last = 0
    for k, (start, end) in enumerate(_blocks(text), start=1):
        pieces.append(text[last:start])
        last = end + len(CLOSE)
        body = text[start + len(OPEN) : end].strip()
        if body.startswith("`"):
            fenced = _FENCE.match(body)
            if fenced:
                body = fenced.group(1)
        try:
            obj = _loads(body)
        except json.JSONDecodeError as err:
            turn.errors.append(FormatError(f"{_where(k)}: not valid JSON ({err.msg})"))
            continue
        add(turn, _call_from_object(obj, k))
    pieces.append(text[last:])
    rest = "".join(pieces)
    if last:
        turn.attempted = True
    if "tool_call>" in rest:  # a stray tag, opening or closing
        turn.attempted = True
        if "<tool_call>" in rest:
            turn.errors.append(FormatError("<tool_call> is never closed with </tool_call>"))
            rest = rest.split("<tool_call>", 1)[0]
        if "</tool_call>" in rest:
            turn.errors.append(FormatError("</tool_call> without an opening <tool_call>"))
            rest = rest.replace("</tool_call>", "")
    return rest


def add(turn: ParsedTurn, item: ParsedCall | FormatError) -> None:
    if isinstance(item, FormatError):
        turn.errors.append(item)
    else:
        turn.calls.append(item)


def parse_turn(turn: Any) -> ParsedTurn:
    """Parse one assistant turn (raw string or message object); never raises."""
    parsed = ParsedTurn()
    try:
        if isinstance(turn, str):
            _parse_text(turn, parsed)
        elif isinstance(turn, dict):
            role = turn.get("role", "assistant")
            if role != "assistant":
                parsed.errors.append(
                    FormatError(f"expected an assistant turn, got role {role!r}", "turn")
                )
                return parsed
            content = turn.get("content")
            if isinstance(content, list):  # content parts: keep the text ones
                content = "".join(
                    p["text"]
                    for p in content
                    if isinstance(p, dict) and isinstance(p.get("text"), str)
                )
            if content is not None and not isinstance(content, str):
                parsed.errors.append(FormatError("message content must be a string or null"))
                content = None
            _parse_text(content or "", parsed)
            calls = turn.get("tool_calls") or []
            parsed.attempted = parsed.attempted or bool(calls)
            if not isinstance(calls, list):
                parsed.errors.append(FormatError("tool_calls must be a list"))
                calls = []
            for k, call in enumerate(calls, start=1):
                add(parsed, _call_from_object(call, f"tool_calls[{k - 1}]"))
        elif turn is None:
            parsed.errors.append(FormatError("empty turn (null)", "answer"))
        else:
            parsed.errors.append(
                FormatError(
                    f"a turn must be a string or a message object, got {type(turn).__name__}",
                    "turn",
                )
            )
    except RecursionError:
        parsed.errors.append(FormatError("turn is nested too deeply to parse", "turn"))
        parsed.attempted = True  # only tool-call JSON nests: never a final answer
    return parsed


def format_call(name: str, arguments: dict[str, Any]) -> str:
    """One tool call in Qwen3's raw format (what `reference_turns` emits)."""
    payload = _CALL_JSON({"name": name, "arguments": arguments})
    return f"<tool_call>\n{payload}\n</tool_call>"
