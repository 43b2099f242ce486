"""Every benchmark, one table: `python benchmarks/run.py [--quick]` from the repo root.

Runs each `bench_*.py` module's `measure` in turn, prints every figure (each ours against a peer
measured in the same run), writes the results as JSON under `benchmarks/results/`, and rewrites
the figures in docs/benchmarks.md and benchmarks/README.md between their `<!-- bench:... -->`
markers, with the machine and the date, so both pages always quote the same run. `--quick` takes
under a minute on two cores; `--smoke` only proves every benchmark still runs (it writes no page).
"""

from __future__ import annotations

import argparse
import gc
import importlib
import json
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from figures import SCALES, Figure, Scale, describe, machine, table, text_table  # noqa: E402

# Pipeline order: wire bytes, cassettes on disk, replay (in process, then a WebSocket session
# served against aimock's), mutations, whole matrix runs (and their
# cost per case against a base commit), the stdio protocol; then start-up, the clients run as
# programs, and the report card's rows over libraries.
BENCHMARKS = (
    "codecs",
    "cassettes",
    "replay",
    "websocket",
    "mutations",
    "matrix",
    "baseline",
    "stdio",
    "startup",
    "clients",
    "gateway",
    "card",
)
PAGE = HERE.parent / "docs" / "benchmarks.md"
BENCH_README = HERE / "README.md"


class MarkerError(Exception):
    """A page lacks the markers its figures go between."""


def run(names: tuple[str, ...], scale: Scale) -> dict[str, Any]:
    """Each benchmark's figures, how long it took, and the machine they were measured on."""
    host = machine()
    out: dict[str, Any] = {"machine": host, "scale": scale, "benchmarks": {}}
    started = time.perf_counter()
    for name in names:
        print(f"running {name} ...", file=sys.stderr, flush=True)
        module = importlib.import_module(f"bench_{name}")
        start = time.perf_counter()
        figures: list[Figure] = module.measure(scale)
        out["benchmarks"][name] = {"seconds": round(time.perf_counter() - start, 2), "figures": figures}
        gc.collect()  # what one benchmark left behind is not the next one's cost
    out["seconds"] = round(time.perf_counter() - started, 2)
    return out


def all_figures(results: dict[str, Any]) -> list[Figure]:
    return [f for entry in results["benchmarks"].values() for f in entry["figures"]]


def replace_between(text: str, key: str, body: str, where: Path) -> str:
    """`text` with what lies between `<!-- bench:KEY:start -->` and its end marker replaced."""
    start, end = f"<!-- bench:{key}:start -->", f"<!-- bench:{key}:end -->"
    head, found, rest = text.partition(start)
    _, found_end, tail = rest.partition(end)
    if not found or not found_end:
        raise MarkerError(f"{where}: add the lines {start} and {end} where the {key} figures go")
    return f"{head}{start}\n{body}\n{end}{tail}"


def write_pages(results: dict[str, Any], page: Path = PAGE, bench_readme: Path = BENCH_README) -> None:
    """Both pages' figures from this one run (the whole table in docs/benchmarks.md, and each
    benchmark's own in benchmarks/README.md)."""
    line = f"Measured by `python benchmarks/run.py` on {describe(results['machine'], results['scale'])}"
    text = replace_between(page.read_text(), "all", f"{line}\n\n{table(all_figures(results))}", page)
    bench_text = bench_readme.read_text()
    for name, entry in results["benchmarks"].items():
        body = f"{line}\n\n{table(entry['figures'], with_benchmark=False)}"
        bench_text = replace_between(bench_text, name, body, bench_readme)
    # Both checked before either is written: a missing marker leaves neither half-updated.
    page.write_text(text)
    bench_readme.write_text(bench_text)


def save(results: dict[str, Any], folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    host = results["machine"]
    stamp = f"{host['date']}T{host['time'].split()[0].replace(':', '')}"
    path = folder / f"{stamp}-{results['scale']}.json"
    plain = {**results, "benchmarks": {
        name: {**entry, "figures": [f.to_dict() for f in entry["figures"]]}
        for name, entry in results["benchmarks"].items()
    }}  # fmt: skip
    path.write_text(json.dumps(plain, indent=2, ensure_ascii=False) + "\n")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--quick", action="store_true", help="smaller inputs, fewer runs (under a minute)")
    group.add_argument("--smoke", action="store_true", help="tiny inputs: only proves every benchmark runs")
    parser.add_argument("--no-write", action="store_true", help="leave both pages alone")
    parser.add_argument("--only", action="append", choices=BENCHMARKS, help="run this benchmark (repeatable)")
    parser.add_argument("--results", type=Path, default=HERE / "results", help="folder for the results JSON")
    args = parser.parse_args(argv)
    scale: Scale = "quick" if args.quick else "smoke" if args.smoke else "full"
    assert scale in SCALES
    names = tuple(args.only) if args.only else BENCHMARKS
    results = run(names, scale)
    print(describe(results["machine"], scale))
    print(text_table(all_figures(results)))
    print(f"results: {save(results, args.results)} ({results['seconds']:.0f} s)")
    if args.no_write or scale == "smoke" or args.only:
        return 0
    write_pages(results)
    print(f"updated {PAGE.relative_to(HERE.parent)} and {BENCH_README.relative_to(HERE.parent)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
