"""The follow-up oracle's readers: from a request body, the assistant turn a client sent back.

Every agent loop echoes the assistant's tool calls (id, name, arguments) to the provider with the
results of running them. Each reader is a pure function of one dialect's parsed JSON request body:
it returns the last assistant turn and the tool results after it, or None when the body carries no
tool results after that turn (a first request, not a follow-up). A later change moves each reader
into its dialect module.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness.check.outcome import ToolCall

__all__ = ["READERS", "ToolResult", "Turn", "read_followup"]


@dataclass(frozen=True, slots=True)
class ToolResult:
    """A tool's result the client attached: which call it answers and what it says."""

    call_id: str | None
    name: str | None
    content: Any


@dataclass(frozen=True, slots=True)
class Turn:
    """The assistant turn a follow-up request carries back, with the results attached to it.

    `by_reference`: the calls were not echoed but named by id only (a Responses request with
    `previous_response_id`); the results' call ids are then all there is to judge."""

    calls: tuple[ToolCall, ...]
    results: tuple[ToolResult, ...]
    text: str = ""
    by_reference: bool = False


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _dict(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _call_from_text(name: Any, arguments: Any, call_id: Any) -> ToolCall:
    """A call whose arguments travel as a JSON string (OpenAI, Cohere)."""
    if isinstance(arguments, str):
        return ToolCall.from_text(_str(name), arguments, _str(call_id))
    return ToolCall(name=_str(name), arguments={} if arguments is None else arguments, id=_str(call_id))


def _call_from_object(name: Any, arguments: Any, call_id: Any) -> ToolCall:
    """A call whose arguments travel as a JSON object (Anthropic, Gemini, Bedrock, Ollama)."""
    if isinstance(arguments, str):  # some clients send the text they reassembled: judge it as text
        return ToolCall.from_text(_str(name), arguments, _str(call_id))
    return ToolCall(name=_str(name), arguments={} if arguments is None else arguments, id=_str(call_id))


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(
        part["text"]
        for part in _list(content)
        if isinstance(part, Mapping) and isinstance(part.get("text"), str)
    )


def _split(
    messages: Sequence[Any], is_assistant: Callable[[Mapping[str, Any]], bool]
) -> tuple[int, list[Any]]:
    """The index of the last assistant message (-1: none) and the messages after it."""
    last = -1
    for i, message in enumerate(messages):
        if isinstance(message, Mapping) and is_assistant(message):
            last = i
    return last, list(messages[last + 1 :])


def _read_messages(
    body: Mapping[str, Any],
    result_roles: tuple[str, ...],
    result_name: Callable[[Mapping[str, Any]], str | None],
    call: Callable[[Any, Any, Any], ToolCall],
) -> Turn | None:
    """The OpenAI-shaped `messages` list (OpenAI chat, Ollama, Cohere v2): the last assistant turn's
    `tool_calls` and the tool messages after it; the three differ only in the names below."""
    messages = _list(body.get("messages"))
    last, after = _split(messages, lambda m: m.get("role") == "assistant")
    results = tuple(
        ToolResult(_str(m.get("tool_call_id")), result_name(m), m.get("content"))
        for m in after
        if isinstance(m, Mapping) and m.get("role") in result_roles
    )
    if not results:
        return None
    turn = _dict(messages[last]) if last >= 0 else {}
    calls = tuple(
        call(_dict(c.get("function")).get("name"), _dict(c.get("function")).get("arguments"), c.get("id"))
        for c in _list(turn.get("tool_calls"))
        if isinstance(c, Mapping)
    )
    return Turn(calls, results, _text_of(turn.get("content")))


def read_openai_chat(body: Mapping[str, Any]) -> Turn | None:
    return _read_messages(body, ("tool", "function"), lambda m: _str(m.get("name")), _call_from_text)


def read_openai_responses(body: Mapping[str, Any]) -> Turn | None:
    items = body.get("input")
    if not isinstance(items, list):
        return None
    # The assistant turn is the run of output items (messages, reasoning, calls) before the outputs.
    outputs_at = [i for i, item in enumerate(items) if _dict(item).get("type") == "function_call_output"]
    if not outputs_at:
        return None
    end = outputs_at[0]
    start = end
    while start > 0 and _dict(items[start - 1]).get("type") in ("function_call", "reasoning", "message"):
        if (
            _dict(items[start - 1]).get("type") == "message"
            and _dict(items[start - 1]).get("role") != "assistant"
        ):
            break
        start -= 1
    turn = [_dict(item) for item in items[start:end]]
    calls = tuple(
        _call_from_text(item.get("name"), item.get("arguments"), item.get("call_id"))
        for item in turn
        if item.get("type") == "function_call"
    )
    text = "".join(_text_of(item.get("content")) for item in turn if item.get("type") == "message")
    results = tuple(
        ToolResult(_str(_dict(item).get("call_id")), None, _dict(item).get("output"))
        for item in items[end:]
        if _dict(item).get("type") == "function_call_output"
    )
    by_reference = not calls and body.get("previous_response_id") is not None
    return Turn(calls, results, text, by_reference)


def read_anthropic(body: Mapping[str, Any]) -> Turn | None:
    messages = _list(body.get("messages"))
    last, after = _split(messages, lambda m: m.get("role") == "assistant")
    results = tuple(
        ToolResult(_str(block.get("tool_use_id")), None, block.get("content"))
        for m in after
        if isinstance(m, Mapping)
        for block in _list(m.get("content"))
        if isinstance(block, Mapping) and block.get("type") == "tool_result"
    )
    if not results:
        return None
    content = _dict(messages[last]).get("content") if last >= 0 else None
    blocks = [_dict(b) for b in _list(content)]
    calls = tuple(
        _call_from_object(b.get("name"), b.get("input"), b.get("id"))
        for b in blocks
        if b.get("type") == "tool_use"
    )
    return Turn(calls, results, _text_of([b for b in blocks if b.get("type") == "text"] or content))


def read_gemini(body: Mapping[str, Any]) -> Turn | None:
    contents = _list(body.get("contents"))
    last, after = _split(contents, lambda m: m.get("role") == "model")
    results = tuple(
        ToolResult(_str(response.get("id")), _str(response.get("name")), response.get("response"))
        for m in after
        if isinstance(m, Mapping)
        for part in _list(m.get("parts"))
        for response in [_dict(_dict(part).get("functionResponse"))]
        if response
    )
    if not results:
        return None
    parts = [_dict(p) for p in _list(_dict(contents[last]).get("parts"))] if last >= 0 else []
    calls = tuple(
        _call_from_object(call.get("name"), call.get("args"), call.get("id"))
        for part in parts
        for call in [_dict(part.get("functionCall"))]
        if call
    )
    text = "".join(p["text"] for p in parts if isinstance(p.get("text"), str) and not p.get("thought"))
    return Turn(calls, results, text)


def read_bedrock_converse(body: Mapping[str, Any]) -> Turn | None:
    messages = _list(body.get("messages"))
    last, after = _split(messages, lambda m: m.get("role") == "assistant")
    results = tuple(
        ToolResult(_str(result.get("toolUseId")), None, result.get("content"))
        for m in after
        if isinstance(m, Mapping)
        for block in _list(m.get("content"))
        for result in [_dict(_dict(block).get("toolResult"))]
        if result
    )
    if not results:
        return None
    blocks = [_dict(b) for b in _list(_dict(messages[last]).get("content"))] if last >= 0 else []
    calls = tuple(
        _call_from_object(use.get("name"), use.get("input"), use.get("toolUseId"))
        for block in blocks
        for use in [_dict(block.get("toolUse"))]
        if use
    )
    return Turn(calls, results, "".join(b["text"] for b in blocks if isinstance(b.get("text"), str)))


def read_ollama(body: Mapping[str, Any]) -> Turn | None:
    # Ollama sends arguments as an object and names the tool in `tool_name`.
    return _read_messages(
        body, ("tool",), lambda m: _str(m.get("tool_name") or m.get("name")), _call_from_object
    )


def read_cohere(body: Mapping[str, Any]) -> Turn | None:
    return _read_messages(body, ("tool",), lambda m: None, _call_from_text)


READERS: dict[str, Callable[[Mapping[str, Any]], Turn | None]] = {
    "openai-chat": read_openai_chat,
    "openai-responses": read_openai_responses,
    "anthropic": read_anthropic,
    "gemini": read_gemini,
    "bedrock-converse": read_bedrock_converse,
    "ollama": read_ollama,
    "cohere": read_cohere,
}


def read_followup(dialect: str, body: Any) -> Turn | None:
    """The turn a request body of `dialect` carries back, or None when it is not a follow-up."""
    if isinstance(body, (bytes, str)):
        try:
            body = json.loads(body)
        except ValueError:
            return None
    if not isinstance(body, Mapping):
        return None
    return READERS[dialect](body)
