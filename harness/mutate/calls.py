"""The tool-call view of a stream, composed only of dialect contract calls.

Mutations use these to find a call's fragments, its argument text, whether calls are laid out one
after another, and what a prefix of the stream makes final (the oracle of cuts and errors).
"""

from __future__ import annotations

import contextlib
import copy
import pickle
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar, cast

from harness.cassettes.outcome import Outcome, State, ToolCall, coherent
from harness.errors import DialectError, NotApplicable
from harness.mutate import Stream, evolve
from harness.wire.dialects import MISSING, Dialect, Event, Field, Fragment, Kind, ReferenceAccumulator, Role

T = TypeVar("T")


def by_call(fragments: Sequence[Fragment]) -> dict[int, list[Fragment]]:
    """Fragments grouped by logical call, each list in stream order."""
    out: dict[int, list[Fragment]] = {}
    for fragment in fragments:
        out.setdefault(fragment.call, []).append(fragment)
    return out


# What was found in recent event tuples (fragments, kinds): a recording's stream is shared by all
# its cases (events are immutable), so it is found once, not once per case. Keyed by identity,
# the events kept alive beside the value so an id is never reused while cached. Bounded in
# entries and in the events they keep alive: 256 streams of a 20,000-event recording held most
# of a run's memory.
_FOUND: OrderedDict[tuple[str, str, int], tuple[tuple[Event, ...], Any]] = OrderedDict()
_CACHED = 256
_CACHED_EVENTS = 50_000
_held = 0  # events the entries hold (one tuple counted once per entry)


def _once(what: str, stream: Stream, find: Callable[[], T]) -> T:
    """`find()` for this stream's events, or what it gave for the very same events tuple before."""
    global _held
    key = (what, stream.dialect.name, id(stream.events))
    found = _FOUND.get(key)
    if found is not None and found[0] is stream.events:
        _FOUND.move_to_end(key)
        return cast(T, found[1])
    value = find()
    _FOUND[key] = (stream.events, value)
    _held += len(stream.events)
    while len(_FOUND) > 1 and (len(_FOUND) > _CACHED or _held > _CACHED_EVENTS):
        _, (events, _) = _FOUND.popitem(last=False)
        _held -= len(events)
    return value


def kinds_of(stream: Stream) -> tuple[frozenset[Kind], ...]:
    """What each event carries (`Dialect.kinds`), found once per events tuple."""
    return _once("kinds", stream, lambda: tuple(stream.dialect.kinds(event) for event in stream.events))


def fragments_or_skip(stream: Stream, what: str = "tool calls") -> list[Fragment]:
    fragments = list(_once("fragments", stream, lambda: tuple(stream.dialect.fragments(stream.events))))
    if not fragments:
        raise NotApplicable(f"no {what} in this stream")
    return fragments


def contiguous(fragments: Sequence[Fragment]) -> bool:
    """Whether each call's fragments come one after another (no call interleaves with another)."""
    seen: set[int] = set()
    current: int | None = None
    for fragment in fragments:
        if fragment.call != current:
            if fragment.call in seen:
                return False
            seen.add(fragment.call)
            current = fragment.call
    return True


def one_fragment_per_event(fragments: Sequence[Fragment]) -> bool:
    events = [f.event for f in fragments]
    return len(events) == len(set(events))


def value(dialect: Dialect, events: Sequence[Event], fragment: Fragment, field: Field) -> object:
    return dialect.get(events[fragment.event], fragment.slot, field)


def call_value(
    dialect: Dialect, events: Sequence[Event], fragments: Sequence[Fragment], field: Field
) -> object:
    """The first present, non-empty value of a field over a call's fragments, else MISSING."""
    for fragment in fragments:
        got = value(dialect, events, fragment, field)
        if got is not MISSING and got is not None and got != "":
            return got
    return MISSING


def args_text(dialect: Dialect, events: Sequence[Event], fragments: Sequence[Fragment]) -> str | None:
    """A call's streamed argument text (start and args fragments), or None when args are objects."""
    parts: list[str] = []
    for fragment in fragments:
        if fragment.role not in (Role.START, Role.ARGS):
            continue
        got = value(dialect, events, fragment, Field.ARGS)
        if got is MISSING or got is None:
            continue
        if not isinstance(got, str):
            return None
        parts.append(got)
    return "".join(parts)


def headers_have_ids(dialect: Dialect, events: Sequence[Event], fragments: Sequence[Fragment]) -> bool:
    """Whether every call has an id somewhere: what tells calls apart once indexes stop doing so."""
    return all(
        call_value(dialect, events, group, Field.ID) is not MISSING for group in by_call(fragments).values()
    )


def set_at(events: list[Event], dialect: Dialect, fragment: Fragment, field: Field, new: object) -> None:
    events[fragment.event] = dialect.set(events[fragment.event], fragment.slot, field, new)


def continuation(dialect: Dialect, event: Event, slot: int, args: str) -> Event:
    """`dialect.continuation(...)`; where the wire has no continuation fragments (Ollama's whole
    calls, Gemini's whole `functionCall`, even with arguments as text), the step does not apply."""
    try:
        return dialect.continuation(event, slot, args)
    except DialectError as exc:
        raise NotApplicable(str(exc)) from None


def spliced(dialect: Dialect, events: Sequence[Event], inserts: Mapping[int, Sequence[Event]]) -> list[Event]:
    """`events` with `inserts[i]` after event `i`, an event split in pieces that way keeping its
    finish signal last: a finish it carried moves onto the last piece, so the turn still ends after
    every byte of its calls (left on the first piece, the split would end the turn before the rest
    of the arguments: another stream, not the same one in more pieces, and a cut after the first
    piece would keep a finish that never came)."""
    out: list[Event] = []
    for i, event in enumerate(events):
        more = list(inserts.get(i, ()))
        reason = dialect.finish_reason(event) if more else MISSING
        if reason is not MISSING and dialect.finish_reason(more[-1]) is MISSING:
            with contextlib.suppress(DialectError):  # a wire whose pieces cannot carry it: as it was
                last = dialect.with_finish_reason(more[-1], reason)
                event, more[-1] = dialect.with_finish_reason(event, MISSING), last
        out.append(event)
        out.extend(more)
    return out


def terminal_index(stream: Stream) -> int:
    """Where the stream's terminal signal sits: the sentinel, else the finish event, else the end."""
    found = stream.memo.get("terminal")  # a sweep asks once per point
    if found is None:
        found = stream.memo["terminal"] = _terminal_index(stream)
    return cast(int, found)


def _terminal_index(stream: Stream) -> int:
    kinds = kinds_of(stream)
    for wanted in ({Kind.SENTINEL, Kind.ERROR}, {Kind.FINISH}):
        for i, found in enumerate(kinds):
            if wanted & found:
                return i
    return len(stream.events)


def first_signal(stream: Stream) -> int:
    """The first event that may end the turn (finish, sentinel or error): a cut up to here is a
    cut by every dialect's rules; after it, whether the turn was over is the dialect's to say."""
    found = stream.memo.get("first_signal")  # a sweep asks once per point
    if found is None:
        found = stream.memo["first_signal"] = next(
            (i for i, kinds in enumerate(kinds_of(stream)) if _ENDING & kinds), len(stream.events)
        )
    return cast(int, found)


_ENDING = frozenset({Kind.FINISH, Kind.SENTINEL, Kind.ERROR})


def routing_keys_apart(dialect: Dialect, events: Sequence[Event], fragments: Sequence[Fragment]) -> bool:
    """Whether every later fragment names its call (index or item id) and no two calls share a
    name: what lets a client route fragments of calls that interleave."""
    owners: dict[str, int] = {}
    for group in by_call(fragments).values():
        for fragment in group[1:]:
            keys = [
                repr((field, got))
                for field in (Field.INDEX, Field.ITEM_ID)
                if (got := value(dialect, events, fragment, field)) is not MISSING and got is not None
            ]
            if not keys:
                return False
            for key in keys:
                if owners.setdefault(key, fragment.call) != fragment.call:
                    return False
    return True


def reference_on(dialect: Dialect, events: Sequence[Event], error: str | None) -> Outcome:
    acc = dialect.accumulator()
    for event in events:
        acc.feed(event)
    return acc.close(error)


def reparted(stream: Stream, events: Sequence[Event], expected: Outcome | None = None) -> Outcome:
    """`expected` (default: the stream's) with the parts the reference reads in `events`: what a
    step that adds or moves parts (reasoning inserted, blocks moved before the calls) expects,
    when they agree with its calls and text (`coherent`); without parts otherwise, so none are
    judged."""
    expected = stream.expected if expected is None else expected
    found = evolve(expected, parts=reference_on(stream.dialect, events, None).parts)
    return found if coherent(found) else evolve(expected, parts=())


class _PrefixOracle:
    """The reference accumulator fed one events sequence (`base`) once, for every prefix a sweep
    asks about: events that begin with the very objects of `base` are fed from where it got to,
    copied, instead of from the start (a sweep of N points costs N copies, not N prefixes fed)."""

    def __init__(self, dialect: Dialect, base: Sequence[Event]) -> None:
        self.dialect = dialect
        self.base = base
        # None until the second question: most streams are asked once, and feeding a fresh
        # accumulator costs less than copying one.
        self.acc: ReferenceAccumulator | None = None
        self.fed = 0

    def outcome(self, events: Sequence[Event], error: str | None) -> Outcome:
        if self.acc is None:
            self.acc = self.dialect.accumulator()
            return reference_on(self.dialect, events, error)
        base = self.base
        shared, limit = 0, min(len(events), len(base))
        while shared < limit and events[shared] is base[shared]:
            shared += 1
        if shared < self.fed:  # asked about an earlier point: start again
            self.acc, self.fed = self.dialect.accumulator(), 0
        for event in base[self.fed : shared]:
            self.acc.feed(event)
        self.fed = shared
        acc = _copied(self.acc)
        for event in events[shared:]:
            acc.feed(event)
        return acc.close(error)


def _copied(acc: ReferenceAccumulator) -> ReferenceAccumulator:
    """A deep copy of an accumulator's state: through pickle, which copies plain state several
    times faster than `copy.deepcopy` (a sweep copies once per point); else `copy.deepcopy`."""
    try:
        return cast(ReferenceAccumulator, pickle.loads(pickle.dumps(acc, pickle.HIGHEST_PROTOCOL)))
    except Exception:  # something in it does not pickle (a registered dialect's state)
        return copy.deepcopy(acc)


def _oracle(stream: Stream, base: Sequence[Event]) -> _PrefixOracle:
    """The stream's oracle for prefixes of `base` (its own events, or a re-decoding of its body)."""
    key = f"oracle/{id(base)}"
    found = stream.memo.get(key)
    if found is None or found.base is not base:
        found = stream.memo[key] = _PrefixOracle(stream.dialect, base)
    return cast(_PrefixOracle, found)


def expect_prefix(
    stream: Stream,
    events: Sequence[Event],
    *,
    state: State | None,
    error: str | None,
    closed_with: str | None = None,
    base: Sequence[Event] | None = None,
) -> Outcome:
    """The expectation of a stream that stops after `events`: only the calls that were final there
    survive (finality is the dialect's: its reference accumulator run on the prefix says which),
    taken from the previous expectation; text and finish reason are what the prefix carried. A
    call final there that was not before (the finish that left a `length` turn's last call out
    changed or gone) is what the accumulator made of it: the previous expectation has none.
    `state` None: a clean end, whether the prefix was a whole turn is the dialect's to say.
    `closed_with` is the transport error the stream ends with (default: `error`). `events` that
    begin with those of `base` (default: the stream's) are judged from where the stream's oracle
    got to (`_PrefixOracle`), the same outcome as feeding them all."""
    oracle = _oracle(stream, stream.events if base is None else base)
    seen = oracle.outcome(events, error if closed_with is None else closed_with or None)
    if state is None:
        state, error = seen.state, seen.error
    before = stream.expected.tool_calls
    kept: tuple[ToolCall, ...]
    if seen.tool_calls and all(call.id for call in seen.tool_calls) and all(call.id for call in before):
        ids = {call.id for call in seen.tool_calls}
        known = {call.id for call in before}
        kept = tuple(call for call in before if call.id in ids)
        kept += tuple(call for call in seen.tool_calls if call.id not in known)
    else:
        kept = before[: len(seen.tool_calls)] + seen.tool_calls[len(before) :]
    return evolve(
        stream.expected,
        tool_calls=kept,
        server_calls=seen.server_calls,  # the provider's own calls final in the prefix
        parts=seen.parts,  # judged only where they agree with the calls kept (`coherent`)
        text=seen.text,
        finish_reason=seen.finish_reason,
        state=state,
        error=error,
    )
