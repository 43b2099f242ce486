"""`toolstream serve-accumulator SPEC`: any accumulator as a stdio-protocol process.

    toolstream check --accumulator 'cmd:/other/venv/bin/toolstream serve-accumulator langchain-core'

runs the langchain-core of another environment side by side with this one's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harness.accumulators import builtin_names
from harness.accumulators.stdio_serve import serve

if TYPE_CHECKING:
    import argparse  # the parser is built only for `--help` and usage errors (`harness.cli.direct`)


def add_parser(sub: Any, name: str) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser(
        name,
        help="serve an accumulator over the stdio protocol (JSON Lines on stdin/stdout)",
        description=(
            "Read cases on stdin and answer each with its outcome on stdout (the stdio protocol v2), "
            "until stdin closes. SPEC: "
            + ", ".join(builtin_names())
            + ", module.path:attr (an event-level factory called with the dialect, or a @client_level"
            " function), cmd:COMMAND or cmd-bytes:COMMAND."
        ),
    )
    parser.add_argument("spec", metavar="SPEC", help="the accumulator to serve")
    return parser


def run(args: argparse.Namespace) -> int:
    return serve_spec(args.spec)


def serve_spec(spec: str) -> int:
    """Serve `spec` until stdin closes; what `toolstream serve-accumulator SPEC` runs, with or
    without the parser (`harness.cli.direct`)."""
    return serve(spec)
