"""The `toolstream` command: a thin shell over the library, one module per subcommand.

Each command module has `add_parser(subparsers)` and `run(args) -> int`. Errors of ours
(`HarnessError`) print as one line on stderr and exit with their `exit_code` (2 for input the user
can fix); exit 1 is reserved for "checks failed".

`toolstream serve-accumulator SPEC`, the command every `cmd:` child runs, and `toolstream --version`
skip argparse (`direct`): their start-up is what a harness or a script waits for. Any other form
(an option, `--help`, a missing SPEC) goes through the parser, so help and usage errors are its own.
"""

from __future__ import annotations

import importlib
import io
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, NoReturn

from harness.errors import EXIT_OK, EXIT_USAGE, HarnessError

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
    "serve-accumulator": "serve_accumulator",
    "serve": "serve",
    "report-card": "report_card",
    "repro": "repro",
}


def build_parser(names: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser with the subcommands `names` (every one by default)."""
    from harness import __version__
    from harness.cli.parser import Parser

    parser = Parser(
        prog="toolstream",
        description="Record, mutate and replay streamed LLM tool calls; check accumulators against them.",
    )
    parser.add_argument("--version", action="version", version=f"toolstream {__version__}")
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
    command = direct(arguments)
    if command is not None:
        return _run(arguments[0], command)
    from harness.cli.parser import ArgumentError

    parser = build_parser(wanted(arguments))
    try:
        args = parser.parse_args(arguments)
    except ArgumentError as exc:
        print(exc, file=sys.stderr)
        return exc.exit_code
    if not getattr(args, "run", None):
        parser.print_help()
        return EXIT_USAGE
    from harness.check.accumulators.subreaper import contain_signals  # SIGTERM/SIGINT end what it started

    return _run(args.command, contain_signals(lambda: int(args.run(args))))


def _run(name: str, command: Callable[[], int]) -> int:
    """Run a subcommand; our errors and a path the user gave that cannot be read print as one line."""
    try:
        return int(command())
    except HarnessError as exc:
        print(f"toolstream {name}: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("toolstream: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return EXIT_OK
    except OSError as exc:
        if exc.filename is None:
            raise
        # A path the user gave that cannot be read or written: their input, not our bug.
        print(f"toolstream {name}: {exc.filename}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
