"""`toolstream report merge A.json B.json ...`: the shards' JSON reports merged into the report the
whole run writes (`harness.report.merge`); exit 1 when it has a failing case, as `check` would."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from harness.cli import arguments
from harness.report.html import write_html
from harness.report.merge import merge
from harness.report.results import render_check, write_json
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
    merged = merge(args.reports)
    if merged.unchecked is not None:
        print(
            f"report merge: not checked for missing cases: {terminal_line(merged.unchecked)}", file=sys.stderr
        )
    if args.json:
        write_json(merged.document, args.json)
    if args.html:
        write_html(args.html, reports=[merged.report], selection=merged.selection)
    shown = render_check(merged.report, selection=merged.selection, max_failures=args.max_failures)
    print(shown, file=arguments.terminal_report(args))  # stderr when a report goes to stdout (`-`)
    return 0 if merged.report.ok else 1
