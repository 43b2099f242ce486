"""`toolstream check --client`, `client:CMD` wherever an accumulator spec goes, and
`--toolstream-client` in pytest: a real program over real sockets, judged by its follow-up request
with the verdict machinery every accumulator gets (classes and severities)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from harness.accumulators import resolve
from harness.accumulators.program import ClientProgram, run_clients
from harness.cassettes.outcome import State, ToolCall
from harness.cli import main
from harness.errors import UsageError
from harness.matrix.runner import run_matrix
from harness.matrix.selection import Selection
from harness.matrix.selection import cases as selected_cases
from harness.mutate.scenario import Case
from harness.oracle.evidence import Evidence, judge_client
from harness.oracle.severity import Severity
from harness.oracle.verdict import Verdict
from harness.serve import Turn
from harness.serve.followup import ToolResult
from tests._pytester_support import copy_cassettes, plugin_args, prepare

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[2]
AGENT = ROOT / "examples" / "clients" / "python-stdlib" / "agent.py"
COMMAND = f"{sys.executable} {AGENT}"

SINGLE = "openai-chat/single-call::original::s0"
PARALLEL = "openai-chat/parallel-2::original::s0"
SHARED_INDEX = "openai-chat/parallel-2::parallel-calls-share-index-0::s0"
CUT = "openai-chat/cut-mid-arguments::original::s0"
ANTHROPIC_ERROR = "anthropic/overloaded-mid-call::original::s0"
CASES = (SINGLE, PARALLEL, SHARED_INDEX, CUT)


@pytest.fixture(scope="module")
def cases() -> dict[str, Case]:
    return {case.id: case for case in selected_cases(Selection(cases=(*CASES, ANTHROPIC_ERROR)))}


def plain(results: list) -> list[tuple[str, str, tuple[str, ...], tuple[str, ...]]]:
    return [(r.id, str(r.verdict), r.diff, tuple(str(s) for s in r.severities)) for r in results]


def test_check_client_judges_each_case_with_classes_and_severities(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["check", "--client", COMMAND, "--json", str(tmp_path / "r.json"), "-j", "2", "--timeout", "20"]
    code = main([*args, *(a for c in CASES for a in ("--case", c))])
    out = capsys.readouterr().out
    assert code == 1
    by_id = {c["id"]: c for c in json.loads((tmp_path / "r.json").read_text())["cases"]}
    assert [by_id[c]["verdict"] for c in CASES] == ["pass", "pass", "fail", "fail"]
    merged = by_id[SHARED_INDEX]
    # Keyed by index alone: both calls merged under the first one's id (unsafe), the second lost.
    assert merged["class"] == "quirk" and merged["severity"] == "unsafe"
    assert "call 1: name 'get_weather' expected, got 'get_weatherget_time'" in merged["diff"]
    assert set(merged["severities"]) == {"unsafe", "lost"}
    assert not any(line.startswith(("unsafe:", "lost:")) for c in by_id.values() for line in c["diff"])
    # http.client ends a cut chunked body quietly: the half-streamed call runs, and the follow-up shows it.
    assert by_id[CUT]["severities"] == ["unsafe"] * len(by_id[CUT]["diff"])
    assert f"replay: toolstream check --accumulator 'client:{COMMAND}' --case {SHARED_INDEX}" in out


def test_check_client_and_the_client_spec_under_the_runner_agree() -> None:
    """One server and threads (`check --client`), or a server per worker process (`client:CMD`
    under the runner, as compare and pytest run it): the same verdicts."""
    selection = Selection(cases=CASES)
    served = run_clients(list(selected_cases(selection)), COMMAND, jobs=2, timeout=20)
    matrix = run_matrix(f"client:{COMMAND}", selection, timeout=30, jobs=2)
    assert plain(matrix.results) == plain(served.results)
    assert matrix.accumulator == served.accumulator == f"client:{COMMAND}"


def test_compare_takes_client_specs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        ["compare", "reference", f"client:{COMMAND}", "--case", PARALLEL, "--case", SHARED_INDEX,
         "--out", str(tmp_path / "repro"), "--timeout", "20"]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert code == 1 and f"DIFFERS {SHARED_INDEX}" in out and f"DIFFERS {PARALLEL}" not in out
    assert "B has 'get_weatherget_time'" in out and "A and B differ on 1 of 2 cases" in out


def test_the_client_spec_resolves_and_refuses_an_empty_command() -> None:
    program = resolve("client: python agent.py")
    assert isinstance(program, ClientProgram) and program.command == "python agent.py"
    with pytest.raises(UsageError, match="needs a command"):
        resolve("client:  ")


def test_a_program_that_cannot_be_judged_gets_a_stated_verdict(cases: dict[str, Case]) -> None:
    """Exit 0 with nothing sent back on a case that finished calls: every call lost, and said why;
    a crash there after asking for the stream is the raise its user gets (judged); on a cut or
    error case, ending (any code) after asking is right. Never asking is an error (nothing to
    judge) on every case, whatever the exit code: a program that cannot start passes nothing."""
    silent = judge_client(cases[PARALLEL], "x", Evidence(exit_code=0, requests=1))
    assert silent.verdict is Verdict.FAIL and set(silent.severities) == {Severity.LOST}
    assert "exited 0 without sending any call back" in (silent.error or "")
    stderr = "x\nTypeError: boom\n\nNode.js v20\n"
    crashed = judge_client(cases[PARALLEL], "x", Evidence(exit_code=1, stderr=stderr, requests=1))
    assert crashed.verdict is Verdict.FAIL and crashed.severity is Severity.LOST
    assert "state: complete expected, got error (TypeError: boom)" in crashed.diff
    unstarted = judge_client(cases[PARALLEL], "x", Evidence(exit_code=1, stderr=stderr))
    assert unstarted.verdict is Verdict.ERROR and (unstarted.error or "").endswith("TypeError: boom")
    for cut in (CUT, ANTHROPIC_ERROR):
        assert cases[cut].expected.state is not State.COMPLETE
        for code in (0, 1):
            assert judge_client(cases[cut], "x", Evidence(exit_code=code, requests=1)).verdict is Verdict.PASS
            never = judge_client(cases[cut], "x", Evidence(exit_code=code))
            assert never.verdict is Verdict.ERROR and "without asking for the stream" in (never.error or "")
    never = judge_client(cases[PARALLEL], "x", Evidence(exit_code=0))
    assert never.verdict is Verdict.ERROR
    timed_out = judge_client(cases[PARALLEL], "x", Evidence(timed_out=True))
    assert timed_out.verdict is Verdict.TIMEOUT


def test_a_followup_in_another_order_is_the_same_calls(cases: dict[str, Case]) -> None:
    calls = cases[PARALLEL].expected.tool_calls
    turn = Turn(tuple(reversed(calls)), tuple(ToolResult(c.id, None, "ok") for c in calls))
    assert judge_client(cases[PARALLEL], "x", Evidence(followup=turn)).verdict is Verdict.PASS


def test_a_result_for_a_call_the_turn_does_not_carry_is_unsafe(cases: dict[str, Case]) -> None:
    first = cases[SINGLE].expected.tool_calls[0]
    turn = Turn((first,), (ToolResult(first.id, None, "ok"), ToolResult("call_other", "rm", "ok")))
    result = judge_client(cases[SINGLE], "x", Evidence(followup=turn))
    assert result.verdict is Verdict.FAIL and result.severity is Severity.UNSAFE


def test_a_followup_with_other_arguments_is_unsafe_and_a_missing_one_lost(cases: dict[str, Case]) -> None:
    want = cases[PARALLEL].expected.tool_calls
    other = ToolCall(want[0].name, {"city": "Rome"}, want[0].id)
    result = judge_client(cases[PARALLEL], "x", Evidence(followup=Turn((other,), ())))
    assert list(zip(result.diff, result.severities, strict=True)) == [
        ("tool_calls: 2 expected, got 1", Severity.UNSAFE),
        ('call 1: arguments {"city":"Paris"} expected, got {"city":"Rome"}', Severity.UNSAFE),
        ('call 2: \'get_time\' {"timezone":"Europe/Paris"} expected, missing', Severity.LOST),
    ]


@pytest.mark.slow
def test_pytest_runs_a_program_per_matrix_case(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    prepare(pytester, monkeypatch)
    copy_cassettes(pytester, "openai-chat/parallel-2")
    result = pytester.runpytest(
        *plugin_args(), "--toolstream-cassette-dir", "corpus", "-p", "no:randomly",
        "--toolstream-scenarios", "original,parallel-calls-share-index-0", "--toolstream-seeds", "1",
        "--toolstream-client", COMMAND,
    )  # fmt: skip
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*get_weatherget_time*", f"*client:{COMMAND}*"])
