"""Exit codes mean one thing each, in every command: 0 passed, 1 a case failed, 2 bad input or
usage (one line), 3 an error of toolstream itself (one line naming it and where to report it, the
traceback only with `--debug` or `TOOLSTREAM_DEBUG=1`). A crash is never a verdict."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

import harness.cli.check
from harness.cli import main
from harness.errors import EXIT_FAILED, EXIT_INTERNAL, EXIT_OK, EXIT_USAGE, ISSUES_URL, InternalError

ROOT = Path(__file__).resolve().parents[2]
SINGLE = str(ROOT / "cassettes/openai-chat/single-call.yaml")
ANTHROPIC = str(ROOT / "cassettes/anthropic/single-call.yaml")
TRACEBACK = "Traceback (most recent call last)"


def _crash(args: object) -> int:
    raise TypeError("'<' not supported between instances of 'NoneType' and 'int'")


def test_an_internal_error_exits_3_with_one_line_naming_it_and_where_to_report_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("TOOLSTREAM_DEBUG", raising=False)
    monkeypatch.setattr(harness.cli.check, "run", _crash)
    assert main(["check", "--accumulator", "reference"]) == EXIT_INTERNAL
    said = capsys.readouterr().err
    assert TRACEBACK not in said
    assert said.count("\n") == 1, said
    assert said.startswith("toolstream check: internal error of toolstream")
    assert "TypeError: '<' not supported" in said and "tests/cli/test_cli_exit_codes.py" not in said
    assert ISSUES_URL in said and "--debug" in said and "TOOLSTREAM_DEBUG=1" in said


@pytest.mark.parametrize("how", ["option", "environment"])
def test_debug_prints_the_traceback_of_an_internal_error(
    how: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(harness.cli.check, "run", _crash)
    if how == "option":
        monkeypatch.delenv("TOOLSTREAM_DEBUG", raising=False)
        argv = ["--debug", "check", "--accumulator", "reference"]
    else:
        monkeypatch.setenv("TOOLSTREAM_DEBUG", "1")
        argv = ["check", "--accumulator", "reference"]
    assert main(argv) == EXIT_INTERNAL
    said = capsys.readouterr().err
    assert TRACEBACK in said and "in _crash" in said
    assert said.splitlines()[-1].startswith("toolstream check: internal error of toolstream")


def test_a_bug_a_check_of_ours_catches_is_an_internal_error_too(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def caught(args: object) -> int:
        raise InternalError("a case without one result per accumulator")

    monkeypatch.setattr(harness.cli.check, "run", caught)
    assert main(["check", "--accumulator", "reference"]) == EXIT_INTERNAL
    said = capsys.readouterr().err
    assert said.startswith("toolstream check: internal error") and "InternalError: a case without" in said


def test_an_internal_error_cannot_move_the_terminal(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def hostile(args: object) -> int:
        raise ValueError("bad value '\x1b[2J\x1b[31mowned'\nsecond line")

    monkeypatch.setattr(harness.cli.check, "run", hostile)
    assert main(["check", "--accumulator", "reference"]) == EXIT_INTERNAL
    said = capsys.readouterr().err
    assert "\x1b" not in said and "\\x1b[2J" in said and said.count("\n") == 1


def test_an_interrupt_still_exits_130(monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(args: object) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(harness.cli.check, "run", interrupted)
    assert main(["check", "--accumulator", "reference"]) == 130


def test_the_report_address_is_the_projects() -> None:
    urls = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["urls"]
    assert ISSUES_URL in urls.values()


def test_the_exit_codes_are_in_the_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    printed = " ".join(capsys.readouterr().out.split())
    for line in ("0 nothing failed", "1 a case failed", "2 bad input or usage", "3 an internal error"):
        assert line in printed


def test_check_client_without_j_judges_instead_of_crashing(tmp_path: Path) -> None:
    """`-j` unset reached `run_clients` as None and every `check --client` crashed (TypeError, exit 1,
    read as a failed check). A program that never asks for its stream is an `error` case: exit 1,
    a verdict, with no traceback."""
    run = subprocess.run(
        [sys.executable, "-m", "harness.cli", "check", "--client", "true", "--cassettes", SINGLE,
         "--scenarios", "original"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert TRACEBACK not in run.stderr, run.stderr
    assert run.returncode == EXIT_FAILED, run.stderr
    assert "1 cases: 0 pass, 0 fail, 1 error" in run.stdout


# ---------------------------------------------------------------------------------------------
# A user's accumulator that cannot load or start is bad input (exit 2, one line), in every command


@pytest.fixture
def user_modules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "exit_codes_broken.py").write_text("def f(:\n", encoding="utf-8")
    (tmp_path / "exit_codes_accs.py").write_text(
        textwrap.dedent(
            """
            from harness.wire import dialects as _dialects


            class OpenAIOnly:
                dialects = ("openai-chat",)

                def __init__(self, dialect):
                    self.inner = _dialects.get(dialect).accumulator()

                def feed(self, event):
                    self.inner.feed(event)

                def close(self, error):
                    return self.inner.close(error)


            class _Unstartable:
                name = "unstartable"

                def prepare(self, timeout=None):
                    raise RuntimeError("no model loaded")

                def run(self, case):
                    raise AssertionError("never reached")

                def shutdown(self):
                    pass


            unstartable = _Unstartable()
            """
        ),
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("exit_codes_broken", "exit_codes_accs"):
        sys.modules.pop(name, None)
    return tmp_path


@pytest.mark.parametrize(
    "argv",
    [
        ["explore", "--accumulator", "exit_codes_broken:f", "--cassettes", SINGLE],
        ["check", "--accumulator", "exit_codes_broken:f", "--cassettes", SINGLE],
        ["compare", "exit_codes_broken:f", "reference", "--cassettes", SINGLE],
    ],
    ids=["explore", "check", "compare"],
)
def test_a_module_with_a_syntax_error_is_one_line_and_exit_2(
    argv: list[str], user_modules: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*argv, "--timeout", "0"] if argv[0] != "explore" else argv) == EXIT_USAGE
    said = capsys.readouterr().err
    assert said.count("\n") == 1 and TRACEBACK not in said, said
    assert "exit_codes_broken" in said and "SyntaxError" in said


@pytest.mark.parametrize(
    "argv",
    [
        ["explore", "--accumulator", "exit_codes_accs:unstartable", "--cassettes", SINGLE],
        ["check", "--accumulator", "exit_codes_accs:unstartable", "--cassettes", SINGLE, "--timeout", "0"],
        ["serve-accumulator", "exit_codes_accs:unstartable"],
    ],
    ids=["explore", "check", "serve-accumulator"],
)
def test_an_accumulator_whose_prepare_raises_is_one_line_and_exit_2(
    argv: list[str], user_modules: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == EXIT_USAGE
    said = capsys.readouterr().err
    assert said.count("\n") == 1 and "internal error" not in said, said
    assert "exit_codes_accs:unstartable" in said and "RuntimeError: no model loaded" in said


# ---------------------------------------------------------------------------------------------
# An accumulator's `dialects`: the other dialects' cases are skipped and counted, as in pytest


def test_check_skips_the_dialects_an_accumulator_does_not_declare(
    user_modules: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = user_modules / "report.json"
    argv = ["check", "--accumulator", "exit_codes_accs:OpenAIOnly", "--cassettes", SINGLE, ANTHROPIC,
            "--scenarios", "original", "--timeout", "0", "--json", str(out)]  # fmt: skip
    assert main(argv) == EXIT_OK
    assert "2 cases: 1 pass, 0 fail, 0 error, 0 timeout, 1 skipped" in capsys.readouterr().out
    cases = json.loads(out.read_text(encoding="utf-8"))["cases"]
    verdicts = {case["dialect"]: (case["verdict"], case["error"]) for case in cases}
    assert verdicts == {
        "openai-chat": ("pass", None),
        "anthropic": ("skipped", "exit_codes_accs:OpenAIOnly reads openai-chat streams, not anthropic"),
    }


def test_compare_does_not_count_a_case_one_side_declares_it_does_not_read(
    user_modules: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["compare", "exit_codes_accs:OpenAIOnly", "reference", "--cassettes", SINGLE, ANTHROPIC,
            "--scenarios", "original", "--timeout", "0"]  # fmt: skip
    assert main(argv) == EXIT_OK
    printed = capsys.readouterr().out
    assert "A and B agree" in printed and "1 of the cases skipped by A or B" in printed


def test_explore_searches_only_the_declared_dialects(
    user_modules: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["explore", "--accumulator", "exit_codes_accs:OpenAIOnly", "--cassettes", SINGLE, ANTHROPIC]
    assert main([*base, "--dialect", "anthropic"]) == EXIT_USAGE
    assert "reads only openai-chat" in capsys.readouterr().err
    assert main([*base, "--max-examples", "5", "--out", str(user_modules / "found")]) == EXIT_OK


def test_a_serve_accumulator_child_skips_the_dialects_it_does_not_declare(user_modules: Path) -> None:
    argv = ["check", "--accumulator", "cmd:toolstream serve-accumulator exit_codes_accs:OpenAIOnly",
            "--cassettes", SINGLE, ANTHROPIC, "--scenarios", "original", "--json", "report.json"]  # fmt: skip
    run = subprocess.run(
        [sys.executable, "-m", "harness.cli", *argv], cwd=user_modules, capture_output=True, text=True,
        timeout=120, env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(user_modules)])},
    )  # fmt: skip
    assert run.returncode == EXIT_OK, run.stdout + run.stderr
    cases = json.loads((user_modules / "report.json").read_text(encoding="utf-8"))["cases"]
    verdicts = {case["dialect"]: case["verdict"] for case in cases}
    assert verdicts == {"openai-chat": "pass", "anthropic": "skipped"}
