"""The value types of every `toolstream` option: finite seconds, bounded counts, output paths.

argparse calls each with the option's text; a value out of bounds raises `ArgumentTypeError`,
which the command prints as one line naming the option, and exits 2. The bounds are where a
value stops being a wish and becomes a typo: nothing useful runs for more than a day, or on more
seeds than `MAX_SEEDS`.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from harness.mutate.scenario import MAX_SEED, MAX_SEEDS

__all__ = [
    "EXAMPLES",
    "JOBS",
    "LIMIT",
    "MAX_SECONDS",
    "MIN_TIMEOUT",
    "PORT",
    "SEED",
    "SEEDS",
    "count",
    "output_file",
    "output_folder",
    "seconds",
    "terminal_report",
    "timeout",
]

MAX_SECONDS = 86_400.0
# Below this every case times out before a worker can answer: the run only restarts workers.
MIN_TIMEOUT = 0.01


def seconds(text: str) -> float:
    """A finite number of seconds, more than 0 and at most a day."""
    value = _number(text)
    if not 0 < value <= MAX_SECONDS:
        raise argparse.ArgumentTypeError(
            f"must be more than 0 and at most {MAX_SECONDS:g} seconds, not {text}"
        )
    return value


def timeout(text: str) -> float:
    """A per-case timeout: 0 (no limit) or between `MIN_TIMEOUT` and a day."""
    value = _number(text)
    if value != 0 and not MIN_TIMEOUT <= value <= MAX_SECONDS:
        raise argparse.ArgumentTypeError(
            f"must be 0 (no limit) or between {MIN_TIMEOUT:g} and {MAX_SECONDS:g} seconds, not {text}"
        )
    return value


def count(minimum: int, maximum: int) -> Callable[[str], int]:
    """A whole number from `minimum` to `maximum`."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a whole number, not {text!r}") from None
        if not minimum <= value <= maximum:
            raise argparse.ArgumentTypeError(f"must be from {minimum} to {maximum}, not {text}")
        return value

    parse.__name__ = f"count from {minimum} to {maximum}"
    return parse


SEEDS = count(1, MAX_SEEDS)
SEED = count(0, MAX_SEED)
JOBS = count(1, 1024)
EXAMPLES = count(1, 10_000_000)
LIMIT = count(0, 10_000_000)  # how many to print or write; 0: all
PORT = count(0, 65_535)


def output_file(text: str) -> Path:
    """A file to write: not empty and not an existing folder (whether it can be written is found
    out by writing it, where an error names the path)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("needs a file path, not an empty string")
    path = Path(text)
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a folder; give a file path")
    return path


def terminal_report(args: argparse.Namespace) -> TextIO:
    """Where a command prints what it found: stderr when it writes a report to stdout (`--json -`,
    `--html -`), so that report stays JSON or HTML; else stdout."""
    on_stdout = any(str(getattr(args, name, None)) == "-" for name in ("json", "html"))
    return sys.stderr if on_stdout else sys.stdout


def output_folder(text: str) -> Path:
    """A folder to write into: not empty and not an existing file."""
    if not text.strip():
        raise argparse.ArgumentTypeError("needs a folder path, not an empty string")
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a file; give a folder")
    return path


def _number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number of seconds, not {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number of seconds, not {text}")
    return value
