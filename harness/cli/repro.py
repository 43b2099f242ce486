"""`toolstream repro CASE_ID --accumulator SPEC` (or `--gateway NAME`): a standalone script
reproducing one case."""

from __future__ import annotations

import argparse
import shlex
import sys
from typing import Any

from harness import files
from harness.accumulators import resolve
from harness.card import gateways
from harness.card.environments import EnvironmentProblem
from harness.card.gateways import GATEWAYS
from harness.cli.arguments import output_file
from harness.errors import HarnessError, UsageError
from harness.matrix.selection import Matrix, Selection
from harness.mutate.case import Case
from harness.search.repro import SPECS, adapter_script, gateway_script, has_template, repro_script


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
            "harness; for a gateway of the report card (--gateway) it needs only the gateway, serving "
            "the case as its upstream from loopback. Exit 1 while the bug is there, 0 once the case passes."
        ),
    )
    parser.add_argument("case_id", metavar="CASE_ID", help="a case id as `check` prints it")
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--accumulator", metavar="SPEC", help="the library's adapter")
    which.add_argument(
        "--gateway", metavar="NAME",
        help=f"a gateway of the report card, from its side environment ({', '.join(GATEWAYS)})",
    )  # fmt: skip
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
    if args.gateway is not None:
        return _write(args, _gateway_script(case, args.case_id, args.gateway))
    command = shlex.join(["toolstream", "repro", args.case_id, "--accumulator", args.accumulator])
    # The scenario as found (in --scenarios-dir too), whose steps give the case's class.
    scenario = matrix.by_name.get(case.scenario)
    if has_template(args.accumulator):  # a library we ship an adapter for: a script needing only it
        script = repro_script(case, args.accumulator, command=command, scenario=scenario)
    else:  # any other accumulator: resolved now, so a typo is a usage error and not a script
        resolve(args.accumulator)
        script = adapter_script(case, args.accumulator, command=command, scenario=scenario)
    return _write(args, script)


def _gateway_script(case: Case, case_id: str, name: str) -> str:
    gateway = GATEWAYS.get(name)
    if gateway is None:
        raise UsageError(f"--gateway: unknown gateway {name!r} (known: {', '.join(GATEWAYS)})")
    if case.dialect != gateway.source:
        raise UsageError(f"--gateway {name}: it is asked {gateway.source} cases; {case_id} is {case.dialect}")
    try:
        program = gateways.standalone(gateway)
    except EnvironmentProblem as exc:
        raise UsageError(f"--gateway {name}: {exc}") from None
    command = shlex.join(["toolstream", "repro", case_id, "--gateway", name])
    return gateway_script(case, program, source=gateway.source, target=gateway.target, command=command)


def _write(args: argparse.Namespace, script: str) -> int:
    if args.output is None:
        sys.stdout.write(script)
        return 0
    path = files.write(args.output, script.encode("utf-8"))
    print(f"wrote {path}", file=sys.stderr)
    return 0
