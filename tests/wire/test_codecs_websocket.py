"""The WebSocket frame codec: messages as events, any read boundaries, fragmented messages,
control frames kept in place, masked client frames, a frame cut at the end dropped."""

from __future__ import annotations

import pytest

from harness.errors import CodecError
from harness.wire.codecs import WireEvent, codec_for_media_type, decode_all, get_codec
from harness.wire.codecs.websocket import CONTINUATION, TEXT, frame

EVENTS = [
    WireEvent(data='{"type":"session.created"}'),
    WireEvent(data="", comment="ping"),
    WireEvent(data="x" * 70000),  # a 64-bit length
    WireEvent(data="é" * 100),  # a 16-bit length, multi-byte text
    WireEvent(data="bye", name="close", id="1000"),
]


def test_events_round_trip_through_any_reads() -> None:
    codec = get_codec("websocket")
    body = codec.encode(EVENTS)
    assert decode_all(codec, [body]) == EVENTS
    assert decode_all(codec, [body[i : i + 1] for i in range(len(body))]) == EVENTS
    assert codec_for_media_type("application/x-websocket-frames") == "websocket"


def test_a_fragmented_message_is_one_event() -> None:
    codec = get_codec("websocket")
    parts = codec.fragment(WireEvent(data='{"delta":"Paris"}'), 4)  # type: ignore[attr-defined]
    assert parts.count(bytes([TEXT])) >= 1 and len(parts) > len(
        codec.encode([WireEvent(data='{"delta":"Paris"}')])
    )
    assert decode_all(codec, [parts]) == [WireEvent(data='{"delta":"Paris"}')]


def test_masked_frames_are_read_as_a_client_sends_them() -> None:
    body = frame(TEXT, b'{"type":"response.create"}', mask=b"\x01\x02\x03\x04")
    assert decode_all(get_codec("websocket"), [body]) == [WireEvent(data='{"type":"response.create"}')]


def test_a_frame_cut_at_the_end_is_no_message() -> None:
    codec = get_codec("websocket")
    body = codec.encode(EVENTS[:1]) + codec.encode([WireEvent(data='{"type":"response.done"}')])[:-3]
    assert decode_all(codec, [body]) == EVENTS[:1]


def test_a_continuation_without_a_message_is_a_codec_error() -> None:
    with pytest.raises(CodecError, match="unexpected frame opcode"):
        decode_all(get_codec("websocket"), [frame(CONTINUATION, b"x")])
