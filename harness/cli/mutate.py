"""`toolstream mutate`: run one cassette through a scenario and write the mutated cassette, with
the outcome a correct client reaches, replayable like any other."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from harness.cassettes.corpus import located
from harness.cassettes.format import save
from harness.cli import arguments
from harness.errors import UsageError
from harness.matrix.case_id import find_in_selection, is_case_id
from harness.matrix.selection import Matrix, Selection
from harness.mutate.scenario import SEPARATOR, Case, Scenario, case_cassette
from harness.oracle.expectation import declaration


def add_parser(sub: Any, name: str) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser(
        name,
        help="write a cassette mutated by a scenario, with its expected outcome",
        description="Mutate CASSETTE by a scenario (a library name or a YAML file) and write the result; "
        "or write the case a CASE_ID names (<cassette>::<scenario>::s<seed>[::point], as check prints it).",
    )
    parser.add_argument(
        "cassette",
        metavar="CASSETTE|CASE_ID",
        help="the cassette file to mutate (its path, or its name in case ids, with #N for one turn of "
        "a conversation whose several turns stream tool calls), or a case id",
    )
    parser.add_argument("--scenario", help="scenario name or file (with a CASSETTE)")
    parser.add_argument("--seed", type=arguments.SEED, default=0, help="case seed (default 0)")
    parser.add_argument("--point", help="for a sweep scenario: which point (e.g. e7); default the first")
    parser.add_argument(
        "-o", "--output", required=True, type=arguments.output_file, help="where to write the cassette"
    )
    return parser


def run(args: argparse.Namespace) -> int:
    given = str(args.cassette)
    if not Path(given).is_file() and is_case_id(given):
        if args.scenario or args.point:
            raise UsageError("a CASE_ID names its scenario, seed and point: leave out --scenario and --point")
        found = find_in_selection(given, ())
        return _written(found.case, found.scenario, args.output)
    source, turn = _cassette(given)
    if not args.scenario:
        raise UsageError("--scenario is needed to mutate a cassette file")
    matrix = Matrix(Selection(cassettes=(str(source),), scenarios=(args.scenario,)))
    scenario = matrix.scenarios[0]
    streams = matrix.sources(source)
    chosen = [s for s in streams if str(s.number + 1) == turn] if turn else streams
    if len(chosen) != 1:
        raise UsageError(_no_turn(source, turn, [s.number + 1 for s in streams]))
    case_id = SEPARATOR.join([chosen[0].id, scenario.name, f"s{args.seed}"])
    if args.point:
        case_id += SEPARATOR + args.point
    return _written(matrix.case(case_id), scenario, args.output)


def _cassette(given: str) -> tuple[Path, str]:
    """The cassette file `given` names (a path, or its name in case ids: `located`) and the turn a
    `#N` after it picks ("" for none)."""
    path = located(given)
    turn = ""
    if not path.is_file():
        base, hash_, turn = given.rpartition("#")
        if hash_ and turn.isdigit() and located(base).is_file():
            path = located(base)
        else:
            turn = ""
    if not path.is_file():
        raise UsageError(f"{given}: no such cassette file (or a case id <cassette>::<scenario>::s<seed>)")
    return path, turn


def _no_turn(source: Path, turn: str, numbers: list[int]) -> str:
    """Why no one recorded stream of `source` is the one asked for (`turn`: N of a `#N`, or "")."""
    if not numbers:
        return f"{source}: no streamed response of a known dialect to mutate"
    listed = ", ".join(f"#{n}" for n in numbers)
    if not turn:
        return f"{source}: {len(numbers)} turns stream tool calls ({listed}): name one, {source}#{numbers[0]}"
    return f"{source}#{turn}: turn {turn} is not one to mutate; the turns that stream tool calls: {listed}"


def _written(case: Case, scenario: Scenario, output: str) -> int:
    path = save(case_cassette(case, declared=declaration(case, scenario)), output)
    calls = len(case.expected.tool_calls)
    reads = len(case.response.chunks)
    print(f"{path}: {case.id} ({reads} reads, {calls} expected calls, {case.expected.state})")
    return 0
