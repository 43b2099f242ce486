"""Every case explainable: show and mutate take a case id (bundled and user cassettes), explain
says why a case expects what it expects, cassettes locates the bundled corpus."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from harness.cassettes.corpus import bundled
from harness.cassettes.format import load
from harness.cli import main
from harness.matrix.case_id import find_case, is_case_id
from harness.matrix.selection import Selection, build_case, cases
from harness.oracle.expectation import classify
from harness.report.explanation import SITUATIONS, situation_of

ROOT = Path(__file__).resolve().parents[2]
CUT_CASE = "openai-chat/cut-mid-arguments::D8-mid-stream-error::s0"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_case_ids_are_told_from_paths() -> None:
    assert is_case_id(CUT_CASE)
    assert is_case_id("a/b::original::s12::e7")
    assert not is_case_id("cassettes/openai-chat/parallel-2.yaml")
    assert not is_case_id("a::b::seed0")


def test_show_takes_a_case_id_of_the_bundled_corpus(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "show", CUT_CASE)
    assert code == 0
    assert f"case {CUT_CASE}: openai-chat/cut-mid-arguments mutated by scenario D8-mid-stream-error" in out
    assert "outcome: state error" in out and "Overloaded (injected by toolstream)" in out


def test_a_misspelt_case_id_says_the_closest_cassette(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "show", "openai-chat/cut-mid-argumnts::original::s0")
    assert code == 2
    assert "no cassette 'openai-chat/cut-mid-argumnts' in the bundled corpus" in err
    assert "did you mean 'openai-chat/cut-mid-arguments'?" in err


def test_a_misspelt_scenario_in_a_case_id_says_the_closest(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "explain", "openai-chat/parallel-2::D8-mid-stream-eror::s0")
    assert code == 2
    assert "unknown scenario 'D8-mid-stream-eror'; did you mean 'D8-mid-stream-error'?" in err


def test_mutate_writes_the_case_an_id_names(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, _ = run(capsys, "mutate", CUT_CASE, "-o", str(tmp_path / "case.yaml"))
    assert code == 0 and f"{CUT_CASE} (3 reads, 0 expected calls, error)" in out
    written = load(tmp_path / "case.yaml")
    assert written.interactions[0].expected == build_case(CUT_CASE).expected
    code, _, err = run(capsys, "mutate", CUT_CASE, "--scenario", "original", "-o", str(tmp_path / "x.yaml"))
    assert code == 2 and "a CASE_ID names its scenario" in err


def test_a_mutated_case_written_out_replays_as_the_case_was_judged(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # A policy case (no [DONE]: D6) written as a cassette declares its class; replayed, its one
    # case is that class again (before: "spec: the recorded stream", a warning turned failure).
    case_id = "openai-chat/parallel-2::D6-missing-done::s0"
    assert run(capsys, "mutate", case_id, "-o", str(tmp_path / "case.yaml"))[0] == 0
    declared = load(tmp_path / "case.yaml").interactions[0].declared
    assert declared is not None and declared.case_class == "policy"
    (replayed,) = cases(Selection(cassettes=(str(tmp_path / "case.yaml"),), scenarios=("original",)))
    expectation = classify(replayed)
    assert expectation.case_class == "policy" and "a finish without the terminal" in expectation.reason
    code, out, _ = run(capsys, "show", str(tmp_path / "case.yaml"), "--no-events")
    assert code == 0 and "expected class (declared): policy: a finish without the terminal" in out
    # A spec case declares nothing: its stream is judged by its protocol.
    spec_case = "openai-chat/parallel-2::original::s0"
    assert run(capsys, "mutate", spec_case, "-o", str(tmp_path / "s.yaml"))[0] == 0
    assert load(tmp_path / "s.yaml").interactions[0].declared is None


def test_user_cassettes_by_case_id(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mine = tmp_path / "mine"
    mine.mkdir()
    shutil.copy(bundled() / "openai-chat" / "parallel-2.yaml", mine / "chat.yaml")
    monkeypatch.chdir(tmp_path)
    # The id `check --cassettes mine` prints, and a path-like id from the project folder.
    ids = [case.id for case in cases(Selection(cassettes=("mine",)))]
    assert "mine/chat::original::s0" in ids
    found = find_case("mine/chat::original::s0", ["mine"])
    assert found.case.dialect == "openai-chat" and len(found.case.expected.tool_calls) == 2
    code, out, _ = run(capsys, "show", "mine/chat::truncated-mid-args::s0")
    assert code == 0 and "mutated by scenario truncated-mid-args" in out
    code, out, _ = run(capsys, "explain", "mine/chat::original::s0", "--cassettes", "mine")
    assert code == 0 and "nothing: the recorded stream, unmutated" in out
    code, out, _ = run(capsys, "mutate", "mine/chat::original::s0", "-o", "out.yaml")
    assert code == 0 and (tmp_path / "out.yaml").is_file()


def test_explain_puts_streams_side_by_side_and_names_the_rule(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "explain", CUT_CASE)
    assert code == 0
    # The step imitates D8; the stream then ends as error-then-cut, a situation docs/oracle.md calls policy.
    assert "class:    policy: an in-band error, then a transport cut" in out
    assert "[quirk: D8 an in-band error mid-call" in out
    assert re.search(
        r"1\. inject-error\(after=\"partial-call\".*\): changed #2-6 into #2 \(7 -> 3 events\)", out
    )
    assert re.search(r"^\s+2  call 1 args: .* ~ +2  \{\"error\"", out, re.M), out  # the changed event, marked
    assert "marks: ~ changed, - removed, + added" in out
    assert "expected: state error, finish_reason None, 0 call(s)" in out
    assert (
        "situation error-then-cut (docs/oracle.md, 'One rule per situation'): state error, calls none" in out
    )


def test_explain_gives_each_expected_call_its_reason(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "explain", "openai-chat/parallel-2::original::s0")
    assert code == 0
    assert "situation whole-stream" in out
    assert len(re.findall(r"^  call \d .*: every call in the stream is reported$", out, re.M)) == 2


def _oracle_rows() -> dict[str, tuple[str, str]]:
    text = (ROOT / "docs" / "oracle.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| `([a-z-]+)` \| [^|]+ \| `(\w+)` \| `(\w+)` \|", text, re.M)
    return {name: (state, calls) for name, state, calls in rows}


def test_the_situations_explain_names_are_the_oracle_docs_rows() -> None:
    rows = _oracle_rows()
    assert len(rows) >= 10
    for name, situation in SITUATIONS.items():
        if name == "whole-stream":
            continue  # the plain case, not a row of the table
        assert name in rows, name
        assert rows[name] == (str(situation.state), situation.calls), name


@pytest.mark.parametrize(
    ("case_id", "situation"),
    [
        ("openai-chat/parallel-2::original::s0", "whole-stream"),
        ("openai-chat/cut-mid-arguments::original::s0", "cut-mid-call"),
        (CUT_CASE, "error-then-cut"),
        ("openai-chat/parallel-2::D6-missing-done::s0", "finish-without-terminal"),
    ],
)
def test_situation_of_bundled_cases(case_id: str, situation: str) -> None:
    found = find_case(case_id)
    assert situation_of(found).name == situation
    assert situation_of(found).state == found.case.expected.state


def test_cassettes_locates_the_bundled_corpus(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "cassettes")
    assert code == 0 and f"bundled corpus: {bundled()}" in out
    assert re.search(r"^openai-chat\s+\d+\s+\d+$", out, re.M)
    assert f"{bundled() / 'DIALECT'}" in out  # the whole path, however long the install's prefix
    code, out, _ = run(capsys, "cassettes", "--path")
    assert out.strip() == str(bundled())
    code, out, _ = run(capsys, "cassettes", "--list")
    assert "openai-chat/cut-mid-arguments" in out


def test_explain_marks_the_events_a_step_edited(capsys: pytest.CaptureFixture[str]) -> None:
    # truncate-args edits an event's payload: explain compared the events' bytes as received, which
    # an edit leaves as they were, and said "the events are unchanged (it acts on the bytes...)".
    code, out, _ = run(capsys, "explain", "openai-chat/parallel-2::B10-truncated-args::s0")
    assert code == 0 and "the events are unchanged" not in out
    assert re.search(r"truncate-args\(.*\): changed #\d+ into #\d+", out)
    assert re.search(r"^ +\d+ .* ~ +\d+ ", out, re.M)  # the edited event marked changed side by side
