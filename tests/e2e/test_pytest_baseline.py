"""`--toolstream-baseline` (and the marker's `baseline=True`): each served case's verdict and
failure signature kept by syrupy next to the test; a run fails only where a case got worse, and
names the cases that got better. The example agent over real loopback HTTP, as its developer runs
it (pytester)."""

from __future__ import annotations

import shutil

import openai
import pytest

from tests._pytester_support import ROOT, copy_cassettes, plugin_args, prepare

pytest_plugins = ["pytester"]
assert openai

TEST = """
import os

import openai
import pytest
from agent import calls_by_index, calls_correctly, run_agent

pytestmark = pytest.mark.toolstream_matrix(
    dialects=["openai-chat"], scenarios=["original", "parallel-calls-share-index-0"], MARKED
)


def test_agent(toolstream_served_case):
    reassemble = calls_by_index if os.environ.get("MERGE_INDEX_0") else calls_correctly
    client = openai.OpenAI(base_url=toolstream_served_case.base_url, api_key="test", max_retries=0)
    run_agent(client, "Weather and time in Paris?", reassemble=reassemble)
"""
SELECT = [
    "--toolstream-cassette-dir=corpus",
    "--toolstream-seeds",
    "1",
    "-p",
    "no:randomly",
    "-p",
    "no:cacheprovider",
]


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    prepare(pytester, monkeypatch)
    copy_cassettes(
        pytester, "openai-chat/parallel-2", "openai-chat/single-call", "openai-chat/cut-mid-arguments"
    )
    shutil.copy(ROOT / "examples" / "agent_tests" / "agent.py", pytester.path / "agent.py")
    return pytester


def failed(run: pytest.RunResult, module: str = "test_agent") -> set[str]:
    return {line.split("::", 1)[1] for line in run.outlines if line.startswith(f"FAILED {module}.py::")}


@pytest.mark.parametrize("marked", ["baseline=True", "seeds=1"])
def test_a_baseline_fails_only_what_got_worse(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, marked: str
) -> None:
    project.makepyfile(
        test_agent=TEST.replace("MARKED", marked), test_plain=TEST.replace("MARKED", "seeds=1")
    )
    option = [] if marked == "baseline=True" else ["--toolstream-baseline"]
    args = [*plugin_args(), *SELECT, *option, "test_agent.py"]
    # The merging agent without a baseline: the cases it gets wrong.
    monkeypatch.setenv("MERGE_INDEX_0", "1")
    plain = project.runpytest(*plugin_args(), *SELECT, "test_plain.py")
    wrong = failed(plain, "test_plain")
    assert wrong and all("parallel-calls-share-index-0" in name for name in wrong)
    monkeypatch.delenv("MERGE_INDEX_0")
    # Written on a run of the correct agent, the next identical run passes.
    project.runpytest(*args, "--snapshot-update").assert_outcomes(passed=4)
    assert (project.path / "__snapshots__" / "test_agent" / "baseline" / "test_agent.yaml").is_file()
    same = project.runpytest(*args)
    same.assert_outcomes(passed=4)
    same.stdout.fnmatch_lines(["baseline: 4 same"])
    # The correct agent made to merge index 0: it fails exactly where it got worse.
    monkeypatch.setenv("MERGE_INDEX_0", "1")
    worse = project.runpytest(*args)
    assert failed(worse) == wrong
    worse.stdout.fnmatch_lines(["*worse than its baseline: pass before, fail (*) now"])
    # A baseline of the merging agent's failures holds them; the correct agent then passes, with a note.
    project.runpytest(*args, "--snapshot-update").assert_outcomes(passed=4)
    project.runpytest(*args).assert_outcomes(passed=4)
    monkeypatch.delenv("MERGE_INDEX_0")
    better = project.runpytest(*args)
    better.assert_outcomes(passed=4)
    better.stdout.fnmatch_lines(["baseline: 1 better, 3 same", "  better: test_agent.py::test_agent*"])
    better.stdout.fnmatch_lines(["  tighten the baseline: run these tests again with --snapshot-update"])
    # Under xdist the workers' changes reach the controller's summary too.
    shared = project.runpytest(*args, "-n", "2")
    shared.assert_outcomes(passed=4)
    shared.stdout.fnmatch_lines(["baseline: 1 better, 3 same", "  better: test_agent.py::test_agent*"])
