"""Side environments holding a library the main test environment does not (its pins would clash or
it is heavy): `.venv-<name>` at the repo root, built by `.ci/run` with the extra of that name.
Tests reach them through `serve-accumulator` (the harness from this checkout, on PYTHONPATH) and
skip, saying how to build them, where they are absent."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]


def side_python(extra: str) -> Path:
    """The python of `.venv-<extra>`, or a skip that says how to build it."""
    python = ROOT / f".venv-{extra}" / "bin" / "python"
    if not python.exists():
        build = f"python3 -m venv .venv-{extra} && .venv-{extra}/bin/pip install '.[{extra}]'"
        pytest.skip(f"no side environment (.ci/run makes it): {build}")
    return python


def served(extra: str, adapter: str) -> str:
    """A `cmd:` spec running `adapter` in the side environment, with this checkout's harness."""
    argv = [
        "env",
        f"PYTHONPATH={ROOT}",
        str(side_python(extra)),
        "-m",
        "harness",
        "serve-accumulator",
        adapter,
    ]
    return "cmd:" + shlex.join(argv)


def side_check(extra: str, adapter: str, cases: list[str], report: Path) -> dict[str, dict[str, Any]]:
    """`toolstream check` of `cases` through `adapter` served from `.venv-<extra>`, in one run (the
    library's import and warm-up, seconds of CPU, paid once): the JSON report's cases by id."""
    options = [option for case in cases for option in ("--case", case)]
    command = [sys.executable, "-m", "harness", "check", "--accumulator", served(extra, adapter), *options,
               "--timeout", "300", "--json", str(report)]  # fmt: skip
    run = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert run.returncode in (0, 1), run.stdout + run.stderr
    found = {case["id"]: case for case in json.loads(report.read_text())["cases"]}
    assert sorted(found) == sorted(cases), run.stdout + run.stderr
    return found
