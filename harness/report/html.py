"""A self-contained HTML page of a matrix run: one file, inline CSS and JS, no network.

Each accumulator gets a scenario x cassette grid coloured by verdict (a compare run gets one grid
coloured by where A and B agree); a click on a cell opens its cases with their diffs and the
commands that replay each one. Used by `toolstream check --html` and the pytest plugin alike.
"""

from __future__ import annotations

import html
import json
import re
import shlex
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from harness.cassettes.format import write_atomic
from harness.check.compare import Comparison
from harness.check.selection import Selection
from harness.check.verdict import Report, Result, Verdict
from harness.report.results import replay_command

__all__ = ["render_html", "write_html"]

# Worst first: the colour of a cell is the worst verdict among its cases.
_ORDER: Final = (Verdict.FAIL, Verdict.ERROR, Verdict.TIMEOUT, Verdict.PASS, Verdict.SKIPPED)
_MARK: Final = {
    Verdict.PASS: "\u2713",
    Verdict.FAIL: "\u2717",
    Verdict.ERROR: "!",
    Verdict.TIMEOUT: "\u231b",
    Verdict.SKIPPED: "\u2013",
}


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
    write_atomic(
        path, page.encode("utf-8", "backslashreplace")
    )  # lone surrogates an accumulator reported (F2)
    return path


def render_html(
    *,
    reports: Sequence[Report] = (),
    comparison: Comparison | None = None,
    selection: Selection | None = None,
    title: str = "toolstream report",
) -> str:
    """The whole page as a string."""
    grids = [_check_grid(report, selection) for report in reports]
    if comparison is not None:
        grids.append(_compare_grid(comparison, selection))
    body = "\n".join(_grid_html(n, grid) for n, grid in enumerate(grids)) or "<p>No cases were run.</p>"
    # No "<" at all inside the script element: nothing in the data can close it or open a comment.
    data = json.dumps([grid["cells"] for grid in grids], ensure_ascii=False).replace("<", "\\u003c")
    parts = {
        "title": html.escape(title),
        "legend": _legend(comparison is not None and not reports),
        "body": body,
        "data": data,
        "css": _CSS,
        "js": _JS,
    }
    # One pass, not str.format: the CSS and JS are full of braces, and no value is scanned again.
    return re.sub(r"\{(title|legend|body|data|css|js)\}", lambda m: parts[m[1]], _PAGE)


def _pytest_command(case_id: str) -> str:
    return f"pytest -k {shlex.quote(case_id)}"


def _case_entry(result: Result, selection: Selection | None) -> dict[str, Any]:
    lines = list(result.diff) if result.verdict is Verdict.FAIL else ([result.error] if result.error else [])
    return {
        "id": result.id,
        "verdict": str(result.verdict),
        "lines": lines,
        "commands": [_pytest_command(result.id), replay_command(result.accumulator, result.id, selection)],
    }


def _axes(results: Sequence[Result]) -> tuple[list[str], list[str]]:
    scenarios = list(dict.fromkeys(r.scenario for r in results))
    cassettes = list(dict.fromkeys(r.cassette for r in results))
    return scenarios, cassettes


def _check_grid(report: Report, selection: Selection | None) -> dict[str, Any]:
    scenarios, cassettes = _axes(report.results)
    grouped: dict[tuple[str, str], list[Result]] = defaultdict(list)
    for result in report.results:
        grouped[(result.scenario, result.cassette)].append(result)
    cells: dict[str, Any] = {}
    for (scenario, cassette), members in grouped.items():
        verdicts = {r.verdict for r in members}
        worst = next(v for v in _ORDER if v in verdicts)
        bad = sum(1 for r in members if r.failed)
        label = _MARK[worst] if len(members) == 1 else (f"{bad}/{len(members)}" if bad else f"{len(members)}")
        cells[f"{scenarios.index(scenario)},{cassettes.index(cassette)}"] = {
            "status": str(worst),
            "label": label,
            "title": f"{scenario} x {cassette}: {len(members) - bad} of {len(members)} ok",
            "cases": [_case_entry(r, selection) for r in members],
        }
    counts = ", ".join(f"{report.count(v)} {v}" for v in Verdict if report.count(v))
    return {
        "heading": f"{report.accumulator}: {len(report.results)} cases ({counts or 'none'})",
        "ok": report.ok,
        "scenarios": scenarios,
        "cassettes": cassettes,
        "cells": cells,
    }


def _compare_grid(comparison: Comparison, selection: Selection | None) -> dict[str, Any]:
    a_spec, b_spec = comparison.a.accumulator, comparison.b.accumulator
    differing = {d.id: d for d in comparison.differences}
    scenarios, cassettes = _axes(comparison.a.results)
    grouped: dict[tuple[str, str], list[tuple[Result, Result]]] = defaultdict(list)
    for a, b in zip(comparison.a.results, comparison.b.results, strict=True):
        grouped[(a.scenario, a.cassette)].append((a, b))
    options = selection.replay_options() if selection is not None else []
    cells: dict[str, Any] = {}
    for (scenario, cassette), pairs in grouped.items():
        differ = [a.id for a, _ in pairs if a.id in differing]
        label = (
            ("\u2260" if differ else "=")
            if len(pairs) == 1
            else (f"{len(differ)}/{len(pairs)}" if differ else f"{len(pairs)}")
        )
        cases = []
        for a, b in pairs:
            argv = ["toolstream", "compare", a_spec, b_spec, *options, "--case", a.id]
            cases.append(
                {
                    "id": a.id,
                    "verdict": "differ" if a.id in differing else "agree",
                    "lines": [
                        *(differing[a.id].lines if a.id in differing else ()),
                        f"A ({a_spec}): {a.verdict}",
                        f"B ({b_spec}): {b.verdict}",
                    ],
                    "commands": [_pytest_command(a.id), " ".join(shlex.quote(x) for x in argv)],
                }
            )
        cells[f"{scenarios.index(scenario)},{cassettes.index(cassette)}"] = {
            "status": "differ" if differ else "agree",
            "label": label,
            "title": f"{scenario} x {cassette}: A and B differ on {len(differ)} of {len(pairs)}",
            "cases": cases,
        }
    return {
        "heading": f"A = {a_spec} vs B = {b_spec}: differ on {len(comparison.differences)} of "
        f"{len(comparison.a.results)} cases",
        "ok": comparison.agree,
        "scenarios": scenarios,
        "cassettes": cassettes,
        "cells": cells,
    }


def _grid_html(n: int, grid: dict[str, Any]) -> str:
    e = html.escape
    head = "".join(f'<th class="col"><span>{e(c)}</span></th>' for c in grid["cassettes"])
    rows = []
    for r, scenario in enumerate(grid["scenarios"]):
        tds = []
        for c in range(len(grid["cassettes"])):
            cell = grid["cells"].get(f"{r},{c}")
            if cell is None:
                tds.append('<td class="cell none">\u00b7</td>')
            else:
                tds.append(
                    f'<td class="cell {e(cell["status"])}" data-grid="{n}" data-cell="{r},{c}" '
                    f'title="{e(cell["title"])}" tabindex="0">{e(cell["label"])}</td>'
                )
        rows.append(f'<tr><th class="row">{e(scenario)}</th>{"".join(tds)}</tr>')
    state = "ok" if grid["ok"] else "bad"
    return (
        f'<section class="grid"><h2 class="{state}">{e(grid["heading"])}</h2>'
        '<div class="scroll"><table><thead><tr>'
        f'<th class="corner">scenario \\ cassette</th>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div></section>"
    )


def _legend(compare_only: bool) -> str:
    if compare_only:
        items = [("agree", "= A and B agree"), ("differ", "\u2260 A and B differ")]
    else:
        items = [
            ("pass", "\u2713 pass"),
            ("fail", "\u2717 fail"),
            ("error", "! error"),
            ("timeout", "\u231b timeout"),
            ("skipped", "\u2013 skipped"),
        ]
    chips = "".join(f'<span class="chip {cls}">{html.escape(text)}</span>' for cls, text in items)
    return f'<div class="legend">{chips}<span class="hint">click a cell for its cases</span></div>'


_CSS: Final = """
body{font:14px/1.4 system-ui,-apple-system,Segoe UI,sans-serif;margin:16px;color:#1b1b1b;background:#fafafa}
h1{font-size:20px;margin:0 0 8px}
h2{font-size:16px;margin:18px 0 6px;padding-left:8px;border-left:6px solid #888}
h2.ok{border-color:#2e7d32} h2.bad{border-color:#c62828}
.legend{margin:6px 0 10px}.hint{color:#666;margin-left:12px}
.chip{display:inline-block;padding:2px 10px;margin-right:6px;border-radius:3px;font-weight:600}
.scroll{overflow:auto;max-width:100%}
table{border-collapse:collapse}
th.row{text-align:right;font-weight:500;padding:2px 8px;white-space:nowrap;max-width:340px;
  overflow:hidden;text-overflow:ellipsis}
th.col{vertical-align:bottom;height:150px;padding:0 1px}
th.col span{writing-mode:vertical-rl;transform:rotate(180deg);white-space:nowrap;font-weight:500;
  font-size:12px}
th.corner{text-align:left;vertical-align:bottom;color:#666;font-weight:400;font-size:12px}
td.cell{min-width:34px;height:26px;text-align:center;border:2px solid #fff;font-weight:700;
  cursor:pointer;font-size:13px}
td.cell:hover,td.cell:focus{outline:3px solid #1b1b1b;outline-offset:-3px}
.pass,.agree{background:#43a047;color:#fff}
.fail,.differ{background:#d32f2f;color:#fff}
.error{background:#f57c00;color:#fff}
.timeout{background:#7b1fa2;color:#fff}
.skipped{background:#cfd8dc;color:#37474f}
td.none{background:#f0f0f0;color:#bbb;cursor:default}
#panel{position:fixed;top:0;right:0;bottom:0;width:min(620px,92vw);background:#fff;
  box-shadow:-4px 0 16px #0003;padding:14px 18px;overflow:auto;display:none}
#panel.open{display:block}
#panel h3{margin:0 0 10px;font-size:15px}
#panel .case{border-top:1px solid #ddd;padding:8px 0}
#panel .verdict{display:inline-block;padding:1px 8px;border-radius:3px;font-weight:700;margin-right:6px}
#panel pre{background:#f5f5f5;padding:6px 8px;white-space:pre-wrap;word-break:break-word;margin:4px 0}
#panel code{display:block;background:#263238;color:#eceff1;padding:4px 8px;margin:3px 0;word-break:break-all}
#close{float:right;border:0;background:#eee;font-size:16px;cursor:pointer;padding:2px 10px}
"""

_JS: Final = """
const cells = JSON.parse(document.getElementById('data').textContent);
const panel = document.getElementById('panel');
function text(tag, cls, value){
  const n = document.createElement(tag); if (cls) n.className = cls; n.textContent = value; return n;
}
function open(td){
  const cell = cells[+td.dataset.grid][td.dataset.cell];
  const body = document.getElementById('panel-body');
  body.replaceChildren(text('h3', '', td.title));
  for (const c of cell.cases){
    const box = text('div', 'case', '');
    box.append(text('span', 'verdict ' + c.verdict, c.verdict), text('strong', '', c.id));
    if (c.lines.length) box.append(text('pre', '', c.lines.join('\\n')));
    for (const cmd of c.commands) box.append(text('code', '', cmd));
    body.append(box);
  }
  panel.classList.add('open');
}
document.querySelectorAll('td.cell[data-cell]').forEach(td => {
  td.addEventListener('click', () => open(td));
  td.addEventListener('keydown', ev => { if (ev.key === 'Enter') open(td); });
});
document.getElementById('close').addEventListener('click', () => panel.classList.remove('open'));
document.addEventListener('keydown', ev => { if (ev.key === 'Escape') panel.classList.remove('open'); });
"""

_PAGE: Final = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title><style>{css}</style></head>
<body><h1>{title}</h1>{legend}
{body}
<aside id="panel"><button id="close" aria-label="close">\u00d7</button><div id="panel-body"></div></aside>
<script type="application/json" id="data">{data}</script>
<script>{js}</script>
</body></html>
"""
