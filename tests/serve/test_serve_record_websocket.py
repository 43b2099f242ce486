"""`toolstream serve --record --upstream URL` records a WebSocket session: a client on the
`websockets` library, through the recording server, to a real WebSocket server on 127.0.0.1 (the
replay server serving a Realtime case); the session is saved as a cassette (the server's frames
read by read, the client's messages in order, keys redacted) that replays to the same outcome."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from harness.cassettes.format import Chunk, load, save
from harness.matrix.selection import Selection, build_case, cases
from harness.serve import ReplayServer
from harness.serve.routes import case_prefix
from harness.serve.upstream import Recorder
from harness.wire.codecs import WireEvent
from harness.wire.codecs.websocket import WebSocketCodec

KEY = "sk-proj-live0do0not0save0123456789abcdef"
EPHEMERAL = "ek_68af0123456789abcdef0123"


def _session(url: str) -> list[dict[str, Any]]:
    """A Realtime agent loop: ask, run the calls once their arguments are done, send the results."""
    headers = {"Authorization": f"Bearer {KEY}", "OpenAI-Beta": "realtime=v1"}
    received: list[dict[str, Any]] = []

    def until_done(ws: Any) -> list[dict[str, Any]]:
        while True:
            received.append(json.loads(ws.recv(timeout=10)))
            if received[-1]["type"] == "response.done":
                return received

    with connect(url, additional_headers=headers, subprotocols=[f"openai-insecure-api-key.{KEY}"]) as ws:
        # A secret-named field in a client message: its value never reaches the cassette.
        session = {"type": "realtime", "client_secret": {"value": EPHEMERAL}, "output_modalities": ["text"]}
        ws.send(json.dumps({"type": "session.update", "session": session}))
        ws.send(json.dumps({"type": "response.create"}))
        calls = [m for m in until_done(ws) if m["type"] == "response.function_call_arguments.done"]
        for call in calls:
            item = {"type": "function_call_output", "call_id": call["call_id"], "output": "ok"}
            ws.send(json.dumps({"type": "conversation.item.create", "item": item}))
        ws.send(json.dumps({"type": "response.create"}))
        until_done(ws)
    return received


def test_a_websocket_session_records_through_the_server_and_replays_to_the_same_outcome(
    tmp_path: Path,
) -> None:
    case = build_case("openai-realtime/parallel-calls::F3-event-split-across-reads::s0")
    upstream = ReplayServer([case])
    with upstream.running():
        recorder = Recorder(upstream.url, tmp_path / "recorded")
        through = ReplayServer((), recorder=recorder)
        with through.running():
            target = case_prefix(case.id) + "/v1/realtime?model=gpt-realtime"
            live = _session(through.url.replace("http://", "ws://") + target)
            (path,) = recorder.wait(1, 10)
        upstream_verdict = upstream.describe(case.id)["verdict"]
    assert upstream_verdict["verdict"] == "pass", upstream_verdict["diff"]

    text = path.read_text(encoding="utf-8")
    assert KEY not in text and EPHEMERAL not in text and "REDACTED" in text
    cassette = load(path)
    assert cassette.dialect == "openai-realtime" and cassette.source.kind == "recorded"
    # One turn per response, a conversation: the calls, then the answer to their results.
    first, second = cassette.interactions
    request = first.request
    assert request.url.startswith("ws://127.0.0.1/case/") and request.url.endswith(
        "/v1/realtime?model=gpt-realtime"
    )
    assert request.headers["authorization"] == "REDACTED"
    assert request.headers["sec-websocket-protocol"] == "openai-insecure-api-key.REDACTED"
    assert "sec-websocket-key" not in request.headers  # new on every handshake
    # The client's messages in order up to the response.create of each turn, secrets redacted.
    assert [m["type"] for m in request.body["events"]] == ["session.update", "response.create"]
    results = ["conversation.item.create", "conversation.item.create"]
    assert [m["type"] for m in second.request.body["events"]] == [
        "session.update",
        "response.create",
        *results,
        "response.create",
    ]
    assert request.body["events"][0]["session"]["client_secret"]["value"] == "REDACTED"
    # The server's frames as they came, each read with its time: the case's, then the follow-up's
    # answer and the close; a session the server closed is complete.
    for turn in (first, second):
        assert turn.response.status == 101 and turn.response.content_type == "application/x-websocket-frames"
        assert turn.response.complete and all(c.offset_ms is not None for c in turn.response.chunks)
    assert first.response.body == case.response.body

    # Replayed, the recorded session gives its client the same messages and the same verdict.
    (replayed,) = cases(Selection(cassettes=(str(path),), scenarios=("original",)))
    again = ReplayServer([replayed])
    with again.running():
        url = again.url.replace("http://", "ws://") + case_prefix(replayed.id) + "/v1/realtime"
        assert _session(url) == live
        verdict = again.describe(replayed.id)["verdict"]
    assert verdict["verdict"] == "pass", verdict["diff"]
    assert verdict["expected"]["tool_calls"] == upstream_verdict["expected"]["tool_calls"]


def test_a_recorded_sessions_follow_up_is_answered_with_the_turn_recorded_after_it(tmp_path: Path) -> None:
    case = build_case("openai-realtime/single-call::original::s0")
    upstream = ReplayServer([case])
    with upstream.running():
        recorder = Recorder(upstream.url, tmp_path / "recorded")
        with ReplayServer((), recorder=recorder).running() as through:
            _session(through.url.replace("http://", "ws://") + case_prefix(case.id) + "/v1/realtime")
            (path,) = recorder.wait(1, 10)
    cassette = load(path)
    answer = [
        {"type": "response.created", "response": {"id": "resp_2", "status": "in_progress", "output": []}},
        {
            "type": "response.output_text.delta",
            "response_id": "resp_2",
            "item_id": "i",
            "delta": "as recorded",
        },
        {"type": "response.done", "response": {"id": "resp_2", "status": "completed", "output": []}},
    ]
    body = WebSocketCodec().encode(WireEvent(data=json.dumps(message)) for message in answer)
    cassette.interactions[1].response.chunks = [Chunk(body, 0.0)]  # the second turn, as if recorded so
    save(cassette, path)
    (replayed,) = cases(Selection(cassettes=(str(path),), scenarios=("original",)))
    with ReplayServer([replayed]).running() as again:
        heard = _session(again.url.replace("http://", "ws://") + case_prefix(replayed.id) + "/v1/realtime")
    assert [m.get("delta") for m in heard if m["type"] == "response.output_text.delta"] == ["as recorded"]


def _responses_session(url: str) -> list[dict[str, Any]]:
    """A Responses WebSocket loop: ask, then send the calls' outputs with previous_response_id."""
    received: list[dict[str, Any]] = []

    def until_completed(ws: Any) -> list[dict[str, Any]]:
        while True:
            received.append(json.loads(ws.recv(timeout=10)))
            if received[-1]["type"] == "response.completed":
                return received

    with connect(url, additional_headers={"Authorization": f"Bearer {KEY}"}) as ws:
        ws.send(json.dumps({"type": "response.create", "model": "gpt-5.2", "input": "Weather?"}))
        done = [m["item"] for m in until_completed(ws) if m["type"] == "response.output_item.done"]
        outputs = [
            {"type": "function_call_output", "call_id": item["call_id"], "output": "ok"} for item in done
        ]
        ws.send(json.dumps({"type": "response.create", "previous_response_id": "resp_1", "input": outputs}))
        until_completed(ws)
    return received


def test_a_responses_websocket_session_is_kept_as_the_dialects_own_stream(tmp_path: Path) -> None:
    case = build_case("openai-responses/parallel-2::original::s0")
    upstream = ReplayServer([case])
    with upstream.running():
        recorder = Recorder(upstream.url, tmp_path / "recorded")
        through = ReplayServer((), recorder=recorder)
        with through.running():
            live = _responses_session(
                through.url.replace("http://", "ws://") + case_prefix(case.id) + "/v1/responses"
            )
            (path,) = recorder.wait(1, 10)
    assert KEY not in path.read_text(encoding="utf-8")
    cassette = load(path)
    # The WebSocket mode is a profile of openai-responses: its turns are SSE streams of the dialect.
    assert cassette.dialect == "openai-responses"
    first, _ = cassette.interactions
    assert first.response.content_type == "text/event-stream; charset=utf-8" and first.response.complete
    assert [m["type"] for m in first.request.body["events"]] == ["response.create"]
    # Replayed over the WebSocket again: the same messages, the same verdict.
    (replayed,) = cases(Selection(cassettes=(str(path),), scenarios=("original",)))
    assert [e.payload for e in replayed.events] == [e.payload for e in case.events]
    again = ReplayServer([replayed])
    with again.running():
        url = again.url.replace("http://", "ws://") + case_prefix(replayed.id) + "/v1/responses"
        assert _responses_session(url) == live
        verdict = again.describe(replayed.id)["verdict"]
    assert verdict["verdict"] == "pass", verdict["diff"]


def test_a_client_gone_mid_session_is_saved_cut_though_the_upstream_keeps_it_open(tmp_path: Path) -> None:
    """An upstream that never closes (TLS cannot be half-closed, a real one keeps its session):
    once the client has gone, the recorder waits its few seconds and saves what came, cut."""
    import asyncio
    import contextlib
    import socket
    import threading
    import time

    from harness.serve.websocket import accept_key
    from harness.wire.codecs.websocket import TEXT, frame

    hello = frame(TEXT, json.dumps({"type": "session.created", "event_id": "e1", "session": {}}).encode())
    ready = threading.Event()
    port: list[int] = []
    stop = threading.Event()

    async def keeps_open(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        key = next(
            line.split(b":", 1)[1].strip()
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"sec-websocket-key")
        )
        writer.write(
            b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + f"Sec-WebSocket-Accept: {accept_key(key.decode())}\r\n\r\n".encode()
            + hello
        )
        await writer.drain()
        while not stop.is_set():  # deaf to the client's end
            await asyncio.sleep(0.05)
        writer.close()

    def serve() -> None:
        async def main() -> None:
            server = await asyncio.start_server(keeps_open, "127.0.0.1", 0)
            port.append(server.sockets[0].getsockname()[1])
            ready.set()
            while not stop.is_set():
                await asyncio.sleep(0.05)
            server.close()

        asyncio.run(main())

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    assert ready.wait(10)
    try:
        recorder = Recorder(f"http://127.0.0.1:{port[0]}", tmp_path / "recorded")
        with ReplayServer((), recorder=recorder).running() as through:
            with (
                contextlib.suppress(ConnectionClosed),
                connect(through.url.replace("http://", "ws://") + "/v1/realtime") as ws,
            ):
                assert json.loads(ws.recv(timeout=10))["type"] == "session.created"
                ws.socket.shutdown(socket.SHUT_RDWR)  # gone, without a close frame
                started = time.monotonic()
                (path,) = recorder.wait(1, 15)
                waited = time.monotonic() - started
            assert waited < 10
    finally:
        stop.set()
        thread.join(10)
    (interaction,) = load(path).interactions
    assert not interaction.response.complete
    assert interaction.response.error == "the connection closed without a close frame"
    assert interaction.response.body == hello
