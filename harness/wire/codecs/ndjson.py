"""Newline-delimited JSON (Ollama's native stream): one event per line, framing only.

Lines end with LF; a CR before it is dropped (CRLF); blank or whitespace-only lines are skipped;
a last line without its LF is still an event at `close()` (a cut stream's last line is what a
harness needs to see), and one cut inside a character ends with U+FFFD, as a client's replacing
decoder gives it at the end of input. Whether a line is JSON is the dialect's business. Any other
line that is not UTF-8 is a `CodecError`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from harness.errors import CodecError
from harness.wire.codecs.base import WireEvent, new_event

LF = 10  # `int in bytes` is a bare memchr, cheaper than `b"\n" in bytes` on short reads


class NDJSONDecoder:
    """Incremental NDJSON decoder: `feed` reads as they arrive, `close` at end of input."""

    __slots__ = ("_buffer", "_line")

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._line = 0  # lines seen so far, for error messages

    def feed(self, data: bytes) -> list[WireEvent]:
        self._buffer += data
        if LF not in data:
            return []
        end = self._buffer.rfind(LF)
        lines = self._buffer[:end].split(b"\n")
        del self._buffer[: end + 1]
        return self._events(lines)

    def close(self) -> list[WireEvent]:
        line = bytes(self._buffer)
        events = self._events([line], last=True) if line else []
        self._buffer = bytearray()
        self._line = 0
        return events

    def _events(self, lines: list[bytearray] | list[bytes], *, last: bool = False) -> list[WireEvent]:
        out = []
        for line in lines:
            self._line += 1
            if line.endswith(b"\r"):
                line = line[:-1]
            if not line.strip():
                continue
            try:
                out.append(new_event(line.decode("utf-8")))
            except UnicodeDecodeError as exc:
                if last and exc.reason == "unexpected end of data":  # the input ended inside a character
                    out.append(new_event(line[: exc.start].decode("utf-8") + "\ufffd"))
                    continue
                raise CodecError(
                    f"NDJSON line {self._line} is not UTF-8 at byte {exc.start}: {bytes(line[:60])!r}"
                ) from None
        return out


@dataclass(frozen=True, slots=True)
class NDJSONCodec:
    """Encode each event's `data` as one LF-terminated line."""

    # Not a field: a plain attribute, so the codec satisfies `Codec`, whose `name` is settable.
    name = "ndjson"

    def decoder(self) -> NDJSONDecoder:
        return NDJSONDecoder()

    def encode(self, events: Iterable[WireEvent]) -> bytes:
        out = []
        for event in events:
            if "\n" in event.data or "\r" in event.data:
                raise CodecError("an NDJSON event cannot contain a line end")
            try:
                out.append(event.data.encode("utf-8") + b"\n")
            except UnicodeEncodeError as exc:
                raise CodecError(f"NDJSON event is not encodable as UTF-8 at character {exc.start}") from None
        return b"".join(out)
