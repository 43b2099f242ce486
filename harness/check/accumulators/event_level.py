"""Event level: a fresh user object per case, fed the case's decoded wire events, then closed.

    class MyAccumulator:
        def __init__(self, dialect: str) -> None: ...      # or no parameter at all
        def feed(self, event: harness.wire.dialects.Event) -> None: ...
        def close(self, error: str | None) -> harness.Outcome: ...
        def view(self) -> list[ToolCall]: ...              # optional: the calls ready now

    EventLevel(MyAccumulator, "mine").run(case)

When the object has `view()`, it is asked after every event; a call it reports that differs from
the call the stream finally makes (by position, name and arguments) was reported before it was
final, and is noted once per call in `last_notes` (and returned by `run_noted`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from harness.check.outcome import Outcome, ToolCall, diff
from harness.errors import AccumulatorProtocolError

if TYPE_CHECKING:
    from harness.mutate.scenario import Case

__all__ = ["EventLevel", "cut_error", "takes_dialect"]


def cut_error(case: Case) -> str | None:
    """What `close(error)` is given: None for a stream that ended cleanly, else the transport error."""
    return None if case.response.complete else (case.response.error or "stream cut")


def takes_dialect(factory: Callable[..., Any]) -> bool:
    """Whether a factory (class or function) accepts a positional parameter, the dialect name."""
    try:
        signature = inspect.signature(factory)
    except (TypeError, ValueError):  # builtins without a signature: call them bare
        return False
    positional = (
        inspect.Parameter.POSITIONAL_ONLY,
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
        inspect.Parameter.VAR_POSITIONAL,
    )
    return any(p.kind in positional for p in signature.parameters.values())


class EventLevel:
    """An accumulator built per case by `factory` (called with the dialect name when it takes a
    parameter), fed `case.events` without SSE comments, then `close(error)`."""

    def __init__(self, factory: Callable[..., Any], name: str) -> None:
        self.factory = factory
        self.name = name
        self.last_notes: tuple[str, ...] = ()
        self._with_dialect = takes_dialect(factory)

    def run(self, case: Case) -> Outcome:
        """The outcome for one case; notes about premature calls land in `last_notes`."""
        outcome, self.last_notes = self.run_noted(case)
        return outcome

    def run_noted(self, case: Case) -> tuple[Outcome, tuple[str, ...]]:
        """The outcome and the premature-call notes of one case (safe to call from several threads)."""
        acc = self.factory(case.dialect) if self._with_dialect else self.factory()
        view = getattr(acc, "view", None)
        watch = _PrematureCalls(case.expected) if callable(view) else None
        for position, event in enumerate(case.events):
            if event.wire.is_comment:
                continue
            acc.feed(event)
            if watch is not None and callable(view):
                watch.check(position, view())
        outcome = acc.close(cut_error(case))
        if not isinstance(outcome, Outcome):
            raise AccumulatorProtocolError(
                f"{self.name}: close() returned {type(outcome).__name__}, not a harness.Outcome"
            )
        return outcome, tuple(watch.notes) if watch is not None else ()

    def shutdown(self) -> None:
        """Nothing is held across cases."""


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
