"""Side environments holding a library the main test environment does not (its pins would clash or
it is heavy): `.venv-<name>` at the repo root, built by `.ci/run` with the extra of that name.
Tests reach them through `serve-accumulator` (the harness from this checkout, on PYTHONPATH) and
skip, saying how to build them, where they are absent."""

from __future__ import annotations

import shlex
from pathlib import Path

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
