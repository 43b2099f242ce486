"""Warm starts: one interface, two implementations. A client program run once per case pays its
runtime's start (and, for Python, its imports) once per worker instead of once per case.

    warm = warm_start(command, environment, case_keys)   # None: this command starts cold
    run = warm.start(env, out, err, deadline)             # a `Run`, or None: start this one cold
    ...                                                   # run.refused: run it again cold, and
    warm.refuse(why)                                      # every later one
    warm.close()                                          # the owner ends what it kept

- `python_warm.PythonWarmStart`: `[VAR=v] [exec] python SCRIPT.py ARGS` (or `-m MODULE`) forked
  per case from a zygote that has done the program's imports (`zygote.py`; Linux).
- `node_warm.NodeWarmStart`: `[VAR=v] [exec] node SCRIPT.mjs ARGS` run per case in a worker
  thread of a kept Node process.

Whoever runs the programs owns the warm start (creates it, passes it down, closes it); nothing is
kept beyond it. A warm start never changes a verdict: what it cannot honour (a program's own
module named like one the zygote imported, a Node program calling `process.chdir`, a run that
used the zygote's placeholder environment) is found out, and the program runs cold from then on,
said once through `say`. `TOOLSTREAM_WARM=0` in the environment (or `check --client --cold`) starts every
run cold.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

from harness.processes import subreaper
from harness.processes.capture import Captured
from harness.processes.node_warm import NodeWarmStart, node_program
from harness.processes.python_warm import PythonWarmStart, python_program
from harness.processes.run import Run

__all__ = ["SWITCH", "WarmStart", "enabled", "runs_warm", "warm_start"]

SWITCH = "TOOLSTREAM_WARM"  # "0": every program starts cold


class WarmStart(Protocol):
    """Warm starts of one program (see the module docstring)."""

    def start(self, env: Mapping[str, str], out: Captured, err: Captured, deadline: float) -> Run | None:
        """One run with `env`, its output read into `out` and `err`, waiting no later than
        `deadline` (monotonic); None: start this run cold."""
        ...

    def refuse(self, why: str) -> None:
        """The program did something a warm start cannot honour (`why`, seen in a run's `refused`
        or by the caller): start it cold from now on, and say so once."""
        ...

    def close(self) -> None:
        """End what the warm starts kept (zygotes, Node processes)."""
        ...


def enabled(env: Mapping[str, str] | None = None) -> bool:
    """Whether warm starts are on (`TOOLSTREAM_WARM` is not "0"), in `env` (default: os.environ)."""
    return (os.environ if env is None else env).get(SWITCH, "1").strip() != "0"


def _python_can() -> bool:
    return sys.platform == "linux" and subreaper.CONTAINED


def runs_warm(command: str | Sequence[str], *, on: bool = True) -> bool:
    """Whether `command`'s runs start warm (a Python or Node program warm starts take, turned on):
    what a verdict's cache key says besides the program's own files."""
    if not on or not enabled():
        return False
    return (_python_can() and python_program(command) is not None) or node_program(command) is not None


def warm_start(
    command: str | Sequence[str],
    environment: Mapping[str, str],
    case_keys: Sequence[str],
    *,
    on: bool = True,
    say: Callable[[str], None] | None = None,
) -> WarmStart | None:
    """The warm starts of `command`, or None when it starts cold (neither kind of program, turned
    off, or a Python program off Linux). `environment`: a run's, with a placeholder case;
    `case_keys`: the variables that differ between two cases, which no module a zygote preloads
    may read at import. `say`: told once when a program turns out to need cold starts."""
    if not on or not enabled():
        return None
    python = python_program(command) if _python_can() else None
    if python is not None:
        env = {**os.environ, **environment, **python.assignments}
        return PythonWarmStart(python, env, case_keys, say)
    node = node_program(command)
    return NodeWarmStart(node, say) if node is not None else None
