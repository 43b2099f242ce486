"""The confusing messages of issue 13 ("Why"), each with its new wording. The pytest ones (dialect,
bad spec, marker, ini key, replay lines) are in test_pytest_plugin_dialects.py; show/mutate/explain
by case id in test_cli_explain.py."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from harness.cassettes.outcome import Outcome, ToolCall, diff
from harness.cli import main
from harness.oracle.verdict import Result, Verdict
from harness.search.compare import outcome_difference
from harness.text.terminal import Progress, case_name

ROOT = Path(__file__).resolve().parents[2]
SINGLE = str(ROOT / "cassettes/openai-chat/single-call.yaml")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_cmd_with_a_missing_program_is_a_usage_error_before_any_case(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run(
        capsys, "check", "--accumulator", "cmd:nonexistent-bin --flag", "--cassettes", SINGLE
    )
    assert code == 2
    assert err.strip() == (
        "toolstream check: accumulator 'cmd:nonexistent-bin --flag': "
        "program 'nonexistent-bin': not found on PATH"
    )
    assert out == ""  # no case ran
    code, _, err = run(capsys, "check", "--accumulator", "cmd:./no/such/bin", "--cassettes", SINGLE)
    assert code == 2 and "program './no/such/bin': no such executable file" in err


def test_explore_with_a_misspelt_dialect_says_did_you_mean(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "explore", "--accumulator", "reference", "--dialect", "opeanai-chat")
    assert code == 2
    assert "unknown dialect 'opeanai-chat'; did you mean 'openai-chat'?" in err
    assert "no cassettes to explore" not in err


def test_check_with_a_misspelt_dialect_or_scenario_says_did_you_mean(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, _, err = run(capsys, "check", "--accumulator", "reference", "--dialect", "antropic")
    assert code == 2 and "did you mean 'anthropic'?" in err
    code, _, err = run(capsys, "check", "--accumulator", "reference", "--scenarios", "truncated-mid-arg")
    assert code == 2 and "unknown scenario 'truncated-mid-arg'; did you mean 'truncated-mid-args'?" in err


def test_a_misspelt_builtin_accumulator_or_option_says_did_you_mean(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, _, err = run(capsys, "check", "--accumulator", "openai-skd", "--cassettes", SINGLE)
    assert code == 2 and "unknown accumulator 'openai-skd'; did you mean 'openai-sdk'?" in err
    code, _, err = run(capsys, "check", "--accumulator", "reference", "--dialetc", "openai-chat")
    assert code == 2 and "unrecognized arguments: --dialetc openai-chat; did you mean '--dialect'?" in err


def test_compare_without_out_writes_nothing_into_the_working_folder(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    accs = tmp_path / "firstonly.py"
    accs.write_text(
        "from dataclasses import replace\nfrom harness.wire import dialects\n\n"
        "class FirstOnly:\n"
        "    def __init__(self, dialect):\n        self.inner = dialects.get(dialect).accumulator()\n"
        "    def feed(self, event):\n        self.inner.feed(event)\n"
        "    def close(self, error):\n"
        "        out = self.inner.close(error)\n        return replace(out, tool_calls=out.tool_calls[:1])\n",
        encoding="utf-8",
    )
    parallel = str(ROOT / "cassettes/openai-chat/parallel-2.yaml")
    argv = ["compare", "reference", "firstonly:FirstOnly", "--cassettes", parallel, "--scenarios", "original"]
    code, out, _ = run(capsys, *argv, "--timeout", "0")
    assert code == 1
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "__pycache__") == ["firstonly.py"]
    written = out.strip().splitlines()[-1]
    assert written.startswith("reproductions written to ") and "a temporary folder" in written
    folder = Path(written.removeprefix("reproductions written to ").split(" (")[0])
    assert list(folder.glob("*.yaml"))


def _result(actual: Outcome, spec: str) -> Result:
    return Result(
        id="c::original::s0", accumulator=spec, verdict=Verdict.FAIL, expected=Outcome(), actual=actual,
        dialect="openai-chat", cassette="c", scenario="original", seed=0,
    )  # fmt: skip


def test_compare_says_missing_in_a_or_b_not_unexpected() -> None:
    one = Outcome(tool_calls=(ToolCall("a", {}),))
    two = Outcome(tool_calls=(ToolCall("a", {}), ToolCall("b", {"x": 1})))
    assert outcome_difference(_result(one, "A"), _result(two, "B")) == [
        "tool_calls: 1 in A, B has 2",
        "call 2: 'b' {\"x\":1} in B, missing in A",
    ]
    assert (
        outcome_difference(_result(two, "A"), _result(one, "B"))[1]
        == "call 2: 'b' {\"x\":1} in A, missing in B"
    )


def test_an_f2_diff_renders_non_bmp_text_alike_on_both_sides() -> None:
    joined = Outcome(tool_calls=(ToolCall("w", {"q": "rain \U0001f327"}),))
    split = Outcome(tool_calls=(ToolCall("w", {"q": "rain \ud83c\udf27"}),))
    (line,) = diff(joined, split)
    assert line == 'call 1: arguments {"q":"rain \\U0001f327"} expected, got {"q":"rain \\ud83c\\udf27"}'
    line.encode("utf-8")  # printable as it is: no lone surrogate left in the line
    # Without a lone surrogate nothing is escaped.
    assert "🌧" in diff(joined, Outcome(tool_calls=(ToolCall("w", {"q": "sun 🌧"}),)))[0]


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_shows_case_names_not_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TERM", "xterm")
    stream = _Tty()
    progress = Progress(2, label="check", stream=stream)
    path = os.path.join(
        "/venv/lib/site-packages/harness/_bundled/cassettes", "openai-chat", "parallel-2.yaml"
    )
    progress.advance(note=f"{path} x cut-mid-args s0")
    shown = stream.getvalue()
    assert "openai-chat/parallel-2 x cut-mid-args s0" in shown and "site-packages" not in shown
    assert case_name("openai-chat/parallel-2::original::s0") == "openai-chat/parallel-2::original::s0"
