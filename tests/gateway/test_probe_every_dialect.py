"""`toolstream probe` on every dialect it can ask (every one a `record` provider speaks): the fake
provider scripted to emit one catalogue class at a time (a stream of that dialect shaped as that
class and nothing else); the probe names that class and no other. A plain stream shows none.
(openai-chat's classes: test_probe.py.)"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.gateway.probe import probe
from harness.record.fake_provider import FakeProvider, Script
from harness.wire import dialects
from harness.wire.codecs import decode_all
from harness.wire.dialects.bedrock_converse import exception_event
from harness.wire.synthesis import synthesize

PARIS, LIMA = '{"city":"Paris"}', '{"city":"Lima"}'

# -- anthropic ---------------------------------------------------------------------------------
A_START = {
    "type": "message_start",
    "message": {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "content": [],
        "model": "m",
        "stop_reason": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    },
}
A_DONE = {"type": "message_stop"}


def a_tool(index: int, id: str = "toolu_a", given: dict[str, Any] | None = None) -> dict[str, Any]:
    block = {"type": "tool_use", "id": id, "name": "get_weather", "input": given or {}}
    return {"type": "content_block_start", "index": index, "content_block": block}


def a_args(index: int, text: str) -> dict[str, Any]:
    return {
        "type": "content_block_delta",
        "index": index,
        "delta": {"type": "input_json_delta", "partial_json": text},
    }


def a_stop(index: int) -> dict[str, Any]:
    return {"type": "content_block_stop", "index": index}


def a_end(reason: str = "tool_use") -> dict[str, Any]:
    return {
        "type": "message_delta",
        "delta": {"stop_reason": reason, "stop_sequence": None},
        "usage": {"output_tokens": 1},
    }


def a_call(index: int = 0, id: str = "toolu_a", args: str = PARIS) -> list[Any]:
    return [a_tool(index, id), a_args(index, args), a_stop(index)]


ANTHROPIC: dict[str, list[Any]] = {
    "plain": [A_START, *a_call(), a_end(), A_DONE],
    "A1": [A_START, *a_call(), *a_call(0, "toolu_b", LIMA), a_end(), A_DONE],
    "B5": [A_START, a_tool(0, given={"city": "Paris"}), a_stop(0), a_end(), A_DONE],
    "B7": [A_START, a_tool(0), a_args(0, ""), a_args(0, PARIS), a_stop(0), a_end(), A_DONE],
    "C1": [
        A_START,
        a_tool(0),
        a_tool(1, "toolu_b"),
        a_args(0, PARIS),
        a_args(1, LIMA),
        a_stop(0),
        a_stop(1),
        a_end(),
        A_DONE,
    ],
    "C3": [A_START, *a_call(), *a_call(1, "toolu_b", LIMA), a_end(), A_DONE],
    "C4": [
        A_START,
        {"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "Hm."}},
        a_stop(0),
        *a_call(1),
        a_end(),
        A_DONE,
    ],
    "D1": [A_START, *a_call(), a_end("end_turn"), A_DONE],
    "D6": [A_START, *a_call(), a_end()],
    "D8": [
        A_START,
        a_tool(0),
        a_args(0, '{"city":'),
        {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
    ],
    "D9": [
        A_START,
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Sunny."}},
        a_stop(0),
        a_end(),
        A_DONE,
    ],
    "D10": [A_START, A_START, *a_call(), a_end(), A_DONE],
}

# -- openai-responses --------------------------------------------------------------------------
R_CREATED = {
    "type": "response.created",
    "response": {"id": "resp_1", "object": "response", "status": "in_progress", "output": []},
}
R_COMPLETED = {
    "type": "response.completed",
    "response": {"id": "resp_1", "object": "response", "status": "completed", "output": []},
}


def r_item(index: int, call: str, args: str, status: str = "in_progress") -> dict[str, Any]:
    return {
        "id": f"fc_{call}",
        "type": "function_call",
        "status": status,
        "arguments": args,
        "call_id": f"call_{call}",
        "name": "get_weather",
    }


def r_added(index: int, call: str = "a", args: str = "") -> dict[str, Any]:
    return {"type": "response.output_item.added", "output_index": index, "item": r_item(index, call, args)}


def r_delta(index: int, call: str, text: str) -> dict[str, Any]:
    return {
        "type": "response.function_call_arguments.delta",
        "item_id": f"fc_{call}",
        "output_index": index,
        "delta": text,
    }


def r_done(index: int, call: str, args: str) -> list[Any]:
    return [
        {
            "type": "response.function_call_arguments.done",
            "item_id": f"fc_{call}",
            "output_index": index,
            "arguments": args,
        },
        {
            "type": "response.output_item.done",
            "output_index": index,
            "item": r_item(index, call, args, "completed"),
        },
    ]


def r_call(index: int = 0, call: str = "a", args: str = PARIS) -> list[Any]:
    return [r_added(index, call), r_delta(index, call, args), *r_done(index, call, args)]


R_REASONING = {"id": "rs_1", "type": "reasoning", "summary": []}
RESPONSES: dict[str, list[Any]] = {
    "plain": [R_CREATED, *r_call(), R_COMPLETED],
    "A1": [R_CREATED, *r_call(), *r_call(0, "b", LIMA), R_COMPLETED],
    "B5": [R_CREATED, r_added(0, args=PARIS), r_done(0, "a", PARIS)[1], R_COMPLETED],
    "C3": [R_CREATED, *r_call(), *r_call(1, "b", LIMA), R_COMPLETED],
    "C4": [
        R_CREATED,
        {"type": "response.output_item.added", "output_index": 0, "item": R_REASONING},
        {
            "type": "response.reasoning_summary_text.delta",
            "item_id": "rs_1",
            "output_index": 0,
            "summary_index": 0,
            "delta": "Hm.",
        },
        {"type": "response.output_item.done", "output_index": 0, "item": R_REASONING},
        *r_call(1),
        R_COMPLETED,
    ],
    "D6": [R_CREATED, *r_call()],
    "D8": [
        R_CREATED,
        r_added(0),
        r_delta(0, "a", '{"city":'),
        {"type": "error", "code": "server_error", "message": "boom", "param": None},
        {
            "type": "response.failed",
            "response": {
                "id": "resp_1",
                "object": "response",
                "status": "failed",
                "error": {"code": "server_error", "message": "boom"},
                "output": [],
            },
        },
    ],
    "D10": [R_CREATED, R_CREATED, *r_call(), R_COMPLETED],
    "E1": [R_CREATED, r_added(0), *r_done(0, "a", PARIS), R_COMPLETED],
    "E7": [
        R_CREATED,
        r_added(0, "a"),
        r_added(1, "b"),
        r_delta(0, "a", PARIS),
        r_delta(1, "b", LIMA),
        *r_done(0, "a", PARIS),
        *r_done(1, "b", LIMA),
        R_COMPLETED,
    ],
}

# -- gemini ------------------------------------------------------------------------------------


def g_chunk(*parts: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": list(parts)}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    return {"candidates": [candidate]}


def g_call(city: str = "Paris") -> dict[str, Any]:
    return {"functionCall": {"name": "get_weather", "args": {"city": city}}}


GEMINI: dict[str, list[Any]] = {
    "plain": [g_chunk(g_call(), finish="STOP")],
    "C2": [g_chunk(g_call(), g_call("Lima"), finish="STOP")],
    "C4": [g_chunk({"text": "Hm.", "thought": True}), g_chunk(g_call(), finish="STOP")],
    "D2": [g_chunk(g_call()), g_chunk({"text": ""}, finish="STOP")],
    "D6": [g_chunk(g_call())],
    "D8": [g_chunk(g_call()), {"error": {"code": 500, "message": "Internal error", "status": "INTERNAL"}}],
}

# -- ollama ------------------------------------------------------------------------------------


def o_line(done: bool = False, **message: Any) -> dict[str, Any]:
    line: dict[str, Any] = {
        "model": "m",
        "created_at": "2026-01-01T00:00:00Z",
        "message": {"role": "assistant", "content": "", **message},
        "done": done,
    }
    if done:
        line["done_reason"] = "stop"
    return line


def o_call(city: str = "Paris") -> dict[str, Any]:
    return {"function": {"name": "get_weather", "arguments": {"city": city}}}


O_DONE = o_line(done=True)
OLLAMA: dict[str, list[Any]] = {
    "plain": [o_line(tool_calls=[o_call()]), O_DONE],
    "C2": [o_line(tool_calls=[o_call(), o_call("Lima")]), O_DONE],
    "C4": [o_line(thinking="Hm."), o_line(tool_calls=[o_call()]), O_DONE],
    "D6": [o_line(tool_calls=[o_call()])],
    "D8": [o_line(tool_calls=[o_call()]), {"error": "boom"}],
}

# -- bedrock-converse (eventstream: each event named) ------------------------------------------
B_START = ("messageStart", {"role": "assistant"})
B_META = (
    "metadata",
    {"usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2}, "metrics": {"latencyMs": 1}},
)


def b_tool(index: int, id: str = "tooluse_a") -> tuple[str, dict[str, Any]]:
    return (
        "contentBlockStart",
        {"contentBlockIndex": index, "start": {"toolUse": {"name": "get_weather", "toolUseId": id}}},
    )


def b_args(index: int, text: str) -> tuple[str, dict[str, Any]]:
    return ("contentBlockDelta", {"contentBlockIndex": index, "delta": {"toolUse": {"input": text}}})


def b_stop(index: int) -> tuple[str, dict[str, Any]]:
    return ("contentBlockStop", {"contentBlockIndex": index})


def b_end(reason: str = "tool_use") -> tuple[str, dict[str, Any]]:
    return ("messageStop", {"stopReason": reason})


def b_call(index: int = 0, id: str = "tooluse_a", args: str = PARIS) -> list[Any]:
    return [b_tool(index, id), b_args(index, args), b_stop(index)]


BEDROCK: dict[str, list[Any]] = {
    "plain": [B_START, *b_call(), b_end(), B_META],
    "A1": [B_START, *b_call(), *b_call(0, "tooluse_b", LIMA), b_end(), B_META],
    "B7": [B_START, b_tool(0), b_args(0, ""), b_args(0, PARIS), b_stop(0), b_end(), B_META],
    "C1": [
        B_START,
        b_tool(0),
        b_tool(1, "tooluse_b"),
        b_args(0, PARIS),
        b_args(1, LIMA),
        b_stop(0),
        b_stop(1),
        b_end(),
        B_META,
    ],
    "C3": [B_START, *b_call(), *b_call(1, "tooluse_b", LIMA), b_end(), B_META],
    "C4": [
        B_START,
        ("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"reasoningContent": {"text": "Hm."}}}),
        b_stop(0),
        *b_call(1),
        b_end(),
        B_META,
    ],
    "D1": [B_START, *b_call(), b_end("end_turn"), B_META],
    "D6": [B_START, *b_call()],
    "D8": [
        B_START,
        b_tool(0),
        b_args(0, '{"city":'),
        exception_event("modelStreamErrorException", "Model stream error").wire,
    ],
    "D9": [
        B_START,
        ("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "Sunny."}}),
        b_stop(0),
        b_end(),
        B_META,
    ],
}

# -- cohere ------------------------------------------------------------------------------------
C_START = {
    "id": "c-1",
    "type": "message-start",
    "delta": {"message": {"role": "assistant", "content": [], "tool_plan": "", "tool_calls": []}},
}


def c_tool(index: int, id: str = "get_weather_a") -> dict[str, Any]:
    call = {"id": id, "type": "function", "function": {"name": "get_weather", "arguments": ""}}
    return {"type": "tool-call-start", "index": index, "delta": {"message": {"tool_calls": call}}}


def c_args(index: int, text: str) -> dict[str, Any]:
    return {
        "type": "tool-call-delta",
        "index": index,
        "delta": {"message": {"tool_calls": {"function": {"arguments": text}}}},
    }


def c_stop(index: int) -> dict[str, Any]:
    return {"type": "tool-call-end", "index": index}


def c_end(reason: str = "TOOL_CALL") -> dict[str, Any]:
    return {"type": "message-end", "delta": {"finish_reason": reason}}


def c_call(index: int = 0, id: str = "get_weather_a", args: str = PARIS) -> list[Any]:
    return [c_tool(index, id), c_args(index, args), c_stop(index)]


COHERE: dict[str, list[Any]] = {
    "plain": [C_START, *c_call(), c_end(), "[DONE]"],
    "A1": [C_START, *c_call(), *c_call(0, "get_weather_b", LIMA), c_end(), "[DONE]"],
    "C1": [
        C_START,
        c_tool(0),
        c_tool(1, "get_weather_b"),
        c_args(0, PARIS),
        c_args(1, LIMA),
        c_stop(0),
        c_stop(1),
        c_end(),
        "[DONE]",
    ],
    "C3": [C_START, *c_call(), *c_call(1, "get_weather_b", LIMA), c_end(), "[DONE]"],
    "C4": [
        C_START,
        {"type": "tool-plan-delta", "delta": {"message": {"tool_plan": "I will look."}}},
        *c_call(),
        c_end(),
        "[DONE]",
    ],
    "D1": [C_START, *c_call(), c_end("COMPLETE"), "[DONE]"],
    "D6": [C_START, *c_call()],
    "D9": [
        C_START,
        {"type": "content-delta", "index": 0, "delta": {"message": {"content": {"text": "Sunny."}}}},
        c_end(),
        "[DONE]",
    ],
}

STREAMS = {
    "anthropic": ANTHROPIC,
    "openai-responses": RESPONSES,
    "gemini": GEMINI,
    "ollama": OLLAMA,
    "bedrock-converse": BEDROCK,
    "cohere": COHERE,
}
# Where the probe's request for a recipe lands, per dialect (the record flow's provider, model `m`).
PATHS = {
    "anthropic": "/v1/messages",
    "openai-responses": "/responses",
    "gemini": "/v1beta/models/m:streamGenerateContent",
    "ollama": "/api/chat",
    "bedrock-converse": "/model/m/converse-stream",
    "cohere": "/v2/chat",
}


def served(dialect: str, events: list[Any]) -> FakeProvider:
    """The fake provider answering the probe's request with `events`, encoded the dialect's way."""
    cassette = synthesize(
        "probe",
        dialect,
        url="http://127.0.0.1" + PATHS[dialect],
        body={},
        events=events,
        provenance="tests: a stream shaped as one catalogue class",
        expected=False,
    )
    fake = FakeProvider()
    fake.route(
        "POST", PATHS[dialect], Script.of([chunk.data for chunk in cassette.interactions[0].response.chunks])
    )
    return fake


def test_every_dialect_a_provider_speaks_detects_classes_and_each_has_a_scripted_stream() -> None:
    from harness.record.providers import providers

    spoken = {p.dialect for p in providers().values()} - {"openai-chat"}
    assert set(STREAMS) == spoken
    for name, streams in STREAMS.items():
        assert set(streams) - {"plain"} == set(dialects.get(name).shape_codes), name


CASES = [(name, code) for name, streams in STREAMS.items() for code in streams]


@pytest.mark.parametrize(("dialect", "code"), CASES, ids=[f"{d}-{c}" for d, c in CASES])
def test_the_probe_names_the_class_it_is_shown_and_no_other(
    dialect: str, code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in {
        "AWS_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "AKIAFAKE",
        "AWS_SECRET_ACCESS_KEY": "x",
    }.items():
        monkeypatch.setenv(name, value)  # Bedrock's requests are signed
    with served(dialect, STREAMS[dialect][code]) as fake:
        (found,) = probe(fake.url, dialect, model="m", out=tmp_path, recipes=["single"])
    assert found.error is None and found.complete
    assert set(found.shapes) == (set() if code == "plain" else {code})


# -- the dialects no `record` provider speaks (a UI protocol, a WebSocket session): their detectors
# read a stream encoded and decoded the dialect's way, as the probe reads one.
def g_tool(call: str, args: str = PARIS) -> list[Any]:
    return [
        {"type": "TOOL_CALL_START", "toolCallId": call, "toolCallName": "get_weather"},
        {"type": "TOOL_CALL_ARGS", "toolCallId": call, "delta": args},
        {"type": "TOOL_CALL_END", "toolCallId": call},
    ]


G_RUN = {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}
G_DONE = {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}
AG_UI: dict[str, list[Any]] = {
    "plain": [G_RUN, *g_tool("a"), G_DONE],
    "C3": [G_RUN, *g_tool("a"), *g_tool("b", LIMA), G_DONE],
    "D6": [G_RUN, *g_tool("a")],
    "D8": [G_RUN, g_tool("a")[0], {"type": "RUN_ERROR", "message": "boom"}],
}


def u_tool(call: str, args: str = PARIS) -> list[Any]:
    return [
        {"type": "tool-input-start", "toolCallId": call, "toolName": "get_weather"},
        {"type": "tool-input-delta", "toolCallId": call, "inputTextDelta": args},
        {
            "type": "tool-input-available",
            "toolCallId": call,
            "toolName": "get_weather",
            "input": json.loads(args),
        },
    ]


U_START = [{"type": "start"}, {"type": "start-step"}]
U_DONE = [{"type": "finish-step"}, {"type": "finish", "finishReason": "tool-calls"}, "[DONE]"]
AI_SDK_UI: dict[str, list[Any]] = {
    "plain": [*U_START, *u_tool("a"), *U_DONE],
    "C3": [*U_START, *u_tool("a"), *u_tool("b", LIMA), *U_DONE],
    "D6": [*U_START, *u_tool("a")],
    "D8": [*U_START, u_tool("a")[0], {"type": "error", "errorText": "boom"}],
}


def rt_call(index: int, call: str, args: str = PARIS) -> list[Any]:
    item = {
        "id": f"item_{call}",
        "object": "realtime.item",
        "type": "function_call",
        "status": "in_progress",
        "name": "get_weather",
        "call_id": f"call_{call}",
        "arguments": "",
    }
    at = {
        "response_id": "resp_1",
        "item_id": f"item_{call}",
        "output_index": index,
        "call_id": f"call_{call}",
    }
    return [
        {"type": "response.output_item.added", "response_id": "resp_1", "output_index": index, "item": item},
        {"type": "response.function_call_arguments.delta", **at, "delta": args},
        {"type": "response.function_call_arguments.done", **at, "arguments": args},
        {
            "type": "response.output_item.done",
            "response_id": "resp_1",
            "output_index": index,
            "item": {**item, "status": "completed", "arguments": args},
        },
    ]


RT_START = {
    "type": "response.created",
    "response": {"object": "realtime.response", "id": "resp_1", "status": "in_progress", "output": []},
}
RT_DONE = {
    "type": "response.done",
    "response": {"object": "realtime.response", "id": "resp_1", "status": "completed", "output": []},
}
REALTIME: dict[str, list[Any]] = {
    "plain": [RT_START, *rt_call(0, "a"), RT_DONE],
    "C3": [RT_START, *rt_call(0, "a"), *rt_call(1, "b", LIMA), RT_DONE],
    "D6": [RT_START, *rt_call(0, "a")],
    "D8": [
        RT_START,
        rt_call(0, "a")[0],
        {"type": "error", "error": {"type": "server_error", "message": "boom"}},
    ],
}
UNPROBED = {"ag-ui": AG_UI, "ai-sdk-ui": AI_SDK_UI, "openai-realtime": REALTIME}


def test_every_dialect_of_the_registry_has_detectors_and_a_stream_per_class() -> None:
    assert set(dialects.names()) == {*STREAMS, *UNPROBED, "openai-chat"}
    for name, streams in UNPROBED.items():
        assert set(streams) - {"plain"} == set(dialects.get(name).shape_codes), name


UNPROBED_CASES = [(name, code) for name, streams in UNPROBED.items() for code in streams]


@pytest.mark.parametrize(("dialect", "code"), UNPROBED_CASES, ids=[f"{d}-{c}" for d, c in UNPROBED_CASES])
def test_a_dialect_without_a_provider_names_the_class_it_is_shown_and_no_other(
    dialect: str, code: str
) -> None:
    d = dialects.get(dialect)
    cassette = synthesize(
        "shape",
        dialect,
        url="http://127.0.0.1/",
        body={},
        events=UNPROBED[dialect][code],
        provenance="tests: a stream shaped as one catalogue class",
        expected=False,
    )
    reads = (chunk.data for chunk in cassette.interactions[0].response.chunks)
    events = dialects.parse_all(d, decode_all(d.codec(), reads))
    assert set(d.shapes(events)) == (set() if code == "plain" else {code})
