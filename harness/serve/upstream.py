"""Recording through the server (`toolstream serve --record --upstream URL`): each request is
forwarded to the real provider and its response streamed back read for read, while a
`RecordingTransport` keeps every read in a cassette of its own (redacted as any recording is,
dialect detected from the path and content, saved atomically when the response ends).

The server's root stands for the upstream's root: a client whose SDK would call
`https://api.openai.com/v1/chat/completions` calls `http://127.0.0.1:PORT/v1/chat/completions`.
Requests go to the upstream and nowhere else: a target that is not a path (`@host/...`,
`http://host/...`, `//host/...`, CONNECT's `host:443`) is refused before anything is sent, since
the client's key would go with it.
"""

from __future__ import annotations

import re
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import httpx

from harness.errors import UsageError
from harness.serve.http1 import BadRequest, origin_form
from harness.transports.recording import RecordingTransport
from harness.transports.redaction import Redaction

__all__ = ["Forwarded", "Recorder", "UpstreamError"]

# Hop-by-hop and framing headers are the server's and httpx's to set, not the client's.
_NOT_FORWARDED = frozenset(
    {"host", "content-length", "transfer-encoding", "connection", "keep-alive", "expect", "accept-encoding"}
)
_NOT_RETURNED = frozenset({"content-length", "transfer-encoding", "connection", "keep-alive"})


class UpstreamError(Exception):
    """The upstream could not be reached or did not answer (the client gets a 502)."""


@dataclass
class Forwarded:
    """An upstream response on its way to the client: status, headers, then its reads."""

    status: int
    headers: list[tuple[str, str]]
    reads: AsyncIterator[bytes]
    close: Callable[[], Awaitable[None]]


class Recorder:
    """Forwards requests to `upstream` and records each exchange into `cassette_dir`, one cassette
    per request, named by a sequence number and the request path (`0003-v1-chat-completions.yaml`)."""

    def __init__(
        self,
        upstream: str,
        cassette_dir: str | Path,
        *,
        redact: Redaction | None = None,
        timeout: float = 600.0,
    ) -> None:
        parts = urlsplit(upstream)
        said = Redaction.DEFAULT.url(upstream)  # errors name it without a userinfo key
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise UsageError(f"--upstream: {said!r} is not an http(s) URL")
        if parts.query or parts.fragment:
            raise UsageError(f"--upstream: {said!r}: give the provider's root URL, without a query")
        self.upstream = upstream.rstrip("/")
        self.shown = Redaction.DEFAULT.url(self.upstream)  # what log lines say: no userinfo key
        self._origin = httpx.URL(self.upstream)
        self.cassette_dir = Path(cassette_dir)
        if self.cassette_dir.exists() and not self.cassette_dir.is_dir():
            raise UsageError(f"--cassette-dir: {self.cassette_dir} is not a directory")
        self.redact = redact
        self.timeout = timeout
        self.saved: list[Path] = []  # cassettes whose response has ended, in that order
        self._lock = threading.Condition()
        self._next = 1

    def path_for(self, target: str) -> Path:
        """A fresh cassette path for a request to `target`; never one that exists."""
        # Named after the redacted path: a key in a path segment (`/v1/sk-proj-.../chat/completions`)
        # names neither the file nor the cassette.
        path = urlsplit((self.redact or Redaction.DEFAULT).url(origin_form(target))).path
        slug = re.sub(r"[^A-Za-z0-9]+", "-", path).strip("-")[:60] or "root"
        self.cassette_dir.mkdir(parents=True, exist_ok=True)
        with self._lock:
            while True:
                candidate = self.cassette_dir / f"{self._next:04d}-{slug}.yaml"
                self._next += 1
                if not candidate.exists():
                    return candidate

    def url_for(self, target: str) -> str:
        """The upstream URL of a request target; BadRequest (a 400) for a target that is not a path
        or would lead anywhere but the upstream."""
        url = self.upstream + origin_form(target)
        try:
            parsed = httpx.URL(url)
        except httpx.InvalidURL as exc:
            raise BadRequest(400, f"request target: not a URL path ({exc})") from None
        theirs, ours = parsed, self._origin
        if (theirs.scheme, theirs.host, theirs.port, theirs.userinfo) != (
            ours.scheme,
            ours.host,
            ours.port,
            ours.userinfo,
        ):
            raise BadRequest(400, "request target leads away from the upstream: give a path")
        return url

    async def forward(self, method: str, target: str, headers: Mapping[str, str], body: bytes) -> Forwarded:
        """Send one request upstream; its response comes back as it arrives and is recorded.
        Raises BadRequest for a target that is not a path on the upstream, UpstreamError when the
        upstream cannot be reached."""
        url = self.url_for(target)
        path = self.path_for(target)
        inner = httpx.AsyncHTTPTransport()
        transport = RecordingTransport(inner, path=path, mode="all", redact=self.redact)
        sent = [(k, v) for k, v in headers.items() if k.lower() not in _NOT_FORWARDED]
        request = httpx.Request(
            method,
            url,
            headers=sent,
            content=body,
            extensions={"timeout": httpx.Timeout(self.timeout).as_dict()},
        )
        try:
            response = await transport.handle_async_request(request)
        except httpx.HTTPError as exc:
            await inner.aclose()
            redaction = self.redact or Redaction.DEFAULT
            said = str(exc).replace(url, redaction.url(url)).replace(self.upstream, self.shown)
            raise UpstreamError(f"upstream {self.shown}: {type(exc).__name__}: {said}") from None
        stream = response.stream

        async def reads() -> AsyncIterator[bytes]:
            async for data in stream:
                yield data

        async def close() -> None:
            try:
                await stream.aclose()  # saves the cassette if the end was not reached
            finally:
                await inner.aclose()
                self.saved_one(path)

        returned = [(k, v) for k, v in response.headers.multi_items() if k.lower() not in _NOT_RETURNED]
        return Forwarded(response.status_code, returned, reads(), close)

    def saved_one(self, path: Path) -> None:
        """Tell waiters a cassette is saved (an exchange or a WebSocket session has ended)."""
        with self._lock:
            self.saved.append(path)
            self._lock.notify_all()

    def wait(self, count: int, seconds: float) -> list[Path]:
        """The cassettes saved so far, once there are `count` of them or `seconds` passed."""
        with self._lock:
            self._lock.wait_for(lambda: len(self.saved) >= count, seconds)
            return list(self.saved)
