"""The replay server's WebSocket sessions (RFC 6455), on the same port as its HTTP endpoints: a
`GET` with `Upgrade: websocket` to a case's WebSocket path (`<prefix>/v1/realtime`) is answered
`101 Switching Protocols`, then the case's recorded server frames are written read by read as
they were recorded (a cut case: its reads, then the connection closes with no close frame; a
stream that ends cleanly before its terminal event: a normal close frame after its reads).

What the client sends is read as it comes, frame by frame, its messages kept in order; once its
messages carry tool results (the dialect's `read_followup` of `{"events": [...]}`, at the
`response.create` that asks for the next response), that follow-up is kept in the case's log, as
an HTTP follow-up is, and answered with the dialect's short final response. A close frame is
answered with one, and the session ends.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import json
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from harness.serve import answers, routes
from harness.serve.followup import read_followup
from harness.serve.http1 import Request, header_block, status_line
from harness.wire import dialects
from harness.wire.codecs.websocket import CLOSE, PONG, WebSocketDecoder, frame

if TYPE_CHECKING:
    from harness.mutate.case import Case
    from harness.serve.followup import Turn


class CaseLog(Protocol):
    """What a session tells the server's log of its case (`harness.serve.server.CaseLog`)."""

    def attempt(self, request_key: str) -> int: ...

    def followup(self, turn: Turn, request_key: str) -> int: ...

__all__ = ["accept_key", "is_upgrade", "serve_session"]

_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"  # RFC 6455 section 1.3
_IDLE_S = 30.0
_MAX_MESSAGES = 1000  # client messages kept for one session


def is_upgrade(request: Request) -> bool:
    headers = {k.lower(): v for k, v in request.headers.items()}
    return headers.get("upgrade", "").lower() == "websocket" and request.method == "GET"


def accept_key(key: str) -> str:
    """The `Sec-WebSocket-Accept` of a `Sec-WebSocket-Key`."""
    return base64.b64encode(hashlib.sha1((key + _GUID).encode()).digest()).decode()


async def _refuse(writer: asyncio.StreamWriter, status: int, message: str) -> None:
    body = json.dumps({"error": {"message": message}}).encode()
    head = [("content-type", "application/json"), ("content-length", str(len(body))), ("connection", "close")]
    writer.write(status_line(status) + header_block(head) + body)
    await writer.drain()


async def serve_session(
    cases: dict[str, Case],
    logs: Mapping[str, CaseLog],
    request: Request,
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    *,
    pace: bool = False,
) -> None:
    """Serve one WebSocket session of the case its path names, until either side closes."""
    route = routes.parse(request.target, cases)
    headers = {k.lower(): v for k, v in request.headers.items()}
    key = headers.get("sec-websocket-key", "")
    if route is None or route.kind != "model" or route.dialect != cases[route.case_id].dialect:
        await _refuse(writer, 404, f"no WebSocket endpoint of a case at {request.target.split('?', 1)[0]}")
        return
    if not key:
        await _refuse(writer, 400, "a WebSocket handshake needs Sec-WebSocket-Key")
        return
    case, log = cases[route.case_id], logs[route.case_id]
    head = [("upgrade", "websocket"), ("connection", "Upgrade"), ("sec-websocket-accept", accept_key(key))]
    writer.write(status_line(101) + header_block(head))
    await writer.drain()
    log.attempt(hashlib.sha256(request.target.encode()).hexdigest())
    start = time.monotonic()
    for chunk in case.response.chunks:
        if pace and chunk.offset_ms is not None:
            delay = start + chunk.offset_ms / 1000 - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
        writer.write(chunk.data)
        await writer.drain()
    if not case.response.complete:
        return  # cut: the connection closes with no close frame, as the recording's did
    if not dialects.get(case.dialect).is_terminal(case.events):
        # A clean end before the response ended: the server closes the session normally.
        writer.write(frame(CLOSE, b"\x03\xe8"))
        await writer.drain()
        return
    await _listen(case, log, reader, writer)


async def _listen(
    case: Case, log: CaseLog, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    decoder = WebSocketDecoder()
    messages: list[Any] = []
    answered = 0
    while True:
        data = await asyncio.wait_for(reader.read(65536), _IDLE_S)
        if not data:
            return
        for event in decoder.feed(data):
            if event.comment == "ping":
                writer.write(frame(PONG, event.data.encode("latin-1")))
                continue
            if event.name == "close":
                with contextlib.suppress(ConnectionError):
                    writer.write(frame(CLOSE, b"\x03\xe8"))  # 1000: normal closure
                    await writer.drain()
                return
            if event.comment is not None or len(messages) >= _MAX_MESSAGES:
                continue
            try:
                message = json.loads(event.data)
            except ValueError:
                continue
            messages.append(message)
            if not (isinstance(message, dict) and message.get("type") == "response.create"):
                continue
            turn = read_followup(case.dialect, {"events": messages})
            if turn is not None and len(turn.results) > answered:
                answered = len(turn.results)
                log.followup(turn, f"followup-{answered}")
                _, body = answers.final_answer(case.dialect, stream=True)
                writer.write(body)
        await writer.drain()
