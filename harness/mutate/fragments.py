"""Fragment mutations: how a call's arguments are cut into pieces, packed into events and ordered
against other calls (classes B, C and E).

All go through the dialect: `continuation` makes a new piece shaped the provider's way, `remove`
takes a piece out, `pack` puts several in one event. Meaning is kept except where a docstring says
how it changes (truncated arguments).
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

from harness import bounded
from harness.cassettes.outcome import CUSTOM, ToolCall, diff
from harness.errors import DialectError, NotApplicable
from harness.mutate import Meaning, Mutation, Quirk, Stream, mutation
from harness.mutate.calls import (
    args_text,
    by_call,
    continuation,
    fragments_or_skip,
    one_fragment_per_event,
    reference_on,
    reparted,
    routing_keys_apart,
    spliced,
    value,
)
from harness.wire.dialects import MISSING, Event, Field, Fragment, Kind, Role

_TEXT_ROLES = (Role.START, Role.ARGS, Role.WHOLE)


def _args(stream: Stream, events: Sequence[Event], fragment: Fragment) -> object:
    return stream.dialect.get(events[fragment.event], fragment.slot, Field.ARGS)


def _without(stream: Stream, events: list[Event | None], fragments: Sequence[Fragment]) -> list[Event]:
    """Events with the given fragments removed (an event left with nothing of meaning goes)."""
    for fragment in sorted(fragments, key=lambda f: (f.event, f.slot), reverse=True):
        current = events[fragment.event]
        if current is not None:
            events[fragment.event] = stream.dialect.remove(current, fragment.slot)
    return [e for e in events if e is not None]


def _carries_a_resent_copy(stream: Stream) -> bool:
    """Whether a call's argument text is a whole JSON text sent twice (`repeat-args-at-end`)."""
    d = stream.dialect
    for group in by_call(fragments_or_skip(stream)).values():
        text = args_text(d, stream.events, group) or ""
        half = len(text) // 2
        if text and len(text) % 2 == 0 and text[:half] == text[half:] and _is_json(text[:half]):
            return True
    return False


@mutation("split-args")
@dataclass(frozen=True)
class SplitArgs(Mutation):
    """Split every argument fragment into pieces of at most `size` characters, down to one (LM
    Studio and llama.cpp stream one character per chunk; B11 a consumer that finalises on a
    parsable prefix; F1 a multi-byte character on its own). `calls`: only these call numbers."""

    size: int = 1
    calls: tuple[int, ...] | None = None
    kind: str | None = None  # only calls of this kind (`custom`: freeform input split anywhere)

    def apply(self, stream: Stream, rng: random.Random) -> Stream:
        d = stream.dialect
        size = max(1, self.size)
        inserts: dict[int, list[Event]] = {}
        events = list(stream.events)
        kinds = _call_kinds(stream) if self.kind is not None else ()
        for fragment in fragments_or_skip(stream):
            if fragment.role not in _TEXT_ROLES or (
                self.calls is not None and fragment.call not in self.calls
            ):
                continue
            if self.kind is not None and (fragment.call >= len(kinds) or kinds[fragment.call] != self.kind):
                continue
            text = _args(stream, events, fragment)
            if not isinstance(text, str) or len(text) <= size:
                continue
            pieces = [text[i : i + size] for i in range(0, len(text), size)]
            events[fragment.event] = d.set(events[fragment.event], fragment.slot, Field.ARGS, pieces[0])
            more = [continuation(d, events[fragment.event], fragment.slot, piece) for piece in pieces[1:]]
            inserts.setdefault(fragment.event, []).extend(more)
        if not inserts:
            raise NotApplicable(
                "no argument text to split" + (f" in a {self.kind} call" if self.kind else "")
            )
        if _carries_a_resent_copy(stream):
            # A reader knows the copy (B9) only as one piece; split, it is text of the arguments.
            raise NotApplicable("the arguments carry a re-sent copy (B9), which a split would change")
        return stream.with_events(spliced(d, events, inserts))


def _call_kinds(stream: Stream) -> tuple[str, ...]:
    """Each call's kind, numbered as fragments number calls (the reference on the whole stream)."""
    return tuple(call.kind for call in reference_on(stream.dialect, stream.events, None).tool_calls)


@mutation("coalesce-args")
@dataclass(frozen=True)
class CoalesceArgs(Mutation):
    """Join each call's runs of argument fragments into one (a server with a larger stream
    interval; Groq and Mistral send a call's arguments whole)."""

    def apply(self, stream: Stream, rng: random.Random) -> Stream:
        d = stream.dialect
        fragments = fragments_or_skip(stream)
        events: list[Event | None] = list(stream.events)
        gone: list[Fragment] = []
        for group in by_call(fragments).values():
            pieces = [
                f for f in group if f.role is Role.ARGS and isinstance(_args(stream, stream.events, f), str)
            ]
            if len(pieces) < 2:
                continue
            text = "".join(str(_args(stream, stream.events, f)) for f in pieces)
            first = pieces[0]
            events[first.event] = d.set(stream.events[first.event], first.slot, Field.ARGS, text)
            gone.extend(pieces[1:])
        if not gone:
            raise NotApplicable("no runs of argument fragments to join")
        return stream.with_events(_without(stream, events, gone))


@mutation("args-in-header")
@dataclass(frozen=True)
class ArgsInHeader(Mutation):
    """Put each call's whole arguments in its header fragment and drop the pieces (B5: id, name and
    the full arguments in one chunk: Mistral, GLM-5.1, Groq)."""

    def apply(self, stream: Stream, rng: random.Random) -> Stream:
        d = stream.dialect
        fragments = fragments_or_skip(stream)
        events: list[Event | None] = list(stream.events)
        gone: list[Fragment] = []
        for group in by_call(fragments).values():
            header = group[0]
            if header.role is not Role.START or not isinstance(_args(stream, stream.events, header), str):
                continue
            pieces = [f for f in group[1:] if f.role is Role.ARGS]
            text = args_text(d, stream.events, group)
            if not pieces or text is None:
                continue
            events[header.event] = d.set(stream.events[header.event], header.slot, Field.ARGS, text)
            gone.extend(pieces)
        if not gone:
            raise NotApplicable("no header that can carry the arguments")
        return stream.with_events(_without(stream, events, gone))


@mutation("pack-fragments")
@dataclass(frozen=True)
class PackFragments(Mutation):
    """Pack several fragments into one event (seed 001 / B1: the header and the first argument
    piece of one call, two same-index entries in one delta, vLLM speculative decoding; C2 with
    `what: calls`: the headers of every call in one delta, which a client reading only
    `tool_calls[0]` drops). Needs a dialect whose wire can express it."""

    what: Literal["header-and-args", "calls"] = "header-and-args"
    count: int = 2

    def apply(self, stream: Stream, rng: random.Random) -> Stream:
        d = stream.dialect
        fragments = fragments_or_skip(stream)
        groups = by_call(fragments)
        if self.what == "calls":
            if len(groups) < 2:
                raise NotApplicable("packing calls needs two calls")
            if not routing_keys_apart(d, stream.events, fragments):
                raise NotApplicable("calls share their keys: packed together, no client could route them")
            parts = [group[0] for group in groups.values()][: max(2, self.count)]
            runs = [parts]
        else:
            runs = [group[: max(2, self.count)] for group in groups.values() if len(group) >= 2]
            runs = [run for run in runs if run[1].role is not Role.END]
        if not runs:
            raise NotApplicable("no fragments to pack")
        events: list[Event | None] = list(stream.events)
        gone: list[Fragment] = []
        for run in runs:
            if len({f.event for f in run}) < len(run):
                continue
            packed = d.pack([(stream.events[f.event], f.slot) for f in run])
            if packed is None:
                raise NotApplicable(f"{d.name} cannot put several fragments in one event")
            events[run[0].event] = packed
            gone.extend(run[1:])
        if not gone:
            raise NotApplicable("fragments already share events")
        packed_events = _without(stream, events, gone)
        return stream.with_events(packed_events, reparted(stream, packed_events))  # a call may now come first


@mutation("interleave")
@dataclass(frozen=True)
class Interleave(Mutation):
    """Interleave the fragments of parallel calls (seed 004 / C1, E7: Anthropic `input_json_delta`s
    of parallel tool_use blocks arriving after the next block's start; gateways interleaving chat
    indexes; llama.cpp's Responses items). `pattern`: `round-robin` (A1, B1, A2, B2, ...) or
    `random` (any order that keeps each call's own order and the order the calls start in).
    Events between the calls that are not theirs move before them."""

    pattern: Literal["round-robin", "random"] = "round-robin"

    imitates = (
        Quirk("C1", "docker/docker-agent PR #3009 (an Anthropic stream adapter)"),
        Quirk("C1", "mcowger/plexus#691; microsoft/agent-framework#8336 (gateways interleave chat indexes)"),
        Quirk("E7", "can1357/oh-my-pi#1880 (llama.cpp /v1/responses)"),
    )
    breaks = ("*.block-overlap", "*.item-overlap")

    def apply(self, stream: Stream, rng: random.Random) -> Stream:
        fragments = fragments_or_skip(stream)
        groups = by_call(fragments)
        if len(groups) < 2:
            raise NotApplicable("interleaving needs two calls")
        if not one_fragment_per_event(fragments):
            raise NotApplicable("fragments share events")
        if any(len(group) < 2 for group in groups.values()):
            raise NotApplicable("a call sent whole cannot interleave")
        if not routing_keys_apart(stream.dialect, stream.events, fragments):
            raise NotApplicable(
                "fragments do not name their call apart: interleaved, no client could route them"
            )
        first, last = fragments[0].event, fragments[-1].event
        queues = [[f.event for f in group] for group in groups.values()]
        mine = {f.event for f in fragments}
        others = [i for i in range(first, last + 1) if i not in mine]
        order: list[int] = []
        started = 0
        while any(queues):
            if self.pattern == "round-robin":
                for queue in queues:
                    if queue:
                        order.append(queue.pop(0))
                continue
            # A call may start only after every earlier call started: calls keep their order.
            ready = [n for n, q in enumerate(queues) if q and (n <= started)]
            n = rng.choice(ready)
            order.append(queues[n].pop(0))
            if n == started:
                started += 1
        events = list(stream.events)
        middle = [events[i] for i in others] + [events[i] for i in order]
        # Blocks moved before the calls take the positions the calls had: renumber by position.
        moved = stream.dialect.renumber([*events[:first], *middle, *events[last + 1 :]])
        return stream.with_events(moved, reparted(stream, moved))  # text and reasoning now come first


@mutation("empty-args-fragment")
@dataclass(frozen=True)
class EmptyArgsFragment(Mutation):
    """Insert an id-less continuation with empty arguments after each call's header (seed 002 / B7:
    GLM-5 via OpenRouter; aichat's `{id}/{index}` key saw a new call there and ran `{}`)."""

    count: int = 1

    def apply(self, stream: Stream, rng: random.Random) -> Stream:
        d = stream.dialect
        inserts: dict[int, list[Event]] = {}
        for group in by_call(fragments_or_skip(stream)).values():
            header = group[0]
            if header.role is not Role.START:
                continue
            event = stream.events[header.event]
            inserts.setdefault(header.event, []).extend(
                continuation(d, event, header.slot, "") for _ in range(self.count)
            )
        if not inserts:
            raise NotApplicable("no call header to continue")
        return stream.with_events(spliced(d, stream.events, inserts))


@mutation("placeholder-args")
@dataclass(frozen=True)
class PlaceholderArgs(Mutation):
    """Put a `"{}"` placeholder in each header whose arguments follow in pieces (B6: OpenRouter,
    Azure and vLLM; `"{}"` + real JSON gives `{}{...}` to a concatenating client)."""

    def apply(self, stream: Stream, rng: random.Random) -> Stream:
        d = stream.dialect
        events = list(stream.events)
        changed = False
        kinds = _call_kinds(stream)
        for number, group in by_call(fragments_or_skip(stream)).items():
            header = group[0]
            if header.role is not Role.START or _args(stream, events, header) != "":
                continue
            if number < len(kinds) and kinds[number] == CUSTOM:
                continue  # a JSON placeholder means nothing before freeform input
            if not any(f.role is Role.ARGS and _args(stream, events, f) not in ("", MISSING) for f in group):
                continue
            events[header.event] = d.set(events[header.event], header.slot, Field.ARGS, "{}")
            changed = True
        if not changed:
            raise NotApplicable("no header with empty arguments followed by real ones")
        return stream.with_events(events)


@mutation("repeat-args-at-end")
@dataclass(frozen=True)
class RepeatArgsAtEnd(Mutation):
    """Append one more fragment carrying the call's whole arguments again (B9: vLLM's end-of-stream
    flush re-sends everything; a concatenating client gets `{...}{...}`). Where the provider's
    rules recognise a re-sent copy (OpenAI-compatible chat), meaning is kept; where every piece
    counts (Anthropic `partial_json`), the call's arguments are the doubled text, invalid."""

    meaning = Meaning.CHANGING

    def apply(self, stream: Stream, rng: random.Random) -> Stream:
        d = stream.dialect
        inserts: dict[int, list[Event]] = {}
        doubled: dict[int, str] = {}
        for number, group in by_call(fragments_or_skip(stream)).items():
            text = args_text(d, stream.events, group)
            pieces = [f for f in group if f.role in _TEXT_ROLES]
            if not text or not pieces or not _is_json(text):
                continue  # only a whole, valid argument text can be re-sent as a recognisable copy
            last = pieces[-1]
            inserts.setdefault(last.event, []).append(
                continuation(d, stream.events[last.event], last.slot, text)
            )
            doubled[number] = text + text
        if not inserts:
            raise NotApplicable("no argument text to repeat")
        out = spliced(d, stream.events, inserts)
        # Which of the two the dialect's rules say: its reference accumulator on the new stream.
        seen = reference_on(d, out, None).tool_calls
        calls = list(stream.expected.tool_calls)
        for number, text in doubled.items():
            if number < len(calls) and number < len(seen) and seen[number].invalid:
                was = calls[number]
                calls[number] = was.with_text(text)
        return stream.with_events(out, replace(stream.expected, tool_calls=tuple(calls)))


def _is_json(text: str) -> bool:
    try:
        bounded.loads(text)
    except ValueError:
        return False
    return True


@mutation("truncate-args")
@dataclass(frozen=True)
class TruncateArgs(Mutation):
    """Drop the last `chars` characters of a call's arguments (B10: vLLM's tool parser loses the
    final `}`). `call`: which call (None: the last). Expected: that call's arguments are the
    truncated text (invalid JSON, reported raw)."""

    chars: int = 1
    call: int | None = None

    meaning = Meaning.CHANGING

    def apply(self, stream: Stream, rng: random.Random) -> Stream:
        d = stream.dialect
        groups = by_call(fragments_or_skip(stream))
        number = max(groups) if self.call is None else self.call
        if number not in groups or number >= len(stream.expected.tool_calls):
            raise NotApplicable(f"no call {number}")
        group = groups[number]
        text = args_text(d, stream.events, group)
        if not text or len(text) <= self.chars:
            raise NotApplicable("no argument text long enough to truncate")
        for fragment in group:
            whole = _args(stream, stream.events, fragment) if fragment.role is Role.END else MISSING
            if whole is not MISSING and whole is not None and not isinstance(whole, str):
                # The AI SDK's tool-input-available: its producer parsed the text; cut, it says so.
                raise NotApplicable("the call's end carries its arguments parsed, not as text")
        events: list[Event | None] = list(stream.events)
        left = self.chars
        gone: list[Fragment] = []
        for fragment in reversed([f for f in group if f.role in _TEXT_ROLES]):
            piece = _args(stream, stream.events, fragment)
            if not isinstance(piece, str) or left <= 0:
                continue
            if len(piece) > left:
                events[fragment.event] = d.set(
                    stream.events[fragment.event], fragment.slot, Field.ARGS, piece[:-left]
                )
                left = 0
            else:
                left -= len(piece)
                if fragment.role is Role.ARGS:
                    gone.append(fragment)
                else:
                    events[fragment.event] = d.set(
                        stream.events[fragment.event], fragment.slot, Field.ARGS, ""
                    )
        short = text[: -self.chars]
        for fragment in group:
            if fragment.role is Role.END and isinstance(_args(stream, stream.events, fragment), str):
                try:
                    events[fragment.event] = d.set(
                        stream.events[fragment.event], fragment.slot, Field.ARGS, short
                    )
                except DialectError as exc:
                    raise NotApplicable(str(exc)) from None
        calls = list(stream.expected.tool_calls)
        was = calls[number]
        calls[number] = was.with_text(short)
        expected = replace(stream.expected, tool_calls=tuple(calls))
        return stream.with_events(_without(stream, events, gone), expected)


@mutation("drop-args-deltas")
@dataclass(frozen=True)
class DropArgsDeltas(Mutation):
    """Remove the argument deltas of calls whose end event carries the whole arguments (E1: args
    only in Responses `function_call_arguments.done`; docker-agent, sub2api, forgecode). An end
    that carries other text than the deltas (none, or a part) keeps its call's deltas: without
    them the call would mean something else."""

    def apply(self, stream: Stream, rng: random.Random) -> Stream:
        gone: list[Fragment] = []
        for group in by_call(fragments_or_skip(stream)).values():
            streamed = args_text(stream.dialect, stream.events, group)
            ends = [_args(stream, stream.events, f) for f in group if f.role is Role.END]
            if isinstance(streamed, str) and streamed in ends:
                gone.extend(f for f in group if f.role is Role.ARGS)
        if not gone:
            raise NotApplicable("no call whose end event carries its arguments")
        return stream.with_events(_without(stream, list(stream.events), gone))


@mutation("stray-args-after-end")
@dataclass(frozen=True)
class StrayArgsAfterEnd(Mutation):
    """Send one more argument piece for a call after its end event (E3: a late `...delta` for a
    closed item appends `}`, pydantic-ai). A correct client ignores it."""

    args: str = "}"

    imitates = (
        Quirk("E3", "pydantic/pydantic-ai PR #6079"),
        # Bedrock Converse toolUse deltas after the block's contentBlockStop, which a parser ignores.
        Quirk("E3", "anomalyco/opencode PR #45847 (Bedrock Converse; #47182 found no capture cited)"),
        # pydantic-ai's AG-UI bridge sent TOOL_CALL_ARGS after TOOL_CALL_END for an MCP tool call.
        Quirk("E3", "pydantic/pydantic-ai#4733 (AG-UI)"),
        # An AI SDK provider streamed tool-input-delta parts after the call's end and tool-call.
        Quirk("E3", "ben-vargas/ai-sdk-provider-claude-code PR #48 (AI SDK UI stream)"),
    )
    breaks = ("*.delta-after-done", "*.delta-outside-block", "*.id-not-active", "*.input-after-available")

    def apply(self, stream: Stream, rng: random.Random) -> Stream:
        d = stream.dialect
        inserts: dict[int, Event] = {}
        for group in by_call(fragments_or_skip(stream)).values():
            ends = [f for f in group if f.role is Role.END]
            pieces = [f for f in group if f.role in _TEXT_ROLES]
            if ends and pieces:
                last = pieces[-1]
                inserts[ends[0].event] = continuation(d, stream.events[last.event], last.slot, self.args)
        if not inserts:
            raise NotApplicable("no call with an end event")
        out: list[Event] = []
        for i, event in enumerate(stream.events):
            out.append(event)
            if i in inserts:
                out.append(inserts[i])
        return stream.with_events(out)


@mutation("args-as-object")
@dataclass(frozen=True)
class ArgsAsObject(Mutation):
    """Send each call's arguments as an already-parsed JSON object in its header and drop the
    pieces (B8: Ollama native, Gemini and some proxies; a concatenating client gets `{}` or
    `{"a":1}{"b":2}`). Only the model's argument text is parsed, never the provider's payload."""

    def apply(self, stream: Stream, rng: random.Random) -> Stream:
        d = stream.dialect
        fragments = fragments_or_skip(stream)
        events: list[Event | None] = list(stream.events)
        gone: list[Fragment] = []
        for group in by_call(fragments).values():
            header = group[0]
            text = args_text(d, stream.events, group)
            if header.role not in (Role.START, Role.WHOLE) or not text:
                continue
            try:
                parsed = bounded.loads(text)
            except ValueError:
                continue
            if not isinstance(parsed, dict):
                continue
            try:
                events[header.event] = d.set(stream.events[header.event], header.slot, Field.ARGS, parsed)
            except DialectError as exc:
                raise NotApplicable(str(exc)) from None
            gone.extend(f for f in group[1:] if f.role is Role.ARGS)
        if not any(e is not stream.events[i] for i, e in enumerate(events)):
            raise NotApplicable("no string arguments to turn into an object")
        return stream.with_events(_without(stream, events, gone))


@mutation("call-in-one-event")
@dataclass(frozen=True)
class CallInOneEvent(Mutation):
    """Send each call whole in one event of the dialect's own whole-call shape: an AG-UI
    `TOOL_CALL_CHUNK` with the id, the name and all the arguments, which starts the call and, with
    whatever comes next, ends it (ag-ui-protocol/ag-ui#2463, #2653: a bridge that sent such a call
    as START then END dropped its arguments); an AI SDK `tool-input-available` with no start, as
    `streamText` sends a call its provider did not stream. Meaning is kept."""

    def apply(self, stream: Stream, rng: random.Random) -> Stream:
        d = stream.dialect
        fragments = fragments_or_skip(stream)
        if not one_fragment_per_event(fragments):
            raise NotApplicable("fragments share events")
        calls = {n: c for n, c in enumerate(stream.expected.tool_calls)}
        inserts: dict[int, list[Event]] = {}
        gone: set[int] = set()
        for number, group in by_call(fragments).items():
            call = calls.get(number)
            if call is None or call.invalid or call.id is None or call.name is None:
                raise NotApplicable("a call that is not whole and final cannot be sent in one event")
            try:
                built = d.build(
                    Kind.TOOL_CALL, id=call.id, name=call.name, args=call.arguments, one_event=True
                )
            except DialectError as exc:
                raise NotApplicable(str(exc)) from None
            if len(built) != 1:
                raise NotApplicable(f"{d.name} has no event that carries a whole call")
            inserts[group[0].event] = built
            gone.update(f.event for f in group)
        events: list[Event] = []
        for i, event in enumerate(stream.events):
            events.extend(inserts.get(i, ()))
            if i not in gone:
                events.append(event)
        if (
            reference_on(d, events, None if stream.complete else stream.error).tool_calls
            != stream.expected.tool_calls
        ):
            raise NotApplicable(f"{d.name} does not end a call sent whole where this stream goes on")
        return stream.with_events(events)


@mutation("args-for-inactive-id")
@dataclass(frozen=True)
class ArgsForInactiveId(Mutation):
    """While a later call streams its arguments, send one argument piece naming an id that is not
    active: the call before it, already ended (`ended`), or an id no call has (`unknown`). A
    client that binds arguments to the active call without checking the id appends the piece to
    the wrong call (microsoft/agent-framework PR #6342, AG-UI `TOOL_CALL_ARGS`). A correct client
    ignores it: meaning is kept, and a dialect whose reference does not ignore it is skipped."""

    which: Literal["ended", "unknown"] = "ended"
    args: str = '"}'

    imitates = (
        Quirk("C-inactive-id", "microsoft/agent-framework PR #6342 (AG-UI TOOL_CALL_ARGS for another id)"),
    )
    breaks = ("*.id-not-active", "*.input-after-available", "*.delta-without-start", "*.delta-after-done")

    def apply(self, stream: Stream, rng: random.Random) -> Stream:
        d = stream.dialect
        groups = list(by_call(fragments_or_skip(stream)).values())
        if len(groups) < 2:
            raise NotApplicable("an id that is not active while another call streams needs two calls")
        events = list(stream.events)
        target = groups[1]
        pieces = [f for f in target if f.role is Role.ARGS]
        if not pieces:
            raise NotApplicable("the second call streams no argument piece")
        earlier = value(d, events, groups[0][0], Field.ID)
        stray_id = earlier if self.which == "ended" else f"{earlier}_inactive"
        if not isinstance(earlier, str) or not earlier:
            raise NotApplicable("the first call has no id")
        if self.which == "ended" and not any(
            f.role is Role.END and f.event < pieces[0].event for f in groups[0]
        ):
            raise NotApplicable("the first call has not ended when the second streams")
        piece = continuation(d, events[pieces[0].event], pieces[0].slot, self.args)
        try:
            piece = d.set(piece, 0, Field.ID, stray_id)
        except DialectError as exc:
            raise NotApplicable(str(exc)) from None
        out = [*events[: pieces[0].event + 1], piece, *events[pieces[0].event + 1 :]]
        seen = reference_on(d, out, None if stream.complete else stream.error)
        if diff(stream.expected, seen, fields=("tool_calls",)):
            raise NotApplicable(f"{d.name} gives a piece for an id that is not active to a call")
        return stream.with_events(out)


# -- invalid streamed JSON under fine-grained / eager tool streaming (G1) --------------------------

Spoil = Literal["mis-escaped", "trailing-bytes", "bare-words"]


@mutation("invalid-streamed-args")
@dataclass(frozen=True)
class InvalidStreamedArgs(Mutation):
    """Make the first call's streamed arguments invalid JSON, as a provider that neither buffers nor
    validates them may send (G1: Anthropic fine-grained / eager input streaming, "not guaranteed"
    to be valid JSON): `mis-escaped` (a backslash before a letter JSON does not escape),
    `trailing-bytes` (the whole object, then one more `}`), `bare-words` (the string values alone,
    no JSON around them). Only for a request that asked for unvalidated arguments
    (`Dialect.streams_unvalidated_args`). Expected: the call as assembled, `invalid` with its raw
    text: never `{}`, never the prefix that parses (docs/oracle.md)."""

    spoil: Spoil = "mis-escaped"

    meaning = Meaning.CHANGING

    def apply(self, stream: Stream, rng: random.Random) -> Stream:
        d = stream.dialect
        if not d.streams_unvalidated_args(stream.request):
            raise NotApplicable("the request did not ask for unvalidated (fine-grained) argument streaming")
        groups = by_call(fragments_or_skip(stream))
        if not groups or not stream.expected.tool_calls:
            raise NotApplicable("no finished call")
        group = [
            f
            for f in groups[min(groups)]
            if f.role in _TEXT_ROLES and isinstance(_args(stream, stream.events, f), str)
        ]
        text = args_text(d, stream.events, group)
        spoiled = _spoiled(text, self.spoil) if isinstance(text, str) else None
        if not group or spoiled is None:
            raise NotApplicable(f"no arguments to make {self.spoil}")
        events = list(stream.events)
        for n, fragment in enumerate(group):
            events[fragment.event] = d.set(
                events[fragment.event], fragment.slot, Field.ARGS, spoiled if n == 0 else ""
            )
        first = stream.expected.tool_calls[0]
        calls = (ToolCall.from_text(first.name, spoiled, first.id), *stream.expected.tool_calls[1:])
        return stream.with_events(events, replace(stream.expected, tool_calls=calls))


def _spoiled(text: str, spoil: str) -> str | None:
    """`text` (a JSON object) made invalid the `spoil` way; None when it cannot be."""
    try:
        value = bounded.loads(text)
    except ValueError:
        return None
    if not isinstance(value, dict):
        return None
    strings = [v for v in value.values() if isinstance(v, str) and v]
    if spoil == "trailing-bytes":
        return text + "}"
    if not strings:
        return None
    if spoil == "bare-words":
        return " ".join(strings)
    for encoded in (json.dumps(strings[0], ensure_ascii=False), json.dumps(strings[0])):
        at = text.find(encoded)
        if at >= 0:
            return text[: at + 1] + "\\q" + text[at + 1 :]  # `"\qParis"`: `\q` is no JSON escape
    return None
