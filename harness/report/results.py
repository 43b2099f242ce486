"""Results as the user sees them: the JSON report, and the terminal rendering of a run.

The terminal shows a compact scenario x cassette grid when the matrix is small, else the
failures grouped by signature (a diff with call numbers and values abstracted away, so "14
failures, all: name concatenated" reads at a glance), worst severity first, then each failure's
diff (each line with its severity) with its case id, class and the command that replays just that
case. Warnings (cosmetic differences, policy cases) are listed apart: they fail only under --strict.
"""

from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from harness import files
from harness._version import __version__
from harness.collector import collector_paused
from harness.matrix.selection import Selection
from harness.oracle.severity import Severity
from harness.oracle.verdict import Report, Result, Verdict, root_cause, signature
from harness.report.replay import replay_command
from harness.search.compare import Comparison, Difference, difference_signature, meets_expectation
from harness.text.escape import terminal
from harness.text.escape import terminal_line as one_line
from harness.text.terminal import LONG_VALUE, clip, output_width, printable, shorten, table

__all__ = [
    "REPORT_VERSION",
    "comparison_to_dict",
    "counts",
    "difference_kinds",
    "failure_kinds",
    "group_tags",
    "render_check",
    "render_comparison",
    "replay_command",
    "report_to_dict",
    "root_cause_lines",
    "root_causes",
    "severity_rank",
    "shown_differences",
    "verdict_counts",
    "warning_lines",
    "write_json",
]

REPORT_VERSION = 1

# Grid limits: beyond these the grid no longer reads at a glance, so failures are grouped instead.
GRID_MAX_CASSETTES = 8
GRID_MAX_SCENARIOS = 40
# Characters of one message or of a case's output printed before it is cut (the JSON keeps more).
TERMINAL_VALUE = 2_000


# `matrix` not given to `report_to_dict`: the document has no "matrix" key (a `check` run: its
# cases are its whole matrix); None: the key is null (the cases a whole run reports are unknown).
_UNSAID: Any = object()


def report_to_dict(
    report: Report, selection: Selection | None = None, *, matrix: Sequence[str] | None = _UNSAID
) -> dict[str, Any]:
    """The JSON report: the harness version that wrote it, a summary object, the selection, and
    every case in run order. `matrix`: the ids a whole run reports, in its order, when this
    document may hold only part of them (a pytest shard; `harness.report.merge` reads it)."""
    out: dict[str, Any] = {"version": REPORT_VERSION, "harness": __version__, "summary": report.summary()}
    if selection is not None:
        out["selection"] = selection_dict(selection)
    if matrix is not _UNSAID:
        out["matrix"] = None if matrix is None else list(matrix)
    with collector_paused():  # plain data, no cycle: the collector's passes over a run's results cost more
        out["cases"] = [result.to_dict() for result in report.results]
    return out


def session_to_dict(
    reports: Sequence[Report],
    comparison: Comparison | None = None,
    selection: Selection | None = None,
    *,
    matrix: Sequence[str] | None = _UNSAID,
    matrices: Mapping[str, tuple[Selection | None, Sequence[str] | None]] | None = None,
) -> dict[str, Any]:
    """The JSON report of a session that ran a compare, one accumulator, or several; `matrix`:
    for one accumulator, the ids a whole session reports (None: not known). `matrices`: by
    accumulator (or test) name, its selection and the ids a whole session reports for it, so
    `report merge` checks each one's matrix in a session of several."""
    if comparison is not None:
        return comparison_to_dict(comparison)
    matrices = matrices or {}
    if len(reports) == 1:
        own = matrices.get(reports[0].accumulator)
        if own is not None:
            return report_to_dict(reports[0], own[0] or selection, matrix=own[1])
        return report_to_dict(reports[0], selection, matrix=matrix)
    documents = []
    for report in reports:
        own = matrices.get(report.accumulator)
        documents.append(
            report_to_dict(report) if own is None else report_to_dict(report, own[0], matrix=own[1])
        )
    return {"version": REPORT_VERSION, "harness": __version__, "reports": documents}


def counts(difference: Difference, strict: bool = False) -> bool:
    """Whether an A/B difference fails a compare: when either side fails its case (`strict`:
    always). A difference between two outcomes that each pass or only warn is shown apart."""
    return strict or difference.a.fails() or difference.b.fails()


def comparison_to_dict(
    comparison: Comparison, reproductions: Mapping[str, Path] | None = None, *, strict: bool = False
) -> dict[str, Any]:
    reproductions = reproductions or {}
    kinds = difference_kinds(comparison.differences, strict)
    # Each difference's kind: its number as the terminal and the HTML page give it, and its signature.
    kind_of = {d.id: (n, sig) for n, (sig, members) in enumerate(kinds.items(), start=1) for d in members}
    return {
        "version": REPORT_VERSION,
        "summary": {
            "a": comparison.a.summary(),
            "b": comparison.b.summary(),
            "cases": len(comparison.a.results),
            "differences": len(comparison.differences),
            "failing": sum(counts(d, strict) for d in comparison.differences),
            "strict": strict,
            "kinds": len(kinds),
        },
        "kinds": [
            {"kind": n, "signature": sig, "count": len(members), "warn": not counts(members[0], strict)}
            for n, (sig, members) in enumerate(kinds.items(), start=1)
        ],
        "differences": [
            {
                "id": d.id,
                "lines": list(d.lines),
                "a": d.a.to_dict(),
                "b": d.b.to_dict(),
                "meets_expectation": meets_expectation(d.a, d.b),
                "warn": not counts(d, strict),
                "reproduction": str(reproductions[d.id]) if d.id in reproductions else None,
                "kind": kind_of[d.id][0],
                "signature": kind_of[d.id][1],
            }
            for d in comparison.differences
        ],
    }


def write_json(data: Mapping[str, Any], path: str | Path) -> Path:
    """Write a report atomically (a reader never sees half a file)."""
    path = Path(path)
    # An accumulator may report a lone surrogate (F2); in a JSON string `\udXXX` is exactly that.
    with collector_paused():  # as `report_to_dict`: a copy of the document is made, all plain data
        text = json.dumps(_reportable(data), ensure_ascii=False, indent=2, allow_nan=False) + "\n"
    files.write(path, text.encode("utf-8", "backslashreplace"))
    return path


def _reportable(value: Any) -> Any:
    """`value` as a report writes it, in one walk: every string `clip`ped (`clip_values`), every
    `NaN` and infinity as null (JSON has neither). The exact types come first: a report is made of
    them, and an abstract `Mapping` check costs more than the rest of a value."""
    kind = type(value)
    if kind is str:
        return value if len(value) <= LONG_VALUE else clip(value)
    if kind is dict:
        return {key: _reportable(child) for key, child in value.items()}
    if kind is list or kind is tuple:
        return [_reportable(child) for child in value]
    if kind is int or kind is bool or value is None:
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, str):
        return clip(value)
    if isinstance(value, Mapping):
        return {key: _reportable(child) for key, child in value.items()}
    if isinstance(value, list | tuple):
        return [_reportable(child) for child in value]
    return value


def selection_dict(selection: Selection) -> dict[str, Any]:
    """The options that chose a matrix, as the JSON report gives them."""
    return {
        "cassettes": list(selection.cassettes),
        "scenarios": list(selection.scenarios),
        "scenarios_dir": selection.scenarios_dir,
        "dialects": list(selection.dialects),
        "seeds": selection.seeds,
        "cases": list(selection.cases),
    }


# ---------------------------------------------------------------------------------------------
# Terminal


_MARKS = {
    Verdict.PASS: "ok",
    Verdict.FAIL: "FAIL",
    Verdict.WARN: "warn",
    Verdict.ERROR: "ERR",
    Verdict.TIMEOUT: "T/O",
    Verdict.SKIPPED: "skip",
}


def render_check(
    report: Report,
    *,
    selection: Selection | None = None,
    max_failures: int = 50,
    width: int | None = None,
) -> str:
    """The whole terminal output of `toolstream check`: overview, failures, warnings, summary line.

    Failures are listed kind by kind, worst severity first; with a cap, every kind shows an
    example before any kind shows a second one."""
    blocks = []
    overview, numbered = _overview(report, width)
    if overview:
        blocks.append(overview)
    failures = report.failures
    groups = failure_kinds(failures)
    causes = root_cause_lines(failures, groups) if numbered else []
    if causes:
        blocks.append("\n".join(causes))
    shown = _round_robin(list(groups.values()), len(failures) if max_failures <= 0 else max_failures)
    for n, (sig, members) in enumerate(groups.items(), start=1):
        listed = [r for r in members if r.id in shown]
        if not listed:
            continue
        if len(groups) > 1:
            # The overview already named each kind: a number refers to it without saying it twice.
            # Numbered either way: `kind 3` is the same kind in the HTML page and the JSON.
            said = "" if numbered else f": {one_line(sig)}"
            blocks.append(f"== kind {n}{said} ({len(members)} cases)")
        blocks.extend(_failure(result, selection, report.strict) for result in listed)
    if len(shown) < len(failures):
        blocks.append(
            f"... and {len(failures) - len(shown)} more failures "
            "(--max-failures 0 shows all, --json lists all)"
        )
    if report.warnings:
        blocks.append("\n".join(warning_lines(report.warnings)))
    blocks.append(_summary_line(report))
    return terminal("\n\n".join(blocks))  # what a name or value spelled raw cannot reach


def failure_kinds(failures: Sequence[Result]) -> dict[str, list[Result]]:
    """Failing results by signature, numbered from 1 in this order wherever they are shown
    (terminal, HTML): the worst severity first, then the largest group."""
    groups: dict[str, list[Result]] = defaultdict(list)
    for result in failures:
        groups[signature(result)].append(result)
    return dict(sorted(groups.items(), key=lambda item: (severity_rank(item[1]), -len(item[1]), item[0])))


def root_causes(failures: Sequence[Result]) -> dict[str, list[Result]]:
    """Failing results by root cause (`verdict.root_cause`: the same first difference or the same
    raise), ordered as the kinds are: the worst severity first, then the largest group."""
    groups: dict[str, list[Result]] = defaultdict(list)
    for result in failures:
        groups[root_cause(result)].append(result)
    return dict(sorted(groups.items(), key=lambda item: (severity_rank(item[1]), -len(item[1]), item[0])))


def root_cause_lines(failures: Sequence[Result], kinds: Mapping[str, Sequence[Result]]) -> list[str]:
    """The level above the kinds, when it groups them: each root cause with its cases, the kinds
    it spans (by their numbers), its scenarios and recordings, and an example. Empty when every
    kind is its own root cause."""
    causes = root_causes(failures)
    if len(causes) >= len(kinds):
        return []
    number = {sig: n for n, sig in enumerate(kinds, start=1)}
    said = "the same first difference, or the same raise"
    lines = [f"{len(failures)} failures from {len(causes)} root causes ({said}):"]
    for n, (cause, members) in enumerate(causes.items()):
        spans = sorted({number[signature(r)] for r in members})
        label = chr(ord("A") + n) if n < 26 else f"R{n + 1}"  # lettered: the kinds are numbered
        scenarios = len({r.scenario for r in members})
        recordings = len({r.cassette for r in members})
        lines.append(
            f"{label:>3}. {len(members):>6}  {group_tags(members)}{one_line(cause)}: kind"
            f"{'s' if len(spans) > 1 else ''} {', '.join(map(str, spans))}; {scenarios} scenario"
            f"{'s' if scenarios > 1 else ''}, {recordings} recording{'s' if recordings > 1 else ''}"
        )
        lines.append(f"         e.g. {one_line(members[0].id)}")
    return lines


def severity_rank(results: Sequence[Result]) -> int:
    """The worst severity among results, as a rank (0 unsafe; no severity, an error, last)."""
    return min((r.severity.rank if r.severity else len(Severity) for r in results), default=len(Severity))


def group_tags(results: Sequence[Result]) -> str:
    """`[unsafe; spec 3, quirk 1]`: the worst severity and the classes of a group ("" when unknown)."""
    ranked = [r.severity for r in results if r.severity is not None]
    classes = Counter(str(r.case_class) for r in results)
    parts = []
    if ranked:
        parts.append(str(min(ranked, key=lambda s: s.rank)))
    if ranked or len(classes) > 1 or "spec" not in classes:
        parts.append(", ".join(f"{c} {k}" if len(results) > 1 else c for c, k in classes.most_common()))
    return f"[{'; '.join(parts)}] " if parts else ""


def warning_lines(warnings: Sequence[Result], option: str = "--strict") -> list[str]:
    """The warnings, apart from the failures: by class, severity and signature, with an example."""
    groups: dict[tuple[str, str, str], list[Result]] = defaultdict(list)
    for result in warnings:
        groups[(str(result.case_class), str(result.severity or ""), signature(result))].append(result)
    lines = [f"{len(warnings)} warnings (policy cases or cosmetic differences; {option} fails them):"]
    ordered = sorted(groups.items(), key=lambda item: (severity_rank(item[1]), -len(item[1]), item[0]))
    for (case_class, severity, sig), members in ordered:
        lines.append(f"  {len(members):>5}  {case_class:<6} {severity:<8} {one_line(sig)}")
        lines.append(f"         e.g. {one_line(members[0].id)}")
    return lines


def _round_robin(groups: Sequence[Sequence[Result | Difference]], limit: int) -> set[str]:
    chosen: set[str] = set()
    depth = 0
    while len(chosen) < limit and any(depth < len(g) for g in groups):
        for group in groups:
            if depth < len(group) and len(chosen) < limit:
                chosen.add(group[depth].id)
        depth += 1
    return chosen


def _overview(report: Report, width: int | None) -> tuple[str, bool]:
    """The grid of a small matrix, else the numbered kinds of failure; and whether it numbered them."""
    cassettes = list(dict.fromkeys(r.cassette for r in report.results))
    scenarios = list(dict.fromkeys(r.scenario for r in report.results))
    if not report.results:
        return "", False
    if len(cassettes) <= GRID_MAX_CASSETTES and len(scenarios) <= GRID_MAX_SCENARIOS:
        return _grid(report.results, scenarios, cassettes, width), False
    text = _groups(report.failures, width)
    return text, bool(text)


def _grid(results: Sequence[Result], scenarios: list[str], cassettes: list[str], width: int | None) -> str:
    cells: dict[tuple[str, str], list[Result]] = defaultdict(list)
    for result in results:
        cells[(result.scenario, result.cassette)].append(result)
    rows = [[scenario, *(_mark(cells.get((scenario, c), [])) for c in cassettes)] for scenario in scenarios]
    legend = "  ".join(f"{n}: {one_line(c)}" for n, c in enumerate(cassettes, start=1))
    headers = ["scenario", *(str(n) for n in range(1, len(cassettes) + 1))]
    return table(headers, rows, max_width=width) + "\n\ncassettes: " + legend


def _mark(results: Sequence[Result]) -> str:
    if not results:
        return "-"
    found = Counter(r.verdict for r in results)
    bad = [v for v in (Verdict.FAIL, Verdict.ERROR, Verdict.TIMEOUT, Verdict.WARN) if found[v]]
    if not bad:
        return "ok" if found[Verdict.PASS] else "skip"
    mark = " ".join(f"{_MARKS[v]}" + (f" {found[v]}" if len(results) > 1 else "") for v in bad)
    return mark + (f"/{len(results)}" if len(results) > 1 else "")


def _groups(failures: Sequence[Result], width: int | None) -> str:
    return _kinds_overview(failure_kinds(failures), "failures", width)


def _kinds_overview(
    groups: Mapping[str, Sequence[Result]],
    noun: str,
    width: int | None,
    notes: Mapping[str, str] | None = None,
) -> str:
    """The numbered kinds (`14 failures in 3 kinds:`), each with its count, tags and scenarios;
    `notes` adds a word to a kind by its signature."""
    if not groups:
        return ""
    notes = notes or {}
    total = sum(len(m) for m in groups.values())
    single = len(groups) == 1
    if single:
        sig, members = next(iter(groups.items()))
        lines = [f"{total} {noun}, all: {one_line(sig)}{notes.get(sig, '')}"]
        if group_tags(members):
            lines.append(" " * 8 + group_tags(members).strip())
    else:
        lines = [f"{total} {noun} in {len(groups)} kinds:"]
    pad = 8 if single else 13
    columns = width or output_width()
    room = LONG_VALUE if columns is None else columns - pad  # piped: nothing cut to a width
    for n, (sig, members) in enumerate(groups.items(), start=1):
        scenarios = Counter(r.scenario for r in members)
        where = ", ".join(f"{s} ({k})" if k > 1 else s for s, k in scenarios.most_common(4))
        if len(scenarios) > 4:
            where += f", +{len(scenarios) - 4} more"
        if not single:
            said = f"{group_tags(members)}{one_line(sig)}{notes.get(sig, '')}"
            lines.append(f"{n:>3}. {len(members):>6}  {said}")
        lines.append(" " * pad + shorten(where, room))
    return "\n".join(lines)


def _failure(result: Result, selection: Selection | None, strict: bool = False) -> str:
    lines = [f"{result.verdict.upper()} {one_line(result.id)} {group_tags([result])}".rstrip()]
    if result.verdict in (Verdict.FAIL, Verdict.WARN):
        lines.extend(_diff_lines(result))
    else:
        error = _printed(result.error or "")
        lines.extend(f"  {line}" for line in error.splitlines() or ["(no message)"])
    if result.output:
        lines.append("  output:")
        lines.extend(f"  | {line}" for line in _excerpt(result.output))
    lines.append(
        f"  replay: {one_line(replay_command(result.accumulator, result.id, selection, strict=strict))}"
    )
    return "\n".join(lines)


def _excerpt(output: str, keep: int = 10, width: int = 200) -> list[str]:
    """A case's output as printable lines: the first and last `keep`, each cut at `width`."""
    lines = [printable(clip(line, width)) for line in output.removesuffix("\n").split("\n")]
    if len(lines) > 2 * keep:
        lines[keep:-keep] = [f"[... {len(lines) - 2 * keep} lines ...]"]
    return lines


def _diff_lines(result: Result) -> list[str]:
    """The diff, each line led by its severity when it has one."""
    if len(result.severities) != len(result.diff):
        return [f"  {_printed(line)}" for line in result.diff]
    return [
        f"  {severity:<8}  {_printed(line)}"
        for line, severity in zip(result.diff, result.severities, strict=True)
    ]


def _printed(line: str) -> str:
    """A diff or error line as the terminal shows it: cut, and its control characters escaped."""
    return printable(clip(line, TERMINAL_VALUE))


def verdict_counts(report: Report) -> str:
    """`715 pass, 769 fail, 181 warn, 20 error, 0 timeout, 0 skipped`: every case counted once, so
    the parts add up to the run's cases; the terminal's last line and the HTML page say it alike."""
    # A warning count is said when there are warnings: most runs have none.
    return ", ".join(f"{report.count(v)} {v}" for v in Verdict if v is not Verdict.WARN or report.count(v))


def _summary_line(report: Report) -> str:
    said = verdict_counts(report)
    verdict = "ok" if report.ok else "FAILED"
    if report.strict and report.count(Verdict.WARN):
        verdict += " (strict: warnings fail)"
    return f"{report.accumulator}: {len(report.results)} cases: {said} ({report.seconds:.1f} s) {verdict}"


# ---------------------------------------------------------------------------------------------
# Comparison


def render_comparison(
    comparison: Comparison,
    reproductions: Mapping[str, Path] | None = None,
    *,
    max_differences: int = 50,
    outcome: Callable[[Result], str] | None = None,
    strict: bool = False,
    width: int | None = None,
) -> str:
    """The terminal output of `toolstream compare`, grouped as `check` groups its failures: the
    numbered kinds of difference (how each side fares: `A pass, B fail (name concatenated)`),
    then each shown difference under its kind (with a cap, every kind shows one before any shows
    a second), then a summary line. A difference where neither side fails its case is marked a
    warning (`counts`), its kinds listed last."""
    reproductions = reproductions or {}
    show = outcome or _outcome_text
    a, b = comparison.a.accumulator, comparison.b.accumulator
    blocks = [f"A = {a}\nB = {b}"]
    kinds = difference_kinds(comparison.differences, strict)
    if kinds:
        warned = [sig for sig, members in kinds.items() if not counts(members[0], strict)]
        notes = dict.fromkeys(warned, " (warnings: neither side fails)")
        sides = {sig: [_worse_side(d) for d in members] for sig, members in kinds.items()}
        blocks.append(_kinds_overview(sides, "differences", width, notes))
    shown = {d.id for d in shown_differences(comparison.differences, max_differences, strict)}
    for n, members in enumerate(kinds.values(), start=1):
        listed = [d for d in members if d.id in shown]
        if not listed:
            continue
        if len(kinds) > 1:
            blocks.append(f"== kind {n} ({len(members)} cases)")
        blocks.extend(_difference(d, reproductions, show, strict) for d in listed)
    hidden = len(comparison.differences) - len(shown)
    if hidden:
        blocks.append(f"... and {hidden} more differences (--max-differences 0 shows all, --json lists all)")
    total = len(comparison.a.results)
    if comparison.agree:
        blocks.append(f"A and B agree on all {total} cases")
    else:
        apart = sum(not counts(d, strict) for d in comparison.differences)
        only = f" ({apart} only warnings: --strict counts them)" if apart else ""
        blocks.append(f"A and B differ on {len(comparison.differences)} of {total} cases{only}")
    return terminal("\n\n".join(blocks))


def difference_kinds(differences: Iterable[Difference], strict: bool = False) -> dict[str, list[Difference]]:
    """Differences by `difference_signature`, numbered from 1 in this order wherever they are
    shown (terminal, HTML, JSON): those that fail the compare first, then the worst severity,
    then the largest kind."""
    groups: dict[str, list[Difference]] = defaultdict(list)
    for difference in differences:
        groups[difference_signature(difference)].append(difference)

    def order(item: tuple[str, list[Difference]]) -> tuple[bool, int, int, str]:
        sig, members = item
        sides = [side for d in members for side in (d.a, d.b)]
        return not counts(members[0], strict), severity_rank(sides), -len(members), sig

    return dict(sorted(groups.items(), key=order))


def shown_differences(
    differences: Sequence[Difference], limit: int, strict: bool = False
) -> list[Difference]:
    """The differences a compare shows and reproduces, `limit` at most (0: all), in kind order: with
    a cap, every kind gives one before any gives a second."""
    kinds = difference_kinds(differences, strict)
    chosen = _round_robin(list(kinds.values()), len(differences) if limit <= 0 else limit)
    return [d for members in kinds.values() for d in members if d.id in chosen]


def _worse_side(difference: Difference) -> Result:
    """The side that says more of the difference's kind: the worse severity, else A."""
    a, b = difference.a, difference.b
    return b if severity_rank([b]) < severity_rank([a]) else a


def _difference(
    difference: Difference, reproductions: Mapping[str, Path], show: Callable[[Result], str], strict: bool
) -> str:
    warn = "" if counts(difference, strict) else " (warning: neither side fails its case)"
    lines = [f"DIFFERS {one_line(difference.id)} [{difference.a.case_class}]{warn}"]
    lines.extend(f"  {_printed(line)}" for line in difference.lines)
    lines.append(f"  A: {show(difference.a)}")
    lines.append(f"  B: {show(difference.b)}")
    lines.append(f"  meets the expectation: {meets_expectation(difference.a, difference.b)}")
    if difference.id in reproductions:
        lines.append(f"  reproduction: {one_line(str(reproductions[difference.id]))}")
    return "\n".join(lines)


def _outcome_text(result: Result) -> str:
    verdict = f"{result.verdict} ({result.severity})" if result.severity else str(result.verdict)
    if result.actual is None:
        return f"{verdict}: {result.error or '-'}"
    calls = ", ".join(
        f"{call.name}({json.dumps(call.arguments, ensure_ascii=False, sort_keys=True)})"
        if not call.invalid
        else f"{call.name}(invalid {call.arguments!r})"
        for call in result.actual.tool_calls
    )
    state = result.actual.state
    return shorten(f"{verdict}: [{calls}] finish={result.actual.finish_reason} state={state}", 200)
