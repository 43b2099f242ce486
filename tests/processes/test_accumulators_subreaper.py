"""Containment without leftovers: a `cmd:` process and everything it starts end with its case."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.accumulators.stdio_process import Stdio
from harness.cli import main
from harness.errors import AccumulatorTimeout
from harness.mutate.scenario import Case
from tests.accumulators.test_accumulators_stdio import CASSETTES, recorded_case

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the subreaper is Linux only")

# Starts a grandchild in a session of its own (outside any process group the harness could
# kill), records both pids in argv[1], then reads every case and never answers. With argv[2]
# `answers-warm-up` it answers the warm-up case (so each case starts a process: one that never
# answers its warm-up gets none started for its cases) and hangs on every case.
HANGS = """
import json, os, subprocess, sys, time
grandchild = subprocess.Popen(
    [sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True
)
with open(os.path.join(sys.argv[1], str(os.getpid())), "w") as out:
    out.write(f"{os.getpid()} {grandchild.pid}")
warm_up = sys.argv[2:] == ["answers-warm-up"]
for line in sys.stdin:
    message = json.loads(line)
    if message["op"] == "start":
        case = message["case"] if message.get("warmup") else None
    elif message["op"] == "end" and warm_up and case is not None:
        print(json.dumps({"case": case}), flush=True)
time.sleep(600)
"""


def hangs(folder: Path, *, answers_warm_up: bool = False) -> str:
    script = folder / "hangs.py"
    script.write_text(HANGS)
    return shlex.join([sys.executable, str(script), str(folder), *(["answers-warm-up"] * answers_warm_up)])


def recorded_pids(folder: Path) -> list[int]:
    return [int(pid) for path in folder.iterdir() if path.name.isdigit() for pid in path.read_text().split()]


def running(pid: int) -> bool:
    """True while the process exists and is not a zombie (a zombie has ended; only its entry is left)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in (b"Z", b"X")


def left_running(pids: list[int], within: float = 10.0) -> list[int]:
    until = time.monotonic() + within
    while (alive := [pid for pid in pids if running(pid)]) and time.monotonic() < until:
        time.sleep(0.1)
    return alive


@pytest.fixture
def case() -> Case:
    return recorded_case(CASSETTES / "openai-chat" / "single-call.yaml")


def test_a_timed_out_case_ends_the_process_and_its_setsid_grandchild(tmp_path: Path, case: Case) -> None:
    with Stdio(hangs(tmp_path), "events") as acc, pytest.raises(AccumulatorTimeout):
        acc.run(case, timeout=1)
    pids = recorded_pids(tmp_path)
    assert len(pids) == 2
    assert left_running(pids) == []


def test_a_warm_up_that_times_out_ends_the_process_and_its_setsid_grandchild(tmp_path: Path) -> None:
    with Stdio(hangs(tmp_path), "events") as acc:
        acc.prepare(timeout=1)  # never raises: the process is killed and the next case starts afresh
        assert acc._child is None
    pids = recorded_pids(tmp_path)
    assert len(pids) == 2
    assert left_running(pids) == []


def test_the_tree_ends_when_the_harness_process_is_killed(tmp_path: Path) -> None:
    # A harness process killed with SIGKILL (as the runner kills a worker) cannot clean up itself.
    harness = (
        "import sys\n"
        "from harness.accumulators.stdio_process import Stdio\n"
        "from tests.accumulators.test_accumulators_stdio import CASSETTES, recorded_case\n"
        "Stdio(sys.argv[1]).run(recorded_case(CASSETTES / 'openai-chat' / 'single-call.yaml'))\n"
    )
    root = Path(__file__).parents[2]
    proc = subprocess.Popen([sys.executable, "-c", harness, hangs(tmp_path)], cwd=root)
    until = time.monotonic() + 20
    while len(recorded_pids(tmp_path)) < 2 and time.monotonic() < until:
        time.sleep(0.1)
    assert len(recorded_pids(tmp_path)) == 2
    proc.kill()
    proc.wait()
    assert left_running(recorded_pids(tmp_path)) == []


@pytest.mark.slow
def test_after_a_check_whose_accumulator_hangs_on_every_case_no_process_of_it_is_left(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cassettes = [str(CASSETTES / "openai-chat" / name) for name in ("single-call.yaml", "parallel-2.yaml")]
    code = main(
        [
            "check",
            "--accumulator",
            f"cmd:{hangs(tmp_path, answers_warm_up=True)}",
            "--cassettes",
            *cassettes,
            "--scenarios",
            "original",
            "--timeout",
            "0.5",  # every case hangs: any timeout ends it
        ]
    )
    out = capsys.readouterr().out
    assert code == 1 and "timeout" in out
    pids = recorded_pids(tmp_path)
    assert len(pids) >= 4  # at least two cases, each with its own process and grandchild
    assert left_running(pids) == []
    assert all(not running(pid) for pid in pids)
    assert os.getpid() not in pids
