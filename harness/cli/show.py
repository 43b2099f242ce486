"""`toolstream show`: a cassette's interactions, decoded events and reference outcome."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path
from typing import Any

from harness.cassettes import corpus
from harness.cassettes import format as cassettes
from harness.cassettes.format import CassetteError
from harness.cassettes.outcome import diff
from harness.errors import in_cassette
from harness.matrix.case_id import find_in_selection, is_case_id
from harness.mutate.scenario import case_cassette
from harness.oracle.expectation import declaration
from harness.record import importer
from harness.report import inspection
from harness.report.outcomes import outcome_lines
from harness.text.escape import terminal, terminal_json
from harness.text.escape import terminal_line as one_line
from harness.text.terminal import table


def add_parser(sub: Any, name: str) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser(
        name,
        help="print a cassette's interactions, decoded events and tool-call outcome",
        description="Print a cassette, or a summary of every cassette under folders "
        "(default: the bundled corpus).",
    )
    parser.add_argument("paths", nargs="*", metavar="CASSETTE", help="cassette files or folders")
    parser.add_argument("--json", action="store_true", help="decoded events and reference outcome as JSON")
    parser.add_argument("--no-events", action="store_true", help="omit the event listing")
    parser.add_argument(
        "--cassettes", nargs="+", default=[], metavar="PATH",
        help="with a case id: the cassette files or folders it comes from (default: the bundled corpus, "
        "or a cassette file below the current folder named by its path)",
    )  # fmt: skip
    return parser


def run(args: argparse.Namespace) -> int:
    if len(args.paths) == 1 and is_case_id(args.paths[0]) and not Path(args.paths[0]).exists():
        return _show_case(args)
    args.paths = [str(corpus.located(p)) for p in args.paths]
    paths = corpus.cassette_paths(args.paths)
    single = len(paths) == 1 and not (args.paths and Path(args.paths[0]).is_dir())
    if args.json:
        reports = []
        for p in paths:
            with in_cassette(p):
                reports.append(inspection.to_json(cassettes.load(p)))
        print(terminal_json(reports[0] if single else reports))
        return 0
    if single:
        with in_cassette(paths[0]):
            print(terminal(_describe(cassettes.load(paths[0]), events=not args.no_events)))
        return 0
    rows, skipped = [], []
    for p in paths:
        try:
            with in_cassette(p):
                rows.append(_summary_row(p, _label(p, args.paths)))
        except CassetteError as exc:  # one foreign or broken file does not hide the others
            skipped.append(_skip_reason(p, exc))
    print(table(["cassette", "dialect", "reads", "calls", "state", "expected"], rows))
    for said in skipped:
        print(f"skipped {one_line(said)}")
    mismatched = sum(1 for row in rows if row[-1] not in ("ok", "-"))
    print(f"\n{len(rows)} cassettes, {mismatched} whose reference outcome differs from its expectation")
    return 0


def _skip_reason(path: Path, exc: CassetteError) -> str:
    if importer.recognise_foreign(path) == "vcr":
        out = importer.default_output(path)
        return f"{path}: a vcrpy / pytest-recording cassette (toolstream import {path} -o {out})"
    return str(exc)  # it names the file


def _show_case(args: argparse.Namespace) -> int:
    """A case by its id: the mutated cassette with its expected outcome."""
    found = find_in_selection(args.paths[0], args.cassettes)
    cassette = case_cassette(found.case, declared=declaration(found.case, found.scenario))
    if args.json:
        print(terminal_json(inspection.to_json(cassette)))
        return 0
    case = found.case
    talk = case.conversation
    turn = f" (turn #{talk.turn} of {len(talk.before) + 1 + len(talk.after)})" if talk else ""
    print(
        f"case {one_line(case.id)}: {one_line(found.source.id)}{turn} mutated by scenario "
        f"{one_line(case.scenario)}"
    )
    print(f"(`toolstream explain {one_line(shlex.quote(case.id))}` says why it expects this)\n")
    print(terminal(_describe(cassette, events=not args.no_events)))
    return 0


def _describe(cassette: cassettes.Cassette, *, events: bool) -> str:
    source = cassette.source
    lines = [
        f"{one_line(cassette.name)}  ({one_line(str(cassette.path or 'not saved'))})",
        f"dialect: {one_line(cassette.dialect or 'unknown')}",
        f"source: {one_line(source.kind)}: {one_line(source.provenance)}",
    ]
    for n, item in enumerate(cassette.interactions, start=1):
        resp = item.response
        ending = "complete" if resp.complete else f"cut: {one_line(resp.error or 'no error text')}"
        lines += [
            "",
            f"#{n} {one_line(item.request.method)} {one_line(item.request.url)}",
            f"   -> {resp.status} {one_line(resp.content_type or '')}, "
            f"{len(resp.chunks)} reads, {len(resp.body)} bytes, {ending}",
        ]
        decoded, outcome = inspection.view(cassette, item)
        if events and decoded:
            gists = inspection.gists(cassette.dialect, decoded)
            rows = [(i, e.name or "", inspection.kinds(cassette, e), gists[i]) for i, e in enumerate(decoded)]
            lines += ["", _indent(table(["#", "event", "kinds", "data"], rows))]
        if outcome is not None:
            lines += ["", *outcome_lines(outcome, "outcome", indent="   ")]
        if item.expected is not None and outcome is not None:
            problems = diff(item.expected, outcome)
            verdict = "matches the expected outcome" if not problems else "differs: " + "; ".join(problems)
            lines.append(f"   reference {one_line(verdict)}")
        if item.declared is not None:
            declared = item.declared
            lines.append(
                f"   expected class (declared): {one_line(declared.case_class)}: {one_line(declared.reason)}"
            )
    return "\n".join(lines)


def _label(path: Path, roots: list[str]) -> str:
    """The cassette's path relative to the folder it was found under, without the suffix."""
    for root in [Path(r) for r in roots] or [corpus.bundled("cassettes")]:
        if root.is_dir() and path.is_relative_to(root):
            return str(path.relative_to(root).with_suffix(""))
    return str(path)


def _summary_row(path: Path, label: str) -> tuple[str, ...]:
    cassette = cassettes.load(path)
    reads = sum(len(i.response.chunks) for i in cassette.interactions)
    calls, states, verdict = 0, [], "-"
    for item in cassette.interactions:
        _, outcome = inspection.view(cassette, item)
        if outcome is None:
            continue
        calls += len(outcome.tool_calls)
        states.append(str(outcome.state))
        if item.expected is not None:
            verdict = "ok" if not diff(item.expected, outcome) and verdict in ("-", "ok") else "DIFFERS"
    return (label, cassette.dialect or "?", str(reads), str(calls), ",".join(states) or "-", verdict)


def _indent(text: str) -> str:
    return "\n".join("   " + line for line in text.splitlines())
