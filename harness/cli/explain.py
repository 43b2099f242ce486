"""`toolstream explain CASE_ID`: why a case expects what it expects (`harness.report.explanation`)."""

from __future__ import annotations

import argparse
from typing import Any

from harness.matrix.case_id import find_in_selection
from harness.report.explanation import explain
from harness.text.escape import terminal
from harness.text.terminal import output_width


def add_parser(sub: Any, name: str) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser(
        name,
        help="why a case expects what it expects: streams side by side, steps, class and oracle rule",
        description="Explain a case, named by its id as check prints it "
        "(<cassette>::<scenario>::s<seed>[::point]): the recorded and the mutated stream side by side "
        "with the changed events marked, what each mutation did, the case's class (spec, quirk, "
        "policy) and the rule of docs/oracle.md that gives the expected state and calls.",
    )
    parser.add_argument(
        "case_id", metavar="CASE_ID", help="a case id, e.g. openai-chat/parallel-2::original::s0"
    )
    parser.add_argument(
        "--cassettes", nargs="+", default=[], metavar="PATH",
        help="the cassette files or folders the case comes from (default: the bundled corpus)",
    )  # fmt: skip
    return parser


def run(args: argparse.Namespace) -> int:
    found = find_in_selection(args.case_id, args.cassettes)
    print(terminal(explain(found, width=output_width())))  # piped: no event cut to a width
    return 0
