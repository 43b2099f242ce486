"""A self-contained HTML page of a matrix run: one file, inline CSS and JS, no network.

The page leads with what is wrong: per accumulator (or per compare), a summary of the failures by
kind, worst first, each with its count, where it happens and its worst case; a click opens that
case (diff, expected and actual outcome, the mutated stream, the commands that replay it). Below
it, the scenario x cassette grid of each dialect, failing rows and columns first, every cell
saying its counts the same way ("2✗ 1✓"). The kinds are the terminal's, numbered alike (`kind 3`
is the same kind in `check`'s or `compare`'s output, and in the JSON of a compare), each tagged with
its worst severity and its classes; warnings (which fail only under --strict) are listed apart, by
severity, class and signature. The headline's counts add up, as the terminal's last line does.
Used by `toolstream check --html`, `toolstream compare --html` and the pytest plugin alike.
"""

from __future__ import annotations

import json
import re
import shlex
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from harness import files
from harness.errors import HarnessError
from harness.matrix.selection import Selection, build_case
from harness.oracle.verdict import Report, Verdict, signature
from harness.report.replay import pytest_command, replay_command
from harness.report.results import counts, difference_kinds, failure_kinds, verdict_counts
from harness.search.compare import Comparison
from harness.text.escape import html_text, script_json
from harness.text.shared import shared_values, without_machine_paths
from harness.text.terminal import clip_values, shorten

__all__ = ["render_html", "write_html"]

# Worst first: a cell takes the colour of its worst status, and its counts are said in this order.
_STATUSES: Final = ("fail", "error", "timeout", "differ", "warn", "pass", "agree", "skipped")
# Plain text and two glyphs every system font has (DejaVu Sans, Segoe UI, SF): nothing draws a box.
_MARKS: Final = {
    "fail": "\u2717",
    "error": " err",
    "timeout": " t/o",
    "differ": "\u2260",
    "warn": " warn",
    "pass": "\u2713",
    "agree": "=",
    "skipped": " skip",
}
# Issue 10's expectation severities, worst first; an unknown one sorts after these, none last.
_SEVERITIES: Final = ("unsafe", "lost", "withheld", "cosmetic")
# Building a case's stream costs a cassette load: only the worst case of the first kinds gets one.
_STREAMS: Final = 12
_STREAM_EVENTS: Final = 200


def write_html(
    path: str | Path,
    *,
    reports: Sequence[Report] = (),
    comparison: Comparison | None = None,
    selection: Selection | None = None,
    title: str = "toolstream report",
) -> Path:
    """Write the page atomically; returns its path."""
    path = Path(path)
    page = render_html(reports=reports, comparison=comparison, selection=selection, title=title)
    files.write(
        path, page.encode("utf-8", "backslashreplace")
    )  # lone surrogates an accumulator reported (F2)
    return path


def render_html(
    *,
    reports: Sequence[Report] = (),
    comparison: Comparison | None = None,
    selection: Selection | None = None,
    title: str = "toolstream report",
    stream: Callable[[str], list[dict[str, Any]] | None] | None = None,
) -> str:
    """The whole page as a string. `stream(case_id)` gives a case's events (default: rebuilt
    from the selection's cassettes), or None when it cannot."""
    streams = stream or (lambda case_id: _stream_of(case_id, selection))
    sections = [_check_section(report, selection, streams) for report in reports]
    if comparison is not None:
        sections.append(_compare_section(comparison, selection, streams))
    # Written to be shared: no folder of this machine in any command, error or name it shows.
    sections = shared_values(sections)
    body = "\n".join(_section_html(n, s) for n, s in enumerate(sections)) or "<p>No cases were run.</p>"
    data = script_json(clip_values([s["data"] for s in sections]))
    parts = {
        "title": html_text(without_machine_paths(title)),
        "body": body,
        "data": data,
        "css": _CSS,
        "js": _JS,
    }
    # One pass, not str.format: the CSS and JS are full of braces, and no value is scanned again.
    return re.sub(r"\{(title|body|data|css|js)\}", lambda m: parts[m[1]], _PAGE)


# ---------------------------------------------------------------------------------------------
# Sections: one per accumulator, one for a compare


def _check_section(
    report: Report, selection: Selection | None, streams: Callable[[str], list[dict[str, Any]] | None]
) -> dict[str, Any]:
    cases = [result.to_dict() for result in report.results]
    entries = [_check_entry(case, selection, report.strict) for case in cases]
    failing = [n for n, result in enumerate(report.results) if result.fails(report.strict)]
    warned = [n for n, r in enumerate(report.results) if r.verdict == "warn" and not r.fails(report.strict)]
    # The terminal's kinds, in its order: `kind 3` is the same kind on the page and in `check`'s output.
    at = {id(result): n for n, result in enumerate(report.results)}
    kinds = failure_kinds([report.results[n] for n in failing])
    groups = [
        _group(cases, [at[id(r)] for r in members], sig, _diff_size, kind=k)
        for k, (sig, members) in enumerate(kinds.items(), start=1)
    ]
    groups += [{**g, "warn": True} for g in _groups(cases, warned, signature, _diff_size)]
    if failing:
        headline = f"{report.accumulator}: {len(failing)} of {len(cases)} cases fail"
    elif cases:
        headline = f"{report.accumulator}: all {len(cases)} cases pass"
    else:
        headline = f"{report.accumulator}: no cases were run"
    # Every case counted once, as the terminal's last line counts them: the parts add up.
    strict = " (strict: warnings fail)" if report.strict and report.count(Verdict.WARN) else ""
    said = f"{len(cases)} cases: {verdict_counts(report)}{strict}" if cases else ""
    # Under --strict a warning fails: its cell says so.
    statuses = [
        "fail" if n in failing and c["verdict"] == "warn" else c["verdict"] for n, c in enumerate(cases)
    ]
    section = _section(headline, not failing, cases, entries, groups, statuses, streams, _legend(False))
    return {**section, "counts": said}


def _compare_section(
    comparison: Comparison,
    selection: Selection | None,
    streams: Callable[[str], list[dict[str, Any]] | None],
) -> dict[str, Any]:
    a_spec, b_spec = comparison.a.accumulator, comparison.b.accumulator
    differing = {d.id: d for d in comparison.differences}
    options = selection.replay_options() if selection is not None else []
    cases, entries, statuses = [], [], []
    strict = comparison.a.strict
    for a, b in zip(comparison.a.results, comparison.b.results, strict=True):
        case = a.to_dict()
        difference = differing.get(a.id)
        case["diff"] = list(difference.lines) if difference is not None else []
        cases.append(case)
        if difference is None:
            statuses.append("agree")
        else:
            statuses.append("differ" if counts(difference, strict) else "warn")
        argv = ["toolstream", "compare", a_spec, b_spec, *options, "--case", a.id]
        entries.append(
            {
                "id": a.id,
                "verdict": statuses[-1],
                "lines": [*case["diff"], f"A ({a_spec}): {a.verdict}", f"B ({b_spec}): {b.verdict}"],
                "outcomes": [
                    [f"A: {a_spec}", _outcome_lines(case["actual"])],
                    [f"B: {b_spec}", _outcome_lines(b.to_dict()["actual"])],
                ],
                "commands": [
                    *_some(pytest_command(selection, a.id, strict=strict, compare=(a_spec, b_spec))),
                    " ".join(shlex.quote(x) for x in argv + (["--strict"] if strict else [])),
                ],
            }
        )
    differ = [n for n, status in enumerate(statuses) if status == "differ"]
    warned = [n for n, status in enumerate(statuses) if status == "warn"]
    # The kinds `compare` prints, numbered alike (those that only warn come last there too).
    at = {a.id: n for n, a in enumerate(comparison.a.results)}
    groups = []
    for k, (sig, members) in enumerate(difference_kinds(comparison.differences, strict).items(), start=1):
        group = _group(cases, [at[d.id] for d in members], sig, _diff_size, kind=k)
        groups.append(group if counts(members[0], strict) else {**group, "warn": True})
    apart = f" (and {len(warned)} only warnings)" if warned else ""
    if differ:
        headline = f"A = {a_spec} vs B = {b_spec}: differ on {len(differ)} of {len(cases)} cases{apart}"
    elif warned:
        headline = f"A = {a_spec} vs B = {b_spec}: differ on {len(cases)} cases only in warnings{apart}"
    else:
        headline = f"A = {a_spec} vs B = {b_spec}: agree on all {len(cases)} cases"
    return _section(headline, not differ, cases, entries, groups, statuses, streams, _legend(True))


def _section(
    headline: str,
    ok: bool,
    cases: list[dict[str, Any]],
    entries: list[dict[str, Any]],
    groups: list[dict[str, Any]],
    statuses: list[str],
    streams: Callable[[str], list[dict[str, Any]] | None],
    legend: str,
) -> dict[str, Any]:
    for group in groups[:_STREAMS]:
        worst = entries[group["worst"]]
        found = streams(worst["id"])
        if found is not None:
            worst["stream"] = found
    dialects = _dialect_grids(cases, statuses)
    cells = {key: cell for grid in dialects for key, cell in grid["cells"].items()}
    return {
        "headline": headline,
        "ok": ok,
        "groups": groups,
        "dialects": dialects,
        "legend": legend,
        "data": {"cases": entries, "groups": groups, "cells": cells},
    }


def _check_entry(
    case: Mapping[str, Any], selection: Selection | None, strict: bool = False
) -> dict[str, Any]:
    verdict = case["verdict"]
    if verdict in ("fail", "warn"):
        severities = case.get("severities") or []
        lines = list(case["diff"])
        if len(severities) == len(lines):
            lines = [f"{s:<8}  {line}" for s, line in zip(severities, lines, strict=True)]
    else:
        lines = [case["error"]] if case.get("error") else []
    entry: dict[str, Any] = {
        "id": case["id"],
        "verdict": verdict,
        "lines": lines,
        "outcomes": [["expected", _outcome_lines(case["expected"])], ["got", _outcome_lines(case["actual"])]]
        + ([["printed", case["output"].splitlines()]] if case.get("output") else []),
        "commands": [
            replay_command(case["accumulator"], case["id"], selection, strict=strict),
            *_some(pytest_command(selection, case["id"], strict=strict, spec=case["accumulator"])),
        ],
    }
    for key in ("severity", "class"):
        if case.get(key):
            entry[key] = case[key]
    return entry


def _some(command: str | None) -> list[str]:
    return [] if command is None else [command]


def _outcome_lines(outcome: Mapping[str, Any] | None) -> list[str]:
    if outcome is None:
        return ["(no outcome)"]
    lines = []
    for n, call in enumerate(outcome.get("tool_calls", ()), start=1):
        arguments = call["arguments"]
        if not call.get("invalid"):
            arguments = json.dumps(arguments, ensure_ascii=False, sort_keys=True)
        lines.append(shorten(f"call {n}: {call['name']}({arguments})  id={call['id']}", 240))
    if not lines:
        lines.append("no tool calls")
    if outcome.get("text"):
        lines.append(shorten(f"text: {outcome['text']!r}", 240))
    lines.append(f"finish_reason: {outcome.get('finish_reason')}, state: {outcome.get('state')}")
    if outcome.get("error"):
        lines.append(shorten(f"error: {outcome['error']}", 240))
    return lines


def _stream_of(case_id: str, selection: Selection | None) -> list[dict[str, Any]] | None:
    """The decoded events of a case, mutated ones marked; None when it cannot be rebuilt here."""
    try:
        case = build_case(case_id, selection)
    except (HarnessError, OSError, KeyError, ValueError):
        return None  # the page is still worth writing: the replay command shows the stream
    events = []
    for event in case.events[:_STREAM_EVENTS]:  # as sent, edited ones too (`as_sent`)
        name = f"{event.wire.name}: " if event.wire.name else ""
        events.append({"text": shorten(name + event.wire.data, 400), "edited": event.edited})
    if len(case.events) > _STREAM_EVENTS:
        events.append({"text": f"... {len(case.events) - _STREAM_EVENTS} more events", "edited": False})
    return events


# ---------------------------------------------------------------------------------------------
# The summary: failing cases by (severity, class, signature), worst first


def _severity_rank(severity: object) -> int:
    if severity in _SEVERITIES:
        return _SEVERITIES.index(severity)
    return len(_SEVERITIES) + (1 if severity is None else 0)


def _groups(
    cases: Sequence[Mapping[str, Any]],
    members: Iterable[int],
    kind: Callable[[Mapping[str, Any]], str],
    size: Callable[[Mapping[str, Any]], int],
) -> list[dict[str, Any]]:
    """The warnings by (severity, class, signature), worst first, as the terminal lists them."""
    by_key: dict[tuple[Any, Any, str], list[int]] = defaultdict(list)
    for n in members:
        case = cases[n]
        by_key[(case.get("severity"), case.get("class"), kind(case))].append(n)
    groups = [_group(cases, found, sig, size) for (_, _, sig), found in by_key.items()]
    groups.sort(key=lambda g: (_severity_rank(g.get("severity")), -g["count"], g["signature"]))
    return groups


def _group(
    cases: Sequence[Mapping[str, Any]],
    found: list[int],
    sig: str,
    size: Callable[[Mapping[str, Any]], int],
    *,
    kind: int | None = None,
) -> dict[str, Any]:
    """One row of the summary: the cases `found` (indexes into `cases`) of one kind."""
    dialects = Counter(cases[n]["dialect"] for n in found)
    scenarios = Counter(cases[n]["scenario"] for n in found)
    where = ", ".join(f"{s} ({k})" if k > 1 else s for s, k in scenarios.most_common(3))
    if len(scenarios) > 3:
        where += f", +{len(scenarios) - 3} more"
    group: dict[str, Any] = {
        "signature": sig,
        "count": len(found),
        "dialects": ", ".join(f"{d} ({k})" for d, k in dialects.most_common()),
        "scenarios": where,
        # The worst case says the most: the longest diff, the first id among equals.
        "worst": (worst := max(found, key=lambda n: (size(cases[n]), -n))),
        "worst_id": cases[worst]["id"],
        "cases": found,
    }
    if kind is not None:
        group["kind"] = kind
    severities = [cases[n].get("severity") for n in found if cases[n].get("severity")]
    if severities:
        group["severity"] = min(severities, key=_severity_rank)
    classes = Counter(cases[n]["class"] for n in found if cases[n].get("class"))
    if len(classes) == 1:
        group["class"] = next(iter(classes))
    elif classes:  # a kind across classes says each, as the terminal's tags do: `spec 3, quirk 1`
        group["classes"] = [[cls, k] for cls, k in classes.most_common()]
    return group


def _diff_size(case: Mapping[str, Any]) -> int:
    return len(case.get("diff") or ())


# ---------------------------------------------------------------------------------------------
# The grids: one per dialect, failing rows and columns first


def _dialect_grids(cases: Sequence[Mapping[str, Any]], statuses: Sequence[str]) -> list[dict[str, Any]]:
    by_dialect: dict[str, list[int]] = defaultdict(list)
    for n, case in enumerate(cases):
        by_dialect[case["dialect"]].append(n)

    def bad(n: int) -> bool:
        return statuses[n] in ("fail", "error", "timeout", "differ")

    order = sorted(by_dialect, key=lambda d: (-sum(map(bad, by_dialect[d])), list(by_dialect).index(d)))
    grids = []
    for g, dialect in enumerate(order):
        members = by_dialect[dialect]
        failing_rows: Counter[str] = Counter(cases[n]["scenario"] for n in members if bad(n))
        failing_cols: Counter[str] = Counter(cases[n]["cassette"] for n in members if bad(n))
        scenarios = _worst_first([cases[n]["scenario"] for n in members], failing_rows)
        cassettes = _worst_first([cases[n]["cassette"] for n in members], failing_cols)
        grouped: dict[tuple[str, str], list[int]] = defaultdict(list)
        for n in members:
            grouped[(cases[n]["scenario"], cases[n]["cassette"])].append(n)
        cells: dict[str, Any] = {}
        for (scenario, cassette), found in grouped.items():
            counts = Counter(statuses[n] for n in found)
            worst = next(s for s in _STATUSES if counts[s])
            parts = [f"{counts[s]}{_MARKS[s]}" for s in _STATUSES if counts[s]]
            said = ", ".join(f"{counts[s]} {s}" for s in _STATUSES if counts[s])
            cells[f"{g}:{scenarios.index(scenario)},{cassettes.index(cassette)}"] = {
                "status": worst,
                "label": " ".join(parts),
                "title": f"{scenario} x {cassette}: {said}",
                "cases": found,
            }
        prefix = f"{dialect}/"
        grids.append(
            {
                "index": g,
                "compare": "agree" in statuses or "differ" in statuses,
                "dialect": dialect,
                "failing": sum(map(bad, members)),
                "total": len(members),
                "scenarios": scenarios,
                "cassettes": cassettes,
                "labels": [c.removeprefix(prefix) for c in cassettes],
                "cells": cells,
            }
        )
    return grids


def _worst_first(names: Sequence[str], failing: Counter[str]) -> list[str]:
    seen = list(dict.fromkeys(names))
    return sorted(seen, key=lambda name: (-failing[name], seen.index(name)))


# ---------------------------------------------------------------------------------------------
# Markup


def _section_html(n: int, section: dict[str, Any]) -> str:
    e = html_text
    state = "ok" if section["ok"] else "bad"
    out = [f'<section class="run" data-section="{n}"><h2 class="{state}">{e(section["headline"])}</h2>']
    if section.get("counts"):
        out.append(f'<p class="counts">{e(section["counts"])}</p>')
    if any(not g.get("warn") for g in section["groups"]):
        out.append(_summary_html(n, section["groups"], warn=False))
    if any(g.get("warn") for g in section["groups"]):
        out.append(_summary_html(n, section["groups"], warn=True))
    links = "".join(
        f'<a href="#d{n}-{grid["index"]}" class="{"bad" if grid["failing"] else "ok"}">'
        f"{e(grid['dialect'])} <span>{e(_grid_said(grid))}</span></a>"
        for grid in section["dialects"]
    )
    if links:
        out.append(f'<nav class="dialects">by dialect: {links}</nav>{section["legend"]}')
    for grid in section["dialects"]:
        out.append(_grid_html(n, grid))
    out.append("</section>")
    return "\n".join(out)


def _summary_html(n: int, groups: list[dict[str, Any]], warn: bool) -> str:
    e = html_text
    rows = []
    for g, group in enumerate(groups):
        if bool(group.get("warn")) is not warn:
            continue  # failures and warnings each get a table; `g` stays the index the page's data uses
        named = [(str(group[key]), str(group[key])) for key in ("severity", "class") if key in group]
        named += [(str(cls), f"{cls} {k}") for cls, k in group.get("classes", ())]
        tags = "".join(f'<span class="tag {e(cls)}">{e(text)}</span>' for cls, text in named)
        # Numbered as the terminal numbers it: `kind 3` means the same kind in both.
        number = f'<span class="no">kind {group["kind"]}</span>' if "kind" in group else ""
        rows.append(
            f'<tr class="kind" data-section="{n}" data-group="{g}" tabindex="0">'
            f'<td class="count">{group["count"]}</td>'
            f'<td class="sig">{number}{tags}<strong>{e(group["signature"])}</strong>'
            f'<div class="where">{e(group["dialects"])} &middot; {e(group["scenarios"])}</div></td>'
            f'<td class="worst"><span class="open">worst case</span>'
            f'<div class="id">{e(group["worst_id"])}</div></td></tr>'
        )
    what = "warnings: fail only with --strict" if warn else "what is wrong"
    head = f"<thead><tr><th>cases</th><th>{what} (click a row for its worst case)</th><th></th></tr></thead>"
    kind = "summary warn" if warn else "summary"
    return f'<div class="{kind}"><table>{head}<tbody>{"".join(rows)}</tbody></table></div>'


def _grid_html(n: int, grid: dict[str, Any]) -> str:
    e = html_text
    head = "".join(
        f'<th class="col" title="{e(full)}"><span>{e(label)}</span></th>'
        for full, label in zip(grid["cassettes"], grid["labels"], strict=True)
    )
    g = grid["index"]
    rows = []
    for r, scenario in enumerate(grid["scenarios"]):
        tds = []
        for c in range(len(grid["cassettes"])):
            cell = grid["cells"].get(f"{g}:{r},{c}")
            if cell is None:
                tds.append('<td class="cell none"></td>')
            else:
                tds.append(
                    f'<td class="cell {e(cell["status"])}" data-section="{n}" data-cell="{g}:{r},{c}" '
                    f'title="{e(cell["title"])}" tabindex="0">{e(cell["label"])}</td>'
                )
        rows.append(f'<tr><th class="row" title="{e(scenario)}">{e(scenario)}</th>{"".join(tds)}</tr>')
    state = "ok" if not grid["failing"] else "bad"
    return (
        f'<div class="dialect" id="d{n}-{g}"><h3 class="{state}">{e(grid["dialect"])} '
        f"<span>{e(_grid_said(grid))}</span></h3>"
        '<table class="grid"><thead><tr>'
        f'<th class="corner">scenario \\ cassette</th>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )


def _grid_said(grid: dict[str, Any]) -> str:
    compare = grid["compare"]
    if grid["failing"]:
        return f"{grid['failing']} of {grid['total']} {'differ' if compare else 'failing'}"
    return f"all {grid['total']} {'agree' if compare else 'pass'}"


def _legend(compare: bool) -> str:
    if compare:
        items = [
            ("differ", "2\u2260 A and B differ on 2"),
            ("warn", "1 warn differ only where neither fails"),
            ("agree", "1= agree on 1"),
        ]
    else:
        items = [
            ("fail", "2\u2717 2 failed"),
            ("warn", "1 warn 1 warned (cosmetic or policy)"),
            ("pass", "1\u2713 1 passed"),
            ("error", "1 err error"),
            ("timeout", "1 t/o timeout"),
            ("skipped", "1 skip not applicable"),
        ]
    chips = "".join(f'<span class="chip {cls}">{html_text(text)}</span>' for cls, text in items)
    hint = '<span class="hint">click a cell for them</span>'
    return f'<div class="legend">each cell counts its cases: {chips}{hint}</div>'


_CSS: Final = """
*{box-sizing:border-box}
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI","DejaVu Sans",sans-serif;margin:0 16px 16px;
  color:#1b1b1b;background:#fafafa}
h1{font-size:18px;margin:12px 0 4px}
h2{font-size:16px;margin:10px 0 8px;padding-left:8px;border-left:6px solid #888}
h2.ok,h3.ok{border-color:#2e7d32} h2.bad,h3.bad{border-color:#c62828}
h3{font-size:15px;margin:22px 0 4px;padding-left:8px;border-left:4px solid #888}
h3 span{font-weight:400;color:#555;font-size:13px;margin-left:6px}
.legend{margin:4px 0 0;font-size:12px;color:#444}
nav.dialects{margin:18px 0 2px;font-size:13px}
nav.dialects a{display:inline-block;margin:0 4px 4px 0;padding:1px 8px;border-radius:3px;text-decoration:none;
  color:#1b1b1b;background:#fff;border:1px solid #ccc;border-left:4px solid #2e7d32}
nav.dialects a.bad{border-left-color:#c62828}
nav.dialects a span{color:#555;font-size:12px}.hint{color:#666;margin-left:10px}
.chip{display:inline-block;padding:1px 8px;margin-left:6px;border-radius:3px;font-weight:600}
.summary table{border-collapse:collapse;width:100%;background:#fff;box-shadow:0 1px 3px #0002}
.summary th{text-align:left;font-size:12px;color:#555;font-weight:500;padding:4px 8px;
  border-bottom:1px solid #ddd}
.summary td{padding:6px 8px;border-bottom:1px solid #eee;vertical-align:top}
.summary tr.kind{cursor:pointer}
.summary tr.kind:hover,.summary tr.kind:focus{background:#fff3f3;outline:none}
.summary td.count{font-size:18px;font-weight:700;color:#c62828;text-align:right;width:64px}
.summary td.sig strong{font-weight:600}
.summary .no{display:inline-block;margin-right:6px;color:#555;font-size:12px;font-weight:600}
p.counts{margin:-4px 0 8px 14px;color:#444;font-size:13px}
.summary .where{color:#555;font-size:12px;margin-top:2px}
.summary td.worst{width:36%;font-size:12px}
.summary .open{color:#0b57d0;font-weight:600;text-decoration:underline}
.summary .id{font-family:"DejaVu Sans Mono",monospace;color:#333;word-break:break-all}
.tag{display:inline-block;padding:0 6px;margin-right:6px;border-radius:3px;font-size:11px;
  font-weight:700;text-transform:uppercase;background:#eceff1;color:#37474f;border:1px solid #b0bec5}
.tag.unsafe{background:#b71c1c;color:#fff;border-color:#b71c1c}
.tag.lost{background:#ffcdd2;color:#8e0000;border-color:#e57373}
.tag.cosmetic{background:#fff8e1;color:#6d4c00;border-color:#ffca28}
table.grid{border-collapse:separate;border-spacing:2px}
table.grid thead th{position:sticky;top:0;background:#fafafa;z-index:2}
table.grid th.row{position:sticky;left:0;background:#fafafa;z-index:1;text-align:right;
  font-weight:500;padding:1px 8px;white-space:nowrap;max-width:320px;overflow:hidden;text-overflow:ellipsis}
table.grid thead th.corner{left:0;z-index:3;text-align:left;vertical-align:bottom;color:#666;
  font-weight:400;font-size:12px}
th.col{vertical-align:bottom;padding:2px 0}
th.col span{display:inline-block;writing-mode:vertical-rl;transform:rotate(180deg);white-space:nowrap;
  max-height:130px;overflow:hidden;text-overflow:ellipsis;font-weight:500;font-size:12px}
td.cell{min-width:40px;height:24px;padding:0 5px;text-align:center;font-weight:700;cursor:pointer;
  font-size:13px;white-space:nowrap;font-family:"DejaVu Sans",system-ui,sans-serif;border-radius:2px}
td.cell:hover,td.cell:focus{outline:3px solid #1b1b1b;outline-offset:-3px}
.pass,.agree{background:#43a047;color:#fff}
.fail,.differ{background:#d32f2f;color:#fff}
.error{background:#f57c00;color:#fff}
.warn{background:#fdd835;color:#3e2723}
.summary.warn{margin-top:10px} .summary.warn td.count{color:#8d6e00}
.timeout{background:#7b1fa2;color:#fff}
.skipped{background:#cfd8dc;color:#37474f}
td.none{background:#eee;cursor:default}
#panel{position:fixed;top:0;right:0;bottom:0;width:min(720px,94vw);background:#fff;z-index:10;
  box-shadow:-4px 0 16px #0003;padding:14px 18px;overflow:auto;display:none}
#panel.open{display:block}
#panel h3{margin:0 0 10px;border:0;padding:0}
#panel h4{margin:10px 0 2px;font-size:12px;color:#555;text-transform:uppercase}
#panel .case{border-top:1px solid #ddd;padding:8px 0}
#panel .verdict{display:inline-block;padding:1px 8px;border-radius:3px;font-weight:700;margin-right:6px}
#panel pre{background:#f5f5f5;padding:6px 8px;white-space:pre-wrap;word-break:break-word;margin:2px 0;
  font-size:12px}
#panel .outcomes{display:grid;grid-template-columns:1fr 1fr;gap:8px}
#panel ol.stream{font:12px/1.35 "DejaVu Sans Mono",monospace;margin:2px 0;padding-left:36px;
  background:#f5f5f5;word-break:break-all}
#panel ol.stream li.edited{background:#ffe0b2}
#panel code{display:block;background:#263238;color:#eceff1;padding:4px 8px;margin:3px 0;word-break:break-all}
#panel .others a{display:block;font:12px "DejaVu Sans Mono",monospace;color:#0b57d0;cursor:pointer}
#close{float:right;border:0;background:#eee;font-size:16px;cursor:pointer;padding:2px 10px}
"""

_JS: Final = """
const sections = JSON.parse(document.getElementById('data').textContent);
const panel = document.getElementById('panel');
const body = document.getElementById('panel-body');
function el(tag, cls, value){
  const n = document.createElement(tag); if (cls) n.className = cls;
  if (value !== undefined) n.textContent = value; return n;
}
function caseBox(c){
  const box = el('div', 'case');
  box.append(el('span', 'verdict ' + c.verdict, c.verdict));
  for (const key of ['severity', 'class']) if (c[key]) box.append(el('span', 'tag ' + c[key], c[key]));
  box.append(el('strong', '', c.id));
  if (c.lines.length){ box.append(el('h4', '', 'what differs'), el('pre', '', c.lines.join('\\n'))); }
  const outcomes = el('div', 'outcomes');
  for (const [label, lines] of c.outcomes){
    const side = el('div'); side.append(el('h4', '', label), el('pre', '', lines.join('\\n')));
    outcomes.append(side);
  }
  box.append(outcomes);
  box.append(el('h4', '', 'replay'));
  for (const cmd of c.commands) box.append(el('code', '', cmd));
  if (c.stream){
    const said = c.stream.length + ' events; changed by the scenario highlighted';
    box.append(el('h4', '', 'the stream it was fed (' + said + ')'));
    const list = el('ol', 'stream');
    for (const ev of c.stream) list.append(el('li', ev.edited ? 'edited' : '', ev.text));
    box.append(list);
  }
  return box;
}
function show(heading, boxes){
  body.replaceChildren(el('h3', '', heading), ...boxes);
  panel.classList.add('open'); panel.scrollTop = 0;
}
function openCell(td){
  const section = sections[+td.dataset.section];
  const cell = section.cells[td.dataset.cell];
  show(td.title, cell.cases.map(n => caseBox(section.cases[n])));
}
function openGroup(tr){
  const section = sections[+tr.dataset.section];
  const group = section.groups[+tr.dataset.group];
  const boxes = [caseBox(section.cases[group.worst])];
  const rest = group.cases.filter(n => n !== group.worst);
  if (rest.length){
    const others = el('div', 'others');
    others.append(el('h4', '', rest.length + ' more cases of this kind'));
    for (const n of rest.slice(0, 200)){
      const a = el('a', '', section.cases[n].id); a.tabIndex = 0;
      a.addEventListener('click', () => show(section.cases[n].id, [caseBox(section.cases[n])]));
      others.append(a);
    }
    boxes.push(others);
  }
  const kind = group.kind ? 'kind ' + group.kind + ': ' : '';
  show(kind + group.count + ' cases: ' + group.signature, boxes);
}
function bind(selector, action){
  document.querySelectorAll(selector).forEach(node => {
    node.addEventListener('click', () => action(node));
    node.addEventListener('keydown', ev => { if (ev.key === 'Enter') action(node); });
  });
}
bind('td.cell[data-cell]', openCell);
bind('tr.kind', openGroup);
document.getElementById('close').addEventListener('click', () => panel.classList.remove('open'));
document.addEventListener('keydown', ev => { if (ev.key === 'Escape') panel.classList.remove('open'); });
"""

_PAGE: Final = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title><style>{css}</style></head>
<body><h1>{title}</h1>
{body}
<aside id="panel"><button id="close" aria-label="close">\u00d7</button><div id="panel-body"></div></aside>
<script type="application/json" id="data">{data}</script>
<script>{js}</script>
</body></html>
"""
