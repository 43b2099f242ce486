"""The syrupy extension: readable YAML per cassette, --snapshot-update, shared preserving snapshots."""

from __future__ import annotations

import pytest
import yaml

from harness.cassettes.outcome import Outcome, ToolCall
from harness.plugin.snapshot import outcome_yaml
from tests._pytester_support import copy_cassettes, plugin_args, prepare

pytest_plugins = ["pytester"]

pytest.importorskip("syrupy")

TEST = """
import pytest

@pytest.mark.toolstream_matrix(scenarios=["original", "F3-one-byte-reads", "D7-truncated-mid-args"], seeds=1)
def test_reference(toolstream_case, toolstream_snapshot):
    assert toolstream_case.run("reference") == toolstream_snapshot
"""


def test_outcome_yaml_is_readable_and_leaves_usage_out() -> None:
    outcome = Outcome((ToolCall("get_weather", {"city": "Paris"}, "call_1"),), finish_reason="tool_calls",
                      usage={"total_tokens": 3})  # fmt: skip
    data = yaml.safe_load(outcome_yaml(outcome))
    assert data["tool_calls"] == [{"id": "call_1", "name": "get_weather", "arguments": {"city": "Paris"}}]
    assert "usage" not in data
    assert "city: Paris" in outcome_yaml(outcome)


def test_update_writes_yaml_snapshots_and_a_later_run_passes(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    prepare(pytester, monkeypatch)
    copy_cassettes(pytester, "openai-chat/parallel-2")
    pytester.makepyfile(test_snap=TEST)
    args = [*plugin_args(), "--toolstream-cassette-dir", "corpus", "-p", "no:randomly"]
    missing = pytester.runpytest(*args)
    assert missing.ret == pytest.ExitCode.TESTS_FAILED  # no snapshot yet
    written = pytester.runpytest(*args, "--snapshot-update")
    assert written.ret == pytest.ExitCode.OK
    files = sorted((pytester.path / "__snapshots__" / "test_snap").iterdir())
    assert [f.name for f in files] == ["corpus-openai-chat-parallel-2.yaml"]
    entries = yaml.safe_load(files[0].read_text())
    names = sorted(entries)
    # Meaning-preserving scenarios share one entry; the meaning-changing one has its own.
    assert names[0] == "test_reference"
    assert any(name.startswith("test_reference[D7-truncated-mid-args::s0") for name in names)
    assert len(entries["test_reference"]["tool_calls"]) == 2
    pytester.runpytest(*args).assert_outcomes(passed=3)
    files[0].write_text(files[0].read_text().replace("get_weather", "get_wether"))
    broken = pytester.runpytest(*args)
    assert broken.ret == pytest.ExitCode.TESTS_FAILED
    broken.stdout.fnmatch_lines(["*get_wether*"])


def test_unused_snapshots_are_reported_by_syrupy(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    prepare(pytester, monkeypatch)
    copy_cassettes(pytester, "openai-chat/parallel-2")
    pytester.makepyfile(test_snap=TEST)
    args = [*plugin_args(), "--toolstream-cassette-dir", "corpus", "-p", "no:randomly"]
    assert pytester.runpytest(*args, "--snapshot-update").ret == pytest.ExitCode.OK
    pytester.makepyfile(test_snap=TEST.replace('"F3-one-byte-reads", "D7-truncated-mid-args"', ""))
    result = pytester.runpytest(*args)
    result.stdout.fnmatch_lines(["*1 snapshot unused*"])
