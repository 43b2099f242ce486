"""`harness.processes.python_warm`: every wait of a warm start is within the case's timeout; a
zygote that stops answering is replaced, never waited on."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from harness.accumulators.program import run_clients
from harness.matrix.selection import Selection
from harness.matrix.selection import cases as selected_cases
from harness.processes import subreaper

pytestmark = pytest.mark.skipif(not subreaper.CONTAINED, reason="Python warm starts need Linux")

ROOT = Path(__file__).resolve().parents[2]
AGENT = ROOT / "examples" / "clients" / "python-stdlib" / "agent.py"
CASES = (
    "openai-chat/single-call::original::s0",
    "openai-chat/parallel-2::original::s0",
    "openai-chat/no-arguments::original::s0",
)


def test_a_program_that_stops_its_parent_costs_each_case_no_more_than_its_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Warm, its parent is its zygote: stopped, it can neither report the run's end nor fork the
    next. Before, the next case waited 30 s for the fork (outside `--timeout`) and timed out."""
    monkeypatch.setenv("TOOLSTREAM_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("TOOLSTREAM_WARM", raising=False)
    program = tmp_path / "stops.py"
    program.write_text(
        "import os, runpy, signal\nos.kill(os.getppid(), signal.SIGSTOP)\n"
        f"runpy.run_path({str(AGENT)!r}, run_name='__main__')\n"
    )
    cases = list(selected_cases(Selection(cases=CASES)))
    timeout = 8.0
    for warm in (False, True):
        start = time.monotonic()
        report = run_clients(cases, f"exec python3 {program}", timeout=timeout, warm=warm)
        took = time.monotonic() - start
        verdicts = [str(r.verdict) for r in report.results]
        assert verdicts == ["pass"] * 3, (warm, [r.error for r in report.results])
        assert took < len(cases) * timeout, (warm, took)
