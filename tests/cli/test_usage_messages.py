"""Usage errors that say what to do: a missing program named before any case runs, a misspelt
dialect, scenario, accumulator or option answered with "did you mean", a refused `repro` naming the
command that does reproduce the case; and `compare` writes nothing into the working folder
unasked. The pytest plugin's messages are in tests/plugin/test_pytest_plugin_dialects.py;
show/mutate/explain by case id in tests/cli/test_cli_explain.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cli import main

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


def test_repro_of_an_accumulator_that_cannot_resolve_is_one_line_exit_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    case_id = "openai-chat/parallel-2::parallel-calls-share-index-0::s0"
    assert main(["repro", case_id, "--accumulator", "no_such_module:Acc"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no_such_module" in err
