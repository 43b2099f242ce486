"""Every Python example of docs/pytest.md before "Recording in your test suite" (whose ini and
conftest examples tests/plugin/test_recording_in_a_suite.py runs) runs as a test file, the way a user would
paste it."""

from __future__ import annotations

import re

import pytest

from tests._pytester_support import ROOT, plugin_args, prepare

pytest_plugins = ["pytester"]

PAGE = ROOT / "docs" / "pytest.md"


def python_blocks() -> list[str]:
    text = PAGE.read_text(encoding="utf-8")
    section = text[: text.index("\n## Recording in your test suite\n")]
    return re.findall(r"```python\n(.*?)```", section, re.S)


def test_the_doc_has_four_examples() -> None:
    assert len(python_blocks()) == 4


@pytest.mark.slow
def test_examples_pass_recording_then_replaying(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    prepare(pytester, monkeypatch)
    names = ["test_weather", "test_matrix", "test_compare", "test_properties"]
    pytester.makepyfile(**dict(zip(names, python_blocks(), strict=True)))
    recorded = pytester.runpytest(*plugin_args(), "--toolstream-record-mode", "once", "-p", "no:randomly")
    total = recorded.parseoutcomes()["passed"]
    recorded.assert_outcomes(passed=total)
    assert total > 4  # one per case in the two matrix examples, plus the recording and the property test
    assert (pytester.path / "cassettes" / "test_weather" / "test_weather_call.toolstream.yaml").is_file()
    replayed = pytester.runpytest(*plugin_args(), "-p", "no:randomly")
    replayed.assert_outcomes(passed=total)
