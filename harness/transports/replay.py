"""Replay: answer httpx / httpx2 requests from a cassette, read by read, optionally at recorded pace.

`ReplayTransport` serves each recorded `Chunk` as one item of the response stream, so a client sees
the same read boundaries the recording saw. A cut recording ends, after its last chunk, with the
transport error the client saw then (same class, same message). `Playlist` and `serve` are shared
with `RecordingTransport`, which replays the same way in its replaying modes.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any, Final

from harness.cassettes.format import Cassette, Interaction, Request, Response, json_body, load
from harness.errors import NoMatchError, UsageError
from harness.transports._library import Library, TransportBase, library_of
from harness.transports.matching import Matcher, Normalized
from harness.transports.modes import MATCH_FIELDS
from harness.transports.redaction import Redaction

# Headers that describe the body on the wire, not the decoded body we serve.
_WIRE_HEADERS: Final = frozenset({"content-length", "transfer-encoding"})
# Encodings the recorder decodes before it records (see recording.py); others stay as recorded.
DECODED_ENCODINGS: Final = frozenset({"identity", "gzip", "x-gzip", "deflate"})
_CUT_MESSAGE: Final = "the recorded response was cut before its end"

# Pacing hooks: module attributes so tests can swap in a fake clock without real waiting.
clock = time.monotonic


def sleep(seconds: float) -> None:
    time.sleep(seconds)


async def async_sleep(seconds: float) -> None:
    """Sleep on whichever event loop the client runs on (asyncio, or trio through anyio)."""
    try:
        import sniffio

        flavour = sniffio.current_async_library()
    except Exception:  # no sniffio, or not detectable: asyncio is the common case
        flavour = "asyncio"
    if flavour == "asyncio":
        await asyncio.sleep(seconds)
    else:
        import anyio

        await anyio.sleep(seconds)


class Playlist:
    """A cassette's interactions as answers: each plays once, the first unplayed match first."""

    def __init__(self, cassette: Cassette, matcher: Matcher, *, where: str, repeat: bool = False) -> None:
        self.cassette = cassette
        self.matcher = matcher
        self.where = where
        self.repeat = repeat  # when every match has played, play the first match again
        self._played: set[int] = set()
        self.sent: list[Request] = []  # every request asked about, as matched (redacted)
        self._normalized: dict[int, tuple[Request, Normalized]] = {}
        self._lock = threading.Lock()
        matcher.check_ignored([item.request for item in cassette.interactions], where)

    def take(self, sent: Request) -> Interaction | None:
        """The interaction answering `sent`, now counted as played; None when nothing answers."""
        mine = self.matcher.normalize(sent)
        with self._lock:
            self.sent.append(sent)
            again = None
            for i, item in enumerate(self.cassette.interactions):
                played = i in self._played
                if played and (not self.repeat or again is not None):
                    continue
                if self.matcher.same(self._recorded(i, item), mine):
                    if not played:
                        self._played.add(i)
                        return item
                    again = item
            return again

    def explain(self, sent: Request) -> NoMatchError:
        """The error for a request `take` found no answer for."""
        items = self.cassette.interactions
        with self._lock:
            normalized = [self._recorded(i, item) for i, item in enumerate(items)]
            played = set(self._played)
        return self.matcher.explain(sent, items, played, self.where, normalized)

    def add(self, interaction: Interaction) -> None:
        """Append a freshly recorded interaction; it counts as played, never served back this session."""
        with self._lock:
            self.cassette.interactions.append(interaction)
            self._played.add(len(self.cassette.interactions) - 1)

    def unused(self) -> list[Interaction]:
        """Recorded interactions never played."""
        return [item for _, item in self.unused_numbered()]

    def unused_numbered(self) -> list[tuple[int, Interaction]]:
        """Recorded interactions never played, with their 1-based number in the cassette."""
        with self._lock:
            items = enumerate(self.cassette.interactions, start=1)
            return [(n, item) for n, item in items if n - 1 not in self._played]

    def why_unused(self, item: Interaction) -> str | None:
        """How the request sent closest to an unused interaction differs from it, or None when
        nothing was sent."""
        with self._lock:
            sent = list(self.sent)
        if not sent:
            return None
        mine = self.matcher.normalize(item.request)
        diffs = min((self.matcher.differences(mine, self.matcher.normalize(s)) for s in sent), key=len)
        return str(diffs[0]) if diffs else "matches a request that another interaction answered"

    def _recorded(self, i: int, item: Interaction) -> Normalized:
        cached = self._normalized.get(i)
        if cached is None or cached[0] is not item.request:  # the cassette may be edited between takes
            cached = (item.request, self.matcher.normalize(item.request))
            self._normalized[i] = cached
        return cached[1]


def request_record(request: Any) -> Request:
    """A library request (body already read) as a cassette `Request`: JSON bodies parsed, else text."""
    content: bytes = request.content
    body: Any = None
    if content:
        body = json_body(content.decode("utf-8", errors="replace"))
    return Request(
        method=request.method, url=str(request.url), headers=dict(request.headers.items()), body=body
    )


def served_headers(headers: dict[str, str]) -> list[tuple[str, str]]:
    """Recorded headers minus those describing the wire form of a body we serve decoded."""
    out = []
    for key, value in headers.items():
        lowered = key.lower()
        if lowered in _WIRE_HEADERS:
            continue
        if lowered == "content-encoding" and value.strip().lower() in DECODED_ENCODINGS:
            continue
        out.append((key, value))
    return out


def serve(lib: Library, request: Any, response: Response, speed: float, *, asynchronous: bool) -> Any:
    """A library response replaying `response`'s chunks (paced when `speed` > 0)."""
    start = clock()
    if asynchronous:
        stream: Any = lib.async_stream(_async_chunks(lib, request, response, speed, start))
    else:
        stream = lib.sync_stream(_sync_chunks(lib, request, response, speed, start))
    return lib.response(response.status, served_headers(response.headers), stream)


def _delay(offset_ms: float | None, speed: float, start: float) -> float:
    if speed <= 0 or offset_ms is None:
        return 0.0
    return start + offset_ms / 1000.0 / speed - clock()


def _sync_chunks(
    lib: Library, request: Any, response: Response, speed: float, start: float
) -> Iterator[bytes]:
    for chunk in response.chunks:
        delay = _delay(chunk.offset_ms, speed, start)
        if delay > 0:
            sleep(delay)
        yield chunk.data
    if response.open_after > 0:
        sleep(response.open_after)  # the connection held open: the end is not known before this
    if not response.complete:
        raise lib.error(response.error_type, response.error or _CUT_MESSAGE, request)


async def _async_chunks(
    lib: Library, request: Any, response: Response, speed: float, start: float
) -> AsyncIterator[bytes]:
    for chunk in response.chunks:
        delay = _delay(chunk.offset_ms, speed, start)
        if delay > 0:
            await async_sleep(delay)
        yield chunk.data
    if response.open_after > 0:
        await async_sleep(response.open_after)
    if not response.complete:
        raise lib.error(response.error_type, response.error or _CUT_MESSAGE, request)


def check_speed(speed: float) -> float:
    """`speed` as a float; negative speeds raise `UsageError`."""
    if not isinstance(speed, int | float) or speed < 0:
        raise UsageError(f"speed must be 0 (no pacing) or a positive number, not {speed!r}")
    return float(speed)


class ReplayTransport(TransportBase):
    """Replay only (record mode `none`): serve a cassette to an httpx or httpx2 client, sync or async.

    `speed=0` serves as fast as the client reads; `speed=1.0` reproduces the recorded pacing,
    `speed=2` twice as fast. A request no unplayed interaction matches raises `NoMatchError`
    naming the closest one; with `strict=False` it plays an already played match again instead.
    Incoming requests are redacted like recordings (`redact`, default `Redaction.DEFAULT`)
    before matching, so a live API key matches its `REDACTED` recording.
    """

    def __init__(
        self,
        path_or_cassette: str | os.PathLike[str] | Cassette,
        speed: float = 0,
        *,
        match_on: Sequence[str] = MATCH_FIELDS,
        ignore_fields: Sequence[str] = (),
        strict: bool = True,
        redact: Redaction | None = None,
    ) -> None:
        if isinstance(path_or_cassette, Cassette):
            self.cassette = path_or_cassette
        else:
            self.cassette = load(path_or_cassette)
        self.speed = check_speed(speed)
        self.redaction = redact if redact is not None else Redaction.DEFAULT
        where = (
            str(self.cassette.path) if self.cassette.path is not None else f"cassette {self.cassette.name!r}"
        )
        matcher = Matcher(tuple(match_on), tuple(ignore_fields))
        self._playlist = Playlist(self.cassette, matcher, where=where, repeat=not strict)

    def unused(self) -> list[Interaction]:
        """Recorded interactions never played."""
        return self._playlist.unused()

    def handle_request(self, request: Any) -> Any:
        """Serve `request` (an `httpx.Request` or `httpx2.Request`) from the cassette."""
        lib = library_of(request)
        request.read()
        return self._answer(lib, request, asynchronous=False)

    async def handle_async_request(self, request: Any) -> Any:
        """Serve `request` from the cassette to an async client."""
        lib = library_of(request)
        await request.aread()
        return self._answer(lib, request, asynchronous=True)

    def _answer(self, lib: Library, request: Any, *, asynchronous: bool) -> Any:
        sent, _ = self.redaction.request(request_record(request))
        found = self._playlist.take(sent)
        if found is None:
            raise self._playlist.explain(sent)
        return serve(lib, request, found.response, self.speed, asynchronous=asynchronous)

    def close(self) -> None:
        """Nothing to release; here for the transport contract."""

    async def aclose(self) -> None:
        """Nothing to release; here for the transport contract."""
