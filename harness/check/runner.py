"""The matrix runner: every case of a selection through an accumulator, each given a verdict.

A verdict is `pass` (the outcome meets the case's expectation, per `harness.check.outcome.diff`),
`fail` (with the diff), `error` (the accumulator raised, printed garbage or its process died),
`timeout` or `skipped` (the accumulator says the case is not for it).

Containment: whatever an accumulator does to one case, the run goes on. With a per-case timeout
or several jobs, cases run in worker processes (`forkserver`, else `spawn`); each worker resolves
the accumulator spec itself and builds its cases from plain strings (cassette path, scenario
name, seed, or a case id), so nothing but strings and plain data crosses a process boundary. A
worker whose case overruns the timeout is killed with its process group (so a `cmd:`
accumulator it started goes too) and replaced; the replacement resumes after that case. Work is
split into units (one cassette x scenario x seed) and results are put back in unit order, so
`jobs=N` gives the same report as a serial run.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import sys
import time
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

from harness.cassettes.corpus import bundled, cassette_paths
from harness.cassettes.format import Chunk, save
from harness.check.accumulators import Accumulator, resolve
from harness.check.outcome import Outcome, diff
from harness.errors import AccumulatorTimeout, HarnessError, NotApplicable, ScenarioError, UsageError
from harness.mutate.scenario import (
    SEPARATOR,
    Case,
    Scenario,
    build_case,
    case_cassette,
    cases_for,
    find_scenario,
    iter_cases,
    load_scenarios,
    recordings,
    scenario_from_data,
)
from harness.report.terminal import Progress
from harness.wire import dialects
from harness.wire.dialects import Event

__all__ = [
    "FAILING",
    "ORIGINAL",
    "Comparison",
    "Difference",
    "Report",
    "Result",
    "Selection",
    "Verdict",
    "build_selected_case",
    "case_with_events",
    "compare_matrix",
    "judge",
    "resolve_accumulator",
    "run_matrices",
    "run_matrix",
    "shrink_difference",
    "write_reproductions",
]


class Verdict(StrEnum):
    PASS = "pass"
    FAIL = "fail"
    ERROR = "error"
    TIMEOUT = "timeout"
    SKIPPED = "skipped"


# Verdicts that make a run fail; a skipped case does not.
FAILING = frozenset({Verdict.FAIL, Verdict.ERROR, Verdict.TIMEOUT})

# The recorded stream itself, unmutated: a scenario with no steps (the scenario files need one).
ORIGINAL = Scenario(name="original", description="The recorded stream, unmutated.", steps=())


@dataclass(frozen=True)
class Result:
    """One case through one accumulator."""

    id: str
    cassette: str
    scenario: str
    seed: int
    dialect: str
    accumulator: str
    verdict: Verdict
    expected: Outcome
    actual: Outcome | None = None
    diff: tuple[str, ...] = ()
    error: str | None = None
    seconds: float = 0.0

    @property
    def failed(self) -> bool:
        return self.verdict in FAILING

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "cassette": self.cassette,
            "scenario": self.scenario,
            "seed": self.seed,
            "dialect": self.dialect,
            "accumulator": self.accumulator,
            "verdict": str(self.verdict),
            "expected": self.expected.to_dict(),
            "actual": None if self.actual is None else self.actual.to_dict(),
            "diff": list(self.diff),
            "error": self.error,
            "seconds": round(self.seconds, 6),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Result:
        actual = data.get("actual")
        return cls(
            id=data["id"],
            cassette=data["cassette"],
            scenario=data["scenario"],
            seed=int(data["seed"]),
            dialect=data["dialect"],
            accumulator=data["accumulator"],
            verdict=Verdict(data["verdict"]),
            expected=Outcome.from_dict(data["expected"]),
            actual=None if actual is None else Outcome.from_dict(actual),
            diff=tuple(data.get("diff", ())),
            error=data.get("error"),
            seconds=float(data.get("seconds", 0.0)),
        )


@dataclass
class Report:
    """Every case of a run, in a fixed order, and how long the run took."""

    accumulator: str
    results: list[Result] = field(default_factory=list)
    seconds: float = 0.0

    def count(self, verdict: Verdict) -> int:
        return sum(1 for r in self.results if r.verdict is verdict)

    @property
    def ok(self) -> bool:
        """True when no case failed, errored or timed out."""
        return not any(r.failed for r in self.results)

    @property
    def failures(self) -> list[Result]:
        return [r for r in self.results if r.failed]

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {"accumulator": self.accumulator, "total": len(self.results)}
        out.update({str(v): self.count(v) for v in Verdict})
        out["ok"] = self.ok
        out["seconds"] = round(self.seconds, 3)
        return out


@dataclass(frozen=True)
class Selection:
    """Which cases to run, as plain strings (it is sent to worker processes as is).

    `cassettes`: files or folders (empty: the bundled corpus). `scenarios`: names or files
    (empty: every scenario of `scenarios_dir`, default the shipped library, plus `original`).
    `seeds`: run seeds 0..N-1 instead of each scenario's own. `cases`: exactly these case ids.
    """

    cassettes: tuple[str, ...] = ()
    scenarios: tuple[str, ...] = ()
    scenarios_dir: str | None = None
    dialects: tuple[str, ...] = ()
    seeds: int | None = None
    cases: tuple[str, ...] = ()

    def absolute(self) -> Selection:
        """The same selection with paths made absolute (workers may start elsewhere)."""

        def fix(item: str) -> str:
            return str(Path(item).resolve()) if Path(item).exists() else item

        return replace(
            self,
            cassettes=tuple(fix(c) for c in self.cassettes),
            scenarios=tuple(fix(s) for s in self.scenarios),
            scenarios_dir=None if self.scenarios_dir is None else fix(self.scenarios_dir),
        )

    def replay_options(self) -> list[str]:
        """The command-line options that rebuild this selection's cases (for replay commands)."""
        out: list[str] = []
        for item in self.cassettes:
            out += ["--cassettes", item]
        if self.scenarios_dir is not None:
            out += ["--scenarios-dir", self.scenarios_dir]
        files = [s for s in self.scenarios if Path(s).suffix in (".yaml", ".yml")]
        if files:
            out += ["--scenarios", *files]
        return out


# ---------------------------------------------------------------------------------------------
# Accumulators and verdicts


def resolve_accumulator(spec: str) -> Accumulator:
    """The accumulator a spec names (`reference`, `openai-sdk`, `module:attr`, `cmd:...`)."""
    return resolve(spec)


def judge(accumulator: Accumulator, spec: str, case: Case) -> Result:
    """Run one case and give it a verdict; whatever the accumulator raises becomes the verdict."""
    base = _blank(case, spec)
    start = time.perf_counter()
    try:
        actual = accumulator.run(case)
    except NotApplicable as exc:
        return replace(
            base, verdict=Verdict.SKIPPED, error=str(exc) or None, seconds=time.perf_counter() - start
        )
    except (AccumulatorTimeout, TimeoutError) as exc:
        return replace(
            base, verdict=Verdict.TIMEOUT, error=_describe(exc), seconds=time.perf_counter() - start
        )
    except (Exception, SystemExit) as exc:  # containment: any failure of theirs is this case's verdict
        return replace(base, verdict=Verdict.ERROR, error=_describe(exc), seconds=time.perf_counter() - start)
    seconds = time.perf_counter() - start
    if not isinstance(actual, Outcome):
        return replace(base, verdict=Verdict.ERROR, error=f"returned {type(actual).__name__}, not an Outcome")
    lines = tuple(diff(case.expected, actual))
    verdict = Verdict.FAIL if lines else Verdict.PASS
    return replace(base, verdict=verdict, actual=actual, diff=lines, seconds=seconds)


def _blank(case: Case, spec: str) -> Result:
    return Result(
        case.id, case.cassette, case.scenario, case.seed, case.dialect, spec, Verdict.ERROR, case.expected
    )


def _describe(exc: BaseException) -> str:
    text = str(exc).strip()
    if isinstance(exc, HarnessError) and text:
        return text
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


# ---------------------------------------------------------------------------------------------
# Units of work and the cases they hold


@dataclass(frozen=True)
class _Unit:
    """One cassette file x scenario x seed, or one case id; plain strings only."""

    cassette: str | None = None
    scenario: str | None = None
    seed: int | None = None
    case_id: str | None = None

    def describe(self) -> str:
        return self.case_id or f"{self.cassette} x {self.scenario} s{self.seed}"


class _Matrix:
    """What a process knows about a selection: its scenarios, cassettes, and how to build cases."""

    def __init__(self, selection: Selection, scenarios: Sequence[Mapping[str, Any]] | None = None) -> None:
        self.selection = selection
        self.roots = [Path(p) for p in selection.cassettes] or [bundled("cassettes")]
        # A worker is handed the parent's scenarios as plain data: no YAML to parse again.
        self.scenarios = _selected_scenarios(selection) if scenarios is None else _rebuilt(scenarios)
        self.by_name = {s.name: s for s in self.scenarios}
        self._sources: dict[str, list[Any]] = {}
        self._originals: dict[str, Case] | None = None

    def units(self) -> list[_Unit]:
        if self.selection.cases:
            return [_Unit(case_id=c) for c in self.selection.cases]
        out: list[_Unit] = []
        for path in cassette_paths(self.roots):
            for scenario in self.scenarios:
                seeds = range(self.selection.seeds) if self.selection.seeds is not None else scenario.seeds
                out.extend(_Unit(str(path), scenario.name, seed) for seed in seeds)
        return out

    def cases(self, unit: _Unit) -> list[Case]:
        if unit.case_id is not None:
            return [self.case(unit.case_id)]
        assert unit.cassette is not None and unit.scenario is not None and unit.seed is not None
        if unit.cassette not in self._sources:
            self._sources[unit.cassette] = recordings(Path(unit.cassette), self.roots)
        scenario = self.by_name[unit.scenario]
        out: list[Case] = []
        for source in self._sources[unit.cassette]:
            if self.selection.dialects and source.dialect.name not in self.selection.dialects:
                continue
            out.extend(cases_for(source, scenario, unit.seed))
        return out

    def case(self, case_id: str) -> Case:
        """The case an id names, rebuilt from the cassettes and scenarios of this selection."""
        parts = case_id.split(SEPARATOR)
        if len(parts) >= 3 and parts[1] == ORIGINAL.name and self.by_name.get(ORIGINAL.name) is ORIGINAL:
            if self._originals is None:
                self._originals = {c.id: c for c in iter_cases(self.roots, [ORIGINAL], None)}
            if case_id not in self._originals:
                raise ScenarioError(f"case id {case_id!r}: no such unmutated case in the selected cassettes")
            return self._originals[case_id]
        scenario = self.by_name.get(parts[1]) if len(parts) >= 3 else None
        files = [str(scenario.path)] if scenario is not None and scenario.path is not None else None
        if files is None and self.selection.scenarios_dir is not None:
            files = [self.selection.scenarios_dir]
        return build_case(case_id, cassettes=self.roots, scenarios=files)


def _selected_scenarios(selection: Selection) -> list[Scenario]:
    library = load_scenarios([selection.scenarios_dir] if selection.scenarios_dir else None)
    if not selection.scenarios:
        has_original = any(s.name == ORIGINAL.name for s in library)
        return library if has_original else [ORIGINAL, *library]
    out: list[Scenario] = []
    for item in selection.scenarios:
        if item == ORIGINAL.name and not any(s.name == item for s in library):
            out.append(ORIGINAL)
        elif Path(item).suffix in (".yaml", ".yml") or Path(item).is_dir():
            out.extend(load_scenarios([item]))
        else:
            out.append(find_scenario(item, library))
    return out


def _scenario_data(scenario: Scenario) -> dict[str, Any]:
    return {"data": scenario.to_data(), "path": None if scenario.path is None else str(scenario.path)}


def _rebuilt(items: Sequence[Mapping[str, Any]]) -> list[Scenario]:
    out = []
    for item in items:
        path = None if item["path"] is None else Path(item["path"])
        data = item["data"]
        if data["name"] == ORIGINAL.name and not data["steps"]:
            out.append(ORIGINAL)
        else:
            out.append(scenario_from_data(data, where=str(path or data["name"]), path=path))
    return out


def build_selected_case(case_id: str, selection: Selection | None = None) -> Case:
    """The case an id names (also `cassette::original::s0`), from a selection's cassettes."""
    return _Matrix(selection or Selection()).case(case_id)


# ---------------------------------------------------------------------------------------------
# Running


def run_matrix(
    accumulator_spec: str,
    *,
    cassettes: Iterable[str | Path] | None = None,
    scenarios: Iterable[str | Path] | None = None,
    scenarios_dir: str | Path | None = None,
    dialects: Iterable[str] | None = None,
    seeds: int | None = None,
    cases: Iterable[str] | None = None,
    timeout: float | None = None,
    jobs: int = 1,
    progress: Progress | None = None,
) -> Report:
    """Every selected case through one accumulator; see the module docstring for containment.

    With a timeout or `jobs > 1` the cases run in worker processes: a script calling this needs
    the usual `if __name__ == "__main__":` guard (the workers import the main module)."""
    selection = Selection(
        cassettes=tuple(str(c) for c in cassettes or ()),
        scenarios=tuple(str(s) for s in scenarios or ()),
        scenarios_dir=None if scenarios_dir is None else str(scenarios_dir),
        dialects=tuple(dialects or ()),
        seeds=seeds,
        cases=tuple(cases or ()),
    )
    return run_matrices([accumulator_spec], selection, timeout=timeout, jobs=jobs, progress=progress)[0]


def run_matrices(
    specs: Sequence[str],
    selection: Selection,
    *,
    timeout: float | None = None,
    jobs: int = 1,
    progress: Progress | None = None,
) -> list[Report]:
    """Every selected case through each accumulator (a case runs on all of them in turn)."""
    if not specs:
        raise UsageError("no accumulator given")
    if jobs < 1:
        raise UsageError(f"jobs: must be at least 1, not {jobs}")
    if timeout is not None and timeout <= 0:
        timeout = None
    for name in selection.dialects:
        dialects.get(name)  # an unknown dialect is a usage error, before any work
    start = time.perf_counter()
    matrix = _Matrix(selection)
    units = matrix.units()
    if progress is not None:
        progress.total = max(len(units), 1)
    if jobs == 1 and timeout is None:
        per_unit = _run_in_process(matrix, specs, units, progress)
    else:
        scenarios = [_scenario_data(s) for s in matrix.scenarios]
        pool = _Pool(selection.absolute(), scenarios, specs, timeout, min(jobs, max(len(units), 1)))
        per_unit = pool.run(units, progress)
    seconds = time.perf_counter() - start
    reports = [Report(spec, seconds=seconds) for spec in specs]
    for unit_results in per_unit:
        for per_spec in unit_results:
            for report, result in zip(reports, per_spec, strict=True):
                report.results.append(result)
    return reports


def _run_in_process(
    matrix: _Matrix, specs: Sequence[str], units: Sequence[_Unit], progress: Progress | None
) -> list[list[list[Result]]]:
    accumulators = [resolve_accumulator(spec) for spec in specs]
    try:
        out: list[list[list[Result]]] = []
        for unit in units:
            out.append(
                [
                    [judge(acc, spec, case) for acc, spec in zip(accumulators, specs, strict=True)]
                    for case in matrix.cases(unit)
                ]
            )
            if progress is not None:
                progress.advance(note=unit.describe())
        return out
    finally:
        for acc in accumulators:
            with contextlib.suppress(Exception):
                acc.shutdown()


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
        matrix = _Matrix(selection, scenarios)
        accumulators = [resolve_accumulator(spec) for spec in specs]
    except Exception as exc:
        conn.send(("fatal", _describe(exc)))
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
                conn.send(("fatal", f"{unit.describe()}: {_describe(exc)}"))
                return
            conn.send(("cases", [_meta(case) for case in cases]))
            for k, case in enumerate(cases):
                for i, (acc, spec) in enumerate(zip(accumulators, specs, strict=True)):
                    if (k, i) >= (k0, i0):
                        conn.send(("result", k, i, judge(acc, spec, case).to_dict()))
            conn.send(("done",))
    except (EOFError, BrokenPipeError, KeyboardInterrupt):
        pass
    finally:
        for acc in accumulators:
            with contextlib.suppress(Exception):
                acc.shutdown()


def _meta(case: Case) -> dict[str, Any]:
    return {
        "id": case.id,
        "cassette": case.cassette,
        "scenario": case.scenario,
        "seed": case.seed,
        "dialect": case.dialect,
        "expected": case.expected.to_dict(),
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


class _Pool:
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

    def run(self, units: Sequence[_Unit], progress: Progress | None) -> list[list[list[Result]]]:
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
        units: Sequence[_Unit],
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
        worker.deadline = None if self.timeout is None else time.monotonic() + self.timeout

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
        )
        nxt = (k, i + 1) if i + 1 < len(self.specs) else (k + 1, 0)
        todo.appendleft((worker.unit, *nxt))
        self._kill(worker)
        self.workers[self.workers.index(worker)] = self._start()


# ---------------------------------------------------------------------------------------------
# Comparing two accumulators


@dataclass(frozen=True)
class Difference:
    """A case where two accumulators' outcomes differ (or only one of them produced one)."""

    a: Result
    b: Result
    lines: tuple[str, ...]  # `diff(a.actual, b.actual)`, or why only one has an outcome

    @property
    def id(self) -> str:
        return self.a.id


@dataclass
class Comparison:
    a: Report
    b: Report
    differences: list[Difference]

    @property
    def agree(self) -> bool:
        return not self.differences


def compare_matrix(
    spec_a: str,
    spec_b: str,
    selection: Selection,
    *,
    timeout: float | None = None,
    jobs: int = 1,
    progress: Progress | None = None,
) -> Comparison:
    """Both accumulators on every selected case; where their outcomes differ."""
    report_a, report_b = run_matrices(
        [spec_a, spec_b], selection, timeout=timeout, jobs=jobs, progress=progress
    )
    found = []
    for a, b in zip(report_a.results, report_b.results, strict=True):
        lines = _outcome_difference(a, b)
        if lines:
            found.append(Difference(a, b, tuple(lines)))
    return Comparison(report_a, report_b, found)


def _outcome_difference(a: Result, b: Result) -> list[str]:
    if a.actual is not None and b.actual is not None:
        return [_as_ab(line) for line in diff(a.actual, b.actual)]
    if a.actual is None and b.actual is None:
        return []  # neither produced an outcome: nothing to compare (both verdicts are in the reports)
    missing, other = ("A", "B") if a.actual is None else ("B", "A")
    result = a if a.actual is None else b
    return [f"{missing} has no outcome ({result.verdict}: {result.error or '-'}); {other} has one"]


def _as_ab(line: str) -> str:
    # `diff` speaks of expected/got; here the first side is A and the second B.
    return line.replace(" expected, got ", " in A, B has ").replace(
        " expected, missing", " in A, missing in B"
    )


def case_with_events(case: Case, events: Sequence[Event]) -> Case:
    """The case with other events, one read per event, its expectation the reference outcome."""
    d = dialects.get(case.dialect)
    like = case.response.body
    chunks = [Chunk(dialects.body_of([event], d, like=like)) for event in events]
    response = replace(case.response, chunks=chunks, headers=dict(case.response.headers))
    parsed = tuple(dialects.events_of(response, d))
    return replace(case, response=response, events=parsed, expected=dialects.reference_outcome(response, d))


def shrink_difference(case: Case, a: Accumulator, b: Accumulator, *, budget: int = 400) -> tuple[Case, bool]:
    """The case with as few events as keep A's and B's outcomes different (greedy chunk
    dropping, at most `budget` tries), and whether it shrank at all. The case comes back as is
    when re-encoding the events loses the difference (it lives in the bytes, not the events)."""
    tries = 0

    def differs(candidate: Case) -> bool:
        nonlocal tries
        tries += 1
        try:
            return bool(diff(a.run(candidate), b.run(candidate)))
        except Exception:
            return False  # a crash is another finding; keep looking for a clean difference

    events = list(case.events)
    if not events or not differs(case_with_events(case, events)):
        return case, False
    size = max(len(events) // 2, 1)
    while size >= 1 and tries < budget:
        start, dropped = 0, False
        while start < len(events) and tries < budget:
            candidate = events[:start] + events[start + size :]
            if candidate and differs(case_with_events(case, candidate)):
                events, dropped = candidate, True
            else:
                start += size
        if not dropped:
            size //= 2
    shrunk = case_with_events(case, events)
    return shrunk, len(events) < len(case.events)


def write_reproductions(
    comparison: Comparison, selection: Selection, out: str | Path, *, limit: int = 50, budget: int = 400
) -> dict[str, Path]:
    """Each difference (the first `limit`; 0: all) as a cassette in `out`, shrunk when both
    accumulators produced an outcome: the mutated request + response and its expectation."""
    out = Path(out)
    chosen = comparison.differences if limit <= 0 else comparison.differences[:limit]
    if not chosen:
        return {}
    matrix = _Matrix(selection)
    a = resolve_accumulator(comparison.a.accumulator)
    b = resolve_accumulator(comparison.b.accumulator)
    written: dict[str, Path] = {}
    try:
        for difference in chosen:
            case = matrix.case(difference.id)
            shrunk = False
            if difference.a.actual is not None and difference.b.actual is not None:
                case, shrunk = shrink_difference(case, a, b, budget=budget)
            cassette = case_cassette(case)
            if shrunk:
                cassette.source.provenance += (
                    f"; shrunk to {len(case.events)} events where {comparison.a.accumulator} and "
                    f"{comparison.b.accumulator} still differ (expected: the reference outcome "
                    "of the shrunk stream)"
                )
            written[difference.id] = save(cassette, out / f"{cassette.name}.yaml")
    finally:
        a.shutdown()
        b.shutdown()
    return written
