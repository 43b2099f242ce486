"""What every provider dialect knows, split by role, and the data those roles speak in.

A `Dialect` is five small roles at once: `Wire` turns `WireEvent`s into `Event`s (the decoded
payload plus the wire event it came from) and back; `Detection` tells which dialect a request or
a bare stream speaks; `Oracle` says what each event is (`kinds`) and builds the reference
accumulator; `Validation` states the protocol's invariants as a check over an event sequence;
`Editing` exposes tool-call fragments, the provider's vocabulary and event builders to mutations.
A dialect that can ask its provider for a stream also has the `Requesting` role (`requesting.py`).
"""

from __future__ import annotations

import copy
import json
import re
import string
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import TYPE_CHECKING, Any, ClassVar, Final, NamedTuple, cast

from harness import bounded
from harness.cassettes.model import Request
from harness.cassettes.outcome import Outcome
from harness.errors import DialectError
from harness.wire.codecs import Codec, WireEvent, get_codec

if TYPE_CHECKING:
    import random  # only a type here: the mutations that draw ids import it


@dataclass(frozen=True, slots=True)
class Event:
    """A wire event with its payload decoded: JSON when the data is JSON, else the raw text
    (`[DONE]`); None for an SSE comment or block without data. Treat `payload` as immutable: edit
    a deep copy and use `with_payload`, which marks the event for re-serialisation."""

    wire: WireEvent
    payload: Any
    edited: bool = False

    @property
    def name(self) -> str | None:
        return self.wire.name

    def with_payload(self, payload: Any) -> Event:
        return Event(self.wire, payload, True)  # not `replace`: paid on every edit

    def with_name(self, name: str | None) -> Event:
        # An eventstream frame names itself in its `:event-type` header too: keep the two in step.
        headers = tuple((h, t, name if h == ":event-type" else v) for h, t, v in self.wire.headers)
        return replace(self, wire=self.wire._replace(name=name, headers=headers))


_ATOMS = (str, int, float, bool, type(None))


def copy_json(value: Any) -> Any:
    """A deep copy of decoded JSON (dicts, lists, atoms), several times faster than
    `copy.deepcopy`, which dialects pay on every edited payload; anything else is deep-copied."""
    kind = type(value)
    if kind is dict:
        return {key: item if type(item) in _ATOMS else copy_json(item) for key, item in value.items()}
    if kind is list:
        return [item if type(item) in _ATOMS else copy_json(item) for item in value]
    if kind in _ATOMS:
        return value
    return copy.deepcopy(value)


class Kind(StrEnum):
    """What an event carries. One event may carry several (an OpenAI chunk with args and a finish)."""

    META = "meta"  # message/response start, in_progress, created: framing with no content
    TEXT = "text"
    REASONING = "reasoning"  # thinking, reasoning_content, reasoning summary, signatures
    TOOL_START = "tool_start"  # first fragment of a call: carries its id / name
    TOOL_ARGS = "tool_args"  # an argument fragment
    TOOL_END = "tool_end"  # the call's own end marker (block stop, item done, args done)
    TOOL_CALL = "tool_call"  # a whole call in one event (Gemini, Ollama)
    FINISH = "finish"  # the finish / stop reason
    USAGE = "usage"
    SENTINEL = "sentinel"  # the terminal signal: [DONE], message_stop, response.completed ...
    PING = "ping"
    ERROR = "error"  # an in-band error event
    COMMENT = "comment"  # an SSE comment / keepalive line, or a block without data: not an event
    OTHER = "other"


class Role(StrEnum):
    START = "start"
    ARGS = "args"
    END = "end"
    WHOLE = "whole"


class Field(StrEnum):
    """Identity and content fields of a tool-call fragment, named the same for every dialect."""

    ID = "id"  # the call id (OpenAI `id`, Anthropic `id`, Responses `call_id`, Bedrock `toolUseId`)
    INDEX = "index"  # position key (OpenAI `index`, block index, `output_index`, `contentBlockIndex`)
    NAME = "name"
    TYPE = "type"
    ITEM_ID = "item_id"  # Responses `item.id` / `item_id`
    ARGS = "args"  # this fragment's piece of arguments (text), or the whole args object
    # The thought signature a call carries, where a dialect puts it on a call's fragment (Gemini's
    # OpenAI-compatible `extra_content.google.thought_signature`); a dialect without one has none.
    SIGNATURE = "signature"


class _Missing:
    _instance: ClassVar[_Missing | None] = None

    def __new__(cls) -> _Missing:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "MISSING"

    def __bool__(self) -> bool:
        return False


MISSING: Final = _Missing()
"""A field that is absent (as opposed to present with the value null)."""

ALNUM: Final = string.ascii_letters + string.digits


@dataclass(frozen=True, slots=True)
class Fragment:
    """Where one tool-call fragment lives: event position, position inside the event
    (`tool_calls[slot]` for OpenAI chat; 0 when an event holds one fragment), the logical call it
    belongs to (0-based, in order of first appearance) and its role."""

    event: int
    slot: int
    call: int
    role: Role


class ReferenceAccumulator(ABC):
    """The oracle for one dialect: correct on every quirk a correct client can handle, honest on
    the rest. `close` ends the stream (`error` is the transport error text when it was cut)."""

    @abstractmethod
    def feed(self, event: Event) -> None: ...

    @abstractmethod
    def close(self, error: str | None = None) -> Outcome: ...


# ---------------------------------------------------------------------------------------------
# The roles. A dialect is all of them at once (as a syrupy extension is a serializer, a storage,
# a comparator and a reporter): one object to pass around, each role readable on its own.


_JSON_NAMES: Final = {
    dict: "an object",
    list: "an array",
    str: "a string",
    int: "an integer",
    float: "a number",
    bool: "true or false",
    type(None): "null",
}
_PATHS: dict[str, tuple[str, ...]] = {}


def json_type(value: Any) -> str:
    """What a decoded JSON value is, in JSON's words (`an object`, `null` ...)."""
    return _JSON_NAMES.get(type(value), type(value).__name__)


def field_of(obj: Any, path: str, kind: type | tuple[type, ...]) -> Any:
    """The value at `path` (keys joined by dots: `delta.type`) of a decoded payload, when it is of
    `kind` (`type(None)` for null; an integer is not a bool nor a float); MISSING where a key is
    absent or `obj` is no object. A value of another JSON type, on the way or at the end, is a
    `DialectError` naming the field: what every dialect reads its payloads with, so a hostile
    stream is one line, never a TypeError deep in an accumulator."""
    keys = _PATHS.get(path)
    if keys is None:
        keys = _PATHS[path] = tuple(path.split("."))
    value = obj
    for depth, key in enumerate(keys):
        if type(value) is not dict:
            if depth == 0:
                return MISSING
            where = ".".join(keys[:depth])
            raise DialectError(f"{where}: must be an object, not {json_type(value)}")
        value = value.get(key, MISSING)
        if value is MISSING:
            return MISSING
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if type(value) in kinds or (type(value) is int and float in kinds):
        return value
    wanted = " or ".join(_JSON_NAMES.get(k, k.__name__) for k in kinds)
    raise DialectError(f"{path}: must be {wanted}, not {json_type(value)}")


def payload_type(payload: Any) -> str | None:
    """A payload's string `type` (what Anthropic, Cohere and Responses dispatch on), else None."""
    kind = payload.get("type") if isinstance(payload, dict) else None
    return kind if isinstance(kind, str) else None


class Wire:
    """Wire events <-> dialect events, losslessly: an event nobody edited renders to the very same
    wire event; an edited one is serialised the way this provider serialises."""

    codec_name: ClassVar[str] = "sse"
    # True: the SSE `event:` name repeats the payload's `type` (Anthropic, Cohere, Responses).
    names_events_by_type: ClassVar[bool] = False

    def codec(self) -> Codec:
        return get_codec(self.codec_name)

    def parse(self, wire: WireEvent) -> Event:
        if wire.is_comment:
            return Event(wire, None)
        try:
            return Event(wire, bounded.loads(wire.data))
        except bounded.TooDeep as exc:
            raise DialectError(f"data: {exc}") from None
        except ValueError:
            return Event(wire, wire.data)

    def render(self, event: Event) -> WireEvent:
        if not event.edited:
            return event.wire
        data = event.payload if isinstance(event.payload, str) else self.dumps(event.payload)
        return event.wire._replace(data=data)

    def dumps(self, payload: Any) -> str:
        """How this provider serialises a payload (compact JSON unless overridden)."""
        return escape_surrogates(json.dumps(payload, ensure_ascii=False, separators=(",", ":")))

    def event_name(self, payload: Any) -> str | None:
        """The SSE `event:` name this provider sends a payload under (None: it sends no name)."""
        return payload_type(payload) if self.names_events_by_type else None


class Detection(ABC):
    """Which dialect a request, or a bare stream, speaks."""

    # The provider's usual endpoint (`matches` accepts it), for a recording without its request.
    default_url: ClassVar[str] = ""
    # Payload `type`s only this provider sends; the default `claims` looks for them.
    claimed_types: ClassVar[frozenset[str]] = frozenset()

    @abstractmethod
    def matches(self, request: Request) -> bool:
        """Whether a request (URL path, headers, body) speaks this dialect."""

    def claims(self, event: Event) -> bool:
        """Whether an event looks like this provider's own (to tell the dialect of a bare body)."""
        return payload_type(event.payload) in self.claimed_types


class Oracle(ABC):
    """What events mean, and the reference accumulator that says what a correct client makes of them.

    Every reference ends a stream by the ending rules of docs/oracle.md; a dialect's module names
    only the events that play each part (its finish, its terminal event, its in-band error): at the
    terminal event the turn is `complete`, a call its own end marker never closed reported as
    assembled (`terminal-with-open-call`) unless a length finish cut it, and a finish followed by a
    clean close completes it too (`finish-without-terminal`); a stream that ends otherwise before
    it is `cut`, and an in-band error is the `error` state, both reporting only the calls already
    final."""

    # True where a call has no end marker of its own and the reference holds it final only at the
    # finish (Gemini, Ollama): a cut after a whole call is then a matter of policy.
    calls_final_at_finish: ClassVar[bool] = False
    # False where a streamed call never has an end marker of its own (OpenAI chat: the finish ends
    # every call at once), so none is open when the turn ends (docs/oracle.md terminal-with-open-call).
    call_end_markers: ClassVar[bool] = True

    @abstractmethod
    def kinds(self, event: Event) -> frozenset[Kind]: ...

    @abstractmethod
    def accumulator(self) -> ReferenceAccumulator: ...

    @abstractmethod
    def finish_reason(self, event: Event) -> Any:
        """The finish / stop reason this event carries, or MISSING."""

    def joined_name(self, pieces: Iterable[str]) -> str:
        """A call's name from the pieces of it the stream sent, in order (B2, B3): a piece equal to
        the name so far, or one that extends it, replaces it (repeated in full, cumulative); any
        other is appended (split), so an empty piece changes nothing. OpenAI chat's reference joins
        names so; the judge (`misnamed`) and retargeting read every dialect's pieces by it. The other
        references keep a call's first name: the same name wherever its pieces repeat it whole, the
        only pieces their streams send (`split-name` applies only where the reference joins)."""
        name = ""
        for piece in pieces:
            name = piece if piece.startswith(name) else name + piece
        return name

    def is_terminal(self, events: Sequence[Event]) -> bool:
        """Whether a stream that has sent `events` has ended as this provider ends a response, so a
        client closing it there lost nothing. Default: its last event (pings and comments aside) is
        the sentinel or an in-band error, after which every provider ends the stream."""
        for event in reversed(events):
            kinds = self.kinds(event)
            if not kinds <= {Kind.COMMENT, Kind.PING}:
                return bool(kinds & {Kind.SENTINEL, Kind.ERROR})
        return False


@dataclass(frozen=True, slots=True)
class Violation:
    """One place where a stream breaks its protocol: a stable `code` (`anthropic.block-index-reused`),
    the position of the offending event, and what is wrong there."""

    code: str
    event: int
    message: str

    def __str__(self) -> str:
        return f"{self.code} at event {self.event}: {self.message}"


# Finds one catalogue class in a whole stream: the position of the first event that shows it, or
# None (`shapes.py` holds those that read only a dialect's roles).
Detector = Callable[["Dialect", Sequence[Event], Sequence[Fragment]], "int | None"]


class Shape(NamedTuple):
    """A catalogue class a dialect's streams can show (a row of `Validation.shape_codes`): what it
    is, whether the protocol allows it (`toolstream probe`: within or OUTSIDE), and its detector
    (None only where the dialect's own `shapes` tells every class at once: OpenAI chat)."""

    what: str
    within: bool
    detect: Detector | None


class Validation:
    """The protocol's invariants, as a check over an event sequence. A stream that breaks none is
    one the provider could send; a mutation that breaks one on purpose says which (and the quirk
    it imitates). Truncated streams are valid: only what is present is checked."""

    # Every code `invariants` may report, with the rule it stands for (what docs/dialects.md lists).
    invariant_codes: ClassVar[Mapping[str, str]] = {}

    def invariants(self, events: Sequence[Event]) -> list[Violation]:
        """Every violation of the protocol in `events`, in stream order (none: the default)."""
        return []

    # The catalogue classes (`A1`, `B5` ... as the scenarios name them) `shapes` can tell in a
    # stream of this dialect, each with what it is, whether the protocol allows it (`toolstream
    # probe`) and its detector: one table, so a class cannot be told without being described.
    shape_codes: ClassVar[Mapping[str, Shape]] = {}

    def shapes(self, events: Sequence[Event]) -> dict[str, int]:
        """Each catalogue class a whole stream shows (the detectors of `shape_codes`), with the
        position of the first event that shows it, in stream order (at one event, in the table's
        order); none where the dialect tells none."""
        if not self.shape_codes:
            return {}
        dialect = cast("Dialect", self)
        fragments = dialect.fragments(events)
        seen = {
            code: at
            for code, shape in self.shape_codes.items()
            if shape.detect is not None and (at := shape.detect(dialect, events, fragments)) is not None
        }
        return dict(sorted(seen.items(), key=lambda item: item[1]))

    @property
    def request_codes(self) -> Mapping[str, str]:
        """Every code `request_rules` may report, with the rule it stands for (docs/dialects.md
        lists them): none by default."""
        return {}

    def streams_unvalidated_args(self, request: Request | None) -> bool:
        """Whether the provider, for this request, streams tool arguments it neither buffers nor
        validates, so their text may not be JSON (Anthropic fine-grained / eager input streaming)."""
        return False

    def request_rules(self, request: Request | None, events: Sequence[Event]) -> list[Violation]:
        """Where `events` answer something `request` did not ask for: a choice beyond its `n`, a
        call to a tool it did not offer, usage it did not ask for. None when the request is
        unknown (a stream without its request) or the dialect states no such rule (the default)."""
        return []


def contradiction(
    prefix: str, pos: int, reason: Any, calls: int, words: Mapping[Finish, str]
) -> Violation | None:
    """`<prefix>.finish-contradicts-calls` when a finish reason says tool calls but none came (D9),
    or says a normal stop after calls (D1); None when the dialect has no such words or they agree."""
    if reason == words.get(Finish.TOOL_CALLS) and not calls:
        return Violation(
            f"{prefix}.finish-contradicts-calls", pos, f"finish reason {reason!r} without a tool call"
        )
    if reason == words.get(Finish.STOP) and calls and Finish.TOOL_CALLS in words:
        return Violation(
            f"{prefix}.finish-contradicts-calls", pos, f"finish reason {reason!r} after {calls} tool call(s)"
        )
    return None


TOOL_NOT_OFFERED: Final = "a streamed call names one of the tools the request offered (where it lists any)"


def request_body(request: Request | None) -> Mapping[str, Any] | None:
    """A request's JSON object body, or None (no request, or a body that is not an object)."""
    body = request.body if request is not None else None
    return body if isinstance(body, Mapping) else None


def tool_names(body: Mapping[str, Any], paths: Sequence[tuple[str, ...]]) -> frozenset[str] | None:
    """The tool names a request body offers, read at each of `paths` (keys from the body to a
    name, `*` for every item of a list, its last `*` the list of tools); None when no path reaches
    a tool (the request lists none: then any name goes)."""
    names: set[str] = set()
    listed = False
    for path in paths:
        tools = len(path) - 1 - path[::-1].index("*")
        level: list[Any] = [body]
        for n, key in enumerate(path):
            if key == "*":
                level = [item for found in level if isinstance(found, list) for item in found]
                listed = listed or (n == tools and bool(level))
            else:
                level = [found[key] for found in level if isinstance(found, Mapping) and key in found]
        names.update(found for found in level if isinstance(found, str))
    return frozenset(names) if listed else None


def unoffered_calls(
    dialect: Dialect, offered: frozenset[str] | None, events: Sequence[Event]
) -> list[Violation]:
    """`<dialect>.tool-not-offered` for each call the reference accumulator makes of `events` whose
    name is not among `offered` (nothing when the request offers no list); at the call's first
    fragment."""
    if offered is None:
        return []
    acc = dialect.accumulator()
    for event in events:
        acc.feed(event)
    calls = acc.close(None).tool_calls
    starts: dict[int, int] = {}
    for fragment in dialect.fragments(events):
        starts.setdefault(fragment.call, fragment.event)
    return [
        Violation(f"{dialect.name}.tool-not-offered", starts.get(n, 0), f"{call.name!r} is not offered")
        for n, call in enumerate(calls)
        if call.name and call.name not in offered
    ]


class Finish(StrEnum):
    """What a finish / stop reason means, named the same for every dialect (each writes its own word)."""

    STOP = "stop"  # the turn ended normally
    TOOL_CALLS = "tool-calls"  # the turn ended to let the client run tools
    LENGTH = "length"  # the output limit cut the turn
    CONTENT_FILTER = "content-filter"


@dataclass(frozen=True, slots=True)
class IdStyle:
    """How a provider writes a tool-call id: `prefix`, then `length` characters of `alphabet`."""

    prefix: str
    length: int
    alphabet: str = ALNUM

    def fresh(self, rng: random.Random, length: int | None = None) -> str:
        """A new id in this style; `length` (prefix included) overrides the usual one."""
        size = self.length if length is None else max(length - len(self.prefix), 1)
        return self.prefix + "".join(rng.choice(self.alphabet) for _ in range(size))


class Editing(ABC):
    """The tool-call fragments of a stream, for mutations: read and set their fields, and build
    events shaped like this provider's, so no mutation ever parses provider JSON by hand."""

    # The id styles of the providers that speak this dialect, by the name a scenario uses.
    id_styles: ClassVar[Mapping[str, IdStyle]] = {}
    # This provider's word for each finish meaning it has (Gemini has no word for tool calls).
    finish_reasons: ClassVar[Mapping[Finish, str]] = {}
    # Every finish reason its protocol documents (empty: not known): another one is `unknown-finish`.
    finish_vocabulary: ClassVar[frozenset[str]] = frozenset()

    def renumber(self, events: Sequence[Event]) -> list[Event]:
        """The events with every block (content block, output item) numbered by its position, for
        mutations that insert, move or drop blocks; the same events where the wire numbers none."""
        return list(events)

    def restate(self, events: Sequence[Event]) -> list[Event]:
        """The events with any final summary that repeats the streamed items (Responses
        `response.output` in `response.completed`) rebuilt from the items streamed, applied to every
        mutated stream; the same events where the wire repeats nothing."""
        return list(events)

    def resequence(self, events: Sequence[Event]) -> list[Event]:
        """The events with every per-event sequence number counted anew (Responses
        `sequence_number`), applied to every mutated stream; the same events where the wire has none."""
        return list(events)

    @abstractmethod
    def fragments(self, events: Sequence[Event]) -> list[Fragment]:
        """Every tool-call fragment in the stream, in stream order."""

    @abstractmethod
    def get(self, event: Event, slot: int, field: Field) -> Any:
        """A fragment's field value, or MISSING when the key is absent."""

    @abstractmethod
    def set(self, event: Event, slot: int, field: Field, value: Any) -> Event:
        """A copy of the event with the fragment's field set (MISSING deletes the key)."""

    @abstractmethod
    def continuation(self, event: Event, slot: int, args: str) -> Event:
        """A new event that continues the fragment's call with `args`, shaped the way this provider
        shapes a continuation (e.g. OpenAI: only `index` and `function.arguments`)."""

    @abstractmethod
    def remove(self, event: Event, slot: int) -> Event | None:
        """The event without that fragment, or None when nothing of meaning would be left."""

    @abstractmethod
    def with_finish_reason(self, event: Event, reason: Any) -> Event:
        """A copy with the finish / stop reason replaced (MISSING removes it)."""

    def as_choice(self, event: Event, number: int, into: Event | None = None) -> Event | None:
        """Choice 0 of `event` renumbered `number` (C7: another completion of an `n>1` request),
        added to the choices of `into` when given, else alone in a chunk of its own. None when
        `event` has no choice 0 or the provider has no choices (the default)."""
        return None

    def pack(self, parts: Sequence[tuple[Event, int]]) -> Event | None:
        """One event holding several fragments, or None when the wire cannot express it."""
        return None

    def announces(self, event: Event) -> bool:
        """Whether the event only announces the response before its content (Responses
        `response.created`, `response.in_progress`): what an unannounced start leaves out."""
        return False

    def with_text(self, event: Event, text: str) -> Event | None:
        """The event with assistant text added beside the tool-call fragments it holds (content and
        call fragments in one delta), or None when the wire cannot express it."""
        return None

    def sign_late(self, events: Sequence[Event]) -> list[Event] | None:
        """The events with each reasoning block's signature, and the block's end with it, sent
        after the next block's first delta: what a gateway relaying the stream may do (Anthropic
        through OpenRouter). None where the wire keys no signature to its block, or no block
        follows a signed one."""
        return None

    @abstractmethod
    def build(self, kind: Kind, **params: Any) -> list[Event]:
        """Events of a kind, shaped like this provider's: TEXT(text=), REASONING(text=), PING(),
        USAGE(), ERROR(message=), FINISH(reason=), SENTINEL(), META(). Empty when the provider has
        no such event (Gemini has no sentinel). TOOL_CALL(one_event=True): the call in one event
        where the wire has such a form (an AG-UI chunk, an AI SDK `tool-input-available`)."""


class Dialect(Wire, Detection, Oracle, Validation, Editing):
    """One provider's streaming dialect: its wire, detection, oracle, validation and editing roles. A dialect
    that can also ask its provider for a stream (`toolstream record`) adds `Requesting`."""

    name: ClassVar[str]
    # Where a request offers tools: key paths from its body to a tool's name, `*` for every item of
    # a list (`("tools", "*", "function", "name")`); a call to any other name breaks the request
    # rule `<name>.tool-not-offered`. None given: the dialect's requests name no tools.
    tool_paths: ClassVar[tuple[tuple[str, ...], ...]] = ()
    # The codes of the request rules a dialect adds to that one (its own `request_rules`).
    own_request_codes: ClassVar[Mapping[str, str]] = {}

    @property
    def request_codes(self) -> Mapping[str, str]:
        offered = {f"{self.name}.tool-not-offered": TOOL_NOT_OFFERED} if self.tool_paths else {}
        return {**self.own_request_codes, **offered}

    def request_rules(self, request: Request | None, events: Sequence[Event]) -> list[Violation]:
        """A call to a tool the request did not offer (where it lists any, at `tool_paths`)."""
        body = request_body(request)
        if body is None or not self.tool_paths:
            return []
        return unoffered_calls(self, tool_names(body, self.tool_paths), events)


_SURROGATE = re.compile("[\ud800-\udfff]")


def escape_surrogates(text: str) -> str:
    """Serialised JSON with every lone UTF-16 surrogate as a `\\uXXXX` escape (F2: a gateway that
    re-chunks by code units sends half a pair): raw, a surrogate cannot be encoded as UTF-8.
    Text without surrogates comes back unchanged."""
    return _SURROGATE.sub(lambda found: f"\\u{ord(found.group()):04x}", text)
