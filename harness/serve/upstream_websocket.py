"""Recording a WebSocket session through the server (`toolstream serve --record --upstream URL`):
a client's `GET` with `Upgrade: websocket` is forwarded to the upstream (`http` -> `ws`, `https`
-> `wss`, the same path and query), the upstream's handshake answer goes back to the client, and
from then on the bytes pass both ways as they come, while both directions are kept:

- what the server sends, each network read as it arrived with its time (`Chunk`): the cassette's
  response, `content-type: application/x-websocket-frames`, status 101 (the Realtime API's and
  the Responses API's WebSocket mode are read by their dialects, as a replayed session is);
- what the client sends, each message in order: the request's body `{"events": [...]}`, as the
  Realtime dialect reads a follow-up.

The client's offer of compression (`Sec-WebSocket-Extensions`) is not forwarded, as an HTTP
recording asks for `accept-encoding: identity`: the frames stay readable. Redaction is the
HTTP recording's (`Redaction`): the key headers (`Authorization`, an `ek_` ephemeral key, a
`Sec-WebSocket-Protocol` carrying a key), secret-named fields of the client's messages (a
Realtime `client_secret.value`), key-shaped strings, and every echo of them in the server's
frames, each frame re-encoded with its new length. The session is complete when the upstream
closed it with a close frame, or the client closed it after the dialect's terminal event; an
upstream connection that ends otherwise is saved as cut.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import json
import ssl
import time
from dataclasses import replace
from typing import Any
from urllib.parse import urlsplit

from harness.cassettes.format import Cassette, Chunk, Interaction, Request, Response, Source, save
from harness.serve.followup import requesting
from harness.serve.http1 import Request as Received
from harness.serve.http1 import header_block, origin_form
from harness.serve.upstream import Recorder, UpstreamError
from harness.transports.redaction import Redaction, scrub_interaction
from harness.transports.volatile import stable_headers, stable_url
from harness.wire import dialects
from harness.wire.codecs import STREAM_CONTENT_TYPES
from harness.wire.codecs.websocket import WebSocketDecoder

__all__ = ["record_session"]

_MEDIA = STREAM_CONTENT_TYPES["websocket"]
_HEAD_LIMIT = 64 * 1024  # the upstream's handshake answer, headers included
_REFUSAL_LIMIT = 1024 * 1024  # the body of an upstream that refuses the upgrade
_MAX_MESSAGES = 10_000  # the client's messages kept for one session
_AFTER_CLIENT_S = 5.0  # how long the upstream may still send once the client has gone
# What changes on every handshake: a re-record diffs clean without them.
_VOLATILE = frozenset({"sec-websocket-key", "sec-websocket-accept"})
# Hop-by-hop headers, the server's to set; the offer of compression is not made (frames stay readable).
_NOT_FORWARDED = frozenset(
    {"host", "connection", "upgrade", "keep-alive", "content-length", "transfer-encoding"}
    | {"sec-websocket-extensions"}
)


async def record_session(
    recorder: Recorder, request: Received, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    """Forward one WebSocket session to the recorder's upstream and save it as a cassette of its
    own when either side ends it. A target that is not a path is refused (400), as an HTTP one is;
    an upstream that cannot be reached is a 502 naming it."""
    url = recorder.url_for(request.target)  # BadRequest: the caller refuses it
    path = recorder.path_for(request.target)
    parts = urlsplit(url)
    secure = parts.scheme == "https"
    host = parts.hostname or ""
    port = parts.port or (443 if secure else 80)
    try:
        upstream_reader, upstream_writer = await asyncio.wait_for(
            asyncio.open_connection(host, port, ssl=ssl.create_default_context() if secure else None),
            recorder.timeout,
        )
    except (OSError, TimeoutError) as exc:
        raise UpstreamError(f"upstream {recorder.shown}: {type(exc).__name__}: {exc}") from None
    sent = [(k, v) for k, v in request.headers.items() if k.lower() not in _NOT_FORWARDED]
    host_header = parts.netloc.rpartition("@")[2]
    head = [("host", host_header), ("connection", "Upgrade"), ("upgrade", "websocket"), *sent]
    line = f"GET {origin_form(request.target)} HTTP/1.1\r\n".encode("latin-1")
    upstream_writer.write(line + header_block(head))
    session = _Session(recorder, url.replace("http", "ws", 1), dict(sent))
    try:
        await upstream_writer.drain()
        status, answer_head, rest = await _read_head(upstream_reader, recorder.timeout)
        writer.write(answer_head)
        if status != 101:
            await _refused(session, status, answer_head, rest, upstream_reader, writer)
            return
        session.status = 101
        session.headers = _headers_of(answer_head)
        if rest:
            session.server_read(rest)
            writer.write(rest)
        await writer.drain()
        await _pump(session, reader, writer, upstream_reader, upstream_writer)
    except (ConnectionError, asyncio.IncompleteReadError, TimeoutError) as exc:
        session.error = session.error or f"{type(exc).__name__}: {exc}"
    finally:
        upstream_writer.close()
        with contextlib.suppress(Exception):
            await upstream_writer.wait_closed()
        session.save(path)
        recorder.saved_one(path)


class _Session:
    """One session on its way through: the server's reads, the client's messages, how it ended."""

    def __init__(self, recorder: Recorder, url: str, headers: dict[str, str]) -> None:
        self.redaction = recorder.redact or Redaction.DEFAULT
        self.url = url
        self.request_headers = headers
        self.started = time.monotonic()
        self.status = 0
        self.headers: dict[str, str] = {}
        self.chunks: list[tuple[int, Chunk]] = []  # each read, with the client's asks before it
        self.messages: list[Any] = []
        self.asked = 0  # the client's `response.create` messages so far
        self.server_frames = WebSocketDecoder()
        self.client_frames = WebSocketDecoder()
        self.server_closed = False  # a close frame came from the upstream
        self.client_closed = False  # a close frame came from the client
        self.error: str | None = None

    def server_read(self, data: bytes) -> None:
        self.chunks.append((self.asked, Chunk(data, (time.monotonic() - self.started) * 1000.0)))
        # Bytes the codec cannot read are kept as they came, and judged when the cassette is read.
        with contextlib.suppress(ValueError):
            self.server_closed |= any(event.name == "close" for event in self.server_frames.feed(data))

    def client_read(self, data: bytes) -> None:
        try:
            events = self.client_frames.feed(data)
        except ValueError:
            return
        for event in events:
            if event.name == "close":
                self.client_closed = True
            elif not event.is_comment and len(self.messages) < _MAX_MESSAGES:
                try:
                    self.messages.append(json.loads(event.data))
                except ValueError:
                    self.messages.append(event.data)
                self.asked += _asks(self.messages[-1])

    def save(self, path: Any) -> None:
        """The session as a cassette: one interaction per response, the turns of a conversation
        (`docs/cassettes.md`): a turn's request holds the client's messages up to the
        `response.create` that asked for it, its response the server's reads that came after it
        (the first holds those before it too: the session's own events); each read's time is
        counted from its turn's first read. Only the last turn may end cut."""
        sent = {k: v for k, v in self.request_headers.items() if k.lower() not in _VOLATILE}
        answered = {k: v for k, v in self.headers.items() if k.lower() not in _VOLATILE}
        secrets: list[str] = []
        requests = []
        for upto in self._turn_ends():
            request, found = self.redaction.request(
                Request("GET", self.url, sent, {"events": self.messages[:upto]})
            )
            secrets += found
            requests.append(
                replace(request, url=stable_url(request.url), headers=stable_headers(request.headers))
            )
        headers = self.redaction.response_headers(stable_headers(answered), secrets)
        if self.status == 101:
            headers["content-type"] = _MEDIA
        turns = self._turn_reads(len(requests))
        interactions = [
            Interaction(request, Response(self.status, dict(headers), reads))
            for request, reads in zip(requests, turns, strict=True)
        ]
        last = interactions[-1]
        dialect = dialects.recognise(last.request, last.response) if self.status == 101 else None
        if dialect is not None and dialects.get(dialect).codec_name != "websocket":
            for interaction in interactions:  # a profile of a streaming dialect: kept in its form
                interaction.response = _in_stream_form(dialect, interaction.response)
        ended = dialect is not None and dialects.finished(last.response, dialect)
        if self.error is not None or not (self.server_closed or (self.client_closed and ended)):
            last.response.complete = False
            last.response.error = self.error or "the connection closed without a close frame"
        # Every echo of a secret in the server's frames (a secret-named field there is a call's
        # argument, as in an event stream: left to the echo hunt).
        for interaction in interactions:
            scrub_interaction(interaction, secrets)
        today = datetime.date.today().isoformat()
        source = Source("recorded", f"a WebSocket session recorded by toolstream serve --record on {today}")
        save(Cassette(path.stem, source, interactions, dialect), path)

    def _turn_ends(self) -> list[int]:
        """Where each turn's messages end: after each `response.create`, the last turn's at the end."""
        ends = [n + 1 for n, message in enumerate(self.messages) if _asks(message)]
        if not ends or ends[-1] < len(self.messages):
            ends.append(len(self.messages))
        return ends

    def _turn_reads(self, count: int) -> list[list[Chunk]]:
        turns: list[list[Chunk]] = [[] for _ in range(count)]
        for asked, chunk in self.chunks:
            turns[min(max(asked, 1), count) - 1].append(chunk)
        for reads in turns:
            first = reads[0].offset_ms if reads and reads[0].offset_ms is not None else 0.0
            reads[:] = [Chunk(chunk.data, round((chunk.offset_ms or 0.0) - first, 3)) for chunk in reads]
        return turns


def _in_stream_form(dialect: str, response: Response) -> Response:
    """A session turn of a dialect that streams over HTTP too (the Responses API's WebSocket mode)
    as that stream: each read's completed messages as the dialect's events (SSE, each named by its
    type), control frames left out, so the cassette is an ordinary one of the dialect, served
    both ways."""
    standing_in = requesting(dialect)
    codec = dialects.get(dialect).codec()
    decoder = WebSocketDecoder()
    chunks = []
    for chunk in response.chunks:
        with contextlib.suppress(ValueError):
            messages = [e for e in decoder.feed(chunk.data) if e.name is None and not e.is_comment]
            data = codec.encode(standing_in.websocket_events(messages))
            if data:
                chunks.append(Chunk(data, chunk.offset_ms))
    headers = {**response.headers, "content-type": STREAM_CONTENT_TYPES[dialects.get(dialect).codec_name]}
    return Response(200, headers, chunks, response.complete, response.error, response.error_type)


def _asks(message: Any) -> bool:
    return isinstance(message, dict) and message.get("type") == "response.create"


async def _read_head(reader: asyncio.StreamReader, timeout: float) -> tuple[int, bytes, bytes]:
    """The upstream's status, its answer's head (status line and headers), and what came after."""
    data = b""
    while b"\r\n\r\n" not in data:
        more = await asyncio.wait_for(reader.read(65536), timeout)
        if not more:
            raise ConnectionError("the upstream closed the connection before answering the handshake")
        data += more
        if len(data) > _HEAD_LIMIT and b"\r\n\r\n" not in data[:_HEAD_LIMIT]:
            raise ConnectionError(f"the upstream's handshake answer is longer than {_HEAD_LIMIT} bytes")
    head, _, rest = data.partition(b"\r\n\r\n")
    line = head.split(b"\r\n", 1)[0].split()
    try:
        status = int(line[1])
    except (IndexError, ValueError):
        raise ConnectionError(f"the upstream answered {head[:60]!r}, not HTTP") from None
    return status, head + b"\r\n\r\n", rest


def _headers_of(head: bytes) -> dict[str, str]:
    out = {}
    for line in head.decode("latin-1").split("\r\n")[1:]:
        name, colon, value = line.partition(":")
        if colon:
            out[name.strip().lower()] = value.strip()
    return out


async def _refused(
    session: _Session,
    status: int,
    head: bytes,
    rest: bytes,
    upstream: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
) -> None:
    """An upstream that answered the handshake with something else (a 401): its answer goes back
    and is saved as it came."""
    session.status = status
    session.headers = _headers_of(head)
    body = rest
    while len(body) < _REFUSAL_LIMIT:
        more = await asyncio.wait_for(upstream.read(65536), 30)
        if not more:
            break
        body += more
        with contextlib.suppress(ValueError):
            if len(body) >= int(session.headers.get("content-length", "-1")) >= 0:
                break
    session.chunks = [(0, Chunk(body, 0.0))] if body else []
    session.server_closed = True  # an answer, complete as an HTTP one
    writer.write(body)
    await writer.drain()


async def _pump(
    session: _Session,
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    upstream_reader: asyncio.StreamReader,
    upstream_writer: asyncio.StreamWriter,
) -> None:
    """Bytes both ways as they come, until the upstream's side ends. The client's end is told to
    the upstream (half-closed where the transport can, TLS cannot), which is then given
    `_AFTER_CLIENT_S` to finish: an upstream that keeps a session open needs no client to."""

    async def from_client() -> None:
        while True:
            data = await reader.read(65536)
            if not data:
                if upstream_writer.can_write_eof():
                    with contextlib.suppress(OSError):
                        upstream_writer.write_eof()
                return
            session.client_read(data)
            upstream_writer.write(data)
            await upstream_writer.drain()

    client = asyncio.create_task(from_client())
    try:
        while True:
            read = asyncio.ensure_future(upstream_reader.read(65536))
            await asyncio.wait({read, client}, return_when=asyncio.FIRST_COMPLETED)
            if not read.done():  # the client has gone: the upstream's last words, then no more
                try:
                    await asyncio.wait_for(read, _AFTER_CLIENT_S)
                except TimeoutError:
                    break
            data = read.result()
            if not data:
                break
            session.server_read(data)
            with contextlib.suppress(ConnectionError):
                writer.write(data)
                await writer.drain()
            if session.server_closed and session.client_closed:
                break
    finally:
        client.cancel()
        with contextlib.suppress(asyncio.CancelledError, ConnectionError, OSError):
            await client
