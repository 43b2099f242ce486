"""`toolstream check` and `toolstream compare` run the way a user runs them: exit codes 0/1/2."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from harness.cassettes import format as cassette
from harness.cli import main

ROOT = Path(__file__).resolve().parents[2]
PARALLEL = str(ROOT / "cassettes/openai-chat/parallel-2.yaml")
SINGLE = str(ROOT / "cassettes/openai-chat/single-call.yaml")
SMALL = ["--cassettes", PARALLEL, SINGLE, "--scenarios", "original", "parallel-calls-share-index-0"]

INDEX_ONLY = textwrap.dedent(
    '''
    from harness.cassettes.outcome import Outcome, State, ToolCall


    class IndexOnly:
        """OpenAI chat tool calls merged by index alone (a deliberate bug)."""

        def __init__(self, dialect):
            self.calls, self.text, self.finish = {}, "", None

        def feed(self, event):
            payload = event.payload
            for choice in (payload.get("choices") or []) if isinstance(payload, dict) else []:
                delta = choice.get("delta") or {}
                self.text += delta.get("content") or ""
                for fragment in delta.get("tool_calls") or []:
                    call = self.calls.setdefault(fragment.get("index") or 0, ["", "", None])
                    function = fragment.get("function") or {}
                    call[0] += function.get("name") or ""
                    call[1] += function.get("arguments") or ""
                    call[2] = call[2] or fragment.get("id")
                self.finish = choice.get("finish_reason") or self.finish

        def close(self, error):
            calls = tuple(ToolCall.from_text(name, args, id) for name, args, id in self.calls.values())
            state = State.COMPLETE if error is None else State.CUT
            return Outcome(
                tool_calls=calls, text=self.text, finish_reason=self.finish, state=state, error=error
            )
    '''
)


@pytest.fixture
def buggy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    (tmp_path / "cli_buggy.py").write_text(INDEX_ONLY, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("cli_buggy", None)
    return "cli_buggy:IndexOnly"


def test_check_passes_with_exit_0_and_writes_the_json_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "report.json"
    code = main(["check", "--accumulator", "reference", *SMALL, "--timeout", "0", "--json", str(out)])
    printed = capsys.readouterr().out
    assert code == 0
    assert printed.splitlines()[-1].startswith("reference: 4 cases: 4 pass, 0 fail")
    assert "original" in printed and "ok" in printed  # the grid
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["summary"]["total"] == 4 and data["summary"]["ok"] is True
    assert {c["verdict"] for c in data["cases"]} == {"pass"}
    assert {
        "id",
        "cassette",
        "scenario",
        "seed",
        "dialect",
        "accumulator",
        "expected",
        "actual",
        "diff",
    } <= set(data["cases"][0])


def test_check_fails_with_exit_1_and_each_failure_replays(
    buggy: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["check", "--accumulator", buggy, *SMALL, "--timeout", "0"])
    printed = capsys.readouterr().out
    assert code == 1
    assert "FAIL openai-chat/parallel-2::parallel-calls-share-index-0::s0" in printed
    assert "name 'read_file' expected" in printed or "name '" in printed
    replays = [line.split("replay: ", 1)[1] for line in printed.splitlines() if "replay: " in line]
    assert replays and all("--case" in r for r in replays)
    argv = shlex.split(replays[0])
    assert argv[:4] == ["toolstream", "check", "--accumulator", buggy]
    code = main([*argv[1:], "--timeout", "0"])
    again = capsys.readouterr().out
    assert code == 1 and again.splitlines()[-1].startswith(f"{buggy}: 1 cases: 0 pass, 1 fail")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--accumulator", "reference", "--scenarios", "nope"], "unknown scenario 'nope'"),
        (["--accumulator", "reference", "--cassettes", "/no/such/dir"], "no such cassette"),
        (["--accumulator", "no-such-thing", "--cassettes", SINGLE], "unknown accumulator"),
        (["--accumulator", "reference", "--cassettes", SINGLE, "--case", "a::b"], "case id"),
        (["--accumulator", "reference", "--cassettes", SINGLE, "--dialect", "klingon"], "unknown dialect"),
    ],
)
def test_check_usage_errors_exit_2_with_one_line(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", *argv, "--timeout", "0"]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and err.startswith("toolstream check: ")


def test_check_as_a_subprocess_with_workers(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    argv = [sys.executable, "-m", "harness.cli", "check", "--accumulator", "reference", *SMALL, "-j", "2"]
    done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "4 pass" in done.stdout and done.stderr == ""


def test_compare_reports_differences_and_writes_reproductions(
    buggy: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "repro"
    report = tmp_path / "compare.json"
    code = main(
        ["compare", "reference", buggy, *SMALL, "--timeout", "0", "--out", str(out), "--json", str(report)]
    )
    printed = capsys.readouterr().out
    assert code == 1
    assert "DIFFERS openai-chat/parallel-2::parallel-calls-share-index-0::s0" in printed
    assert "meets the expectation: A" in printed
    files = sorted(out.glob("*.yaml"))
    assert files and f"reproduction: {files[0]}" in printed
    for path in files:
        loaded = cassette.load(path)
        assert loaded.interactions[0].expected is not None and "shrunk" in loaded.source.provenance
    data = json.loads(report.read_text(encoding="utf-8"))
    assert data["summary"]["differences"] == len(files)
    assert main(["compare", "reference", "reference", *SMALL, "--timeout", "0", "--out", str(out)]) == 0
    assert capsys.readouterr().out.endswith("A and B agree on all 4 cases\n")


def test_lone_surrogates_in_an_outcome_are_reported_not_a_traceback(buggy: str, tmp_path: Path) -> None:
    # F2 splits an emoji's surrogate pair across fragments; a client that does not join the two
    # halves reports lone surrogates, which no UTF-8 writer takes as they are.
    out = tmp_path / "report.json"
    args = [
        "check",
        "--accumulator",
        buggy,
        "--cassettes",
        PARALLEL,
        "--scenarios",
        "F2-surrogate-pair-split",
    ]
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "harness.cli",
            *args,
            "--seeds",
            "1",
            "--json",
            str(out),
            "--html",
            str(tmp_path / "r.html"),
        ],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(tmp_path)])},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 1, run.stdout + run.stderr
    assert "Traceback" not in run.stderr
    assert "\\ud83c" in out.read_text(encoding="utf-8")  # written as the JSON escape it is
    assert json.loads(out.read_text(encoding="utf-8"))["cases"][0]["verdict"] == "fail"


WRONG_FINISH = textwrap.dedent(
    """
    from dataclasses import replace

    from harness.wire import dialects


    class WrongFinish:
        # Every call right, the finish reason worded its own way: a cosmetic difference.
        def __init__(self, dialect):
            self.inner = dialects.get(dialect).accumulator()

        def feed(self, event):
            self.inner.feed(event)

        def close(self, error):
            return replace(self.inner.close(error), finish_reason="calls")
    """
)


def test_warnings_exit_0_and_fail_check_and_compare_only_with_strict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "cli_wording.py").write_text(WRONG_FINISH, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    spec, out = "cli_wording:WrongFinish", str(tmp_path / "repro")
    assert main(["check", "--accumulator", spec, *SMALL, "--timeout", "0"]) == 0
    printed = capsys.readouterr().out
    assert "4 warnings (policy cases or cosmetic differences; --strict fails them):" in printed
    assert printed.splitlines()[-1].startswith(f"{spec}: 4 cases: 0 pass, 0 fail, 4 warn")
    assert main(["check", "--accumulator", spec, *SMALL, "--timeout", "0", "--strict"]) == 1
    assert "WARN openai-chat/parallel-2::original::s0 [cosmetic; spec]" in capsys.readouterr().out
    assert main(["compare", "reference", spec, *SMALL, "--timeout", "0", "--out", out]) == 0
    assert "(4 only warnings: --strict counts them)" in capsys.readouterr().out
    assert main(["compare", "reference", spec, *SMALL, "--timeout", "0", "--out", out, "--strict"]) == 1
