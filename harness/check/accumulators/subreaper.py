"""Run a command so that it and everything it starts end together (Linux).

    python -I -S subreaper.py COMMAND [ARG...]

A `cmd:` accumulator runs under this small wrapper. It makes itself a child subreaper
(`prctl(PR_SET_CHILD_SUBREAPER)`), so a descendant that leaves its process group or session
(`setsid`, a double fork) is still re-parented to it, never to init. It ends the whole tree of
its descendants (found through `/proc`) when any of these happens:
- the command exits (what it left running goes with it);
- it gets SIGTERM, SIGINT or SIGHUP (how the harness kills a case's process);
- its parent, the harness process, is gone (killed with SIGKILL: nobody could tell it).
Its exit status is the command's (128 + N for a signal N, as a shell reports it).

It imports nothing of the harness (only the standard library), so it starts in milliseconds.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import time

PR_SET_CHILD_SUBREAPER = 36
# How often the parent is checked: a harness killed with SIGKILL is noticed within this.
_PARENT_CHECK = 0.2
_STOP_SIGNALS = {signal.SIGTERM, signal.SIGINT, signal.SIGHUP}


def descendants(root: int) -> list[int]:
    """Every process below `root`, from `/proc/*/stat` (parents before their children)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                data = stat.read()
        except OSError:
            continue
        # The command name may hold spaces and parentheses: fields resume after the last ')'.
        fields = data[data.rfind(b")") + 2 :].split()
        children.setdefault(int(fields[1]), []).append(int(entry))
    found: list[int] = []
    stack = [root]
    while stack:
        for child in children.get(stack.pop(), ()):
            found.append(child)
            stack.append(child)
    return found


def _reap() -> None:
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass


def end_tree(budget: float = 5.0) -> None:
    """SIGKILL every descendant until none is left (a killed parent's children come back to us
    as the subreaper, and are caught on the next round)."""
    until = time.monotonic() + budget
    while time.monotonic() < until:
        found = descendants(os.getpid())
        if not found:
            return
        for pid in found:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        _reap()
        time.sleep(0.01)


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: subreaper.py COMMAND [ARG...]", file=sys.stderr)
        return 2
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    parent = os.getppid()
    watched = _STOP_SIGNALS | {signal.SIGCHLD}
    signal.pthread_sigmask(signal.SIG_BLOCK, watched)
    try:
        command = os.posix_spawnp(argv[0], argv, dict(os.environ), setsigmask=())
    except OSError as exc:
        print(f"cannot start {argv[0]}: {exc.strerror or exc}", file=sys.stderr)
        return 127
    # The command has the pipes; without our copies, its exit is the harness's end of file.
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    status: int | None = None
    while status is None:
        received = signal.sigtimedwait(watched, _PARENT_CHECK)
        if received is not None and received.si_signo in _STOP_SIGNALS:
            break
        if os.getppid() != parent:
            break
        with contextlib.suppress(ChildProcessError):
            while True:
                pid, raw = os.waitpid(-1, os.WNOHANG)
                if not pid:
                    break
                if pid == command:
                    status = os.waitstatus_to_exitcode(raw)
    end_tree()
    if status is None:
        return 128 + signal.SIGKILL
    return status if status >= 0 else 128 - status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
