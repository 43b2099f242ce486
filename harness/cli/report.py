"""`toolstream report merge A.json B.json ...`: the shards' JSON reports merged into the report the
whole run writes (`harness.report.merge`); exit 1 when it has a failing case, as `check` would."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from harness._version import __version__
from harness.cli import arguments
from harness.report.html import write_html
from harness.report.merge import merge_session
from harness.report.results import REPORT_VERSION, render_check, write_json
from harness.text.escape import terminal_line


def add_parser(sub: Any, name: str) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser(
        name, help="merge the JSON reports of a run's shards into the whole run's report"
    )
    what = parser.add_subparsers(dest="report_command", metavar="SUBCOMMAND", required=True)
    merging: argparse.ArgumentParser = what.add_parser(
        "merge",
        help="merge the JSON reports of a run's shards (pytest-shard, pytest-split, check runs)",
        description=(
            "Merge the JSON reports of the shards of one run (pytest --toolstream-json under "
            "pytest-shard or pytest-split, or toolstream check --json over parts of one selection) "
            "into the report the whole run writes, after checking they ran one matrix: one "
            "toolstream version, accumulator, strictness and selection, no case twice, none of the "
            "matrix missing. Prints what check prints. Exit 0 when no case fails (warnings included "
            "with the shards' --strict), 1 when one does, 2 when the reports are not the shards of "
            "one run (one line naming the file and the problem)."
        ),
    )
    merging.add_argument("reports", nargs="+", metavar="REPORT", help="the shards' JSON reports")
    merging.add_argument(
        "--json", type=arguments.output_file, metavar="FILE", help="write the merged JSON report here"
    )
    merging.add_argument(
        "--html", type=arguments.output_file, metavar="FILE", help="write the merged HTML page here"
    )
    merging.add_argument(
        "--max-failures", type=arguments.LIMIT, default=50, metavar="N",
        help="failures printed in full (default 50; 0: all)",
    )  # fmt: skip
    return parser


def run(args: argparse.Namespace) -> int:
    merged = merge_session(args.reports)
    for one in merged:
        if one.unchecked is not None:
            name = f"{terminal_line(one.report.accumulator)}: " if len(merged) > 1 else ""
            said = terminal_line(one.unchecked)
            print(f"report merge: {name}not checked for missing cases: {said}", file=sys.stderr)
    if args.json:
        if len(merged) == 1:
            write_json(merged[0].document, args.json)
        else:  # a session's several, as the session writes them
            write_json(
                {"version": REPORT_VERSION, "harness": __version__, "reports": [m.document for m in merged]},
                args.json,
            )
    if args.html:
        write_html(args.html, reports=[m.report for m in merged], selection=merged[0].selection)
    for one in merged:  # to stderr when a report goes to stdout (`-`)
        shown = render_check(one.report, selection=one.selection, max_failures=args.max_failures)
        print(shown, file=arguments.terminal_report(args))
    return 0 if all(m.report.ok for m in merged) else 1
