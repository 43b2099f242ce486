"""The stdio protocol: `python benchmarks/bench_stdio.py [--quick | --smoke]` from the repo root.

An accumulator in another language talks to the harness over stdin and stdout (JSON Lines); the
reference served that way (`serve-accumulator reference`, a child process answering every case)
against the reference in process, on the openai-chat matrix (every openai-chat cassette through
every shipped scenario; `--smoke`: two scenarios). Best of N rounds (full 5, quick 3, smoke 1), the
contenders taking turns each round, after a first untimed round that fills the built-case store
(a temporary folder, never the user's) and writes bytecode caches:

- `toolstream check --dialect openai-chat`, whole commands in fresh processes, wall clock:
  `--accumulator 'cmd:python -m harness.cli serve-accumulator reference'` (in one worker with the
  default per-case timeout, the child started and warmed up in it) against `--accumulator
  reference` (in process): what a user waits for;
- per case, in process (`run_matrix`, no timeout): the cases pipelined (the runner announces
  them, `Stdio.upcoming`, and they are written ahead of their turn) against the reference in
  process, and against the same cases sent one at a time (each written once the last answer is
  read, as before pipelining), all three with the child already warm.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from figures import Figure, Scale, cost, parse_scale, print_figures  # noqa: E402

NAME = "stdio"
ROUNDS: dict[Scale, int] = {"full": 5, "quick": 3, "smoke": 1}
SCENARIOS: dict[Scale, tuple[str, ...]] = {"full": (), "quick": (), "smoke": ("original", "F3-single-read")}
CLI = [sys.executable, "-m", "harness.cli"]
SERVED = f"cmd:{sys.executable} -m harness.cli serve-accumulator reference"


@contextlib.contextmanager
def environment(store: str) -> Iterator[None]:
    """This checkout's harness in every child, and built cases read from `store`."""
    from harness import cache

    wanted = {
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        cache.ENV: store,
    }
    before = {name: os.environ.get(name) for name in wanted}
    os.environ.update(wanted)
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # bytecode caches, as an installed package has
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def check(spec: str, scenarios: tuple[str, ...]) -> float:
    """Wall seconds of one whole `toolstream check` over the openai-chat matrix."""
    command = [*CLI, "check", "--dialect", "openai-chat", "--accumulator", spec]
    if scenarios:
        command += ["--scenarios", *scenarios]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{spec}: exit {done.returncode}: {(done.stdout + done.stderr).strip()[-400:]}")
    return seconds


def per_case(scenarios: tuple[str, ...], rounds: int) -> tuple[int, float, float, float]:
    """Cases, then seconds per case: pipelined over stdio, the reference in process, one at a time
    over stdio (the child warm in each)."""
    from harness import Selection
    from harness.accumulators import resolve
    from harness.accumulators.stdio_process import Stdio
    from harness.matrix.selection import Matrix

    matrix = Matrix(Selection(dialects=("openai-chat",), scenarios=scenarios))
    cases = [case for unit in matrix.units() for case in matrix.cases(unit)]
    reference = resolve("reference")
    served = resolve(SERVED)
    assert isinstance(served, Stdio)
    served.prepare()
    best = {"pipelined": float("inf"), "in process": float("inf"), "one at a time": float("inf")}
    outcomes = {}
    try:
        for _ in range(rounds):
            for how in best:
                start = time.perf_counter()
                if how == "pipelined":
                    served.upcoming(cases)
                accumulator = reference if how == "in process" else served
                outcomes[how] = [accumulator.run(case) for case in cases]
                best[how] = min(best[how], time.perf_counter() - start)
    finally:
        served.shutdown()
    if not outcomes["pipelined"] == outcomes["in process"] == outcomes["one at a time"]:
        raise SystemExit("over stdio, the reference's outcomes are not the same as in process")
    n = len(cases)
    return n, best["pipelined"] / n, best["in process"] / n, best["one at a time"] / n


def measure(scale: Scale) -> list[Figure]:
    scenarios = SCENARIOS[scale]
    rounds = ROUNDS[scale]
    with tempfile.TemporaryDirectory() as store, environment(store):
        check("reference", scenarios)  # fills the case store, writes bytecode caches
        whole = {"reference": float("inf"), SERVED: float("inf")}
        for _ in range(rounds):
            for spec in whole:
                whole[spec] = min(whole[spec], check(spec, scenarios))
        cases, pipelined, in_process, one_at_a_time = per_case(scenarios, rounds)
    which = "openai-chat matrix" if not scenarios else f"openai-chat x {len(scenarios)} scenarios"
    ms = 1000.0
    return [
        cost(NAME, f"`check` of the {which} over stdio (`serve-accumulator reference`), whole command",
             whole[SERVED], whole["reference"], "in process (`-a reference`)", "s", goal=2.5),
        cost(NAME, f"over stdio, {cases:,} cases, per case, pipelined", pipelined * ms, in_process * ms,
             "in process", "ms"),
        cost(NAME, f"over stdio, {cases:,} cases, per case, pipelined", pipelined * ms, one_at_a_time * ms,
             "one at a time (not announced)", "ms"),
    ]  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    scale = parse_scale((__doc__ or "").splitlines()[0], argv)
    print_figures(measure(scale), scale)
    return 0


if __name__ == "__main__":
    sys.exit(main())
