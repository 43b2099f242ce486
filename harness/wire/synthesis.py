"""A cassette synthesized from a dialect's events: encoded the dialect's way, cut into reads, with
the reference accumulator's outcome. What the corpus scripts (`cassettes/synthesize/`), tests and
benchmarks build their streams with."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from harness.cassettes.model import Cassette, Chunk, Interaction, Request, Response, Source
from harness.errors import UsageError
from harness.wire import dialects
from harness.wire.codecs import STREAM_CONTENT_TYPES, WireEvent

__all__ = ["split_reads", "synthesize"]


def split_reads(body: bytes, sizes: Sequence[int]) -> list[bytes]:
    """Cut a body into reads of the given sizes, cycling through them; the last read takes the rest."""
    if not sizes or any(size <= 0 for size in sizes):
        raise UsageError("read sizes must be positive")
    out, pos, i = [], 0, 0
    while pos < len(body):
        out.append(body[pos : pos + sizes[i % len(sizes)]])
        pos += sizes[i % len(sizes)]
        i += 1
    return out


def synthesize(
    name: str,
    dialect: str,
    *,
    url: str,
    body: Any,
    events: Sequence[WireEvent | tuple[str | None, Any] | Any],
    provenance: str,
    reads: Sequence[int] | None = None,
    request_headers: dict[str, str] | None = None,
    response_headers: dict[str, str] | None = None,
    status: int = 200,
    complete: bool = True,
    error: str | None = None,
    offsets_ms: float | None = None,
    expected: bool = True,
) -> Cassette:
    """A one-interaction cassette from provider payloads.

    `events` items are WireEvents, `(event_name, payload)` pairs, or bare payloads (JSON-encoded
    the dialect's way and named as the provider names them; strings such as `[DONE]` are sent as
    is). By default every event is one network read; `reads` gives byte sizes instead (cycled).
    `offsets_ms` spaces reads evenly. With `expected`, the reference accumulator's outcome is
    stored (check it by hand).
    """
    d = dialects.get(dialect)
    wire = [_wire(d, item) for item in events]
    if reads is None:
        chunks_data = [d.codec().encode([w]) for w in wire]
    else:
        chunks_data = split_reads(d.codec().encode(wire), reads)
    chunks = [
        Chunk(data, None if offsets_ms is None else round(i * offsets_ms, 3))
        for i, data in enumerate(chunks_data)
    ]
    headers = {"content-type": STREAM_CONTENT_TYPES[d.codec_name]}
    headers.update(response_headers or {})
    req_headers = {"content-type": "application/json", "accept": "text/event-stream"}
    if d.codec_name != "sse":
        req_headers["accept"] = STREAM_CONTENT_TYPES[d.codec_name].split(";")[0]
    req_headers.update(request_headers or {})
    response = Response(status=status, headers=headers, chunks=chunks, complete=complete, error=error)
    interaction = Interaction(Request("POST", url, req_headers, body), response)
    if expected:
        interaction.expected = dialects.stored_outcome(response, d)
    return Cassette(
        name=name, dialect=dialect, source=Source("synthesized", provenance), interactions=[interaction]
    )


def _wire(d: Any, item: Any) -> WireEvent:
    if isinstance(item, WireEvent):
        return item
    name, payload = item if isinstance(item, tuple) else (d.event_name(item), item)
    return WireEvent(data=payload if isinstance(payload, str) else d.dumps(payload), name=name)
