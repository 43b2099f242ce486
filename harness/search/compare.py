"""Two accumulators on the same cases: where their outcomes differ, and each difference written
as a shrunk reproduction cassette that still shows it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.accumulators import Accumulator, resolve
from harness.cassettes.format import save
from harness.cassettes.outcome import diff
from harness.matrix.judging import judge
from harness.matrix.runner import run_matrix
from harness.matrix.selection import Matrix, Selection
from harness.mutate.scenario import Case, case_cassette, case_with_events
from harness.oracle.expectation import declaration, stream_rules
from harness.oracle.verdict import Report, Result, Verdict, character, diff_signature, signature
from harness.processes.capture import captured_output
from harness.search.shrink import DEFAULT_BUDGET, ExitReason, shrink
from harness.text.terminal import Progress
from harness.wire.dialects import Event

__all__ = [
    "Comparison",
    "Difference",
    "compare_matrix",
    "difference_signature",
    "meets_expectation",
    "outcome_difference",
    "shrink_difference",
    "write_reproductions",
]


@dataclass(frozen=True)
class Difference:
    """A case where two accumulators' outcomes differ (or only one of them produced one)."""

    a: Result
    b: Result
    lines: tuple[str, ...]  # `outcome_difference(a, b)`

    @property
    def id(self) -> str:
        return self.a.id


@dataclass
class Comparison:
    a: Report
    b: Report
    differences: list[Difference]

    @property
    def agree(self) -> bool:
        return not self.differences


def compare_matrix(
    spec_a: str,
    spec_b: str,
    selection: Selection,
    *,
    timeout: float | None = None,
    jobs: int | None = None,
    progress: Progress | None = None,
) -> Comparison:
    """Both accumulators on every selected case; where their outcomes differ."""
    report_a, report_b = run_matrix(
        [spec_a, spec_b], selection, timeout=timeout, jobs=jobs, progress=progress
    )
    found = []
    for a, b in zip(report_a.results, report_b.results, strict=True):
        lines = outcome_difference(a, b)
        if lines:
            found.append(Difference(a, b, tuple(lines)))
    return Comparison(report_a, report_b, found)


def outcome_difference(a: Result, b: Result) -> list[str]:
    """Where A's and B's outcomes differ (empty when they agree, neither has one, or the case is
    not for one of them: skipped, as the pytest plugin skips the pair)."""
    if Verdict.SKIPPED in (a.verdict, b.verdict):
        return []
    if a.actual is not None and b.actual is not None:
        return [_as_ab(line) for line in diff(a.actual, b.actual)]
    if a.actual is None and b.actual is None:
        return []  # neither produced an outcome: nothing to compare (both verdicts are in the reports)
    missing, other = ("A", "B") if a.actual is None else ("B", "A")
    result = a if a.actual is None else b
    return [f"{missing} has no outcome ({result.verdict}: {result.error or '-'}); {other} has one"]


def meets_expectation(a: Result, b: Result) -> str:
    """Which side meets the case's expectation: `both`, `A`, `B` or `neither`."""
    pass_a, pass_b = a.verdict is Verdict.PASS, b.verdict is Verdict.PASS
    return "both" if pass_a and pass_b else "A" if pass_a else "B" if pass_b else "neither"


def difference_signature(difference: Difference) -> str:
    """What kind of difference this is, call numbers and values abstracted (equal for equal bugs):
    how each side fares against the case's expectation (`A pass, B fail (name concatenated)`), and
    when both fare alike, what differs between their outcomes."""
    a, b = _fares(difference.a), _fares(difference.b)
    said = f"A {a}, B {b}"
    if a == b and difference.a.actual is not None and difference.b.actual is not None:
        # A's outcome in the place of the expected one: the kinds need no direction
        said += f"; A vs B: {diff_signature(diff(difference.a.actual, difference.b.actual))}"
    return said


def _fares(result: Result) -> str:
    """`pass`, `timeout`, `fail (name concatenated)`, `error (ValueError: …)`: one side's kind."""
    kind = signature(result)
    if result.verdict in (Verdict.FAIL, Verdict.WARN):
        return f"{result.verdict} ({kind})"
    if result.verdict is Verdict.ERROR:
        return f"error ({kind.removeprefix('error: ')})"
    return kind


def _as_ab(line: str) -> str:
    # `diff` speaks of expected/got; here the first side is A and the second B.
    head, sep, rest = line.partition(": unexpected ")
    if sep:  # a call only B has
        return f"{head}: {rest} in B, missing in A"
    said = line.replace(" expected, got ", " in A, B has ")
    return said.replace(" expected, missing", " in A, missing in B")


def _way(a: Result, b: Result, case: Case) -> tuple[object, ...] | None:
    """How A and B differ, up to values: the kinds of difference, who meets the expectation, how
    the stream ends and what its own stream says of its class (`stream_rules`). None when they do
    not both have an outcome or agree."""
    if a.actual is None or b.actual is None:
        return None
    lines = diff(a.actual, b.actual)
    if not lines:
        return None
    # Each side's own failure keeps its character too: A and B may still differ alike while the
    # failing side's bug became another (a dropped fragment turned into invalid arguments).
    return (
        diff_signature(lines),
        meets_expectation(a, b),
        character(a),
        character(b),
        str(a.expected.state),
        stream_rules(case),
    )


def _differs_the_same_way(
    a: Accumulator, b: Accumulator, difference: Difference, case: Case
) -> Callable[[Case], bool]:
    """The shrinker's predicate for a compare: A and B still differ on the candidate as they did
    on `case` in the report (same kinds of difference, same side meeting the expectation, each
    side's failure of the same character, same ending, same stream rules)."""
    target = _way(difference.a, difference.b, case)

    def still(candidate: Case) -> bool:
        ra, rb = judge(a, difference.a.accumulator, candidate), judge(b, difference.b.accumulator, candidate)
        return target is not None and _way(ra, rb, candidate) == target

    return still


def shrink_difference(
    case: Case, a: Accumulator, b: Accumulator, difference: Difference, *, budget: int = DEFAULT_BUDGET
) -> tuple[Case, ExitReason]:
    """The case with as few events as keep A and B differing the way `difference` says, and why
    the shrinker stopped. The case comes back as is (`UNREPRODUCIBLE`) when re-encoding its events
    loses the difference (it lives in the bytes, not the events)."""
    still = _differs_the_same_way(a, b, difference, case)

    def fails(events: tuple[Event, ...]) -> bool:
        return still(case_with_events(case, events))

    shrunk = shrink(case.events, fails, budget)
    if shrunk.reason is ExitReason.UNREPRODUCIBLE:
        return case, shrunk.reason
    return case_with_events(case, shrunk.items), shrunk.reason


def write_reproductions(
    comparison: Comparison,
    selection: Selection,
    out: str | Path,
    *,
    limit: int = 50,
    budget: int = DEFAULT_BUDGET,
    chosen: Sequence[Difference] | None = None,
) -> dict[str, Path]:
    """Each difference (`chosen`, default the first `limit`; 0: all) as a cassette in `out`, shrunk
    when both accumulators produced an outcome: the mutated request + response and its expectation."""
    out = Path(out)
    if chosen is None:
        chosen = comparison.differences if limit <= 0 else comparison.differences[:limit]
    if not chosen:
        return {}
    matrix = Matrix(selection)
    a, b = resolve(comparison.a.accumulator), resolve(comparison.b.accumulator)
    with captured_output():  # what the warm-ups print is thrown away with their outcomes
        a.prepare()
        b.prepare()
    written: dict[str, Path] = {}
    try:
        for difference in chosen:
            case = matrix.case(difference.id)
            before = len(case.events)
            reason = ExitReason.UNREPRODUCIBLE
            if difference.a.actual is not None and difference.b.actual is not None:
                case, reason = shrink_difference(case, a, b, difference, budget=budget)
            # The class as the run gave it: a scenario given as a file is not in the library by name.
            cassette = case_cassette(case, declared=declaration(case, matrix.by_name.get(case.scenario)))
            if reason is not ExitReason.UNREPRODUCIBLE and len(case.events) < before:
                cassette.source.provenance += (
                    f"; shrunk from {before} to {len(case.events)} events ({reason}) where "
                    f"{comparison.a.accumulator} and {comparison.b.accumulator} still differ the same "
                    "way (expected: the reference outcome of the shrunk stream)"
                )
            written[difference.id] = save(cassette, out / f"{cassette.name}.yaml")
    finally:
        a.shutdown()
        b.shutdown()
    return written
