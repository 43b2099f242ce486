"""`run_clients`: a program, unchanged, run once per case against the replay server and judged by
its follow-up request.

Each run gets the environment provider SDKs read for their endpoint and key, pointing at its case
(see `routes.client_environment`), in a session of its own: when its follow-up or report arrives,
when it exits, or when the timeout passes, the whole process group is killed, so nothing it started
outlives it. `jobs` programs run at once against the one server; results come back in case order,
so the report does not depend on `jobs`.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from harness.check.outcome import Outcome
from harness.check.verdict import Report, Result
from harness.errors import OutcomeFormatError, UsageError
from harness.mutate.scenario import Case
from harness.serve.oracle import Evidence, judge_client
from harness.serve.routes import client_environment
from harness.serve.server import CaseLog, ReplayServer

__all__ = ["run_client", "run_clients"]

GRACE_S = 0.5  # after its follow-up, how long a program may take to exit by itself


def run_clients(
    cases: Sequence[Case],
    command: str | Sequence[str],
    *,
    jobs: int = 1,
    timeout: float = 30.0,
    pace: bool = False,
    server: ReplayServer | None = None,
) -> Report:
    """Run `command` once per case (a string runs through the shell) and judge each run."""
    if jobs < 1:
        raise UsageError(f"jobs: must be at least 1, not {jobs}")
    if timeout <= 0:
        raise UsageError(f"timeout: must be more than 0 seconds, not {timeout:g}")
    label = command if isinstance(command, str) else " ".join(command)
    start = time.perf_counter()
    if server is None:
        with ReplayServer(cases, pace=pace).running() as own:
            results = _run_all(own, cases, command, label, jobs, timeout)
    else:
        results = _run_all(server, cases, command, label, jobs, timeout)
    return Report(f"client:{label}", results, seconds=time.perf_counter() - start)


def _run_all(
    server: ReplayServer,
    cases: Sequence[Case],
    command: str | Sequence[str],
    label: str,
    jobs: int,
    timeout: float,
) -> list[Result]:
    if jobs == 1:
        return [run_client(server, case, command, timeout=timeout, label=label) for case in cases]
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        return list(
            pool.map(lambda case: run_client(server, case, command, timeout=timeout, label=label), cases)
        )


def run_client(
    server: ReplayServer,
    case: Case,
    command: str | Sequence[str],
    *,
    timeout: float,
    label: str | None = None,
) -> Result:
    """One run of `command` against one case of a running server, judged."""
    log = server.log(case.id)
    log.clear()
    env = {**os.environ, **client_environment(server.url, case.id)}
    with tempfile.TemporaryDirectory(prefix="toolstream-client-") as scratch:
        out_path, err_path = Path(scratch, "stdout"), Path(scratch, "stderr")
        with out_path.open("wb") as out, err_path.open("wb") as err:
            start = time.monotonic()
            process = subprocess.Popen(
                command,
                shell=isinstance(command, str),
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                start_new_session=True,  # its own process group: one kill ends all it started
            )
            exit_code, timed_out, heard_at = _watch(process, log, start, timeout)
            _kill_group(process)
        stdout = out_path.read_text(errors="replace")
        stderr = err_path.read_text(errors="replace")
    report = log.reports[0] if log.reports else _stdout_report(stdout)
    followup = log.followups[0] if log.followups else None
    ended = heard_at if heard_at is not None else time.monotonic()
    evidence = Evidence(
        followup=followup,
        report=report,
        exit_code=exit_code,
        timed_out=timed_out and followup is None and report is None,
        seconds=ended - start,
        stderr=stderr,
    )
    return judge_client(case, label or str(command), evidence)


def _watch(
    process: subprocess.Popen[bytes], log: CaseLog, start: float, timeout: float
) -> tuple[int | None, bool, float | None]:
    """Wait for a follow-up, a report, an exit or the deadline: (exit code, timed out, heard at)."""
    deadline = start + timeout
    while True:
        if log.followups or log.reports:
            heard_at = time.monotonic()
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(GRACE_S)
            return process.poll(), False, heard_at
        code = process.poll()
        if code is not None:
            return code, False, None
        now = time.monotonic()
        if now >= deadline:
            return None, True, None
        log.wait(min(0.02, deadline - now))


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(Exception):
        process.kill()
    process.wait()


def _stdout_report(stdout: str) -> Outcome | None:
    """The last stdout line that is an outcome as JSON (an object with `tool_calls`), if any."""
    for line in reversed(stdout.splitlines()):
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            data = json.loads(line)
        except ValueError:
            continue
        if isinstance(data, dict) and "tool_calls" in data:
            with contextlib.suppress(OutcomeFormatError):
                return Outcome.from_dict(data)
    return None
