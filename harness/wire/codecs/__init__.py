"""Wire codecs: SSE, NDJSON, AWS eventstream and WebSocket frames, each incremental in both directions."""

from __future__ import annotations

from harness.errors import CodecError
from harness.wire.codecs.base import Codec, Decoder, EventHeader, WireEvent, decode_all
from harness.wire.codecs.ndjson import NDJSONCodec
from harness.wire.codecs.sse import SSECodec, sniff_newline

__all__ = [
    "STREAM_CONTENT_TYPES",
    "Codec",
    "Decoder",
    "EventHeader",
    "NDJSONCodec",
    "SSECodec",
    "WireEvent",
    "codec_for_media_type",
    "decode_all",
    "get_codec",
    "sniff_newline",
]

CODEC_NAMES = ("sse", "ndjson", "eventstream", "websocket")

# The Content-Type a stream of each codec is sent with (its media type is what a client accepts).
STREAM_CONTENT_TYPES = {
    "sse": "text/event-stream; charset=utf-8",
    "ndjson": "application/x-ndjson",
    "eventstream": "application/vnd.amazon.eventstream",
    # Not sent over HTTP: how a cassette names a WebSocket session's server frames.
    "websocket": "application/x-websocket-frames",
}


def get_codec(name: str) -> Codec:
    """A codec by name: `sse`, `ndjson`, `eventstream` or `websocket`."""
    if name == "sse":
        return SSECodec()
    if name == "ndjson":
        return NDJSONCodec()
    if name == "eventstream":
        from harness.wire.codecs.eventstream import EventStreamCodec

        return EventStreamCodec()
    if name == "websocket":
        from harness.wire.codecs.websocket import WebSocketCodec

        return WebSocketCodec()
    raise CodecError(f"unknown codec {name!r}; choose one of {', '.join(CODEC_NAMES)}")


def codec_for_media_type(content_type: str | None) -> str | None:
    """The codec name for a response `Content-Type`, or None for a body that is not a stream."""
    media = (content_type or "").split(";")[0].strip().lower()
    if media == "text/event-stream":
        return "sse"
    if media in ("application/x-ndjson", "application/jsonl", "application/json-seq", "application/ndjson"):
        return "ndjson"
    if media == "application/vnd.amazon.eventstream":
        return "eventstream"
    if media == "application/x-websocket-frames":
        return "websocket"
    return None
