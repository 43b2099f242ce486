"""Matrix throughput: `python benchmarks/bench_matrix.py [--quick]` from the repo root.

(a) Cases per second for the reference accumulator over the matrix (bundled cassettes x shipped
    scenarios; `--quick`: the openai-chat cassettes), run three ways: in process (`-j 1`, no
    timeout), in one worker process with a per-case timeout (`-j 1 --timeout 30`), and over two
    workers (`-j 2`).
(b) The same over stdio: `cmd:python -m harness.cli serve-accumulator reference` (one child
    process speaking JSON Lines, in process otherwise), on openai-chat x 4 scenarios.
(c) The harness's overhead per case against the accumulator's own time on the same events:
    the cases are built once; "own" feeds each case's events to a fresh reference accumulator
    and closes it; "judged" runs the same case through the runner's `judge` (the resolved
    accumulator adapter, `diff` against the expectation, the `Result`). Case generation (the
    scenario pipeline) is reported on its own: it is the scenario module's cost, paid once per case.

Timings are `time.perf_counter`; (c) is the best of 3 passes.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.check.accumulators import resolve  # noqa: E402
from harness.check.runner import run_matrix  # noqa: E402
from harness.check.selection import Matrix, Selection  # noqa: E402
from harness.check.verdict import judge  # noqa: E402
from harness.mutate.scenario import Case  # noqa: E402
from harness.wire import dialects  # noqa: E402


def cases_of(selection: Selection) -> tuple[list[Case], float]:
    matrix = Matrix(selection)
    start = time.perf_counter()
    cases = [case for unit in matrix.units() for case in matrix.cases(unit)]
    return cases, time.perf_counter() - start


def throughput(
    spec: str, selection: Selection, *, jobs: int = 1, timeout: float | None = None
) -> tuple[int, float]:
    start = time.perf_counter()
    report = run_matrix(spec, selection, jobs=jobs, timeout=timeout)
    seconds = time.perf_counter() - start
    bad = [r for r in report.results if r.verdict.value not in ("pass", "skipped")]
    if bad:
        print(f"  warning: {len(bad)} cases did not pass, e.g. {bad[0].id}: {bad[0].error or bad[0].diff}")
    return len(report.results), seconds


def own_time(cases: list[Case]) -> float:
    start = time.perf_counter()
    for case in cases:
        acc = dialects.get(case.dialect).accumulator()
        for event in case.events:
            acc.feed(event)
        acc.close(None if case.response.complete else (case.response.error or "stream cut"))
    return time.perf_counter() - start


def judged_time(cases: list[Case], spec: str = "reference") -> float:
    accumulator = resolve(spec)
    try:
        judge(accumulator, spec, cases[0])  # a process to start, for stdio: not a per-case cost
        start = time.perf_counter()
        for case in cases:
            judge(accumulator, spec, case)
        return time.perf_counter() - start
    finally:
        accumulator.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="openai-chat cassettes only")
    quick = parser.parse_args().quick
    corpus = (str(ROOT / "cassettes/openai-chat"),) if quick else ()
    selection = Selection(cassettes=corpus)
    small = Selection(
        cassettes=(str(ROOT / "cassettes/openai-chat"),),
        scenarios=("original", "F3-single-read", "F3-one-byte-reads", "parallel-calls-share-index-0"),
    )
    os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(
        os.pathsep
    )
    stdio = f"cmd:{sys.executable} -m harness.cli serve-accumulator reference"

    print(f"(a) reference accumulator over the matrix ({'openai-chat' if quick else 'all'} cassettes)")
    for label, jobs, timeout in (
        ("in process", 1, None),
        ("1 worker, timeout", 1, 30.0),
        ("2 workers", 2, 30.0),
    ):
        n, seconds = throughput("reference", selection, jobs=jobs, timeout=timeout)
        print(f"  {label:<18} {n:>6} cases in {seconds:6.2f} s = {n / seconds:8.0f} cases/s")

    print("(b) over stdio (serve-accumulator reference), openai-chat x 4 scenarios")
    for label, spec in (("in process", "reference"), ("stdio", stdio)):
        n, seconds = throughput(spec, small)
        print(f"  {label:<18} {n:>6} cases in {seconds:6.2f} s = {n / seconds:8.0f} cases/s")

    print("(c) per case, on cases built once")
    cases, built = cases_of(selection)
    own = min(own_time(cases) for _ in range(3))
    judged = min(judged_time(cases) for _ in range(3))
    n = len(cases)
    per = 1e6 / n
    print(f"  {n} cases; building them (scenario pipeline): {built * per:7.1f} us/case")
    print(f"  accumulator's own time (feed + close):      {own * per:7.1f} us/case")
    print(f"  through the runner (judge):                 {judged * per:7.1f} us/case")
    overhead = judged - own
    verdict = "under" if overhead < own else "OVER"
    some = cases[:: max(len(cases) // 300, 1)]
    over_stdio = judged_time(some, stdio) * 1e6 / len(some)
    print(f"  over stdio (judge, process kept):           {over_stdio:7.1f} us/case ({len(some)} cases)")
    print(f"  harness overhead:                           {overhead * per:7.1f} us/case", end=" ")
    print(f"({verdict} the accumulator's own)")


if __name__ == "__main__":
    main()
