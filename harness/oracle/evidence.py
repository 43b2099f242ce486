"""The verdict on a client program: what its follow-up request (or its own report) says it made of
a case, as an `Outcome`, judged by the same machinery as any accumulator's (`classify`,
`differences`, `verdict_for`: classes spec / quirk / policy, severities unsafe / lost / cosmetic).

- A follow-up gives the calls the program ran: the assistant turn's calls (put in the stream's
  order by id, since a follow-up's order is the program's), plus, as a call of its own, any tool
  result that answers an id the turn does not carry. Text, finish reason and state are not on the
  wire of a follow-up: they are taken from the expectation (noted), so only the calls are judged,
  with the reasoning state the turn sends back (its reasoning and call parts, `Turn.parts`, judged
  as any outcome's parts: a signature dropped or moved is `lost`).
  A call the stream never finished, or with other arguments, is `unsafe`; a finished call missing
  is `lost`.
- With no follow-up, an outcome the program reported (POST `/report`, or one JSON line on
  stdout) is judged like an accumulator's, on every compared field.
- With neither, when the program exited (with any code): on a cut or error case it surfaced the
  error and ran nothing, which is right (the expectation is its outcome). On a complete case, exit
  0 means it ran none of the calls the stream finished (each one `lost`), and a non-zero exit is
  the raise rule every in-process library gets (`harness.accumulators.client.raised`):
  what the program raised is what its user got, an outcome with state `error`, no calls (text
  and finish reason taken as expected, as for a follow-up), and the
  raise as its error (`Type: message` from the stderr line that names the thrown error, the type
  without its module, as `raised_error` writes it), judged like any outcome (`state: complete
  expected, got error (Type: message)`). Still running at the timeout: a `timeout`.
  Where the raise names a tool the stream never called, under a name the stream's own pieces of
  an expected call's name make wrongly (one piece of a split name, the pieces of a name repeated
  in full joined, or no name at all: `Tool _forecast not found`), the program mangled that name:
  the judge says so on the call (`call 1: name 'get_forecast' expected, got '_forecast' (its name
  came in pieces 'get' + '_forecast': the program kept only the last)`), first among the calls.
- Except a program that exits without ever asking for the case's stream, whatever its exit code
  and the case: it never got to the case (the command is not found, a module is missing, it fails
  on its own arguments, it asked another server), so nothing it did says anything of the stream
  or a library: an `error`, the verdict for "could not judge", never a failure, and never a pass
  (on a cut case, ending is right only when the program saw the cut). Asking is what the server
  counts for the case (`Evidence.requests`), so the rule needs no other case to compare with (and
  no guess from exit codes: 127 from a shell, 1 from node or python, all mean the same here).
- Code run in the judge's own process (a test given a case by the pytest plugin,
  `Evidence.in_process`) is judged by the same rules: a return stands for exit 0, a raise for a
  non-zero exit, its `Type: message` for the stderr line; only the notes say "the test".
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from harness.cassettes.outcome import Outcome, State, ToolCall
from harness.errors import AccumulatorCrashed, AccumulatorTimeout
from harness.mutate.scenario import Case, Scenario
from harness.oracle.severity import Severity, differences
from harness.oracle.verdict import Result, Verdict, describe_error, judged, unjudged
from harness.wire import dialects
from harness.wire.dialects import Field
from harness.wire.dialects.requesting import ToolResult, Turn

__all__ = [
    "Evidence",
    "Heard",
    "Misnamed",
    "compare_turn",
    "evidence_of",
    "judge_client",
    "misnamed",
    "outcome_of",
    "thrown",
    "turn_outcome",
]

FROM_FOLLOWUP = (
    "read from the follow-up request (text, finish reason and state: not on its wire, taken as expected)"
)
SURFACED = "no follow-up or report: the program ended on a cut or error case, having run nothing"
UNKNOWN = "<unknown>"  # the name of a call known only by a tool result's id
SILENT = "no follow-up or report: the program exited 0 without sending any call back"
RAISED = "no follow-up or report: the program exited with code {code} after asking for the stream (a raise)"
NEVER_ASKED = "the program exited with code {code} without asking for the stream"
# The same notes for code run in the judge's own process (a test: `Evidence.in_process`), which
# returns or raises where a program exits.
SURFACED_IN_PROCESS = "no follow-up request: the test ended on a cut or error case, having run nothing"
SILENT_IN_PROCESS = "no follow-up request: the test returned without sending the tool results back"
RAISED_IN_PROCESS = "no follow-up request: the test raised after asking for the stream"
NEVER_ASKED_IN_PROCESS = "the test ended without asking for the case's stream"
# A line naming a thrown error, unindented: `Type: message`, `pkg.mod.Type: message` (Python),
# `Type [CODE]: message` (Node). Indented lines (a Node error's `cause:` and other properties, a
# traceback's frames) are not the raise.
_THROWN = re.compile(r"^(?:[A-Za-z_$][\w$]*\.)*(?P<type>[A-Za-z_$][\w$]*)(?: \[[\w.]+\])?: (?P<message>.*)$")


@dataclass(frozen=True, slots=True)
class Evidence:
    """What the server and the process showed about one run of a client on one case."""

    followup: Turn | None = None
    report: Outcome | None = None
    exit_code: int | None = None  # None: still running when judged (then killed)
    timed_out: bool = False
    seconds: float = 0.0
    stderr: str = ""
    requests: int = 0  # first requests the case's stream got from the program (0: it never asked)
    # Code run in the judge's own process (a test): exit code 0 is a return, 1 a raise, whose
    # `Type: message` is `stderr`; only the notes' wording differs.
    in_process: bool = False


class Heard(Protocol):
    """What a replay server heard for one case (`harness.serve.CaseLog`): the first requests of
    its stream, the follow-ups and the reports, in the order they came."""

    @property
    def attempts(self) -> int: ...

    @property
    def followups(self) -> Sequence[Turn]: ...

    @property
    def reports(self) -> Sequence[Outcome]: ...


def evidence_of(
    heard: Heard,
    *,
    report: Outcome | None = None,
    exit_code: int | None = None,
    timed_out: bool = False,
    seconds: float = 0.0,
    stderr: str = "",
    in_process: bool = False,
) -> Evidence:
    """The evidence of one run: the first follow-up and report the server heard (`report`, one the
    program printed instead, when it posted none) and what the process showed. A run that sent
    a follow-up or a report did not time out, whatever the clock says."""
    followup = heard.followups[0] if heard.followups else None
    report = heard.reports[0] if heard.reports else report
    return Evidence(
        followup=followup,
        report=report,
        exit_code=exit_code,
        timed_out=timed_out and followup is None and report is None,
        seconds=seconds,
        stderr=stderr,
        requests=heard.attempts,
        in_process=in_process,
    )


def turn_outcome(expected: Outcome, turn: Turn) -> Outcome:
    """The outcome a follow-up shows: the calls the program ran, the rest as expected."""
    if turn.by_reference:
        # Only the results' call ids: a known id is that call, an unknown one a call never finished.
        known = {c.id: c for c in expected.tool_calls if c.id is not None}
        # Each result is a run: a call answered twice (a retry ran it again) is there twice.
        calls = [known[r.call_id] for r in turn.results if r.call_id in known]
        calls += [_orphan(r) for r in turn.results if r.call_id not in known]
    else:
        order = {c.id: n for n, c in enumerate(expected.tool_calls) if c.id is not None}
        echoed = sorted(
            turn.calls, key=lambda c: order.get(c.id, len(order)) if c.id is not None else len(order)
        )
        carried = {c.id for c in turn.calls if c.id is not None}
        orphans = [
            _orphan(r) for r in turn.results if carried and r.call_id is not None and r.call_id not in carried
        ]
        runs = Counter(r.call_id for r in turn.results if r.call_id is not None)
        again = [c for c in echoed if c.id is not None for _ in range(runs[c.id] - 1)]  # ran n times
        calls = [*echoed, *again, *orphans]
    return Outcome(
        tool_calls=tuple(calls),
        text=expected.text,
        finish_reason=expected.finish_reason,
        state=expected.state,
        notes=(FROM_FOLLOWUP, *_ran_again(turn)),
        parts=turn.parts,  # the reasoning and signatures sent back, judged as any outcome's parts
    )


def _ran_again(turn: Turn) -> tuple[str, ...]:
    """A note per call id answered by more than one tool result: it ran more than once."""
    runs = Counter(r.call_id for r in turn.results if r.call_id is not None)
    return tuple(f"call id {i!r} has {n} tool results: it ran {n} times" for i, n in runs.items() if n > 1)


def _orphan(result: ToolResult) -> ToolCall:
    """A result for a call id the stream never finished: something ran, under a name we may not know."""
    return ToolCall(name=result.name or UNKNOWN, arguments={}, id=result.call_id)


def compare_turn(expected: Sequence[ToolCall], turn: Turn) -> list[tuple[str, Severity]]:
    """Differences between the calls a stream finished and the calls a follow-up shows ran, each
    with its severity; empty when they agree."""
    want = Outcome(tool_calls=tuple(expected))
    return differences(want, turn_outcome(want, turn))


def outcome_of(case: Case, evidence: Evidence) -> Outcome:
    """What one run of a program made of `case`, by the rules of the module docstring; raises
    `AccumulatorTimeout` or `AccumulatorCrashed` when it cannot be judged."""
    expected = case.expected
    if evidence.followup is not None:
        return turn_outcome(expected, evidence.followup)
    if evidence.report is not None:
        return evidence.report
    if evidence.timed_out or evidence.exit_code is None:
        raise AccumulatorTimeout("no follow-up request or report within the timeout")
    here = evidence.in_process
    if evidence.requests == 0:
        never = NEVER_ASKED_IN_PROCESS if here else NEVER_ASKED.format(code=evidence.exit_code)
        raise AccumulatorCrashed(_tail(never, evidence.stderr))
    if expected.state is not State.COMPLETE:
        return Outcome(
            tool_calls=expected.tool_calls,
            text=expected.text,
            finish_reason=expected.finish_reason,
            state=expected.state,
            error=expected.error,
            notes=(SURFACED_IN_PROCESS if here else SURFACED,),
        )
    if evidence.exit_code != 0:
        return Outcome(
            tool_calls=(),
            text=expected.text,  # not on any wire the program used: taken as expected, so only the
            finish_reason=expected.finish_reason,  # calls and the state are judged
            state=State.ERROR,
            error=thrown(evidence.stderr) or f"exit code {evidence.exit_code}",
            notes=(RAISED_IN_PROCESS if here else RAISED.format(code=evidence.exit_code),),
        )
    return Outcome(
        tool_calls=(),
        text=expected.text,
        finish_reason=expected.finish_reason,
        state=expected.state,
        notes=(SILENT_IN_PROCESS if here else SILENT,),
    )


def judge_client(case: Case, client: str, evidence: Evidence, scenario: Scenario | None = None) -> Result:
    """The verdict on one client run against one case, as `harness.matrix.judging.judge` gives it
    for an accumulator (same classes, severities and verdict rule)."""
    base = replace(unjudged(case, client, scenario), seconds=evidence.seconds)
    try:
        actual = outcome_of(case, evidence)
    except AccumulatorTimeout as exc:
        return replace(base, verdict=Verdict.TIMEOUT, error=describe_error(exc))
    except AccumulatorCrashed as exc:
        return replace(base, verdict=Verdict.ERROR, error=describe_error(exc))
    result = judged(base, actual)
    silent = actual.notes in ((SILENT,), (SILENT_IN_PROCESS,))
    if silent and result.diff:
        return replace(result, error=actual.notes[0])
    if actual.state is State.ERROR and actual.error and not actual.tool_calls and result.diff:
        return _named(result, misnamed(case, actual.error))
    return result


@dataclass(frozen=True, slots=True)
class Misnamed:
    """A call the program raised on under a name the stream's pieces of its name make wrongly."""

    call: int  # its position among the expected calls
    expected: str
    got: str
    why: str

    def line(self) -> str:
        return f"call {self.call + 1}: name {self.expected!r} expected, got {self.got!r} ({self.why})"


def misnamed(case: Case, error: str) -> Misnamed | None:
    """The expected call whose name, made wrongly from the pieces the stream sent it in, the raise
    `error` looked up as a tool: the name it names first (a lookup names the name it looked up
    before any it lists as offered), when that is a wrong one; None otherwise."""
    error = error.split("\n", 1)[0]  # the raise itself, not the site a later line may carry
    if not _TOOL.search(error):
        return None
    pieces = _name_pieces(case)
    calls = [(n, call.name) for n, call in enumerate(case.expected.tool_calls) if call.name]
    named: list[tuple[int, Misnamed | None]] = []  # (where the error names it, what it is)
    for n, name in calls:
        sent = pieces.get(name, [name])
        named += [(at, None) for at in _named_at(error, name)]
        for wrong, why in _wrong_names(sent):
            if wrong != name:
                named += [(at, Misnamed(n, name, wrong, why)) for at in _named_at(error, wrong)]
        if n == calls[0][0] and (empty := _EMPTY_NAME.search(error)) is not None:
            why = f"the stream sent it {_said(sent)}: the program's call has none"
            named.append((empty.start(), Misnamed(n, name, "", why)))
    return min(named, key=lambda found: found[0])[1] if named else None


_TOOL = re.compile(r"(?i)\btools?\b")


# A raise naming a tool by an empty name: `Tool  not found`, `tool ''`, `tool name: ""`.
_EMPTY_NAME = re.compile(r"(?i)\btool(?: name)?:?(?: (?:''|\"\"|``)| {2}\S)")


def _named_at(error: str, name: str) -> list[int]:
    """Where `error` names `name` as a word of its own (not inside a longer name)."""
    return [m.start() for m in re.finditer(rf"(?<![\w.-]){re.escape(name)}(?![\w.-])", error)]


def _wrong_names(sent: Sequence[str]) -> list[tuple[str, str]]:
    """The names a program makes wrongly of a name sent in `sent` pieces, each with why."""
    if len(sent) < 2:
        return []
    shown = " + ".join(repr(p) for p in sent)
    out = [(sent[-1], f"its name came in pieces {shown}: the program kept only the last")]
    for k, piece in enumerate(sent[:-1]):
        out.append((piece, f"its name came in pieces {shown}: the program kept only piece {k + 1}"))
    out.append(("".join(sent), f"its name came in pieces {shown}: the program joined them all"))
    return out


def _said(sent: Sequence[str]) -> str:
    return "whole, once" if len(sent) == 1 else "in pieces " + " + ".join(repr(p) for p in sent)


def _name_pieces(case: Case) -> dict[str, list[str]]:
    """Each call's name, as the stream sent it: its pieces in order, keyed by the name the
    dialect joins of them (`joined_name`)."""
    dialect = dialects.get(case.dialect)
    by_call: dict[int, list[str]] = {}
    for fragment in dialect.fragments(case.events):
        name = dialect.get(case.events[fragment.event], fragment.slot, Field.NAME)
        if isinstance(name, str) and name:
            by_call.setdefault(fragment.call, []).append(name)
    out: dict[str, list[str]] = {}
    for pieces in by_call.values():
        out.setdefault(dialect.joined_name(pieces), pieces)
    return out


def _named(result: Result, found: Misnamed | None) -> Result:
    """`result` with the misnamed call's `missing` line replaced by what the program made of its
    name, first among the calls' lines (the raise on that name is what lost every call)."""
    if found is None:
        return result
    lines: list[tuple[str, Severity]] = []
    first = None
    for line, severity in zip(result.diff, result.severities, strict=True):
        if line.startswith("call ") and first is None:
            first = len(lines)
        if line.startswith(f"call {found.call + 1}: ") and line.endswith("expected, missing"):
            continue
        lines.append((line, severity))
    lines.insert(len(lines) if first is None else first, (found.line(), Severity.LOST))
    return replace(result, diff=tuple(line for line, _ in lines), severities=tuple(s for _, s in lines))


def thrown(stderr: str) -> str | None:
    """What a program raised, as `raised_error` writes an in-process raise (`Type: message`): the
    last unindented stderr line naming a thrown error (Node prints the thrown error there, its
    `cause` indented below; Python's traceback ends with it), else the line `_tail` picks; None
    when stderr says nothing."""
    named = [
        m
        for line in stderr.splitlines()
        if (m := _THROWN.match(line.rstrip())) and m["type"].endswith(("Error", "Exception"))
    ]
    if not named:
        return _telling(stderr)
    message = named[-1]["message"].strip()
    return f"{named[-1]['type']}: {message[:300]}" if message else named[-1]["type"]


def _tail(text: str, stderr: str) -> str:
    """`text` and the stderr line that says most (`_telling`)."""
    line = _telling(stderr)
    return f"{text}: {line}" if line else text


def _telling(stderr: str) -> str | None:
    """The stderr line that says most: the last one naming an error, else the last."""
    lines = [line.strip() for line in stderr.strip().splitlines() if line.strip()]
    lines = [line for line in lines if not line.startswith(("Node.js v", "at "))]
    named = [line for line in lines if "Error" in line or "Exception" in line or "error:" in line]
    last = (named or lines)[-1:]
    return last[0][:300] if last else None
