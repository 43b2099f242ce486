"""`toolstream explore`: search random mutation pipelines for a case an accumulator gets wrong,
shrink it, and write it as a cassette plus a scenario YAML."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from harness.check.explore import explore
from harness.cli import arguments
from harness.errors import EXIT_FAILED, EXIT_OK
from harness.report.results import TERMINAL_VALUE
from harness.report.terminal import clip, printable


def add_parser(sub: Any, name: str) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser(
        name,
        help="search mutated streams for one an accumulator gets wrong, and shrink it",
        description="Draw random mutation pipelines over cassettes against an accumulator (any spec "
        "check takes); shrink the first failure to the fewest events that fail the same way.",
    )
    parser.add_argument(
        "--accumulator", required=True, metavar="SPEC",
        help="reference, a built-in name (openai-sdk, ...), module.path:attr, cmd:COMMAND, cmd-bytes:COMMAND",
    )  # fmt: skip
    parser.add_argument(
        "--cassettes", nargs="*", metavar="PATH", help="cassette files or folders (default: bundled)"
    )
    parser.add_argument("--dialect", action="append", help="only cassettes of this dialect (repeatable)")
    parser.add_argument(
        "--max-examples", type=arguments.EXAMPLES, default=300, help="how many cases to try (default 300)"
    )
    parser.add_argument("--seed", type=arguments.SEED, default=0, help="search seed (default 0)")
    parser.add_argument(
        "--out",
        type=arguments.output_folder,
        default=Path("explore-findings"),
        help="folder to write a finding into, its cassette and scenario (default: explore-findings)",
    )
    return parser


def run(args: argparse.Namespace) -> int:
    finding = explore(
        args.accumulator,
        args.cassettes or None,
        dialect=args.dialect,
        max_examples=args.max_examples,
        seed=args.seed,
        out=args.out,
    )
    if finding is None:
        print(f"no failure found in {args.max_examples} examples")
        return EXIT_OK
    steps = " | ".join(step.describe() for step in finding.steps)
    source = printable(str(finding.source))  # a user's cassette path: its name is theirs
    print(f"FAILED on {source} with {steps} (seed {finding.seed}): {printable(finding.signature)}")
    print(f"shrunk from {finding.events_before} to {finding.events} events ({finding.reason}):")
    for line in finding.problems:
        print(f"  {printable(clip(line, TERMINAL_VALUE))}")
    for path in finding.written:
        print(f"wrote {path}")
    return EXIT_FAILED
