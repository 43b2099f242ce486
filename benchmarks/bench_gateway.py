"""A gateway under `check --gateway`: `python benchmarks/bench_gateway.py [--quick | --smoke]` from
the repo root. What a case costs through a gateway, against what it costs a trivial program
under `check --client`.

The gateway is the standard-library translator of docs/gateways.md (examples/gateways/translator.py,
OpenAI chat upstream, Anthropic Messages downstream); the program is the standard-library agent
loop (examples/clients/python-stdlib), warm (forked from its zygote). Both are started before the
clock starts (the gateway once, the program's zygote once), as a run over many cases pays them
once; then each is given the openai-chat `original` cases one after the other, in this process:
the gateway asked and its answer judged (`GatewayRun.judge`), the program run and its follow-up
judged (`run_client`). The figure is the wall time per case, best of several rounds, the two
taking turns.
"""

from __future__ import annotations

import shlex
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from figures import Figure, Scale, cost, parse_scale, print_figures  # noqa: E402

NAME = "gateway"
RUNS: dict[Scale, int] = {"full": 5, "quick": 3, "smoke": 1}
CASES: dict[Scale, int] = {"full": 13, "quick": 8, "smoke": 2}
TRANSLATOR = ROOT / "examples" / "gateways" / "translator.py"
STDLIB = ROOT / "examples" / "clients" / "python-stdlib" / "agent.py"
GATEWAY = (
    shlex.join([sys.executable, str(TRANSLATOR), "--from", "openai-chat", "--to", "anthropic"])
    + " --upstream {upstream} --port {port}"
)


def measure(scale: Scale) -> list[Figure]:
    from harness.accumulators.program import run_client, warm_starts
    from harness.gateway.runner import GatewayRun
    from harness.matrix.selection import Selection, cases
    from harness.oracle.verdict import Verdict
    from harness.serve import ReplayServer

    chosen = sorted(cases(Selection(dialects=("openai-chat",), scenarios=("original",))), key=lambda c: c.id)
    chosen = chosen[: CASES[scale]]
    program = f"{sys.executable} {STDLIB}"
    best = {"gateway": float("inf"), "client": float("inf")}
    with (
        GatewayRun(GATEWAY, source="openai-chat", target="anthropic") as gateway,
        ReplayServer(chosen).running() as server,
        warm_starts(program, server.url) as warm,
    ):
        gateway.judge(chosen[0])  # untimed: the first connection, the first imports
        run_client(server, chosen[0], program, timeout=30, warm=warm)
        for _ in range(RUNS[scale]):
            start = time.perf_counter()
            through = [gateway.judge(case) for case in chosen]
            best["gateway"] = min(best["gateway"], (time.perf_counter() - start) / len(chosen))
            start = time.perf_counter()
            ran = [run_client(server, case, program, timeout=30, warm=warm) for case in chosen]
            best["client"] = min(best["client"], (time.perf_counter() - start) / len(chosen))
            if any(r.verdict is Verdict.ERROR for r in [*through, *ran]):
                raise SystemExit(f"a case errored: {[r.error for r in [*through, *ran] if r.error]}")
    what = f"a case through a gateway (`check --gateway`, {len(chosen)} openai-chat `original` cases), wall"
    peer = "`check --client` of the standard-library loop, warm"
    return [cost(NAME, what, best["gateway"] * 1000, best["client"] * 1000, peer, "ms", goal=2.0)]


def main(argv: list[str] | None = None) -> int:
    scale = parse_scale(__doc__ or "", argv)
    print_figures(measure(scale), scale)
    return 0


if __name__ == "__main__":
    sys.exit(main())
