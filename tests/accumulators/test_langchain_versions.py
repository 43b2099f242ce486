"""langchain-core 1.2.13 against 1.2.14, each in its own environment, through `serve-accumulator`.

1.2.14 fixed seed 000 (parallel calls sharing index 0 merged into one); seed 001 (two same-index
fragments in one delta) is still open in the current release. `.ci/run` creates the two side
environments (`.venv-langchain-core-<version>` at the repo root) before the suite; elsewhere
these tests skip and say how to create them.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CASSETTES = ROOT / "cassettes" / "openai-chat"


def spec(version: str) -> str:
    side = f".venv-langchain-core-{version}"
    toolstream = ROOT / side / "bin" / "toolstream"
    if not toolstream.exists():
        install = f"python3 -m venv {side} && {side}/bin/pip install . langchain-core=={version}"
        pytest.skip(f"no side environment (.ci/run makes it): {install}")
    return f"cmd:{shlex.quote(str(toolstream))} serve-accumulator langchain-core"


def toolstream(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "harness.cli", *args, "--cassettes", str(CASSETTES), "--seeds", "1"]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_1_2_13_merges_parallel_calls_sharing_index_0() -> None:
    run = toolstream("check", "--accumulator", spec("1.2.13"), "--scenarios", "parallel-calls-share-index-0")
    assert run.returncode == 1, run.stdout + run.stderr
    assert "name 'get_weather' expected, got 'get_weatherget_time'" in run.stdout


@pytest.mark.slow
def test_1_2_14_keeps_them_apart() -> None:
    run = toolstream("check", "--accumulator", spec("1.2.14"), "--scenarios", "parallel-calls-share-index-0")
    assert run.returncode == 0, run.stdout + run.stderr
    assert " 0 fail" in run.stdout


@pytest.mark.slow
def test_compare_reports_the_fix(tmp_path: Path) -> None:
    run = toolstream(
        "compare", spec("1.2.13"), spec("1.2.14"), "--scenarios", "parallel-calls-share-index-0",
        "--out", str(tmp_path),
    )  # fmt: skip
    assert run.returncode == 1, run.stdout + run.stderr
    assert "DIFFERS openai-chat/parallel-2::parallel-calls-share-index-0::s0" in run.stdout
    assert "meets the expectation: B" in run.stdout
    assert any(tmp_path.glob("*.yaml"))


def test_seed_001_still_fails_in_1_2_14() -> None:
    run = toolstream(
        "check", "--accumulator", spec("1.2.14"), "--scenarios", "same-index-fragments-in-one-delta"
    )
    assert run.returncode == 1, run.stdout + run.stderr
    assert "arguments invalid JSON" in run.stdout
