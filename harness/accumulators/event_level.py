"""Event level: the one decode -> feed -> close loop. A fresh user object per case, made by
`factory(dialect)`, fed the case's decoded wire events, then closed.

    class MyAccumulator(harness.accumulators.EventAccumulator):
        def __init__(self, dialect: str) -> None: ...
        def feed(self, event: harness.wire.dialects.Event) -> None: ...
        def close(self, error: str | None) -> harness.Outcome: ...
        def view(self) -> list[ToolCall] | None: ...     # default None: reports nothing early

    EventLevel(MyAccumulator, "mine").run(case)

`view()` is asked after every event; a call it reports that differs from the call the stream
finally makes (by position, name and arguments) was reported before it was final, and is noted
once per call in the returned outcome's `notes`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from harness.accumulators import warmup
from harness.accumulators.base import EventFactory
from harness.cassettes.outcome import Outcome, ToolCall, diff
from harness.errors import AccumulatorProtocolError

if TYPE_CHECKING:
    from harness.mutate.case import Case

__all__ = ["EventLevel", "cut_error"]


def cut_error(case: Case) -> str | None:
    """What `close(error)` is given: None for a stream that ended cleanly, else the transport error."""
    return None if case.complete else (case.error or "stream cut")


class EventLevel:
    """An accumulator built per case by `factory(case.dialect)`, fed `case.events` without SSE
    comments, then `close(error)`; safe to run from several threads (nothing is kept between cases)."""

    def __init__(self, factory: EventFactory, name: str, *, dialects: Sequence[str] | None = None) -> None:
        self.factory = factory
        self.name = name
        self.dialects = dialects  # the dialects it reads, for the warm-up; None: any

    def prepare(self, timeout: float | None = warmup.DEFAULT_TIMEOUT) -> None:
        """Run one small stream per dialect through the accumulator before any case is timed."""
        warmup.warm_up(self.run, self.dialects, timeout)

    def run(self, case: Case) -> Outcome:
        """The outcome for one case, with notes about calls `view()` reported before they were final."""
        acc = self.factory(case.dialect)
        # Without `view` the object has the protocol's default: it reports nothing early.
        view = getattr(acc, "view", None)
        watch = _PrematureCalls(case.expected)
        for position, event in enumerate(case.events):
            if event.wire.is_comment:
                continue
            acc.feed(event)
            if callable(view):
                watch.check(position, view())
        outcome = acc.close(cut_error(case))
        if not isinstance(outcome, Outcome):
            raise AccumulatorProtocolError(
                f"{self.name}: close() returned {type(outcome).__name__}, not a harness.Outcome"
            )
        return replace(outcome, notes=outcome.notes + tuple(watch.notes)) if watch.notes else outcome

    def shutdown(self) -> None:
        """Nothing is held across cases."""

    def prints_nothing(self, case: Case) -> bool:
        """Whether running `case` cannot write to stdout or stderr (so the runner need not capture
        it): never for a user's object."""
        return False


class _PrematureCalls:
    """Compares each `view()` with the calls the stream finally makes."""

    def __init__(self, expected: Outcome) -> None:
        self.expected = expected.tool_calls
        self.notes: list[str] = []
        self._flagged: set[int] = set()

    def check(self, position: int, seen: Any) -> None:
        calls = _calls_of(seen)
        for k, call in enumerate(calls):
            if k in self._flagged:
                continue
            if k >= len(self.expected):
                self._flagged.add(k)
                self.notes.append(
                    f"event {position}: call {k + 1} {call.name!r} reported ready, "
                    f"but the stream makes only {len(self.expected)} call(s)"
                )
                continue
            differences = diff(
                Outcome(tool_calls=(self.expected[k],)), Outcome(tool_calls=(call,)), fields=("tool_calls",)
            )
            if differences:
                self._flagged.add(k)
                what = differences[0].removeprefix("call 1: ")
                self.notes.append(
                    f"event {position}: call {k + 1} reported ready before it was final ({what})"
                )


def _calls_of(seen: Any) -> Sequence[ToolCall]:
    if seen is None:
        return ()
    if isinstance(seen, Outcome):
        return seen.tool_calls
    calls = tuple(seen)
    for call in calls:
        if not isinstance(call, ToolCall):
            raise AccumulatorProtocolError(
                f"view() must return ToolCalls or an Outcome, got a {type(call).__name__}"
            )
    return calls
