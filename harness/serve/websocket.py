"""The replay server's WebSocket sessions (RFC 6455), on the same port as its HTTP endpoints: a
`GET` with `Upgrade: websocket` to a case's WebSocket path (`<prefix>/v1/realtime` for a Realtime
case, `<prefix>/v1/responses` for a Responses one) is answered `101 Switching Protocols`, and the
session runs the way its dialect's does (`StandingIn.websocket_session`): the Realtime API's
server frames follow the handshake, written read by read as recorded; the Responses API's
WebSocket mode answers the client's first `response.create` with the case's stream, each event
one text message. A cut case: its reads, then the connection closes with no close frame; a
stream that ends cleanly before its terminal event: a normal close frame after its reads.

What the client sends is read as it comes, frame by frame, its messages kept in order; once its
messages carry tool results (the dialect's `websocket_followup`, read at each `response.create`
that asks for the next response), that follow-up is kept in the case's log, as an HTTP follow-up
is, and answered as one is: with the turn recorded after the case's when it comes from a recorded
session (a conversation), else with the dialect's short final response. A close frame is
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

from harness.cassettes.model import Chunk, Response
from harness.serve import answers, routes
from harness.serve.followup import requesting
from harness.serve.http1 import Request, header_block, status_line
from harness.wire import dialects
from harness.wire.codecs import WireEvent, decode_all
from harness.wire.codecs.websocket import CLOSE, PONG, TEXT, WebSocketDecoder, frame

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
    session = None if route is None else _session_of(route.dialect, cases[route.case_id].dialect)
    if route is None or route.kind != "model" or session is None:
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
    if session == "on-connect" and not await _respond(case, writer, pace=pace):
        return
    await _listen(case, log, reader, writer, pace=pace, responded=session == "on-connect")


def _session_of(route_dialect: str | None, case_dialect: str) -> str | None:
    """How a case's session runs at a route (`StandingIn.websocket_session`); None: no session there."""
    if route_dialect != case_dialect:
        return None
    return requesting(case_dialect).websocket_session


async def _respond(case: Case, writer: asyncio.StreamWriter, *, pace: bool) -> bool:
    """The case's response as the session's server frames: whether the session goes on (the
    response ended; a cut closes the connection, a clean early end closes the session)."""
    chunks = case.response.chunks
    if dialects.get(case.dialect).codec_name != "websocket":
        chunks = [Chunk(data) for data in _messages_of(case.dialect, case.response)]  # a frame a message
    start = time.monotonic()
    for chunk in chunks:
        if pace and chunk.offset_ms is not None:
            delay = start + chunk.offset_ms / 1000 - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
        writer.write(chunk.data)
        await writer.drain()
    if not case.response.complete:
        return False  # cut: the connection closes with no close frame, as the recording's did
    if not dialects.get(case.dialect).is_terminal(case.events):
        # A clean end before the response ended: the server closes the session normally.
        writer.write(frame(CLOSE, b"\x03\xe8"))
        await writer.drain()
        return False
    return True


def _messages_of(dialect_name: str, response: Response) -> list[bytes]:
    """A stream of another codec (the Responses API's SSE) as its WebSocket messages, each one
    frame: the events its client would have read (a cut one's partial last event is not one)."""
    decoder = dialects.get(dialect_name).codec().decoder()
    wire = [event for chunk in response.chunks for event in decoder.feed(chunk.data)]
    if response.complete:
        wire += decoder.close()
    return [frame(*_text(event)) for event in requesting(dialect_name).websocket_messages(wire)]


def _recorded_turn(dialect_name: str, response: Response) -> bytes:
    """A conversation's recorded turn as the answer to a follow-up: its frames as recorded."""
    if dialects.get(dialect_name).codec_name == "websocket":
        return response.body
    return b"".join(_messages_of(dialect_name, response))


def _text(event: WireEvent) -> tuple[int, bytes]:
    return TEXT, event.data.encode("utf-8", "surrogatepass")


def _final_frames(dialect: str) -> bytes:
    """The dialect's short final answer as session frames."""
    _, body = answers.final_answer(dialect, stream=True)
    found = dialects.get(dialect)
    if found.codec_name == "websocket":
        return body
    wire = decode_all(found.codec(), [body])
    return b"".join(frame(*_text(event)) for event in requesting(dialect).websocket_messages(wire))


async def _listen(
    case: Case,
    log: CaseLog,
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    *,
    pace: bool,
    responded: bool,
) -> None:
    """Read the client's messages as they come; at each `response.create`: the case's response
    (`responded`: already sent), then the follow-ups, each judged and answered with a final one."""
    standing_in = requesting(case.dialect)
    decoder = WebSocketDecoder()
    messages: list[Any] = []
    per_create = standing_in.websocket_session == "on-create"
    answered = seen = 0
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
            if not responded:
                responded = True
                if not await _respond(case, writer, pace=pace):
                    return
                continue
            turn = standing_in.websocket_followup(messages)
            # Realtime results accumulate in the conversation: a create with no new one asks again.
            # A Responses continuation carries its own results only.
            if turn is not None and (per_create or len(turn.results) > seen):
                seen, answered = len(turn.results), answered + 1
                number = log.followup(turn, f"followup-{answered}")
                talk = case.conversation  # a recorded session's later turns answer, in order
                if talk is not None and number < len(talk.after):
                    writer.write(_recorded_turn(case.dialect, talk.after[number].response))
                else:
                    writer.write(_final_frames(case.dialect))
        await writer.drain()
