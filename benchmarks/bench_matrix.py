"""Matrix throughput: `python benchmarks/bench_matrix.py [--quick]` from the repo root.

The reference accumulator over the matrix (bundled cassettes x shipped scenarios, plus `original`;
`--quick`: the openai-chat cassettes only), run with `run_matrix` three ways: in process (`-j 1`,
no timeout), in one worker process with a per-case timeout (what `check -j 1` does by default),
and over two workers (`-j 2`). From the same runs:

- in process against one worker, and two workers against one (wall clock);
- the harness's time per case (building the cases and judging them: the in-process run's wall
  time less what the accumulator itself took, which each result records) against the
  accumulator's own time per case, from a second in-process run: the first also pays for
  importing the mutations and dialects, once per process (each run still loads its cassettes
  and scenarios);
- over stdio (`cmd:python -m harness.cli serve-accumulator reference`, one child process speaking
  JSON Lines) against in process, per case, on openai-chat x 4 scenarios;
- the pytest plugin (`pytest --toolstream-accumulator reference`) with two xdist workers against
  serial (wall clock, same cassettes), each with a cold pytest cache (a fresh clone): the items
  come from the case ids shipped in `harness/check/case-ids.json.gz`, so each worker builds only
  the cases it runs. Run with bytecode caches written, as an installed package has them: with
  PYTHONDONTWRITEBYTECODE set, pytest rewrites the asserts of every plugin's modules again in
  each process (about 3 s of CPU per worker here), which is what this figure would measure.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from figures import Figure, Scale, cost, parse_scale, print_figures, speedup  # noqa: E402

NAME = "matrix"
OPENAI = str(ROOT / "cassettes/openai-chat")
FEW = ("original", "F3-single-read", "F3-one-byte-reads", "parallel-calls-share-index-0")
# Per scale: the cassettes (empty: all bundled) and scenarios (empty: all) of the throughput runs.
SELECTIONS: dict[Scale, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "full": ((), ()),
    "quick": ((OPENAI,), ()),
    "smoke": ((OPENAI,), FEW[:2]),
}


@dataclass(frozen=True)
class Run:
    cases: int
    seconds: float  # wall clock of the whole run
    accumulator_seconds: float  # what the accumulator took, summed over the cases


def run_reference(
    spec: str,
    cassettes: tuple[str, ...],
    scenarios: tuple[str, ...],
    *,
    jobs: int = 1,
    timeout: float | None = None,
) -> Run:
    """The one call into the runner: every selected case through `spec`, timed."""
    from harness import Selection, run_matrix

    start = time.perf_counter()
    selection = Selection(cassettes=cassettes, scenarios=scenarios)
    report: Any = run_matrix(spec, selection, jobs=jobs, timeout=timeout)
    seconds = time.perf_counter() - start
    bad = [r for r in report.results if str(r.verdict) not in ("pass", "skipped")]
    if bad:
        print(f"  warning: {len(bad)} cases did not pass, e.g. {bad[0].id}: {bad[0].error or bad[0].diff}")
    return Run(len(report.results), seconds, sum(r.seconds for r in report.results))


def stdio_spec() -> str:
    # The child must import this checkout's harness, whatever is installed.
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    return f"cmd:{sys.executable} -m harness.cli serve-accumulator reference"


def run_pytest(cassettes: tuple[str, ...], scenarios: tuple[str, ...], cache: Path, *extra: str) -> float:
    """Wall seconds of one plugin session over the matrix (no test files: the matrix items only)."""
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "--rootdir", str(cache.parent),
               "-o", f"cache_dir={cache}", "--toolstream-accumulator", "reference", *extra]  # fmt: skip
    for item in cassettes:
        command += ["--toolstream-cassette-dir", item]
    for item in scenarios:
        command += ["--toolstream-scenarios", item]
    cache.parent.mkdir(parents=True, exist_ok=True)
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    start = time.perf_counter()
    done = subprocess.run(
        command, cwd=cache.parent, capture_output=True, text=True, check=False, env=environment
    )
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        tail = (done.stdout + done.stderr).strip().splitlines()[-3:]
        print(f"  warning: pytest {' '.join(extra)} exited {done.returncode}: {' / '.join(tail)}")
    return seconds


def measure_pytest(cassettes: tuple[str, ...], scenarios: tuple[str, ...]) -> tuple[float, float]:
    """(serial, two workers) wall seconds, each from a cold pytest cache."""
    with tempfile.TemporaryDirectory(prefix="toolstream-bench-") as scratch:
        run_pytest(cassettes, scenarios, Path(scratch) / "warm-up" / ".cache", "--collect-only")  # bytecode
        serial = run_pytest(cassettes, scenarios, Path(scratch) / "serial" / ".cache")
        two = run_pytest(cassettes, scenarios, Path(scratch) / "two" / ".cache", "-n", "2")
    return serial, two


def measure(scale: Scale) -> list[Figure]:
    cassettes, scenarios = SELECTIONS[scale]
    serial = run_reference("reference", cassettes, scenarios)
    warm = run_reference("reference", cassettes, scenarios)  # the same, its modules imported
    one = run_reference("reference", cassettes, scenarios, timeout=30.0)
    two = run_reference("reference", cassettes, scenarios, jobs=2, timeout=30.0)
    few = FEW[:2] if scale == "smoke" else FEW
    in_process = run_reference("reference", (OPENAI,), few)
    over_stdio = run_reference(stdio_spec(), (OPENAI,), few)
    serial_pytest, two_pytest = measure_pytest(cassettes, scenarios)
    which = "all bundled cassettes" if not cassettes else "openai-chat cassettes"
    label = f"{serial.cases:,} cases ({which})"
    own = warm.accumulator_seconds / warm.cases * 1e6
    harness = (warm.seconds - warm.accumulator_seconds) / warm.cases * 1e6
    return [
        speedup(NAME, f"reference accumulator, {label}, in process", serial.cases / serial.seconds,
                one.cases / one.seconds, "1 worker with a timeout (`check -j 1`)", "cases/s"),
        speedup(NAME, f"reference accumulator, {label}, 2 workers", two.cases / two.seconds,
                one.cases / one.seconds, "1 worker", "cases/s", goal=1.6),
        speedup(NAME, f"pytest plugin, {label}, `-n 2`", serial.cases / two_pytest,
                serial.cases / serial_pytest, "serial", "cases/s", goal=1.6),
        cost(NAME, "harness time per case (building + judging), in process, modules imported", harness, own,
             "the accumulator's own time", "µs", goal=1.0),
        cost(NAME, f"over stdio (`serve-accumulator`), {in_process.cases} cases, per case",
             over_stdio.seconds / over_stdio.cases * 1000, in_process.seconds / in_process.cases * 1000,
             "in process", "ms"),
    ]  # fmt: skip


def main() -> None:
    scale = parse_scale((__doc__ or "").splitlines()[0])
    print_figures(measure(scale), scale)


if __name__ == "__main__":
    main()
