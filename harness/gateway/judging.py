"""A gateway's translated answer judged: decoded with the downstream dialect's codec, read by its
reference accumulator, compared with the upstream case's expected outcome translated
(`harness.wire.dialects.translation`), and checked against the downstream dialect's protocol
(`Dialect.invariants`, `request_rules`, and that a whole stream ends with its terminal event).

Every difference is one line naming the hop and the rule it breaks:

    gateway anthropic -> openai-chat: gateway.server-call-as-client-call: call 1: unexpected ...
    gateway openai-chat -> anthropic: anthropic.delta-outside-block at event 4: ...

The rules of the translation itself (`RULES`) are the `gateway.` ones; the protocol's are the
dialect's own codes (docs/dialects.md). A protocol break fails the case as an unsafe difference
(a client of the downstream dialect may run the wrong thing on it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from harness.cassettes.model import Request, Response
from harness.cassettes.outcome import Outcome, State
from harness.errors import CodecError, DialectError
from harness.mutate.case import Case
from harness.oracle.severity import Severity
from harness.oracle.verdict import Result, Verdict, copy_result, judged, unjudged, verdict_for
from harness.wire import dialects
from harness.wire.codecs import decode_all
from harness.wire.dialects import Event, Violation
from harness.wire.dialects.translation import translated_outcome

__all__ = ["RULES", "hop_name", "judge_translation", "translated_events"]

RULES: Final = {
    "gateway.calls": "the client's calls come through: same names and arguments, in order",
    "gateway.server-call-as-client-call": "a call the provider ran itself is not handed to the client to run",
    "gateway.server-calls": "the provider's own calls stay apart from the client's",
    "gateway.text": "the text comes through",
    "gateway.finish": "the finish keeps its meaning, in the downstream dialect's word",
    "gateway.state": "a whole stream stays whole; a cut or failed one is not passed off as whole",
    "gateway.terminal-event": "a whole upstream stream ends downstream with the dialect's terminal event",
    "gateway.status": "a stream the upstream served is answered with a success status",
    "gateway.undecodable": "the answer decodes as a stream of the downstream dialect",
}


def hop_name(source: str, target: str) -> str:
    return f"gateway {source} -> {target}"


def translated_events(response: Response, target: str) -> list[Event]:
    """The events of a gateway's answer in the downstream dialect (`DialectError`, `CodecError`:
    it is none)."""
    d = dialects.get(target)
    return dialects.parse_all(d, decode_all(d.codec(), (chunk.data for chunk in response.chunks)))


def judge_translation(
    case: Case,
    answer: Response,
    *,
    source: str,
    target: str,
    asked: Any,
    spec: str,
    scenario: Any = None,
    seconds: float = 0.0,
) -> Result:
    """The verdict on one translated answer of `case` (`asked`: the downstream request's body)."""
    hop = hop_name(source, target)
    base = unjudged(case, spec, scenario)
    expected = translated_outcome(case.expected, source, target)
    base = copy_result(base, expected=expected, dialect=f"{source}->{target}", seconds=seconds)
    actual, violations = _read(answer, case, target, asked)
    result = judged(base, actual)
    lines = [f"{hop}: {_rule_of(line, expected)}: {line}" for line in result.diff]
    severities = list(result.severities)
    for violation, more in _once_per_rule(violations):
        lines.append(f"{hop}: {violation}" + (f" (and {more} more)" if more else ""))
        severities.append(Severity.UNSAFE)
    verdict = result.verdict
    if violations:
        broke = verdict_for(result.case_class, (Severity.UNSAFE,))
        verdict = broke if verdict is not Verdict.FAIL else verdict
    return copy_result(result, diff=tuple(lines), severities=tuple(severities), verdict=verdict)


def _read(answer: Response, case: Case, target: str, asked: Any) -> tuple[Outcome, list[Violation]]:
    """What the reference accumulator of `target` makes of the answer, and the rules it breaks."""
    if answer.status == 0:
        return Outcome(state=State.ERROR, error=f"no answer: {answer.error}"), []
    if answer.status >= 400:
        said = answer.body[:300].decode("utf-8", "replace")
        outcome = Outcome(state=State.ERROR, error=f"HTTP {answer.status}: {said}")
        if case.expected.state is State.COMPLETE:
            return outcome, [Violation("gateway.status", 0, f"HTTP {answer.status} to a stream served whole")]
        return outcome, []
    d = dialects.get(target)
    try:
        events = translated_events(answer, target)
    except (CodecError, DialectError) as exc:
        outcome = Outcome(state=State.ERROR, error=f"undecodable: {exc}")
        return outcome, [Violation("gateway.undecodable", 0, str(exc))]
    acc = d.accumulator()
    try:
        for event in events:
            acc.feed(event)
    except DialectError as exc:
        return Outcome(state=State.ERROR, error=str(exc)), [Violation("gateway.undecodable", 0, str(exc))]
    outcome = acc.close(None if answer.complete else (answer.error or "stream cut"))
    request = Request("POST", "", {}, asked)
    found = [*d.invariants(events), *d.request_rules(request, events)]
    if answer.complete and case.expected.state is State.COMPLETE and not d.is_terminal(events):
        found.append(
            Violation(
                "gateway.terminal-event", len(events), f"the {target} stream ended without its terminal event"
            )
        )
    return outcome, found


def _once_per_rule(violations: Sequence[Violation]) -> list[tuple[Violation, int]]:
    """Each rule's first violation and how many more there are (a dropped block start makes
    every delta after it break the same rule)."""
    first: dict[str, Violation] = {}
    count: dict[str, int] = {}
    for violation in violations:
        first.setdefault(violation.code, violation)
        count[violation.code] = count.get(violation.code, 0) + 1
    return [(violation, count[code] - 1) for code, violation in first.items()]


def _rule_of(line: str, expected: Outcome) -> str:
    """The `gateway.` rule a difference line breaks."""
    if line.startswith("call "):
        given = line.partition(" got ")[2] or line.partition(" unexpected ")[2]
        if any(given.startswith(repr(c.name)) for c in expected.server_calls):
            return "gateway.server-call-as-client-call"
        return "gateway.calls"
    for start, rule in _LINE_RULES:
        if line.startswith(start):
            return rule
    return "gateway.calls"


_LINE_RULES: Sequence[tuple[str, str]] = (
    ("tool_calls", "gateway.calls"),
    ("server call", "gateway.server-calls"),
    ("text", "gateway.text"),
    ("finish_reason", "gateway.finish"),
    ("state", "gateway.state"),
)
