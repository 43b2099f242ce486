"""The card as Markdown (report-card.md, and the two generated blocks of docs/report-card.md) and
as HTML.

Every rendering reads only the card's plain data (`grading.card`), so the page can be checked
against the stored `report-card.json` and never drift from it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from harness import bounded, files
from harness.errors import UsageError
from harness.oracle.severity import WORST_FIRST
from harness.text.escape import html_text, markdown_code, markdown_text
from harness.text.shared import shared_values

__all__ = [
    "MARKERS",
    "adapters_block",
    "card_block",
    "markdown",
    "page",
    "replace_block",
    "update_page",
]

MAX_PAGE_BYTES = 16 * 1024 * 1024  # a Markdown page

MARKERS = {
    "adapters": ("<!-- report-card:adapters:start -->", "<!-- report-card:adapters:end -->"),
    "card": ("<!-- report-card:card:start -->", "<!-- report-card:card:end -->"),
}
_VERDICTS = ("pass", "fail", "warn", "error", "timeout")
_CLASSES = ("spec", "quirk", "policy")
_SEVERITIES = (*WORST_FIRST, "error", "timeout")


def _cell(text: Any) -> str:
    """Markdown of ours (a known bug's title, its links) safe in a table cell. A value from a
    cassette, scenario, case id or environment goes through `markdown_text` or `markdown_code`."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def _code(text: str) -> str:
    return markdown_code(text, in_table=True)


def _text(text: Any) -> str:
    return markdown_text(str(text))


def _shared(card: Mapping[str, Any], base: str = "") -> tuple[Mapping[str, Any], str]:
    """The card without this machine's folders, and `base` only when it stays inside the checkout
    (`../`): a link climbing out to the checkout from elsewhere would spell its folders."""
    kept = base if all(part in ("..", ".", "") for part in base.split("/")) else ""
    return shared_values(card), kept


def _n(value: int) -> str:
    return f"{value:,}"


def _rows(card: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list(card.get("rows", []))


def _by_class(row: Mapping[str, Any]) -> str:
    """Failing cases per class: `spec 12, quirk 3`."""
    parts = []
    for case_class in _CLASSES:
        counts = row.get("by_class", {}).get(case_class, {})
        failing = sum(counts.get(v, 0) for v in ("fail", "error", "timeout"))
        if failing:
            parts.append(f"{case_class} {_n(failing)}")
    return ", ".join(parts) or "-"


def _by_severity(row: Mapping[str, Any]) -> str:
    found = row.get("by_severity", {})
    return ", ".join(f"{s} {_n(found[s])}" for s in _SEVERITIES if found.get(s)) or "-"


def _repros(row: Mapping[str, Any]) -> list[str]:
    """The row's standalone reproductions (examples/repros/), each once, in signature order."""
    return list(dict.fromkeys(path for sig in row.get("signatures", []) for path in sig.get("repros", [])))


def _repro_links(paths: Iterable[str], base: str) -> str:
    return ", ".join(f"[{_text(Path(path).stem)}]({base}{path})" for path in paths) or "-"


def _summary_table(rows: Iterable[Mapping[str, Any]], base: str = "") -> list[str]:
    lines = [
        "| library | version | adapter | cases | pass | fail | warn | error | failing by class "
        "| not passing by severity | repro scripts |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | --- | --- | --- |",
    ]
    for r in rows:
        dated = r.get("dependencies_before")
        version = r["version"] + (f", as of {dated[:10]}" if dated else "")
        head = f"| {_text(r['library'])} | {_text(version)} | {_code(r['adapter'])} |"
        if r.get("problem"):
            lines.append(f"{head} - | - | - | - | - | {_text('not graded: ' + r['problem'])} | | |")
            continue
        v = r.get("verdicts", {})
        errors = v.get("error", 0) + v.get("timeout", 0)
        lines.append(
            f"{head} {_n(r['cases'])} | {_n(v.get('pass', 0))} | {_n(v.get('fail', 0))} | "
            f"{_n(v.get('warn', 0))} | {_n(errors)} | {_by_class(r)} | {_by_severity(r)} | "
            f"{_repro_links(_repros(r), base)} |"
        )
    return lines


def _known_text(sig: Mapping[str, Any]) -> str:
    known = sig.get("known")
    if not known:
        return "not in our list"
    parts = [f"{known['kind']}: {known['title']}"]
    parts.append(f"[upstream]({known['upstream']})" if known.get("upstream") else "not reported upstream")
    if known.get("introduced_in") or known.get("fixed_in"):
        parts.append(_releases_text(known))
    return "; ".join(parts)


def _releases_text(known: Mapping[str, Any]) -> str:
    """`introduced in 1.2.0, fixed in 1.2.14`: the releases `toolstream bisect` found, those known."""
    found = (("introduced", known.get("introduced_in")), ("fixed", known.get("fixed_in")))
    return ", ".join(f"{what} in {release}" for what, release in found if release)


def _source_text(sig: Mapping[str, Any]) -> str:
    known = sig.get("known") or {}
    source = known.get("source")
    if not source:
        return "line not attributed yet"
    release = " ".join(filter(None, (source.get("package"), source["version"])))
    return f"`{source['file']}:{source['line']}` ({release}): {_code(source['text'].strip())}"


def _signature_lines(row: Mapping[str, Any], base: str = "") -> list[str]:
    lines = [
        "| cases | verdict | severity | class | signature | worst case | known | library line | repro |",
        "| ---: | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for sig in row.get("signatures", []):
        classes = ", ".join(f"{c} {k}" for c, k in sig["classes"].items())
        lines.append(
            f"| {_n(sig['cases'])} | {sig['verdict']} | {sig['severity']} | {classes} | "
            f"{_code(sig['signature'])} | "
            f"{_code(sig['worst'])} | {_cell(_known_text(sig))} | {_cell(_source_text(sig))} | "
            f"{_repro_links(sig.get('repros', []), base)} |"
        )
    return lines


_SCENARIOS_SHOWN = 8  # scenario names a root cause lists on a page (the JSON keeps them all)


def _scenarios_text(cause: Mapping[str, Any]) -> str:
    """`12: A1-parallel-same-index 4, original 2, ... and 3 more` (the most cases first)."""
    scenarios = list(cause.get("scenarios", {}).items())
    named = ", ".join(f"{name} {n}" for name, n in scenarios[:_SCENARIOS_SHOWN])
    more = f" and {len(scenarios) - _SCENARIOS_SHOWN} more" if len(scenarios) > _SCENARIOS_SHOWN else ""
    return f"{len(scenarios)}: {named}{more}"


def _root_cause_lines(row: Mapping[str, Any]) -> list[str]:
    """The row's failures and warnings a level above their signatures: each root cause (the raise
    site in the library, else the same raise or first difference) with its signatures and scenarios."""
    causes = row.get("root_causes") or []
    if not causes:
        return []
    lines = [
        f"Root causes ({_n(len(causes))} for {_n(len(row.get('signatures', [])))} signatures: the same raise "
        "site in the library, else the same raise or first difference):",
        "",
        "| cases | verdict | severity | class | root cause | signatures | recordings | scenarios "
        "| worst case |",
        "| ---: | --- | --- | --- | --- | ---: | ---: | --- | --- |",
    ]
    for cause in causes:
        classes = ", ".join(f"{c} {k}" for c, k in cause["classes"].items())
        lines.append(
            f"| {_n(cause['cases'])} | {cause['verdict']} | {cause['severity']} | {classes} | "
            f"{_code(cause['root_cause'])} | {_n(len(cause['signatures']))} | {_n(cause['recordings'])} | "
            f"{_text(_scenarios_text(cause))} | {_code(cause['worst'])} |"
        )
    return lines


def _change_lines(changes: Sequence[Mapping[str, Any]]) -> list[str]:
    lines: list[str] = []
    for change in changes:
        versions = f"{_text(change['library'])} {_text(change['from'])} -> {_text(change['to'])}"
        head = f"- **{versions}** ({_n(change['cases'])} cases in both):"
        said = []
        for what in ("fixed", "broken"):
            for group in change[what]:
                example = group["examples"][0]
                scenario = markdown_code(group["scenario"])
                said.append(f"{what} {_n(group['cases'])} x {scenario} (e.g. {markdown_code(example)})")
        lines.append(head + (" " + "; ".join(said) if said else " no case changed"))
    return lines


def adapters_block(card: Mapping[str, Any], base: str = "") -> str:
    """The built-in adapter table of docs/report-card.md: the newest graded release of each library,
    then each failure signature with its worst case and the library line responsible. `base`: the
    checkout as seen from the page (its links to examples/repros/ start with it)."""
    card, base = _shared(card, base)
    newest: dict[str, Mapping[str, Any]] = {}
    for r in _rows(card):
        newest[r["library"]] = r  # rows are in version order: the last one is the newest
    lines = [
        f"Generated by `toolstream report-card` on {card['date']} over {_selection_text(card)}: the "
        "newest graded release of each library.",
        "",
        *_summary_table(newest.values(), base),
    ]
    for r in newest.values():
        if r.get("problem") or not r.get("signatures"):
            continue
        lines += [
            "",
            f"**{_text(r['library'])} {_text(r['version'])}** ({markdown_code(r['adapter'])}), "
            "failure and warning signatures:",
            "",
        ]
        lines += _signature_lines(r, base)
        lines += ["", *_root_cause_lines(r)] if r.get("root_causes") else []
    return "\n".join(lines)


def card_block(card: Mapping[str, Any], base: str = "") -> str:
    """The report card block of docs/report-card.md: date, versions, the table (each row linking
    the standalone reproductions of its bugs) and what changed."""
    card, base = _shared(card, base)
    lines = [f"Generated by `toolstream report-card` on {card['date']} over {_selection_text(card)}.", ""]
    lines += _summary_table(_rows(card), base)
    if card.get("changes"):
        lines += ["", "Changes between versions:", "", *_change_lines(card["changes"])]
    return "\n".join(lines)


def _selection_text(card: Mapping[str, Any], escape: Callable[[str], str] = markdown_text) -> str:
    selection = card.get("selection") or {}
    said = [f"{k} {', '.join(map(str, v)) if isinstance(v, list) else v}" for k, v in selection.items() if v]
    return "the bundled matrix" + (f" ({escape('; '.join(said))})" if said else "")


def markdown(card: Mapping[str, Any], base: str = "") -> str:
    """report-card.md: every row, every failure signature of every row, the changes. `base`: the
    checkout as seen from where the file goes (its links to examples/repros/ start with it)."""
    card, base = _shared(card, base)
    lines = ["# Report card", "", card_block(card, base)]
    for r in _rows(card):
        lines += ["", f"## {_text(r['library'])} {_text(r['version'])} ({markdown_code(r['adapter'])})", ""]
        if r.get("note"):
            lines += [_text(f"{r['version']}: {r['note']}"), ""]
        lines += _environment_lines(r)
        if r.get("shared"):
            counted = ", ".join(f"{n} in {_text(where)}" for where, n in r["shared"].items())
            lines += [
                "Cases with the same verdict in the rows of the libraries it goes through are counted "
                f"there: {counted}.",
                "",
            ]
        if r.get("problem"):
            lines.append(f"Not graded: {_text(r['problem'])}")
        elif not r.get("signatures"):
            lines.append("No failing case.")
        else:
            lines += _signature_lines(r, base)
            lines += ["", *_root_cause_lines(r)] if r.get("root_causes") else []
    return "\n".join(lines) + "\n"


def _environment_lines(r: Mapping[str, Any]) -> list[str]:
    """The environment a row was graded in: its dependencies' cutoff, and what does not run there."""
    lines = []
    if r.get("dependencies_before"):
        lines.append(_text(f"Graded with its dependencies as uploaded before {r['dependencies_before']}."))
    elif r.get("dependencies_undated"):
        lines.append(_text(f"Graded with today's dependencies: {r['dependencies_undated']}."))
    for dialect, why in (r.get("does_not_run") or {}).items():
        lines.append(_text(f"Does not run here on {dialect} streams (not graded): {why}"))
    return [said for line in lines for said in (line, "")]


def _repro_anchors(paths: Iterable[str], base: str) -> str:
    e = html_text
    return ", ".join(f"<a href='{e(base + path)}'>{e(Path(path).stem)}</a>" for path in paths) or "-"


def page(card: Mapping[str, Any], base: str = "") -> str:
    """report-card.html: the same content as the Markdown, self-contained (but for the links to
    examples/repros/, relative to `base`)."""
    card, base = _shared(card, base)
    e = html_text
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>toolstream report card</title>",
        "<style>body{font:14px system-ui,sans-serif;margin:2em}table{border-collapse:collapse;margin:1em 0}"
        "td,th{border:1px solid #ccc;padding:3px 6px;vertical-align:top}th{background:#f3f3f3}"
        "code{font-size:12px}.unsafe{color:#b00}.lost{color:#a60}.problem{color:#b00}</style></head><body>",
        f"<h1>Report card</h1><p>{e(card['date'])}, {e(_selection_text(card, str))}</p>",
        "<table><tr><th>library</th><th>version</th><th>adapter</th><th>cases</th>"
        + "".join(f"<th>{v}</th>" for v in _VERDICTS)
        + "<th>failing by class</th><th>not passing by severity</th><th>repro scripts</th></tr>",
    ]
    for r in _rows(card):
        head = (
            f"<tr><td>{e(r['library'])}</td><td>{e(r['version'])}</td><td><code>{e(r['adapter'])}</code></td>"
        )
        if r.get("problem"):
            parts.append(head + f"<td colspan='9' class='problem'>not graded: {e(r['problem'])}</td></tr>")
            continue
        v = r.get("verdicts", {})
        cells = "".join(f"<td>{v.get(name, 0)}</td>" for name in _VERDICTS)
        parts.append(
            f"{head}<td>{r['cases']}</td>{cells}<td>{e(_by_class(r))}</td><td>{e(_by_severity(r))}</td>"
            f"<td>{_repro_anchors(_repros(r), base)}</td></tr>"
        )
    parts.append("</table>")
    if card.get("changes"):
        parts.append("<h2>Changes between versions</h2><ul>")
        for change in card["changes"]:
            items = [
                f"{what} {g['cases']} x <code>{e(g['scenario'])}</code> "
                f"(e.g. <code>{e(g['examples'][0])}</code>)"
                for what in ("fixed", "broken")
                for g in change[what]
            ]
            parts.append(
                f"<li><b>{e(change['library'])} {e(change['from'])} → {e(change['to'])}</b>: "
                + ("; ".join(items) or "no case changed")
                + "</li>"
            )
        parts.append("</ul>")
    for r in _rows(card):
        if not r.get("signatures"):
            continue
        parts.append(
            f"<h2>{e(r['library'])} {e(r['version'])}</h2><table><tr><th>cases</th><th>severity</th>"
            "<th>class</th><th>signature</th><th>worst case</th><th>example</th><th>known</th>"
            "<th>library line</th><th>repro</th></tr>"
        )
        for sig in r["signatures"]:
            known = sig.get("known") or {}
            link = f" <a href='{e(known['upstream'])}'>upstream</a>" if known.get("upstream") else ""
            if known.get("introduced_in") or known.get("fixed_in"):
                link += f" ({e(_releases_text(known))})"
            source = known.get("source")
            where = (
                f"<code>{e(source['file'])}:{source['line']}</code> "
                f"({e(' '.join(filter(None, (source.get('package'), source['version']))))})"
                f"<br><code>{e(source['text'].strip())}</code>"
                if source
                else "not attributed yet"
            )
            classes = ", ".join(f"{c} {k}" for c, k in sig["classes"].items())
            parts.append(
                f"<tr><td>{sig['cases']}</td><td class='{e(sig['severity'])}'>{e(sig['severity'])}</td>"
                f"<td>{e(classes)}</td>"
                f"<td><code>{e(sig['signature'])}</code></td><td><code>{e(sig['worst'])}</code></td>"
                f"<td><code>{e(sig['example'])}</code></td>"
                f"<td>{e(known.get('title', 'not in our list'))}{link}</td><td>{where}</td>"
                f"<td>{_repro_anchors(sig.get('repros', []), base)}</td></tr>"
            )
        parts.append("</table>")
        parts += _root_cause_html(r)
    parts.append("</body></html>\n")
    return "\n".join(parts)


def _root_cause_html(row: Mapping[str, Any]) -> list[str]:
    e = html_text
    causes = row.get("root_causes") or []
    if not causes:
        return []
    parts = [
        f"<h3>{e(row['library'])} {e(row['version'])}: root causes</h3>"
        "<table><tr><th>cases</th><th>severity</th><th>class</th><th>root cause</th><th>signatures</th>"
        "<th>recordings</th><th>scenarios</th><th>worst case</th></tr>"
    ]
    for cause in causes:
        classes = ", ".join(f"{c} {k}" for c, k in cause["classes"].items())
        signatures = "<br>".join(f"{n} x <code>{e(sig)}</code>" for sig, n in cause["signatures"].items())
        scenarios = ", ".join(f"{e(name)} {n}" for name, n in cause["scenarios"].items())
        parts.append(
            f"<tr><td>{cause['cases']}</td><td class='{e(cause['severity'])}'>{e(cause['severity'])}</td>"
            f"<td>{e(classes)}</td><td><code>{e(cause['root_cause'])}</code></td><td>{signatures}</td>"
            f"<td>{cause['recordings']}</td><td>{scenarios}</td><td><code>{e(cause['worst'])}</code></td></tr>"
        )
    parts.append("</table>")
    return parts


def replace_block(text: str, which: str, content: str, where: str = "the page") -> str:
    """`text` with the generated block `which` replaced by `content` (between its markers)."""
    start, end = MARKERS[which]
    pattern = re.compile(re.escape(start) + r"\n.*?" + re.escape(end), re.DOTALL)
    if not pattern.search(text):
        raise UsageError(f"{where}: no {start} ... {end} markers to write the {which} block between")
    return pattern.sub(lambda _: f"{start}\n{content}\n{end}", text, count=1)


def update_page(path: Path, card: Mapping[str, Any], base: str = "") -> None:
    """Write both generated blocks into a Markdown page (atomically): docs/report-card.md, or any
    page holding their markers. `base`: the checkout as seen from the page's folder."""
    text = bounded.read_input(path, MAX_PAGE_BYTES, "a page").decode("utf-8", "replace")
    text = replace_block(text, "adapters", adapters_block(card, base), str(path))
    text = replace_block(text, "card", card_block(card, base), str(path))
    files.write(path, text.encode("utf-8"))
