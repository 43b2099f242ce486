"""Mutations: small composable values that reshape a stream AND say what it now means.

A `Mutation` is a frozen dataclass registered by name (`@mutation("drop-field")`). Applying one to
a `Stream` (the events or reads of a response plus its expected `Outcome`) returns the new stream
with its expectation: meaning-preserving mutations keep it, meaning-changing ones state the change
(a cut keeps only the calls final before the cut and expects `State.CUT`, ...). A mutation that
cannot apply to a stream raises `NotApplicable`; the scenario is then skipped for that stream.

Mutations are grouped by what they touch: `identity` (id, index, name, type, item id),
`fragments` (argument pieces, packing, interleaving), `termination` (finish, sentinel, cuts,
errors), `surroundings` (text, reasoning, usage, pings, duplicate starts) and `wire` (bytes and
reads). User code registers its own with the same decorator, or through the entry point group
`toolstream.mutations` (each entry point names a module to import).
"""

from __future__ import annotations

import dataclasses
import fnmatch
import functools
import importlib
import random
import types
import typing
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any, ClassVar, TypeVar, cast

from harness.cassettes.model import Chunk, Request, Response
from harness.cassettes.outcome import Outcome
from harness.errors import MutationError, NotApplicable
from harness.registry import Registry
from harness.wire.codecs import WireEvent, decode_all
from harness.wire.codecs.sse import SSECodec
from harness.wire.dialects import Dialect, Event, parse_all

__all__ = [
    "Level",
    "Meaning",
    "Mutation",
    "Quirk",
    "Stream",
    "build",
    "evolve",
    "get",
    "mutation",
    "names",
    "registry",
]


class Meaning(StrEnum):
    PRESERVING = "preserving"  # a correct accumulator reaches the same outcome
    CHANGING = "changing"  # the mutation states the new expected outcome


class Level(StrEnum):
    EVENT = "event"  # works on dialect events
    WIRE = "wire"  # works on bytes and how they are split into reads


_T = TypeVar("_T")
# Per dataclass: the fields `__init__` takes, the others with how each is made, the names taken.
_PLANS: dict[type, tuple[tuple[str, ...], tuple[tuple[str, Any], ...], frozenset[str]]] = {}


def evolve(obj: _T, **changes: Any) -> _T:
    """`dataclasses.replace(obj, **changes)` for a dataclass without `__post_init__` (a `Stream`,
    an `Outcome`), without running `__init__`: a third of the cost, paid for nearly every step of
    every case. A field not taken by `__init__` is made afresh, as `replace` does."""
    cls = type(obj)
    plan = _PLANS.get(cls)
    if plan is None:
        if hasattr(cls, "__post_init__"):
            return cast(_T, replace(cast(Any, obj), **changes))
        every = dataclasses.fields(cast(Any, cls))
        taken = tuple(f.name for f in every if f.init)
        made = tuple((f.name, f.default_factory if f.default is dataclasses.MISSING else f.default)
                     for f in every if not f.init)  # fmt: skip
        plan = _PLANS[cls] = (taken, made, frozenset(taken))
    taken, made, names = plan
    if not changes.keys() <= names:
        raise TypeError(f"{cls.__name__} has no field {sorted(changes.keys() - names)[0]!r} to change")
    new = object.__new__(cls)
    put = object.__setattr__  # frozen: what the generated __init__ uses too
    for name in taken:
        put(new, name, changes[name] if name in changes else getattr(obj, name))
    for name, how in made:
        put(new, name, how() if callable(how) else how)
    return new


@dataclass(frozen=True, slots=True)
class Stream:
    """One response as mutations see it: events (always), the exact reads when a wire mutation
    fixed them (None: each event is one read), how it ended, and what it must mean."""

    dialect: Dialect
    events: tuple[Event, ...]
    expected: Outcome
    reads: tuple[bytes, ...] | None = None
    complete: bool = True
    error: str | None = None
    error_type: str | None = None
    newline: str = "\n"  # the SSE line end events are rendered with
    space: bool = True  # whether SSE fields are written `data: x` (True) or `data:x`
    open_after: float = 0.0  # seconds the connection stays open, silent, after the last read
    # Reads not cut yet (`with_split`): made from the body when first asked for, since an
    # event-level accumulator never reads them; only with `reads` None. Not compared.
    split: Callable[[], tuple[bytes, ...]] | None = field(default=None, compare=False, repr=False)
    # What this very stream rendered or decoded once (`pieces`, `body`, ...): never copied by
    # `replace`, so a changed stream starts empty; not compared.
    memo: dict[str, Any] = field(default_factory=dict, init=False, compare=False, repr=False)
    # The request this stream answers (None: not known). A mutation adds nothing the request did not
    # ask for (`unrequested`): no second choice for an `n=1` request, no usage nobody asked for.
    request: Request | None = field(default=None, compare=False, repr=False)

    @classmethod
    def of(
        cls, response: Response, dialect: Dialect, expected: Outcome, request: Request | None = None
    ) -> Stream:
        """The stream of a recorded response (the answer to `request`), keeping its reads exactly."""
        reads = tuple(chunk.data for chunk in response.chunks)
        events = tuple(parse_all(dialect, decode_all(dialect.codec(), reads)))
        newline = _sniff_newline(b"".join(reads[:4])) if dialect.codec_name == "sse" else "\n"
        return cls(
            dialect=dialect,
            events=events,
            expected=expected,
            reads=reads,
            complete=response.complete,
            error=response.error,
            error_type=response.error_type,
            newline=newline,
            request=request,
        )

    def unrequested(self, events: Sequence[Event]) -> list[str]:
        """The request rules (`Dialect.request_rules`) that `events` break and this stream did not:
        what a mutation that made them would add without being asked."""
        rules = self.dialect.request_rules
        had = {v.code for v in rules(self.request, self.events)}
        return sorted({v.code for v in rules(self.request, events)} - had)

    def with_events(self, events: Sequence[Event], expected: Outcome | None = None) -> Stream:
        """New events (rendered one per read from now on), and the expectation when it changed.
        Sequence numbers are counted anew (`Editing.resequence`): inserted, dropped or moved events
        keep them strictly increasing; a final summary of the items (Responses `response.output`) is
        rebuilt from the items streamed (`Editing.restate`), so it never contradicts them."""
        return evolve(
            self,
            events=tuple(self.dialect.resequence(self.dialect.restate(events))),
            reads=None,
            split=None,
            expected=self.expected if expected is None else expected,
        )

    def with_reads(
        self, reads: Sequence[bytes], expected: Outcome | None = None, *, same_events: bool = False
    ) -> Stream:
        """New reads; the events are decoded from them so later steps see what a client would
        (`same_events`: the bytes are only split differently, so the events stay as they are)."""
        events = (
            self.events
            if same_events
            else tuple(parse_all(self.dialect, decode_all(self.dialect.codec(), reads)))
        )
        out = evolve(
            self,
            reads=tuple(reads),
            split=None,
            events=events,
            expected=self.expected if expected is None else expected,
        )
        if same_events and "pieces" in self.memo:  # the same events render the same
            out.memo["pieces"] = self.memo["pieces"]
        return out

    def with_split(self, split: Callable[[bytes], Sequence[bytes]]) -> Stream:
        """The same events and bytes read in other pieces, `split(body)`, cut only when the reads
        or the body are first asked for (`current_reads`): what `with_reads(split(self.body()),
        same_events=True)` gives, without rendering the events for an event-level accumulator."""
        out = evolve(self, reads=None, split=lambda: tuple(split(self.body())))
        if "pieces" in self.memo:
            out.memo["pieces"] = self.memo["pieces"]
        return out

    @property
    def fixed_reads(self) -> bool:
        """Whether the reads are set apart from the events (False: one read per event)."""
        return self.reads is not None or self.split is not None

    def encode(self, wire: Sequence[WireEvent]) -> bytes:
        """Encode wire events the way this stream renders them."""
        if self.dialect.codec_name == "sse":
            return SSECodec(newline=self.newline, space=self.space).encode(wire)
        return self.dialect.codec().encode(wire)

    def pieces(self) -> tuple[bytes, ...]:
        """Each event encoded on its own, the way this stream renders it (worked out once)."""
        found = self.memo.get("pieces")
        if found is None:
            render, encode = self.dialect.render, self.encode
            found = self.memo["pieces"] = tuple(encode([render(event)]) for event in self.events)
        return cast(tuple[bytes, ...], found)

    def current_reads(self) -> tuple[bytes, ...]:
        """The reads a client receives: the fixed ones, or one read per event."""
        if self.reads is not None:
            return self.reads
        if self.split is not None:
            found = self.memo.get("reads")
            if found is None:
                found = self.memo["reads"] = self.split()
            return cast(tuple[bytes, ...], found)
        return self.pieces()

    def body(self) -> bytes:
        """The bytes a client receives, whole (worked out once)."""
        found = self.memo.get("body")
        if found is None:
            found = self.memo["body"] = b"".join(self.current_reads())
        return cast(bytes, found)

    def response(self, like: Response) -> Response:
        """A `Response` carrying this stream, with status and headers taken from `like`."""
        return Response(
            status=like.status,
            headers=dict(like.headers),
            chunks=[Chunk(data) for data in self.current_reads()],
            complete=self.complete,
            error=self.error,
            error_type=self.error_type,
            open_after=self.open_after,
        )


def _sniff_newline(body: bytes) -> str:
    cr = body.find(b"\r")
    if cr < 0:
        return "\n"
    return "\r\n" if body[cr + 1 : cr + 2] == b"\n" else "\r"


@dataclass(frozen=True, slots=True)
class Quirk:
    """A real deviation from a protocol: its STREAM-QUIRKS.md class and where it was seen."""

    id: str
    source: str

    def __str__(self) -> str:
        return f"{self.id} ({self.source})"


@dataclass(frozen=True)
class Mutation(ABC):
    """A stream transformation with its parameters. Subclasses are frozen dataclasses whose
    docstring names the real shape they imitate (a STREAM-QUIRKS.md class id).

    A mutation's result is a stream the provider could send (its dialect's `invariants` find
    nothing new), unless it imitates a real deviation: then `imitates` names the quirks with their
    sources and `breaks` the invariant codes it may break (`fnmatch` patterns such as
    `*.block-overlap`, one per dialect rule)."""

    name: ClassVar[str] = ""
    level: ClassVar[Level] = Level.EVENT
    meaning: ClassVar[Meaning] = Meaning.PRESERVING
    codecs: ClassVar[tuple[str, ...]] = ("sse", "ndjson", "eventstream", "websocket")
    imitates: ClassVar[tuple[Quirk, ...]] = ()
    breaks: ClassVar[tuple[str, ...]] = ()

    def declares(self, code: str) -> bool:
        """Whether this mutation says it breaks the invariant `code` (`anthropic.block-overlap`)."""
        return any(fnmatch.fnmatchcase(code, pattern) for pattern in self.breaks)

    @abstractmethod
    def apply(self, stream: Stream, rng: random.Random) -> Stream:
        """The mutated stream with its expectation; raises `NotApplicable` when there is nothing to do."""

    def sweep(self, stream: Stream, rng: random.Random) -> list[tuple[str, Mutation]] | None:
        """For a sweep step (cut at every event ...): one `(label, mutation)` per point, else None."""
        return None

    def params(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    def describe(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params().items())
        return f"{self.name}({args})"

    def check_codec(self, stream: Stream) -> None:
        if stream.dialect.codec_name not in self.codecs:
            raise NotApplicable(f"{self.name} does not apply to {stream.dialect.codec_name} streams")


M = TypeVar("M", bound=type[Mutation])

_REGISTRY: dict[str, type[Mutation]] = {}
_BUILTIN_MODULES = ("identity", "fragments", "termination", "surroundings", "wire", "producers")
_loaded = False
REGISTERED = Registry("toolstream.mutations", what="mutation", error=MutationError)


def mutation(name: str) -> Callable[[M], M]:
    """Register a mutation class under `name` (also used by user code and plugins)."""

    def register(cls: M) -> M:
        if not dataclasses.is_dataclass(cls):
            raise MutationError(f"mutation {name!r}: {cls.__name__} must be a dataclass")
        existing = _REGISTRY.get(name)
        if existing is not None and existing.__qualname__ != cls.__qualname__:
            raise MutationError(f"mutation {name!r} is already registered by {existing.__qualname__}")
        cls.name = name
        _REGISTRY[name] = cls
        return cls

    return register


def registry() -> dict[str, type[Mutation]]:
    """Every registered mutation: built-ins, then entry points of group `toolstream.mutations`."""
    global _loaded
    if not _loaded:
        _loaded = True
        for module in _BUILTIN_MODULES:
            importlib.import_module(f"{__name__}.{module}")
        REGISTERED.load_all()  # each registers itself with `@mutation` on import
    return _REGISTRY


def names() -> list[str]:
    return sorted(registry())


def get(name: str) -> type[Mutation]:
    try:
        return registry()[name]
    except KeyError:
        raise MutationError(f"unknown mutation {name!r}; see `toolstream scenarios --mutations`") from None


def build(name: str, params: Mapping[str, Any] | None = None) -> Mutation:
    """A mutation from its name and plain parameters, checking every parameter's name and type."""
    cls = get(name)
    params = dict(params or {})
    fields = {f.name: f for f in dataclasses.fields(cls)}
    for key in params:
        if key not in fields:
            known = ", ".join(fields) or "none"
            raise MutationError(f"{name}: unknown parameter {key!r} (parameters: {known})")
    hints = _hints(cls)
    for key, value in params.items():
        if not _fits(value, hints.get(key, Any)):
            raise MutationError(f"{name}: parameter {key!r} must be {_type_name(hints[key])}, not {value!r}")
    try:
        return cls(**params)
    except (TypeError, ValueError) as exc:
        raise MutationError(f"{name}: {exc}") from None


@functools.lru_cache(maxsize=256)
def _hints(cls: type[Mutation]) -> dict[str, Any]:
    """A mutation class's parameter types, resolved once (resolving costs more than the check)."""
    return typing.get_type_hints(cls)


def _fits(value: Any, hint: Any) -> bool:
    if hint is Any:
        return True
    origin = typing.get_origin(hint)
    if origin is typing.Literal:
        return value in typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return any(_fits(value, arg) for arg in typing.get_args(hint))
    if origin is tuple:
        return isinstance(value, (list, tuple))
    if hint is type(None):
        return value is None
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if isinstance(hint, type):
        return isinstance(value, hint)
    return True


def _type_name(hint: Any) -> str:
    if typing.get_origin(hint) is typing.Literal:
        return "one of " + ", ".join(repr(a) for a in typing.get_args(hint))
    return getattr(hint, "__name__", str(hint))
