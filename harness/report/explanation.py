"""`toolstream explain CASE_ID` as text: why a case expects what it expects.

Four parts: the recorded and the mutated stream side by side with the changed events marked;
what each step of the scenario did; the case's class (spec, quirk, policy) with its reason; and
the situation of docs/oracle.md ("One rule per situation") that gives the expected state and
calls, with each expected call's reason and each recorded call that is no longer expected.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from harness.cassettes.outcome import Outcome, State
from harness.matrix.case_id import FoundCase, StepEffect, step_effects
from harness.oracle.expectation import classify, rule_for, scope, situation
from harness.report.inspection import gists
from harness.report.outcomes import call_text, headline
from harness.text.escape import terminal_line as one_line
from harness.text.terminal import LONG_VALUE, shorten
from harness.wire import dialects
from harness.wire.dialects.base import Event

__all__ = ["SITUATIONS", "Situation", "explain", "situation_of"]

ORACLE_DOC: Final = "docs/oracle.md, 'One rule per situation'"


@dataclass(frozen=True)
class Situation:
    """A row of docs/oracle.md's situation table (`tests/cli/test_cli_explain.py` checks they agree)."""

    name: str
    state: State
    calls: str  # all, final or none
    gist: str


_ROWS: Final = (
    Situation("whole-stream", State.COMPLETE, "all", "the finish and the terminal event arrived"),
    Situation("finish-without-terminal", State.COMPLETE, "all", "the finish says the turn is over"),
    Situation("terminal-without-finish", State.COMPLETE, "all", "the terminal event says it is whole"),
    Situation("cut-after-terminal", State.COMPLETE, "all", "after the terminal event nothing counts"),
    Situation("error-after-terminal", State.COMPLETE, "all", "after the terminal event nothing counts"),
    Situation("error-mid-call", State.ERROR, "none", "a call is final only at its end or the finish (D8)"),
    Situation("error-after-final-call", State.ERROR, "final", "the call was final before the error"),
    Situation("error-then-cut", State.ERROR, "none", "the provider said why the stream stopped"),
    Situation("cut-mid-call", State.CUT, "none", "the arguments were never finished (D7)"),
    Situation("cut-after-final-call", State.CUT, "final", "a call ended by its own end marker stays final"),
    Situation("cut-after-finish", State.CUT, "final", "the calls were final at the finish"),
    Situation("stream-just-stops", State.CUT, "final", "a clean close, no finish, no terminal event"),
    Situation("length-with-open-call", State.COMPLETE, "final", "the limit cut the open call: not final"),
    Situation("terminal-with-open-call", State.COMPLETE, "all", "no more will come: reported as assembled"),
    Situation("unknown-finish", State.COMPLETE, "all", "an undocumented reason still ends the turn"),
)
SITUATIONS: Final = {row.name: row for row in _ROWS}


def situation_of(found: FoundCase) -> Situation:
    """The situation a case's stream is in, read from its events and how its response ended
    (`harness.oracle.expectation.situation`, which also gives the case its ending's class)."""
    return SITUATIONS[situation(found.case)]


def explain(found: FoundCase, width: int | None = 120) -> str:
    """The whole explanation, as printed by `toolstream explain`; `width` None: no event is cut
    to fit a width (output piped)."""
    case, source, scenario = found.case, found.source, found.scenario
    expectation = classify(case, scenario)
    description = " ".join(scenario.description.split())
    lines = [
        f"case {one_line(case.id)}",
        f"  recorded: {one_line(source.id)} ({case.dialect}) from {one_line(str(source.path))}",
        f"  scenario: {one_line(scenario.name)}: {one_line(description) or '-'}",
        f"  class:    {expectation.case_class}: {one_line(expectation.reason)}",
    ]
    narrow = scope(case, scenario)
    if narrow.ending.case_class is not narrow.rest.case_class:
        # The ending's rule covers the state, the finish reason and which calls stand, no more
        # (docs/oracle.md, "Which class judges a difference").
        if narrow.ending != expectation:
            lines.append(f"  ending:   {narrow.ending.case_class}: {one_line(narrow.ending.reason)}")
        lines.append(f"  the rest: {narrow.rest.case_class}: {one_line(narrow.rest.reason)}")
    lines += [
        "",
        "what each step did:",
    ]
    effects = step_effects(found)
    if not effects:
        lines.append("  nothing: the recorded stream, unmutated")
    for n, effect in enumerate(effects, start=1):
        rule = rule_for(effect.step, case)
        did = _effect(effect, case.dialect)
        lines.append(
            f"  {n}. {one_line(_step_name(effect))}: {did} [{rule.case_class}: {one_line(rule.text())}]"
        )
    if source.interaction.response.complete and not case.response.complete:
        lines.append(f"  the transport is cut at the end: {one_line(case.response.error or 'no error text')}")
    original = effects[0].before if effects else case.events
    lines += ["", *_side_by_side(case.dialect, original, case.events, width)]
    lines += ["", *_expected(found)]
    return "\n".join(lines)


def _step_name(effect: StepEffect) -> str:
    params = effect.step.params()
    said = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False, default=str)}" for k, v in params.items())
    return f"{effect.step.name}({said})" if said else effect.step.name


def _keys(dialect: str, events: Sequence[Event]) -> list[tuple[str | None, str]]:
    """Each event's name and bytes as sent: an event a step edited is rendered from its payload
    (its `wire` still holds what it was)."""
    d = dialects.get(dialect)
    return [(e.name, d.render(e).data) for e in events]


def _effect(effect: StepEffect, dialect: str) -> str:
    before, after = _keys(dialect, effect.before), _keys(dialect, effect.after)
    said = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, before, after, autojunk=False).get_opcodes():
        if tag == "replace":
            said.append(f"changed #{_span(i1, i2)} into #{_span(j1, j2)}")
        elif tag == "delete":
            said.append(f"removed #{_span(i1, i2)}")
        elif tag == "insert":
            said.append(f"added #{_span(j1, j2)}")
    if not said:
        return "the events are unchanged (it acts on the bytes or the reads)"
    return "; ".join(said) + f" ({len(before)} -> {len(after)} events)"


def _widest(events: Sequence[Event], texts: Sequence[str]) -> int:
    pairs = zip(events, texts, strict=True)
    labels = [f"{event.name} {text}" if event.name else text for event, text in pairs]
    return max(20, min(max(map(len, labels), default=0), LONG_VALUE))


def _span(start: int, end: int) -> str:
    return str(start) if end - start == 1 else f"{start}-{end - 1}"


def _side_by_side(
    dialect: str, original: Sequence[Event], mutated: Sequence[Event], width: int | None
) -> list[str]:
    """Two columns; the mark between them: ` ` same, `~` changed, `-` removed, `+` added."""
    left, right = gists(dialect, list(original)), gists(dialect, list(mutated))
    if width is None:  # each column as wide as its widest event (each still clipped at LONG_VALUE)
        column, right_column = _widest(original, left), _widest(mutated, right)
    else:
        column = right_column = max((width - 14) // 2, 20)
    rows = [f"{'recorded':<{column + 5}}   mutated", f"{'-' * (column + 5)}   {'-' * (right_column + 5)}"]

    def cell(n: int | None, texts: list[str], events: Sequence[Event], room: int) -> str:
        if n is None:
            return " " * (room + 5)
        name = events[n].name
        label = f"{name} " if name else ""
        return f"{n:>3}  {shorten(label + texts[n], room):<{room}}"

    keys_a, keys_b = _keys(dialect, original), _keys(dialect, mutated)
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, keys_a, keys_b, autojunk=False).get_opcodes():
        mark = {"equal": " ", "replace": "~", "delete": "-", "insert": "+"}[tag]
        for k in range(max(i2 - i1, j2 - j1)):
            i = i1 + k if i1 + k < i2 else None
            j = j1 + k if j1 + k < j2 else None
            before, after = cell(i, left, original, column), cell(j, right, mutated, right_column)
            rows.append(f"{before} {mark} {after}".rstrip())
    rows.append("marks: ~ changed, - removed, + added")
    return rows


def _expected(found: FoundCase) -> list[str]:
    case, recorded = found.case, found.source.expected
    situation = situation_of(found)
    expected = case.expected
    lines = [
        f"expected: {headline(expected)}",
        f"  situation {situation.name} ({ORACLE_DOC}): state {situation.state}, calls {situation.calls}: "
        f"{situation.gist}",
    ]
    why = {
        "all": "every call in the stream is reported",
        "final": "final before the stream ended (at its end marker, or at a finish that came before the end)",
        "none": "",
    }[situation.calls]
    for n, call in enumerate(expected.tool_calls, start=1):
        lines.append(f"  call {n} {call_text(call)}: {why or 'final before the stream ended'}")
    kept = list(expected.tool_calls)
    for call in recorded.tool_calls:
        if call in kept:
            kept.remove(call)
        elif not any(c.id == call.id and c.name == call.name for c in expected.tool_calls if call.id):
            never = "never final before the stream ended"
            lines.append(f"  not expected: recorded call {call_text(call)}: {never}")
    if expected.error:
        lines.append(f"  error: {shorten(expected.error, 100)}")
    if _differs_besides_calls(recorded, expected):
        said = f"state {recorded.state}, {len(recorded.tool_calls)} call(s)"
        lines.append(f"  (the recorded stream's outcome: {said})")
    return lines


def _differs_besides_calls(a: Outcome, b: Outcome) -> bool:
    return a.state != b.state or a.finish_reason != b.finish_reason
