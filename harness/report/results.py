"""Results as the user sees them: the JSON report, and the terminal rendering of a run.

The terminal shows a compact scenario x cassette grid when the matrix is small, else the
failures grouped by signature (a diff with call numbers and values abstracted away, so "14
failures, all: name concatenated" reads at a glance), then each failure's diff with its case id
and the command that replays just that case.
"""

from __future__ import annotations

import json
import shlex
import shutil
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.cassettes.format import write_atomic
from harness.check.compare import Comparison, meets_expectation
from harness.check.selection import Selection
from harness.check.verdict import Report, Result, Verdict, signature
from harness.report.terminal import clip, clip_values, printable, shorten, table

__all__ = [
    "REPORT_VERSION",
    "comparison_to_dict",
    "render_check",
    "render_comparison",
    "replay_command",
    "report_to_dict",
    "write_json",
]

REPORT_VERSION = 1

# Grid limits: beyond these the grid no longer reads at a glance, so failures are grouped instead.
GRID_MAX_CASSETTES = 8
GRID_MAX_SCENARIOS = 40
# Characters of one message or of a case's output printed before it is cut (the JSON keeps more).
TERMINAL_VALUE = 2_000


def report_to_dict(report: Report, selection: Selection | None = None) -> dict[str, Any]:
    """The JSON report: a summary object and every case, in run order."""
    out: dict[str, Any] = {"version": REPORT_VERSION, "summary": report.summary()}
    if selection is not None:
        out["selection"] = _selection_dict(selection)
    out["cases"] = [result.to_dict() for result in report.results]
    return out


def session_to_dict(
    reports: Sequence[Report], comparison: Comparison | None = None, selection: Selection | None = None
) -> dict[str, Any]:
    """The JSON report of a session that ran a compare, one accumulator, or several."""
    if comparison is not None:
        return comparison_to_dict(comparison)
    if len(reports) == 1:
        return report_to_dict(reports[0], selection)
    return {"version": REPORT_VERSION, "reports": [report_to_dict(r) for r in reports]}


def comparison_to_dict(
    comparison: Comparison, reproductions: Mapping[str, Path] | None = None
) -> dict[str, Any]:
    reproductions = reproductions or {}
    return {
        "version": REPORT_VERSION,
        "summary": {
            "a": comparison.a.summary(),
            "b": comparison.b.summary(),
            "cases": len(comparison.a.results),
            "differences": len(comparison.differences),
        },
        "differences": [
            {
                "id": d.id,
                "lines": list(d.lines),
                "a": d.a.to_dict(),
                "b": d.b.to_dict(),
                "meets_expectation": meets_expectation(d.a, d.b),
                "reproduction": str(reproductions[d.id]) if d.id in reproductions else None,
            }
            for d in comparison.differences
        ],
    }


def write_json(data: Mapping[str, Any], path: str | Path) -> Path:
    """Write a report atomically (a reader never sees half a file)."""
    path = Path(path)
    # An accumulator may report a lone surrogate (F2); in a JSON string `\udXXX` is exactly that.
    text = json.dumps(clip_values(data), ensure_ascii=False, indent=2) + "\n"
    write_atomic(path, text.encode("utf-8", "backslashreplace"))
    return path


def _selection_dict(selection: Selection) -> dict[str, Any]:
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


def replay_command(spec: str, case_id: str, selection: Selection | None = None) -> str:
    """The command that runs just this case again."""
    options = selection.replay_options() if selection is not None else []
    argv = ["toolstream", "check", "--accumulator", spec, *options, "--case", case_id]
    return " ".join(shlex.quote(a) for a in argv)


_MARKS = {
    Verdict.PASS: "ok",
    Verdict.FAIL: "FAIL",
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
    """The whole terminal output of `toolstream check`: overview, failures, summary line.

    Failures are listed kind by kind; with a cap, every kind shows an example before any
    kind shows a second one."""
    blocks = []
    overview, numbered = _overview(report, width)
    if overview:
        blocks.append(overview)
    groups = _failure_groups(report.results)
    failures = report.failures
    shown = _round_robin(list(groups.values()), len(failures) if max_failures <= 0 else max_failures)
    for n, (sig, members) in enumerate(groups.items(), start=1):
        listed = [r for r in members if r.id in shown]
        if not listed:
            continue
        if len(groups) > 1:
            # The overview already named each kind: a number refers to it without saying it twice.
            blocks.append(f"== {f'kind {n}' if numbered else sig} ({len(members)} cases)")
        blocks.extend(_failure(result, selection) for result in listed)
    if len(shown) < len(failures):
        blocks.append(
            f"... and {len(failures) - len(shown)} more failures "
            "(--max-failures 0 shows all, --json lists all)"
        )
    blocks.append(_summary_line(report))
    return "\n\n".join(blocks)


def _failure_groups(results: Sequence[Result]) -> dict[str, list[Result]]:
    """Failing results by signature, the largest group first."""
    groups: dict[str, list[Result]] = defaultdict(list)
    for result in results:
        if result.failed:
            groups[signature(result)].append(result)
    return dict(sorted(groups.items(), key=lambda item: (-len(item[1]), item[0])))


def _round_robin(groups: list[list[Result]], limit: int) -> set[str]:
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
    text = _groups(report.results, width)
    return text, bool(text)


def _grid(results: Sequence[Result], scenarios: list[str], cassettes: list[str], width: int | None) -> str:
    cells: dict[tuple[str, str], list[Result]] = defaultdict(list)
    for result in results:
        cells[(result.scenario, result.cassette)].append(result)
    rows = [[scenario, *(_mark(cells.get((scenario, c), [])) for c in cassettes)] for scenario in scenarios]
    legend = "  ".join(f"{n}: {c}" for n, c in enumerate(cassettes, start=1))
    headers = ["scenario", *(str(n) for n in range(1, len(cassettes) + 1))]
    return table(headers, rows, max_width=width) + "\n\ncassettes: " + legend


def _mark(results: Sequence[Result]) -> str:
    if not results:
        return "-"
    counts = Counter(r.verdict for r in results)
    bad = [v for v in (Verdict.FAIL, Verdict.ERROR, Verdict.TIMEOUT) if counts[v]]
    if not bad:
        return "ok" if counts[Verdict.PASS] else "skip"
    mark = " ".join(f"{_MARKS[v]}" + (f" {counts[v]}" if len(results) > 1 else "") for v in bad)
    return mark + (f"/{len(results)}" if len(results) > 1 else "")


def _groups(results: Sequence[Result], width: int | None) -> str:
    groups = _failure_groups(results)
    if not groups:
        return ""
    total = sum(len(m) for m in groups.values())
    single = len(groups) == 1
    if single:
        lines = [f"{total} failures, all: {next(iter(groups))}"]
    else:
        lines = [f"{total} failures in {len(groups)} kinds:"]
    pad = 8 if single else 13
    room = (width or shutil.get_terminal_size((120, 24)).columns) - pad
    for n, (sig, members) in enumerate(groups.items(), start=1):
        scenarios = Counter(r.scenario for r in members)
        where = ", ".join(f"{s} ({k})" if k > 1 else s for s, k in scenarios.most_common(4))
        if len(scenarios) > 4:
            where += f", +{len(scenarios) - 4} more"
        if not single:
            lines.append(f"{n:>3}. {len(members):>6}  {sig}")
        lines.append(" " * pad + shorten(where, room))
    return "\n".join(lines)


def _failure(result: Result, selection: Selection | None) -> str:
    lines = [f"{result.verdict.upper()} {result.id}"]
    if result.verdict is Verdict.FAIL:
        lines.extend(f"  {printable(clip(line, TERMINAL_VALUE))}" for line in result.diff)
    else:
        error = printable(clip(result.error or "", TERMINAL_VALUE))
        lines.extend(f"  {line}" for line in error.splitlines() or ["(no message)"])
    if result.output:
        lines.append("  output:")
        lines.extend(f"  | {line}" for line in _excerpt(result.output))
    lines.append(f"  replay: {replay_command(result.accumulator, result.id, selection)}")
    return "\n".join(lines)


def _excerpt(output: str, keep: int = 10, width: int = 200) -> list[str]:
    """A case's output as printable lines: the first and last `keep`, each cut at `width`."""
    lines = [printable(clip(line, width)) for line in output.removesuffix("\n").split("\n")]
    if len(lines) > 2 * keep:
        lines[keep:-keep] = [f"[... {len(lines) - 2 * keep} lines ...]"]
    return lines


def _summary_line(report: Report) -> str:
    counts = ", ".join(f"{report.count(v)} {v}" for v in Verdict)
    verdict = "ok" if report.ok else "FAILED"
    return f"{report.accumulator}: {len(report.results)} cases: {counts} ({report.seconds:.1f} s) {verdict}"


# ---------------------------------------------------------------------------------------------
# Comparison


def render_comparison(
    comparison: Comparison,
    reproductions: Mapping[str, Path] | None = None,
    *,
    max_differences: int = 50,
    outcome: Callable[[Result], str] | None = None,
) -> str:
    """The terminal output of `toolstream compare`: each difference, then a summary line."""
    reproductions = reproductions or {}
    show = outcome or _outcome_text
    a, b = comparison.a.accumulator, comparison.b.accumulator
    blocks = [f"A = {a}\nB = {b}"]
    shown = comparison.differences if max_differences <= 0 else comparison.differences[:max_differences]
    for difference in shown:
        lines = [f"DIFFERS {difference.id}"]
        lines.extend(f"  {printable(clip(line, TERMINAL_VALUE))}" for line in difference.lines)
        lines.append(f"  A: {show(difference.a)}")
        lines.append(f"  B: {show(difference.b)}")
        meets = meets_expectation(difference.a, difference.b)
        lines.append(f"  meets the expectation: {meets}")
        if difference.id in reproductions:
            lines.append(f"  reproduction: {reproductions[difference.id]}")
        blocks.append("\n".join(lines))
    hidden = len(comparison.differences) - len(shown)
    if hidden:
        blocks.append(f"... and {hidden} more differences (--max-differences 0 shows all)")
    total = len(comparison.a.results)
    if comparison.agree:
        blocks.append(f"A and B agree on all {total} cases")
    else:
        blocks.append(f"A and B differ on {len(comparison.differences)} of {total} cases")
    return "\n\n".join(blocks)


def _outcome_text(result: Result) -> str:
    if result.actual is None:
        return f"{result.verdict}: {result.error or '-'}"
    calls = ", ".join(
        f"{call.name}({json.dumps(call.arguments, ensure_ascii=False, sort_keys=True)})"
        if not call.invalid
        else f"{call.name}(invalid {call.arguments!r})"
        for call in result.actual.tool_calls
    )
    state = result.actual.state
    return shorten(f"{result.verdict}: [{calls}] finish={result.actual.finish_reason} state={state}", 200)
