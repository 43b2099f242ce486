"""`toolstream compare`: two accumulators on every selected case; where their outcomes differ."""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

from harness.cli import arguments
from harness.cli.check import add_selection_options, add_strict_option, selection_of, timeout_of
from harness.oracle.verdict import Verdict
from harness.report.html import write_html
from harness.report.results import (
    comparison_to_dict,
    counts,
    render_comparison,
    shown_differences,
    write_json,
)
from harness.search.compare import compare_matrix, write_reproductions
from harness.text.terminal import ProgressBar


def add_parser(sub: Any, name: str) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser(
        name,
        help="run two accumulators over every case and report where their outcomes differ",
        description=(
            "Run accumulators A and B over the selected cases and report every case where their "
            "outcomes differ, with both outcomes, which one meets the expectation, and a shrunk "
            "reproduction written as a cassette. Exit 0 when they agree everywhere or differ only "
            "where neither fails its case (warnings: cosmetic differences, policy cases), 1 when they "
            "differ otherwise (any difference with --strict)."
        ),
    )
    parser.add_argument("spec_a", metavar="SPEC_A", help="the first accumulator (same forms as check)")
    parser.add_argument("spec_b", metavar="SPEC_B", help="the second accumulator")
    add_selection_options(parser)
    add_strict_option(parser)
    parser.add_argument(
        "--out", type=arguments.output_folder, default=None, metavar="DIR",
        help="where to write reproductions (default: a new temporary folder, printed)",
    )  # fmt: skip
    parser.add_argument(
        "--max-differences", type=arguments.LIMIT, default=50, metavar="N",
        help="differences printed and written as reproductions (default 50; 0: all)",
    )  # fmt: skip
    parser.add_argument(
        "--json",
        type=arguments.output_file,
        metavar="FILE",
        help="write the differences as JSON here (atomically)",
    )
    parser.add_argument(
        "--html",
        type=arguments.output_file,
        metavar="FILE",
        help="write a self-contained HTML page of A vs B here",
    )
    return parser


def run(args: argparse.Namespace) -> int:
    selection = selection_of(args)
    progress = ProgressBar(label="compare")
    try:
        comparison = compare_matrix(
            args.spec_a, args.spec_b, selection, timeout=timeout_of(args), jobs=args.jobs, progress=progress
        )
    finally:
        progress.close()
    comparison.a.strict = comparison.b.strict = args.strict
    # Without --out nothing lands in the working directory: a temporary folder, said at the end.
    out = args.out
    if out is None and comparison.differences:
        out = Path(tempfile.mkdtemp(prefix="toolstream-compare-"))
    # The differences shown are the ones reproduced: every kind's first before any kind's second.
    shown = shown_differences(comparison.differences, args.max_differences, args.strict)
    reproductions = write_reproductions(comparison, selection, out, chosen=shown) if out is not None else {}
    if args.json:
        write_json(comparison_to_dict(comparison, reproductions, strict=args.strict), args.json)
    if args.html:
        write_html(args.html, comparison=comparison, selection=selection)
    print(
        render_comparison(comparison, reproductions, max_differences=args.max_differences, strict=args.strict)
    )
    skipped = sum(
        Verdict.SKIPPED in (a.verdict, b.verdict)
        for a, b in zip(comparison.a.results, comparison.b.results, strict=True)
    )
    if skipped:  # not compared: a dialect one side declares it does not read, a stream it cannot take
        print(f"{skipped} of the cases skipped by A or B (not compared)")
    if reproductions and args.out is None:
        print(f"reproductions written to {out} (a temporary folder; --out DIR writes them there)")
    return 1 if any(counts(d, args.strict) for d in comparison.differences) else 0
