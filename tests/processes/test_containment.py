"""No process left behind, and deadlines that hold: whatever way a program runs (a `cmd:` process,
`check --client` with one job or several, `client:CMD` under the runner's timeout, the pytest
plugin), it and what it started (`setsid`, a double fork) end with its case, and SIGTERM or
SIGINT on the harness ends them all at once."""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.accumulators import program as clients
from harness.cli import main
from harness.matrix.selection import Selection
from harness.matrix.selection import cases as selected_cases
from tests.processes.test_accumulators_subreaper import left_running, recorded_pids

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the subreaper is Linux only")

ROOT = Path(__file__).resolve().parents[2]
SINGLE = "openai-chat/single-call::original::s0"
PARALLEL = "openai-chat/parallel-2::original::s0"

# Starts a grandchild in a session of its own and a double-forked one (its parent gone: an orphan
# that left the session), records its pid and theirs in argv[1]/<pid>, then per argv[2]:
#   exit    exits at once, leaving both running
#   hang    sleeps
#   stdio   speaks the stdio protocol: answers the warm-up case, never a case
#   mute    reads stdin and never answers (not even the warm-up)
#   flood   writes argv[3] bytes to stdout, then a report line, and exits
PROGRAM = """
import json, os, subprocess, sys, time
folder, mode = sys.argv[1], sys.argv[2]
setsid = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)
read, write = os.pipe()
middle = os.fork()
if middle == 0:
    os.setsid()
    orphan = os.fork()
    if orphan == 0:
        time.sleep(600)
        os._exit(0)
    os.write(write, str(orphan).encode())
    os._exit(0)
os.waitpid(middle, 0)
orphan = int(os.read(read, 64))
with open(os.path.join(folder, str(os.getpid())), "w") as out:
    out.write(f"{os.getpid()} {setsid.pid} {orphan}")
if mode == "exit":
    sys.exit(0)
if mode == "flood":
    chunk = "x" * 65535 + "\\n"
    for _ in range(int(sys.argv[3]) // len(chunk)):
        sys.stdout.write(chunk)
    print(json.dumps({"tool_calls": [], "text": "from the last line"}), flush=True)
    sys.exit(0)
if mode in ("stdio", "mute"):
    for line in sys.stdin:
        message = json.loads(line)
        if message["op"] == "start":
            case = message["case"] if message.get("warmup") else None
        elif message["op"] == "end" and mode == "stdio" and case is not None:
            print(json.dumps({"case": case}), flush=True)
time.sleep(600)
"""


def program(folder: Path, mode: str, *extra: str) -> str:
    script = folder / "program.py"
    script.write_text(PROGRAM)
    pids = folder / "pids"
    pids.mkdir(exist_ok=True)
    return shlex.join([sys.executable, str(script), str(pids), mode, *extra])


def pids_of(folder: Path) -> list[int]:
    return recorded_pids(folder / "pids")


def wait_for_pids(folder: Path, count: int, within: float = 30.0) -> list[int]:
    until = time.monotonic() + within
    while len(pids_of(folder)) < count and time.monotonic() < until:
        time.sleep(0.05)
    found = pids_of(folder)
    assert len(found) >= count, f"the program recorded {found}"
    return found


def toolstream(*args: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-m", "harness.cli", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_check_client_ends_what_each_program_left_running(
    tmp_path: Path, jobs: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # The program exits at once: its setsid and double-forked grandchildren go with its case.
    args = ["check", "--client", program(tmp_path, "exit"), "-j", jobs, "--timeout", "10"]
    main([*args, "--case", SINGLE, "--case", PARALLEL])
    capsys.readouterr()
    pids = pids_of(tmp_path)
    assert len(pids) == 6  # two cases, three processes each
    assert left_running(pids, within=5) == []


def test_a_client_accumulator_that_hangs_ends_with_its_case_under_the_runner_timeout(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The runner's timeout (2 s) comes before the program's own (25 s): its worker is killed, and
    # the program (in a session of its own) with it.
    spec = f"client:{program(tmp_path, 'hang')}"
    code = main(["check", "--accumulator", spec, "--case", SINGLE, "--timeout", "2"])
    assert code == 1 and "timeout" in capsys.readouterr().out
    pids = pids_of(tmp_path)
    assert len(pids) == 3
    assert left_running(pids, within=5) == []


def test_a_client_flooding_stdout_is_read_to_a_cap_that_its_outcome_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(clients, "STDOUT_KEPT", 128 * 1024)
    cases = list(selected_cases(Selection(cases=(SINGLE,))))
    report = clients.run_clients(cases, program(tmp_path, "flood", str(4 * 1024 * 1024)), timeout=20)
    (result,) = report.results
    assert result.actual is not None and result.actual.text == "from the last line"  # the tail was kept
    (note,) = [n for n in result.actual.notes if "stdout" in n]
    assert re.search(r"wrote 4,194,\d{3} bytes to stdout: its first and last 64 KiB were read", note)
    assert left_running(pids_of(tmp_path), within=5) == []


@pytest.mark.slow
def test_a_cmd_accumulator_that_never_gets_ready_costs_about_one_timeout_not_a_warm_up_per_case(
    tmp_path: Path,
) -> None:
    # Four ollama cases; each case's worker used to wait 60 s for a new process's warm-up.
    started = time.monotonic()
    check = toolstream(
        "check", "--accumulator", f"cmd:{program(tmp_path, 'mute')}",
        "--dialect", "ollama", "--scenarios", "original", "--timeout", "1",
    )  # fmt: skip
    try:
        out, err = check.communicate(timeout=60)
    finally:
        check.kill()
    took = time.monotonic() - started
    assert check.returncode == 1, err.decode()
    assert "4 timeout" in out.decode()
    assert took < 20, f"{took:.1f} s"
    assert left_running(pids_of(tmp_path), within=5) == []


@pytest.mark.parametrize(("sig", "status"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_on_check_ends_its_workers_processes_and_their_grandchildren(
    tmp_path: Path, sig: signal.Signals, status: int
) -> None:
    # A pooled run (a timeout): the case hangs in a worker, whose `cmd:` process has a setsid
    # and a double-forked grandchild. None may outlive `check`.
    spec = f"cmd:{program(tmp_path, 'stdio')}"
    check = toolstream("check", "--accumulator", spec, "--case", SINGLE, "--timeout", "60")
    try:
        pids = wait_for_pids(tmp_path, 3)
        time.sleep(0.5)  # the case is sent
        check.send_signal(sig)
        check.wait(timeout=10)
    finally:
        check.kill()
    assert left_running(pids, within=3) == []
    assert check.returncode == status, check.stderr.read().decode() if check.stderr else ""


@pytest.mark.slow
@pytest.mark.parametrize("command", ["compare", "serve"])
def test_sigterm_on_compare_and_serve_ends_what_they_started(tmp_path: Path, command: str) -> None:
    if command == "compare":  # in a worker (its default timeout): a `cmd:` process hangs on the case
        args = ["compare", f"cmd:{program(tmp_path, 'stdio')}", "reference", "--case", SINGLE]
    else:
        args = ["serve", "--client", program(tmp_path, "hang"), "-j", "1", "--timeout", "60"]
        args += ["--case", SINGLE]
    run = toolstream(*args)
    try:
        pids = wait_for_pids(tmp_path, 3)
        time.sleep(0.5)  # the case is sent
        run.send_signal(signal.SIGTERM)
        run.wait(timeout=10)
    finally:
        run.kill()
    assert left_running(pids, within=3) == []
    assert run.returncode == 143


@pytest.mark.slow
def test_sigterm_on_check_client_with_jobs_ends_every_running_program_at_once(tmp_path: Path) -> None:
    args = ["--client", program(tmp_path, "hang"), "-j", "2", "--timeout", "60"]
    args += ["--case", SINGLE, "--case", PARALLEL]
    check = toolstream("check", *args)
    try:
        pids = wait_for_pids(tmp_path, 6)
        started = time.monotonic()
        check.send_signal(signal.SIGTERM)
        check.wait(timeout=10)
        assert time.monotonic() - started < 5
    finally:
        check.kill()
    assert left_running(pids, within=3) == []
    assert check.returncode == 143


@pytest.mark.slow
def test_sigterm_on_pytest_ends_the_client_programs_of_its_matrix(tmp_path: Path) -> None:
    session = tmp_path / "session"
    session.mkdir()
    (session / "test_matrix.py").write_text(
        "def test_case(toolstream_case):\n    toolstream_case.check()\n"
    )
    cassette = ROOT / "cassettes" / "openai-chat" / "single-call.yaml"
    folder = tmp_path / "cassettes" / "openai-chat"
    folder.mkdir(parents=True)
    folder.joinpath("single-call.yaml").write_bytes(cassette.read_bytes())
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    pytest_run = subprocess.Popen(
        [
            sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(session),
            "--toolstream-client", program(tmp_path, "hang"),
            "--toolstream-cassette-dir", str(tmp_path / "cassettes"), "--toolstream-scenarios", "original",
        ],
        cwd=session, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        pids = wait_for_pids(tmp_path, 3, within=60)
        pytest_run.send_signal(signal.SIGTERM)
        pytest_run.wait(timeout=10)
    finally:
        pytest_run.kill()
    assert left_running(pids, within=3) == []
