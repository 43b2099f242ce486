"""`run_clients`: a program, unchanged, run once per case against the replay server and judged by
its follow-up request.

Each run gets the environment provider SDKs read for their endpoint and key, pointing at its case
(see `routes.client_environment`), started by `harness.processes` (cold: in a session of its own,
under the `subreaper` wrapper on Linux; warm: see `harness.processes.warm`):
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
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

from harness.cassettes.outcome import CUSTOM, Outcome
from harness.errors import AccumulatorCrashed, NotApplicable, OutcomeFormatError, UsageError
from harness.mutate.scenario import Case, Scenario
from harness.oracle.evidence import Evidence, evidence_of, judge_client, outcome_of
from harness.oracle.verdict import Report, Result, Verdict, copy_result, unjudged
from harness.processes import subreaper
from harness.processes.capture import Captured
from harness.processes.run import Run, start_cold
from harness.processes.warm import WarmStart, warm_start
from harness.serve.routes import client_environment
from harness.serve.server import CaseLog, ReplayServer

__all__ = ["DEFAULT_TIMEOUT", "PREFIX", "ClientProgram", "run_client", "run_clients", "warm_starts"]

GRACE_S = 0.5  # after its follow-up, how long a program may take to exit by itself
PREFIX = "client:"  # the accumulator spec of a program: `client:CMD`
# Under the matrix runner a program gets this long per case: less than the runner's default
# deadline (30 s), so the program's own deadline, which also kills what it started, comes first.
DEFAULT_TIMEOUT = 25.0
# Bytes of a run's output kept, half from its start and half from its end: a report is its last
# line, a raise is named near the end of stderr.
STDOUT_KEPT = 2 * 1024 * 1024
STDERR_KEPT = 128 * 1024
# The case a zygote's environment points at: a warm run that asks the server for it used a value
# the zygote read (a module that kept it at import, `/proc/self/environ`), not its own case's.
PLACEHOLDER = "toolstream:warm:a"


def _say(line: str) -> None:
    print(f"toolstream: {line}", file=sys.stderr)


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
    hold: Callable[[], contextlib.AbstractContextManager[object]] = contextlib.nullcontext,
    each: Callable[[Result], None] | None = None,
    say: Callable[[str], None] = _say,
    retarget: bool = False,
) -> Report:
    """Run `command` once per case (a string runs through the shell) and judge each run
    (`scenarios`: by name, the scenarios that made the cases, for their class; `warm` False: a
    Node or Python program starts cold on every case, see `harness.processes.warm`). Each run
    holds what `hold()` gives while it runs (a slot of the caller's), and `each(result)` is told
    after it; `say` is told once when a program turns out to need cold starts. `retarget`: each
    case moved onto the tools the program's first request offers (`harness.mutate.retarget`)."""
    if jobs < 1:
        raise UsageError(f"jobs: must be at least 1, not {jobs}")
    if timeout <= 0:
        raise UsageError(f"timeout: must be more than 0 seconds, not {timeout:g}")
    label = PREFIX + (command if isinstance(command, str) else shlex.join(command))
    by_name = scenarios or {}
    start = time.perf_counter()

    def one(case: Case) -> Result:
        with hold():
            result = run_client(
                running, case, command, timeout=timeout, label=label, scenario=by_name.get(case.scenario),
                warm=warmed,
            )  # fmt: skip
        if each is not None:
            each(result)
        return result

    with contextlib.ExitStack() as stack:
        stack.enter_context(subreaper.adopting())  # what a program's tree orphans comes back here
        running = (
            server
            if server is not None
            else stack.enter_context(ReplayServer(cases, pace=pace, retarget=retarget).running())
        )
        warmed = stack.enter_context(warm_starts(command, running.url, on=warm, say=say))
        if jobs == 1:
            results = [one(case) for case in cases]
        else:
            with ThreadPoolExecutor(max_workers=jobs) as pool:
                results = list(pool.map(one, cases))
    return Report(label, results, seconds=time.perf_counter() - start)


@contextlib.contextmanager
def warm_starts(
    command: str | Sequence[str], server: str, *, on: bool = True, say: Callable[[str], None] = _say
) -> Iterator[WarmStart | None]:
    """The warm starts of `command`'s runs against the replay server at URL `server` while the
    block runs (None: it starts cold). The zygote of a Python program gets a run's environment
    with a placeholder case; the variables that differ between two cases are the ones no module
    it preloads may read at import."""
    one = client_environment(server, PLACEHOLDER)
    other = client_environment(server, "toolstream:warm:b")
    case_keys = sorted(key for key in one if one[key] != other.get(key))
    warm = warm_start(command, one, case_keys, on=on, say=say)
    try:
        yield warm
    finally:
        if warm is not None:
            warm.close()


def run_client(
    server: ReplayServer,
    case: Case,
    command: str | Sequence[str],
    *,
    timeout: float,
    label: str | None = None,
    scenario: Scenario | None = None,
    warm: WarmStart | None = None,
) -> Result:
    """One run of `command` against one case of a running server, judged (`warm`: its warm
    starts, from `warm_starts`; None: a cold start), against the case as served (retargeted onto
    the program's tools when the server retargets)."""
    evidence, dropped = _run(server, case, command, timeout=timeout, warm=warm)
    log = server.log(case.id)
    served = log.case if log.case is not None else case
    spec = label or PREFIX + str(command)
    unoffered = _unoffered(served, log.tools_offered)
    if unoffered is not None:
        # No provider streams a call to a tool the request did not offer: nothing the program did
        # with it says anything of its stream handling (a custom call, which retargeting cannot move
        # onto a function, served to a program that offers none).
        skipped = unjudged(served, spec, scenario)
        return copy_result(skipped, verdict=Verdict.SKIPPED, error=_not_offered(unoffered))
    result = judge_client(served, spec, evidence, scenario)
    if log.retarget is not None and result.actual is not None:
        result = replace(result, actual=_noted(result.actual, log.retarget.describe()))
    if dropped is None:
        return result
    if result.actual is not None:
        return replace(result, actual=_noted(result.actual, dropped))
    return replace(result, error=f"{result.error}; {dropped}" if result.error else dropped)


def _unoffered(case: Case, offered: frozenset[str] | None) -> str | None:
    """The first custom (freeform) call `case` expects to a tool not among `offered` (None: the
    request lists no tools, or offers each). A function call to a tool not offered is still served
    and judged: retargeting moves it onto one (`--no-retarget` asks for the recording as it is);
    a freeform input no function tool takes, and a program offering no such tool never asked for one."""
    if offered is None:
        return None
    calls = case.expected.tool_calls
    return next((c.name for c in calls if c.kind == CUSTOM and c.name and c.name not in offered), None)


def _not_offered(name: str) -> str:
    return f"the stream calls {name!r}, a tool the program's request does not offer"


def run_evidence(
    server: ReplayServer,
    case: Case,
    command: str | Sequence[str],
    *,
    timeout: float,
    warm: WarmStart | None = None,
) -> Evidence:
    """Run `command` once against `case` and collect what it showed (see `Evidence`)."""
    return _run(server, case, command, timeout=timeout, warm=warm)[0]


def _run(
    server: ReplayServer,
    case: Case,
    command: str | Sequence[str],
    *,
    timeout: float,
    warm: WarmStart | None = None,
) -> tuple[Evidence, str | None]:
    """The evidence of one run, and a note when some of its output was dropped (else None)."""
    if subreaper.stopping():  # a signal is ending the harness: its queued runs start nothing
        raise AccumulatorCrashed("not run: the harness is being stopped")
    log = server.log(case.id)
    log.clear()
    env = {**os.environ, **client_environment(server.url, case.id)}
    out, err = Captured(STDOUT_KEPT), Captured(STDERR_KEPT)
    start = time.monotonic()
    astray = server.unknown.get(PLACEHOLDER, 0)
    warmed = warm.start(env, out, err, start + timeout) if warm is not None else None
    if warmed is None and warm is not None:
        start = time.monotonic()  # a warm start that could not be had costs the case none of its time
    run = warmed if warmed is not None else start_cold(command, env, out, err)
    try:
        exit_code, timed_out, heard_at = _watch(run, log, start, timeout)
    finally:
        run.finish()
    if warm is not None and warmed is not None:
        refused = warmed.refused
        if refused is None and server.unknown.get(PLACEHOLDER, 0) != astray:
            refused = "a run used the zygote's environment, not its case's (kept at import, or from /proc)"
        if refused is not None:  # this run again, cold; and every later one
            warm.refuse(refused)
            return _run(server, case, command, timeout=timeout, warm=None)
    ended = heard_at if heard_at is not None else time.monotonic()
    return evidence_of(
        log,
        report=_stdout_report(out.text),
        exit_code=exit_code,
        timed_out=timed_out,
        seconds=ended - start,
        stderr=err.text,
    ), _dropped(out, err)


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
    cannot be judged raises the runner's timeout or crash errors (see `harness.oracle.evidence`)."""

    def __init__(self, command: str, *, name: str | None = None, timeout: float = DEFAULT_TIMEOUT) -> None:
        if not command.strip():
            raise UsageError(f"accumulator {name or PREFIX!r}: {PREFIX} needs a command")
        self.command = command
        self.name = name or PREFIX + command
        self.timeout = timeout
        self._stack: contextlib.ExitStack | None = None
        self._server: ReplayServer | None = None
        self._warm: WarmStart | None = None

    def prepare(self, timeout: float | None = None) -> None:
        if self._server is None:
            stack = contextlib.ExitStack()
            stack.enter_context(subreaper.adopting())
            self._server = stack.enter_context(ReplayServer([]).running())
            self._warm = stack.enter_context(warm_starts(self.command, self._server.url))
            self._stack = stack

    def run(self, case: Case) -> Outcome:
        self.prepare()
        assert self._server is not None
        self._server.add(case)  # served from now on, its retry cut included
        evidence, dropped = _run(self._server, case, self.command, timeout=self.timeout, warm=self._warm)
        unoffered = _unoffered(case, self._server.log(case.id).tools_offered)
        if unoffered is not None:
            raise NotApplicable(_not_offered(unoffered))
        outcome = outcome_of(case, evidence)
        return outcome if dropped is None else _noted(outcome, dropped)

    def shutdown(self) -> None:
        if self._stack is not None:
            self._stack.close()
        self._stack = self._server = self._warm = None


def _watch(run: Run, log: CaseLog, start: float, timeout: float) -> tuple[int | None, bool, float | None]:
    """Wait for a follow-up, a report, an exit or the deadline: (exit code, timed out, heard at)."""
    deadline = start + timeout
    while True:
        if log.followups or log.reports:
            heard_at = time.monotonic()
            with contextlib.suppress(subprocess.TimeoutExpired):
                run.wait(GRACE_S)
            return run.poll(), False, heard_at
        code = run.poll()
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
