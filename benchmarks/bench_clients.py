"""Client programs: `python benchmarks/bench_clients.py [--quick | --smoke]` from the repo root.

What `toolstream check --client CMD` costs per case, one section per kind of client program.
Each figure is a whole `check --client` run in a fresh process, timed from outside: CPU time
(user + system of the run and every process below it, from the resource usage of children
waited for) and wall time. The cost of a case is the marginal one: a run over N cases less a run
over one, divided by N - 1, so the harness's own start-up and a zygote's preloading (paid once
per worker) are left out. Best of several rounds, the contenders taking turns.

## Python programs: warm starts (`harness.accumulators.warm`)

A Python client runs forked from a zygote that has imported what the program imports, instead
of starting its interpreter afresh per case (`--no-warm-start`). Rows:

- the OpenAI Agents SDK loop (examples/clients/openai-agents, run in the side virtualenv
  `.venv-openai-agents`; its rows are left out where that is not installed) over the openai-chat
  `original` cases, warm, against `python -c "import agents, openai"` in the same virtualenv (what
  a cold start pays before the program's first line); cold against the same import; and warm
  against cold in wall time;
- the standard-library loop (examples/clients/python-stdlib, the harness's own interpreter), warm
  against cold: a program with little to import gains little.

The learned imports live in a temporary cache folder, filled by an untimed first run.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from figures import ROOT, Figure, Scale, cost, parse_scale, print_figures

NAME = "clients"
RUNS: dict[Scale, int] = {"full": 3, "quick": 2, "smoke": 1}
CASES: dict[Scale, int] = {"full": 13, "quick": 4, "smoke": 2}  # openai-chat `original` cases per run
AGENTS_PYTHON = ROOT / ".venv-openai-agents" / "bin" / "python"
AGENTS = ROOT / "examples" / "clients" / "openai-agents" / "agent.py"
STDLIB = ROOT / "examples" / "clients" / "python-stdlib" / "agent.py"


def original_cases(count: int) -> list[str]:
    """The first `count` openai-chat `original` case ids (single-call first: the one-case run's)."""
    from harness.matrix.selection import Selection, cases

    ids = sorted(c.id for c in cases(Selection(dialects=("openai-chat",), scenarios=("original",))))
    first = "openai-chat/single-call::original::s0"
    return [first, *(i for i in ids if i != first)][:count]


def check_run(command: str, ids: list[str], *, warm: bool, cache: str) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one `toolstream check --client` over `ids`."""
    argv = [sys.executable, "-m", "harness.cli", "check", "--client", command, "--timeout", "60"]
    argv += [a for i in ids for a in ("--case", i)]
    if not warm:
        argv.append("--no-warm-start")
    env = {**os.environ, "TOOLSTREAM_CACHE": cache, "PYTHONPATH": str(ROOT)}
    env.pop("TOOLSTREAM_NO_WARM_START", None)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, timeout=1800, check=False, env=env, cwd=ROOT)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1) or f"{len(ids)} cases" not in done.stdout + done.stderr:
        raise SystemExit(f"check --client {command}: exit {done.returncode}: {done.stderr.strip()[-400:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), wall


def cpu_of(argv: list[str]) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, check=True, capture_output=True, timeout=300)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def per_case(command: str, ids: list[str], rounds: int, cache: str) -> dict[str, tuple[float, float]]:
    """Marginal (CPU, wall) seconds per case, warm and cold, best of `rounds` each."""
    check_run(command, ids, warm=True, cache=cache)  # untimed: learns what to preload
    best: dict[tuple[bool, int], list[float]] = {}
    for _ in range(rounds):
        for warm in (True, False):
            for size in (1, len(ids)):
                cpu, wall = check_run(command, ids[:size], warm=warm, cache=cache)
                seen = best.setdefault((warm, size), [cpu, wall])
                seen[0], seen[1] = min(seen[0], cpu), min(seen[1], wall)
    extra = len(ids) - 1

    def marginal(warm: bool, k: int) -> float:
        # At least a microsecond: on a busy machine two runs of a cheap program can swap places.
        return max((best[(warm, len(ids))][k] - best[(warm, 1)][k]) / extra, 1e-6)

    return {way: (marginal(warm, 0), marginal(warm, 1)) for way, warm in (("warm", True), ("cold", False))}


def measure(scale: Scale) -> list[Figure]:
    ids = original_cases(CASES[scale])
    rounds = RUNS[scale]
    figures: list[Figure] = []
    with tempfile.TemporaryDirectory(prefix="bench-clients-") as cache:
        # ---- Python programs: warm starts
        if AGENTS_PYTHON.exists() and scale != "smoke":
            command = f"{AGENTS_PYTHON} {AGENTS}"
            importing = [str(AGENTS_PYTHON), "-c", "import agents, openai"]
            imports = min(cpu_of(importing) for _ in range(rounds + 1))
            cost_of = per_case(command, ids, rounds, cache)
            what = f"Agents SDK loop per case ({len(ids)} openai-chat `original` cases, `-j 1`), CPU"
            peer = '`python -c "import agents, openai"` (its cold import)'
            ms = {way: (cpu * 1000, wall * 1000) for way, (cpu, wall) in cost_of.items()}
            warm, cold, importing_ms = ms["warm"], ms["cold"], imports * 1000
            figures += [
                cost(NAME, f"{what}, warm start", warm[0], importing_ms, peer, "ms", goal=0.1),
                cost(NAME, f"{what}, cold start", cold[0], importing_ms, peer, "ms"),
                cost(NAME, "the same, wall time, warm start", warm[1], cold[1], "cold start", "ms"),
            ]
        stdlib = per_case(f"{sys.executable} {STDLIB}", ids, rounds, cache)
        figures.append(
            cost(NAME, f"standard-library loop per case ({len(ids)} cases), CPU, warm start",
                 stdlib["warm"][0] * 1000, stdlib["cold"][0] * 1000, "cold start", "ms")
        )  # fmt: skip
        # ---- Node programs: (rows of their own)
    return figures


def main(argv: list[str] | None = None) -> int:
    scale = parse_scale(__doc__ or "", argv)
    print_figures(measure(scale), scale)
    return 0


if __name__ == "__main__":
    sys.exit(main())
