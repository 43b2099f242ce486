"""`toolstream bisect LIBRARY CASE_ID`: the first release of a library where a case's verdict changed."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from harness.cli import arguments


def add_parser(sub: Any, name: str) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser(
        name,
        help="find the first release of a library where one case's verdict changed",
        description=(
            "Grade one case with a library's adapter release by release, each in the report card's "
            "side environment for it (built once, cached), bisecting the range: it names the first "
            "release whose verdict is the newest one's, with both verdicts. Exit 0 when it could "
            "tell (a change found, or none), 2 on bad input or when an end of the range cannot be "
            "graded here."
        ),
    )
    parser.add_argument(
        "library", metavar="LIBRARY", help="a library of the report card (langchain-core, ...)"
    )
    parser.add_argument("case_id", metavar="CASE_ID", help="a case id as `check` prints it")
    parser.add_argument(
        "--adapter", metavar="SPEC", help="the adapter to grade with (default: the library's)"
    )
    parser.add_argument(
        "--versions",
        default="..",
        metavar="A..B",
        help="the releases: A..B (every release from A to B on the index, either end may be left out) "
        "or a comma-separated list (default: every release)",
    )
    parser.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="VERSION=PATH",
        help="grade VERSION in this virtualenv or interpreter instead of building one (repeatable)",
    )
    parser.add_argument(
        "--cassettes", nargs="+", default=[], metavar="PATH", help="where the case's cassette is"
    )
    parser.add_argument("--scenarios-dir", metavar="DIR", help="the scenarios the id's scenario is found in")
    parser.add_argument(
        "--timeout",
        type=arguments.timeout,
        default=30.0,
        metavar="S",
        help="seconds the case may take in one release (default 30, as the report card; 0: no "
        "limit; a release that hangs on it gets the verdict `timeout`)",
    )
    parser.add_argument(
        "--json", type=arguments.output_file, metavar="FILE", help="write the finding as JSON here"
    )
    return parser


def run(args: argparse.Namespace) -> int:
    from harness.card import environments
    from harness.card.bisect import bisect, release_range
    from harness.card.libraries import library
    from harness.errors import UsageError
    from harness.matrix.selection import Matrix, Selection
    from harness.report.results import write_json
    from harness.text.escape import terminal_line

    chosen = library(args.library)
    selection = Selection(cassettes=args.cassettes, scenarios_dir=args.scenarios_dir)
    Matrix(selection).case(args.case_id)  # an unknown case is bad input before any environment
    pointed: dict[str, str] = {}
    for given in args.env:
        version, sep, path = given.partition("=")
        if not sep or not version or not path:
            raise UsageError(f"--env: give VERSION=PATH, not {given!r}")
        pointed[version] = path
    listed = [] if ".." not in args.versions else environments.available_versions(chosen.distribution)
    versions = release_range(listed, args.versions)

    def say(line: str) -> None:
        print(terminal_line(line), file=sys.stderr)

    found = bisect(
        chosen,
        args.case_id,
        versions,
        adapter=args.adapter,
        environments_at=pointed,
        selection=selection,
        say=say,
        timeout=args.timeout or None,
    )
    for graded in found.graded:
        print(terminal_line(f"  {graded.version:<12} {graded.said}"))
    print(terminal_line(found.summary()))
    if args.json:
        write_json(found.to_dict(), args.json)
    return 0 if found.told else 2  # an end without a verdict: the range is the user's to change
