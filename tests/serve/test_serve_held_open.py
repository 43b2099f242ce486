"""A last SSE event without its blank line, the connection then held open: the replay server and
the replay transport both send every byte, then nothing for the hold, then end cleanly; a client
that dispatches an event only at its blank line never takes the unterminated one (WHATWG SSE
9.2.6), one that dispatches a `data:` line at its line end does, while the connection is open."""

from __future__ import annotations

import http.client
import json
import time
import urllib.parse
from typing import Any

import pytest

from harness.cassettes.outcome import Outcome, State, ToolCall, diff
from harness.matrix.selection import build_case
from harness.serve import ReplayServer, base_urls
from harness.wire import dialects
from harness.wire.codecs import decode_all

CASE = "openai-responses/parallel-2::last-event-unterminated-connection-open::s0"
ORIGINAL = "openai-responses/parallel-2::original::s0"
BODY = {"model": "gpt-4.1", "input": "hi", "stream": True}


def test_the_last_event_loses_its_blank_line_and_the_connection_is_held() -> None:
    case, original = build_case(CASE), build_case(ORIGINAL)
    body = case.response.body
    assert original.response.body == body + b"\n" and body.endswith(b"}\n")
    assert case.response.open_after == 0.1 and case.response.complete
    assert case.events == original.events[:-1]  # response.completed is never dispatched
    assert case.expected.state is State.CUT and case.expected.tool_calls == original.expected.tool_calls


class TerminalClient:
    """Responses function calls by item id; `complete` only at `response.completed`."""

    def __init__(self) -> None:
        self.calls: dict[str, dict[str, Any]] = {}
        self.finish: str | None = None
        self.done = False

    def feed(self, p: Any) -> None:
        if not isinstance(p, dict):
            return
        kind = p.get("type")
        if kind == "response.output_item.added" and p["item"].get("type") == "function_call":
            self.calls[p["item"]["id"]] = {"id": p["item"]["call_id"], "name": p["item"]["name"], "text": ""}
        elif kind == "response.function_call_arguments.delta":
            self.calls[p["item_id"]]["text"] += p["delta"]
        elif kind == "response.completed":
            self.done, self.finish = True, p["response"]["status"]

    def close(self) -> Outcome:
        made = tuple(ToolCall.from_text(c["name"], c["text"], c["id"]) for c in self.calls.values())
        state = State.COMPLETE if self.done else State.CUT
        error = None if self.done else "stream ended before response.completed"
        return Outcome(tool_calls=made, finish_reason=self.finish, state=state, error=error)


def by_blank_line(body: bytes) -> Outcome:
    client, d = TerminalClient(), dialects.get("openai-responses")
    for event in dialects.parse_all(d, decode_all(d.codec(), [body])):
        client.feed(event.payload)
    return client.close()


def by_line(body: bytes) -> Outcome:
    """Each `data:` line taken as an event at its line end (a line-reading client)."""
    client = TerminalClient()
    for line in body.decode().splitlines(keepends=True):
        if line.startswith("data: ") and line.endswith("\n"):
            client.feed(json.loads(line[6:]))
    return client.close()


def test_a_client_dispatching_lines_takes_the_unterminated_event() -> None:
    case = build_case(CASE)
    body = case.response.body
    assert diff(case.expected, by_line(body)) == [
        "finish_reason: None expected, got 'completed'",
        "state: cut expected, got complete",
    ]
    assert diff(case.expected, by_blank_line(body)) == []
    original = build_case(ORIGINAL)
    assert diff(original.expected, by_line(original.response.body)) == []


def test_the_replay_server_sends_every_byte_then_holds_the_connection_open() -> None:
    case = build_case(CASE)
    with ReplayServer([case]).running() as server:
        parts = urllib.parse.urlsplit(base_urls(server.url, CASE)["openai-responses"] + "/responses")
        connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
        connection.request("POST", parts.path, json.dumps(BODY), {"content-type": "application/json"})
        response = connection.getresponse()
        got, last_at = b"", 0.0
        while chunk := response.read1(65536):
            got += chunk
            last_at = time.monotonic()
            if got == case.response.body:
                break
        assert got == case.response.body  # every byte, the unterminated event's line included
        assert response.read() == b""  # then the clean end, after the hold
        held = time.monotonic() - last_at
        connection.close()
    assert held >= 0.08


@pytest.mark.parametrize("flavour", ["sync", "async"])
def test_the_replay_transport_holds_the_stream_open_the_same_way(flavour: str) -> None:
    httpx = pytest.importorskip("httpx")
    from harness.accumulators.client import replay_transport

    case = build_case(CASE)
    request = ("POST", "https://api.openai.com/v1/responses")

    if flavour == "sync":
        client = httpx.Client(transport=replay_transport(case))
        with client, client.stream(*request, json=BODY) as response:
            reads = [(chunk, time.monotonic()) for chunk in response.iter_raw()]
            ended = time.monotonic()
    else:
        import asyncio

        async def run() -> tuple[list[tuple[bytes, float]], float]:
            client = httpx.AsyncClient(transport=replay_transport(case))
            async with client, client.stream(*request, json=BODY) as response:
                reads = [(chunk, time.monotonic()) async for chunk in response.aiter_raw()]
                return reads, time.monotonic()

        reads, ended = asyncio.run(run())
    assert b"".join(chunk for chunk, _ in reads) == case.response.body
    assert ended - reads[-1][1] >= 0.08
