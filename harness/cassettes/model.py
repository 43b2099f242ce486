"""The cassette model: plain data, no storage (that is `harness.cassettes.format`).

Apart from the YAML reader and writer, so what only handles recorded bytes (a `serve-accumulator`
child, the codecs, the dialects) does not load them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from pathlib import Path

    from harness.cassettes.outcome import Outcome

__all__ = [
    "SOURCE_KINDS",
    "VERSION",
    "Cassette",
    "Chunk",
    "Interaction",
    "Request",
    "Response",
    "Source",
    "header",
]

VERSION = 1
SOURCE_KINDS = ("recorded", "synthesized")


@dataclass(slots=True)
class Chunk:
    """One network read, as it arrived, with its time since the response began."""

    data: bytes
    offset_ms: float | None = None


@dataclass(slots=True)
class Request:
    method: str
    url: str
    headers: dict[str, str] = field(default_factory=dict)
    body: Any = None  # a mapping (or list) when the body was JSON, else text, None when empty


@dataclass(slots=True)
class Response:
    status: int
    headers: dict[str, str] = field(default_factory=dict)
    chunks: list[Chunk] = field(default_factory=list)
    complete: bool = True
    error: str | None = None  # what the client saw when the stream was cut
    error_type: str | None = None  # the transport exception's class name, to raise the same kind on replay
    # Seconds the connection stays open, sending nothing, after the last read, before it ends as
    # `complete` says (a server that holds a stream open after an unterminated last event).
    open_after: float = 0.0

    @property
    def body(self) -> bytes:
        return b"".join(chunk.data for chunk in self.chunks)

    @property
    def content_type(self) -> str | None:
        return header(self.headers, "content-type")


# The classes of expectation a cassette may declare (harness.oracle.expectation.CaseClass).
CASE_CLASSES = ("spec", "quirk", "policy")


@dataclass(frozen=True, slots=True)
class Declared:
    """A cassette's own word on what its expectation rests on (`case_class`: spec, quirk or
    policy) and why. A case written as a cassette (a reproduction, `toolstream mutate`) keeps its
    class this way, so it replays judged as the case was: a quirk stays a quirk, and a policy
    case (a warning) does not come back as a spec failure."""

    case_class: str
    reason: str


@dataclass(slots=True)
class Interaction:
    request: Request
    response: Response
    expected: Outcome | None = None  # what a correct accumulator makes of this response
    declared: Declared | None = None  # the class of that expectation, when not the protocol's


@dataclass(slots=True)
class Source:
    kind: Literal["recorded", "synthesized"]
    provenance: str


@dataclass(slots=True)
class Cassette:
    name: str
    source: Source
    interactions: list[Interaction] = field(default_factory=list)
    dialect: str | None = None
    version: int = VERSION
    path: Path | None = field(default=None, compare=False)


def header(headers: Mapping[str, str], name: str) -> str | None:
    """Case-insensitive header lookup."""
    lowered = name.lower()
    for key, value in headers.items():
        if key.lower() == lowered:
            return value
    return None
