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

The same module is the harness's side of containment (Linux; elsewhere the process group is what
gets killed): `contained(argv)` is the command line that runs `argv` under this wrapper,
`stop(process)` ends a wrapper and its tree, `end_tree(pid)` freezes then kills a whole tree from
outside, `adopting()` makes the harness a subreaper while it runs programs (so a program that kills
its wrapper leaves nothing running: `end_orphans()`), and `contain_signals(run)` makes SIGTERM and
SIGINT on a harness command an orderly exit that first ends every process the command started.
"""

from __future__ import annotations

import _thread
import contextlib
import os
import signal
import sys
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import subprocess
    from collections.abc import Callable, Iterator

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
PR_GET_CHILD_SUBREAPER = 37
# The wrapper needs Linux's prctl and /proc; elsewhere the process group is what is killed.
CONTAINED = sys.platform == "linux" and os.path.isdir("/proc/self")
# Seconds a wrapper gets to end its tree after SIGTERM before it and its group get SIGKILL.
TREE_END = 10.0
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


def _end_descendants(budget: float = 5.0) -> None:
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
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
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
    _end_descendants()
    if status is None:
        return 128 + signal.SIGKILL
    return status if status >= 0 else 128 - status


def _prctl(option: int, value: int) -> bool:
    """`prctl(option, value)`; False where there is none (not Linux) or it refused."""
    try:
        import ctypes  # only here: the wrapper's own start-up pays for it once, a caller maybe never

        return int(ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


# ---------------------------------------------------------------------------------------------
# The harness's side


_adopting = 0  # blocks of `adopting()` running (threads of one process may run programs at once)
_adopting_set = False  # whether `adopting()` made this process a subreaper (else it was one)
_adopting_lock = _thread.allocate_lock()


def _is_subreaper() -> bool:
    try:
        import ctypes

        flag = ctypes.c_int(0)
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(PR_GET_CHILD_SUBREAPER, ctypes.byref(flag), 0, 0, 0)) == 0 and bool(flag.value)
    except (OSError, AttributeError):
        return False


@contextlib.contextmanager
def adopting() -> Iterator[None]:
    """While the block runs, this process is a child subreaper (Linux): what a program's tree
    leaves behind when it kills its own wrapper comes back here instead of to init, and
    `end_orphans()` (each run's end, and the block's) ends it."""
    global _adopting, _adopting_set
    if not CONTAINED:
        yield
        return
    with _adopting_lock:
        if _adopting == 0 and not _is_subreaper():
            _adopting_set = _prctl(PR_SET_CHILD_SUBREAPER, 1)
        _adopting += 1
    try:
        yield
    finally:
        end_orphans()
        with _adopting_lock:
            _adopting -= 1
            if _adopting == 0 and _adopting_set:
                _prctl(PR_SET_CHILD_SUBREAPER, 0)
                _adopting_set = False


def _children() -> list[tuple[int, int, str]]:
    """This process's children: (pid, session, state), from `/proc/*/stat`."""
    me = os.getpid()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                data = stat.read()
        except OSError:
            continue
        fields = data[data.rfind(b")") + 2 :].split()
        if int(fields[1]) == me:
            found.append((int(entry), int(fields[3]), fields[0].decode()))
    return found


def _is_wrapper(pid: int) -> bool:
    """Whether `pid` runs this wrapper (a process the harness started, never an orphan)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            words = cmdline.read().split(b"\0")
    except OSError:
        return False
    return os.path.abspath(__file__).encode() in words[:4]


def end_orphans() -> None:
    """End the orphans this process adopted as a subreaper (inside `adopting`), and reap them: its
    children in a session other than its own that are not wrappers it started. (Whatever else the
    harness starts stays in its session, or is a wrapper; a program's processes are in the
    wrapper's session or one they made.)"""
    if not CONTAINED or not _adopting:
        return
    ours = os.getsid(0)
    orphans = [pid for pid, session, _ in _children() if session != ours and not _is_wrapper(pid)]
    for pid in orphans:
        end_tree(pid)
    until = time.monotonic() + 5.0
    for pid in orphans:
        while True:
            with contextlib.suppress(ChildProcessError):
                if os.waitpid(pid, os.WNOHANG)[0] == 0 and time.monotonic() < until:
                    time.sleep(0.01)
                    continue
            break


def become_subreaper() -> bool:
    """Make this process a child subreaper: what its descendants orphan (a double fork, a parent
    killed first) is re-parented to it, so `end_tree(os.getpid())` still finds it."""
    return CONTAINED and _prctl(PR_SET_CHILD_SUBREAPER, 1)


def die_with_parent() -> None:
    """Have the kernel SIGKILL this process when its parent ends (a pool worker whose forkserver
    exits with the harness: no hung case keeps it alive)."""
    if CONTAINED:
        _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def contained(argv: list[str]) -> list[str]:
    """The command line that runs `argv` under this wrapper (Linux), else `argv` itself."""
    if not CONTAINED:
        return list(argv)
    return [sys.executable, "-I", "-S", os.path.abspath(__file__), *argv]


def end_tree(root: int, *, include_root: bool = True) -> None:
    """End `root` and every process below it, even one that left its session: each is stopped
    first (a stopped process forks no more, so the tree cannot grow while it is listed), top
    down until a listing finds nothing new, then all are killed. `include_root` False spares
    `root` (this process ending its own descendants)."""
    if not CONTAINED:
        return
    seen: list[int] = []
    if include_root:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(root, signal.SIGSTOP)
        seen.append(root)
    for _ in range(100):  # a bound for a tree that forks faster than it is stopped
        new = [pid for pid in descendants(root) if pid not in seen]
        if not new:
            break
        for pid in new:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGSTOP)
        seen.extend(new)
    for pid in seen:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def stop(process: subprocess.Popen[Any], *, wrapped: bool, grace: float = TREE_END) -> None:
    """End a process started with `start_new_session` and everything it started. A wrapper
    (`wrapped`: run as `contained(argv)`) gets SIGTERM and ends its own tree, having reaped it;
    what is left after `grace` seconds, or what is not wrapped, is frozen and killed from here
    (`end_tree`), then its group. Waits for the process itself."""
    import subprocess

    if process.poll() is None and wrapped:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            process.send_signal(signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=grace)
    if process.poll() is None:
        end_tree(process.pid)
    if os.name == "posix" and (process.poll() is None or not wrapped):
        # Its group (its session's first one): what it left behind where there is no wrapper.
        with contextlib.suppress(OSError):
            os.killpg(process.pid, signal.SIGKILL)
    if process.poll() is None:
        with contextlib.suppress(OSError):
            process.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=5)


class Terminated(KeyboardInterrupt):
    """SIGTERM, turned into an exception so that `finally` blocks run (its default action ends
    Python at once, cleanup skipped). A KeyboardInterrupt, so code that stops on Ctrl-C stops."""


_stopping = False


def stopping() -> bool:
    """Whether a signal is ending this process (`contain_signals`): start no new process."""
    return _stopping


def end_descendants() -> None:
    """End every process this one started and what those started (those that stayed below it:
    the wrappers and pool workers are subreapers, so nothing of theirs leaves the tree)."""
    end_tree(os.getpid(), include_root=False)


def _on_signal(number: int, frame: object) -> None:
    global _stopping
    _stopping = True
    end_descendants()  # first: threads waiting on their programs return now, not at a timeout
    if number == signal.SIGTERM:
        raise Terminated
    raise KeyboardInterrupt


def contain_signals(run: Callable[[], int]) -> Callable[[], int]:
    """`run` with SIGTERM and SIGINT made an orderly exit (main thread only): every process
    started below this one is ended at once, then the command unwinds (its `finally` blocks
    close servers and pools) and exits 143 (SIGTERM) or 130 (SIGINT), the status of a shell."""

    def contained_run() -> int:
        import threading

        global _stopping
        if threading.current_thread() is not threading.main_thread():
            return run()
        _stopping = False  # a command run again in this process (a test) starts afresh
        previous = {sig: signal.signal(sig, _on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
        try:
            return run()
        except Terminated:
            print("toolstream: terminated", file=sys.stderr)
            return 128 + signal.SIGTERM
        finally:
            if _stopping:
                end_descendants()  # whatever the unwinding started or left
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    return contained_run


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
