"""Provider dialects: one module each; this module finds them and runs a response through one.

The built-in dialects are modules of this package; another package adds one by naming a `Dialect`
(an instance or a class) under the entry-point group `toolstream.dialects`:

    [project.entry-points."toolstream.dialects"]
    my-provider = "my_package.dialect:DIALECT"
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import importlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Final, TypeVar

from harness.cassettes.model import Request, Response
from harness.cassettes.outcome import Outcome
from harness.errors import CodecError, DialectError, did_you_mean
from harness.registry import Registry
from harness.wire.codecs import WireEvent, codec_for_media_type, decode_all, get_codec, sniff_newline
from harness.wire.codecs.sse import SSECodec
from harness.wire.dialects import base
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
    Shape,
    Validation,
    Violation,
    Wire,
)
from harness.wire.dialects.requesting import Requesting, StandingIn

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

__all__ = [
    "ENTRY_POINT_GROUP",
    "MISSING",
    "REGISTERED",
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
    "Shape",
    "StandingIn",
    "Validation",
    "Violation",
    "Wire",
    "body_of",
    "check_recorded",
    "detect",
    "events_of",
    "finished",
    "get",
    "guess",
    "id_style",
    "id_style_names",
    "names",
    "parse_all",
    "recognise",
    "reference_accumulator",
    "reference_outcome",
    "registered",
    "stored_outcome",
    "tool_call_finishes",
]

ENTRY_POINT_GROUP: Final = "toolstream.dialects"
# Built-in name -> module in this package with a `DIALECT`. Detection tries the most specific URL
# shapes first, registered dialects next, and the generic OpenAI chat shape last.
_BUILTINS: Final = {
    "ai-sdk-ui": "ai_sdk_ui",
    "ag-ui": "ag_ui",
    "openai-realtime": "openai_realtime",
    "openai-responses": "openai_responses",
    "anthropic": "anthropic_messages",
    "gemini": "gemini",
    "bedrock-converse": "bedrock_converse",
    "ollama": "ollama",
    "cohere": "cohere",
    "openai-chat": "openai_chat",
}
_GENERIC: Final = "openai-chat"
# Read once: detection runs for every case.
REGISTERED: Final = Registry(ENTRY_POINT_GROUP, what="dialect", error=DialectError, builtins=_BUILTINS)
_loaded: dict[str, Dialect] = {}


def registered() -> dict[str, EntryPoint]:
    """The dialects other packages register under the entry-point group `toolstream.dialects`."""
    return REGISTERED.entries()


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
    found = REGISTERED.load(name)
    if isinstance(found, type) and issubclass(found, Dialect):
        found = found()
    if not isinstance(found, Dialect):
        raise DialectError(f"dialect {name!r}: {entry.value} is not a Dialect (nor a Dialect class)")
    if found.name != name:
        raise DialectError(f"dialect {name!r}: {entry.value} calls itself {found.name!r}")
    return found


@functools.cache
def tool_call_finishes() -> frozenset[str]:
    """Every dialect's word for "the turn ended to let the client run tools" (`tool_calls`,
    `tool_use`, `TOOL_CALL` ...): the finish an agent checks before it runs the calls."""
    words = (get(name).finish_reasons.get(Finish.TOOL_CALLS) for name in names())
    return frozenset(word for word in words if word)


@functools.cache
def finish_words() -> frozenset[str]:
    """Every finish reason some dialect's protocol documents (`stop`, `end_turn`, `tool_use` ...)."""
    return frozenset().union(*(get(name).finish_vocabulary for name in names()))


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
    except (CodecError, DialectError):
        return None


def finished(response: Response, dialect: str | Dialect) -> bool:
    """Whether a recorded body ends as the dialect ends a response (its terminal event)."""
    try:
        return get(dialect).is_terminal(events_of(response, dialect))
    except (CodecError, DialectError):
        return False


def events_of(response: Response, dialect: str | Dialect) -> list[Event]:
    """Decode a recorded response body, read by read, into dialect events, checked as a recording
    (`check_recorded`): a hostile body is one `DialectError` naming the event and the field."""
    d = get(dialect)
    events = parse_all(d, decode_all(d.codec(), (chunk.data for chunk in response.chunks)))
    check_recorded(d, events, complete=response.complete)
    return events


def parse_all(d: Dialect, wire: Iterable[WireEvent]) -> list[Event]:
    """`d.parse` of each wire event; one it refuses (JSON nested too deep) is named by position."""
    out = []
    for position, event in enumerate(wire):
        try:
            out.append(d.parse(event))
        except DialectError as exc:
            raise DialectError(f"event {position}: {exc}") from None
    return out


# The JSON types a recording may give each fragment field: what the oracle understands, quirks
# included (an index or id of null, arguments as an object, B8). Anything else is no recording.
_FIELD_TYPES: Final[dict[Field, tuple[type, ...]]] = {
    Field.ID: (str, type(None)),
    Field.NAME: (str, type(None)),
    Field.TYPE: (str, type(None)),
    Field.ITEM_ID: (str, type(None)),
    Field.INDEX: (int, type(None)),
    Field.ARGS: (str, dict, list, type(None)),  # Gemini: partialArgs, a list
}
_BARE_KINDS: Final = frozenset({Kind.SENTINEL, Kind.COMMENT})


def check_recorded(d: Dialect, events: Sequence[Event], *, complete: bool = True) -> None:
    """Refuse a recorded stream whose events the dialect cannot read: data that is not a JSON
    object where the provider always sends one (a cut stream's last event aside), a field of a
    JSON type the dialect does not read (`delta.type: {}`, a finish reason that is an array), as
    one `DialectError` naming the event's position and the field. Each role reads its fields with
    `base.field`, so running the readers once over the recording is the type check."""
    last = len(events) - 1
    for position, event in enumerate(events):
        with _at(position):
            kinds = d.kinds(event)
            bare = not isinstance(event.payload, dict) and not event.wire.is_comment
            if bare and not kinds & _BARE_KINDS and not (position == last and not complete):
                raise DialectError(f"data: must be a JSON object, not {base.json_type(event.payload)}")
            reason = d.finish_reason(event)
            if reason is not MISSING and not isinstance(reason, str | None):
                raise DialectError(f"finish reason: must be a string or null, not {base.json_type(reason)}")
    fragments = _located(events, d.fragments)
    for fragment in fragments:
        with _at(fragment.event):
            event = events[fragment.event]
            for name, types in _FIELD_TYPES.items():
                value = d.get(event, fragment.slot, name)
                if value is not MISSING and type(value) not in types:
                    raise DialectError(f"tool call {name}: must not be {base.json_type(value)}")
    _located(events, d.invariants)
    acc = d.accumulator()
    for position, event in enumerate(events):
        with _at(position):
            acc.feed(event)


_T = TypeVar("_T")


def _located(events: Sequence[Event], read: Callable[[Sequence[Event]], _T]) -> _T:
    """`read(events)`; a `DialectError` it raises is named by the first event whose prefix of the
    stream raises it too (halving: readers are per event, so the prefixes that fail are a tail)."""
    try:
        return read(events)
    except DialectError as exc:
        low, high = 0, len(events)  # the prefix of `high` events fails; of `low`, not known to
        while high - low > 1:
            middle = (low + high) // 2
            try:
                read(events[:middle])
            except DialectError:
                high = middle
            else:
                low = middle
        raise DialectError(f"event {high - 1}: {exc}") from None


@contextlib.contextmanager
def _at(position: int) -> Iterator[None]:
    try:
        yield
    except DialectError as exc:
        raise DialectError(f"event {position}: {exc}") from None


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
    d = get(dialect)
    acc = d.accumulator()
    for position, event in enumerate(parse_all(d, decode_all(d.codec(), (c.data for c in response.chunks)))):
        with _at(position):
            acc.feed(event)
    error = None if response.complete else (response.error or "stream cut")
    return acc.close(error)


def stored_outcome(response: Response, dialect: str | Dialect) -> Outcome:
    """The expectation a cassette stores for a response (synthesized, recorded or imported): the
    reference's without its parts, what a hand checks (calls, text, ending); the parts are the
    reference's again when the cassette is loaded (`harness.mutate.scenario.with_parts`)."""
    return dataclasses.replace(reference_outcome(response, dialect), parts=())
