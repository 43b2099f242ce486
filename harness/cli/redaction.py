"""The `--redact` and `--redact-env` options `toolstream record` and `toolstream import` share."""

from __future__ import annotations

import argparse
import os

from harness.errors import UsageError
from harness.transports.redaction import Redaction


def add_options(parser: argparse.ArgumentParser) -> None:
    """Add `--redact NAME` and `--redact-env VAR` (each repeatable) to `parser`."""
    parser.add_argument(
        "--redact",
        action="append",
        default=[],
        metavar="NAME",
        help="also redact this header, query parameter or body field (any depth), besides the "
        "defaults of docs/redaction.md; its value's echoes are removed too (repeatable)",
    )
    parser.add_argument(
        "--redact-env",
        action="append",
        default=[],
        metavar="VAR",
        help="remove the value of environment variable VAR wherever it appears, however encoded "
        "(repeatable)",
    )


def from_args(args: argparse.Namespace) -> Redaction:
    """The default redaction plus the names and environment values the options name."""
    values = []
    for var in args.redact_env:
        value = os.environ.get(var)
        if not value:
            raise UsageError(f"--redact-env {var}: no such environment variable, or it is empty")
        values.append(value)
    names = [name for name in args.redact if name.strip()]
    if len(names) != len(args.redact):
        raise UsageError("--redact: needs a header, parameter or field name, not an empty string")
    return Redaction.DEFAULT.plus(names=names, values=values)
