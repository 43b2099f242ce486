"""Properties of every wire codec: encode -> split anywhere -> decode is the identity, and no input
in any chunking makes a decoder raise anything but `CodecError`."""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable
from itertools import pairwise

from hypothesis import given, settings
from hypothesis import strategies as st

from harness.errors import CodecError
from harness.wire.codecs import Decoder, NDJSONCodec, SSECodec, WireEvent, decode_all
from harness.wire.codecs.base import EventHeader
from harness.wire.codecs.eventstream import EventStreamCodec, EventStreamDecoder

SETTINGS = settings(max_examples=100, deadline=None)


def split_at(body: bytes, cuts: list[int]) -> list[bytes]:
    offsets = sorted({cut % (len(body) + 1) for cut in cuts})
    edges = [0, *offsets, len(body)]
    return [body[start:end] for start, end in pairwise(edges)]


cuts = st.lists(st.integers(min_value=0, max_value=10_000), max_size=12)


def line_text(exclude: str = "") -> st.SearchStrategy[str]:
    """Text without line ends (and without `exclude`), surrogates never included."""
    alphabet = st.characters(blacklist_characters="\r\n" + exclude, blacklist_categories=("Cs",))
    return st.text(alphabet, max_size=20)


# --- SSE ---------------------------------------------------------------------------------------

def event(**fields: object) -> WireEvent:
    """`WireEvent(**fields)`: through `st.builds` the fields not given keep their defaults (on a
    named tuple itself, hypothesis would draw every field)."""
    return WireEvent(**fields)  # type: ignore[arg-type]


sse_data_events = st.builds(
    event,
    data=st.text(st.characters(blacklist_characters="\r", blacklist_categories=("Cs",)), max_size=40),
    name=st.none() | line_text(),
    id=st.none() | line_text(exclude="\0"),
    retry=st.none() | st.integers(min_value=0, max_value=10**12),
)
sse_comments = st.builds(event, comment=line_text())
# A block without data: lines that are neither blank, comments nor `data` fields.
block_lines = line_text().filter(lambda line: line[:1] not in ("", ":") and line.partition(":")[0] != "data")
sse_blocks = st.builds(event, block=st.lists(block_lines, min_size=1, max_size=3).map("\n".join))
sse_codecs = st.builds(SSECodec, newline=st.sampled_from(["\n", "\r\n", "\r"]), space=st.booleans())


@SETTINGS
@given(st.lists(sse_data_events | sse_comments | sse_blocks, max_size=8), sse_codecs, cuts)
def test_sse_round_trip_in_any_chunking(events: list[WireEvent], codec: SSECodec, at: list[int]) -> None:
    body = codec.encode(events)
    assert decode_all(codec, split_at(body, at)) == events


# --- NDJSON ------------------------------------------------------------------------------------

ndjson_events = st.builds(
    event, data=line_text().filter(lambda text: bool(text.encode().strip()))
)


@SETTINGS
@given(st.lists(ndjson_events, max_size=8), cuts)
def test_ndjson_round_trip_in_any_chunking(events: list[WireEvent], at: list[int]) -> None:
    body = NDJSONCodec().encode(events)
    assert decode_all(NDJSONCodec(), split_at(body, at)) == events


# --- eventstream -------------------------------------------------------------------------------

HEADER_VALUES: dict[int, st.SearchStrategy[object]] = {
    0: st.just(True),
    1: st.just(False),
    2: st.integers(-(2**7), 2**7 - 1),
    3: st.integers(-(2**15), 2**15 - 1),
    4: st.integers(-(2**31), 2**31 - 1),
    5: st.integers(-(2**63), 2**63 - 1),
    6: st.binary(max_size=30),
    7: line_text(),
    8: st.integers(-(2**63), 2**63 - 1),
    9: st.binary(min_size=16, max_size=16),
}
header_names = st.text(st.characters(min_codepoint=97, max_codepoint=122), min_size=1, max_size=12)
headers = st.one_of(
    *(st.tuples(header_names, st.just(kind), value) for kind, value in HEADER_VALUES.items())
)
payloads = st.binary(max_size=60).map(lambda raw: raw.decode("utf-8", "surrogateescape"))
event_types = st.text(st.characters(min_codepoint=32, max_codepoint=0x2FF), min_size=1, max_size=20)


@st.composite
def eventstream_events(draw: st.DrawFn) -> tuple[WireEvent, WireEvent]:
    """An event to encode, and the event decoding must give back."""
    name, data = draw(event_types), draw(payloads)
    if draw(st.booleans()):
        standard: tuple[EventHeader, ...] = (
            (":event-type", 7, name), (":content-type", 7, "application/json"), (":message-type", 7, "event"),
        )
        return WireEvent(data=data, name=name), WireEvent(data=data, name=name, headers=standard)
    explicit = ((":event-type", 7, name), *draw(st.lists(headers, max_size=5)))
    return WireEvent(data=data, headers=explicit), WireEvent(data=data, name=name, headers=explicit)


@SETTINGS
@given(st.lists(eventstream_events(), max_size=6), cuts)
def test_eventstream_round_trip_in_any_chunking(
    pairs: list[tuple[WireEvent, WireEvent]], at: list[int]
) -> None:
    body = EventStreamCodec().encode(event for event, _ in pairs)
    decoded = decode_all(EventStreamCodec(), split_at(body, at))
    assert decoded == [expected for _, expected in pairs]
    assert EventStreamCodec().encode(decoded) == body


# --- any input ---------------------------------------------------------------------------------

DECODERS: dict[str, Callable[[], Decoder]] = {
    "sse": SSECodec().decoder,
    "ndjson": NDJSONCodec().decoder,
    "eventstream": EventStreamCodec().decoder,
    "eventstream-strict": lambda: EventStreamDecoder(strict=True),
}


def only_codec_errors(decoder: Decoder, chunks: list[bytes]) -> None:
    events: list[WireEvent] = []
    try:
        for chunk in chunks:
            events.extend(decoder.feed(chunk))
        events.extend(decoder.close())
    except CodecError:
        return
    assert all(isinstance(event, WireEvent) for event in events)


@SETTINGS
@given(st.sampled_from(sorted(DECODERS)), st.binary(max_size=300), cuts)
def test_arbitrary_bytes_raise_nothing_but_codec_error(which: str, body: bytes, at: list[int]) -> None:
    only_codec_errors(DECODERS[which](), split_at(body, at))


def hand_frame(headers_section: bytes, payload: bytes) -> bytes:
    prelude = struct.pack(">II", 16 + len(headers_section) + len(payload), len(headers_section))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    message = prelude + headers_section + payload
    return message + struct.pack(">I", zlib.crc32(message))


@SETTINGS
@given(st.binary(max_size=80), st.binary(max_size=20), st.booleans(), cuts)
def test_frames_with_valid_crcs_and_arbitrary_headers_raise_nothing_but_codec_error(
    headers_section: bytes, payload: bytes, strict: bool, at: list[int]
) -> None:
    body = hand_frame(headers_section, payload)
    only_codec_errors(EventStreamDecoder(strict=strict), split_at(body, at))


@SETTINGS
@given(
    st.lists(eventstream_events(), min_size=1, max_size=3),
    st.integers(0, 10_000),
    st.integers(1, 255),
    cuts,
)
def test_corrupted_or_cut_eventstreams_raise_nothing_but_codec_error(
    pairs: list[tuple[WireEvent, WireEvent]], where: int, flip: int, at: list[int]
) -> None:
    body = bytearray(EventStreamCodec().encode(event for event, _ in pairs))
    body[where % len(body)] ^= flip
    cut = bytes(body[: len(body) - where % 7])
    for strict in (False, True):
        only_codec_errors(EventStreamDecoder(strict=strict), split_at(bytes(body), at))
        only_codec_errors(EventStreamDecoder(strict=strict), split_at(cut, at))
