"""`run_clients`: a program, unchanged, run once per case against the replay server and judged by
its follow-up request.

Each run gets the environment provider SDKs read for their endpoint and key, pointing at its case
(see `routes.client_environment`), in a session of its own, under the `subreaper` wrapper (Linux):
when its follow-up or report arrives, when it exits, or when the timeout passes, it and everything
it started end, even what left its session (`setsid`, a double fork); a harness that dies takes
them along. Its stdout and stderr are read as they come, their first and last bytes kept
(`STDOUT_KEPT`, `STDERR_KEPT`): a flood costs neither memory nor disk, and the outcome says what
was dropped. `jobs` programs run at once against the one server; results come back in case order,
so the report does not depend on `jobs`.

`ClientProgram` is the same run as an `Accumulator` (the spec `client:CMD` resolves to it), so a
program goes wherever an accumulator does: `compare`, `explore`, the pytest matrix. It serves the
cases it is given on a server of its own, started by `prepare`.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import subprocess
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import IO

from harness.accumulators import node_warm, subreaper
from harness.accumulators.capture import Captured
from harness.accumulators.warm import Forked, WarmStarts, warm_starts
from harness.cassettes.outcome import Outcome
from harness.errors import AccumulatorCrashed, OutcomeFormatError, UsageError
from harness.mutate.scenario import Case, Scenario
from harness.oracle.verdict import Report, Result
from harness.serve.oracle import Evidence, judge_client, outcome_of
from harness.serve.routes import client_environment
from harness.serve.server import CaseLog, ReplayServer

__all__ = ["DEFAULT_TIMEOUT", "PREFIX", "ClientProgram", "run_client", "run_clients"]

GRACE_S = 0.5  # after its follow-up, how long a program may take to exit by itself
PREFIX = "client:"  # the accumulator spec of a program: `client:CMD`
# Under the matrix runner a program gets this long per case: less than the runner's default
# deadline (30 s), so the program's own deadline, which also kills what it started, comes first.
DEFAULT_TIMEOUT = 25.0
# Bytes of a run's output kept, half from its start and half from its end: a report is its last
# line, a raise is named near the end of stderr.
STDOUT_KEPT = 2 * 1024 * 1024
STDERR_KEPT = 128 * 1024
_READ_END = 5.0  # seconds to read what is left in the pipes once the program's tree has ended


def run_clients(
    cases: Sequence[Case],
    command: str | Sequence[str],
    *,
    jobs: int = 1,
    timeout: float = 30.0,
    pace: bool = False,
    server: ReplayServer | None = None,
    scenarios: dict[str, Scenario] | None = None,
    warm: bool = True,
    retarget: bool = False,
) -> Report:
    """Run `command` once per case (a string runs through the shell) and judge each run
    (`scenarios`: by name, the scenarios that made the cases, for their class; `warm` False: a
    Node or Python program starts cold on every case, see `node_warm` and `warm`; `retarget`:
    each case moved onto the tools the program's first request offers, `harness.mutate.retarget`)."""
    if jobs < 1:
        raise UsageError(f"jobs: must be at least 1, not {jobs}")
    if timeout <= 0:
        raise UsageError(f"timeout: must be more than 0 seconds, not {timeout:g}")
    label = PREFIX + (command if isinstance(command, str) else shlex.join(command))
    by_name = scenarios or {}
    start = time.perf_counter()

    def one(running: ReplayServer, case: Case) -> Result:
        scenario = by_name.get(case.scenario)
        return run_client(
            running, case, command, timeout=timeout, label=label, scenario=scenario, warm=warm,
            zygotes=zygotes,
        )  # fmt: skip

    with contextlib.ExitStack() as stack:
        running = (
            server
            if server is not None
            else stack.enter_context(ReplayServer(cases, pace=pace, retarget=retarget).running())
        )
        zygotes = stack.enter_context(warm_starts(command, running.url, on=warm))
        if jobs == 1:
            results = [one(running, case) for case in cases]
        else:
            with ThreadPoolExecutor(max_workers=jobs) as pool:
                results = list(pool.map(lambda case: one(running, case), cases))
    node_warm.close()  # the warm processes left idle
    return Report(label, results, seconds=time.perf_counter() - start)


def run_client(
    server: ReplayServer,
    case: Case,
    command: str | Sequence[str],
    *,
    timeout: float,
    label: str | None = None,
    scenario: Scenario | None = None,
    warm: bool = True,
    zygotes: WarmStarts | None = None,
) -> Result:
    """One run of `command` against one case of a running server, judged (`zygotes`: those that
    fork a Python program, from `warm.warm_starts`)."""
    evidence, dropped = _run(server, case, command, timeout=timeout, warm=warm, zygotes=zygotes)
    log = server.log(case.id)
    served = log.case if log.case is not None else case  # retargeted onto the program's tools
    result = judge_client(served, label or PREFIX + str(command), evidence, scenario)
    if log.retarget is not None and result.actual is not None:
        result = replace(result, actual=_noted(result.actual, log.retarget.describe()))
    if dropped is None:
        return result
    if result.actual is not None:
        return replace(result, actual=_noted(result.actual, dropped))
    return replace(result, error=f"{result.error}; {dropped}" if result.error else dropped)


def run_evidence(
    server: ReplayServer,
    case: Case,
    command: str | Sequence[str],
    *,
    timeout: float,
    zygotes: WarmStarts | None = None,
) -> Evidence:
    """Run `command` once against `case` and collect what it showed (see `Evidence`)."""
    return _run(server, case, command, timeout=timeout, zygotes=zygotes)[0]


def _run(
    server: ReplayServer,
    case: Case,
    command: str | Sequence[str],
    *,
    timeout: float,
    warm: bool = True,
    zygotes: WarmStarts | None = None,
) -> tuple[Evidence, str | None]:
    """The evidence of one run, and a note when some of its output was dropped (else None)."""
    if subreaper.stopping():  # a signal is ending the harness: its queued runs start nothing
        raise AccumulatorCrashed("not run: the harness is being stopped")
    log = server.log(case.id)
    log.clear()
    env = {**os.environ, **client_environment(server.url, case.id)}
    out, err = Captured(STDOUT_KEPT), Captured(STDERR_KEPT)
    program = node_warm.parse(command, env) if warm and node_warm.enabled(env) else None
    # A Python program's zygote (`zygotes` is None when off or not Python), ready before the clock starts.
    zygote = zygotes.slot() if zygotes is not None else None
    start = time.monotonic()
    started = node_warm.start(program, env, out, err) if program is not None else None
    if started is not None:  # a `node SCRIPT.mjs` program: a worker of a warm Node process (node_warm.py)
        try:
            exit_code, timed_out, heard_at = _watch(started, log, start, timeout)
        finally:
            started.finish()
    else:
        forked = zygotes.fork(zygote, env) if zygotes is not None and zygote is not None else None
        exit_code, timed_out, heard_at = _cold(command, env, log, start, timeout, out, err, forked)
    stdout, stderr = out.text, err.text
    report = log.reports[0] if log.reports else _stdout_report(stdout)
    followup = log.followups[0] if log.followups else None
    ended = heard_at if heard_at is not None else time.monotonic()
    return Evidence(
        followup=followup,
        report=report,
        exit_code=exit_code,
        timed_out=timed_out and followup is None and report is None,
        seconds=ended - start,
        stderr=stderr,
        requests=log.attempts,
    ), _dropped(out, err)


def _cold(
    command: str | Sequence[str],
    env: dict[str, str],
    log: CaseLog,
    start: float,
    timeout: float,
    out: Captured,
    err: Captured,
    forked: Forked | None = None,
) -> tuple[int | None, bool, float | None]:
    """Run `command` as a process of its own (under the subreaper wrapper), or watch `forked` (a
    Python program forked by its warm zygote, which ends the run's tree as the wrapper does), its
    output read into `out` and `err`: (exit code, timed out, heard at), as `_watch` gives them."""
    wrapped = subreaper.CONTAINED
    if wrapped:  # the wrapper runs the shell itself
        argv = ["/bin/sh", "-c", command] if isinstance(command, str) else list(command)
    process = forked or subprocess.Popen(
        subreaper.contained(argv) if wrapped else command,
        shell=not wrapped and isinstance(command, str),
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # its own process group: one kill ends all it started
    )
    readers = [_drain(process.stdout, out), _drain(process.stderr, err)]
    try:
        return _watch(process, log, start, timeout)
    finally:
        subreaper.stop(process, wrapped=wrapped or forked is not None, grace=2.0)
        for reader in readers:
            reader.join(_READ_END)  # the tree has ended: its pipes are at their end
        for pipe in (process.stdout, process.stderr):
            with contextlib.suppress(OSError):
                if pipe is not None:
                    pipe.close()


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


def _dropped(out: Captured, err: Captured) -> str | None:
    """What a run's output lost to the caps, as a note; None when all of it was kept."""
    said = [
        f"wrote {captured.total:,} bytes to {name}: its first and last {captured.half // 1024:,} KiB "
        "were read"
        for name, captured in (("stdout", out), ("stderr", err))
        if captured.total > 2 * captured.half
    ]
    return f"the program {' and '.join(said)}, the rest dropped" if said else None


def _noted(outcome: Outcome, note: str) -> Outcome:
    return replace(outcome, notes=(*outcome.notes, note))


class ClientProgram:
    """A program run once per case against the replay server, as an `Accumulator` (`client:CMD`).

    `run(case)` serves the case (added to the server on first use), runs the command with the
    case's environment, and returns the outcome its follow-up or report shows; a program that
    cannot be judged raises the runner's timeout or crash errors (see `harness.serve.oracle`)."""

    def __init__(self, command: str, *, name: str | None = None, timeout: float = DEFAULT_TIMEOUT) -> None:
        if not command.strip():
            raise UsageError(f"accumulator {name or PREFIX!r}: {PREFIX} needs a command")
        self.command = command
        self.name = name or PREFIX + command
        self.timeout = timeout
        self._stack: contextlib.ExitStack | None = None
        self._server: ReplayServer | None = None
        self._zygotes: WarmStarts | None = None

    def prepare(self, timeout: float | None = None) -> None:
        if self._server is None:
            stack = contextlib.ExitStack()
            self._server = stack.enter_context(ReplayServer([]).running())
            self._zygotes = stack.enter_context(warm_starts(self.command, self._server.url))
            self._stack = stack

    def run(self, case: Case) -> Outcome:
        self.prepare()
        assert self._server is not None
        self._server.add(case)  # served from now on, its retry cut included
        zygotes = self._zygotes
        evidence, dropped = _run(self._server, case, self.command, timeout=self.timeout, zygotes=zygotes)
        outcome = outcome_of(case, evidence)
        return outcome if dropped is None else _noted(outcome, dropped)

    def shutdown(self) -> None:
        node_warm.close()
        if self._stack is not None:
            self._stack.close()
        self._stack = self._server = self._zygotes = None


def _watch(
    process: subprocess.Popen[bytes] | node_warm.WarmRun, log: CaseLog, start: float, timeout: float
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
