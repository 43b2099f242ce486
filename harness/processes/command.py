"""A client command taken apart: `[VAR=value ...] [exec] PROGRAM ARG ...`, the one shape a warm
start takes (Python's and Node's read the same words, then ask of PROGRAM what they need).

A command given as a string is split as the shell would split it (`shlex`), but only when the
shell would do nothing more: any expansion, redirection, pipe, list or glob character (even
quoted) leaves the command to the shell, and so cold. A command given as a list is the argv
itself: no assignments, no `exec`.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Command", "parse"]

_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
# Characters that make a command more than words for the shell to split.
_SHELL_SYNTAX = frozenset("$`\\*?[]{}~#!;&|<>()\n")


@dataclass(frozen=True, slots=True)
class Command:
    """What a command runs: the variables it sets for the program, and the program's argv."""

    assignments: tuple[tuple[str, str], ...]
    argv: tuple[str, ...]  # at least one word: the program, as written

    @property
    def program(self) -> str:
        return self.argv[0]

    @property
    def args(self) -> tuple[str, ...]:
        return self.argv[1:]

    @property
    def environment(self) -> dict[str, str]:
        """The assignments, as the program's environment gets them (a later one wins)."""
        return dict(self.assignments)


def parse(command: str | Sequence[str]) -> Command | None:
    """`command` taken apart, or None when it is more than words for the shell (then it is the
    shell's, and starts cold) or empty."""
    assignments: list[tuple[str, str]] = []
    if isinstance(command, str):
        if _SHELL_SYNTAX & set(command):
            return None
        try:
            words = shlex.split(command)
        except ValueError:
            return None
        while words and _ASSIGNMENT.match(words[0]):
            name, _, value = words.pop(0).partition("=")
            assignments.append((name, value))
        if words[:1] == ["exec"]:
            words = words[1:]
    else:
        words = list(command)
    if not words:
        return None
    return Command(tuple(assignments), tuple(words))
