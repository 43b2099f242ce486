"""The process pool: units of work run in worker processes, each case under a deadline.

Each worker resolves the accumulator specs itself and builds its cases from plain strings (a
`Selection` and the scenarios as data), so nothing but strings and plain data crosses a process
boundary. A worker whose case overruns the timeout is killed with its process group (so a `cmd:`
accumulator it started goes too) and replaced; the replacement resumes after that case. Results
come back in unit order, so any number of workers gives the serial report.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import sys
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import Any

from harness.check.accumulators import resolve
from harness.check.capture import captured_output
from harness.check.expectation import CaseClass, classify
from harness.check.outcome import Outcome
from harness.check.selection import Matrix, Selection, Unit, rebuilt_scenarios
from harness.check.verdict import Result, Verdict, describe_error, judge
from harness.errors import HarnessError
from harness.mutate.scenario import Case
from harness.report.terminal import Progress

__all__ = ["Pool"]


# Messages a worker sends: ("ready",), ("fatal", text), ("cases", metas), ("result", k, i, data),
# ("done",). The parent sends a unit with where to resume, (unit, k, i), or None to stop.


def _worker_main(
    conn: Connection,
    selection: Selection,
    scenarios: list[dict[str, Any]],
    specs: Sequence[str],
    cwd: str,
    path: list[str],
) -> None:
    with contextlib.suppress(OSError):
        os.setpgid(0, 0)  # its own process group: killing it also ends a `cmd:` child it started
    os.chdir(cwd)
    sys.path[:] = path
    try:
        matrix = Matrix(selection, rebuilt_scenarios(scenarios))
        accumulators = [resolve(spec) for spec in specs]
        for acc in accumulators:
            with captured_output():  # what the warm-up prints is thrown away with its outcome
                acc.prepare()  # imports and process start-up before the first case's clock starts
    except Exception as exc:
        conn.send(("fatal", describe_error(exc)))
        return
    conn.send(("ready",))
    try:
        while True:
            task = conn.recv()
            if task is None:
                break
            unit, k0, i0 = task
            try:
                cases = matrix.cases(unit)
            except Exception as exc:
                conn.send(("fatal", f"{unit.describe()}: {describe_error(exc)}"))
                return
            conn.send(("cases", [_meta(case, matrix) for case in cases]))
            for k, case in enumerate(cases):
                for i, (acc, spec) in enumerate(zip(accumulators, specs, strict=True)):
                    if (k, i) >= (k0, i0):
                        result = judge(acc, spec, case, matrix.by_name.get(case.scenario))
                        conn.send(("result", k, i, result.to_dict()))
            conn.send(("done",))
    except (EOFError, BrokenPipeError, KeyboardInterrupt):
        pass
    finally:
        for acc in accumulators:
            with contextlib.suppress(Exception):
                acc.shutdown()


def _meta(case: Case, matrix: Matrix) -> dict[str, Any]:
    expectation = classify(case, matrix.by_name.get(case.scenario))
    return {
        "id": case.id,
        "cassette": case.cassette,
        "scenario": case.scenario,
        "seed": case.seed,
        "dialect": case.dialect,
        "expected": case.expected.to_dict(),
        "class": str(expectation.case_class),
        "class_reason": expectation.reason,
    }


@dataclass
class _Worker:
    process: Any
    conn: Connection
    ready: bool = False
    unit: int | None = None  # index of the unit it works on
    metas: list[dict[str, Any]] | None = None
    position: tuple[int, int] = (0, 0)  # the (case, accumulator) it is running now
    deadline: float | None = None


class Pool:
    """Worker processes over units of work, with per-case deadlines and replacement on death."""

    def __init__(
        self,
        selection: Selection,
        scenarios: list[dict[str, Any]],
        specs: Sequence[str],
        timeout: float | None,
        jobs: int,
    ) -> None:
        self.selection = selection
        self.scenarios = scenarios
        self.specs = list(specs)
        self.timeout = timeout
        self.jobs = jobs
        methods = multiprocessing.get_all_start_methods()
        self.context = multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")
        if self.context.get_start_method() == "forkserver":
            # Workers fork from a server that has already imported the harness: fast (re)starts.
            self.context.set_forkserver_preload([__name__])
        self.workers: list[_Worker] = []

    def _start(self) -> _Worker:
        ours, theirs = self.context.Pipe()
        args = (theirs, self.selection, self.scenarios, self.specs, os.getcwd(), list(sys.path))
        process = self.context.Process(target=_worker_main, args=args, daemon=True)  # type: ignore[attr-defined]
        process.start()
        theirs.close()
        return _Worker(process, ours)

    def _kill(self, worker: _Worker) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
            os.killpg(worker.process.pid, signal.SIGKILL)
        with contextlib.suppress(Exception):
            worker.process.kill()
        worker.process.join(5)
        worker.conn.close()

    def run(self, units: Sequence[Unit], progress: Progress | None) -> list[list[list[Result]]]:
        results: list[list[list[Result | None]]] = [[] for _ in units]
        # A unit to do, with where to resume: (unit index, case, accumulator).
        todo: deque[tuple[int, int, int]] = deque((n, 0, 0) for n in range(len(units)))
        try:
            self.workers = [self._start() for _ in range(self.jobs)]
            while todo or any(w.unit is not None for w in self.workers):
                for worker in self.workers:
                    if worker.ready and worker.unit is None and todo:
                        n, k, i = todo.popleft()
                        worker.unit, worker.metas, worker.position, worker.deadline = n, None, (k, i), None
                        worker.conn.send((units[n], k, i))
                now = time.monotonic()
                deadlines = [w.deadline for w in self.workers if w.deadline is not None]
                wait_for = None if not deadlines else max(min(deadlines) - now, 0.0)
                for conn in wait([w.conn for w in self.workers], wait_for):
                    worker = next(w for w in self.workers if w.conn is conn)
                    self._receive(worker, units, results, todo, progress)
                now = time.monotonic()
                for worker in list(self.workers):
                    if worker.deadline is not None and now >= worker.deadline:
                        self._lost(
                            worker, Verdict.TIMEOUT, f"no outcome within {self.timeout:g} s", results, todo
                        )
        finally:
            for worker in self.workers:
                with contextlib.suppress(Exception):
                    worker.conn.send(None)
            for worker in self.workers:
                worker.process.join(1)
                if worker.process.is_alive():
                    self._kill(worker)
        out: list[list[list[Result]]] = []
        for unit_results in results:
            out.append([[r for r in per_spec if r is not None] for per_spec in unit_results])
        return out

    def _receive(
        self,
        worker: _Worker,
        units: Sequence[Unit],
        results: list[list[list[Result | None]]],
        todo: deque[tuple[int, int, int]],
        progress: Progress | None,
    ) -> None:
        try:
            message = worker.conn.recv()
        except (EOFError, OSError):
            worker.process.join(1)
            code = worker.process.exitcode
            if worker.metas is None:
                where = f" while building {units[worker.unit].describe()}" if worker.unit is not None else ""
                raise HarnessError(f"a worker process died{where} (exit code {code})") from None
            self._lost(
                worker, Verdict.ERROR, f"the accumulator's process died (exit code {code})", results, todo
            )
            return
        kind = message[0]
        if kind == "ready":
            worker.ready = True
        elif kind == "fatal":
            raise HarnessError(message[1])
        elif kind == "cases":
            assert worker.unit is not None
            worker.metas = message[1]
            if not results[worker.unit]:
                results[worker.unit] = [[None] * len(self.specs) for _ in message[1]]
            self._arm(worker)
        elif kind == "result":
            assert worker.unit is not None
            _, k, i, data = message
            results[worker.unit][k][i] = Result.from_dict(data)
            worker.position = (k, i + 1) if i + 1 < len(self.specs) else (k + 1, 0)
            self._arm(worker)
        elif kind == "done":
            assert worker.unit is not None
            if progress is not None:
                progress.advance(note=units[worker.unit].describe())
            worker.unit, worker.metas, worker.deadline = None, None, None

    def _arm(self, worker: _Worker) -> None:
        """A deadline for the case the worker runs now; none once it is past its unit's last case
        (a deadline then would blame a case that has finished)."""
        past_last = worker.metas is not None and worker.position[0] >= len(worker.metas)
        worker.deadline = None if self.timeout is None or past_last else time.monotonic() + self.timeout

    def _lost(
        self,
        worker: _Worker,
        verdict: Verdict,
        text: str,
        results: list[list[list[Result | None]]],
        todo: deque[tuple[int, int, int]],
    ) -> None:
        """The worker's current case gets `verdict`; the worker is replaced and the unit resumes."""
        assert worker.unit is not None and worker.metas is not None
        k, i = worker.position
        meta = worker.metas[k]
        elapsed = self.timeout if verdict is Verdict.TIMEOUT and self.timeout is not None else 0.0
        results[worker.unit][k][i] = Result(
            id=meta["id"],
            cassette=meta["cassette"],
            scenario=meta["scenario"],
            seed=meta["seed"],
            dialect=meta["dialect"],
            accumulator=self.specs[i],
            verdict=verdict,
            expected=Outcome.from_dict(meta["expected"]),
            error=text,
            seconds=elapsed,
            case_class=CaseClass(meta["class"]),
            class_reason=meta["class_reason"],
        )
        nxt = (k, i + 1) if i + 1 < len(self.specs) else (k + 1, 0)
        todo.appendleft((worker.unit, *nxt))
        self._kill(worker)
        self.workers[self.workers.index(worker)] = self._start()
