"""Client programs under `check --client`: `python benchmarks/bench_clients.py [--quick | --smoke]`
from the repo root.

Node SDK loops (examples/clients/node-openai, node-anthropic, with their `node_modules`): CPU per
case of `run_clients` over cases spread across the client's dialect matrix, each Node program run
warm (a worker thread of a kept Node process, `harness.accumulators.node_warm`) against the same
cases started cold (`warm=False`: a process per case, under the subreaper wrapper). CPU is the
user and system time of every process the run started (RUSAGE_CHILDREN, the warm processes
ended and waited for before it is read), best of N, the two taking turns. The verdicts of the two
must agree case for case, or the run stops. A client not installed gives no rows.
"""

from __future__ import annotations

import resource
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from figures import Figure, Scale, cost, parse_scale, print_figures  # noqa: E402

NAME = "clients"
NODE_CLIENTS = {"node-openai": "openai-chat", "node-anthropic": "anthropic"}
CASES: dict[Scale, int] = {"full": 40, "quick": 12, "smoke": 2}
RUNS: dict[Scale, int] = {"full": 3, "quick": 2, "smoke": 1}


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def node_rows(scale: Scale) -> list[Figure]:
    from harness.accumulators import node_warm
    from harness.accumulators.program import run_clients
    from harness.card.catalogue import Catalogue
    from harness.matrix.selection import Matrix, Selection
    from harness.oracle.verdict import signature

    catalogue = Catalogue(ROOT)
    figures = []
    for name, dialect in NODE_CLIENTS.items():
        if shutil.which("node") is None or not catalogue.installed(name):
            continue
        matrix = Matrix(Selection(dialects=(dialect,)))
        every = list(matrix.all())
        cases = every[:: max(1, len(every) // CASES[scale])][: CASES[scale]]
        best = {True: float("inf"), False: float("inf")}
        verdicts: dict[bool, list[tuple[str, str]]] = {}
        for _ in range(RUNS[scale]):
            for warm in (False, True):
                before = _children_cpu()
                report = run_clients(cases, catalogue.command(name), jobs=1, timeout=30, warm=warm)
                node_warm.close()
                best[warm] = min(best[warm], (_children_cpu() - before) / len(cases))
                verdicts[warm] = [(str(r.verdict), signature(r)) for r in report.results]
        if verdicts[True] != verdicts[False]:
            raise SystemExit(f"{name}: warm and cold verdicts differ: {verdicts}")
        figures.append(
            cost(NAME, f"{name}: Node SDK loop, CPU per case ({len(cases)} {dialect} cases)",
                 best[True] * 1000, best[False] * 1000, "a cold start per case (`--cold`)", "ms", goal=0.5)
        )  # fmt: skip
    return figures


def measure(scale: Scale) -> list[Figure]:
    return node_rows(scale)


def main(argv: list[str] | None = None) -> int:
    scale = parse_scale(__doc__ or "", argv)
    print_figures(measure(scale), scale)
    return 0


if __name__ == "__main__":
    sys.exit(main())
