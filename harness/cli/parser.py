"""The `toolstream` argument parser: argparse, with a bad argument reported as one line."""

from __future__ import annotations

import argparse
from typing import NoReturn

from harness.errors import UsageError, did_you_mean

__all__ = ["ArgumentError", "Parser"]


class ArgumentError(UsageError):
    """A bad option value or a missing argument, found by argparse."""


class Parser(argparse.ArgumentParser):
    """argparse that reports a bad argument as one line (`prog: what; see prog --help`), exit 2."""

    def error(self, message: str) -> NoReturn:
        hint = ""
        if message.startswith("unrecognized arguments: "):
            given = [a.split("=")[0] for a in message.split(": ", 1)[1].split() if a.startswith("--")]
            hint = next((h for h in (did_you_mean(a, self._every_option()) for a in given) if h), "")
        raise ArgumentError(f"{self.prog}: {message}{hint} (see {self.prog} --help)")

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
