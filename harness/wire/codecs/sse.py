"""Server-Sent Events, incrementally, by the WHATWG rules.

Decoding follows the HTML "event stream interpretation" algorithm:

- line ends are LF, CRLF or CR; a CR that ends one read and an LF that starts the next are one
  line end (the CR's line is handled at once, not held back until the next read);
- a leading UTF-8 BOM is dropped; bytes that are not UTF-8 become U+FFFD; a character split
  across reads is whole once its line is complete (lines are split on bytes, then decoded);
- `field: value` with one optional space after the colon; `data` lines join with LF; `event`
  names the event; `id` is ignored if it contains NUL; `retry` only when all ASCII digits;
  unknown fields are ignored; a block without `data` lines is not an event.

Three choices a wire codec makes that a browser does not: a comment line (`:...`) comes out as an
event with `comment` set, and a block without `data` lines (`event: ping`, `retry: 10000`) as one
with `block` set to its lines, so decode -> encode keeps their bytes in place (`is_comment` tells
both apart from events: neither is dispatched); and `id` belongs to the event it was sent in
rather than carrying over. As in a browser, an event still open at end of input (a stream cut
before the event's blank line) is not dispatched: whether such half an event counts would
otherwise be decoder policy, not stream meaning. `dispatch_unterminated=True` dispatches it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from harness.errors import CodecError
from harness.wire.codecs.base import WireEvent, data_events, new_event

NEWLINES = ("\n", "\r\n", "\r")
BOM = b"\xef\xbb\xbf"
# Byte values, not b"\n": `int in bytes` is a bare memchr, many times cheaper on a short read.
LF, CR = 10, 13


# Lines that begin every event of the common shape, and the separator between two such events.
DATA, NEXT_DATA = "data: ", "\n\ndata: "
EVENT = "event: "


class SSEDecoder:
    """Incremental SSE decoder: `feed` reads as they arrive, `close` at end of input.

    A read holding many events of one `data:` line each is framed with one split and its events
    built in bulk; anything else in it (comments, other fields, multi-line data) goes line by line.
    """

    __slots__ = (
        "_at_start",
        "_buffer",
        "_data",
        "_dispatch_unterminated",
        "_fields",
        "_id",
        "_name",
        "_pending_cr",
        "_retry",
    )

    def __init__(self, *, dispatch_unterminated: bool = False) -> None:
        self._dispatch_unterminated = dispatch_unterminated
        # Bytes after the last line end seen; nothing is decoded until a line is complete.
        self._buffer = bytearray()
        self._at_start = True
        self._pending_cr = False
        self._data: list[str] = []
        # The open block's lines other than data and comments: its bytes, should it carry no data.
        self._fields: list[str] = []
        self._name: str | None = None
        self._id: str | None = None
        self._retry: int | None = None

    def feed(self, data: bytes) -> list[WireEvent]:
        self._buffer += data
        # Most small reads complete no line: buffering them is all the work there is.
        if LF not in data and CR not in data:
            return []
        return self._complete_lines()

    def close(self) -> list[WireEvent]:
        out: list[WireEvent] = []
        if self._at_start:
            self._strip_start()
        if self._buffer:
            # Bytes after the last line end: a last line the stream ended (or was cut) inside.
            self._lines(self._buffer.decode("utf-8", "replace"), out)
        if self._data and self._dispatch_unterminated:
            self._dispatch(out)
        # Ready for another stream.
        self._buffer = bytearray()
        self._at_start = True
        self._pending_cr = False
        self._data = []
        self._fields = []
        self._name = self._id = self._retry = None
        return out

    def _complete_lines(self) -> list[WireEvent]:
        """Handle every complete line in the buffer, keeping the unfinished tail."""
        buffer = self._buffer
        if self._at_start:
            self._strip_start()
        if self._pending_cr:
            self._pending_cr = False
            if buffer[:1] == b"\n":
                del buffer[:1]
        cr = buffer.rfind(CR)
        end = max(buffer.rfind(LF), cr) + 1
        if not end:
            return []
        text = buffer[:end].decode("utf-8", "replace")
        del buffer[:end]
        if cr >= 0:
            # A CR closing the buffer has ended its line; an LF starting the next read is not a second end.
            self._pending_cr = text[-1] == "\r" and not buffer
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        return self._blocks(text)

    def _blocks(self, text: str) -> list[WireEvent]:
        """Interpret complete LF-ended lines, whole events (blocks) at a time where possible."""
        out: list[WireEvent] = []
        start = 0
        if self._data or self._fields:
            # An event is open: its lines up to the first blank line close it, the rest starts clean.
            if text[0] == "\n":
                start = 1
            else:
                blank = text.find("\n\n")
                if blank < 0:
                    self._lines(text[:-1], out)  # no blank line yet: all lines belong to the open event
                    return out
                start = blank + 2
            self._lines(text[: start - 1], out)
        end = text.rfind("\n\n", start) + 2  # 1 when there is none
        if end > start + 1:
            # Complete events from a clean start. The common case, many events of one `data: ` line
            # each, is cut apart in one call: the text from the first `data: ` to the last blank line,
            # split at each "blank line, then `data: `", is every event's data, if none of those pieces
            # holds a line end (which would be a second line in its event).
            datas = self._data_lines(text, start, end) if text.startswith(DATA, start) else None
            if datas is not None and "\n" not in "".join(datas):
                out += data_events(datas)
            else:
                self._mixed_blocks(text[start : end - 2].split("\n\n"), out)
            start = end
        if start < len(text):
            self._lines(text[start:-1], out)  # lines of an event still open
        return out

    @staticmethod
    def _data_lines(text: str, start: int, end: int) -> list[str]:
        """`text[start:end]` less its first `data: ` and last blank line, split at NEXT_DATA."""
        if start or end != len(text):
            return text[start + 6 : end - 2].split(NEXT_DATA)
        # The whole text, as most reads are: no copy of it to make first.
        datas = text.split(NEXT_DATA)
        datas[0] = datas[0][6:]
        datas[-1] = datas[-1][:-2]
        return datas

    def _mixed_blocks(self, blocks: list[str], out: list[WireEvent]) -> None:
        """Complete blocks (each without its blank line), from a clean start."""
        for block in blocks:
            # A lone `data: ` line is still most events: one step.
            if block[:6] == DATA and "\n" not in block:
                out.append(new_event(block[6:]))
                continue
            if block[:7] == EVENT:
                # `event: ` then one `data: ` line, the shape of Anthropic and Responses events: one step too.
                head, _, rest = block.partition("\n")
                if rest[:6] == DATA and "\n" not in rest:
                    out.append(new_event(rest[6:], head[7:]))
                    continue
            self._lines(block + "\n", out)  # the block's lines, then its blank line

    def _strip_start(self) -> None:
        # A BOM cannot hold a line end, so by the time a line is complete a BOM is whole.
        self._at_start = False
        if self._buffer[:3] == BOM:
            del self._buffer[:3]

    def _lines(self, text: str, out: list[WireEvent]) -> None:
        """Interpret LF-separated lines (the text ends without a line end)."""
        # Event state lives in locals for the loop: cheaper than attributes, line after line.
        data, fields, name, id_, retry = self._data, self._fields, self._name, self._id, self._retry
        for line in text.split("\n"):
            # The one line shape that dominates every provider stream goes first.
            if line[:6] == "data: ":
                data.append(line[6:])
            elif not line:
                if data:
                    out.append(new_event("\n".join(data), name, id_, retry))
                    data = []
                elif fields:
                    out.append(new_event("", None, None, None, None, (), "\n".join(fields)))
                if fields:
                    fields = []
                name = id_ = retry = None
            elif line[0] == ":":
                out.append(new_event("", None, None, None, line[1:]))
            else:
                fields.append(line)
                field, colon, value = line.partition(":")
                if colon and value[:1] == " ":
                    value = value[1:]
                if field == "data":
                    data.append(value)
                elif field == "event":
                    name = value
                elif field == "id":
                    if "\0" not in value:
                        id_ = value
                elif field == "retry" and value.isascii() and value.isdigit():
                    retry = int(value)
        self._data, self._fields, self._name, self._id, self._retry = data, fields, name, id_, retry

    def _dispatch(self, out: list[WireEvent]) -> None:
        out.append(new_event("\n".join(self._data), self._name, self._id, self._retry))
        self._data = []
        self._fields = []
        self._name = self._id = self._retry = None


@dataclass(frozen=True, slots=True)
class SSECodec:
    """Encode in one canonical style: `event`, `id`, `retry`, then `data` lines, then a blank line.

    A comment event is written as `:comment` and a blank line, a block without data as its own
    lines (as sent) and a blank line. `newline` picks the line end and `space` whether a space
    follows each colon (a value starting with a space always gets one).
    """

    newline: str = "\n"
    space: bool = True
    # Not a field: a plain attribute, so the codec satisfies `Codec`, whose `name` is settable.
    name = "sse"

    def __post_init__(self) -> None:
        if self.newline not in NEWLINES:
            raise CodecError(f"SSE newline must be one of {NEWLINES!r}, not {self.newline!r}")

    def decoder(self) -> SSEDecoder:
        return SSEDecoder()

    def encode(self, events: Iterable[WireEvent]) -> bytes:
        return "".join(self.encode_text(event) for event in events).encode("utf-8")

    def encode_text(self, event: WireEvent) -> str:
        """One event as SSE text, ending with its blank line."""
        nl = self.newline
        if event.comment is not None:
            _check_line("comment", event.comment)
            return f":{event.comment}{nl}{nl}"
        if event.block is not None:
            _check_block(event.block)
            return event.block.replace("\n", nl) + nl + nl
        lines = []
        if event.name is not None:
            lines.append(self._field("event", event.name))
        if event.id is not None:
            if "\0" in event.id:
                raise CodecError("SSE id cannot contain NUL: decoders ignore such an id")
            lines.append(self._field("id", event.id))
        if event.retry is not None:
            if event.retry < 0:
                raise CodecError(f"SSE retry must be a whole number of milliseconds, not {event.retry}")
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


def _check_block(block: str) -> None:
    """A block without data must decode as itself: lines, none empty, a comment or a `data` field."""
    if "\r" in block:
        raise CodecError("an SSE block cannot carry a CR: it would end a line")
    for line in block.split("\n"):
        if not line or line[0] == ":" or line.partition(":")[0] == "data":
            raise CodecError(f"an SSE block without data cannot hold the line {line!r}")


def sniff_newline(body: bytes) -> str:
    """The line end a body uses (for re-encoding it in its own style)."""
    cr = body.find(b"\r")
    if cr < 0:
        return "\n"
    return "\r\n" if body[cr + 1 : cr + 2] == b"\n" else "\r"
