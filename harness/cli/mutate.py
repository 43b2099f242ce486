"""`toolstream mutate`: run one cassette through a scenario and write the mutated cassette, with
the outcome a correct client reaches, replayable like any other."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from harness.cassettes.format import save
from harness.check.case_id import find_in_selection, is_case_id
from harness.check.expectation import declaration
from harness.check.selection import Matrix, Selection
from harness.cli import arguments
from harness.errors import UsageError
from harness.mutate.scenario import SEPARATOR, Case, Scenario, case_cassette


def add_parser(sub: Any, name: str) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser(
        name,
        help="write a cassette mutated by a scenario, with its expected outcome",
        description="Mutate CASSETTE by a scenario (a library name or a YAML file) and write the result; "
        "or write the case a CASE_ID names (<cassette>::<scenario>::s<seed>[::point], as check prints it).",
    )
    parser.add_argument(
        "cassette", metavar="CASSETTE|CASE_ID", help="the cassette file to mutate, or a case id"
    )
    parser.add_argument("--scenario", help="scenario name or file (with a CASSETTE)")
    parser.add_argument("--seed", type=arguments.SEED, default=0, help="case seed (default 0)")
    parser.add_argument("--point", help="for a sweep scenario: which point (e.g. e7); default the first")
    parser.add_argument(
        "-o", "--output", required=True, type=arguments.output_file, help="where to write the cassette"
    )
    return parser


def run(args: argparse.Namespace) -> int:
    source = Path(args.cassette)
    if not source.is_file() and is_case_id(args.cassette):
        if args.scenario or args.point:
            raise UsageError("a CASE_ID names its scenario, seed and point: leave out --scenario and --point")
        found = find_in_selection(args.cassette, ())
        return _written(found.case, found.scenario, args.output)
    if not source.is_file():
        raise UsageError(f"{source}: no such cassette file (or a case id <cassette>::<scenario>::s<seed>)")
    if not args.scenario:
        raise UsageError("--scenario is needed to mutate a cassette file")
    matrix = Matrix(Selection(cassettes=(str(source),), scenarios=(args.scenario,)))
    scenario = matrix.scenarios[0]
    case_id = SEPARATOR.join([source.with_suffix("").name, scenario.name, f"s{args.seed}"])
    if args.point:
        case_id += SEPARATOR + args.point
    return _written(matrix.case(case_id), scenario, args.output)


def _written(case: Case, scenario: Scenario, output: str) -> int:
    path = save(case_cassette(case, declared=declaration(case, scenario)), output)
    calls = len(case.expected.tool_calls)
    reads = len(case.response.chunks)
    print(f"{path}: {case.id} ({reads} reads, {calls} expected calls, {case.expected.state})")
    return 0
