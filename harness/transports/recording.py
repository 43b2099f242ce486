"""Recording: forward httpx / httpx2 requests to the network and keep every read in a cassette.

The response reaches the caller chunk by chunk as it arrives (a stream stays a stream); each read
is kept as a `Chunk` with its time since the response headers arrived. The cassette is saved
atomically when the response stream closes, under a file lock, merged with whatever another
recorder saved meanwhile; a stream that breaks is saved as cut, with the
exception's class and message, and the exception still reaches the caller. A client closing the
response after the dialect's terminal event (an SDK stops reading at `[DONE]`) lost nothing: that
is saved as complete. The cassette names the dialect its interactions all speak.
"""

from __future__ import annotations

import contextlib
import datetime
import os
import threading
import time
import zlib
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Final

from harness.cassettes.format import (
    Cassette,
    Chunk,
    Interaction,
    Request,
    Response,
    Source,
    load,
    save,
)
from harness.errors import HarnessError, UsageError
from harness.files import locked
from harness.transports._library import Library, TransportBase, library_of
from harness.transports.matching import Matcher
from harness.transports.modes import MATCH_FIELDS, RecordMode
from harness.transports.redaction import Redaction, scrub_cassette, scrub_interaction
from harness.transports.replay import Playlist, check_speed, request_record, serve
from harness.transports.volatile import stable_headers, stable_url
from harness.wire import dialects

_CLOSED_EARLY: Final = "closed by the client before the response ended"
# Compressed bodies (a server ignoring `accept-encoding: identity`) are recorded decoded.
_ZLIB_ENCODINGS: Final = frozenset({"gzip", "x-gzip", "deflate"})


class RecordingTransport(TransportBase):
    """Forward to the real transport `inner` and record, or replay, per the record `mode`.

    `inner=None` uses the real `HTTPTransport` / `AsyncHTTPTransport` of whichever library
    (httpx or httpx2) the first request comes from. Forwarded requests ask for
    `accept-encoding: identity` so recorded chunks are readable text, not compressed bytes.
    Secrets are redacted before anything is saved (`redact`, default `Redaction.DEFAULT`), and
    incoming requests are redacted the same way before matching. Modes: see `harness.transports.modes`.
    Replayed interactions are paced by `speed` like `ReplayTransport`. `timing=False` leaves each
    read's `offset_ms` out; `stable=True` (the default) leaves out what changes on every recording
    (volatile headers, a loopback port: `harness.transports.volatile`), so a re-record diffs clean.
    """

    def __init__(
        self,
        inner: Any = None,
        path: str | os.PathLike[str] | None = None,
        mode: str | RecordMode = RecordMode.ONCE,
        *,
        match_on: Sequence[str] = MATCH_FIELDS,
        ignore_fields: Sequence[str] = (),
        redact: Redaction | None = None,
        speed: float = 0,
        timing: bool = True,
        stable: bool = True,
    ) -> None:
        if path is None:
            raise UsageError("RecordingTransport needs path=..., the cassette file to record into")
        self.path = Path(path)
        self.mode = RecordMode.parse(mode)
        self.policy = self.mode.policy(self.path.exists())
        self._stamp = _stamp(self.path)  # the file as last read or written by us
        self.cassette = load(self.path) if self.policy.load else _fresh_cassette(self.path, stable)
        # What we believe is on disk: the base each save appends to (empty when re-recording).
        self._saved: list[Interaction] = list(self.cassette.interactions)
        self.secrets: list[str] = []  # every secret redacted so far, for scrubbing derived fields
        self.redaction = redact if redact is not None else Redaction.DEFAULT
        self.speed = check_speed(speed)
        self.timing = timing
        self.stable = stable
        self._playlist = Playlist(
            self.cassette, Matcher(tuple(match_on), tuple(ignore_fields)), where=str(self.path)
        )
        self._inner = inner
        self._made: dict[tuple[str, bool], Any] = {}  # real transports created on first use
        self._save_lock = threading.Lock()

    def unused(self) -> list[Interaction]:
        """Recorded interactions never played (fresh recordings count as played)."""
        return self._playlist.unused()

    @property
    def playlist(self) -> Playlist:
        """The cassette's interactions as answers: which were played, what was sent."""
        return self._playlist

    def handle_request(self, request: Any) -> Any:
        """Replay or forward-and-record `request` (an `httpx.Request` or `httpx2.Request`)."""
        lib = library_of(request)
        request.read()
        sent, secrets = self._redact(request)
        replayed = self._replay(lib, request, sent, asynchronous=False)
        if replayed is not None:
            return replayed
        self._ask_identity(request, sent)
        response = self._inner_for(lib, asynchronous=False).handle_request(request)
        capture = _Capture(self, sent, secrets, response)
        stream = lib.sync_stream(capture.sync_chunks(), capture.close)
        return lib.response(response.status_code, capture.served_headers, stream, response.extensions)

    async def handle_async_request(self, request: Any) -> Any:
        """Replay or forward-and-record `request` for an async client."""
        lib = library_of(request)
        await request.aread()
        sent, secrets = self._redact(request)
        replayed = self._replay(lib, request, sent, asynchronous=True)
        if replayed is not None:
            return replayed
        self._ask_identity(request, sent)
        response = await self._inner_for(lib, asynchronous=True).handle_async_request(request)
        capture = _Capture(self, sent, secrets, response)
        stream = lib.async_stream(capture.async_chunks(), capture.aclose)
        return lib.response(response.status_code, capture.served_headers, stream, response.extensions)

    def scrub(self, cassette: Cassette) -> Cassette:
        """`cassette` (in place) with every echo of a secret this transport redacted replaced, in
        every field, derived ones too (`expected`): call it before saving what you derived."""
        return scrub_cassette(cassette, self.secrets)

    def close(self) -> None:
        """Close the inner transport (sync side)."""
        for (_, asynchronous), transport in list(self._made.items()):
            if not asynchronous:
                transport.close()
        if self._inner is not None and hasattr(self._inner, "close"):
            self._inner.close()

    async def aclose(self) -> None:
        """Close the inner transport (async side)."""
        for (_, asynchronous), transport in list(self._made.items()):
            if asynchronous:
                await transport.aclose()
        if self._inner is not None and hasattr(self._inner, "aclose"):
            await self._inner.aclose()

    def _redact(self, request: Any) -> tuple[Request, list[str]]:
        sent, secrets = self.redaction.request(request_record(request))
        self.secrets += [secret for secret in secrets if secret not in self.secrets]
        return sent, secrets

    def _replay(self, lib: Library, request: Any, sent: Request, *, asynchronous: bool) -> Any:
        """A replayed response when the mode replays and something matches; raises when it may not record."""
        if self.policy.replay:
            found = self._playlist.take(sent)
            if found is not None:
                return serve(lib, request, found.response, self.speed, asynchronous=asynchronous)
        if not self.policy.record:
            raise self._playlist.explain(sent)
        return None

    def _ask_identity(self, request: Any, sent: Request) -> None:
        request.headers["accept-encoding"] = "identity"
        sent.headers["accept-encoding"] = "identity"  # the recording shows what really went out

    def _inner_for(self, lib: Library, *, asynchronous: bool) -> Any:
        if self._inner is not None:
            return self._inner
        key = (lib.name, asynchronous)
        if key not in self._made:
            self._made[key] = lib.transport(asynchronous=asynchronous)
        return self._made[key]

    def _keep(self, interaction: Interaction, dialect: str | None) -> None:
        """Append to the cassette file under its lock, merging what other recorders wrote meanwhile;
        the cassette keeps a dialect while every interaction in it speaks that one."""
        with self._save_lock, locked(self.path):
            self._playlist.add(interaction)
            current = _stamp(self.path)
            if current is not None and current != self._stamp:
                on_disk = load(self.path)  # another process or worker saved since
                self._saved, self.cassette.dialect = on_disk.interactions, on_disk.dialect
            if not self._saved:
                self.cassette.dialect = dialect
            elif self.cassette.dialect != dialect:
                self.cassette.dialect = None
            self._saved.append(interaction)
            meta = self.cassette
            merged = Cassette(meta.name, meta.source, list(self._saved), meta.dialect, meta.version)
            save(merged, self.path)
            self._stamp = _stamp(self.path)


class _Capture:
    """One forwarded response on its way to the caller: the reads so far, and how it ended."""

    def __init__(self, owner: RecordingTransport, sent: Request, secrets: list[str], response: Any) -> None:
        self.started = time.monotonic()  # the response headers have just arrived
        self.owner = owner
        self.sent = sent
        self.secrets = secrets
        self.status: int = response.status_code
        self.stream = response.stream
        self.headers = owner.redaction.response_headers(dict(response.headers.items()), secrets)
        encoding = response.headers.get("content-encoding", "").strip().lower()
        self.decoder = zlib.decompressobj(zlib.MAX_WBITS | 32) if encoding in _ZLIB_ENCODINGS else None
        self.served_headers: Any = response.headers
        if self.decoder is not None:
            wire = ("content-encoding", "content-length")
            self.served_headers = [(k, v) for k, v in response.headers.multi_items() if k.lower() not in wire]
        self.chunks: list[Chunk] = []
        self.finished = False

    def sync_chunks(self) -> Iterator[bytes]:
        try:
            for data in self.stream:
                out = self._read(data)
                if out:
                    yield out
            tail = self._tail()
            if tail:
                yield tail
        except Exception as exc:
            self.finish(exc)
            raise
        self.finish(None)

    async def async_chunks(self) -> AsyncIterator[bytes]:
        try:
            async for data in self.stream:
                out = self._read(data)
                if out:
                    yield out
            tail = self._tail()
            if tail:
                yield tail
        except Exception as exc:
            self.finish(exc)
            raise
        self.finish(None)

    def close(self) -> None:
        try:
            self.finish(None, early=True)
        finally:
            self.stream.close()

    async def aclose(self) -> None:
        try:
            self.finish(None, early=True)
        finally:
            await self.stream.aclose()

    def finish(self, error: BaseException | None, *, early: bool = False) -> None:
        """Record how the stream ended and save; later calls do nothing."""
        if self.finished:
            return
        self.finished = True
        response = Response(status=self.status, headers=self.headers, chunks=self.chunks)
        dialect = dialects.recognise(self.sent, response)
        if error is not None:
            response.complete, response.error, response.error_type = False, str(error), type(error).__name__
        elif early and (dialect is None or not dialects.finished(response, dialect)):
            response.complete, response.error = False, _CLOSED_EARLY
        if not self.owner.timing:
            response.chunks = [Chunk(chunk.data) for chunk in response.chunks]
        sent = self.sent
        if self.owner.stable:
            sent = replace(sent, url=stable_url(sent.url), headers=stable_headers(sent.headers))
            response.headers = stable_headers(response.headers)
        # A JSON response's own secrets (an OAuth token response), then every echo, hunted over the
        # whole body at once: a secret split across reads is caught.
        found = self.owner.redaction.response_secrets(response.headers, response.chunks)
        self.owner.secrets += [secret for secret in found if secret not in self.owner.secrets]
        interaction = scrub_interaction(Interaction(request=sent, response=response), [*self.secrets, *found])
        self.owner._keep(interaction, dialect)

    def _read(self, data: bytes) -> bytes:
        """Keep one read (decoded when the server compressed anyway) and hand it on."""
        offset_ms = (time.monotonic() - self.started) * 1000.0
        if self.decoder is not None:
            data = self.decoder.decompress(data)
        if data:
            self.chunks.append(Chunk(bytes(data), offset_ms))
        return data

    def _tail(self) -> bytes:
        """What a decoder still holds at the end of the body."""
        if self.decoder is None:
            return b""
        data = self.decoder.flush()
        if data:
            self.chunks.append(Chunk(data, (time.monotonic() - self.started) * 1000.0))
        return data


def _stamp(path: Path) -> tuple[int, int, int] | None:
    """What changes whenever a file is (re)written (saves replace the inode); None when absent."""
    try:
        stat = path.stat()
    except FileNotFoundError:
        return None
    return stat.st_ino, stat.st_mtime_ns, stat.st_size


def _fresh_cassette(path: Path, stable: bool) -> Cassette:
    """A cassette to record into; re-recording a stable one keeps its name and provenance line."""
    if stable and path.exists():
        with contextlib.suppress(HarnessError):
            old = load(path)
            return Cassette(name=old.name, source=old.source)
    today = datetime.date.today().isoformat()
    return Cassette(name=path.stem, source=Source("recorded", f"recorded with RecordingTransport on {today}"))
