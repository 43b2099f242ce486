"""The process pool: units of work run in worker processes, each case under a deadline.

Each worker resolves the accumulator specs itself and builds its cases from plain strings (a
`Selection` and the scenarios as data), so nothing but strings and plain data crosses a process
boundary. Work goes out a whole cassette at a time (its units in one message, so one worker
parses it) and results come back in batches; the case a worker runs now is in shared memory
(unit, case, accumulator, start time), so a deadline per case costs no message. A worker whose
case overruns the timeout is killed with its process group (so a `cmd:` accumulator it started
goes too) and replaced; the replacement redoes the units not yet reported, the lost case given
its verdict. Results are put back in unit order, so any number of workers gives the serial report.

The timeout bounds a worker's start too: each accumulator's `prepare` (a `cmd:` process's
warm-up) gets at most that long, so a replaced worker costs no more than a case may. A worker is
a child subreaper and dies with its parent (the forkserver, which ends with the harness): what
its accumulators start stays in its tree, which a kill ends whole (`subreaper.end_tree`).
"""

from __future__ import annotations

import contextlib
import inspect
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Container, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.accumulators import cwd_shadows_harness, resolve
from harness.accumulators.base import Accumulator, not_for
from harness.errors import HarnessError, UsageError
from harness.matrix.judging import judge
from harness.matrix.longlived import LongLived
from harness.matrix.selection import Matrix, Selection, Unit, rebuilt_scenarios
from harness.mutate.scenario import SEPARATOR
from harness.oracle.verdict import Result, Verdict, describe_error, unjudged
from harness.processes import subreaper
from harness.processes.capture import captured_output
from harness.text.terminal import Progress

if TYPE_CHECKING:
    from harness.mutate.case import Case

__all__ = ["Pool", "told_ahead"]

# Messages a worker sends: ("ready",), ("fatal", text), ("units", [(n, results), ...]), each
# result a `Result.to_record()`.
# The parent sends a batch, ([(n, unit's fields), ...], lost), or None to stop; `lost` maps a
# (unit, case, accumulator) position to the (verdict, error, seconds) it already has.
# Shared per worker: [unit, case, accumulator, start] of the case it runs (start 0: none; -1:
# building the unit's cases).
FLUSH_SECONDS = 0.25  # results of finished units go back at least this often
POLL_SECONDS = 0.05  # how often the parent looks at the running cases' start times
# Batches a worker holds at once: the next is in its pipe when it ends one, so it never waits for
# the parent to take its results and send more.
IN_FLIGHT = 2
# Cases built before the one run now, for accumulators that take them early (`told_ahead`).
AHEAD = 16


def _worker_main(
    conn: Connection,
    now: Any,
    selection: Selection,
    scenarios: list[dict[str, Any]],
    specs: Sequence[str],
    cwd: str,
    path: list[str],
    environment: dict[str, str],
    timeout: float | None = None,
) -> None:
    with contextlib.suppress(OSError):
        os.setpgid(0, 0)  # its own process group: killing it also ends a `cmd:` child it started
    subreaper.die_with_parent()  # the forkserver's end is the harness's: a hung case keeps no worker
    subreaper.become_subreaper()  # what an accumulator starts stays below the worker, for `end_tree`
    # The parent's directory, import path and environment as they are now: a worker forks from
    # the forkserver, which holds them as they were when the parent's first pool started it.
    os.chdir(cwd)
    sys.path[:] = path
    os.environ.clear()
    os.environ.update(environment)
    accumulators = []
    try:
        matrix = Matrix(selection, rebuilt_scenarios(scenarios))
        accumulators = [resolve(spec) for spec in specs]
        for acc in accumulators:
            with captured_output():  # what the warm-up prints is thrown away with its outcome
                prepare(acc, timeout)  # imports and process start-up before the first case's clock
    except Exception as exc:
        conn.send(("fatal", describe_error(exc)))
        return
    conn.send(("ready",))
    kept = LongLived()  # a worker ends with its run: never thawed
    try:
        while True:
            task = conn.recv()
            if task is None:
                break
            batch, lost = task
            done: list[tuple[int, list[list[tuple[Any, ...]]]]] = []
            shared: dict[int, Any] = {}  # for the message `done` becomes (`Result.to_record`)
            flushed = time.monotonic()

            def built(batch: list[tuple[int, Any]]) -> Iterator[tuple[int, list[Case]]]:
                for n, fields in batch:
                    unit = tuple.__new__(Unit, fields)
                    now[3] = -1.0  # building: a death now is the harness's, not a case's
                    now[0], now[1], now[2] = n, 0, 0
                    try:
                        cases = matrix.cases(unit)
                    except Exception as exc:
                        raise _BuildFailed(f"{unit.describe()}: {describe_error(exc)}") from None
                    if cases:
                        kept.keep()
                    yield n, cases

            # A lost case has its verdict: it is not run again, so not announced either.
            for n, cases in told_ahead(built(batch), accumulators, skipped=lost):
                per_case = []
                for k, case in enumerate(cases):
                    scenario = matrix.by_name.get(case.scenario)
                    row = []
                    for i, (acc, spec) in enumerate(zip(accumulators, specs, strict=True)):
                        known = lost.get((n, k, i))
                        if known is not None:
                            row.append(_lost_result(case, scenario, spec, *known).to_record(shared))
                            continue
                        now[3] = 0.0
                        now[0], now[1], now[2] = n, k, i
                        now[3] = time.monotonic()
                        row.append(judge(acc, spec, case, scenario).to_record(shared))
                        now[3] = 0.0
                    per_case.append(row)
                done.append((n, per_case))
                if time.monotonic() - flushed >= FLUSH_SECONDS:
                    conn.send(("units", done))
                    done, shared, flushed = [], {}, time.monotonic()
            now[3] = 0.0
            conn.send(("units", done))  # the batch's last: the parent may send the next one
    except _BuildFailed as exc:
        conn.send(("fatal", str(exc)))
    except (EOFError, BrokenPipeError, KeyboardInterrupt):
        pass
    finally:
        with contextlib.suppress(Exception):
            matrix.flush()  # the cases this worker built, for the next run (it exits without finalizers)
        for acc in accumulators:
            with contextlib.suppress(Exception):
                acc.shutdown()


class _BuildFailed(Exception):
    """A unit's cases could not be built (the harness's error, said by the worker as fatal)."""


def told_ahead(
    built: Iterable[tuple[int, list[Case]]],
    accumulators: Sequence[Accumulator],
    *,
    skipped: Container[tuple[int, int, int]] = (),
) -> Iterator[tuple[int, list[Case]]]:
    """`built` (each unit's number and cases, in order), each unit given once `AHEAD` cases after
    it are built, every accumulator with `upcoming` told of each unit's cases as they are built:
    one that can start on cases early (a `cmd:` process, pipelined) always has the next ones.
    `skipped` holds the (unit, case, accumulator) positions that will not be run (a case
    announced must be run). Accumulators without `upcoming` cost nothing here."""
    found = [(i, acc, getattr(acc, "upcoming", None)) for i, acc in enumerate(accumulators)]
    tellers = [(i, acc, tell) for i, acc, tell in found if callable(tell)]
    if not tellers:
        yield from built
        return
    held: deque[tuple[int, list[Case]]] = deque()
    count = 0  # cases held
    for n, cases in built:
        for i, acc, tell in tellers:
            # Nor a case `judge` skips without running it (a dialect the accumulator does not read).
            runs = [c for k, c in enumerate(cases) if (n, k, i) not in skipped]
            tell([c for c in runs if not_for(acc, "", c.dialect) is None])
        held.append((n, cases))
        count += len(cases)
        while count - len(held[0][1]) >= AHEAD:
            count -= len(held[0][1])
            yield held.popleft()
    yield from held


def prepare(acc: Accumulator, timeout: float | None) -> None:
    """`acc.prepare`, for at most `timeout` seconds (None: as long as it takes). Our accumulators
    keep to the limit they are given; another's `prepare` (or one that takes no limit) that runs
    over it is left running in a thread, and the cases go on (their deadlines hold). Raises what
    `prepare` raised in time."""
    if timeout is None:
        acc.prepare()
        return
    method = acc.prepare
    try:
        inspect.signature(method).bind(timeout=timeout)
        limited = True
    except (TypeError, ValueError):
        limited = False
    raised: list[BaseException] = []

    def call() -> None:
        try:
            method(timeout=timeout) if limited else method()
        except BaseException as exc:  # handed to the worker's thread, which reports it
            raised.append(exc)

    thread = threading.Thread(target=call, name="toolstream-prepare", daemon=True)
    thread.start()
    thread.join(timeout)
    if raised:
        raise raised[0]


def _lost_result(case: Any, scenario: Any, spec: str, verdict: str, error: str, seconds: float) -> Result:
    """The verdict of a case whose worker hung or died on it, with what the case says of itself."""
    return replace(unjudged(case, spec, scenario), verdict=Verdict(verdict), error=error, seconds=seconds)


@dataclass
class _Worker:
    process: Any
    conn: Connection
    now: Any  # shared [unit, case, accumulator, start]
    ready: bool = False
    batch: list[int] = field(default_factory=list)  # the units it has and has not reported yet
    ends: deque[int] = field(default_factory=deque)  # the last unit of each batch it holds


def _cassette_of(unit: Unit) -> str:
    if unit.cassette is not None:
        return unit.cassette
    return (unit.case_id or "").split(SEPARATOR)[0].partition("#")[0]


def batches(units: Sequence[Unit]) -> list[list[int]]:
    """Unit indices grouped by cassette file (one worker parses a cassette), the costliest first
    so that the last batches to finish are short (cost: units x file size)."""
    groups: dict[str, list[int]] = {}
    for n, unit in enumerate(units):
        groups.setdefault(_cassette_of(unit), []).append(n)

    def cost(item: tuple[str, list[int]]) -> float:
        name, members = item
        try:
            size = Path(name).stat().st_size
        except OSError:
            size = 1
        return -len(members) * size

    return [members for _, members in sorted(groups.items(), key=cost)]


def start_server() -> Any:
    """The context workers start from; where there is a forkserver, it is started now (not at the
    first worker, which waits for it): it gets ready while the caller reads its selection. Raises
    `UsageError` when workers could not import the main module (`check_main_importable`)."""
    check_main_importable()
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")
    if context.get_start_method() == "forkserver":
        # Workers fork from a server that has already imported the harness, its built-in
        # mutations and dialects and the reference, and read the registries (`pool_preload`):
        # fast (re)starts.
        context.set_forkserver_preload([__name__, "harness.matrix.pool_preload"])
        with contextlib.suppress(Exception):  # the first worker meets what fails here, and says it
            from multiprocessing import forkserver

            # The server starts as `python -c`, the working directory first on its path: where that
            # holds another copy of the harness (a checkout beside an installed wheel), workers
            # would run that copy (naming the parent's cassettes by other names); Python's
            # PYTHONSAFEPATH leaves the directory out.
            shadowed = cwd_shadows_harness() and "PYTHONSAFEPATH" not in os.environ
            if shadowed:
                os.environ["PYTHONSAFEPATH"] = "1"
            try:
                forkserver.ensure_running()
            finally:
                if shadowed:
                    del os.environ["PYTHONSAFEPATH"]
    return context


# Why a worker dies before its first message, most of the time: multiprocessing starts each one by
# importing the caller's main module, and a script without the guard starts the run again there.
_GUARD_HINT = (
    "; a script that runs cases in worker processes (jobs above 1, or a timeout) needs its run under"
    ' `if __name__ == "__main__":`, since each worker imports the main module'
)


def check_main_importable() -> None:
    """Workers import the caller's main module (multiprocessing does, by its file when it was run
    as one): a script read from stdin (`python - <<EOF`) has no file to import, and every worker
    would die at its start. Said before any starts."""
    from multiprocessing import process

    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    if path is None or getattr(main, "__spec__", None) is not None:
        return  # a prompt or `python -c` (nothing imported), or a module run by name
    # Relative to where the process started, as multiprocessing resolves it.
    if not os.path.isfile(os.path.join(getattr(process, "ORIGINAL_DIR", None) or "", path)):
        raise UsageError(
            f"cases run in worker processes (jobs above 1, or a timeout), which import the main module"
            f" from its file, and this one has none ({path}): run the script from a file, or with"
            " jobs=1 and no timeout"
        )


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
        self.context = start_server()
        self.workers: list[_Worker] = []
        # Positions whose worker hung or died on them, with the verdict they got.
        self.lost: dict[tuple[int, int, int], tuple[str, str, float]] = {}

    def _start(self) -> _Worker:
        ours, theirs = self.context.Pipe()
        now = self.context.Array("d", 4, lock=False)
        args = (
            theirs,
            now,
            self.selection,
            self.scenarios,
            self.specs,
            os.getcwd(),
            list(sys.path),
            dict(os.environ),
            self.timeout,
        )
        process = self.context.Process(target=_worker_main, args=args, daemon=True)
        process.start()
        theirs.close()
        return _Worker(process, ours, now)

    def _kill(self, worker: _Worker) -> None:
        # The worker is a subreaper: all its accumulators started (a `client:` program's setsid
        # or double-forked grandchildren too) is still below it, frozen and killed with it.
        subreaper.end_tree(worker.process.pid)
        with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
            os.killpg(worker.process.pid, signal.SIGKILL)
        with contextlib.suppress(Exception):
            worker.process.kill()
        worker.process.join(5)
        worker.conn.close()

    def start(self, count: int) -> None:
        """Start workers up to `count` now, to get ready while the caller lists its units (`run`
        starts any still missing; one with no batch to do stops at the end). `close` stops them."""
        while len(self.workers) < min(count, self.jobs):
            self.workers.append(self._start())

    def run(self, units: Sequence[Unit], progress: Progress | None) -> list[list[list[Result]]]:
        results: list[list[list[Result]] | None] = [None] * len(units)
        todo: deque[list[int]] = deque(batches(units))
        kept = LongLived()
        try:
            self.start(max(len(todo), 1))
            while todo or any(w.batch for w in self.workers):
                for worker in self.workers:
                    while worker.ready and len(worker.ends) < IN_FLIGHT and todo:
                        batch = todo.popleft()
                        worker.batch += batch
                        worker.ends.append(batch[-1])
                        mine = set(batch)
                        lost = {p: v for p, v in self.lost.items() if p[0] in mine}
                        # Units as plain tuples: a named tuple pickles through its class (8x the cost).
                        worker.conn.send(([(n, tuple(units[n])) for n in batch], lost))
                busy = [w for w in self.workers if w.batch]
                wait_for = POLL_SECONDS if self.timeout is not None and busy else None
                for conn in wait([w.conn for w in self.workers], wait_for):
                    worker = next(w for w in self.workers if w.conn is conn)
                    self._receive(worker, units, results, todo, progress)
                    kept.keep()  # the results decoded
                if self.timeout is not None:
                    now = time.monotonic()
                    for worker in list(self.workers):
                        position, start = _running(worker)
                        if position is not None and start > 0 and now - start >= self.timeout:
                            text = f"no outcome within {self.timeout:g} s"
                            self._lost(worker, position, Verdict.TIMEOUT, text, self.timeout, todo)
        finally:
            kept.close()
            self.close()
        return [r or [] for r in results]

    def close(self) -> None:
        """Stop the workers (each ends when told to, or is killed a second later)."""
        for worker in self.workers:
            with contextlib.suppress(Exception):
                worker.conn.send(None)
        for worker in self.workers:
            worker.process.join(1)
            if worker.process.is_alive():
                self._kill(worker)
        self.workers = []

    def _receive(
        self,
        worker: _Worker,
        units: Sequence[Unit],
        results: list[list[list[Result]] | None],
        todo: deque[list[int]],
        progress: Progress | None,
    ) -> None:
        try:
            message = worker.conn.recv()
        except (EOFError, OSError):
            worker.process.join(1)
            code = worker.process.exitcode
            if not worker.ready:
                text = f"a worker process died while starting (exit code {code})"
                raise HarnessError(text + _GUARD_HINT) from None
            position, start = _running(worker)
            if position is None or start < 0:
                where = f" while building {units[position[0]].describe()}" if position is not None else ""
                raise HarnessError(f"a worker process died{where} (exit code {code})") from None
            text = f"the accumulator's process died (exit code {code})"
            self._lost(worker, position, Verdict.ERROR, text, 0.0, todo)
            return
        kind = message[0]
        if kind == "ready":
            worker.ready = True
        elif kind == "fatal":
            raise HarnessError(message[1])
        elif kind == "units":
            shared: dict[int, Any] = {}  # records several results of this message hold
            for n, per_case in message[1]:
                results[n] = [[Result.from_record(data, shared) for data in row] for row in per_case]
                worker.batch.remove(n)
                if worker.ends and worker.ends[0] == n:
                    worker.ends.popleft()  # its batch is done
                if progress is not None:
                    progress.advance(note=units[n].describe())

    def _lost(
        self,
        worker: _Worker,
        position: tuple[int, int, int],
        verdict: Verdict,
        text: str,
        seconds: float,
        todo: deque[list[int]],
    ) -> None:
        """The worker's current case gets `verdict`; the worker is replaced and the units it had
        not reported go back to the front of the queue (the lost case keeps its verdict)."""
        self.lost[position] = (str(verdict), text, seconds)
        if worker.batch:
            todo.appendleft(list(worker.batch))
        worker.batch = []
        worker.ends.clear()
        self._kill(worker)
        self.workers[self.workers.index(worker)] = self._start()


def _running(worker: _Worker) -> tuple[tuple[int, int, int] | None, float]:
    """The (unit, case, accumulator) a worker is at and when its case started (0: between cases,
    -1: building a unit's cases); read twice so a position being written is not taken half-done."""
    if not worker.batch:
        return None, 0.0
    for _ in range(3):
        start = worker.now[3]
        position = (int(worker.now[0]), int(worker.now[1]), int(worker.now[2]))
        if worker.now[3] == start:
            return position, start
    return (int(worker.now[0]), int(worker.now[1]), int(worker.now[2])), float(worker.now[3])
