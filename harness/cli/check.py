"""`toolstream check`: every selected case through one accumulator; exit 1 when any case fails
(with `--strict`, when any case warns too)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from harness.cli import arguments
from harness.errors import UsageError
from harness.matrix import casecache
from harness.matrix.runner import run_matrix
from harness.matrix.selection import Matrix, Selection
from harness.oracle.verdict import Report
from harness.report.html import write_html
from harness.report.results import render_check, report_to_dict, write_json
from harness.text.terminal import ProgressBar

DEFAULT_TIMEOUT = 30.0


def add_selection_options(parser: argparse.ArgumentParser) -> None:
    """The options that choose cases, shared by `check` and `compare`."""
    parser.add_argument(
        "--cassettes", nargs="+", action="extend", default=[], metavar="PATH",
        help="cassette files or folders (default: the bundled corpus)",
    )  # fmt: skip
    chosen = parser.add_mutually_exclusive_group()
    chosen.add_argument(
        "--scenarios", nargs="+", action="extend", default=[], metavar="NAME",
        help="scenario names or files (default: every shipped one plus `original`, the unmutated stream)",
    )  # fmt: skip
    chosen.add_argument("--scenarios-dir", metavar="DIR", help="use the scenarios of this folder instead")
    parser.add_argument(
        "--dialect",
        action="append",
        default=[],
        metavar="D",
        help="only cassettes of this dialect (repeatable)",
    )
    parser.add_argument(
        "--seeds", type=arguments.SEEDS, metavar="N", help="run seeds 0..N-1 instead of each scenario's own"
    )
    parser.add_argument(
        "--case", action="append", default=[], metavar="ID", help="run only this case id (repeatable)"
    )
    parser.add_argument(
        "--timeout", type=arguments.timeout, default=DEFAULT_TIMEOUT, metavar="S",
        help=f"seconds a case may take (default {DEFAULT_TIMEOUT:g}; 0: no limit, run in this process)",
    )  # fmt: skip
    parser.add_argument(
        "-j", "--jobs", type=arguments.JOBS, default=None, metavar="N",
        help="worker processes, or with --client programs run at once (default 1; the built-in "
        "accumulators run in this process unless -j is given)",
    )  # fmt: skip
    parser.add_argument(
        "--no-case-cache", action="store_true",
        help="build every case instead of reading it from the built-case store "
        "(same as TOOLSTREAM_NO_CASE_CACHE=1)",
    )  # fmt: skip


def add_strict_option(parser: argparse.ArgumentParser) -> None:
    """`--strict`, shared by `check` and `compare`."""
    parser.add_argument(
        "--strict", action="store_true",
        help="warnings fail too: cosmetic differences (state label, finish reason, text) and policy cases",
    )  # fmt: skip


def selection_of(args: argparse.Namespace) -> Selection:
    if getattr(args, "no_case_cache", False):
        casecache.turn_off()  # in the environment, so worker processes agree
    if args.seeds is not None and args.seeds < 1:
        raise UsageError(f"--seeds: must be at least 1, not {args.seeds}")
    return Selection(
        cassettes=tuple(args.cassettes),
        scenarios=tuple(args.scenarios),
        scenarios_dir=args.scenarios_dir,
        dialects=tuple(args.dialect),
        seeds=args.seeds,
        cases=tuple(args.case),
    )


def timeout_of(args: argparse.Namespace) -> float | None:
    if args.timeout < 0:
        raise UsageError(f"--timeout: must be 0 or more seconds, not {args.timeout:g}")
    return args.timeout or None


def add_parser(sub: Any, name: str) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser(
        name,
        help="run an accumulator over every case (cassette x scenario x seed) and judge it",
        description=(
            "Run an accumulator over the selected cases and give each a verdict: pass, fail, warn, "
            "error, timeout or skipped. An unsafe or lost difference in a spec or quirk case fails; a "
            "withheld call (a final call left out by a client that signalled the bad ending) or a "
            "cosmetic difference, or any in a policy case, warns. Exit 0 when no case fails (warnings "
            "included with --strict), 1 when one does, 2 on a usage or input error, 3 on an error of "
            "toolstream's own."
        ),
    )
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument(
        "--accumulator", metavar="SPEC",
        help="reference, a built-in name (openai-sdk, ...), module.path:attr, cmd:COMMAND, cmd-bytes:COMMAND"
        " or client:COMMAND",
    )  # fmt: skip
    what.add_argument(
        "--client", metavar="CMD",
        help="a program run unchanged once per case against the replay server (its SDK's base URL pointing"
        " at the case), judged by the follow-up request it sends; -j N runs N at once (docs/serve.md)",
    )  # fmt: skip
    parser.add_argument(
        "--cold", action="store_true",
        help="with --client: start a Node program (node SCRIPT.mjs) or a Python one (python SCRIPT.py) as"
        " a new process on every case, not in a warm Node process or forked from a preloaded Python one"
        " (as TOOLSTREAM_WARM=0 does; docs/clients.md, docs/serve.md)",
    )  # fmt: skip
    add_selection_options(parser)
    add_strict_option(parser)
    parser.add_argument(
        "--json", type=arguments.output_file, metavar="FILE", help="write the JSON report here (atomically)"
    )
    parser.add_argument(
        "--html",
        type=arguments.output_file,
        metavar="FILE",
        help="write a self-contained HTML page of the matrix here",
    )
    parser.add_argument(
        "--max-failures",
        type=arguments.LIMIT,
        default=50,
        metavar="N",
        help="failures printed in full (default 50; 0: all)",
    )
    return parser


def run(args: argparse.Namespace) -> int:
    selection = selection_of(args)
    if args.client is not None:
        report = _run_client(args.client, selection, args)
    else:
        progress = ProgressBar(label="check")
        try:
            report = run_matrix(
                args.accumulator, selection, timeout=timeout_of(args), jobs=args.jobs, progress=progress
            )
        finally:
            progress.close()
    report.strict = args.strict
    if args.json:
        write_json(report_to_dict(report, selection), args.json)
    if args.html:
        write_html(args.html, reports=[report], selection=selection)
    print(render_check(report, selection=selection, max_failures=args.max_failures))
    if not report.results:
        print("no cases selected", file=sys.stderr)
    return 0 if report.ok else 1


def _run_client(command: str, selection: Selection, args: argparse.Namespace) -> Report:
    """`--client CMD`: the cases on one replay server, `-j` programs at once (threads: each program
    is its own process group, killed at its deadline), judged like `--accumulator client:CMD`."""
    from harness.accumulators.program import run_clients  # the server is loaded only when asked for

    if not command.strip():
        raise UsageError("--client: needs a command")
    if args.timeout <= 0:
        raise UsageError("--timeout: a client needs a timeout of more than 0 seconds")
    matrix = Matrix(selection)
    jobs = 1 if args.jobs is None else args.jobs  # None: -j not given (see `add_selection_options`)
    cases = list(matrix.all())
    warm = not args.cold
    return run_clients(cases, command, jobs=jobs, timeout=args.timeout, scenarios=matrix.by_name, warm=warm)
