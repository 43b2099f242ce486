"""AWS eventstream codec: frames in any chunking, every header type, CRCs, and botocore agreement."""

from __future__ import annotations

import struct
import subprocess
import sys
import uuid
import zlib

import pytest
from botocore.eventstream import EventStreamBuffer

from harness.errors import CodecError
from harness.wire.codecs import WireEvent, decode_all, get_codec
from harness.wire.codecs.eventstream import EventStreamCodec, EventStreamDecoder

UUID = bytes(range(16))

# Every header type, written by hand: name_len | name | type | value.
ALL_TYPES_HEADERS = (
    b"\x0b:event-type\x07\x00\x11contentBlockDelta"
    b"\x01t\x00"
    b"\x01f\x01"
    b"\x01b\x02\xfb"
    b"\x01s\x03\xfe\xd4"
    b"\x01i\x04\x00\x01\x11\x70"
    b"\x01l\x05\xff\xff\xff\x00\x00\x00\x00\x00"
    b"\x03raw\x06\x00\x02\x00\xff"
    b"\x02ts\x08" + struct.pack(">q", 1730000000123)
    + b"\x02id\x09" + UUID
)
ALL_TYPES = (
    (":event-type", 7, "contentBlockDelta"),
    ("t", 0, True),
    ("f", 1, False),
    ("b", 2, -5),
    ("s", 3, -300),
    ("i", 4, 70000),
    ("l", 5, -(2**40)),
    ("raw", 6, b"\x00\xff"),
    ("ts", 8, 1730000000123),
    ("id", 9, UUID),
)


def frame(headers: bytes, payload: bytes) -> bytes:
    """A frame built by hand, independently of the codec under test."""
    prelude = struct.pack(">II", 16 + len(headers) + len(payload), len(headers))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    message = prelude + headers + payload
    return message + struct.pack(">I", zlib.crc32(message))


def string_header(name: str, value: str) -> bytes:
    raw = value.encode()
    return bytes([len(name)]) + name.encode() + b"\x07" + struct.pack(">H", len(raw)) + raw


def bedrock_headers(event_type: str) -> bytes:
    return (
        string_header(":event-type", event_type)
        + string_header(":content-type", "application/json")
        + string_header(":message-type", "event")
    )


def decode(body: bytes, size: int | None = None) -> list[WireEvent]:
    chunks = [body] if size is None else [body[i : i + size] for i in range(0, len(body), size)]
    return decode_all(EventStreamCodec(), chunks)


def botocore_messages(body: bytes) -> list[tuple[dict[str, object], bytes]]:
    buffer = EventStreamBuffer()
    buffer.add_data(body)
    return [(message.headers, message.payload) for message in buffer]


def as_botocore(events: list[WireEvent]) -> list[tuple[dict[str, object], bytes]]:
    return [
        ({name: value for name, _, value in event.headers}, event.data.encode("utf-8", "surrogateescape"))
        for event in events
    ]


BEDROCK_TURN = [
    WireEvent(data='{"p":"abcd","role":"assistant"}', name="messageStart"),
    WireEvent(
        data='{"contentBlockIndex":0,"p":"ab","start":{"toolUse":{"name":"get_weather","toolUseId":"t1"}}}',
        name="contentBlockStart",
    ),
    WireEvent(data='{"contentBlockIndex":0,"delta":{"toolUse":{"input":"{\\"city\\": \\"Par"}},"p":"a"}',
              name="contentBlockDelta"),
    WireEvent(data='{"contentBlockIndex":0,"delta":{"toolUse":{"input":"is\\"}"}},"p":"abc"}',
              name="contentBlockDelta"),
    WireEvent(data='{"contentBlockIndex":0,"p":"abcdef"}', name="contentBlockStop"),
    WireEvent(data='{"p":"ab","stopReason":"tool_use"}', name="messageStop"),
    WireEvent(data='{"metrics":{"latencyMs":234},"p":"a","usage":{"inputTokens":125}}', name="metadata"),
]


# --- encoding ----------------------------------------------------------------------------------


def test_encode_writes_bedrocks_headers_in_bedrocks_order() -> None:
    payload = b'{"contentBlockIndex":0,"delta":{"text":"Hi"}}'
    expected = frame(bedrock_headers("contentBlockDelta"), payload)
    assert EventStreamCodec().encode([WireEvent(data=payload.decode(), name="contentBlockDelta")]) == expected


def test_encode_writes_given_headers_exactly() -> None:
    event = WireEvent(data="\u00e9", headers=ALL_TYPES)
    assert EventStreamCodec().encode([event]) == frame(ALL_TYPES_HEADERS, "\u00e9".encode())


def test_a_uuid_header_value_may_be_a_uuid() -> None:
    event = WireEvent(data="", headers=(("id", 9, uuid.UUID(bytes=UUID)),))
    assert EventStreamCodec().encode([event]) == frame(b"\x02id\x09" + UUID, b"")


@pytest.mark.parametrize(
    "event",
    [
        WireEvent(data="{}"),
        WireEvent(data="{}", name="x", comment="c"),
        WireEvent(data="{}", name="x", id="1"),
        WireEvent(data="{}", name="x", retry=1),
        WireEvent(data="\ud800", name="x"),
        WireEvent(data="", headers=(("t", 0, False),)),
        WireEvent(data="", headers=(("b", 2, 128),)),
        WireEvent(data="", headers=(("s", 3, "1"),)),
        WireEvent(data="", headers=(("i", 4, True),)),
        WireEvent(data="", headers=(("raw", 6, "text"),)),
        WireEvent(data="", headers=(("str", 7, b"bytes"),)),
        WireEvent(data="", headers=(("id", 9, b"short"),)),
        WireEvent(data="", headers=(("x", 10, 1),)),
        WireEvent(data="", headers=(("n" * 256, 7, "v"),)),
        WireEvent(data="", headers=(("long", 7, "v" * 70000),)),
    ],
)
def test_encode_refuses_what_a_frame_cannot_carry(event: WireEvent) -> None:
    with pytest.raises(CodecError):
        EventStreamCodec().encode([event])


# --- decoding ----------------------------------------------------------------------------------


def test_decode_gives_payload_name_and_every_header_in_wire_order() -> None:
    [event] = decode(frame(ALL_TYPES_HEADERS, b'{"a":1}'))
    assert event == WireEvent(data='{"a":1}', name="contentBlockDelta", headers=ALL_TYPES)


def test_a_payload_that_is_not_utf8_survives_surrogate_escaped() -> None:
    body = frame(bedrock_headers("chunk"), b"\xff\xfe{}")
    [event] = decode(body)
    assert event.data == "\udcff\udcfe{}"
    assert EventStreamCodec().encode([event]) == body


def test_exception_and_error_frames_are_named_by_their_type() -> None:
    exception = (
        string_header(":exception-type", "throttlingException")
        + string_header(":content-type", "application/json")
        + string_header(":message-type", "exception")
    )
    error = (
        string_header(":error-code", "InternalFailure")
        + string_header(":error-message", "boom")
        + string_header(":message-type", "error")
    )
    events = decode(frame(exception, b'{"message":"slow down"}') + frame(error, b""))
    assert [event.name for event in events] == ["throttlingException", "InternalFailure"]
    assert decode(frame(b"", b"x")) == [WireEvent(data="x")]


@pytest.mark.parametrize("size", [None, 1, 3, 16, 17, 100])
def test_frames_split_across_reads_and_many_in_one_read(size: int | None) -> None:
    body = EventStreamCodec().encode(BEDROCK_TURN)
    assert decode(body, size) == decode(body)
    assert [(event.name, event.data) for event in decode(body, size)] == [
        (event.name, event.data) for event in BEDROCK_TURN
    ]


def test_every_split_point_of_a_frame() -> None:
    body = frame(ALL_TYPES_HEADERS, b"payload") * 2
    whole = decode(body)
    for cut in range(1, len(body)):
        assert decode_all(EventStreamCodec(), [body[:cut], body[cut:]]) == whole, f"split at {cut}"


def test_a_decoded_stream_re_encodes_byte_for_byte() -> None:
    body = frame(ALL_TYPES_HEADERS, b"{}") + frame(bedrock_headers("messageStop"), b'{"stopReason":"x"}')
    body += frame(b"\x00\x07\x00\x00", b"")  # an empty header name, as the wire allows
    assert EventStreamCodec().encode(decode(body, 5)) == body


# --- errors and the end of input ---------------------------------------------------------------


def corrupt(body: bytes, index: int) -> bytes:
    return body[:index] + bytes([body[index] ^ 0x01]) + body[index + 1 :]


def prelude(total: int, headers_len: int) -> bytes:
    head = struct.pack(">II", total, headers_len)
    return head + struct.pack(">I", zlib.crc32(head))


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (corrupt(frame(b"", b"{}"), 2), "frame 1: prelude CRC mismatch"),
        (corrupt(frame(b"", b"{}"), 9), "frame 1: prelude CRC mismatch"),
        (frame(b"", b"{}") + corrupt(frame(b"", b"{}"), 13), "frame 2: message CRC mismatch"),
        (corrupt(frame(b"", b"{}"), 17), "message CRC mismatch"),
        (prelude(10, 0) + b"\0" * 10, "impossible lengths"),
        (prelude(20, 8) + b"\0" * 10, "impossible lengths"),
        (prelude(16 + 200_000, 200_000), "past the eventstream limits"),
        (prelude(16 + 25 * 1024 * 1024, 0), "past the eventstream limits"),
        (frame(b"\x01x\x0a", b""), "header 'x' has unknown type 10"),
        (frame(b"\x01x\x07\x00\x09abc", b""), "header runs past the headers section"),
        (frame(b"\x01x\x04\x00\x01", b""), "header runs past the headers section"),
        (frame(b"\x05ab", b""), "header runs past the headers section"),
    ],
)
def test_bad_frames_are_codec_errors_that_say_what_is_wrong(body: bytes, message: str) -> None:
    with pytest.raises(CodecError, match=message):
        decode(body)
    with pytest.raises(CodecError, match=message):
        decode(body, 1)


def test_a_frame_cut_at_close_is_dropped_unless_strict() -> None:
    body = EventStreamCodec().encode(BEDROCK_TURN[:2])
    cut = body[:-5]
    assert [event.name for event in decode(cut, 7)] == ["messageStart"]
    strict = EventStreamDecoder(strict=True)
    assert [event.name for event in strict.feed(cut)] == ["messageStart"]
    with pytest.raises(CodecError, match=r"cut inside frame 2: \d+ bytes"):
        strict.close()


def test_strict_close_after_whole_frames_is_clean_and_resets() -> None:
    decoder = EventStreamDecoder(strict=True)
    body = EventStreamCodec().encode(BEDROCK_TURN)
    assert len(decoder.feed(body)) == len(BEDROCK_TURN)
    assert decoder.close() == []
    assert decoder.feed(b"\x00\x00") == []
    with pytest.raises(CodecError, match="frame 1"):
        decoder.close()
    assert decoder.close() == []


# --- against botocore --------------------------------------------------------------------------


def test_botocore_decodes_our_frames_identically() -> None:
    events = [*BEDROCK_TURN, WireEvent(data="\udcff raw", headers=ALL_TYPES)]
    body = EventStreamCodec().encode(events)
    standard = {":content-type": "application/json", ":message-type": "event"}
    expected = [({":event-type": event.name, **standard}, event.data.encode()) for event in BEDROCK_TURN]
    expected += as_botocore(events[-1:])
    assert botocore_messages(body) == expected
    assert as_botocore(decode(body)) == expected


def test_we_decode_hand_built_frames_as_botocore_does() -> None:
    body = (
        frame(ALL_TYPES_HEADERS, b'{"x":1}')
        + frame(bedrock_headers("contentBlockDelta"), b'{"delta":{"text":"h\xc3\xa9"}}')
        + frame(b"", b"")
        + frame(b"\x01u\x09" + bytes(16), b"\x80\x81")
    )
    expected = botocore_messages(body)
    assert len(expected) == 4
    assert as_botocore(decode(body)) == expected
    assert as_botocore(decode(body, 2)) == expected


def test_botocore_is_never_imported_by_the_harness() -> None:
    code = "import sys, harness.wire.codecs.eventstream; sys.exit('botocore' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


def test_registry() -> None:
    codec = get_codec("eventstream")
    assert isinstance(codec, EventStreamCodec)
    assert codec.name == "eventstream"
    assert isinstance(codec.decoder(), EventStreamDecoder)
