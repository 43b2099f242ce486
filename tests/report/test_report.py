"""The JSON report and the terminal rendering: grid, failure signatures, diffs with replay commands."""

from __future__ import annotations

import json
import shlex
from dataclasses import replace
from pathlib import Path

from harness.cassettes.outcome import Outcome, State, ToolCall, diff
from harness.matrix.selection import Selection
from harness.oracle.expectation import CaseClass
from harness.oracle.severity import differences
from harness.oracle.verdict import Report, Result, Verdict, error_signature, verdict_for
from harness.report.results import (
    comparison_to_dict,
    render_check,
    render_comparison,
    replay_command,
    report_to_dict,
    signature,
    write_json,
)
from harness.search.compare import Comparison, Difference

EXPECTED = Outcome(
    tool_calls=(ToolCall("read", {"path": "a"}, "call_1"), ToolCall("search", {"q": "x"}, "call_2")),
    finish_reason="tool_calls",
)


def _result(
    cassette: str = "openai-chat/parallel-2",
    scenario: str = "original",
    verdict: Verdict = Verdict.PASS,
    actual: Outcome | None = EXPECTED,
    error: str | None = None,
    seed: int = 0,
) -> Result:
    lines = tuple(diff(EXPECTED, actual)) if actual is not None else ()
    return Result(
        id=f"{cassette}::{scenario}::s{seed}",
        cassette=cassette,
        scenario=scenario,
        seed=seed,
        dialect="openai-chat",
        accumulator="mine:Acc",
        verdict=verdict,
        expected=EXPECTED,
        actual=actual,
        diff=lines,
        error=error,
        seconds=0.001,
    )


MERGED = Outcome(tool_calls=(ToolCall("readsearch", {"path": "a"}, "call_1"),), finish_reason="tool_calls")


def test_signature_abstracts_call_numbers_and_values() -> None:
    merged = _result(verdict=Verdict.FAIL, actual=MERGED)
    assert signature(merged) == "missing call; name concatenated; tool_calls count"
    other = Outcome(tool_calls=(ToolCall("writeedit", {"x": 1}, "call_9"),), finish_reason="tool_calls")
    assert signature(_result(scenario="B3", verdict=Verdict.FAIL, actual=other)).startswith(
        "arguments differ"
    )
    cut = Outcome(tool_calls=EXPECTED.tool_calls, finish_reason=None, state=State.CUT)
    assert (
        signature(_result(verdict=Verdict.FAIL, actual=cut))
        == "finish_reason differs; state complete expected, got cut"
    )
    assert (
        signature(_result(verdict=Verdict.TIMEOUT, actual=None, error="no outcome within 2 s")) == "timeout"
    )
    one = signature(_result(verdict=Verdict.ERROR, actual=None, error="KeyError: 'index' at 12"))
    two = signature(_result(verdict=Verdict.ERROR, actual=None, error="KeyError: 'id' at 40"))
    assert one == two and one.startswith("error: KeyError")
    # A stdio process's errors name their case: the same error on two cases is one kind.
    said = "cmd:acc: case {}: the process exited with status 1 before answering"
    first, second = (
        signature(_result(verdict=Verdict.ERROR, actual=None, error=said.format(case_id)))
        for case_id in ("openai-chat/parallel-2::original::s0", "anthropic/sub/cut-mid-args::D7-x::s3")
    )
    assert first == second == "error: cmd:acc: case …: the process exited with status … before answering"
    # Only the head of a message is read: a 3 MB raise (or a line of `a::` that would make the
    # case-id pattern backtrack for minutes) signs as its first 300 characters do.
    for huge in ("ValueError: " + "x" * 3_000_000, "'a::" * 1_000_000):
        assert error_signature(huge) == error_signature(huge[:300])


def test_small_matrix_prints_a_grid_failures_with_replay_and_summary() -> None:
    report = Report(
        "mine:Acc",
        [
            _result(),
            _result(scenario="A1", verdict=Verdict.FAIL, actual=MERGED),
            _result(cassette="openai-chat/single-call"),
            _result(cassette="openai-chat/single-call", scenario="A1", verdict=Verdict.SKIPPED, actual=None),
        ],
        seconds=0.5,
    )
    selection = Selection(cassettes=("my cassettes",))
    text = render_check(report, selection=selection, width=120)
    assert "scenario" in text and "1: openai-chat/parallel-2" in text
    grid = [line.split() for line in text.splitlines() if line.startswith(("original", "A1"))]
    assert grid == [["original", "ok", "ok"], ["A1", "FAIL", "skip"]]
    assert "FAIL openai-chat/parallel-2::A1::s0" in text
    assert "  call 1: name 'read' expected, got 'readsearch'" in text
    replay = next(line for line in text.splitlines() if "replay:" in line).split("replay: ", 1)[1]
    assert shlex.split(replay) == [
        "toolstream", "check", "--accumulator", "mine:Acc", "--cassettes", "my cassettes",
        "--case", "openai-chat/parallel-2::A1::s0",
    ]  # fmt: skip
    assert text.splitlines()[-1].startswith(
        "mine:Acc: 4 cases: 2 pass, 1 fail, 0 error, 0 timeout, 1 skipped"
    )
    assert text.endswith("FAILED")


def test_large_matrix_groups_failures_by_signature() -> None:
    results = [
        _result(cassette=f"c{n}", scenario=f"s{n % 3}", verdict=Verdict.FAIL, actual=MERGED)
        for n in range(14)
    ]
    results += [_result(cassette=f"c{n}") for n in range(14)]
    text = render_check(Report("mine:Acc", results), max_failures=2, width=150)
    assert text.startswith("14 failures, all: missing call; name concatenated; tool_calls count")
    assert "... and 12 more failures" in text
    results.append(_result(cassette="c0", scenario="x", verdict=Verdict.TIMEOUT, actual=None, error="slow"))
    text = render_check(Report("mine:Acc", results), max_failures=0, width=150)
    assert text.startswith("15 failures in 2 kinds")
    assert "TIMEOUT c0::x::s0\n  slow\n  replay:" in text


def test_json_report_lists_every_case_and_is_written_atomically(tmp_path: Path) -> None:
    report = Report(
        "mine:Acc", [_result(), _result(scenario="A1", verdict=Verdict.FAIL, actual=MERGED)], 1.25
    )
    path = write_json(report_to_dict(report, Selection(seeds=2)), tmp_path / "sub" / "report.json")
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["summary"] == {
        "accumulator": "mine:Acc", "total": 2, "pass": 1, "fail": 1, "warn": 0, "error": 0, "timeout": 0,
        "skipped": 0, "ok": False, "strict": False, "seconds": 1.25,
    }  # fmt: skip
    assert data["selection"]["seeds"] == 2
    case = data["cases"][1]
    assert set(case) == {
        "id", "cassette", "scenario", "seed", "dialect", "accumulator", "verdict", "expected", "actual",
        "diff", "severities", "severity", "class", "class_reason", "error", "seconds", "root_cause",
    }  # fmt: skip
    assert case["root_cause"] == "name concatenated"  # a failure says which bug it most likely is
    assert (
        case["verdict"] == "fail" and case["diff"] and case["actual"]["tool_calls"][0]["name"] == "readsearch"
    )
    assert Result.from_dict(case) == report.results[1]
    assert [p.name for p in path.parent.iterdir()] == ["report.json"]  # no temp file left behind


def test_replay_command_quotes() -> None:
    assert (
        replay_command("cmd:node acc.js", "a::b::s0")
        == "toolstream check --accumulator 'cmd:node acc.js' --case a::b::s0"
    )


def test_comparison_rendering_and_json() -> None:
    a = _result(scenario="A1")
    b = _result(scenario="A1", verdict=Verdict.FAIL, actual=MERGED)
    assert a.actual is not None and b.actual is not None
    difference = Difference(a, b, tuple(diff(a.actual, b.actual)))
    comparison = Comparison(Report("reference", [a]), Report("mine:Acc", [b]), [difference])
    text = render_comparison(comparison, {a.id: Path("out/x.yaml")})
    assert "DIFFERS openai-chat/parallel-2::A1::s0" in text
    assert "meets the expectation: A" in text and "reproduction: out/x.yaml" in text
    assert "B: fail: [readsearch(" in text
    assert text.endswith("A and B differ on 1 of 1 cases")
    data = comparison_to_dict(comparison, {a.id: Path("out/x.yaml")})
    assert data["summary"]["differences"] == 1 and data["differences"][0]["meets_expectation"] == "A"
    same = render_comparison(Comparison(Report("reference", [a]), Report("reference", [a]), []))
    assert same.endswith("A and B agree on all 1 cases")


def test_session_document_picks_its_shape() -> None:
    from harness._version import __version__
    from harness.report.results import (
        REPORT_VERSION,
        comparison_to_dict,
        report_to_dict,
        session_to_dict,
    )

    one, two = Report("reference", [_result("a")]), Report("mine:Acc", [_result("b")])
    assert session_to_dict([one]) == report_to_dict(one)
    assert session_to_dict([one, two]) == {
        "version": REPORT_VERSION,
        "harness": __version__,  # a session document names the harness that wrote it, as one report does
        "reports": [report_to_dict(one), report_to_dict(two)],
    }
    comparison = Comparison(one, two, [])
    assert session_to_dict([one, two], comparison) == comparison_to_dict(comparison)


CUT = Outcome(tool_calls=EXPECTED.tool_calls, finish_reason="tool_calls", state=State.CUT)
CUT_EXTRA = Outcome(
    tool_calls=(*EXPECTED.tool_calls, ToolCall("write", {}, "call_3")),
    finish_reason="tool_calls",
    state=State.CUT,
)


def _cut_results() -> list[Result]:
    """The issue's case: one scenario shows two kinds that share a difference."""
    complete = Outcome(tool_calls=EXPECTED.tool_calls, finish_reason="tool_calls")
    out = []
    for n, got in enumerate([complete, complete, replace(CUT_EXTRA, state=State.COMPLETE)]):
        lines = tuple(diff(CUT, got))
        out.append(
            replace(
                _result(cassette=f"c{n}", scenario="cut-mid-args", verdict=Verdict.FAIL, actual=got),
                expected=CUT,
                diff=lines,
            )
        )
    return out


def test_large_matrix_says_each_signature_once() -> None:
    results = _cut_results() + [
        _result(cassette=f"c{n}", scenario=f"s{n}", verdict=Verdict.FAIL, actual=MERGED) for n in range(9)
    ]
    text = render_check(Report("mine:Acc", results), max_failures=0, width=150)
    kinds = {signature(r) for r in results}
    assert len(kinds) == 3
    for kind in kinds:
        assert sum(line.endswith(kind) for line in text.splitlines()) == 1, kind
    assert "== kind 1 (9 cases)" in text and "== kind 2 (2 cases)" in text


def test_pytest_summary_names_each_kind_once_and_scenarios_by_number() -> None:
    from harness.plugin.items import MatrixResults, result_property

    collected = MatrixResults()
    results = [*_cut_results(), _result(scenario="A1", verdict=Verdict.FAIL, actual=MERGED)]
    collected.take(result_property(r) for r in results)
    lines = collected.summary_lines()
    assert lines[:5] == [
        "mine:Acc: 4 cases: 4 fail",
        "4 failures in 3 kinds:",
        "    1.     2  state cut expected, got complete",
        "    2.     1  extra call; state cut expected, got complete; tool_calls count",
        "    3.     1  missing call; name concatenated; tool_calls count",
    ]
    # Was "cut-mid-args: state cut expected, got complete; extra call; state cut expected, ...".
    assert lines[5:] == ["by scenario:", "      3  cut-mid-args: kinds 1, 2", "      1  A1: kind 3"]
    one = MatrixResults()
    one.take([result_property(_result(scenario="A1", verdict=Verdict.FAIL, actual=MERGED))])
    assert one.summary_lines()[1:] == [
        "1 failures, all: missing call; name concatenated; tool_calls count",
        "by scenario:",
        "      1  A1",
    ]


def _judged(
    scenario: str, actual: Outcome, case_class: CaseClass = CaseClass.SPEC, cassette: str = "c"
) -> Result:
    """A result as `judge` makes it: diff lines with their severities, the verdict by the rule."""
    found = differences(EXPECTED, actual)
    severities = tuple(s for _, s in found)
    return replace(
        _result(cassette=cassette, scenario=scenario, actual=actual),
        verdict=verdict_for(case_class, severities),
        diff=tuple(line for line, _ in found),
        severities=severities,
        case_class=case_class,
        class_reason="because",
    )


COSMETIC = Outcome(tool_calls=EXPECTED.tool_calls, finish_reason="tool_call")  # a word of its own
LOST = Outcome(tool_calls=EXPECTED.tool_calls[:1], finish_reason="tool_calls")


def test_failures_worst_first_with_severity_and_class_warnings_apart() -> None:
    results = [_judged("lost", LOST, CaseClass.QUIRK, cassette=f"c{n}") for n in range(3)]
    results += [_judged("merged", MERGED, cassette="m")]
    results += [_judged("cosmetic", COSMETIC, cassette=f"w{n}") for n in range(2)]
    results += [_judged("policy", MERGED, CaseClass.POLICY, cassette="p")]
    results += [_result(cassette=f"ok{n}") for n in range(9)]
    report = Report("mine:Acc", results)
    assert [r.verdict for r in results[:7]] == [Verdict.FAIL] * 4 + [Verdict.WARN] * 3
    text = render_check(report, max_failures=0, width=150)
    kinds = [line for line in text.splitlines() if line[:4].strip().rstrip(".").isdigit()]
    # The merge (unsafe) before the larger group of lost calls.
    assert "[unsafe; spec] missing call; name concatenated" in kinds[0]
    assert "[lost; quirk 3] missing call; tool_calls count" in kinds[1]
    assert "FAIL m::merged::s0 [unsafe; spec]" in text
    assert "  unsafe    call 1: name 'read' expected, got 'readsearch'" in text
    warnings = text.split("3 warnings (policy cases or cosmetic differences; --strict fails them):", 1)[1]
    assert "policy unsafe   missing call; name concatenated; tool_calls count" in warnings
    assert "spec   cosmetic finish_reason differs" in warnings and "e.g. w0::cosmetic::s0" in warnings
    assert "WARN" not in text  # a warning is not listed as a failure
    assert text.splitlines()[-1].startswith("mine:Acc: 16 cases: 9 pass, 4 fail, 3 warn, 0 error")
    report.strict = True
    strict = render_check(report, max_failures=0, width=150)
    assert "WARN w0::cosmetic::s0 [cosmetic; spec]" in strict and "warnings (" not in strict
    assert strict.endswith("FAILED (strict: warnings fail)")


def test_a_run_of_warnings_only_is_ok() -> None:
    report = Report("mine:Acc", [_judged("cosmetic", COSMETIC), _result(cassette="ok")])
    assert report.ok and render_check(report, width=120).endswith(" ok")
    data = report_to_dict(report)
    assert data["summary"]["warn"] == 1 and data["summary"]["ok"] is True
    case = data["cases"][0]
    assert (case["verdict"], case["class"], case["severity"]) == ("warn", "spec", "cosmetic")
    assert case["severities"] == ["cosmetic"]


def test_a_compare_difference_counts_only_where_a_side_fails() -> None:
    from harness.report.results import counts

    a = _result(scenario="x")
    warned = _judged("x", COSMETIC, cassette=a.cassette)
    failed = _judged("x", LOST, cassette=a.cassette)
    assert a.actual is not None and warned.actual is not None and failed.actual is not None
    soft = Difference(a, warned, tuple(diff(a.actual, warned.actual)))
    hard = Difference(a, failed, tuple(diff(a.actual, failed.actual)))
    assert not counts(soft) and counts(soft, strict=True) and counts(hard)
    comparison = Comparison(Report("reference", [a, a]), Report("mine:Acc", [warned, failed]), [soft, hard])
    text = render_comparison(comparison)
    assert "(warning: neither side fails its case)" in text
    assert text.endswith("A and B differ on 2 of 2 cases (1 only warnings: --strict counts them)")
    assert "B: fail (lost): [read(" in text
    data = comparison_to_dict(comparison)
    assert data["summary"]["failing"] == 1 and [d["warn"] for d in data["differences"]] == [True, False]


def test_a_written_report_clips_long_strings_and_nulls_what_json_lacks_at_any_depth(tmp_path: Path) -> None:
    """One walk over the document does both: every string past `LONG_VALUE` cut (in dicts, lists,
    tuples and other mappings, a `str` subclass too), every NaN and infinity null; the rest as is."""
    from types import MappingProxyType

    from harness.oracle.severity import Severity
    from harness.text.terminal import LONG_VALUE, clip

    long = "x" * (LONG_VALUE + 1)
    data = {
        "a": [long, 1, True, None, 2.5, float("nan"), ("y", float("-inf"))],
        "b": MappingProxyType({"c": {"d": long}}),
        "e": Severity.LOST,
        "f": "short",
    }
    written = json.loads(write_json(data, tmp_path / "r.json").read_text())
    assert written == {
        "a": [clip(long), 1, True, None, 2.5, None, ["y", None]],
        "b": {"c": {"d": clip(long)}},
        "e": "lost",
        "f": "short",
    }
