"""The contract every wire codec keeps: bytes in any chunking -> `WireEvent`s, and back."""

from __future__ import annotations

from collections.abc import Iterable
from itertools import repeat
from typing import NamedTuple, Protocol

# An AWS eventstream header: (name, wire type code, value). Kept typed so frames re-encode exactly.
EventHeader = tuple[str, int, object]


class WireEvent(NamedTuple):
    """One event as the wire framed it, before any provider meaning is given to it.

    - SSE: `data` is the joined `data:` lines, `name` the `event:` field, `id`/`retry` as sent;
      a comment line becomes an event of its own with `comment` set, and a block without `data:`
      lines (`event: ping`, `retry: 10000`) one with `block` set to its lines: neither is an event
      to a WHATWG client, both are kept so round trips are exact.
    - NDJSON: `data` is one line without its line end.
    - AWS eventstream: `data` is the payload (UTF-8, surrogate-escaped), `name` the `:event-type`
      (or `:exception-type`) header, `headers` every header in wire order.

    Immutable, and a named tuple rather than a frozen dataclass: a decoder builds one per event,
    and a tuple is built in C (`data_events`), where a frozen dataclass pays an `object.__setattr__`
    call per field. Copy one with changes by `event._replace(data=...)`.
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


_new_tuple = tuple.__new__


def new_event(
    data: str = "",
    name: str | None = None,
    id: str | None = None,
    retry: int | None = None,
    comment: str | None = None,
    headers: tuple[EventHeader, ...] = (),
    block: str | None = None,
) -> WireEvent:
    """`WireEvent(data, name, id, retry, comment, headers, block)`, built without its generated
    `__new__`'s second call."""
    return _new_tuple(WireEvent, (data, name, id, retry, comment, headers, block))


def data_events(datas: Iterable[str]) -> list[WireEvent]:
    """`[WireEvent(data=d) for d in datas]`, in one C loop: most of decoding a typical stream."""
    none = repeat(None)
    fields = zip(datas, none, none, none, none, repeat(()), none)
    return list(map(_new_tuple, repeat(WireEvent), fields))


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
