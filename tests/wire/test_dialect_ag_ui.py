"""The ag-ui dialect: its produced cassettes, its mutations, and clients written the way the
reported AG-UI bugs were (each fails its case with a clear diff) against a correct one (passes)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from harness.accumulators import EventLevel
from harness.cassettes.outcome import Outcome, State, ToolCall, diff
from harness.matrix.selection import build_case
from harness.mutate.scenario import Case
from harness.wire import dialects
from harness.wire.codecs import WireEvent
from harness.wire.dialects import Event


def outcome_of(make: type, case: Case) -> Outcome:
    return EventLevel(lambda dialect: make(), make.__name__).run(case)


class CorrectClient:
    """Applies events by id, expanding TOOL_CALL_CHUNK as the reference client does."""

    def __init__(self) -> None:
        self.calls: dict[str, dict[str, Any]] = {}
        self.chunk: str | None = None
        self.text = ""
        self.state = State.CUT
        self.error: str | None = None

    def end_chunk(self) -> None:
        if self.chunk is not None:
            self.calls[self.chunk]["ended"] = True
            self.chunk = None

    def feed(self, event: Event) -> None:
        p = event.payload
        kind = p.get("type") if isinstance(p, dict) else None
        if kind != "TOOL_CALL_CHUNK":
            self.end_chunk()
        call = self.calls.get(p.get("toolCallId")) if isinstance(p, dict) else None
        if kind == "TOOL_CALL_START" and call is None:
            self.calls[p["toolCallId"]] = {"name": p["toolCallName"], "args": "", "ended": False}
        elif kind == "TOOL_CALL_ARGS" and call is not None and not call["ended"]:
            call["args"] += p["delta"]
        elif kind == "TOOL_CALL_END" and call is not None:
            call["ended"] = True
        elif kind == "TOOL_CALL_CHUNK":
            if p.get("toolCallId") and p["toolCallId"] != self.chunk:
                self.end_chunk()
                self.calls[p["toolCallId"]] = {"name": p.get("toolCallName"), "args": "", "ended": False}
                self.chunk = p["toolCallId"]
            if self.chunk is not None:
                self.calls[self.chunk]["args"] += p.get("delta") or ""
        elif kind == "TEXT_MESSAGE_CONTENT":
            self.text += p["delta"]
        elif kind == "RUN_FINISHED":
            self.state = State.COMPLETE
        elif kind == "RUN_ERROR":
            self.state, self.error = State.ERROR, p.get("message")

    def close(self, error: str | None = None) -> Outcome:
        calls = tuple(
            ToolCall.from_text(c["name"], c["args"], i) for i, c in self.calls.items() if c["ended"]
        )
        return Outcome(calls, self.text, None, self.state, self.error if self.state is State.ERROR else error)


class AppendsToFirstCall(CorrectClient):
    """Bug: every TOOL_CALL_ARGS goes to the first call of the run (sequential calls appended)."""

    def feed(self, event: Event) -> None:
        p = event.payload
        if isinstance(p, dict) and p.get("type") == "TOOL_CALL_ARGS" and self.calls:
            next(iter(self.calls.values()))["args"] += p["delta"]
            return
        super().feed(event)


class ChunkStartsAndEnds(CorrectClient):
    """Bug: a TOOL_CALL_CHUNK with a name is START then END at once; its arguments are dropped."""

    def feed(self, event: Event) -> None:
        p = event.payload
        if isinstance(p, dict) and p.get("type") == "TOOL_CALL_CHUNK" and p.get("toolCallName"):
            self.calls[p["toolCallId"]] = {"name": p["toolCallName"], "args": "", "ended": True}
            return
        super().feed(event)


class ArgsToActiveCall(CorrectClient):
    """Bug: TOOL_CALL_ARGS is bound to the active (latest started) call without checking its id."""

    def feed(self, event: Event) -> None:
        p = event.payload
        if isinstance(p, dict) and p.get("type") == "TOOL_CALL_ARGS" and self.calls:
            list(self.calls.values())[-1]["args"] += p["delta"]
            return
        super().feed(event)


BUGS = [
    (AppendsToFirstCall, "ag-ui/from-openai-chat-parallel-2::original::s0", "call 1: arguments"),
    (AppendsToFirstCall, "ag-ui/from-anthropic-parallel-calls::original::s0", "call 1: arguments"),
    (ChunkStartsAndEnds, "ag-ui/from-openai-chat-single-call::whole-call-in-one-chunk::s0", "arguments"),
    (ArgsToActiveCall, "ag-ui/from-openai-chat-parallel-2::args-for-inactive-id::s0", "call 2: arguments"),
]


@pytest.mark.parametrize(("client", "case_id", "where"), BUGS, ids=[b[0].__name__ + "-" + b[1] for b in BUGS])
def test_a_client_written_the_reported_way_fails_its_case(client: type, case_id: str, where: str) -> None:
    case = build_case(case_id)
    differences = diff(case.expected, outcome_of(client, case))
    assert differences, f"{client.__name__} passed {case_id}"
    assert where in "\n".join(differences)
    assert not diff(case.expected, outcome_of(CorrectClient, case))


@pytest.mark.parametrize(
    "scenario",
    ["original", "whole-call-in-one-chunk", "args-for-inactive-id", "args-for-unknown-id",
     "C1-interleaved-fragments", "partial-json-one-char-pieces"],
)  # fmt: skip
def test_the_correct_client_passes_every_produced_cassette(scenario: str) -> None:
    ran = 0
    for name in (
        "from-openai-chat-parallel-2",
        "from-anthropic-parallel-calls",
        "from-openai-chat-single-call",
    ):
        try:
            case = build_case(f"ag-ui/{name}::{scenario}::s0")
        except Exception:
            continue
        ran += 1
        assert not diff(case.expected, outcome_of(CorrectClient, case)), case.id
    assert ran


def _events(*payloads: dict[str, Any]) -> list[Event]:
    d = dialects.get("ag-ui")
    return [d.parse(WireEvent(data=json.dumps(p))) for p in payloads]


def _reference(events: list[Event]) -> Outcome:
    acc = dialects.reference_accumulator("ag-ui")
    for event in events:
        acc.feed(event)
    return acc.close(None)


RUN = {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}
DONE = {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}


def test_a_chunk_with_a_name_and_whole_arguments_is_a_whole_call_ended_by_the_next_event() -> None:
    chunk = {"type": "TOOL_CALL_CHUNK", "toolCallId": "c1", "toolCallName": "f", "delta": '{"a":1}'}
    outcome = _reference(_events(RUN, chunk, DONE))
    assert outcome.tool_calls == (ToolCall("f", {"a": 1}, "c1"),)
    assert outcome.state is State.COMPLETE
    cut = dialects.reference_accumulator("ag-ui")
    for event in _events(RUN, chunk):
        cut.feed(event)
    assert cut.close("cut").tool_calls == ()  # nothing came after it: not ended


def test_args_for_an_id_that_is_not_active_go_to_no_call() -> None:
    events = _events(
        RUN,
        {"type": "TOOL_CALL_START", "toolCallId": "a", "toolCallName": "f"},
        {"type": "TOOL_CALL_ARGS", "toolCallId": "a", "delta": "{}"},
        {"type": "TOOL_CALL_END", "toolCallId": "a"},
        {"type": "TOOL_CALL_START", "toolCallId": "b", "toolCallName": "g"},
        {"type": "TOOL_CALL_ARGS", "toolCallId": "a", "delta": "}"},
        {"type": "TOOL_CALL_ARGS", "toolCallId": "b", "delta": "{}"},
        {"type": "TOOL_CALL_END", "toolCallId": "b"},
        DONE,
    )
    assert _reference(events).tool_calls == (ToolCall("f", {}, "a"), ToolCall("g", {}, "b"))
    codes = [v.code for v in dialects.get("ag-ui").invariants(events)]
    assert codes == ["ag-ui.id-not-active"]


def test_the_invariants_follow_the_reference_verifier() -> None:
    d = dialects.get("ag-ui")
    events = _events({"type": "TOOL_CALL_START", "toolCallId": "a", "toolCallName": "f"}, DONE, RUN)
    assert [v.code for v in d.invariants(events)] == [
        "ag-ui.first-not-run-started",
        "ag-ui.finished-while-open",
    ]


def test_produced_cassettes_name_their_producer() -> None:
    from harness import load_cassette
    from harness.cassettes.corpus import bundled

    for path in sorted((bundled() / "ag-ui").glob("*.yaml")):
        cassette = load_cassette(path)
        assert cassette.source.kind == "recorded"
        assert "pydantic-ai-slim 2.68.0" in cassette.source.provenance
        assert "ag-ui-protocol 1.0.0" in cassette.source.provenance


def test_the_followup_gathers_calls_spread_over_assistant_messages() -> None:
    from harness.serve.followup import read_followup

    def call(n: str) -> dict[str, Any]:
        return {"id": n, "type": "function", "function": {"name": "f", "arguments": '{"x":1}'}}

    messages = [
        {"id": "u", "role": "user", "content": "Go"},
        {"id": "a", "role": "assistant", "toolCalls": [call("a")]},
        {"id": "b", "role": "assistant", "toolCalls": [call("b")]},
    ]
    assert read_followup("ag-ui", {"threadId": "t", "runId": "r2", "messages": messages}) is None
    results = [{"id": f"r{n}", "role": "tool", "toolCallId": n, "content": "ok"} for n in "ab"]
    turn = read_followup("ag-ui", {"threadId": "t", "runId": "r2", "messages": [*messages, *results]})
    assert turn is not None
    assert [c.id for c in turn.calls] == ["a", "b"] and len(turn.results) == 2
