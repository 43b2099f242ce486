"""Client programs under `check --client`: `python benchmarks/bench_clients.py [--quick | --smoke]`
from the repo root. What a case costs, one section per kind of client program; a client whose
toolchain is not installed gives no rows.

## Node programs: warm starts (`harness.processes.node_warm`)

Node SDK loops (examples/clients/node-openai, node-anthropic, with their `node_modules`): CPU per
case of `run_clients` over cases spread across the client's dialect matrix, each Node program run
warm (a worker thread of a kept Node process) against the same cases started cold (`warm=False`:
a process per case, under the subreaper wrapper). CPU is the user and system time of every
process the run started (RUSAGE_CHILDREN, the warm processes ended and waited for before it is
read), best of N, the two taking turns. The verdicts of the two must agree case for case, or the
run stops.

## Python programs: warm starts (`harness.processes.python_warm`)

A Python client runs forked from a zygote that has imported what the program imports, instead of
starting its interpreter afresh per case (`--cold`). Each figure is a whole `toolstream check
--client` run in a fresh process, timed from outside: CPU time (user + system of the run and
every process below it, from the resource usage of children waited for) and wall time. The cost
of a case is the marginal one: a run over N cases less a run over one, divided by N - 1, so the
harness's own start-up and a zygote's preloading (paid once per worker) are left out. Best of
several rounds, the contenders taking turns. Rows:

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
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from figures import Figure, Scale, cost, parse_scale, print_figures  # noqa: E402

NAME = "clients"
RUNS: dict[Scale, int] = {"full": 3, "quick": 2, "smoke": 1}
# ---- Node programs
NODE_CLIENTS = {"node-openai": "openai-chat", "node-anthropic": "anthropic"}
CASES: dict[Scale, int] = {"full": 40, "quick": 12, "smoke": 2}
# ---- Python programs
PYTHON_CASES: dict[Scale, int] = {"full": 13, "quick": 4, "smoke": 2}  # openai-chat `original` cases per run
AGENTS_PYTHON = ROOT / ".venv-openai-agents" / "bin" / "python"
AGENTS = ROOT / "examples" / "clients" / "openai-agents" / "agent.py"
STDLIB = ROOT / "examples" / "clients" / "python-stdlib" / "agent.py"


# ---------------------------------------------------------------------------------------------
# Node programs


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def node_rows(scale: Scale) -> list[Figure]:
    from harness.accumulators.program import run_clients
    from harness.card.catalogue import catalogue
    from harness.matrix.selection import Matrix, Selection
    from harness.oracle.verdict import signature

    table = catalogue(ROOT)
    figures = []
    for name, dialect in NODE_CLIENTS.items():
        if shutil.which("node") is None or not table.installed(name):
            continue
        matrix = Matrix(Selection(dialects=(dialect,)))
        every = list(matrix.all())
        cases = every[:: max(1, len(every) // CASES[scale])][: CASES[scale]]
        best = {True: float("inf"), False: float("inf")}
        verdicts: dict[bool, list[tuple[str, str]]] = {}
        for _ in range(RUNS[scale]):
            for warm in (False, True):
                before = _children_cpu()
                report = run_clients(cases, table.command(name), jobs=1, timeout=30, warm=warm)
                best[warm] = min(best[warm], (_children_cpu() - before) / len(cases))
                verdicts[warm] = [(str(r.verdict), signature(r)) for r in report.results]
        if verdicts[True] != verdicts[False]:
            raise SystemExit(f"{name}: warm and cold verdicts differ: {verdicts}")
        figures.append(
            cost(NAME, f"{name}: Node SDK loop, CPU per case ({len(cases)} {dialect} cases)",
                 best[True] * 1000, best[False] * 1000, "a cold start per case (`--cold`)", "ms", goal=0.5)
        )  # fmt: skip
    return figures


# ---------------------------------------------------------------------------------------------
# Python programs


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
        argv.append("--cold")
    env = {**os.environ, "TOOLSTREAM_CACHE": cache, "PYTHONPATH": str(ROOT)}
    env.pop("TOOLSTREAM_WARM", None)
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


def python_rows(scale: Scale) -> list[Figure]:
    ids = original_cases(PYTHON_CASES[scale])
    rounds = RUNS[scale]
    figures: list[Figure] = []
    with tempfile.TemporaryDirectory(prefix="bench-clients-") as cache:
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
    return figures


def measure(scale: Scale) -> list[Figure]:
    return node_rows(scale) + python_rows(scale)


def main(argv: list[str] | None = None) -> int:
    scale = parse_scale(__doc__ or "", argv)
    print_figures(measure(scale), scale)
    return 0


if __name__ == "__main__":
    sys.exit(main())
