"""The ai-sdk-ui dialect: its produced cassettes, its mutations, and clients written the way the
reported AI SDK UI bugs were (each fails its case with a clear diff) against a correct one."""

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


def partial_json(text: str) -> Any:
    """A small `parsePartialJson`: the text as JSON, else closed with the brackets it opened; None
    (`undefined`) when neither parses (freeform text)."""
    try:
        return json.loads(text)
    except ValueError:
        pass
    closing = "".join("}" if c == "{" else "]" for c in text if c in "{[")[::-1]
    for candidate in (text + '"' + closing, text + closing):
        try:
            return json.loads(candidate)
        except ValueError:
            continue
    return None


class CorrectClient:
    """Tool parts by toolCallId; a delta for an unknown id joins mid-part; the input is
    tool-input-available's."""

    def __init__(self) -> None:
        self.parts: dict[str, dict[str, Any]] = {}
        self.text = ""
        self.finish: str | None = None
        self.state = State.CUT
        self.error: str | None = None

    def feed(self, event: Event) -> None:
        p = event.payload
        if p == "[DONE]":
            self.state = State.COMPLETE if self.state is State.CUT else self.state
            return
        kind = p.get("type") if isinstance(p, dict) else None
        if kind in ("tool-input-start", "tool-input-delta", "tool-input-available"):
            part = self.parts.setdefault(
                p["toolCallId"], {"name": None, "text": "", "state": "input-streaming"}
            )
            part["name"] = part["name"] or p.get("toolName")
            if kind == "tool-input-delta":
                self.delta(part, p)
            elif kind == "tool-input-available":
                part["input"], part["state"] = p["input"], "input-available"
        elif kind == "text-delta":
            self.text += p["delta"]
        elif kind == "finish":
            self.finish = p.get("finishReason")
        elif kind == "error":
            self.state, self.error = State.ERROR, p["errorText"]

    def delta(self, part: dict[str, Any], chunk: dict[str, Any]) -> None:
        if part["state"] != "input-streaming":
            return  # a piece after the input was available changes nothing
        part["text"] += chunk["inputTextDelta"]
        part["input"] = partial_json(part["text"])

    def calls(self) -> tuple[ToolCall, ...]:
        return tuple(
            ToolCall(p["name"], p["input"], i)
            for i, p in self.parts.items()
            if p["state"] == "input-available"
        )

    def close(self, error: str | None = None) -> Outcome:
        if self.state is State.CUT and error is None and self.finish is not None:
            self.state = State.COMPLETE
        return Outcome(self.calls(), self.text, self.finish, self.state, self.error if self.error else error)


class FailsOnResume(CorrectClient):
    """Bug (vercel/ai#14027): a tool-input-delta for a part no tool-input-start opened throws."""

    def feed(self, event: Event) -> None:
        p = event.payload
        if isinstance(p, dict) and p.get("type") == "tool-input-delta" and p["toolCallId"] not in self.parts:
            self.state, self.error = State.ERROR, f"tool-input-delta for missing tool call {p['toolCallId']}"
        if self.state is State.ERROR:
            return
        super().feed(event)


class PartialJsonInput(CorrectClient):
    """Bug: the call's input is the partial-JSON parse of its deltas, never tool-input-available's:
    freeform input stays undefined."""

    def feed(self, event: Event) -> None:
        p = event.payload
        if isinstance(p, dict) and p.get("type") == "tool-input-available" and p["toolCallId"] in self.parts:
            part = self.parts[p["toolCallId"]]
            part["state"] = "input-available"
            part.setdefault("input", None)
            return
        super().feed(event)


class StateReadAtEnd(CorrectClient):
    """Bug: each call is read from the last state only, whatever that state is: a part still
    `input-streaming` when the stream broke off is taken as a call."""

    def calls(self) -> tuple[ToolCall, ...]:
        return tuple(ToolCall(p["name"], p.get("input"), i) for i, p in self.parts.items())


BUGS = [
    (FailsOnResume, "ai-sdk-ui/from-anthropic-parallel-calls::resume-into-tool-part::s0", "state"),
    (StateReadAtEnd, "ai-sdk-ui/from-openai-chat-single-call::truncated-mid-args::s0", "call"),
]


@pytest.mark.parametrize(("client", "case_id", "where"), BUGS, ids=[b[0].__name__ for b in BUGS])
def test_a_client_written_the_reported_way_fails_its_case(client: type, case_id: str, where: str) -> None:
    case = build_case(case_id)
    differences = diff(case.expected, outcome_of(client, case))
    assert differences, f"{client.__name__} passed {case_id}"
    assert where in "\n".join(differences)
    assert not diff(case.expected, outcome_of(CorrectClient, case))


@pytest.mark.parametrize(
    "scenario",
    ["original", "resume-into-tool-part", "whole-call-in-one-chunk", "args-for-inactive-id",
     "C1-interleaved-fragments", "partial-json-one-char-pieces", "truncated-mid-args"],
)  # fmt: skip
def test_the_correct_client_passes_every_produced_cassette(scenario: str) -> None:
    ran = 0
    for name in (
        "from-openai-chat-parallel-2",
        "from-anthropic-parallel-calls",
        "from-openai-chat-single-call",
    ):
        try:
            case = build_case(f"ai-sdk-ui/{name}::{scenario}::s0")
        except Exception:
            continue
        ran += 1
        assert not diff(case.expected, outcome_of(CorrectClient, case)), case.id
    assert ran


def _events(*payloads: Any) -> list[Event]:
    d = dialects.get("ai-sdk-ui")
    return [d.parse(WireEvent(data=p if isinstance(p, str) else json.dumps(p))) for p in payloads]


def _run(client: Any, events: list[Event]) -> Outcome:
    for event in events:
        client.feed(event)
    return client.close(None)


FREEFORM = _events(
    {"type": "start"},
    {"type": "tool-input-start", "toolCallId": "c1", "toolName": "run_shell"},
    {"type": "tool-input-delta", "toolCallId": "c1", "inputTextDelta": "ls -la "},
    {"type": "tool-input-delta", "toolCallId": "c1", "inputTextDelta": "/tmp"},
    {"type": "tool-input-available", "toolCallId": "c1", "toolName": "run_shell", "input": "ls -la /tmp"},
    {"type": "finish", "finishReason": "tool-calls"},
    "[DONE]",
)


def test_freeform_input_is_the_string_available_gives_and_a_partial_json_reader_loses_it() -> None:
    expected = _run(dialects.reference_accumulator("ai-sdk-ui"), FREEFORM)
    assert expected.tool_calls == (ToolCall("run_shell", "ls -la /tmp", "c1"),)
    assert not diff(expected, _run(CorrectClient(), FREEFORM))
    differences = diff(expected, _run(PartialJsonInput(), FREEFORM))
    assert differences and "arguments" in differences[0], differences


def test_a_resumed_stream_joins_the_part_and_takes_its_input_when_available() -> None:
    events = _events(
        {"type": "tool-input-delta", "toolCallId": "c1", "inputTextDelta": 'ty":"Paris"}'},
        {
            "type": "tool-input-available",
            "toolCallId": "c1",
            "toolName": "get_weather",
            "input": {"city": "Paris"},
        },
        {"type": "finish", "finishReason": "tool-calls"},
        "[DONE]",
    )
    outcome = _run(dialects.reference_accumulator("ai-sdk-ui"), events)
    assert outcome.tool_calls == (ToolCall("get_weather", {"city": "Paris"}, "c1"),)
    assert [v.code for v in dialects.get("ai-sdk-ui").invariants(events)] == ["ai-sdk-ui.delta-without-start"]


def test_a_cut_before_the_input_is_available_reports_no_call() -> None:
    outcome = dialects.reference_accumulator("ai-sdk-ui")
    for event in FREEFORM[:4]:
        outcome.feed(event)
    assert outcome.close("connection reset").tool_calls == ()


def test_produced_cassettes_name_their_producer() -> None:
    from harness import load_cassette
    from harness.cassettes.corpus import bundled

    for path in sorted((bundled() / "ai-sdk-ui").glob("*.yaml")):
        cassette = load_cassette(path)
        assert cassette.source.kind == "recorded"
        assert "toUIMessageStreamResponse() of ai 6.0.326" in cassette.source.provenance
        assert cassette.interactions[0].response.headers["x-vercel-ai-ui-message-stream"] == "v1"


def test_the_followup_is_the_message_list_with_the_tool_parts_outputs() -> None:
    from harness.serve.followup import read_followup

    user = {"id": "u", "role": "user", "parts": [{"type": "text", "text": "Weather?"}]}
    part = {
        "type": "tool-get_weather",
        "toolCallId": "c1",
        "state": "input-available",
        "input": {"city": "Paris"},
    }
    assert read_followup("ai-sdk-ui", {"messages": [user, {"role": "assistant", "parts": [part]}]}) is None
    ran = {**part, "state": "output-available", "output": "18C"}
    turn = read_followup("ai-sdk-ui", {"messages": [user, {"role": "assistant", "parts": [ran]}]})
    assert turn is not None
    assert turn.calls == (ToolCall("get_weather", {"city": "Paris"}, "c1"),)
    assert [(r.call_id, r.content) for r in turn.results] == [("c1", "18C")]


def test_the_replay_server_serves_a_case_at_the_apps_chat_endpoint() -> None:
    import urllib.request

    from harness.serve import ReplayServer
    from harness.serve.routes import client_environment

    case = build_case("ai-sdk-ui/from-openai-chat-single-call::original::s0")
    with ReplayServer([case]).running() as server:
        url = client_environment(server.url, case.id)["TOOLSTREAM_AI_SDK_UI_URL"]
        request = urllib.request.Request(
            url, json.dumps({"messages": []}).encode(), {"content-type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=10) as answer:
            body = answer.read()
    assert body == case.response.body
