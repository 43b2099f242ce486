"""The replay server's WebSocket sessions, read by the `websockets` client library: the recorded
frames on the same port as HTTP, a follow-up judged, a cut session closed without a close frame,
a clean end before `response.done` closed normally, a case that speaks no WebSocket refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from websockets.exceptions import ConnectionClosedError, ConnectionClosedOK, InvalidStatus
from websockets.sync.client import connect

from harness.matrix.selection import build_case
from harness.serve import ReplayServer
from harness.serve.routes import client_environment
from harness.serve.websocket import accept_key

ROOT = Path(__file__).resolve().parents[2]


def _url(server: ReplayServer, case_id: str) -> str:
    return (
        client_environment(server.url, case_id)["OPENAI_BASE_URL"].replace("http://", "ws://") + "/realtime"
    )


def _until_done(ws: Any) -> list[dict[str, Any]]:
    out = []
    while True:
        out.append(json.loads(ws.recv(timeout=10)))
        if out[-1]["type"] == "response.done":
            return out


def test_accept_key_is_rfc_6455s() -> None:
    assert accept_key("dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="  # RFC 6455 1.3


def test_a_session_gets_the_recorded_messages_and_its_followup_is_judged() -> None:
    case = build_case("openai-realtime/parallel-calls::websocket-fragmented-messages::s0")
    server = ReplayServer([case])
    with server.running(), connect(_url(server, case.id) + "?model=gpt-realtime") as ws:
        ws.send(json.dumps({"type": "response.create"}))
        first = _until_done(ws)
        assert [m["type"] for m in first] == [e.payload["type"] for e in case.events]
        calls = [m for m in first if m["type"] == "response.function_call_arguments.done"]
        for call in calls:
            item = {"type": "function_call_output", "call_id": call["call_id"], "output": "ok"}
            ws.send(json.dumps({"type": "conversation.item.create", "item": item}))
        ws.send(json.dumps({"type": "response.create"}))
        assert _until_done(ws)[-1]["response"]["status"] == "completed"
        ws.close()
        verdict = server.describe(case.id)["verdict"]
    assert verdict["verdict"] == "pass", verdict["diff"]


def test_a_followup_with_a_result_missing_is_judged_lost() -> None:
    case = build_case("openai-realtime/parallel-calls::original::s0")
    server = ReplayServer([case])
    with server.running(), connect(_url(server, case.id)) as ws:
        ws.send(json.dumps({"type": "response.create"}))
        call = next(m for m in _until_done(ws) if m["type"] == "response.function_call_arguments.done")
        item = {"type": "function_call_output", "call_id": call["call_id"], "output": "ok"}
        ws.send(json.dumps({"type": "conversation.item.create", "item": item}))
        ws.send(json.dumps({"type": "response.create"}))
        _until_done(ws)
        verdict = server.describe(case.id)["verdict"]
    assert verdict["verdict"] == "fail"
    assert verdict["diff"][0] == "tool_calls: 2 expected, got 1"


def test_a_cut_session_closes_without_a_close_frame() -> None:
    case = build_case("openai-realtime/single-call::truncated-mid-args::s0")
    assert not case.response.complete
    server = ReplayServer([case])
    with server.running(), connect(_url(server, case.id)) as ws, pytest.raises(ConnectionClosedError):
        _until_done(ws)


def test_a_clean_end_before_response_done_closes_normally() -> None:
    case = build_case("openai-realtime/single-call::D7-truncated-mid-args::s0")
    assert case.response.complete
    server = ReplayServer([case])
    with server.running(), connect(_url(server, case.id)) as ws, pytest.raises(ConnectionClosedOK):
        _until_done(ws)


def test_a_case_of_another_dialect_refuses_the_upgrade() -> None:
    case = build_case("openai-chat/single-call::original::s0")
    server = ReplayServer([case])
    with server.running(), pytest.raises(InvalidStatus) as refused:
        connect(_url(server, case.id)).close()
    assert refused.value.response.status_code == 404


# The Responses API's WebSocket mode: the same cases as over SSE, at <prefix>/v1/responses.
def _responses_url(server: ReplayServer, case_id: str) -> str:
    return _url(server, case_id).removesuffix("/realtime") + "/responses"


def _until_completed(ws: Any) -> list[dict[str, Any]]:
    out = []
    while True:
        out.append(json.loads(ws.recv(timeout=10)))
        if out[-1]["type"] == "response.completed":
            return out


def test_a_responses_session_answers_each_response_create_and_judges_the_continuation() -> None:
    case = build_case("openai-responses/parallel-2::C1-interleaved-fragments::s0")
    server = ReplayServer([case])
    with server.running(), connect(_responses_url(server, case.id)) as ws:
        with pytest.raises(TimeoutError):
            ws.recv(timeout=0.3)  # the server speaks only after a response.create
        ws.send(json.dumps({"type": "response.create", "model": "gpt-5.2", "input": "Weather?"}))
        first = _until_completed(ws)
        # One message per event, no SSE framing: each the event's JSON object.
        assert first == [e.payload for e in case.events if e.payload is not None]
        calls = [m["item"] for m in first if m["type"] == "response.output_item.done"]
        outputs = [{"type": "function_call_output", "call_id": c["call_id"], "output": "ok"} for c in calls]
        ws.send(json.dumps({"type": "response.create", "previous_response_id": "resp_1", "input": outputs}))
        assert _until_completed(ws)[-1]["response"]["status"] == "completed"
        ws.close()
        verdict = server.describe(case.id)["verdict"]
    assert verdict["verdict"] != "fail", verdict["diff"]  # a warning: the interleaving's order


def test_a_responses_continuation_naming_another_call_fails() -> None:
    case = build_case("openai-responses/single-call::original::s0")
    server = ReplayServer([case])
    with server.running(), connect(_responses_url(server, case.id)) as ws:
        ws.send(json.dumps({"type": "response.create", "input": "Weather?"}))
        _until_completed(ws)
        output = {"type": "function_call_output", "call_id": "call_other", "output": "ok"}
        ws.send(json.dumps({"type": "response.create", "previous_response_id": "resp_1", "input": [output]}))
        _until_completed(ws)
        verdict = server.describe(case.id)["verdict"]
    assert verdict["verdict"] == "fail"
    assert "call 1: id" in " ".join(verdict["diff"])


def test_a_cut_responses_session_closes_without_a_close_frame() -> None:
    case = build_case("openai-responses/cut-mid-arguments::original::s0")
    assert not case.response.complete
    server = ReplayServer([case])
    with (
        server.running(),
        connect(_responses_url(server, case.id)) as ws,
        pytest.raises(ConnectionClosedError),
    ):
        ws.send(json.dumps({"type": "response.create", "input": "Weather?"}))
        _until_completed(ws)


def test_a_realtime_case_has_no_responses_session() -> None:
    case = build_case("openai-realtime/single-call::original::s0")
    server = ReplayServer([case])
    with server.running(), pytest.raises(InvalidStatus) as refused:
        connect(_responses_url(server, case.id)).close()
    assert refused.value.response.status_code == 404


@pytest.mark.slow  # each case starts a Python with the openai SDK
def test_the_openai_sdks_responses_websocket_client_is_judged_unchanged() -> None:
    from harness.cli import main

    python = ROOT / ".venv-openai-realtime" / "bin" / "python"
    if not python.exists():
        pytest.skip("no .venv-openai-realtime (examples/clients/openai-responses-ws/requirements.txt)")
    program = ROOT / "examples" / "clients" / "openai-responses-ws" / "agent.py"
    argv = ["check", "--client", f"{python} {program}"]
    passing = [
        "single-call::original::s0",
        "parallel-2::original::s0",
        "single-call::D7-truncated-mid-args::s0",
    ]
    # The calls come from the items streamed; a session cut mid-arguments raises, and runs nothing.
    assert main([*argv, *(a for c in passing for a in ("--case", f"openai-responses/{c}"))]) == 0
    # Arguments cut short inside a completed response: the loop's json.loads raises, calls lost.
    assert main([*argv, "--case", "openai-responses/single-call::B10-truncated-args::s0"]) == 1
