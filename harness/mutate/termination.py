"""Termination mutations: the finish signal, the sentinel, cuts and in-band errors (class D).

Each states its expectation: a cut keeps only the calls final before it and expects `cut`; an
injected error expects `error` and no call after it; a changed finish reason changes
`finish_reason`. Where a provider's own rules decide (is a turn whose sentinel is missing
complete? Gemini has none), the dialect's reference accumulator run on the new stream judges the
state and which calls were final, and the calls kept are taken from the previous expectation.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
from typing import Literal

from harness.cassettes.outcome import State
from harness.errors import DialectError, NotApplicable
from harness.mutate import Meaning, Mutation, Quirk, Stream, evolve, mutation
from harness.mutate.calls import (
    by_call,
    expect_prefix,
    first_signal,
    fragments_or_skip,
    spliced,
    terminal_index,
)
from harness.mutate.wire import CUT_ERROR, CUT_ERROR_TYPE
from harness.wire.codecs import WireEvent
from harness.wire.dialects import MISSING, Event, Field, Finish, Kind, Role
from harness.wire.dialects.openai_chat import DONE as BARE_DONE

ERROR_MESSAGE = "Overloaded (injected by toolstream)"


def _finish_events(stream: Stream) -> list[int]:
    return [i for i, e in enumerate(stream.events) if stream.dialect.finish_reason(e) is not MISSING]


def cut_after(stream: Stream, n: int, error: bool) -> Stream:
    """The stream with only its first `n` events, ended by a connection error or a clean close."""
    if n > terminal_index(stream):
        raise NotApplicable("the cut would fall after the terminal signal")
    message = CUT_ERROR if error else None
    events = stream.events[:n]
    cut = error and n <= first_signal(stream)
    expected = expect_prefix(stream, events, state=State.CUT if cut else None, error=message)
    out = stream.with_events(events, expected)
    return evolve(out, complete=not error, error=message, error_type=CUT_ERROR_TYPE if error else None)


@mutation("cut")
@dataclass(frozen=True)
class Cut(Mutation):
    """Cut the stream at an event boundary before its terminal signal (D7 truncated stream; D6
    missing terminal signal with `error: false`). `event` is how many events are kept; else `at`
    is a fraction of the events before the terminal signal; else random."""

    event: int | None = None
    at: float | None = None
    error: bool = True

    meaning = Meaning.CHANGING

    def apply(self, stream: Stream, rng: random.Random) -> Stream:
        limit = terminal_index(stream)
        if self.event is not None:
            n = min(self.event, limit)
        elif self.at is not None:
            n = int(limit * self.at)
        else:
            n = rng.randint(0, limit)
        return cut_after(stream, n, self.error)


@mutation("cut-at-every-event")
@dataclass(frozen=True)
class CutAtEveryEvent(Mutation):
    """A sweep: one case per event boundary before the terminal signal (`e0` keeps no event),
    sampled down to `max_points` with the seed on a long stream (D7, Pitfall 4 of seed 003)."""

    max_points: int = 200
    error: bool = True

    meaning = Meaning.CHANGING

    def sweep(self, stream: Stream, rng: random.Random) -> list[tuple[str, Mutation]]:
        points = list(range(terminal_index(stream) + 1))
        if len(points) > self.max_points:
            points = sorted(rng.sample(points, self.max_points))
        return [(f"e{n}", Cut(event=n, error=self.error)) for n in points]

    def apply(self, stream: Stream, rng: random.Random) -> Stream:
        return cut_after(stream, rng.randint(0, terminal_index(stream)), self.error)


@mutation("cut-mid-args")
@dataclass(frozen=True)
class CutMidArgs(Mutation):
    """Cut inside a call's arguments (D7 truncated mid-args: a disconnect, `length`, `max_tokens`):
    the argument fragment is split in two and the stream ends after its first half. `call` picks
    the call (None: random)."""

    call: int | None = None
    error: bool = True

    meaning = Meaning.CHANGING

    def apply(self, stream: Stream, rng: random.Random) -> Stream:
        d = stream.dialect
        calls = by_call(fragments_or_skip(stream))
        number = self.call if self.call is not None else rng.choice(sorted(calls))
        if number not in calls:
            raise NotApplicable(f"no call {number}")
        events = list(stream.events)
        for fragment in calls[number]:
            args = d.get(events[fragment.event], fragment.slot, Field.ARGS)
            if (
                isinstance(args, str)
                and len(args) >= 2
                and fragment.role in (Role.ARGS, Role.START, Role.WHOLE)
            ):
                half = len(args) // 2
                first = d.set(events[fragment.event], fragment.slot, Field.ARGS, args[:half])
                try:
                    rest = d.continuation(first, fragment.slot, args[half:])
                except DialectError:
                    break  # a whole-call wire, arguments as text (an Ollama proxy's): as below
                events[fragment.event] = first
                events = spliced(d, events, {fragment.event: [rest]})  # a finish it carried never came
                return cut_after(stream.with_events(events), fragment.event + 1, self.error)
        # No argument text to split (whole-call dialects): cut right after the call's first fragment.
        return cut_after(stream, calls[number][0].event + 1, self.error)


@mutation("inject-error")
@dataclass(frozen=True)
class InjectError(Mutation):
    """Insert an in-band error event and close the stream (D8: Anthropic `event: error`, an
    OpenAI-compatible `{"error":...}` chunk, an Ollama `{"error":...}` line, a Bedrock exception
    frame). `after`: `partial-call` (after the first argument fragment of the last call), `start`
    (after the first event) or `random`. Expected: state error, only calls final before it."""

    after: Literal["partial-call", "start", "random"] = "partial-call"
    message: str = ERROR_MESSAGE

    meaning = Meaning.CHANGING

    def apply(self, stream: Stream, rng: random.Random) -> Stream:
        d = stream.dialect
        if self.after == "partial-call":
            calls = by_call(fragments_or_skip(stream))
            last = calls[max(calls)]
            n = (last[1] if len(last) > 1 else last[0]).event + 1
        elif self.after == "start":
            n = min(1, len(stream.events))
        else:
            n = rng.randint(0, terminal_index(stream))
        n = min(n, terminal_index(stream))
        built = d.build(Kind.ERROR, message=self.message, like=stream.events[0] if stream.events else None)
        if not built:
            raise NotApplicable(f"{d.name} has no in-band error event")
        events = [*stream.events[:n], *built]
        expected = expect_prefix(stream, events, state=State.ERROR, error=self.message, closed_with="")
        return stream.with_events(events, expected)


@mutation("drop-finish")
@dataclass(frozen=True)
class DropFinish(Mutation):
    """Remove the finish / stop reason everywhere (D6: `[DONE]` without `finish_reason`). Expected:
    no finish reason; whether the turn still completes and which calls are final is the dialect's."""

    meaning = Meaning.CHANGING

    def apply(self, stream: Stream, rng: random.Random) -> Stream:
        found = _finish_events(stream)
        if not found:
            raise NotApplicable("no finish reason to drop")
        events = list(stream.events)
        for i in found:
            events[i] = stream.dialect.with_finish_reason(events[i], MISSING)
        expected = expect_prefix(stream, events, state=None, error=None)
        return stream.with_events(events, replace(expected, finish_reason=None))


@mutation("change-finish")
@dataclass(frozen=True)
class ChangeFinish(Mutation):
    """Replace the finish reason with the dialect's own word for `reason` (D1 with `stop`: a normal
    stop although calls were made; vLLM forced tool_choice, LiteLLM, MCP-Bridge). `reason` is a
    meaning (`stop`, `tool-calls`, `length`, `content-filter`); it does not apply where the
    dialect has no word for it, or already says it (Gemini and Ollama say STOP / `stop` after
    calls: they have no D1). Expected: that finish reason; the calls stay unless the dialect
    says the new reason ends the turn otherwise (Gemini SAFETY is an error)."""

    reason: Literal["stop", "tool-calls", "length", "content-filter"] = "stop"

    meaning = Meaning.CHANGING
    imitates = (
        Quirk("D1", "vllm-project/vllm PR #9209 (forced tool_choice)"),
        Quirk("D1", "BerriAI/litellm#12862; SecretiveShell/MCP-Bridge PR #96"),
    )
    breaks = ("*.finish-contradicts-calls",)

    def apply(self, stream: Stream, rng: random.Random) -> Stream:
        d = stream.dialect
        word = d.finish_reasons.get(Finish(self.reason))
        if word is None:
            raise NotApplicable(f"{d.name} has no finish reason meaning {self.reason}")
        found = [i for i in _finish_events(stream) if d.finish_reason(stream.events[i]) != word]
        if not found:
            raise NotApplicable(f"no finish reason other than {word!r} to change")
        events = list(stream.events)
        for i in found:
            events[i] = d.with_finish_reason(events[i], word)
        expected = expect_prefix(stream, events, state=None, error=None)
        return stream.with_events(events, replace(expected, finish_reason=word))


@mutation("move-finish")
@dataclass(frozen=True)
class MoveFinish(Mutation):
    """Move the finish reason (D2): `with-last-args` onto the chunk of the last argument fragment
    (vLLM, rust-genai), or `before-last-args`, the finish event sent before the trailing argument
    fragment (not a `length` finish: the call it cuts is the one streamed when it comes). A
    correct client still gets every argument: meaning is kept."""

    to: Literal["with-last-args", "before-last-args"] = "with-last-args"

    imitates = (Quirk("D2", "jeremychone/rust-genai PR #164; vllm-project/vllm PR #36944"),)
    breaks = ("*.delta-after-finish", "*.content-after-finish")

    def apply(self, stream: Stream, rng: random.Random) -> Stream:
        d = stream.dialect
        found = _finish_events(stream)
        fragments = [f for f in fragments_or_skip(stream) if f.role in (Role.ARGS, Role.WHOLE, Role.START)]
        if not found or not fragments:
            raise NotApplicable("needs a finish reason and argument fragments")
        f, last = found[0], fragments[-1].event
        if last >= f:
            raise NotApplicable("the finish already shares or precedes the last argument fragment")
        events = list(stream.events)
        reason = d.finish_reason(events[f])
        if Kind.SENTINEL in d.kinds(events[f]):
            raise NotApplicable("the finish is the terminal signal itself")
        if self.to == "with-last-args":
            try:
                events[last] = d.with_finish_reason(events[last], reason)
                events[f] = d.with_finish_reason(events[f], MISSING)
            except DialectError as exc:
                raise NotApplicable(str(exc)) from None
            if d.kinds(events[f]) <= {Kind.META}:
                del events[f]
            return stream.with_events(events)
        if d.kinds(events[f]) - {Kind.FINISH, Kind.META, Kind.USAGE}:
            raise NotApplicable("the finish event carries more than the finish")
        if reason is not MISSING and reason == d.finish_reasons.get(Finish.LENGTH):
            # The output limit cut the call being streamed when it came: sent earlier, it names another.
            raise NotApplicable("a length finish sent earlier would cut another call")
        moved = events.pop(f)
        events.insert(last, moved)
        return stream.with_events(events)


@mutation("duplicate-finish")
@dataclass(frozen=True)
class DuplicateFinish(Mutation):
    """Send the finish event twice (a gateway replaying its last chunk). Meaning is kept."""

    def apply(self, stream: Stream, rng: random.Random) -> Stream:
        found = _finish_events(stream)
        if not found:
            raise NotApplicable("no finish event")
        events = list(stream.events)
        events.insert(found[0] + 1, events[found[0]])
        return stream.with_events(events)


@mutation("drop-sentinel")
@dataclass(frozen=True)
class DropSentinel(Mutation):
    """Remove the terminal signal (`[DONE]`, `message_stop`, `response.completed`, `done: true`):
    D6. Expected: the dialect judges whether the turn is still complete (OpenAI: a finish reason
    was enough) and which calls were final; Gemini has no sentinel, so this does not apply."""

    meaning = Meaning.CHANGING

    def apply(self, stream: Stream, rng: random.Random) -> Stream:
        d = stream.dialect
        events = [e for e in stream.events if Kind.SENTINEL not in d.kinds(e)]
        if len(events) == len(stream.events):
            raise NotApplicable("no sentinel")
        expected = expect_prefix(stream, events, state=None, error=None)
        return stream.with_events(events, expected)


@mutation("duplicate-sentinel")
@dataclass(frozen=True)
class DuplicateSentinel(Mutation):
    """Send the terminal signal twice (a proxy that adds its own `[DONE]`). Meaning is kept."""

    def apply(self, stream: Stream, rng: random.Random) -> Stream:
        d = stream.dialect
        at = [i for i, e in enumerate(stream.events) if Kind.SENTINEL in d.kinds(e)]
        if not at:
            raise NotApplicable("no sentinel")
        events = list(stream.events)
        events.insert(at[-1] + 1, events[at[-1]])
        return stream.with_events(events)


@mutation("drop-calls")
@dataclass(frozen=True)
class DropCalls(Mutation):
    """Remove every tool-call fragment but keep the finish reason (D9: `finish_reason:"tool_calls"`
    with no tool deltas). Expected: no calls. Blocks after the dropped ones are renumbered."""

    meaning = Meaning.CHANGING
    imitates = (Quirk("D9", "openai-agents-python raises on it (code); ollama/ollama#5796"),)
    breaks = ("*.finish-contradicts-calls",)

    def apply(self, stream: Stream, rng: random.Random) -> Stream:
        d = stream.dialect
        fragments = fragments_or_skip(stream)
        events: list[Event | None] = list(stream.events)
        for fragment in sorted(fragments, key=lambda f: (f.event, f.slot), reverse=True):
            current = events[fragment.event]
            if current is not None:
                events[fragment.event] = d.remove(current, fragment.slot)
        kept = d.renumber([e for e in events if e is not None])
        return stream.with_events(kept, replace(stream.expected, tool_calls=()))


# -- starts and ends that are not announced ---------------------------------------------------------


@mutation("bare-done")
@dataclass(frozen=True)
class BareDone(Mutation):
    """End a stream whose dialect has a terminal event of its own with OpenAI chat's bare
    `data: [DONE]`: `instead` of that terminal event (a gateway translating chat to Responses that
    drops `response.completed`, router-for-me/CLIProxyAPI#1085), or after it (a proxy adding the
    chat sentinel to a Responses stream, router-for-me/CLIProxyAPI#3352). Expected: instead, the
    dialect judges the stream without its terminal event (as `drop-sentinel`); after, nothing
    after the terminal event counts, so meaning is kept."""

    instead: bool = True

    meaning = Meaning.CHANGING
    imitates = (
        Quirk("D6", "router-for-me/CLIProxyAPI#1085 (no response.completed, a bare [DONE])"),
        Quirk("D6", "router-for-me/CLIProxyAPI#3352 ([DONE] after response.completed)"),
    )
    breaks = ("*.event-after-terminal", "*.item-not-done")

    def apply(self, stream: Stream, rng: random.Random) -> Stream:
        d = stream.dialect
        at = [i for i, e in enumerate(stream.events) if Kind.SENTINEL in d.kinds(e)]
        if not at or any(stream.events[i].payload == BARE_DONE for i in at):
            raise NotApplicable("no terminal event of its own (the dialect's sentinel is already [DONE])")
        done = Event(WireEvent(data=BARE_DONE), BARE_DONE)
        if not self.instead:
            return stream.with_events([*stream.events[: at[-1] + 1], done, *stream.events[at[-1] + 1 :]])
        kept = [e for i, e in enumerate(stream.events) if i not in at]
        expected = expect_prefix(stream, kept, state=None, error=None)
        return stream.with_events([*kept, done], expected)
