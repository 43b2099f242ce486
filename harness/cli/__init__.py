"""The `toolstream` command: a thin shell over the library, one module per subcommand.

Each command module has `add_parser(subparsers)` and `run(args) -> int`. Errors of ours
(`HarnessError`) print as one line on stderr and exit with their `exit_code` (2 for input the user
can fix); exit 1 is reserved for "checks failed".
"""

from __future__ import annotations

import argparse
import importlib
import io
import sys
from collections.abc import Sequence
from typing import NoReturn

from harness.errors import EXIT_OK, EXIT_USAGE, HarnessError, UsageError, did_you_mean

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


class _ArgumentError(UsageError):
    """A bad option value or a missing argument, found by argparse."""


class _Parser(argparse.ArgumentParser):
    """argparse that reports a bad argument as one line (`prog: what; see prog --help`), exit 2."""

    def error(self, message: str) -> NoReturn:
        hint = ""
        if message.startswith("unrecognized arguments: "):
            given = [a.split("=")[0] for a in message.split(": ", 1)[1].split() if a.startswith("--")]
            hint = next((h for h in (did_you_mean(a, self._every_option()) for a in given) if h), "")
        raise _ArgumentError(f"{self.prog}: {message}{hint} (see {self.prog} --help)")

    def _every_option(self) -> list[str]:
        """Option strings of this parser and of its subcommands (argparse reports an unknown
        option on the top parser)."""
        found: list[str] = []
        parsers: list[argparse.ArgumentParser] = [self]
        while parsers:
            parser = parsers.pop()
            for action in parser._actions:
                found += [o for o in action.option_strings if o.startswith("--")]
                if isinstance(action, argparse._SubParsersAction):
                    parsers += list(action.choices.values())
        return found


def build_parser(names: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser with the subcommands `names` (every one by default)."""
    from harness import __version__

    parser = _Parser(
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


def main(argv: Sequence[str] | None = None) -> int:
    for stream in (sys.stdout, sys.stderr):
        # Accumulators can report text no encoding holds (a lone surrogate, F2): print it escaped.
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")
    arguments = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(wanted(arguments))
    try:
        args = parser.parse_args(arguments)
    except _ArgumentError as exc:
        print(exc, file=sys.stderr)
        return exc.exit_code
    if not getattr(args, "run", None):
        parser.print_help()
        return EXIT_USAGE
    try:
        return int(args.run(args))
    except HarnessError as exc:
        print(f"toolstream {args.command}: {exc}", file=sys.stderr)
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
        print(f"toolstream {args.command}: {exc.filename}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
