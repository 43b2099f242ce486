"""The contract every wire codec keeps: bytes in any chunking -> `WireEvent`s, and back."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

# An AWS eventstream header: (name, wire type code, value). Kept typed so frames re-encode exactly.
EventHeader = tuple[str, int, object]


@dataclass(frozen=True, slots=True)
class WireEvent:
    """One event as the wire framed it, before any provider meaning is given to it.

    - SSE: `data` is the joined `data:` lines, `name` the `event:` field, `id`/`retry` as sent;
      a comment line becomes an event of its own with `comment` set, and a block without `data:`
      lines (`event: ping`, `retry: 10000`) one with `block` set to its lines: neither is an event
      to a WHATWG client, both are kept so round trips are exact.
    - NDJSON: `data` is one line without its line end.
    - AWS eventstream: `data` is the payload (UTF-8, surrogate-escaped), `name` the `:event-type`
      (or `:exception-type`) header, `headers` every header in wire order.
    """

    data: str = ""
    name: str | None = None
    id: str | None = None
    retry: int | None = None
    comment: str | None = None
    headers: tuple[EventHeader, ...] = ()
    block: str | None = None

    @property
    def is_comment(self) -> bool:
        """Not an event, only bytes kept in place: an SSE comment, or a block without data."""
        return self.comment is not None or self.block is not None


class _Unfrozen:
    """`WireEvent`'s slot layout without its frozen `__setattr__`: filled with plain slot stores,
    then turned into a `WireEvent` by `__class__` assignment (allowed between classes whose slots
    are the same). A frozen dataclass's `__init__` pays an `object.__setattr__` call per field, most
    of the cost of decoding a typical event; this makes the same object about four times faster.
    """

    __slots__ = getattr(WireEvent, "__slots__", ())

    def __init__(
        self,
        data: str = "",
        name: str | None = None,
        id: str | None = None,
        retry: int | None = None,
        comment: str | None = None,
        headers: tuple[EventHeader, ...] = (),
        block: str | None = None,
    ) -> None:
        self.data = data
        self.name = name
        self.id = id
        self.retry = retry
        self.comment = comment
        self.headers = headers
        self.block = block
        self.__class__ = WireEvent  # type: ignore[assignment]


def _event_constructor() -> Callable[..., WireEvent]:
    """`_Unfrozen` when it builds exactly what `WireEvent(...)` does, else `WireEvent` itself
    (should `WireEvent` change shape, decoders stay right, only slower)."""
    args = ("d", "n", "i", 7, "c", (("h", 7, "v"),), "b")
    try:
        made = _Unfrozen(*args)
    except (TypeError, AttributeError):  # layouts differ: __class__ cannot be assigned
        return WireEvent
    same = type(made) is WireEvent and made == WireEvent(*args)
    return _Unfrozen if same else WireEvent  # type: ignore[return-value]


new_event: Callable[..., WireEvent] = _event_constructor()
"""`WireEvent(data, name, id, retry, comment, headers, block)` by position, built faster."""


class Decoder(Protocol):
    """Incremental: feed bytes split anywhere, get whole events out."""

    def feed(self, data: bytes) -> list[WireEvent]: ...

    def close(self) -> list[WireEvent]:
        """End of input: return what a clean end of stream completes, or raise `CodecError`."""
        ...


class Codec(Protocol):
    name: str

    def decoder(self) -> Decoder: ...

    def encode(self, events: Iterable[WireEvent]) -> bytes: ...


def decode_all(codec: Codec, chunks: Iterable[bytes]) -> list[WireEvent]:
    """Decode a whole body given as its network reads."""
    decoder = codec.decoder()
    events: list[WireEvent] = []
    for chunk in chunks:
        events.extend(decoder.feed(chunk))
    events.extend(decoder.close())
    return events
