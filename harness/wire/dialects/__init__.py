"""Provider dialects: one module each; this module finds them and runs a response through one."""

from __future__ import annotations

import importlib
from collections.abc import Iterable

from harness.cassettes.format import Request, Response
from harness.check.outcome import Outcome
from harness.errors import DialectError
from harness.wire.codecs import WireEvent, decode_all, sniff_newline
from harness.wire.codecs.sse import SSECodec
from harness.wire.dialects.base import (
    MISSING,
    Dialect,
    Event,
    Field,
    Fragment,
    Kind,
    ReferenceAccumulator,
    Role,
)

__all__ = [
    "MISSING",
    "Dialect",
    "Event",
    "Field",
    "Fragment",
    "Kind",
    "ReferenceAccumulator",
    "Role",
    "body_of",
    "detect",
    "events_of",
    "get",
    "guess",
    "names",
    "reference_outcome",
]

# Detection tries these in order: the most specific URL shapes first, the generic OpenAI chat last.
_MODULES = {
    "openai-responses": "openai_responses",
    "anthropic": "anthropic_messages",
    "gemini": "gemini",
    "bedrock-converse": "bedrock_converse",
    "ollama": "ollama",
    "cohere": "cohere",
    "openai-chat": "openai_chat",
}
_loaded: dict[str, Dialect] = {}


def names() -> list[str]:
    return sorted(_MODULES)


def get(name: str | Dialect) -> Dialect:
    """A dialect by name (`openai-chat`, `anthropic`, ...)."""
    if isinstance(name, Dialect):
        return name
    if name not in _MODULES:
        raise DialectError(f"unknown dialect {name!r}; known: {', '.join(names())}")
    if name not in _loaded:
        module = importlib.import_module(f"{__name__}.{_MODULES[name]}")
        _loaded[name] = module.DIALECT
    return _loaded[name]


def detect(request: Request) -> str | None:
    """The dialect a request speaks, from its URL path, headers and body; None when unsure."""
    for name in _MODULES:
        if get(name).matches(request):
            return name
    return None


def guess(events: Iterable[WireEvent]) -> str | None:
    """The dialect a bare stream's events look like (most events claimed); None when unsure or tied."""
    votes: dict[str, int] = dict.fromkeys(_MODULES, 0)
    parser = get("openai-chat")  # every dialect decodes a wire event the same way
    for wire in events:
        if wire.comment is None:
            event = parser.parse(wire)
            for name in _MODULES:
                votes[name] += get(name).claims(event)
    ranked = sorted(votes.items(), key=lambda kv: kv[1], reverse=True)
    if ranked[0][1] == 0 or ranked[0][1] == ranked[1][1]:
        return None
    return ranked[0][0]


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


def reference_outcome(response: Response, dialect: str | Dialect) -> Outcome:
    """What the reference accumulator makes of a recorded response."""
    acc = get(dialect).accumulator()
    for event in events_of(response, dialect):
        acc.feed(event)
    error = None if response.complete else (response.error or "stream cut")
    return acc.close(error)
