"""AWS eventstream (`application/vnd.amazon.eventstream`), the binary framing of Bedrock streams.

A frame, big-endian throughout:

    total_len u32 | headers_len u32 | prelude_crc u32 | headers | payload | message_crc u32

Both CRCs are CRC32 (IEEE): the prelude CRC covers the first 8 bytes, the message CRC everything
before it. A header is `name_len u8 | name | type u8 | value`, its value by type code:

    0 true, 1 false (no bytes)   2 byte i8    3 short i16    4 int i32    5 long i64
    6 bytes (u16 len | bytes)    7 string (u16 len | UTF-8)  8 timestamp i64 ms   9 uuid 16 bytes

Decoded values are `bool`, `int`, `bytes`, `str`, `int` (ms since the epoch) and `bytes`, the
same as botocore's. A `WireEvent` keeps the payload as `data` (UTF-8, surrogate-escaped so any
bytes survive), every header in wire order as `headers`, and as `name` the header that says what
the frame is: `:event-type`, or `:exception-type` for an exception frame (`:error-code` for an
error frame).

A frame may be split across reads and one read may hold many frames. A bad CRC, an impossible
length or an unknown header type is a `CodecError`. An incomplete frame left at `close()` means
the stream was cut: it is dropped silently, as a client that stops reading would, unless the
decoder is `strict`.
"""

from __future__ import annotations

import struct
import uuid
import zlib
from collections.abc import Iterable
from dataclasses import dataclass

from harness.errors import CodecError
from harness.wire.codecs.base import EventHeader, WireEvent, new_event

PRELUDE = struct.Struct(">III")
PRELUDE_LEN = 12
OVERHEAD = PRELUDE_LEN + 4
# The limits botocore enforces: past them a length is garbage, not a frame to wait for.
MAX_HEADERS_LEN = 128 * 1024
MAX_PAYLOAD_LEN = 24 * 1024 * 1024

BOOL_TRUE, BOOL_FALSE, BYTE, SHORT, INT, LONG, BYTES, STRING, TIMESTAMP, UUID = range(10)
INTEGERS = {
    BYTE: struct.Struct(">b"),
    SHORT: struct.Struct(">h"),
    INT: struct.Struct(">i"),
    LONG: struct.Struct(">q"),
    TIMESTAMP: struct.Struct(">q"),
}
U16 = struct.Struct(">H")

CONTENT_TYPE = "application/json"


class EventStreamDecoder:
    """Incremental eventstream decoder: `feed` reads as they arrive, `close` at end of input."""

    __slots__ = ("_buffer", "_frames", "strict")

    def __init__(self, *, strict: bool = False) -> None:
        self.strict = strict
        self._buffer = bytearray()
        self._frames = 0

    def feed(self, data: bytes) -> list[WireEvent]:
        buffer = self._buffer
        buffer += data
        out: list[WireEvent] = []
        start = 0
        available = len(buffer)
        while available - start >= PRELUDE_LEN:
            total, headers_len = self._prelude(buffer, start)
            if available - start < total:
                break
            frame = bytes(buffer[start : start + total])
            out.append(self._event(frame, headers_len))
            self._frames += 1
            start += total
        if start:
            del buffer[:start]
        return out

    def close(self) -> list[WireEvent]:
        left = len(self._buffer)
        self._buffer = bytearray()
        frames, self._frames = self._frames, 0
        if left and self.strict:
            raise CodecError(f"eventstream cut inside frame {frames + 1}: {left} bytes of it arrived")
        return []

    def _prelude(self, buffer: bytearray, start: int) -> tuple[int, int]:
        """The total and headers lengths of the frame at `start`, checked."""
        total, headers_len, crc = PRELUDE.unpack_from(buffer, start)
        where = f"eventstream frame {self._frames + 1}"
        if zlib.crc32(buffer[start : start + 8]) != crc:
            raise CodecError(f"{where}: prelude CRC mismatch (not an eventstream, or corrupted)")
        if total < OVERHEAD + headers_len:
            raise CodecError(f"{where}: impossible lengths (total {total}, headers {headers_len})")
        if headers_len > MAX_HEADERS_LEN or total - OVERHEAD - headers_len > MAX_PAYLOAD_LEN:
            raise CodecError(
                f"{where}: lengths past the eventstream limits (total {total}, headers {headers_len})"
            )
        return total, headers_len

    def _event(self, frame: bytes, headers_len: int) -> WireEvent:
        (crc,) = struct.unpack_from(">I", frame, len(frame) - 4)
        if zlib.crc32(memoryview(frame)[:-4]) != crc:
            raise CodecError(f"eventstream frame {self._frames + 1}: message CRC mismatch (corrupted)")
        headers = self._headers(frame[PRELUDE_LEN : PRELUDE_LEN + headers_len])
        payload = frame[PRELUDE_LEN + headers_len : -4]
        return new_event(
            payload.decode("utf-8", "surrogateescape"), _event_name(headers), None, None, None, headers
        )

    def _headers(self, section: bytes) -> tuple[EventHeader, ...]:
        headers: list[EventHeader] = []
        pos, end = 0, len(section)
        try:
            while pos < end:
                name_len = section[pos]
                name = section[pos + 1 : pos + 1 + name_len].decode("utf-8", "surrogateescape")
                pos += 1 + name_len
                kind = section[pos]
                pos += 1
                value: object
                if kind in INTEGERS:
                    codec = INTEGERS[kind]
                    (value,) = codec.unpack_from(section, pos)
                    pos += codec.size
                elif kind in (STRING, BYTES):
                    (size,) = U16.unpack_from(section, pos)
                    raw = section[pos + 2 : pos + 2 + size]
                    value = raw.decode("utf-8", "surrogateescape") if kind == STRING else raw
                    pos += 2 + size
                elif kind in (BOOL_TRUE, BOOL_FALSE):
                    value = kind == BOOL_TRUE
                elif kind == UUID:
                    value = section[pos : pos + 16]
                    pos += 16
                else:
                    raise CodecError(
                        f"eventstream frame {self._frames + 1}: header {name!r} has unknown type {kind}"
                    )
                headers.append((name, kind, value))
        except (IndexError, struct.error):
            pos = end + 1
        if pos != end:
            raise CodecError(f"eventstream frame {self._frames + 1}: a header runs past the headers section")
        return tuple(headers)


def _event_name(headers: tuple[EventHeader, ...]) -> str | None:
    values = {name: value for name, _, value in headers}
    message_type = values.get(":message-type")
    key = {"exception": ":exception-type", "error": ":error-code"}.get(str(message_type), ":event-type")
    value = values.get(key)
    return value if isinstance(value, str) else None


@dataclass(frozen=True, slots=True)
class EventStreamCodec:
    """Encode events as eventstream frames, each event one frame.

    An event with `headers` is written with exactly those headers (so a decoded frame re-encodes
    byte for byte); one without gets the headers Bedrock sends: `:event-type` (its `name`),
    `:content-type` `application/json`, `:message-type` `event`.
    """

    # Not a field: a plain attribute, so the codec satisfies `Codec`, whose `name` is settable.
    name = "eventstream"

    def decoder(self) -> EventStreamDecoder:
        return EventStreamDecoder()

    def encode(self, events: Iterable[WireEvent]) -> bytes:
        return b"".join(encode_frame(event) for event in events)


def encode_frame(event: WireEvent) -> bytes:
    """One event as one eventstream frame."""
    if event.is_comment or event.id is not None or event.retry is not None:
        raise CodecError("an eventstream frame cannot carry an SSE comment, block without data, id or retry")
    headers = event.headers
    if not headers:
        if event.name is None:
            raise CodecError("an eventstream event needs a name (its :event-type) or explicit headers")
        # Bedrock's own order, as its frames show on the wire.
        headers = (
            (":event-type", STRING, event.name),
            (":content-type", STRING, CONTENT_TYPE),
            (":message-type", STRING, "event"),
        )
    head = b"".join(_header(header) for header in headers)
    try:
        payload = event.data.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError as exc:
        raise CodecError(f"eventstream payload is not encodable text at character {exc.start}") from None
    total = OVERHEAD + len(head) + len(payload)
    if len(head) > MAX_HEADERS_LEN or len(payload) > MAX_PAYLOAD_LEN:
        raise CodecError(f"eventstream frame too large (headers {len(head)}, payload {len(payload)} bytes)")
    prelude = struct.pack(">II", total, len(head))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    message = prelude + head + payload
    return message + struct.pack(">I", zlib.crc32(message))


def _header(header: EventHeader) -> bytes:
    name, kind, value = header
    raw_name = name.encode("utf-8", "surrogateescape")
    if len(raw_name) > 255:
        raise CodecError(f"eventstream header name {name[:40]!r}... is longer than 255 bytes")
    try:
        return bytes([len(raw_name)]) + raw_name + bytes([kind]) + _value(kind, value)
    except (struct.error, TypeError, ValueError, UnicodeEncodeError) as exc:
        raise CodecError(f"eventstream header {name!r}: {value!r} does not fit type {kind}: {exc}") from None


def _value(kind: int, value: object) -> bytes:
    if kind in (BOOL_TRUE, BOOL_FALSE):
        if value is not (kind == BOOL_TRUE):
            raise ValueError(f"type {kind} is the boolean {kind == BOOL_TRUE}")
        return b""
    if kind in INTEGERS:
        if not isinstance(value, int) or isinstance(value, bool):
            raise TypeError("an integer is needed")
        return INTEGERS[kind].pack(value)
    if kind in (STRING, BYTES):
        if kind == STRING and isinstance(value, str):
            raw = value.encode("utf-8", "surrogateescape")
        elif kind == BYTES and isinstance(value, bytes | bytearray):
            raw = bytes(value)
        else:
            raise TypeError("a str is needed" if kind == STRING else "bytes are needed")
        return U16.pack(len(raw)) + raw
    if kind == UUID:
        uuid_bytes = value.bytes if isinstance(value, uuid.UUID) else value
        if not isinstance(uuid_bytes, bytes | bytearray) or len(uuid_bytes) != 16:
            raise ValueError("16 bytes are needed")
        return bytes(uuid_bytes)
    raise ValueError("unknown header type")
