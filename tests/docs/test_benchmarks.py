"""The one benchmark command: every benchmark runs, and both pages (docs/benchmarks.md and
benchmarks/README.md) get their figures from one run."""

from __future__ import annotations

import importlib.util
import json
import math
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = ROOT / "benchmarks"


def load_runner() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_run", BENCHMARKS / "run.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


runner = load_runner()
figures = sys.modules["figures"]  # run.py puts benchmarks/ on the path and imports it


def fake_results() -> dict[str, Any]:
    host = {"cpu": "Test CPU 9000", "cores": 2, "python": "3.11.7", "implementation": "CPython",
            "os": "Linux 6", "load": [0.5, 0.4, 0.3], "date": "2026-01-02", "time": "03:04:05 UTC",
            "commit": "abc1234"}  # fmt: skip
    per = {
        name: {"seconds": 1.0, "figures": [
            figures.speedup(name, f"{name} speed", 200.0, 100.0, "peer", "MB/s", goal=2.0),
            figures.cost(name, f"{name} cost", 3.0, 2.0, "peer", "µs", goal=1.2),
        ]}
        for name in runner.BENCHMARKS
    }  # fmt: skip
    return {"machine": host, "scale": "full", "benchmarks": per, "seconds": 4.0}


def readmes(tmp_path: Path) -> tuple[Path, Path]:
    readme, bench = tmp_path / "README.md", tmp_path / "bench.md"
    readme.write_text("# Top\n\nbefore\n<!-- bench:all:start -->\nold table\n<!-- bench:all:end -->\nafter\n")
    section = "## {0}\n<!-- bench:{0}:start -->\nold\n<!-- bench:{0}:end -->\ntail {0}\n"
    bench.write_text("".join(section.format(name) for name in runner.BENCHMARKS))
    return readme, bench


def test_every_bench_script_is_run_and_runs_alone() -> None:
    scripts = sorted(p.stem.removeprefix("bench_") for p in BENCHMARKS.glob("bench_*.py"))
    assert scripts == sorted(runner.BENCHMARKS)
    for name in scripts:
        text = (BENCHMARKS / f"bench_{name}.py").read_text()
        assert "def measure(scale: Scale) -> list[Figure]:" in text
        assert 'if __name__ == "__main__":' in text


def test_both_pages_get_the_same_run_between_their_markers(tmp_path: Path) -> None:
    readme, bench = readmes(tmp_path)
    results = fake_results()
    runner.write_pages(results, readme, bench)
    top, detail = readme.read_text(), bench.read_text()
    assert top.startswith("# Top\n\nbefore\n<!-- bench:all:start -->\n")
    assert top.endswith("<!-- bench:all:end -->\nafter\n")
    assert "old table" not in top and "old" not in detail.replace("tail", "")
    where = "Test CPU 9000, 2 cores, CPython 3.11.7, Linux 6, load average 0.5 at start; 2026-01-02"
    assert where in top and detail.count(where) == len(runner.BENCHMARKS)
    # Every figure in the top table, each benchmark's own under its heading; ratios against the peer.
    assert top.count("| 2.00x the speed | ≥ 2x: met |") == len(runner.BENCHMARKS)
    assert top.count("| 1.50x the cost | ≤ 1.2x: **not met** |") == len(runner.BENCHMARKS)
    assert "| codecs | codecs speed | 200 MB/s | peer: 100 MB/s |" in top
    assert "| matrix speed | 200 MB/s | peer: 100 MB/s |" in detail.split("## matrix")[1]
    assert detail.count("tail ") == len(runner.BENCHMARKS)
    # Writing again replaces, never stacks.
    runner.write_pages(results, readme, bench)
    assert readme.read_text() == top and bench.read_text() == detail


def test_a_missing_marker_leaves_both_pages_untouched(tmp_path: Path) -> None:
    readme, bench = readmes(tmp_path)
    bench.write_text(bench.read_text().replace("<!-- bench:matrix:end -->", ""))
    before = readme.read_text(), bench.read_text()
    with pytest.raises(runner.MarkerError, match=r"bench.md: add the lines <!-- bench:matrix:start -->"):
        runner.write_pages(fake_results(), readme, bench)
    assert (readme.read_text(), bench.read_text()) == before


def test_the_real_pages_have_every_marker() -> None:
    # replace_between raises MarkerError naming the page when a marker pair is missing.
    emptied = runner.replace_between(runner.PAGE.read_text(), "all", "", runner.PAGE)
    assert "<!-- bench:all:start -->\n\n<!-- bench:all:end -->" in emptied
    for name in runner.BENCHMARKS:
        emptied = runner.replace_between(runner.BENCH_README.read_text(), name, "", runner.BENCH_README)
        assert f"<!-- bench:{name}:start -->\n\n<!-- bench:{name}:end -->" in emptied


@pytest.mark.slow
@pytest.mark.parametrize("name", runner.BENCHMARKS)
def test_run_py_smoke_runs_each_benchmark(name: str, tmp_path: Path) -> None:
    # One benchmark per test, so xdist spreads them (the whole smoke run is half a minute on one
    # core); `run.py` runs whatever `--only` lists the same way, and `BENCHMARKS` is every script.
    aimock = BENCHMARKS / "aimock" / "node_modules" / "@copilotkit" / "aimock"
    if name == "websocket" and not aimock.is_dir():  # its own setup would reach the npm registry
        pytest.skip("@copilotkit/aimock is not installed: npm ci --prefix benchmarks/aimock")
    before = runner.PAGE.read_text(), runner.BENCH_README.read_text()
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / "run.py"), "--smoke", "--only", name, "--results", str(tmp_path)],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (saved,) = tmp_path.glob("*-smoke.json")
    results = json.loads(saved.read_text())
    assert list(results["benchmarks"]) == [name]
    assert results["machine"]["cores"] and results["machine"]["python"]
    entry = results["benchmarks"][name]
    assert entry["figures"], name
    for figure in entry["figures"]:
        assert figure["benchmark"] == name
        assert all(math.isfinite(figure[k]) and figure[k] > 0 for k in ("ours", "peer", "ratio")), figure
        assert figure["what"] in done.stdout
    assert (runner.PAGE.read_text(), runner.BENCH_README.read_text()) == before
