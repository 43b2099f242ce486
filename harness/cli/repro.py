"""`toolstream repro CASE_ID --accumulator SPEC`: a standalone script reproducing one case."""

from __future__ import annotations

import argparse
import shlex
import sys
from typing import Any

from harness import files
from harness.accumulators import resolve
from harness.cli.arguments import output_file
from harness.errors import HarnessError, UsageError
from harness.matrix.selection import Matrix, Selection
from harness.search.repro import SPECS, adapter_script, has_template, repro_script


def add_parser(sub: Any, name: str) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser(
        name,
        help="write a standalone script reproducing one case with only the library under test",
        description=(
            "Write a Python script that reproduces one case: for a library with a built-in adapter ("
            + ", ".join([*SPECS, "langchain-core"])
            + ") it needs only that library (the stream inlined as bytes and served by the library's "
            "own HTTP mocking point); for any other accumulator (your module:attr, an entry point, a "
            "cmd: process) it inlines the case and replays it to that accumulator through the "
            "harness. Exit 1 while the bug is there, 0 once the case passes."
        ),
    )
    parser.add_argument("case_id", metavar="CASE_ID", help="a case id as `check` prints it")
    parser.add_argument("--accumulator", required=True, metavar="SPEC", help="the library's adapter")
    parser.add_argument(
        "-o", "--output", type=output_file, metavar="FILE", help="write here (default: stdout)"
    )
    parser.add_argument(
        "--cassettes", nargs="+", default=[], metavar="PATH", help="cassettes (default: the bundled corpus)"
    )
    parser.add_argument("--scenarios-dir", metavar="DIR", help="the scenarios the id's scenario is found in")
    return parser


def run(args: argparse.Namespace) -> int:
    try:
        matrix = Matrix(Selection(cassettes=args.cassettes, scenarios_dir=args.scenarios_dir))
        case = matrix.case(args.case_id)
    except HarnessError as exc:
        raise UsageError(
            f"{exc} (usage: toolstream repro CASSETTE::SCENARIO::s<SEED> --accumulator SPEC)"
        ) from None
    command = shlex.join(["toolstream", "repro", args.case_id, "--accumulator", args.accumulator])
    # The scenario as found (in --scenarios-dir too), whose steps give the case's class.
    scenario = matrix.by_name.get(case.scenario)
    if has_template(args.accumulator):  # a library we ship an adapter for: a script needing only it
        script = repro_script(case, args.accumulator, command=command, scenario=scenario)
    else:  # any other accumulator: resolved now, so a typo is a usage error and not a script
        resolve(args.accumulator)
        script = adapter_script(case, args.accumulator, command=command, scenario=scenario)
    if args.output is None:
        sys.stdout.write(script)
        return 0
    path = files.write(args.output, script.encode("utf-8"))
    print(f"wrote {path}", file=sys.stderr)
    return 0
