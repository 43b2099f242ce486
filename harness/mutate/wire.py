"""Wire-level mutations: the bytes of a response and how they are split into network reads.

Framing mutations (line ends, comments, multi-line `data:`, field syntax) reshape the wire events
and reset the reads to one per event, so put `rechunk` after them in a pipeline. A cut of the
bytes keeps only what the whole events before it make final.
"""

from __future__ import annotations

import bisect
import copy
import json
import random
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import Any, Literal, cast, overload

from harness.cassettes.outcome import State
from harness.errors import NotApplicable
from harness.mutate import Level, Meaning, Mutation, Stream, evolve, mutation
from harness.mutate.calls import expect_prefix, first_signal, terminal_index
from harness.wire.codecs import WireEvent
from harness.wire.dialects import Event, Kind

CUT_ERROR = "peer closed connection without sending complete message body (cut by toolstream)"
CUT_ERROR_TYPE = "RemoteProtocolError"


def _body(stream: Stream) -> bytes:
    return stream.body()


def split_at(body: bytes, offsets: Sequence[int]) -> list[bytes]:
    """The body cut at sorted, distinct inner offsets."""
    out, last = [], 0
    for offset in offsets:
        if last < offset < len(body):
            out.append(body[last:offset])
            last = offset
    out.append(body[last:])
    return [piece for piece in out if piece]


_LEAD_BYTE = re.compile(rb"[\xc0-\xff]")
_LONG_LINE = re.compile(rb"[^\r\n]{2,}")


def _utf8_inner_offsets(body: bytes) -> list[int]:
    """One offset inside every multi-byte UTF-8 character (after its lead byte)."""
    return [found.start() + 1 for found in _LEAD_BYTE.finditer(body)]


def _line_inner_offsets(body: bytes) -> list[int]:
    """The middle of every line of two bytes or more (between any two line-end bytes)."""
    return [(found.start() + found.end()) // 2 for found in _LONG_LINE.finditer(body)]


def _field_inner_offsets(body: bytes) -> list[int]:
    """Inside every field name and right after its colon (`da|ta:`, `data:| {`)."""
    out: list[int] = []
    for name in (b"data:", b"event:", b"id:"):
        start = body.find(name)
        while start >= 0:
            if start == 0 or body[start - 1] in (0x0A, 0x0D):
                out.extend((start + 2, start + len(name)))
            start = body.find(name, start + 1)
    return sorted(out)


def size_drawer(rng: random.Random, largest: int) -> Callable[[], int]:
    """`rng.randint(1, largest)` as a function of no arguments, drawing the very same values: in
    CPython it is `1 + rng._randbelow(largest)`, called here directly (a third of the cost, paid
    once per read of every randomly rechunked case; `test_mutations_wire` holds the two equal)."""
    below = getattr(rng, "_randbelow", None)
    if below is None:
        return lambda: rng.randint(1, largest)
    return lambda: 1 + below(largest)


_STANDARD_RANDBELOW = getattr(random.Random, "_randbelow_with_getrandbits", None)


def random_sizes(rng: random.Random, largest: int, total: int) -> list[int]:
    """Read sizes drawn as `rng.randint(1, largest)` until they cover `total` bytes: the very
    values `size_drawer` draws, with CPython's `_randbelow` loop inlined when `rng` uses it."""
    sizes: list[int] = []
    covered = 0
    if getattr(type(rng), "_randbelow", None) is not _STANDARD_RANDBELOW:
        draw = size_drawer(rng, largest)
        while covered < total:
            sizes.append(draw())
            covered += sizes[-1]
        return sizes
    rng.getrandbits(0)  # draws nothing, but seeds a step's RNG (seeded on first use): the loop calls C
    getrandbits, bits = rng.getrandbits, largest.bit_length()
    while covered < total:
        r = getrandbits(bits)
        while r >= largest:
            r = getrandbits(bits)
        sizes.append(r + 1)
        covered += r + 1
    return sizes


_ANY_BYTE = re.compile(rb".", re.DOTALL)


@mutation("rechunk")
@dataclass(frozen=True)
class Rechunk(Mutation):
    """Split the body into different network reads (F3: an SSE event split across TCP reads; F1:
    a read boundary inside a UTF-8 character; F9: eventstream frames split across reads and packed
    several to a read). `how`: `random` sizes 1..`max_size`, `utf8` inside every multi-byte
    character, `line` mid-line, `field` mid-field (`da|ta:`), `byte` one byte per read, `whole`
    everything in one read, `pack` `per_read` events to a read, `split` every event in two."""

    how: Literal["random", "utf8", "line", "field", "byte", "whole", "pack", "split"] = "random"
    max_size: int = 64
    per_read: int = 3

    level = Level.WIRE

    def apply(self, stream: Stream, rng: random.Random) -> Stream:
        text_only = ("utf8", "line", "field")
        if self.how in text_only and stream.dialect.codec_name in ("eventstream", "websocket"):
            raise NotApplicable(f"rechunk {self.how} needs a text wire")
        if self.how in ("pack", "split"):
            return stream.with_reads(self._by_event(stream, rng), same_events=True)
        # Every event renders to a byte at least (a line end, a frame's prelude): no events, no body.
        if not (stream.body() if stream.fixed_reads else stream.events):
            raise NotApplicable("empty body")
        if self.how in ("whole", "byte", "random"):
            # Cut when the reads are asked for (the step's RNG is this step's alone: same draws).
            return stream.with_split(partial(_split, self.how, max(1, self.max_size), rng))
        body = _body(stream)
        finder = {"utf8": _utf8_inner_offsets, "line": _line_inner_offsets, "field": _field_inner_offsets}
        offsets = finder[self.how](body)  # where none is, the step does not apply: found now
        if not offsets:
            raise NotApplicable(f"no place to rechunk {self.how} in this body")
        return stream.with_reads(split_at(body, offsets), same_events=True)

    def _by_event(self, stream: Stream, rng: random.Random) -> list[bytes]:
        pieces = stream.pieces()
        if stream.fixed_reads and b"".join(pieces) != stream.body():
            raise NotApplicable("the reads no longer line up with events")
        if self.how == "pack":
            n = max(1, self.per_read)
            return [b"".join(pieces[i : i + n]) for i in range(0, len(pieces), n)]
        out: list[bytes] = []
        for piece in pieces:
            cut = rng.randint(1, len(piece) - 1) if len(piece) > 1 else 1
            out.extend(p for p in (piece[:cut], piece[cut:]) if p)
        return out


@mutation("fragment-messages")
@dataclass(frozen=True)
class FragmentMessages(Mutation):
    """Send each WebSocket text message longer than `size` bytes as a text frame and continuation
    frames (RFC 6455 5.4: a server may fragment any message; the client library joins them), each
    frame one read. The messages, and so the meaning, are the same."""

    size: int = 8

    level = Level.WIRE
    codecs = ("websocket",)

    def apply(self, stream: Stream, rng: random.Random) -> Stream:
        from harness.wire.codecs.websocket import WebSocketCodec

        codec, d = WebSocketCodec(), stream.dialect
        size = max(1, self.size)
        reads: list[bytes] = []
        for event in stream.events:
            whole = codec.fragment(d.render(event), size)
            reads.extend(_frames(whole))
        if len(reads) == len(stream.events):
            raise NotApplicable(f"no message longer than {size} bytes")
        return stream.with_reads(reads, same_events=True)


def _frames(data: bytes) -> list[bytes]:
    """Unmasked frames laid end to end, one each (their headers say where each ends)."""
    out, pos = [], 0
    while pos < len(data):
        size, at = data[pos + 1] & 0x7F, pos + 2
        if size == 126:
            size, at = int.from_bytes(data[pos + 2 : pos + 4], "big"), pos + 4
        elif size == 127:
            size, at = int.from_bytes(data[pos + 2 : pos + 10], "big"), pos + 10
        out.append(data[pos : at + size])
        pos = at + size
    return out


def _split(how: str, largest: int, rng: random.Random, body: bytes) -> list[bytes]:
    """The reads of `rechunk` `whole`, `byte` or `random` (sizes 1..`largest`)."""
    if how == "whole":
        return [body]
    if how == "byte":
        return cast(list[bytes], _ANY_BYTE.findall(body))
    reads, pos = [], 0
    for size in random_sizes(rng, largest, len(body)):
        reads.append(body[pos : pos + size])
        pos += size
    return reads


@mutation("line-ends")
@dataclass(frozen=True)
class LineEnds(Mutation):
    """End every line with CRLF or a lone CR (F4: Gemini/Vertex send `\\r\\n\\r\\n`; a splitter that
    only looks for `\\n\\n` never finds an event). NDJSON takes CRLF only."""

    style: Literal["crlf", "cr"] = "crlf"

    level = Level.WIRE
    codecs = ("sse", "ndjson")

    def apply(self, stream: Stream, rng: random.Random) -> Stream:
        self.check_codec(stream)
        newline = "\r\n" if self.style == "crlf" else "\r"
        if stream.dialect.codec_name == "sse":
            return replace(stream, newline=newline, reads=None, split=None)
        if self.style == "cr":
            raise NotApplicable("NDJSON lines cannot end in a lone CR")
        reads = [piece.replace(b"\n", b"\r\n") for piece in stream.pieces()]
        return stream.with_reads(reads, same_events=True)


@mutation("sse-comments")
@dataclass(frozen=True)
class Comments(Mutation):
    """Insert SSE comment lines (F6: OpenRouter's `: OPENROUTER PROCESSING`, llama.cpp's `: ping`)
    before the first byte, between events, or after every `every`-th event."""

    text: str = " OPENROUTER PROCESSING"
    where: Literal["start", "between", "random"] = "between"
    every: int = 1

    level = Level.WIRE
    codecs = ("sse",)

    def apply(self, stream: Stream, rng: random.Random) -> Stream:
        self.check_codec(stream)
        comment = stream.dialect.parse(WireEvent(comment=self.text))
        events: list[Event] = []
        if self.where == "start":
            events = [comment, *stream.events]
        else:
            events.append(comment)
            for n, event in enumerate(stream.events, start=1):
                events.append(event)
                pick = rng.random() < 0.3 if self.where == "random" else n % max(1, self.every) == 0
                if pick and n < len(stream.events):
                    events.append(comment)
        return stream.with_events(events)


@mutation("multiline-data")
@dataclass(frozen=True)
class MultilineData(Mutation):
    """Spread each JSON payload over several `data:` lines, pretty-printed (F5: a client that parses
    each line, or keeps only the last one, breaks)."""

    indent: int = 1

    level = Level.WIRE
    codecs = ("sse",)

    def apply(self, stream: Stream, rng: random.Random) -> Stream:
        self.check_codec(stream)
        events = []
        for event in stream.events:
            wire = stream.dialect.render(event)
            if isinstance(event.payload, (dict, list)):
                data = json.dumps(event.payload, ensure_ascii=False, indent=self.indent)
                event = Event(wire._replace(data=data), event.payload)
            events.append(event)
        return stream.with_events(events)


@mutation("no-space")
@dataclass(frozen=True)
class NoSpace(Mutation):
    """Write fields as `data:{...}` without the optional space after the colon (valid SSE; a client
    that strips the prefix `data: ` by length loses the first character)."""

    level = Level.WIRE
    codecs = ("sse",)

    def apply(self, stream: Stream, rng: random.Random) -> Stream:
        self.check_codec(stream)
        return replace(stream, space=False, reads=None, split=None)


def _event_ends(stream: Stream) -> list[int] | None:
    """The byte offset where each event ends, when the reads are the rendered events."""
    ends, pos = [], 0
    for piece in stream.pieces():
        pos += len(piece)
        ends.append(pos)
    if stream.fixed_reads and pos != len(stream.body()):
        return None
    return ends


def _meaning_is_clear(stream: Stream, body: bytes, ends: Sequence[int], offset: int) -> bool:
    """Whether a cut after `offset` bytes means the same to every client. Not when all that is
    missing of the current SSE event is line ends: its text is whole, but WHATWG drops an event
    (or line) left unterminated at the end, while many SDK decoders flush it."""
    if stream.dialect.codec_name != "sse":
        return True
    current = bisect.bisect_right(ends, offset)
    return current == len(ends) or body[offset : ends[current]].strip(b"\r\n") != b""


class _Offsets(Sequence[int]):
    """Sorted, disjoint ranges of offsets read as one sequence, without a list of them all: a
    sweep samples a few dozen of the millions a long stream has (`random.sample` takes any
    sequence and draws by position, so the points drawn are those a list of them would give)."""

    def __init__(self, ranges: Sequence[range]) -> None:
        self._ranges = [r for r in ranges if r]
        self._firsts: list[int] = []  # the position of each range's first offset
        total = 0
        for r in self._ranges:
            self._firsts.append(total)
            total += len(r)
        self._len = total

    def __len__(self) -> int:
        return self._len

    @overload
    def __getitem__(self, index: int) -> int: ...

    @overload
    def __getitem__(self, index: slice) -> list[int]: ...

    def __getitem__(self, index: int | slice) -> int | list[int]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self._len))]
        if index < 0:
            index += self._len
        if not 0 <= index < self._len:
            raise IndexError(index)
        at = bisect.bisect_right(self._firsts, index) - 1
        return self._ranges[at][index - self._firsts[at]]

    def __iter__(self) -> Iterator[int]:
        for r in self._ranges:
            yield from r


def _clear_points(stream: Stream, body: bytes, ends: Sequence[int], limit: int) -> Sequence[int]:
    """The offsets 1..`limit` where `_meaning_is_clear`, found event by event: the unclear ones
    are the line ends each SSE event closes with (from its last non-line-end byte on)."""
    if stream.dialect.codec_name != "sse":
        return range(1, limit + 1)
    ranges: list[range] = []
    start = 0
    for end in ends:  # each event's bytes up to its closing line ends
        text_end = start + len(body[start:end].rstrip(b"\r\n"))
        ranges.append(range(max(start, 1), min(text_end, limit + 1)))
        start = max(start, end)
    ranges.append(range(max(start, 1), limit + 1))  # past the last event: nothing left to lose
    return _Offsets(ranges)


@mutation("cut-bytes")
@dataclass(frozen=True)
class CutBytes(Mutation):
    """Cut the body at a byte offset (D7: a disconnect mid-arguments), with a connection error
    (`error: true`) or a clean close. `at` is a fraction of the body before its terminal signal
    (None: random). Expected: only calls final in the events wholly delivered; state cut."""

    at: float | None = None
    error: bool = True

    level = Level.WIRE
    meaning = Meaning.CHANGING

    def apply(self, stream: Stream, rng: random.Random) -> Stream:
        ends = _event_ends(stream)
        if ends is None or not ends:
            raise NotApplicable("cannot place a byte cut on these reads")
        terminal = terminal_index(stream)
        limit = ends[terminal] - 1 if terminal < len(ends) else ends[-1] - 1
        if limit < 1:
            raise NotApplicable("stream too short to cut")
        offset = 1 + int((limit - 1) * self.at) if self.at is not None else rng.randint(1, limit)
        body = _body(stream)
        while offset > 1 and not _meaning_is_clear(stream, body, ends, offset):
            offset -= 1  # into the last line: a partial line is unambiguous
        return cut_bytes(stream, offset, self.error)


def cut_bytes(stream: Stream, offset: int, error: bool) -> Stream:
    """The stream cut after `offset` bytes; expected: what the events a client fully got make final
    (the last, partial event counts only when it decodes to the very event it was cut from)."""
    body = _body(stream)
    # Keep the read boundaries before the cut: the cut only ends the last read early.
    reads, pos = [], 0
    for read in stream.current_reads():
        if pos >= offset:
            break
        reads.append(read[: offset - pos])
        pos += len(read)
    message = CUT_ERROR if error else None
    prefixes = _prefixes(stream)
    events, decoded = prefixes.decoded(offset)
    out = evolve(stream, reads=tuple(reads or [body[:0]]), split=None, events=events)
    # How many events came through as they were sent (those decoded at a mark, known per stream).
    whole = min(prefixes.agreeing, decoded)
    if whole == decoded:
        for got, was in zip(out.events[whole:], stream.events[whole:], strict=False):
            if got.wire != stream.dialect.render(was):
                break
            whole += 1
    # A cut that still delivered the whole terminal signal: the dialect says what that means.
    partial = out.events[whole] if len(out.events) > whole else None
    said_terminal = partial is not None and Kind.SENTINEL in stream.dialect.kinds(partial)
    judged = not error or whole > first_signal(stream) or said_terminal
    # The reference judges what the client really decoded, the partial last event included.
    expected = expect_prefix(
        stream, out.events, state=None if judged else State.CUT, error=message, base=prefixes.events
    )
    return evolve(
        out,
        expected=expected,
        complete=not error,
        error=message,
        error_type=CUT_ERROR_TYPE if error else None,
    )


def _prefixes(stream: Stream) -> _EventPrefixes:
    """The stream's `_EventPrefixes`, made once per stream (a sweep cuts one stream many times)."""
    found = stream.memo.get("prefixes")
    if found is None:
        found = stream.memo["prefixes"] = _EventPrefixes(stream)
    return cast(_EventPrefixes, found)


_ATOMS = (str, bytes, int, float, bool, type(None))
_SLOTS: dict[type, tuple[str, ...]] = {}
_UNSET = object()


def _state_of(decoder: object) -> object:
    """A copy of a decoder to go on from: a slotted one of plain values and flat containers of
    them (every codec of ours) field by field, anything else by `copy.deepcopy`."""
    cls = type(decoder)
    slots = _SLOTS.get(cls)
    if slots is None:
        slots = _SLOTS[cls] = tuple(name for klass in cls.__mro__ for name in getattr(klass, "__slots__", ()))
    if not slots or hasattr(decoder, "__dict__"):
        return copy.deepcopy(decoder)
    new = object.__new__(cls)
    for name in slots:
        value = getattr(decoder, name, _UNSET)
        if value is _UNSET:
            continue
        if type(value) in (bytearray, list):
            if type(value) is list and not all(isinstance(item, _ATOMS) for item in value):
                return copy.deepcopy(decoder)
            value = cast(Any, value).copy()
        elif not isinstance(value, _ATOMS):
            return copy.deepcopy(decoder)
        setattr(new, name, value)
    return new


class _EventPrefixes:
    """A stream's body decoded once, with the decoder's state at each event boundary: the
    events a client decodes from a prefix of the body (what `with_reads` gives for the cut reads)
    are those decoded up to the last boundary in it plus what the rest decodes to, since a codec
    decodes the same bytes alike however they are split."""

    def __init__(self, stream: Stream) -> None:
        self.dialect = stream.dialect
        self.body = _body(stream)
        decoder = self.dialect.codec().decoder()
        # (offset, decoder state there, events decoded up to there), at each event's end
        self.marks: list[tuple[int, object, int]] = [(0, _state_of(decoder), 0)]
        self.events: list[Event] = []
        start = 0
        try:
            for end in _event_ends(stream) or ():
                if end > start:
                    self.events.extend(self.dialect.parse(w) for w in decoder.feed(self.body[start:end]))
                    self.marks.append((end, _state_of(decoder), len(self.events)))
                    start = end
        except Exception:  # the whole body does not decode: stop at the last good mark
            pass
        self.offsets = [mark[0] for mark in self.marks]
        # How many of those events decode to what the stream sent (its events rendered).
        self.agreeing = 0
        for got, was in zip(self.events, stream.events, strict=False):
            if got.wire != self.dialect.render(was):
                break
            self.agreeing += 1

    def decoded(self, offset: int) -> tuple[tuple[Event, ...], int]:
        """The events of the first `offset` bytes, and how many of them were decoded at a mark."""
        at, state, count = self.marks[bisect.bisect_right(self.offsets, offset) - 1]
        decoder = cast(Any, _state_of(state))
        rest = [*decoder.feed(self.body[at:offset]), *decoder.close()]
        return (*self.events[:count], *(self.dialect.parse(w) for w in rest)), count


@mutation("cut-at-every-byte")
@dataclass(frozen=True)
class CutAtEveryByte(Mutation):
    """A sweep: one case per byte offset before the terminal signal (sampled down to `max_points`
    with the seed on a long stream), each cut with a connection error or a clean close (D7, F3)."""

    max_points: int = 64
    error: bool = True

    level = Level.WIRE
    meaning = Meaning.CHANGING

    def sweep(self, stream: Stream, rng: random.Random) -> list[tuple[str, Mutation]]:
        ends = _event_ends(stream)
        if not ends:
            raise NotApplicable("cannot place a byte cut on these reads")
        terminal = terminal_index(stream)
        limit = ends[terminal] - 1 if terminal < len(ends) else ends[-1] - 1
        points = _clear_points(stream, _body(stream), ends, limit)
        if len(points) > self.max_points:
            points = sorted(rng.sample(points, self.max_points))
        return [(f"b{p}", _CutAt(p, self.error)) for p in points]

    def apply(self, stream: Stream, rng: random.Random) -> Stream:
        points = self.sweep(stream, rng)
        return points[rng.randrange(len(points))][1].apply(stream, rng)


@dataclass(frozen=True)
class _CutAt(Mutation):
    """One point of `cut-at-every-byte`."""

    offset: int
    error: bool

    name = "cut-at-every-byte"
    level = Level.WIRE
    meaning = Meaning.CHANGING

    def apply(self, stream: Stream, rng: random.Random) -> Stream:
        return cut_bytes(stream, self.offset, self.error)


@mutation("unterminated-last-event")
@dataclass(frozen=True)
class UnterminatedLastEvent(Mutation):
    """Send the last SSE event without the blank line that ends it, then hold the connection open
    for `seconds` before closing it cleanly (a server that keeps its stream open after its last
    frame; openai/openai-node#2725, google-gemini/gemini-cli#29059 and earendil-works/pi#9047 are
    clients meeting a last frame without its blank line). An event is dispatched only at a blank
    line, and at the end of the stream an incomplete one is discarded (WHATWG HTML, server-sent
    events, 9.2.6): expected is the stream without that event, ended cleanly. Its `data:` line is
    whole, so a client that dispatches a line at its line end takes it while the connection is
    still open."""

    seconds: float = 0.1

    level = Level.WIRE
    meaning = Meaning.CHANGING
    codecs = ("sse",)

    def apply(self, stream: Stream, rng: random.Random) -> Stream:
        self.check_codec(stream)
        if not 0 <= self.seconds <= 60:
            raise NotApplicable("a connection is held open for 0 to 60 seconds")
        if not stream.complete:
            raise NotApplicable("a stream cut already has no last event to leave unterminated")
        body = _body(stream)
        end = _blank_line_end(body)
        if end is None:
            raise NotApplicable("the stream does not end with a blank line")
        reads, pos = [], 0
        for read in stream.current_reads():
            if pos >= len(body) - end:
                break
            reads.append(read[: len(body) - end - pos])
            pos += len(read)
        out = stream.with_reads(reads)
        if len(out.events) != len(stream.events) - 1:
            raise NotApplicable("the last event is not the only one the blank line ended")
        expected = expect_prefix(stream, out.events, state=None, error=None)
        return evolve(out, expected=expected, open_after=float(self.seconds))


def _blank_line_end(body: bytes) -> int | None:
    """How many bytes at the end of `body` are the blank line after its last event (the line end
    of the event's last line stays): None when the body does not end with one."""
    for blank in (b"\r\n\r\n", b"\n\n", b"\r\r"):
        if body.endswith(blank):
            return len(blank) // 2
    return None
