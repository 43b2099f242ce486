"""Wire codecs: SSE, NDJSON and AWS eventstream, each incremental in both directions."""

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

CODEC_NAMES = ("sse", "ndjson", "eventstream")

# The Content-Type a stream of each codec is sent with (its media type is what a client accepts).
STREAM_CONTENT_TYPES = {
    "sse": "text/event-stream; charset=utf-8",
    "ndjson": "application/x-ndjson",
    "eventstream": "application/vnd.amazon.eventstream",
}


def get_codec(name: str) -> Codec:
    """A codec by name: `sse`, `ndjson` or `eventstream`."""
    if name == "sse":
        return SSECodec()
    if name == "ndjson":
        return NDJSONCodec()
    if name == "eventstream":
        from harness.wire.codecs.eventstream import EventStreamCodec

        return EventStreamCodec()
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
    return None
