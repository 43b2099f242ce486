"""Detectors of the catalogue's stream shapes (`A1`, `C3`, `D6` ...: docs/gateways.md, what
`toolstream probe` reports) that read a stream through a dialect's roles only: its tool-call
fragments and their fields, the kinds of its events, its finish words. A dialect picks the ones
its protocol can show, beside detectors of its own, each in a row of its `shape_codes`
(`Validation.shapes` runs them).

Each detector takes the dialect, the whole stream's events and their fragments, and gives the
position of the first event that shows its shape, or None.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from harness.wire.dialects.base import MISSING, Detector, Event, Field, Finish, Fragment, Kind, Role

if TYPE_CHECKING:
    from harness.wire.dialects.base import Dialect

__all__ = [
    "Detector",
    "calls_in_one_event",
    "calls_one_after_another",
    "calls_share_an_index",
    "empty_args_fragment",
    "error_event",
    "finish_apart_from_calls",
    "interleaved_calls",
    "no_terminal_event",
    "reasoning_before_call",
    "stop_after_calls",
    "tool_finish_without_calls",
]


def _starts(fragments: Sequence[Fragment]) -> dict[int, Fragment]:
    """Each call's first fragment."""
    first: dict[int, Fragment] = {}
    for fragment in fragments:
        first.setdefault(fragment.call, fragment)
    return first


def _ends(fragments: Sequence[Fragment]) -> dict[int, int]:
    """Each call's last event (its end marker, its last argument, or the whole call)."""
    last: dict[int, int] = {}
    for fragment in fragments:
        last[fragment.call] = fragment.event
    return last


def calls_share_an_index(d: Dialect, events: Sequence[Event], fragments: Sequence[Fragment]) -> int | None:
    """A1: a call starts at the index (block, output item) an earlier call started at."""
    started: dict[str, int] = {}
    for call, first in _starts(fragments).items():
        index = d.get(events[first.event], first.slot, Field.INDEX)
        if index is MISSING or index is None:
            continue
        if started.setdefault(repr(index), call) != call:
            return first.event
    return None


def interleaved_calls(d: Dialect, events: Sequence[Event], fragments: Sequence[Fragment]) -> int | None:
    """C1: a call's arguments or end come after a later call has started (two open at once)."""
    newest = -1
    for fragment in fragments:
        if fragment.call < newest and fragment.role in (Role.ARGS, Role.END):
            return fragment.event
        newest = max(newest, fragment.call)
    return None


def calls_one_after_another(d: Dialect, events: Sequence[Event], fragments: Sequence[Fragment]) -> int | None:
    """C3: a call starts, at an index of its own, after the one before it ended."""
    starts, ends = _starts(fragments), _ends(fragments)
    for call, first in starts.items():
        if call == 0:
            continue
        here = d.get(events[first.event], first.slot, Field.INDEX)
        before = starts[call - 1]
        there = d.get(events[before.event], before.slot, Field.INDEX)
        # keyed by id where there is no index: a call after the one before it ended is another call
        if first.event > ends[call - 1] and (here is MISSING or repr(here) != repr(there)):
            return first.event
    return None


def calls_in_one_event(d: Dialect, events: Sequence[Event], fragments: Sequence[Fragment]) -> int | None:
    """C2: fragments of several calls in one event."""
    calls: dict[int, set[int]] = {}
    for fragment in fragments:
        calls.setdefault(fragment.event, set()).add(fragment.call)
        if len(calls[fragment.event]) > 1:
            return fragment.event
    return None


def empty_args_fragment(d: Dialect, events: Sequence[Event], fragments: Sequence[Fragment]) -> int | None:
    """B7: an argument fragment that carries no text."""
    for fragment in fragments:
        if fragment.role is Role.ARGS and d.get(events[fragment.event], fragment.slot, Field.ARGS) == "":
            return fragment.event
    return None


def reasoning_before_call(d: Dialect, events: Sequence[Event], fragments: Sequence[Fragment]) -> int | None:
    """C4: reasoning (a thinking block, a reasoning item) before the first call, which it shifts."""
    if not fragments:
        return None
    first = fragments[0].event
    return next((n for n, event in enumerate(events[:first]) if Kind.REASONING in d.kinds(event)), None)


def _finishes(d: Dialect, events: Sequence[Event], meaning: Finish) -> list[int]:
    word = d.finish_reasons.get(meaning)
    return [n for n, event in enumerate(events) if word is not None and d.finish_reason(event) == word]


def stop_after_calls(d: Dialect, events: Sequence[Event], fragments: Sequence[Fragment]) -> int | None:
    """D1: the plain stop word after calls, where the dialect has a word for a tool-call stop."""
    if not fragments or Finish.TOOL_CALLS not in d.finish_reasons:
        return None
    return next(iter(_finishes(d, events, Finish.STOP)), None)


def tool_finish_without_calls(
    d: Dialect, events: Sequence[Event], fragments: Sequence[Fragment]
) -> int | None:
    """D9: the tool-call stop word in a stream without a call."""
    return None if fragments else next(iter(_finishes(d, events, Finish.TOOL_CALLS)), None)


def finish_apart_from_calls(d: Dialect, events: Sequence[Event], fragments: Sequence[Fragment]) -> int | None:
    """D2: the finish in an event of its own after the calls (not in the call's event)."""
    if not fragments:
        return None
    last = fragments[-1].event
    for n, event in enumerate(events):
        if n > last and d.finish_reason(event) is not MISSING and d.finish_reason(event) is not None:
            return n
    return None


def no_terminal_event(d: Dialect, events: Sequence[Event], fragments: Sequence[Fragment]) -> int | None:
    """D6: a whole stream that ends without the dialect's terminal event."""
    return None if not events or d.is_terminal(events) else len(events) - 1


def error_event(d: Dialect, events: Sequence[Event], fragments: Sequence[Fragment]) -> int | None:
    """D8: an in-band error event."""
    return next((n for n, event in enumerate(events) if Kind.ERROR in d.kinds(event)), None)
