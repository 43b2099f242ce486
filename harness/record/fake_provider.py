"""A local HTTP/1.1 server that streams scripted responses over a real socket.

`FakeProvider` listens on 127.0.0.1 (a free port) in a background thread. Each route
(method + path) serves a `Script`: a status, headers and a list of `Write`s, each sent as one
HTTP chunk (`Transfer-Encoding: chunked`, TCP_NODELAY, flushed) after its delay. A script can cut
the connection after write N, with no terminating chunk, so the client sees a transport error.
Any cassette can be served as well (`FakeProvider.from_cassette`). Every request received is kept
in `.requests`, so a test can assert what the server saw::

    with FakeProvider() as fake:
        fake.route("POST", "/v1/chat/completions", Script([Write(b"data: {}\\n\\n", delay=0.01)]))
        httpx.post(fake.url + "/v1/chat/completions", json={})
        assert fake.requests[0].json() == {}

A conversation of several turns is one script per turn on one route, served in order: the first
request gets turn 1 (the streamed tool calls), the follow-up turn 2 (the answer), and so on
(docs/testing-your-agent.md records an agent this way)::

    fake.route("POST", "/v1/chat/completions", Script.of(TURN_1))
    fake.route("POST", "/v1/chat/completions", Script.of(TURN_2))
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from harness.cassettes.format import Cassette, header, load

__all__ = ["FakeProvider", "ReceivedRequest", "Script", "Write"]

# Framing headers are the server's job: a cassette's recorded ones would contradict chunked output.
_FRAMING_HEADERS = frozenset({"content-length", "transfer-encoding", "connection", "keep-alive"})
_MAX_BODY = 64 * 1024 * 1024  # a request body above this is refused, so a bad client cannot exhaust memory
_IDLE_TIMEOUT_S = 30.0  # an idle keep-alive connection is closed after this


@dataclass(frozen=True, slots=True)
class Write:
    """Bytes sent as one HTTP chunk, after waiting `delay` seconds."""

    data: bytes
    delay: float = 0.0


@dataclass(slots=True)
class Script:
    """What one route answers: status, headers, then the writes in order.

    `cut_after=N` closes the connection right after write N (1-based; 0 means before any body
    bytes) without the terminating zero-size chunk, so the client sees the stream break.
    """

    writes: list[Write] = field(default_factory=list)
    status: int = 200
    headers: dict[str, str] = field(default_factory=lambda: {"content-type": "text/event-stream"})
    cut_after: int | None = None

    @classmethod
    def of(
        cls,
        chunks: Iterable[bytes],
        *,
        delay: float = 0.0,
        status: int = 200,
        headers: Mapping[str, str] | None = None,
        cut_after: int | None = None,
    ) -> Script:
        """A script writing each of `chunks` with the same delay before each."""
        return cls(
            writes=[Write(data, delay) for data in chunks],
            status=status,
            headers=dict(headers) if headers is not None else {"content-type": "text/event-stream"},
            cut_after=cut_after,
        )


@dataclass(frozen=True, slots=True)
class ReceivedRequest:
    """One request as the server received it."""

    method: str
    path: str
    query: str
    headers: dict[str, str]  # as sent; a repeated header keeps its last value
    body: bytes

    def header(self, name: str) -> str | None:
        """Case-insensitive header lookup."""
        return header(self.headers, name)

    @property
    def params(self) -> dict[str, str]:
        """The query parameters (the last value wins when one repeats)."""
        return dict(parse_qsl(self.query, keep_blank_values=True))

    def json(self) -> Any:
        return json.loads(self.body)


class FakeProvider:
    """A scripted streaming HTTP server on 127.0.0.1; use it as a context manager.

    A route serves its scripts in the order they were added and then keeps serving the last one.
    An unknown route gets a 404 with a JSON error. `stop()` (or leaving the `with` block) stops
    the server thread, interrupts pending delays and closes every open connection.
    """

    def __init__(self) -> None:
        self._routes: dict[tuple[str, str], list[Script]] = {}
        self._served: dict[tuple[str, str], int] = {}
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self.requests: list[ReceivedRequest] = []

    # -- configuration -------------------------------------------------------------------------

    def route(self, method: str, path: str, script: Script) -> FakeProvider:
        """Serve `script` for `method path` (after any script already queued there)."""
        with self._lock:
            self._routes.setdefault((method.upper(), path), []).append(script)
        return self

    def add_cassette(self, cassette: Cassette, *, speed: float = 0.0) -> FakeProvider:
        """Serve each interaction of `cassette` at its method and path, its chunks as writes.

        `speed` paces the writes from the recorded `offset_ms`: 1 is real time, 2 twice as fast,
        0 (the default) no delay. A recording cut short (`complete: false`) is cut again.
        """
        for item in cassette.interactions:
            response = item.response
            writes: list[Write] = []
            previous = 0.0
            for chunk in response.chunks:
                delay = 0.0
                if speed > 0 and chunk.offset_ms is not None:
                    delay = max(0.0, chunk.offset_ms - previous) / 1000.0 / speed
                    previous = chunk.offset_ms
                writes.append(Write(chunk.data, delay))
            headers = {k: v for k, v in response.headers.items() if k.lower() not in _FRAMING_HEADERS}
            cut = None if response.complete else len(writes)
            script = Script(writes=writes, status=response.status, headers=headers, cut_after=cut)
            self.route(item.request.method, urlsplit(item.request.url).path or "/", script)
        return self

    @classmethod
    def from_cassette(
        cls, cassette: Cassette | str | os.PathLike[str], *, speed: float = 0.0
    ) -> FakeProvider:
        """A server (not yet started) that serves `cassette`, a `Cassette` or the path of one."""
        if not isinstance(cassette, Cassette):
            cassette = load(cassette)
        return cls().add_cassette(cassette, speed=speed)

    # -- lifecycle -----------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """The base URL, like `http://127.0.0.1:54321` (no trailing slash)."""
        if self._server is None:
            raise RuntimeError("FakeProvider is not running: call start() or use it in a `with` block")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> FakeProvider:
        if self._server is not None:
            return self
        self._stopping.clear()
        server = _Server(("127.0.0.1", 0), _Handler)
        server.provider = self
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="FakeProvider", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        server, thread = self._server, self._thread
        if server is None:
            return
        self._stopping.set()
        server.shutdown()  # no new connections after this returns
        server.close_connections()
        server.server_close()  # joins the connection threads
        if thread is not None:
            thread.join(timeout=5)
        self._server = self._thread = None

    def __enter__(self) -> FakeProvider:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # -- serving (called from connection threads) ----------------------------------------------

    def _next_script(self, method: str, path: str) -> Script | None:
        key = (method.upper(), path)
        with self._lock:
            scripts = self._routes.get(key)
            if not scripts:
                return None
            served = self._served.get(key, 0)
            self._served[key] = served + 1
            return scripts[min(served, len(scripts) - 1)]

    def _received(self, request: ReceivedRequest) -> None:
        with self._lock:
            self.requests.append(request)


class _Server(ThreadingHTTPServer):
    daemon_threads = False  # joined on server_close, so no thread outlives the provider
    block_on_close = True
    provider: FakeProvider

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler]) -> None:
        self._open: set[socket.socket] = set()
        self._open_lock = threading.Lock()
        super().__init__(address, handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._open_lock:
            self._open.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._open_lock:
            self._open.discard(request)
        super().shutdown_request(request)

    def close_connections(self) -> None:
        """Unblock every connection thread (idle keep-alive reads included)."""
        with self._open_lock:
            sockets = list(self._open)
        for sock in sockets:
            with contextlib.suppress(OSError):  # already closed by the client
                sock.shutdown(socket.SHUT_RDWR)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = _IDLE_TIMEOUT_S
    server: _Server

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # tests read `.requests`, not stderr

    def do_GET(self) -> None:
        self._serve()

    do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = do_GET

    def _serve(self) -> None:
        try:
            self._answer()
        except OSError:  # the client went away, or stop() shut the socket: nothing left to serve
            self.close_connection = True

    def _answer(self) -> None:
        provider = self.server.provider
        body = self._read_body()
        if body is None:
            return
        target = urlsplit(self.path)
        provider._received(
            ReceivedRequest(
                method=self.command,
                path=target.path,
                query=target.query,
                headers=dict(self.headers.items()),
                body=body,
            )
        )
        script = provider._next_script(self.command, target.path)
        if script is None:
            self._send_plain(404, {"error": {"message": f"no script for {self.command} {target.path}"}})
            return
        self._send_script(script, provider._stopping)

    def _read_body(self) -> bytes | None:
        """The request body (Content-Length or chunked); None after answering a bad request."""
        body = self._read_body_or_refuse()
        if body is None:
            self.close_connection = True  # the rest of a bad request's stream cannot be trusted
        return body

    def _read_body_or_refuse(self) -> bytes | None:
        if (self.headers.get("Transfer-Encoding") or "").lower() == "chunked":
            parts: list[bytes] = []
            total = 0
            while True:  # bounded by _MAX_BODY and by the terminating zero-size chunk
                size_line = self.rfile.readline(1024)
                try:
                    size = int(size_line.split(b";")[0].strip(), 16)
                except ValueError:
                    size = -1
                if size < 0:
                    self._send_plain(400, {"error": {"message": "bad chunk size"}})
                    return None
                total += size
                if total > _MAX_BODY:
                    self._send_plain(413, {"error": {"message": "request body too large"}})
                    return None
                if size == 0:
                    for _ in range(100):  # trailers, ignored, up to the blank line
                        if self.rfile.readline(1024) in (b"\r\n", b"\n", b""):
                            break
                    return b"".join(parts)
                parts.append(self.rfile.read(size))
                self.rfile.readline(1024)
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        if not 0 <= length <= _MAX_BODY:
            self._send_plain(413, {"error": {"message": "bad or too large Content-Length"}})
            return None
        return self.rfile.read(length) if length else b""

    def _send_plain(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode("utf-8")
        self.send_response_only(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _send_script(self, script: Script, stopping: threading.Event) -> None:
        self.send_response_only(script.status)
        for name, value in script.headers.items():
            if name.lower() not in _FRAMING_HEADERS:
                self.send_header(name, value)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        if script.cut_after == 0:
            self._cut()
            return
        for number, write in enumerate(script.writes, start=1):
            if write.delay > 0 and stopping.wait(write.delay):
                self._cut()  # the provider is stopping
                return
            if write.data:  # an empty chunk would end the body early
                self.wfile.write(b"%x\r\n%s\r\n" % (len(write.data), write.data))
            if number == script.cut_after:
                self._cut()
                return
        if script.cut_after is not None:  # N past the last write: cut after them all
            self._cut()
            return
        self.wfile.write(b"0\r\n\r\n")

    def _cut(self) -> None:
        """Close the connection mid-body: no terminating chunk, so the client sees it broken."""
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)
