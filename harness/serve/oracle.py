"""The verdict on a client program: what its follow-up request (or its own report) says it made of
a case, compared with the case's expectation, as the runner's `Result`.

- A follow-up is judged on its tool calls: each call it carries back must be one the stream
  finished (else `unsafe`: the program ran something the stream never gave it, or with other
  arguments), and every finished call must be there (else `lost`). Text, finish reason and state
  are not on the wire of a follow-up and are not judged.
- With no follow-up, an outcome the program reported (POST `/report`, or one JSON line on
  stdout) is judged like an accumulator's, on every compared field.
- With neither: a cut or error case passes when the program ended (it surfaced the error and ran
  nothing); a case whose stream finished calls fails, since the program never sent them back.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace

from harness.check.outcome import Outcome, State, ToolCall, diff
from harness.check.verdict import Result, Verdict
from harness.mutate.scenario import Case
from harness.serve.followup import Turn

__all__ = ["Evidence", "compare_turn", "judge_client"]


@dataclass(frozen=True, slots=True)
class Evidence:
    """What the server and the process showed about one run of a client on one case."""

    followup: Turn | None = None
    report: Outcome | None = None
    exit_code: int | None = None  # None: still running when judged (then killed)
    timed_out: bool = False
    seconds: float = 0.0
    stderr: str = ""


def _render(call: ToolCall) -> str:
    if call.invalid:
        return repr(call.arguments)
    return json.dumps(call.arguments, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def _same(want: ToolCall, got: ToolCall) -> list[str]:
    return diff(Outcome(tool_calls=(want,)), Outcome(tool_calls=(got,)), fields=("tool_calls",))


def compare_turn(expected: Sequence[ToolCall], turn: Turn) -> list[str]:
    """Differences between the calls a stream finished and the calls a follow-up carries, each
    line led by its severity (`unsafe` or `lost`); empty when they agree."""
    out: list[str] = []
    if turn.by_reference:
        ran = [r.call_id for r in turn.results]
        known = {c.id for c in expected}
        out += [
            f"unsafe: a tool result answers call id {i!r}, which the stream never finished"
            for i in ran
            if i not in known
        ]
        out += [
            f"lost: call {c.name!r} ({c.id}) finished in the stream, no result for it"
            for c in expected
            if c.id not in ran
        ]
        return out + _ran_twice(turn)
    left = list(expected)
    for n, got in enumerate(turn.calls, start=1):
        match = next((c for c in left if got.id is not None and c.id == got.id), None)
        if match is None:
            match = next((c for c in left if c.name == got.name and (c.id is None or got.id is None)), None)
        if match is None:
            out.append(
                f"unsafe: call {n} {got.name!r} {_render(got)} ran, but the stream never finished such a call"
            )
            continue
        left.remove(match)
        out += [f"unsafe: {line.replace('call 1:', f'call {n}:', 1)}" for line in _same(match, got)]
    out += [
        f"lost: call {c.name!r} {_render(c)} finished in the stream, missing from the follow-up" for c in left
    ]
    out += _ran_twice(turn)
    known_ids = {c.id for c in turn.calls if c.id is not None}
    if known_ids:
        out += [
            f"unsafe: a tool result answers call id {r.call_id!r}, which the follow-up does not carry"
            for r in turn.results
            if r.call_id is not None and r.call_id not in known_ids
        ]
    return out


def _ran_twice(turn: Turn) -> list[str]:
    """A call id answered by more than one tool result ran more than once (a retry ran it again)."""
    counts = Counter(r.call_id for r in turn.results if r.call_id is not None)
    return [
        f"unsafe: call id {i!r} has {n} tool results: it ran {n} times" for i, n in counts.items() if n > 1
    ]


def judge_client(case: Case, client: str, evidence: Evidence) -> Result:
    """The verdict on one client run against one case (see the module docstring)."""
    expected = case.expected
    base = Result(
        case.id,
        case.cassette,
        case.scenario,
        case.seed,
        case.dialect,
        client,
        Verdict.ERROR,
        expected,
        seconds=evidence.seconds,
    )
    turn = evidence.followup
    if turn is not None:
        actual = Outcome(
            tool_calls=turn.calls,
            text=turn.text,
            finish_reason=expected.finish_reason,
            state=expected.state,
            notes=("read from the follow-up request",),
        )
        lines = tuple(compare_turn(expected.tool_calls, turn))
        return _with(base, Verdict.FAIL if lines else Verdict.PASS, actual=actual, diff=lines)
    if evidence.report is not None:
        lines = tuple(diff(expected, evidence.report))
        return _with(base, Verdict.FAIL if lines else Verdict.PASS, actual=evidence.report, diff=lines)
    if evidence.timed_out:
        return _with(base, Verdict.TIMEOUT, error="no follow-up request or report within the timeout")
    ended = f"the program exited with code {evidence.exit_code}"
    if expected.state is not State.COMPLETE:
        # It surfaced the cut or error and sent nothing on: nothing it ran came from an unfinished call.
        return _with(base, Verdict.PASS, error=None)
    if not expected.tool_calls:
        verdict = Verdict.PASS if evidence.exit_code == 0 else Verdict.ERROR
        return _with(base, verdict, error=None if verdict is Verdict.PASS else _tail(ended, evidence.stderr))
    lines = tuple(
        f"lost: call {c.name!r} {_render(c)} finished in the stream, never sent back"
        for c in expected.tool_calls
    )
    if evidence.exit_code != 0:
        return _with(
            base, Verdict.ERROR, diff=lines, error=_tail(f"{ended} and sent no follow-up", evidence.stderr)
        )
    return _with(base, Verdict.FAIL, diff=lines, error=f"{ended} and sent no follow-up request")


def _with(base: Result, verdict: Verdict, **changes: object) -> Result:
    return replace(base, verdict=verdict, **changes)  # type: ignore[arg-type]


def _tail(text: str, stderr: str) -> str:
    last = [line for line in stderr.strip().splitlines() if line.strip()][-1:]
    return f"{text}: {last[0][:300]}" if last else text
