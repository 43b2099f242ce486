"""`harness.processes.subreaper`: the harness is a subreaper while it runs programs, so a program
that kills its own wrapper leaves nothing running."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from harness.accumulators.program import run_clients
from harness.matrix.selection import Selection
from harness.matrix.selection import cases as selected_cases
from harness.processes import subreaper

pytestmark = pytest.mark.skipif(not subreaper.CONTAINED, reason="containment needs Linux and /proc")

# Three processes that leave the session, their pids written down; then the wrapper killed.
KILLS_ITS_WRAPPER = textwrap.dedent(
    """\
    import os, signal, subprocess, sys, time
    pids = [subprocess.Popen(["sleep", "300"], start_new_session=True).pid for _ in range(3)]
    with open(sys.argv[1], "a") as out:
        out.write("".join(f"{pid}\\n" for pid in pids))
    os.kill(os.getppid(), signal.SIGKILL)
    time.sleep(300)
    """
)


def running(pid: int) -> bool:
    """Whether `pid` is a process that has not exited (a zombie has)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except OSError:
        return False


def test_a_program_that_kills_its_wrapper_leaves_nothing_running(tmp_path: Path) -> None:
    program = tmp_path / "kills.py"
    program.write_text(KILLS_ITS_WRAPPER)
    pids = tmp_path / "pids.txt"
    cases = list(selected_cases(Selection(cases=("openai-chat/single-call::original::s0",))))
    try:
        # `exec`: the program is the wrapper's child (no shell between them to kill instead).
        report = run_clients(cases * 2, f"exec python3 {program} {pids}", timeout=10, warm=False, jobs=2)
        assert [str(r.verdict) for r in report.results] == ["error", "error"]
        started = [int(line) for line in pids.read_text().split()]
        assert len(started) == 6
        left = [pid for pid in started if running(pid)]
        assert left == [], f"{len(left)} of the program's processes still run"
    finally:
        for line in pids.read_text().split() if pids.exists() else ():
            if running(int(line)):
                os.kill(int(line), 9)


def test_adopting_is_undone_when_the_last_block_ends() -> None:
    """(A process that was a subreaper already, a pool worker, stays one.)"""
    before = subreaper._is_subreaper()
    with subreaper.adopting():
        assert subreaper._is_subreaper()
        with subreaper.adopting():
            pass
        assert subreaper._is_subreaper()
    assert subreaper._is_subreaper() is before
