"""One run of a program, watched the same way however it was started: `Run` (`poll`, `wait`,
`finish`), and the cold start, `start_cold`: a process of its own, in a session of its own, under
the `subreaper` wrapper on Linux, its stdout and stderr read as they come into `Captured`s (which
keep their first and last bytes, so a flood costs neither memory nor disk).

A warm start (`harness.processes.warm`) gives a `Run` too; the caller cannot tell them apart.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import threading
from collections.abc import Mapping, Sequence
from typing import IO, Protocol

from harness.processes import subreaper
from harness.processes.capture import Captured

__all__ = ["PipedRun", "Run", "start_cold"]

STOP_GRACE = 2.0  # seconds a wrapper gets to end its tree after SIGTERM
_READ_END = 5.0  # seconds to read what is left in the pipes once the program's tree has ended


class Run(Protocol):
    """A program running: `poll` and `wait` as `subprocess.Popen` has them; `finish()` ends it and
    everything it started, and reads the rest of its output."""

    def poll(self) -> int | None: ...

    def wait(self, timeout: float | None = None) -> int: ...

    def finish(self) -> None: ...

    @property
    def refused(self) -> str | None:
        """Once finished: what the program did that its warm start could not honour (the run must
        be made again cold); None for a cold run, or a warm one that was honoured."""
        ...


class PipedRun:
    """A `Popen` whose stdout and stderr are pipes, read by two threads into `out` and `err`;
    `wrapped`: it ends its own tree on SIGTERM (the subreaper wrapper, a zygote's run)."""

    def __init__(
        self, process: subprocess.Popen[bytes], out: Captured, err: Captured, *, wrapped: bool
    ) -> None:
        self.process = process
        self.wrapped = wrapped
        self._readers = [_drain(process.stdout, out), _drain(process.stderr, err)]

    refused: str | None = None

    def poll(self) -> int | None:
        return self.process.poll()

    def wait(self, timeout: float | None = None) -> int:
        return self.process.wait(timeout)

    def finish(self) -> None:
        subreaper.stop(self.process, wrapped=self.wrapped, grace=STOP_GRACE)
        subreaper.end_orphans()  # what it left running when it killed its own wrapper
        for reader in self._readers:
            reader.join(_READ_END)  # the tree has ended: its pipes are at their end
        for pipe in (self.process.stdout, self.process.stderr):
            with contextlib.suppress(OSError):
                if pipe is not None:
                    pipe.close()


def start_cold(
    command: str | Sequence[str], env: Mapping[str, str], out: Captured, err: Captured
) -> PipedRun:
    """Start `command` (a string runs through the shell) as a process of its own with `env`, stdin
    at its end, its output read into `out` and `err`."""
    wrapped = subreaper.CONTAINED
    argv: list[str] | str
    if wrapped:  # the wrapper runs the shell itself
        words = ["/bin/sh", "-c", command] if isinstance(command, str) else list(command)
        argv = subreaper.contained(words)
    else:
        argv = command if isinstance(command, str) else list(command)
    process = subprocess.Popen(
        argv,
        shell=not wrapped and isinstance(command, str),
        env=dict(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # its own process group: one kill ends all it started
    )
    return PipedRun(process, out, err, wrapped=wrapped)


def _drain(pipe: IO[bytes] | None, into: Captured) -> threading.Thread:
    """A thread reading `pipe` to its end into `into` (which keeps its first and last bytes)."""

    def read() -> None:
        assert pipe is not None
        with contextlib.suppress(OSError, ValueError):
            while data := os.read(pipe.fileno(), 1 << 16):
                into.add(data)

    thread = threading.Thread(target=read, name="toolstream-client-output", daemon=True)
    thread.start()
    return thread
