"""The `toolstream` command: a thin shell over the library, one module per subcommand.

Each command module has `add_parser(subparsers)` and `run(args) -> int`. Exit codes mean one
thing each (`harness.errors`): 0 nothing failed, 1 a case failed, 2 bad input or usage (a
`HarnessError`, printed as one line on stderr), 3 an error of toolstream itself: any other
exception, printed as one line that names it and where to report it, with the traceback only under
`toolstream --debug` or `TOOLSTREAM_DEBUG=1`. A crash never exits 1, so it is never read as a verdict.

`toolstream serve-accumulator SPEC`, the command every `cmd:` child runs, and `toolstream --version`
skip argparse (`direct`): their start-up is what a harness or a script waits for. Any other form
(an option, `--help`, a missing SPEC) goes through the parser, so help and usage errors are its own.
"""

from __future__ import annotations

import importlib
import io
import os
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, NoReturn

from harness.errors import (
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    ISSUES_URL,
    HarnessError,
)

if TYPE_CHECKING:
    import argparse

# Subcommand -> module in this package. One that cannot be imported is a broken install: it fails
# loudly rather than disappearing from the help.
COMMANDS = {
    "show": "show",
    "cassettes": "cassettes",
    "explain": "explain",
    "record": "record",
    "import": "importing",
    "scenarios": "scenarios",
    "mutate": "mutate",
    "explore": "explore",
    "check": "check",
    "compare": "compare",
    "report": "report",
    "serve-accumulator": "serve_accumulator",
    "serve": "serve",
    "report-card": "card",
    "repro": "repro",
    "bisect": "bisect",
}


EXIT_CODES = (
    "exit codes, the same in every command: 0 nothing failed; 1 a case failed (a verdict); 2 bad "
    "input or usage (one line naming the file and the field); 3 an internal error of toolstream "
    "(one line; the traceback with --debug or TOOLSTREAM_DEBUG=1); 130 interrupted, 143 terminated"
)


def build_parser(names: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser with the subcommands `names` (every one by default)."""
    from harness import __version__
    from harness.cli.parser import Parser

    parser = Parser(
        prog="toolstream",
        description="Record, mutate and replay streamed LLM tool calls; check accumulators against them.",
        epilog=EXIT_CODES,
    )
    parser.add_argument("--version", action="version", version=f"toolstream {__version__}")
    parser.add_argument(
        "--debug",
        action="store_true",
        help="on an internal error of toolstream (exit 3), print its traceback (also TOOLSTREAM_DEBUG=1)",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS if names is None else names:
        module = importlib.import_module(f"{__name__}.{COMMANDS[name]}")
        command = module.add_parser(sub, name)
        command.set_defaults(run=module.run)
    return parser


def wanted(argv: Sequence[str]) -> tuple[str, ...] | None:
    """The subcommands `argv` needs imported: its own, none for `--version`, all (None) for the
    help or a name we do not know (so the error lists every command).

    Importing one subcommand rather than all keeps `cmd:` and `serve-accumulator` children cheap.
    """
    for token in argv:
        if token == "--version":
            return ()
        if token in COMMANDS:
            return (token,)
        if not token.startswith("-") or token in ("-h", "--help"):
            return None
    return None


def direct(argv: Sequence[str]) -> Callable[[], int] | None:
    """The command `argv` runs without the parser, when it is `serve-accumulator SPEC` or
    `--version` exactly; None for anything else (the parser then reads it)."""
    if len(argv) == 2 and argv[0] == "serve-accumulator" and not argv[1].startswith("-"):
        from harness.cli.serve_accumulator import serve_spec

        spec = argv[1]
        return lambda: serve_spec(spec)
    if list(argv) == ["--version"]:
        return _print_version
    return None


def _print_version() -> NoReturn:
    """What argparse's `version` action does: the version on stdout, then exit 0."""
    from harness import __version__

    print(f"toolstream {__version__}")
    sys.exit(EXIT_OK)


def main(argv: Sequence[str] | None = None) -> int:
    for stream in (sys.stdout, sys.stderr):
        # Accumulators can report text no encoding holds (a lone surrogate, F2): print it escaped.
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")
    arguments = sys.argv[1:] if argv is None else list(argv)
    debug = debug_asked(arguments)
    command = direct(arguments)
    if command is not None:
        return _run(arguments[0], command, debug=debug)
    named = wanted(arguments)
    return _run(named[0] if named else None, lambda: _parse_and_run(arguments, named), debug=debug)


def debug_asked(argv: Sequence[str]) -> bool:
    """Whether an internal error shows its traceback: `toolstream --debug COMMAND ...` (before the
    command, a global option) or `TOOLSTREAM_DEBUG` set to anything but empty or 0."""
    if os.environ.get("TOOLSTREAM_DEBUG", "").strip() not in ("", "0"):
        return True
    for token in argv:
        if token == "--debug":
            return True
        if not token.startswith("-"):
            return False
    return False


def _parse_and_run(arguments: Sequence[str], named: tuple[str, ...] | None) -> int:
    from harness.cli.parser import ArgumentError

    parser = build_parser(named)
    try:
        args = parser.parse_args(arguments)
    except ArgumentError as exc:
        print(exc, file=sys.stderr)
        return exc.exit_code
    if not getattr(args, "run", None):
        parser.print_help()
        return EXIT_USAGE
    from harness.processes.subreaper import contain_signals  # SIGTERM/SIGINT end what it started

    return contain_signals(lambda: int(args.run(args)))()


def _run(name: str | None, command: Callable[[], int], *, debug: bool = False) -> int:
    """Run a subcommand. Our errors and a path the user gave that cannot be read print as one line
    (exit 2); any other exception is a bug of ours (exit 3), never a verdict."""
    prefix = f"toolstream {name}" if name else "toolstream"
    try:
        return int(command())
    except HarnessError as exc:
        print(f"{prefix}: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("toolstream: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return EXIT_OK
    except OSError as exc:
        if exc.filename is None:
            return _internal(prefix, exc, debug)
        # A path the user gave that cannot be read or written: their input, not our bug.
        print(f"{prefix}: {exc.filename}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as exc:
        return _internal(prefix, exc, debug)


def _internal(prefix: str, exc: Exception, debug: bool) -> int:
    """An exception of ours: one line naming it, where it was raised and where to report it (the
    traceback first when `debug`), as pytest does for an INTERNALERROR. Exit 3."""
    import traceback  # only on this path: kept out of a `serve-accumulator` child's start-up

    from harness.text.terminal import clip, printable

    if debug:
        traceback.print_exception(exc, file=sys.stderr)
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [frame for frame in frames if "harness" in _parts(frame.filename)] or frames
    where = f" at {_short(ours[-1].filename)}:{ours[-1].lineno}" if ours else ""
    text = printable(clip(" ".join(str(exc).split()), 300))  # its text may come from any input
    named = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    hint = "" if debug else "; `toolstream --debug ...` or TOOLSTREAM_DEBUG=1 prints the traceback"
    print(
        f"{prefix}: internal error of toolstream (a bug of ours, not a verdict on what was checked): "
        f"{named}{where}; please report it at {ISSUES_URL}{hint}",
        file=sys.stderr,
    )
    return EXIT_INTERNAL


def _parts(filename: str) -> list[str]:
    return filename.replace(os.sep, "/").split("/")


def _short(filename: str) -> str:
    """A source path from the (innermost) `harness` folder on, else as it is."""
    parts = _parts(filename)
    if "harness" not in parts:
        return filename
    return "/".join(parts[len(parts) - 1 - parts[::-1].index("harness") :])


if __name__ == "__main__":
    sys.exit(main())
