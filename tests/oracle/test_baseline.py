"""A baseline of verdicts (harness.oracle.baseline) and `toolstream check --baseline FILE`: a run
fails only where a case got worse than the baseline, and names the cases that got better."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import main
from harness.oracle.baseline import Change, Entry, compare
from harness.oracle.verdict import Verdict
from tests._pytester_support import FIRST_CALL_ONLY

SELECT = [
    "--dialect",
    "openai-chat",
    "--scenarios",
    "original",
    "parallel-calls-share-index-0",
    "--seeds",
    "1",
]


@pytest.fixture
def accs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "baseline_accs.py").write_text(FIRST_CALL_ONLY)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def check(spec: str, *extra: str) -> int:
    return main(["check", "--accumulator", spec, *SELECT, *extra])


def test_compare_ranks_verdicts_and_signatures() -> None:
    fail_a, fail_b = Entry(Verdict.FAIL, "missing call"), Entry(Verdict.FAIL, "name")
    assert compare(Entry(Verdict.PASS), fail_a) is Change.WORSE
    assert compare(fail_a, fail_b) is Change.WORSE  # a known failure that changed
    assert compare(fail_a, fail_a) is Change.SAME
    assert compare(fail_a, Entry(Verdict.PASS)) is Change.BETTER
    assert compare(Entry(Verdict.WARN, "x"), Entry(Verdict.PASS)) is Change.BETTER
    assert compare(None, fail_a) is Change.NEW


def test_a_baseline_holds_the_line(accs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    baseline = str(accs / "baseline.yaml")
    wrong = "baseline_accs:FirstCallOnly"
    # Written on one run, the next identical run passes, though cases fail.
    assert check(wrong, "--baseline", baseline, "--baseline-update") == 0
    assert check(wrong, "--json", str(accs / "wrong.json")) == 1
    failing = {
        c["id"] for c in json.loads((accs / "wrong.json").read_text())["cases"] if c["verdict"] == "fail"
    }
    capsys.readouterr()
    assert check(wrong, "--baseline", baseline) == 0
    assert "baseline " in capsys.readouterr().out
    # An improvement passes, naming the cases that got better.
    assert check("reference", "--baseline", baseline) == 0
    out = capsys.readouterr().out
    assert {line.split(": ")[1] for line in out.splitlines() if line.startswith("  better: ")} == failing
    assert "tighten the baseline" in out
    # A regression fails on exactly the cases that got worse.
    assert check("reference", "--baseline", baseline, "--baseline-update") == 0
    capsys.readouterr()
    assert check(wrong, "--baseline", baseline) == 1
    out = capsys.readouterr().out
    assert {line.split(": ")[1] for line in out.splitlines() if line.startswith("  worse: ")} == failing


def test_a_bad_baseline_is_one_line_and_exit_2(accs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = accs / "bad.yaml"
    bad.write_text("cases:\n  some/case::original::s0: {verdict: maybe}\n")
    assert check("reference", "--baseline", str(bad)) == 2
    err = capsys.readouterr().err.strip()
    assert (
        len(err.splitlines()) == 1 and "bad.yaml: field cases.some/case::original::s0: verdict 'maybe'" in err
    )
    assert check("reference", "--baseline-update") == 2
