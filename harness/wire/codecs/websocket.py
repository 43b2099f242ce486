"""WebSocket frames (RFC 6455, section 5) as a stream: what a server sends on an upgraded
connection, kept byte for byte, so each network read of a session is kept as it came.

Each message is one event: a text frame, or a text frame continued by continuation frames (a
fragmented message), gives its UTF-8 text as `data`; a binary message gives its bytes as Latin-1
text with `name` `binary`; a close frame is an event named `close` (its status code in `id`, its
reason as `data`). Ping and pong frames are control frames, not messages: kept in place as
`comment` `ping` / `pong` (their payload in `data`), as an SSE comment is. Frames may be masked
(what a client sends) or not (what a server sends). A frame cut off at the end of input is no
message (a client sees the connection closed): `close` drops it.

`encode` writes each event as one unmasked frame (FIN set); `fragment` splits a text message into
a text frame and continuation frames, the way a server may send a long message.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from harness.errors import CodecError
from harness.wire.codecs.base import WireEvent, new_event

CONTINUATION, TEXT, BINARY, CLOSE, PING, PONG = 0x0, 0x1, 0x2, 0x8, 0x9, 0xA
MAX_MESSAGE = 64 * 1024 * 1024  # a message larger than this is refused, not buffered


def frame(opcode: int, payload: bytes, *, fin: bool = True, mask: bytes | None = None) -> bytes:
    """One frame: unmasked (a server's) unless `mask` (4 bytes, a client's) is given."""
    head = bytearray([(0x80 if fin else 0) | opcode])
    size = len(payload)
    bit = 0x80 if mask is not None else 0
    if size < 126:
        head.append(bit | size)
    elif size < 1 << 16:
        head.append(bit | 126)
        head += struct.pack("!H", size)
    else:
        head.append(bit | 127)
        head += struct.pack("!Q", size)
    if mask is None:
        return bytes(head) + payload
    return bytes(head) + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


class WebSocketDecoder:
    """Incremental frame decoder: `feed` reads as they arrive, `close` at end of input."""

    __slots__ = ("_buffer", "_kind", "_parts")

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._parts: list[bytes] = []  # the frames of a fragmented message so far
        self._kind: int | None = None  # its opcode (text or binary)

    def feed(self, data: bytes) -> list[WireEvent]:
        self._buffer += data
        out: list[WireEvent] = []
        while True:
            parsed = self._frame()
            if parsed is None:
                return out
            fin, opcode, payload = parsed
            event = self._event(fin, opcode, payload)
            if event is not None:
                out.append(event)

    def close(self) -> list[WireEvent]:
        self._buffer, self._parts, self._kind = bytearray(), [], None
        return []

    def _frame(self) -> tuple[bool, int, bytes] | None:
        parsed = read_frame(self._buffer)
        if parsed is None:
            return None
        fin, opcode, payload, end = parsed
        del self._buffer[:end]
        return fin, opcode, payload

    def _event(self, fin: bool, opcode: int, payload: bytes) -> WireEvent | None:
        if opcode in (PING, PONG):
            return WireEvent(data=payload.decode("latin-1"), comment="ping" if opcode == PING else "pong")
        if opcode == CLOSE:
            code = str(struct.unpack_from("!H", payload)[0]) if len(payload) >= 2 else None
            return WireEvent(data=payload[2:].decode("utf-8", "replace"), name="close", id=code)
        if opcode in (TEXT, BINARY):
            if self._kind is not None:
                raise CodecError("WebSocket: a new message began inside a fragmented one")
            self._kind, self._parts = opcode, []
        elif opcode != CONTINUATION or self._kind is None:
            raise CodecError(f"WebSocket: unexpected frame opcode {opcode:#x}")
        self._parts.append(payload)
        if sum(map(len, self._parts)) > MAX_MESSAGE:
            raise CodecError(f"WebSocket message of more than {MAX_MESSAGE} bytes")
        if not fin:
            return None
        whole, kind = b"".join(self._parts), self._kind
        self._parts, self._kind = [], None
        if kind == BINARY:
            return WireEvent(data=whole.decode("latin-1"), name="binary")
        try:
            return new_event(whole.decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise CodecError(f"WebSocket text message is not UTF-8 at byte {exc.start}") from None


def read_frame(data: bytes | bytearray, at: int = 0) -> tuple[bool, int, bytes, int] | None:
    """The frame that starts at `at`: (FIN, opcode, payload unmasked, where it ends); None when
    `data` holds only part of it. A frame longer than `MAX_MESSAGE` raises `CodecError`."""
    if len(data) < at + 2:
        return None
    fin, opcode = bool(data[at] & 0x80), data[at] & 0x0F
    masked, size, head = bool(data[at + 1] & 0x80), data[at + 1] & 0x7F, at + 2
    if size == 126:
        if len(data) < at + 4:
            return None
        size, head = struct.unpack_from("!H", data, at + 2)[0], at + 4
    elif size == 127:
        if len(data) < at + 10:
            return None
        size, head = struct.unpack_from("!Q", data, at + 2)[0], at + 10
    if size > MAX_MESSAGE:
        raise CodecError(f"WebSocket frame of {size} bytes: more than {MAX_MESSAGE}")
    mask = b""
    if masked:
        if len(data) < head + 4:
            return None
        mask, head = bytes(data[head : head + 4]), head + 4
    if len(data) < head + size:
        return None
    payload = bytes(data[head : head + size])
    if masked:
        payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    return fin, opcode, payload, head + size


def split_frames(data: bytes) -> tuple[list[tuple[int, bytes]], bool]:
    """The whole frames at the start of `data`, each as (where it ends, its bytes), and whether
    bytes of a frame cut off follow them."""
    out: list[tuple[int, bytes]] = []
    at = 0
    while (parsed := read_frame(data, at)) is not None:
        out.append((parsed[3], data[at : parsed[3]]))
        at = parsed[3]
    return out, at < len(data)


def reframe(data: bytes, edit: Callable[[bytes], bytes]) -> bytes:
    """One whole frame with its payload edited: the same frame when the edit changes nothing,
    else written again (unmasked, as a server sends it) with its new length."""
    parsed = read_frame(data)
    if parsed is None:
        return data
    fin, opcode, payload, _ = parsed
    new = edit(payload)
    return data if new == payload else frame(opcode, new, fin=fin)


def _payload(event: WireEvent) -> tuple[int, bytes]:
    if event.comment in ("ping", "pong"):
        return (PING if event.comment == "ping" else PONG), event.data.encode("latin-1")
    if event.is_comment:
        raise CodecError("a WebSocket stream has no comments but pings and pongs")
    if event.name == "close":
        code = struct.pack("!H", int(event.id)) if event.id else b""
        return CLOSE, code + event.data.encode("utf-8")
    if event.name == "binary":
        return BINARY, event.data.encode("latin-1")
    try:
        return TEXT, event.data.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise CodecError(f"WebSocket text is not encodable as UTF-8 at character {exc.start}") from None


@dataclass(frozen=True, slots=True)
class WebSocketCodec:
    """Encode each event as one unmasked frame, as a server sends it."""

    name = "websocket"

    def decoder(self) -> WebSocketDecoder:
        return WebSocketDecoder()

    def encode(self, events: Iterable[WireEvent]) -> bytes:
        return b"".join(frame(*_payload(event)) for event in events)

    def fragment(self, event: WireEvent, size: int) -> bytes:
        """One text message as a text frame and continuation frames of at most `size` bytes."""
        opcode, payload = _payload(event)
        if opcode != TEXT or len(payload) <= size:
            return frame(opcode, payload)
        pieces = [payload[i : i + size] for i in range(0, len(payload), size)]
        return b"".join(
            frame(TEXT if n == 0 else CONTINUATION, piece, fin=n == len(pieces) - 1)
            for n, piece in enumerate(pieces)
        )
