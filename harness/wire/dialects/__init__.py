"""Provider dialects: one module each; this module finds them and runs a response through one.

The built-in dialects are modules of this package; another package adds one by naming a `Dialect`
(an instance or a class) under the entry-point group `toolstream.dialects`:

    [project.entry-points."toolstream.dialects"]
    my-provider = "my_package.dialect:DIALECT"
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from typing import TYPE_CHECKING, Final

from harness.cassettes.model import Request, Response
from harness.check.outcome import Outcome
from harness.errors import CodecError, DialectError, did_you_mean
from harness.wire.codecs import WireEvent, codec_for_media_type, decode_all, get_codec, sniff_newline
from harness.wire.codecs.sse import SSECodec
from harness.wire.dialects.base import (
    MISSING,
    Detection,
    Dialect,
    Editing,
    Event,
    Field,
    Finish,
    Fragment,
    IdStyle,
    Kind,
    Oracle,
    ReferenceAccumulator,
    Role,
    Validation,
    Violation,
    Wire,
)
from harness.wire.dialects.requesting import Requesting

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

__all__ = [
    "ENTRY_POINT_GROUP",
    "MISSING",
    "Detection",
    "Dialect",
    "Editing",
    "Event",
    "Field",
    "Finish",
    "Fragment",
    "IdStyle",
    "Kind",
    "Oracle",
    "ReferenceAccumulator",
    "Requesting",
    "Role",
    "Validation",
    "Violation",
    "Wire",
    "body_of",
    "detect",
    "events_of",
    "finished",
    "get",
    "guess",
    "id_style",
    "id_style_names",
    "names",
    "recognise",
    "reference_accumulator",
    "reference_outcome",
    "registered",
]

ENTRY_POINT_GROUP: Final = "toolstream.dialects"
# Built-in name -> module in this package with a `DIALECT`. Detection tries the most specific URL
# shapes first, registered dialects next, and the generic OpenAI chat shape last.
_BUILTINS: Final = {
    "openai-responses": "openai_responses",
    "anthropic": "anthropic_messages",
    "gemini": "gemini",
    "bedrock-converse": "bedrock_converse",
    "ollama": "ollama",
    "cohere": "cohere",
    "openai-chat": "openai_chat",
}
_GENERIC: Final = "openai-chat"
_registered: dict[str, EntryPoint] | None = None  # read once: detection runs for every case
_loaded: dict[str, Dialect] = {}


def entry_points(group: str) -> list[EntryPoint]:
    """`importlib.metadata.entry_points`, imported when first needed: it costs a fresh
    `serve-accumulator` child more than the rest of its start-up."""
    from importlib.metadata import entry_points as read

    return list(read(group=group))


def registered() -> dict[str, EntryPoint]:
    """The dialects other packages register under the entry-point group `toolstream.dialects`."""
    global _registered
    if _registered is None:
        found = {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}
        taken = sorted(set(found) & set(_BUILTINS))
        if taken:
            raise DialectError(f"entry points of {ENTRY_POINT_GROUP} reuse built-in dialect names: {taken}")
        _registered = found
    return _registered


def names() -> list[str]:
    return sorted([*_BUILTINS, *registered()])


def _in_detection_order() -> list[str]:
    specific = [name for name in _BUILTINS if name != _GENERIC]
    return [*specific, *registered(), _GENERIC]


def get(name: str | Dialect) -> Dialect:
    """A dialect by name (`openai-chat`, `anthropic`, ... or a registered one)."""
    if isinstance(name, Dialect):
        return name
    if name not in _loaded:
        _loaded[name] = _load(name)
    return _loaded[name]


def _load(name: str) -> Dialect:
    if name in _BUILTINS:
        dialect: Dialect = importlib.import_module(f"{__name__}.{_BUILTINS[name]}").DIALECT
        return dialect
    entry = registered().get(name)
    if entry is None:
        hint = did_you_mean(name, names()) or f"; known: {', '.join(names())}"
        raise DialectError(f"unknown dialect {name!r}{hint}")
    try:
        found = entry.load()
    except Exception as exc:
        raise DialectError(f"dialect {name!r}: its entry point {entry.value} failed to load: {exc}") from None
    if isinstance(found, type) and issubclass(found, Dialect):
        found = found()
    if not isinstance(found, Dialect):
        raise DialectError(f"dialect {name!r}: {entry.value} is not a Dialect (nor a Dialect class)")
    if found.name != name:
        raise DialectError(f"dialect {name!r}: {entry.value} calls itself {found.name!r}")
    return found


def id_style(name: str) -> IdStyle:
    """The id style a provider writes (`openai`, `anthropic`, `bedrock` ...), as its dialect says."""
    for dialect in names():
        style = get(dialect).id_styles.get(name)
        if style is not None:
            return style
    raise DialectError(f"unknown id style {name!r}; known: {', '.join(id_style_names())}")


def id_style_names() -> list[str]:
    return sorted(style for dialect in names() for style in get(dialect).id_styles)


def detect(request: Request) -> str | None:
    """The dialect a request speaks, from its URL path, headers and body; None when unsure."""
    for name in _in_detection_order():
        if get(name).matches(request):
            return name
    return None


def guess(events: Iterable[WireEvent]) -> str | None:
    """The dialect a bare stream's events look like (most events claimed); None when unsure or tied."""
    order = _in_detection_order()
    votes: dict[str, int] = dict.fromkeys(order, 0)
    parser = get(_GENERIC)  # every dialect decodes a wire event the same way
    for wire in events:
        if not wire.is_comment:
            event = parser.parse(wire)
            for name in order:
                votes[name] += get(name).claims(event)
    ranked = sorted(votes.items(), key=lambda kv: kv[1], reverse=True)
    if ranked[0][1] == 0 or ranked[0][1] == ranked[1][1]:
        return None
    return ranked[0][0]


def recognise(request: Request, response: Response) -> str | None:
    """The dialect of a recorded exchange: its request's (path, headers, body), else the one its
    streamed body looks like; never its host, so base-URL and loopback recordings get one too."""
    name = detect(request)
    if name is not None:
        return name
    codec = codec_for_media_type(response.content_type)
    if codec is None:
        return None
    try:
        return guess(decode_all(get_codec(codec), (chunk.data for chunk in response.chunks)))
    except CodecError:
        return None


def finished(response: Response, dialect: str | Dialect) -> bool:
    """Whether a recorded body ends as the dialect ends a response (its terminal event)."""
    try:
        return get(dialect).is_terminal(events_of(response, dialect))
    except CodecError:
        return False


def events_of(response: Response, dialect: str | Dialect) -> list[Event]:
    """Decode a recorded response body, read by read, into dialect events."""
    d = get(dialect)
    wire = decode_all(d.codec(), (chunk.data for chunk in response.chunks))
    return [d.parse(w) for w in wire]


def body_of(events: list[Event], dialect: str | Dialect, *, like: bytes | None = None) -> bytes:
    """Encode events back into a body; `like` is an original body whose SSE line ends to keep."""
    d = get(dialect)
    wire: list[WireEvent] = [d.render(e) for e in events]
    if d.codec_name == "sse" and like is not None:
        return SSECodec(newline=sniff_newline(like)).encode(wire)
    return d.codec().encode(wire)


def reference_accumulator(dialect: str | Dialect) -> ReferenceAccumulator:
    """A fresh reference accumulator of a dialect: an event-level accumulator (feed, close(error))
    that your own can delegate to or be compared with."""
    return get(dialect).accumulator()


def reference_outcome(response: Response, dialect: str | Dialect) -> Outcome:
    """What the reference accumulator makes of a recorded response."""
    acc = get(dialect).accumulator()
    for event in events_of(response, dialect):
        acc.feed(event)
    error = None if response.complete else (response.error or "stream cut")
    return acc.close(error)
