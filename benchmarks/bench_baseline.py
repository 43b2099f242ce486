"""Per-case cost against a base commit: `python benchmarks/bench_baseline.py [--quick]` from the repo root.

`toolstream check --accumulator reference` on this checkout against the same command on a base
commit (`TOOLSTREAM_BENCH_BASE`, a commit or ref, or `merge-base` for where this checkout's HEAD
and `main` part; default: main before the 2026 stream shapes, e1ce1ad), both measured in this
run: the matrix may grow (each side runs its own bundled corpus and scenarios), the cost of a
case may not (goal: at most 1.25x). The base is exported with `git archive` into a temporary
folder (the repository is not touched) and run with this interpreter, its own code first on the
path, bytecode caches written (as an installed package has them; the fresh export has none until
its first run). Each side has its own built-case store in a temporary folder, filled by a first
run that is not timed; then the two take turns, best of 3 rounds (`--quick`: 2; `--smoke`: 1),
one process each (`-j 1`, the default), over the whole matrix (`--quick`, `--smoke`: the
openai-chat cassettes only). Three figures per run: the whole command's wall time per case
(start-up included, what a user waits for), its CPU time per case (user + system, from the
child's resource usage: what a loaded machine stretches least), and the run's own time per case
as its report gives it (`summary.seconds`).
"""

from __future__ import annotations

import io
import json
import os
import resource
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from figures import Figure, Scale, cost, parse_scale, print_figures  # noqa: E402

NAME = "baseline"
ROUNDS: dict[Scale, int] = {"full": 3, "quick": 2, "smoke": 1}
DIALECTS: dict[Scale, tuple[str, ...]] = {
    "full": (),
    "quick": ("openai-chat",),
    "smoke": ("openai-chat",),
}
GOAL = 1.25


# Main before the 2026 stream shapes (issue 39), whose per-case cost the goal is measured against.
BEFORE_2026_SHAPES = "e1ce1ad"


def base_commit() -> str:
    """The commit measured against: `TOOLSTREAM_BENCH_BASE` (`merge-base`: where HEAD and `main`
    part), else main before the 2026 shapes (`BEFORE_2026_SHAPES`)."""
    said = os.environ.get("TOOLSTREAM_BENCH_BASE") or BEFORE_2026_SHAPES
    command = ["git", "merge-base", "HEAD", "main"] if said == "merge-base" else ["git", "rev-parse", said]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()


def export(commit: str, into: Path) -> Path:
    """The files of `commit`, written under `into` (no worktree, no change to the repository)."""
    archive = subprocess.run(["git", "archive", commit], cwd=ROOT, capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter=_files_only)
    return into


def _files_only(member: tarfile.TarInfo, path: str) -> tarfile.TarInfo | None:
    """Files and folders only: a link in the tree (a side environment's) is none of the code."""
    if member.issym() or member.islnk():
        return None
    return tarfile.data_filter(member, path)


Timing = tuple[float, float, float, int]  # wall seconds, CPU seconds, the run's own seconds, cases


def check(tree: Path, store: Path, dialects: tuple[str, ...], report: Path) -> Timing:
    """One `check --accumulator reference` of `tree`'s own matrix: wall seconds, CPU seconds (the
    child's user + system), the run's own seconds (its report's), and how many cases it ran."""
    command = [
        sys.executable,
        "-m",
        "harness.cli",
        "check",
        "--accumulator",
        "reference",
        "--json",
        str(report),
    ]
    for dialect in dialects:
        command += ["--dialect", dialect]
    env = {**os.environ, "TOOLSTREAM_CACHE": str(store), "PYTHONPATH": str(tree)}
    # Bytecode caches written, as an installed package has them (the base's fresh export has none).
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.pop("TOOLSTREAM_NO_CASE_CACHE", None)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode not in (0, 1):
        raise RuntimeError(f"check in {tree.name} exited {done.returncode}: {done.stderr.strip()[-400:]}")
    summary = json.loads(report.read_text())["summary"]
    return wall, cpu, float(summary["seconds"]), int(summary["total"])


def measure(scale: Scale) -> list[Figure]:
    dialects = DIALECTS[scale]
    commit = base_commit()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        trees = {"here": ROOT, "base": export(commit, folder / "base")}
        stores = {side: folder / f"store-{side}" for side in trees}
        best: dict[str, Timing] = {side: (float("inf"), float("inf"), float("inf"), 0) for side in trees}
        for side, tree in trees.items():
            check(tree, stores[side], dialects, folder / f"{side}.json")  # fills the store
        for _ in range(ROUNDS[scale]):
            for side, tree in trees.items():
                wall, cpu, own, cases = check(tree, stores[side], dialects, folder / f"{side}.json")
                kept = best[side]
                best[side] = (min(kept[0], wall), min(kept[1], cpu), min(kept[2], own), cases)
    here, base = best["here"], best["base"]
    which = "the whole matrix" if not dialects else " and ".join(dialects) + " cassettes"
    peer = f"base {commit[:7]}, {base[3]:,} cases"
    ms = 1000.0
    return [
        cost(NAME, f"`check --accumulator reference` of {which}, {here[3]:,} cases, wall time per case",
             here[0] / here[3] * ms, base[0] / base[3] * ms, peer, "ms", goal=GOAL),
        cost(NAME, "the same, CPU time per case (user + system)",
             here[1] / here[3] * ms, base[1] / base[3] * ms, peer, "ms", goal=GOAL),
        cost(NAME, "the same, the run's own time per case (its report's `seconds`)",
             here[2] / here[3] * ms, base[2] / base[3] * ms, peer, "ms", goal=GOAL),
    ]  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    scale = parse_scale((__doc__ or "").splitlines()[0], argv)
    print_figures(measure(scale), scale)
    return 0


if __name__ == "__main__":
    sys.exit(main())
