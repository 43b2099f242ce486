"""Server-Sent Events, incrementally, by the WHATWG rules.

Line ends LF, CRLF or CR (a CR at the end of a read waits to see if LF follows); a UTF-8 character
may be split across reads; a leading BOM is dropped; `data:` lines join with LF; one optional space
after the colon; `id` containing NUL is ignored; `retry` only when all digits; unknown fields are
ignored. Comment lines come out as events with `comment` set, so a decode -> encode round trip
keeps them. An event still open at end of input is dispatched by `close()` (a cut stream's last
event is exactly what a harness needs to see), unless `dispatch_unterminated=False`.
"""

from __future__ import annotations

import codecs
from collections.abc import Iterable
from dataclasses import dataclass

from ..errors import CodecError
from .base import WireEvent

NEWLINES = ("\n", "\r\n", "\r")


class SSEDecoder:
    __slots__ = (
        "_bom_checked",
        "_data",
        "_dispatch_unterminated",
        "_id",
        "_name",
        "_pending_cr",
        "_retry",
        "_tail",
        "_utf8",
    )

    def __init__(self, *, dispatch_unterminated: bool = True) -> None:
        self._utf8 = codecs.getincrementaldecoder("utf-8")("replace")
        self._dispatch_unterminated = dispatch_unterminated
        self._tail = ""
        self._pending_cr = False
        self._bom_checked = False
        self._data: list[str] = []
        self._name: str | None = None
        self._id: str | None = None
        self._retry: int | None = None

    def feed(self, data: bytes) -> list[WireEvent]:
        return self._feed_text(self._utf8.decode(data))

    def close(self) -> list[WireEvent]:
        out = self._feed_text(self._utf8.decode(b"", final=True))
        if self._tail:
            line, self._tail = self._tail, ""
            self._line(line, out)
        if self._data and self._dispatch_unterminated:
            self._dispatch(out)
        self._reset()
        return out

    def _feed_text(self, text: str) -> list[WireEvent]:
        if not self._bom_checked:
            if not text:
                return []
            self._bom_checked = True
            if text[0] == "\ufeff":
                text = text[1:]
        if self._pending_cr:
            self._pending_cr = False
            if text[:1] == "\n":
                text = text[1:]
        if not text:
            return []
        if "\r" in text:
            # A trailing CR already ends its line; remember it so a following LF is not a second end.
            self._pending_cr = text[-1] == "\r"
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        lines = (self._tail + text).split("\n")
        self._tail = lines.pop()
        out: list[WireEvent] = []
        for line in lines:
            self._line(line, out)
        return out

    def _line(self, line: str, out: list[WireEvent]) -> None:
        if not line:
            if self._data:
                self._dispatch(out)
            else:
                self._reset()
            return
        if line[0] == ":":
            out.append(WireEvent(comment=line[1:]))
            return
        field, colon, value = line.partition(":")
        if colon and value[:1] == " ":
            value = value[1:]
        if field == "data":
            self._data.append(value)
        elif field == "event":
            self._name = value
        elif field == "id":
            if "\0" not in value:
                self._id = value
        elif field == "retry":
            if value.isascii() and value.isdigit():
                self._retry = int(value)

    def _dispatch(self, out: list[WireEvent]) -> None:
        out.append(WireEvent(data="\n".join(self._data), name=self._name, id=self._id, retry=self._retry))
        self._reset()

    def _reset(self) -> None:
        self._data = []
        self._name = None
        self._id = None
        self._retry = None


@dataclass(frozen=True, slots=True)
class SSECodec:
    """Encode in one canonical style: `event`, `id`, `retry`, then `data` lines, then a blank line."""

    newline: str = "\n"
    space: bool = True
    name: str = "sse"

    def __post_init__(self) -> None:
        if self.newline not in NEWLINES:
            raise CodecError(f"SSE newline must be one of {NEWLINES!r}, not {self.newline!r}")

    def decoder(self) -> SSEDecoder:
        return SSEDecoder()

    def encode(self, events: Iterable[WireEvent]) -> bytes:
        return "".join(self.encode_text(event) for event in events).encode("utf-8")

    def encode_text(self, event: WireEvent) -> str:
        nl = self.newline
        if event.comment is not None:
            _check_line("comment", event.comment)
            return f":{event.comment}{nl}{nl}"
        lines = []
        if event.name is not None:
            lines.append(self._field("event", event.name))
        if event.id is not None:
            lines.append(self._field("id", event.id))
        if event.retry is not None:
            lines.append(self._field("retry", str(event.retry)))
        if "\r" in event.data:
            raise CodecError("SSE data cannot carry a CR: it would end the line")
        lines.extend(self._field("data", part) for part in event.data.split("\n"))
        return nl.join(lines) + nl + nl

    def _field(self, field: str, value: str) -> str:
        _check_line(field, value)
        sep = ": " if self.space or value[:1] == " " else ":"
        return f"{field}{sep}{value}"


def _check_line(field: str, value: str) -> None:
    if "\n" in value or "\r" in value:
        raise CodecError(f"SSE {field} cannot carry a line end")


def sniff_newline(body: bytes) -> str:
    """The line end a body uses (for re-encoding it in its own style)."""
    cr = body.find(b"\r")
    if cr < 0:
        return "\n"
    return "\r\n" if body[cr + 1 : cr + 2] == b"\n" else "\r"
