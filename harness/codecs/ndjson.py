"""Newline-delimited JSON (Ollama's native stream): one event per line, framing only.

Blank lines are skipped and a trailing CR is dropped; whether a line is JSON is the dialect's
business. A line that is not UTF-8 is a `CodecError`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..errors import CodecError
from .base import WireEvent


class NDJSONDecoder:
    __slots__ = ("_buffer",)

    def __init__(self) -> None:
        self._buffer = b""

    def feed(self, data: bytes) -> list[WireEvent]:
        lines = (self._buffer + data).split(b"\n")
        self._buffer = lines.pop()
        return [event for line in lines if (event := _event(line)) is not None]

    def close(self) -> list[WireEvent]:
        line, self._buffer = self._buffer, b""
        event = _event(line)
        return [] if event is None else [event]


def _event(line: bytes) -> WireEvent | None:
    if line.endswith(b"\r"):
        line = line[:-1]
    if not line.strip():
        return None
    try:
        return WireEvent(data=line.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise CodecError(f"NDJSON line is not UTF-8 at byte {exc.start}: {line[:60]!r}") from None


@dataclass(frozen=True, slots=True)
class NDJSONCodec:
    name: str = "ndjson"

    def decoder(self) -> NDJSONDecoder:
        return NDJSONDecoder()

    def encode(self, events: Iterable[WireEvent]) -> bytes:
        out = []
        for event in events:
            if "\n" in event.data or "\r" in event.data:
                raise CodecError("an NDJSON event cannot contain a line end")
            out.append(event.data.encode("utf-8") + b"\n")
        return b"".join(out)
