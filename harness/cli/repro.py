"""`toolstream repro CASE_ID --accumulator SPEC`: a standalone script reproducing one case."""

from __future__ import annotations

import argparse
import shlex
import sys
from typing import Any

from harness import files
from harness.cli.arguments import output_file
from harness.errors import HarnessError, UsageError
from harness.matrix.selection import Matrix, Selection
from harness.search.repro import SPECS, has_template, repro_script
from harness.text.escape import terminal_line as one_line


def add_parser(sub: Any, name: str) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser(
        name,
        help="write a standalone script reproducing one case with only the library under test",
        description=(
            "Write a Python script that needs only the library under test: the case's stream inlined "
            "as bytes and served by the library's own HTTP mocking point, what the library returns "
            "printed next to what the stream means, exit 1 while they differ and 0 once they agree. "
            "SPEC: " + ", ".join([*SPECS, "langchain-core"]) + "."
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
    if not has_template(args.accumulator):
        raise UsageError(_own_accumulator(args))
    command = shlex.join(["toolstream", "repro", args.case_id, "--accumulator", args.accumulator])
    # The scenario as found (in --scenarios-dir too), whose steps give the case's class.
    script = repro_script(case, args.accumulator, command=command, scenario=matrix.by_name.get(case.scenario))
    if args.output is None:
        sys.stdout.write(script)
        return 0
    path = files.write(args.output, script.encode("utf-8"))
    print(f"wrote {path}", file=sys.stderr)
    return 0


def _own_accumulator(args: argparse.Namespace) -> str:
    """The refusal for an accumulator with no script template, on one line: the commands that do
    reproduce a case for it (`compare` against the reference writes it shrunk as a cassette)."""
    options = ["--cassettes", *args.cassettes] if args.cassettes else []
    options += ["--scenarios-dir", args.scenarios_dir] if args.scenarios_dir else []
    spec = args.accumulator
    compare = ["toolstream", "compare", "reference", spec, "--case", args.case_id, *options, "--out", "DIR"]
    explore = ["toolstream", "explore", "--accumulator", spec, "--out", "DIR"]
    return one_line(
        f"no script template for accumulator {spec!r} (scripts: {', '.join([*SPECS, 'langchain-core'])}); "
        f"for your own accumulator, `{shlex.join(compare)}` writes this case shrunk as a cassette "
        f"into DIR, and `{shlex.join(explore)}` finds a failure and writes it shrunk"
    )
