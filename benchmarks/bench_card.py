"""The report card's rows at once: `python benchmarks/bench_card.py [--quick]` from the repo root.

`toolstream report-card --use-current-env --no-clients --no-cache` over a small selection (a few
bundled cassettes of the libraries' dialects x a few scenarios): every Python library installed
in this environment is a row (`--quick`: openai and anthropic; `--smoke`: openai), graded in its
own `serve-accumulator` process. Rows one at a time
(`-j 1`) against as many at once as two slots allow (`-j 2`), wall clock, best of N, the two
taking turns, after an untimed first run that fills the built-case store (in a temporary folder,
as the verdict cache: `--no-cache` grades every row each time). Each row's cost is mostly its
library's start-up and its cases' parsing by the SDK, the work rows at once divide between cores.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from figures import Figure, Scale, parse_scale, print_figures, speedup  # noqa: E402

NAME = "card"
ROUNDS: dict[Scale, int] = {"full": 3, "quick": 2, "smoke": 1}
CASSETTES = [str(ROOT / "cassettes" / "openai-chat" / "parallel-2.yaml"),
             str(ROOT / "cassettes" / "anthropic" / "single-call.yaml")]  # fmt: skip
# Per scale: the libraries graded (empty: every one installed here) and the scenarios (empty: all).
LIBRARIES: dict[Scale, tuple[str, ...]] = {"full": (), "quick": ("openai", "anthropic"), "smoke": ("openai",)}
SCENARIOS: dict[Scale, tuple[str, ...]] = {
    "full": (),
    "quick": ("original", "A5-id-on-every-chunk", "D7-truncated-mid-args", "F3-one-byte-reads"),
    "smoke": ("original",),
}


def run_card(folder: Path, jobs: int, scale: Scale) -> tuple[float, int, int]:
    """(wall seconds, rows graded, cases) of one card run into `folder`."""
    command = [sys.executable, "-m", "harness.cli", "report-card", "--use-current-env", "--no-clients",
               "--no-cache", "-j", str(jobs), "--out", str(folder / f"out-{jobs}"),
               "--cassettes", *CASSETTES]  # fmt: skip
    if SCENARIOS[scale]:
        command += ["--scenarios", *SCENARIOS[scale]]
    if LIBRARIES[scale]:
        command += ["--libraries", ",".join(LIBRARIES[scale])]
    environment = {**os.environ, "TOOLSTREAM_CACHE": str(folder / "cache")}
    environment["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    environment.pop("PYTHONDONTWRITEBYTECODE", None)  # bytecode caches, as an installed package has
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=environment, check=False)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"report-card -j {jobs}: exit {done.returncode}: {done.stderr.strip()[-300:]}")
    card = json.loads((folder / f"out-{jobs}" / "report-card.json").read_text())
    graded = [row for row in card["rows"] if row.get("problem") is None]
    return seconds, len(graded), sum(row["cases"] for row in graded)


def measure(scale: Scale) -> list[Figure]:
    with tempfile.TemporaryDirectory(prefix="toolstream-bench-card-") as scratch:
        folder = Path(scratch)
        if scale != "smoke":  # a smoke run's timings mean nothing: no warm-up
            run_card(folder, 2, scale)  # fills the case store, writes bytecode
        best = {1: float("inf"), 2: float("inf")}
        shape: dict[int, tuple[int, int]] = {}
        for _ in range(ROUNDS[scale]):
            for jobs in best:
                seconds, rows, cases = run_card(folder, jobs, scale)
                best[jobs] = min(best[jobs], seconds)
                shape[jobs] = (rows, cases)
    if shape[1] != shape[2]:
        raise SystemExit(f"rows and cases differ: -j 1 {shape[1]}, -j 2 {shape[2]}")
    rows, cases = shape[1]
    return [
        speedup(NAME, f"report card, the Python rows installed here ({rows} row{'s' * (rows != 1)}, "
                f"{cases:,} case{'s' * (cases != 1)}), "
                "rows at once (`-j 2`)", rows / best[2], rows / best[1], "one at a time (`-j 1`)", "rows/s"),
    ]  # fmt: skip


def main() -> None:
    scale = parse_scale((__doc__ or "").splitlines()[0])
    print_figures(measure(scale), scale)


if __name__ == "__main__":
    main()
