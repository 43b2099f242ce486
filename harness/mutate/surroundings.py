"""Surroundings: what streams around the tool calls (text, reasoning, usage-only chunks, pings,
duplicate starts). Events are built by the dialect (`build`); only inserted text changes the
expectation, and it says where the text lands.
"""

from __future__ import annotations

import fnmatch
import random
from dataclasses import dataclass, replace
from typing import Literal

from harness.errors import NotApplicable
from harness.mutate import Meaning, Mutation, Quirk, Stream, mutation
from harness.mutate.calls import by_call, fragments_or_skip, reference_on, reparted, terminal_index
from harness.wire.dialects import Event, Kind

Where = Literal["start", "before-tools", "between-tools", "after-tools", "end"]
# Numbering is `renumber`'s and `resequence`'s job (the validity test checks both), not a reason to
# refuse a position.
_NUMBERING = ("*.block-index-*", "*.output-index-*", "*.sequence-*")


def _position(stream: Stream, where: str) -> int:
    """Where to insert: after the opening meta events, around the tool fragments, or before the
    terminal signal (before the finish event when there is no sentinel)."""
    d = stream.dialect
    if where == "start":
        n = 0
        while n < len(stream.events) and d.kinds(stream.events[n]) <= {Kind.META, Kind.COMMENT}:
            n += 1
        return n
    if where in ("before-tools", "after-tools"):
        fragments = fragments_or_skip(stream)
        return fragments[0].event if where == "before-tools" else fragments[-1].event + 1
    if where == "between-tools":  # before the second call's first fragment
        calls = list(by_call(fragments_or_skip(stream)).values())
        if len(calls) < 2:
            raise NotApplicable("no second call to insert before")
        return calls[1][0].event
    return min([terminal_index(stream), *_finishes(stream)])


def _finishes(stream: Stream) -> list[int]:
    return [i for i, e in enumerate(stream.events) if Kind.FINISH in stream.dialect.kinds(e)]


def _insert(stream: Stream, at: int, built: list[Event]) -> list[Event]:
    """The events with `built` inserted at `at`, every block after it renumbered by position. Not
    applicable where no provider would send them: after the finish, or inside a block still open
    (a stream cut mid-call), which the dialect's invariants tell."""
    d = stream.dialect
    if any(at > i for i in _finishes(stream)):
        raise NotApplicable("the finish comes before this point: a provider sends nothing after it")
    events = d.resequence(d.restate(d.renumber([*stream.events[:at], *built, *stream.events[at:]])))
    was = {v.code for v in d.invariants(stream.events)}
    new = sorted(
        code
        for code in {v.code for v in d.invariants(events)} - was
        if not any(fnmatch.fnmatchcase(code, pattern) for pattern in _NUMBERING)
    )
    if new:
        raise NotApplicable(f"no provider sends these events here ({', '.join(new)})")
    return events


def _build(stream: Stream, kind: Kind, **params: object) -> list[Event]:
    like = stream.events[0] if stream.events else None
    built = stream.dialect.build(kind, like=like, **params)
    if not built:
        raise NotApplicable(f"{stream.dialect.name} has no {kind} event")
    return built


@mutation("insert-text")
@dataclass(frozen=True)
class InsertText(Mutation):
    """Insert assistant text (C6: "I'll check " before a tool delta, "that now." after it; text
    mixed with tool calls that a buffering client drops). Expected: the text lands at its place in
    the outcome's text (the reference accumulator run on the prefix says how much text came
    before it)."""

    text: str = "I'll check that now. "
    where: Where = "before-tools"

    meaning = Meaning.CHANGING

    def apply(self, stream: Stream, rng: random.Random) -> Stream:
        at = _position(stream, self.where)
        before = reference_on(stream.dialect, stream.events[:at], None).text
        old = stream.expected.text
        if not old.startswith(before):
            raise NotApplicable("the text before this point is not a prefix of the expected text")
        events = _insert(stream, at, _build(stream, Kind.TEXT, text=self.text))
        expected = replace(stream.expected, text=before + self.text + old[len(before) :])
        return stream.with_events(events, reparted(stream, events, expected))


@mutation("insert-reasoning")
@dataclass(frozen=True)
class InsertReasoning(Mutation):
    """Insert reasoning / thinking before the tool calls (C4: a thinking block shifts the tool
    call's index; `reasoning_content` deltas first), or between two calls (`between-tools`:
    interleaved thinking, only where the request enables it: the dialect's request rules say).
    Expected: the calls and text as before, the reasoning a part of its own where it was inserted
    (`Outcome.parts`), its signature (Anthropic) to go back with it."""

    text: str = "The user wants the weather; I should call the tool."
    where: Where = "before-tools"

    def apply(self, stream: Stream, rng: random.Random) -> Stream:
        at = _position(stream, self.where)
        events = _insert(stream, at, _build(stream, Kind.REASONING, text=self.text))
        unasked = stream.unrequested(events)
        if unasked:
            raise NotApplicable(f"the request did not ask for reasoning here ({', '.join(unasked)})")
        return stream.with_events(events, reparted(stream, events))


@mutation("usage-chunks")
@dataclass(frozen=True)
class UsageChunks(Mutation):
    """Insert usage-only events (D4: `{"choices":[],"usage":{...}}` before `[DONE]`; with
    `every: true`, one after each event, the usage-on-every-chunk shape of D5). Usage is not
    compared. Only where the request asked for usage (OpenAI chat `stream_options.include_usage`).

    D4's event is final: it goes after the finish (so after every block stopped: Anthropic's
    usage-only `message_delta` after the last `content_block_stop` and the stop reason), before the
    terminal signal. Not applicable where nothing finished (a cut or an error mid-call), where the
    finish is itself the last event (Gemini, Bedrock's `messageStop` before its `metadata`), or
    where the stream already ends with a usage-only event (OpenAI chat's `include_usage` chunk,
    Bedrock's `metadata`): no provider sends two, and its own case is this shape already."""

    every: bool = False

    def apply(self, stream: Stream, rng: random.Random) -> Stream:
        built = _build(stream, Kind.USAGE)
        if not self.every:
            events = self._final(stream, built)
        else:
            limit = terminal_index(stream)
            events = []
            for n, event in enumerate(stream.events):
                events.append(event)
                if n < limit:
                    events.extend(built)
        unasked = stream.unrequested(events)
        if unasked:
            raise NotApplicable(f"the request did not ask for usage ({', '.join(unasked)})")
        return stream.with_events(events)

    @staticmethod
    def _final(stream: Stream, built: list[Event]) -> list[Event]:
        at = terminal_index(stream)
        finished = [i for i in _finishes(stream) if i < at]
        if not finished:
            raise NotApplicable("nothing finished before the terminal signal: a final usage event follows it")
        kinds = stream.dialect.kinds
        if any(kinds(event) == {Kind.USAGE} for event in stream.events[finished[-1] + 1 :]):
            raise NotApplicable("the stream ends with a usage-only event already")
        return [*stream.events[:at], *built, *stream.events[at:]]


@mutation("pings")
@dataclass(frozen=True)
class Pings(Mutation):
    """Insert the provider's ping events after every `every`-th event (F8: Anthropic `ping`
    anywhere, unknown event types a strict client chokes on)."""

    every: int = 2

    def apply(self, stream: Stream, rng: random.Random) -> Stream:
        built = _build(stream, Kind.PING)
        limit = terminal_index(stream)
        events: list[Event] = []
        for n, event in enumerate(stream.events):
            events.append(event)
            if n < limit and (n + 1) % max(1, self.every) == 0:
                events.extend(built)
        return stream.with_events(events)


@mutation("duplicate-start")
@dataclass(frozen=True)
class DuplicateStart(Mutation):
    """Send a start event twice (D10: a proxy repeating `message_start`; llama.cpp's duplicate
    `content_block_start`; a repeated tool-call header). A correct client is idempotent."""

    what: Literal["message", "tool"] = "message"

    imitates = (
        Quirk("D10", "vercel/ai fixture duplicate-message-start.chunks.txt"),
        Quirk("D10", "llama.cpp server 'fix duplicate content_block_start' commit"),
    )
    breaks = (
        "*.message-start-repeated",
        "*.block-start-repeated",
        "*.item-id-reused",
        "*.output-index-reused",
    )

    def apply(self, stream: Stream, rng: random.Random) -> Stream:
        d = stream.dialect
        events = list(stream.events)
        if self.what == "message":
            at = [i for i, e in enumerate(events) if Kind.META in d.kinds(e)]
            if not at:
                raise NotApplicable("no message start event")
            events.insert(at[0] + 1, events[at[0]])
            return stream.with_events(events)
        headers = sorted(
            {f.event for f in fragments_or_skip(stream) if f.role.value == "start"}, reverse=True
        )
        if not headers:
            raise NotApplicable("no tool start event")
        for i in headers:
            if len([f for f in d.fragments([events[i]])]) != 1:
                raise NotApplicable("a start event carries more than one fragment")
            events.insert(i + 1, events[i])
        return stream.with_events(events)


# -- content and call fragments in one delta ------------------------------------------------------


@mutation("text-with-call")
@dataclass(frozen=True)
class TextWithCall(Mutation):
    """Put assistant text in the same delta as the first call's header (content and tool-call
    fragments in one chunk: Poolside's API, poolsideai/pool#9; a client that reads a delta's text
    or its calls, not both, loses one). Expected: the text at its place in the outcome's text."""

    text: str = "Checking that now. "

    meaning = Meaning.CHANGING
    imitates = (Quirk("C6", "poolsideai/pool#9 (content and tool_calls in one delta)"),)

    def apply(self, stream: Stream, rng: random.Random) -> Stream:
        fragments = fragments_or_skip(stream)
        at = fragments[0].event
        merged = stream.dialect.with_text(stream.events[at], self.text)
        if merged is None:
            raise NotApplicable(f"{stream.dialect.name} cannot carry text beside a call fragment")
        before = reference_on(stream.dialect, stream.events[:at], None).text
        old = stream.expected.text
        if not old.startswith(before):
            raise NotApplicable("the text before this point is not a prefix of the expected text")
        events = [*stream.events[:at], merged, *stream.events[at + 1 :]]
        return stream.with_events(
            events, replace(stream.expected, text=before + self.text + old[len(before) :])
        )


@mutation("drop-start-events")
@dataclass(frozen=True)
class DropStartEvents(Mutation):
    """Leave out the events that announce the response before its first item (Responses
    `response.created` and `response.in_progress`): a gateway's translated stream that starts with
    `output_item.added` (LibreChat-AI/agents PR #164, ENTERPILOT/GoModel PR #935: openai-python's
    `responses.stream()` crashed on it). They carry nothing a call needs: meaning is kept."""

    imitates = (
        Quirk("D10", "LibreChat-AI/agents PR #164; ENTERPILOT/GoModel PR #935 (no response.created)"),
    )

    def apply(self, stream: Stream, rng: random.Random) -> Stream:
        kept = [e for e in stream.events if not stream.dialect.announces(e)]
        if len(kept) == len(stream.events):
            raise NotApplicable("no events that announce the response")
        return stream.with_events(kept)


@mutation("signature-after-next-block")
@dataclass(frozen=True)
class SignatureAfterNextBlock(Mutation):
    """Send each reasoning block's signature, and the block's end, after the next block's first
    delta (the dialect's `sign_late`): a gateway relaying Anthropic sends the `signature_delta`
    after the thinking text, even after the text that follows (OpenRouter, rikkahub/rikkahub#1075).
    Keyed by its index it is still the thinking block's: the parts are as before. A client that
    hangs a signature on the last part only when that part is reasoning makes a reasoning part of
    its own, unsigned thinking before it."""

    imitates = (Quirk("C1", "rikkahub/rikkahub#1075 / PR #1076 (OpenRouter relaying Anthropic)"),)
    breaks = ("*.block-overlap",)

    def apply(self, stream: Stream, rng: random.Random) -> Stream:
        events = stream.dialect.sign_late(stream.events)
        if events is None:
            raise NotApplicable("no signed reasoning block with a block after it")
        return stream.with_events(events)
