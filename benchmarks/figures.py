"""What a benchmark reports: figures, each ours against a peer measured in the same run.

Every `bench_*.py` module has `measure(scale) -> list[Figure]` (what `run.py` calls) and a `main()`
that prints its own figures, so each stays runnable alone.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

ROOT = Path(__file__).resolve().parent.parent
# full: the figures the READMEs quote; quick: the same shapes, smaller (under a minute in all);
# smoke: tiny, only to prove every benchmark still runs (the test suite uses it).
Scale = Literal["full", "quick", "smoke"]
SCALES: tuple[Scale, ...] = ("full", "quick", "smoke")


@dataclass(frozen=True)
class Figure:
    """One figure: `ours` against `peer` (same unit, same run), and their ratio.

    `ratio` is ours over the peer's, read with `ratio_means` ("x the speed", "x the cost"); a goal
    is a floor (`at_least`) or a ceiling on the ratio.
    """

    benchmark: str
    what: str
    ours: float
    peer: float
    peer_name: str
    unit: str
    ratio: float
    ratio_means: str
    goal: float | None = None
    at_least: bool = True

    @property
    def met(self) -> bool | None:
        if self.goal is None:
            return None
        return self.ratio >= self.goal if self.at_least else self.ratio <= self.goal

    def goal_text(self) -> str:
        if self.goal is None:
            return ""
        verdict = "met" if self.met else "**not met**"
        return f"{'≥' if self.at_least else '≤'} {self.goal:g}x: {verdict}"

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "met": self.met}


def speedup(benchmark: str, what: str, ours: float, peer: float, peer_name: str, unit: str,
            goal: float | None = None) -> Figure:  # fmt: skip
    """A figure where more is better (a rate): ours over the peer's, "x the speed"."""
    return Figure(benchmark, what, ours, peer, peer_name, unit, ours / peer, "x the speed", goal, True)


def cost(benchmark: str, what: str, ours: float, peer: float, peer_name: str, unit: str,
         goal: float | None = None) -> Figure:  # fmt: skip
    """A figure where less is better (a time, a cost): ours over the peer's, "x the cost"."""
    return Figure(benchmark, what, ours, peer, peer_name, unit, ours / peer, "x the cost", goal, False)


def number(value: float) -> str:
    """A figure's value with about three significant digits."""
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 10:
        return f"{value:.1f}"
    if value >= 1:
        return f"{value:.2f}"
    return f"{value:.3g}"


def megabytes(size: int) -> str:
    return f"{number(size / 1024 / 1024)} MB"


def machine() -> dict[str, Any]:
    """The machine and the moment a run describes (what the READMEs print above the figures)."""
    model = platform.processor() or platform.machine()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                model = line.partition(":")[2].strip()
                break
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = ""
    return {
        "cpu": model,
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "os": f"{platform.system()} {platform.release()}",
        # A shared machine's load is the first thing to know when two runs disagree.
        "load": [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None,
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "time": datetime.now(UTC).strftime("%H:%M:%S UTC"),
        "commit": commit,
    }


def describe(host: dict[str, Any], scale: Scale) -> str:
    """One line saying where and when the figures come from."""
    load = host.get("load")
    loaded = f", load average {load[0]:g} at start" if load else ""
    commit = f", commit {host['commit']}" if host.get("commit") else ""
    how = "" if scale == "full" else f" (`--{scale}`)"
    return (
        f"{host['cpu']}, {host['cores']} cores, {host['implementation']} {host['python']}, {host['os']}"
        f"{loaded}; {host['date']}{commit}{how}."
    )


def rows(figures: list[Figure], *, markdown: bool) -> list[list[str]]:
    """What, ours, the peer, the ratio and the goal of each figure, as table cells."""
    out = []
    for f in figures:
        goal = f.goal_text() if markdown else f.goal_text().replace("**", "")
        out.append([
            f.benchmark,
            f.what,
            f"{number(f.ours)} {f.unit}",
            f"{f.peer_name}: {number(f.peer)} {f.unit}",
            f"{f.ratio:.2f}{f.ratio_means}",
            goal,
        ])  # fmt: skip
    return out


HEADER = ["benchmark", "what", "ours", "peer (same run)", "ratio", "goal"]


def table(figures: list[Figure], *, with_benchmark: bool = True) -> str:
    """The figures as a Markdown table."""
    skip = 0 if with_benchmark else 1
    lines = ["| " + " | ".join(HEADER[skip:]) + " |", "|" + " --- |" * (len(HEADER) - skip)]
    lines += ["| " + " | ".join(cells[skip:]) + " |" for cells in rows(figures, markdown=True)]
    return "\n".join(lines)


def text_table(figures: list[Figure]) -> str:
    """The figures as aligned plain text, for a terminal."""
    cells = [HEADER, *rows(figures, markdown=False)]
    widths = [max(len(row[i]) for row in cells) for i in range(len(HEADER))]
    lines = ("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)) for row in cells)
    return "\n".join(line.rstrip() for line in lines)


def parse_scale(description: str, argv: list[str] | None = None) -> Scale:
    """`--quick` or `--smoke` from a benchmark script's own command line."""
    import argparse

    parser = argparse.ArgumentParser(description=description)
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--quick", action="store_true", help="smaller inputs, fewer repetitions")
    group.add_argument("--smoke", action="store_true", help="tiny inputs: only proves it runs")
    args = parser.parse_args(argv)
    return "quick" if args.quick else "smoke" if args.smoke else "full"


def print_figures(figures: list[Figure], scale: Scale) -> None:
    print(describe(machine(), scale))
    print(text_table(figures))
    sys.stdout.flush()
