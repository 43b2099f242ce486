"""The matrix runner: every case of a selection through one or more accumulators, each case judged.

Containment: whatever an accumulator does to one case, the run goes on. Without a timeout and
with one job, cases run in this process and an exception is the case's verdict; with a per-case
timeout or several jobs they run in worker processes (`harness.matrix.pool`), where a hang or a
dead process is the case's verdict too. Trusted accumulators (the built-ins: they neither hang
nor kill their process) run in this process unless a number of jobs is asked for, and so do
`cmd:` processes, which contain themselves (`Stdio` gives each case the timeout and replaces a
process that hangs or dies; a worker would only add its start and a hop). Work is split
into units (one cassette x scenario x seed, `harness.matrix.selection`) and results are put back
in unit order, so `jobs=N` gives the same report as a serial run.
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, overload

from harness.accumulators import builtin_names, prepare, resolve
from harness.errors import InternalError, UsageError
from harness.matrix.judging import judge
from harness.matrix.longlived import LongLived
from harness.matrix.pool import Pool, start_server, told_ahead
from harness.matrix.selection import Matrix, Selection, Unit
from harness.mutate.scenario import MAX_SEEDS
from harness.oracle.verdict import Report, Result
from harness.text.terminal import Progress

if TYPE_CHECKING:
    from harness.accumulators.base import Accumulator
    from harness.mutate.case import Case

__all__ = ["contains_itself", "run_matrix", "trusted"]


def trusted(spec: str) -> bool:
    """Whether a spec names one of our own in-process accumulators (the reference, a built-in
    adapter), which runs without a worker process unless jobs are asked for."""
    return spec.strip() in builtin_names()


def contains_itself(spec: str) -> bool:
    """Whether a spec is a `cmd:` (or `cmd-bytes:`) process, whose `Stdio` keeps each case's
    deadline and replaces a process that hangs or dies: run in this process, it needs no worker."""
    return spec.strip().startswith(("cmd:", "cmd-bytes:"))


@overload
def run_matrix(
    specs: str,
    selection: Selection | None = None,
    *,
    timeout: float | None = None,
    jobs: int | None = None,
    progress: Progress | None = None,
) -> Report: ...


@overload
def run_matrix(
    specs: list[str] | tuple[str, ...],
    selection: Selection | None = None,
    *,
    timeout: float | None = None,
    jobs: int | None = None,
    progress: Progress | None = None,
) -> list[Report]: ...


def run_matrix(
    specs: str | Sequence[str],
    selection: Selection | None = None,
    *,
    timeout: float | None = None,
    jobs: int | None = None,
    progress: Progress | None = None,
) -> Report | list[Report]:
    """Every selected case (default: the bundled matrix) through one accumulator spec (a
    `Report`) or each of several (a list of reports, one per spec; a case runs on all in turn).

    With a timeout or `jobs > 1` the cases run in worker processes: a script calling this needs
    the usual `if __name__ == "__main__":` guard (the workers import the main module). `jobs`
    None: trusted accumulators (`trusted`) and `cmd:` processes (`contains_itself`, given the
    timeout) run in this process, others as with `jobs=1`."""
    many = [specs] if isinstance(specs, str) else list(specs)
    if not many:
        raise UsageError("no accumulator given")
    if jobs is not None and jobs < 1:
        raise UsageError(f"jobs: must be at least 1, not {jobs}")
    if timeout is not None and math.isnan(timeout):
        raise UsageError("timeout: must be a number of seconds, not nan")
    if timeout is not None and (timeout <= 0 or math.isinf(timeout)):
        timeout = None
    selection = selection or Selection()
    if selection.seeds is not None and not 1 <= selection.seeds <= MAX_SEEDS:
        raise UsageError(f"seeds: must be from 1 to {MAX_SEEDS}, not {selection.seeds}")
    start = time.perf_counter()
    deadline = None  # the timeout a `cmd:` process keeps itself, run in this process
    if jobs is None:
        jobs = 1
        if all(trusted(spec) or contains_itself(spec) for spec in many):
            # A built-in neither hangs nor dies, and a `cmd:` process is killed at its case's
            # deadline by `Stdio` itself: no worker to guard against either.
            deadline, timeout = timeout, None
    pooled = jobs > 1 or timeout is not None
    if pooled:
        start_server()  # ready while the selection is read
    early: list[_Warming | None] = []
    pool = None
    try:
        for spec in many:  # `cmd:` processes start, and warm up, while the selection is read
            early.append(_Warming(spec, deadline) if contains_itself(spec) and not pooled else None)
        matrix = Matrix(selection)
        pool = Pool(selection.absolute(), matrix.scenario_data(), many, timeout, jobs) if pooled else None
        if pool is not None and not selection.cases:
            pool.start(len(matrix.cassette_files()))  # a batch is a cassette file's units
        units = matrix.units()
        if progress is not None:
            progress.start(len(units))
        if pool is None:
            per_unit = _run_in_process(matrix, many, units, progress, early)
        else:
            per_unit = pool.run(units, progress)
    finally:
        if pool is not None:
            pool.close()
        for warming in early:
            if warming is not None:
                warming.acc.shutdown()  # ended already, unless the selection could not be read
    reports = [Report(spec, seconds=time.perf_counter() - start) for spec in many]
    rows = [per_spec for unit_results in per_unit for per_spec in unit_results if per_spec]
    ids = [per_spec[0].id for per_spec in rows]
    if len(set(ids)) < len(ids):  # a case id appears once: the first unit that made it keeps it
        first: dict[str, int] = {}
        for n, case_id in enumerate(ids):
            first.setdefault(case_id, n)
        rows = [rows[n] for n in first.values()]
    if any(len(per_spec) != len(many) for per_spec in rows):
        raise InternalError("a case without one result per accumulator")
    for k, report in enumerate(reports):
        report.results = [per_spec[k] for per_spec in rows]
    return reports[0] if isinstance(specs, str) else reports


class _Warming:
    """A `cmd:` accumulator whose process starts and answers its warm-up in a thread of its own
    while the selection is read: its start is a Python start-up of its own, run beside ours.
    `deadline` (None: its default) is each case's timeout, which `Stdio` keeps."""

    def __init__(self, spec: str, deadline: float | None) -> None:
        from harness.accumulators.stdio_process import Stdio

        acc = resolve(spec)
        assert isinstance(acc, Stdio)
        if deadline is not None:
            acc.timeout = deadline  # each case's, and the warm-up's
        self.acc = acc
        # `Stdio.prepare` prints nothing (the process's output comes through pipes) and does not
        # raise for the process's misbehaviour: run bare, it captures no file descriptor of ours.
        self.thread = threading.Thread(target=acc.prepare, name="toolstream-warm-up", daemon=True)
        self.thread.start()

    def ready(self) -> Accumulator:
        self.thread.join()
        return self.acc


def _run_in_process(
    matrix: Matrix,
    specs: Sequence[str],
    units: Sequence[Unit],
    progress: Progress | None,
    early: Sequence[_Warming | None],
) -> list[list[list[Result]]]:
    pairs = zip(specs, early, strict=True)
    accumulators = [resolve(spec) if warming is None else warming.ready() for spec, warming in pairs]
    for acc, spec, warming in zip(accumulators, specs, early, strict=True):
        if warming is None:
            prepare(acc, spec)  # off the clock: what a case's `seconds` counts is the accumulator's own work
    kept = LongLived()

    def built() -> Iterator[tuple[int, list[Case]]]:
        for n, unit in enumerate(units):
            cases = matrix.cases(unit)
            if cases:  # most units of a full matrix have none (the scenario does not fit)
                kept.keep()
            yield n, cases

    try:
        out: list[list[list[Result]]] = []
        for n, cases in told_ahead(built(), accumulators):
            out.append(
                [
                    [
                        judge(acc, spec, case, matrix.by_name.get(case.scenario))
                        for acc, spec in zip(accumulators, specs, strict=True)
                    ]
                    for case in cases
                ]
            )
            del cases
            if progress is not None:
                progress.advance(note=units[n].describe())
        return out
    finally:
        matrix.flush()  # the cases built here, for the next run
        kept.close()
        for acc in accumulators:
            with contextlib.suppress(Exception):
                acc.shutdown()
