"""What the replay server says besides the case's own stream, in each provider's shape.

- `final_answer`: the short answer to a follow-up request (it carried tool results), streamed or
  whole, so an agent loop ends cleanly.
- `whole_response`: a case's outcome as one non-streaming body (`stream: false`, Gemini
  `generateContent`, Bedrock `Converse`), for programs that do not stream.
- `error_response`: an in-band error of a case, as the status and body a non-streaming call gets.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from harness.check.outcome import Outcome, ToolCall
from harness.wire.codecs import WireEvent
from harness.wire.codecs.eventstream import encode_frame

__all__ = ["FINAL_TEXT", "MEDIA_TYPES", "error_response", "final_answer", "whole_response"]

FINAL_TEXT = "Done."
MODEL = "toolstream-replay"

# The media type each dialect streams with.
MEDIA_TYPES = {
    "openai-chat": "text/event-stream",
    "openai-responses": "text/event-stream",
    "anthropic": "text/event-stream",
    "gemini": "text/event-stream",
    "bedrock-converse": "application/vnd.amazon.eventstream",
    "ollama": "application/x-ndjson",
    "cohere": "text/event-stream",
}
JSON = "application/json"


def _dumps(payload: Any) -> str:
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"))


def _sse(events: Iterable[tuple[str | None, Any]]) -> bytes:
    out = []
    for name, payload in events:
        data = payload if isinstance(payload, str) else _dumps(payload)
        out.append((f"event: {name}\n" if name else "") + f"data: {data}\n\n")
    return "".join(out).encode()


def _args_text(call: ToolCall) -> str:
    return call.arguments if isinstance(call.arguments, str) else _dumps(call.arguments)


def _call_id(call: ToolCall, n: int, prefix: str) -> str:
    return call.id or f"{prefix}{n}"


# ---------------------------------------------------------------------------------------------
# Final answers (streamed)


def _openai_chat_stream() -> bytes:
    head = {"id": "chatcmpl-final", "object": "chat.completion.chunk", "created": 0, "model": MODEL}
    return _sse(
        [
            (
                None,
                {
                    **head,
                    "choices": [
                        {
                            "index": 0,
                            "delta": {"role": "assistant", "content": FINAL_TEXT},
                            "finish_reason": None,
                        }
                    ],
                },
            ),
            (None, {**head, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
            (None, "[DONE]"),
        ]
    )


def _responses_object(status: str, output: list[Any]) -> dict[str, Any]:
    return {
        "id": "resp_final",
        "object": "response",
        "created_at": 0,
        "status": status,
        "model": MODEL,
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": 1,
            "output_tokens": 1,
            "total_tokens": 2,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    }


def _responses_message(text: str, status: str = "completed") -> dict[str, Any]:
    content = [{"type": "output_text", "text": text, "annotations": []}] if status == "completed" else []
    return {"id": "msg_final", "type": "message", "role": "assistant", "status": status, "content": content}


def _openai_responses_stream() -> bytes:
    part = {"type": "output_text", "text": "", "annotations": []}
    where = {"item_id": "msg_final", "output_index": 0, "content_index": 0}
    events: list[tuple[str, dict[str, Any]]] = [
        ("response.created", {"response": _responses_object("in_progress", [])}),
        ("response.output_item.added", {"output_index": 0, "item": _responses_message("", "in_progress")}),
        ("response.content_part.added", {**where, "part": part}),
        ("response.output_text.delta", {**where, "delta": FINAL_TEXT}),
        ("response.output_text.done", {**where, "text": FINAL_TEXT}),
        ("response.content_part.done", {**where, "part": {**part, "text": FINAL_TEXT}}),
        ("response.output_item.done", {"output_index": 0, "item": _responses_message(FINAL_TEXT)}),
        (
            "response.completed",
            {"response": _responses_object("completed", [_responses_message(FINAL_TEXT)])},
        ),
    ]
    return _sse(
        (name, {"type": name, **payload, "sequence_number": n}) for n, (name, payload) in enumerate(events)
    )


def _anthropic_stream() -> bytes:
    message: dict[str, Any] = {
        "id": "msg_final",
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }
    return _sse(
        [
            ("message_start", {"type": "message_start", "message": message}),
            (
                "content_block_start",
                {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
            ),
            (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": FINAL_TEXT},
                },
            ),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                    "usage": {"output_tokens": 2},
                },
            ),
            ("message_stop", {"type": "message_stop"}),
        ]
    )


def _gemini_stream() -> bytes:
    return _sse([(None, _gemini_whole(Outcome(text=FINAL_TEXT, finish_reason="STOP")))])


def _bedrock_stream() -> bytes:
    frames = [
        ("messageStart", {"role": "assistant"}),
        ("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": FINAL_TEXT}}),
        ("contentBlockStop", {"contentBlockIndex": 0}),
        ("messageStop", {"stopReason": "end_turn"}),
        (
            "metadata",
            {"usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2}, "metrics": {"latencyMs": 1}},
        ),
    ]
    return b"".join(encode_frame(WireEvent(data=_dumps(payload), name=name)) for name, payload in frames)


def _ollama_stream() -> bytes:
    head = {"model": MODEL, "created_at": "2025-01-01T00:00:00Z"}
    lines = [
        {**head, "message": {"role": "assistant", "content": FINAL_TEXT}, "done": False},
        {**head, "message": {"role": "assistant", "content": ""}, "done": True, "done_reason": "stop"},
    ]
    return "".join(_dumps(line) + "\n" for line in lines).encode()


def _cohere_stream() -> bytes:
    return _sse(
        [
            (
                "message-start",
                {
                    "type": "message-start",
                    "id": "final",
                    "delta": {
                        "message": {
                            "role": "assistant",
                            "content": [],
                            "tool_plan": "",
                            "tool_calls": [],
                            "citations": [],
                        }
                    },
                },
            ),
            (
                "content-start",
                {
                    "type": "content-start",
                    "index": 0,
                    "delta": {"message": {"content": {"type": "text", "text": ""}}},
                },
            ),
            (
                "content-delta",
                {
                    "type": "content-delta",
                    "index": 0,
                    "delta": {"message": {"content": {"text": FINAL_TEXT}}},
                },
            ),
            ("content-end", {"type": "content-end", "index": 0}),
            (
                "message-end",
                {
                    "type": "message-end",
                    "delta": {
                        "finish_reason": "COMPLETE",
                        "usage": {
                            "billed_units": {"input_tokens": 1, "output_tokens": 1},
                            "tokens": {"input_tokens": 1, "output_tokens": 1},
                        },
                    },
                },
            ),
            (None, "[DONE]"),
        ]
    )


_STREAMS: dict[str, Callable[[], bytes]] = {
    "openai-chat": _openai_chat_stream,
    "openai-responses": _openai_responses_stream,
    "anthropic": _anthropic_stream,
    "gemini": _gemini_stream,
    "bedrock-converse": _bedrock_stream,
    "ollama": _ollama_stream,
    "cohere": _cohere_stream,
}


def final_answer(dialect: str, *, stream: bool) -> tuple[str, bytes]:
    """The media type and body of the short final answer to a follow-up request."""
    if stream:
        return MEDIA_TYPES[dialect], _STREAMS[dialect]()
    return JSON, whole_response(dialect, Outcome(text=FINAL_TEXT))


# ---------------------------------------------------------------------------------------------
# Whole (non-streaming) responses


def _openai_chat_whole(outcome: Outcome) -> dict[str, Any]:
    calls = [
        {
            "id": _call_id(c, n, "call_"),
            "type": "function",
            "function": {"name": c.name or "", "arguments": _args_text(c)},
        }
        for n, c in enumerate(outcome.tool_calls)
    ]
    message: dict[str, Any] = {"role": "assistant", "content": outcome.text or None}
    if calls:
        message["tool_calls"] = calls
    finish = outcome.finish_reason or ("tool_calls" if calls else "stop")
    return {
        "id": "chatcmpl-replay",
        "object": "chat.completion",
        "created": 0,
        "model": MODEL,
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


def _openai_responses_whole(outcome: Outcome) -> dict[str, Any]:
    output: list[Any] = [_responses_message(outcome.text)] if outcome.text else []
    for n, c in enumerate(outcome.tool_calls):
        call_id = _call_id(c, n, "call_")
        output.append(
            {
                "id": f"fc_{call_id}",
                "type": "function_call",
                "status": "completed",
                "call_id": call_id,
                "name": c.name or "",
                "arguments": _args_text(c),
            }
        )
    return _responses_object("completed", output)


def _anthropic_whole(outcome: Outcome) -> dict[str, Any]:
    content: list[Any] = [{"type": "text", "text": outcome.text}] if outcome.text else []
    content += [
        {"type": "tool_use", "id": _call_id(c, n, "toolu_"), "name": c.name or "", "input": c.arguments}
        for n, c in enumerate(outcome.tool_calls)
    ]
    stop = outcome.finish_reason or ("tool_use" if outcome.tool_calls else "end_turn")
    return {
        "id": "msg_replay",
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }


def _gemini_whole(outcome: Outcome) -> dict[str, Any]:
    parts: list[Any] = [{"text": outcome.text}] if outcome.text else []
    for c in outcome.tool_calls:
        call: dict[str, Any] = {"name": c.name or "", "args": c.arguments}
        if c.id:
            call["id"] = c.id
        parts.append({"functionCall": call})
    return {
        "candidates": [
            {
                "content": {"role": "model", "parts": parts},
                "finishReason": outcome.finish_reason or "STOP",
                "index": 0,
            }
        ],
        "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2},
        "modelVersion": MODEL,
    }


def _bedrock_whole(outcome: Outcome) -> dict[str, Any]:
    content: list[Any] = [{"text": outcome.text}] if outcome.text else []
    content += [
        {"toolUse": {"toolUseId": _call_id(c, n, "tooluse_"), "name": c.name or "", "input": c.arguments}}
        for n, c in enumerate(outcome.tool_calls)
    ]
    stop = outcome.finish_reason or ("tool_use" if outcome.tool_calls else "end_turn")
    return {
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": stop,
        "usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2},
        "metrics": {"latencyMs": 1},
    }


def _ollama_whole(outcome: Outcome) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": outcome.text}
    if outcome.tool_calls:
        message["tool_calls"] = [
            {**({"id": c.id} if c.id else {}), "function": {"name": c.name or "", "arguments": c.arguments}}
            for c in outcome.tool_calls
        ]
    return {
        "model": MODEL,
        "created_at": "2025-01-01T00:00:00Z",
        "message": message,
        "done": True,
        "done_reason": outcome.finish_reason or "stop",
    }


def _cohere_whole(outcome: Outcome) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant"}
    if outcome.text:
        message["content"] = [{"type": "text", "text": outcome.text}]
    if outcome.tool_calls:
        message["tool_calls"] = [
            {
                "id": _call_id(c, n, "call_"),
                "type": "function",
                "function": {"name": c.name or "", "arguments": _args_text(c)},
            }
            for n, c in enumerate(outcome.tool_calls)
        ]
    finish = outcome.finish_reason or ("TOOL_CALL" if outcome.tool_calls else "COMPLETE")
    return {
        "id": "replay",
        "finish_reason": finish,
        "message": message,
        "usage": {
            "billed_units": {"input_tokens": 1, "output_tokens": 1},
            "tokens": {"input_tokens": 1, "output_tokens": 1},
        },
    }


_WHOLE: dict[str, Callable[[Outcome], dict[str, Any]]] = {
    "openai-chat": _openai_chat_whole,
    "openai-responses": _openai_responses_whole,
    "anthropic": _anthropic_whole,
    "gemini": _gemini_whole,
    "bedrock-converse": _bedrock_whole,
    "ollama": _ollama_whole,
    "cohere": _cohere_whole,
}


def whole_response(dialect: str, outcome: Outcome) -> bytes:
    """A case's outcome as the body of a non-streaming response."""
    return _dumps(_WHOLE[dialect](outcome)).encode()


# ---------------------------------------------------------------------------------------------
# Errors


def _error_payload(dialect: str, message: str) -> Mapping[str, Any]:
    if dialect == "anthropic":
        return {"type": "error", "error": {"type": "api_error", "message": message}}
    if dialect in ("openai-chat", "openai-responses"):
        return {"error": {"message": message, "type": "server_error", "code": None, "param": None}}
    if dialect == "gemini":
        return {"error": {"code": 500, "message": message, "status": "INTERNAL"}}
    if dialect == "ollama":
        return {"error": message}
    return {"message": message}


def error_response(dialect: str, message: str, *, status: int = 500) -> tuple[int, str, bytes]:
    """Status, media type and body of an error the way the provider returns one."""
    return status, JSON, _dumps(_error_payload(dialect, message)).encode()
