"""The verdict model: judging one case (class, severity, pass/fail/warn), and failure signatures that
ignore values."""

from __future__ import annotations

import pickle
from dataclasses import replace
from typing import Any

from harness.cassettes.outcome import Outcome, ServerCall, State
from harness.matrix.judging import judge
from harness.matrix.selection import Selection, build_case
from harness.oracle.expectation import CaseClass
from harness.oracle.severity import Severity
from harness.oracle.verdict import Report, Result, Verdict, diff_signature, verdict_for
from tests._runner_accumulators import SINGLE


def test_judge_maps_a_non_outcome_to_error() -> None:
    class Odd:
        name = "odd"

        def run(self, case: object) -> object:
            return {"tool_calls": []}

        def shutdown(self) -> None:
            pass

    case = build_case("openai-chat/single-call::original::s0", Selection(cassettes=(SINGLE,)))
    result = judge(Odd(), "odd", case)  # type: ignore[arg-type]
    assert result.verdict is Verdict.ERROR and "not an Outcome" in (result.error or "")


def test_diff_signature_is_the_same_bug_whatever_the_values() -> None:
    one = ["tool_calls: 2 expected, got 1", "call 1: name 'a' expected, got 'aa'"]
    two = ["tool_calls: 3 expected, got 1", "call 1: name 'get_x' expected, got 'get_xget_x'"]
    assert diff_signature(one) == diff_signature(two) == "name concatenated; tool_calls count"
    assert diff_signature(["state: complete expected, got cut"]) != diff_signature(one)


def test_a_gateway_line_is_signed_by_its_rule_whatever_the_hop_event_and_count() -> None:
    one = [
        "gateway openai-chat -> anthropic: anthropic.block-overlap at event 9: block 1 starts while "
        "['0'] open",
        "gateway openai-chat -> anthropic: gateway.calls: call 2: arguments {\"a\":1} expected, got {}",
    ]
    two = [
        "gateway openai-chat -> anthropic: anthropic.block-overlap at event 4: block 2 starts while "
        "['1'] open (and 3 more)",
        "gateway openai-chat -> anthropic: gateway.calls: call 1: arguments {\"b\":2} expected, got {}",
    ]
    signed = "anthropic.block-overlap; gateway.calls: arguments differ"
    assert diff_signature(one) == diff_signature(two) == signed


class _Fixed:
    """Answers every case with one outcome."""

    name = "fixed"

    def __init__(self, outcome: Outcome) -> None:
        self.outcome = outcome

    def run(self, case: object) -> Outcome:
        return self.outcome

    def shutdown(self) -> None:
        pass


def test_the_rule_unsafe_or_lost_fail_spec_and_quirk_cases_the_rest_warns() -> None:
    assert verdict_for(CaseClass.SPEC, []) is Verdict.PASS
    assert verdict_for(CaseClass.SPEC, [Severity.COSMETIC, Severity.LOST]) is Verdict.FAIL
    assert verdict_for(CaseClass.QUIRK, [Severity.UNSAFE]) is Verdict.FAIL
    assert verdict_for(CaseClass.SPEC, [Severity.COSMETIC]) is Verdict.WARN
    assert verdict_for(CaseClass.POLICY, [Severity.UNSAFE]) is Verdict.WARN


def test_a_cut_case_reporting_the_unfinished_call_fails_as_unsafe() -> None:
    case = build_case("openai-chat/single-call::truncated-mid-args::s0")
    whole = build_case("openai-chat/single-call::original::s0").expected
    assert case.expected.tool_calls == () and whole.tool_calls
    result = judge(_Fixed(replace(whole, state=State.CUT)), "fixed", case)  # type: ignore[arg-type]
    assert result.verdict is Verdict.FAIL and result.case_class is CaseClass.SPEC
    assert result.severity is Severity.UNSAFE and len(result.severities) == len(result.diff)


def test_a_cosmetic_difference_and_a_policy_case_warn_and_fail_only_when_strict() -> None:
    case = build_case("openai-chat/single-call::original::s0")
    result = judge(_Fixed(replace(case.expected, text=case.expected.text + "!")), "fixed", case)  # type: ignore[arg-type]
    assert result.verdict is Verdict.WARN and result.severity is Severity.COSMETIC
    assert not result.failed and not result.fails() and result.fails(strict=True)
    policy = build_case("openai-chat/single-call::D6-missing-done::s0")
    lost = judge(_Fixed(Outcome()), "fixed", policy)  # type: ignore[arg-type]
    assert lost.case_class is CaseClass.POLICY and lost.severity is Severity.LOST
    assert lost.verdict is Verdict.WARN
    report = Report("fixed", [result, lost])
    assert report.ok and report.warnings == [result, lost] and report.failures == []
    assert report.summary()["warn"] == 2
    report.strict = True
    assert not report.ok and report.failures == [result, lost] and report.warnings == []


def test_class_and_severities_survive_the_json_form() -> None:
    case = build_case("openai-chat/single-call::D6-missing-done::s0")
    result = replace(judge(_Fixed(Outcome()), "fixed", case), seconds=0.5)  # type: ignore[arg-type]
    data = result.to_dict()
    assert data["class"] == "policy" and data["severity"] == "lost" and data["class_reason"]
    assert len(data["severities"]) == len(data["diff"])
    assert Result.from_dict(data) == result
    passing = judge(_Fixed(case.expected), "fixed", case).to_dict()  # type: ignore[arg-type]
    assert passing["severity"] is None and passing["severities"] == [] and passing["class"] == "policy"


def test_a_result_survives_the_record_form_a_worker_sends() -> None:
    # What crosses from a pool worker: every field back as it was, the outcomes' too (usage and
    # notes, which outcome equality leaves out, included), types and enums restored.
    case = build_case("openai-chat/parallel-2::parallel-calls-share-index-0::s0")
    server = (ServerCall("web_search", {"query": "x"}, "srvtoolu_1", "web_search_tool_result"),)
    calls = case.expected.tool_calls[:1]
    got = Outcome(calls, "hi", "stop", State.CUT, "boom", {"total": 3}, ("late",), server)
    failed = replace(judge(_Fixed(got), "fixed", case), output="printed\n")  # type: ignore[arg-type]
    passed = judge(_Fixed(case.expected), "fixed", case)  # type: ignore[arg-type]
    errored = replace(failed, verdict=Verdict.ERROR, actual=None, diff=(), severities=(), error="E")
    for result in (failed, passed, errored):
        back = Result.from_record(result.to_record())
        assert back == result and back.to_dict() == result.to_dict()
        assert type(back.verdict) is Verdict and type(back.case_class) is CaseClass
        assert all(type(s) is Severity for s in back.severities)
    # One message's results, their shared expected outcome sent and read once, through pickling.
    sent: dict[int, Any] = {}
    records = pickle.loads(pickle.dumps([r.to_record(sent) for r in (failed, passed, errored)]))
    assert records[0][7] is records[1][7] is records[2][7]
    read: dict[int, Any] = {}
    back_all = [Result.from_record(record, read) for record in records]
    assert back_all == [failed, passed, errored]
    assert back_all[0].expected is back_all[1].expected is back_all[2].expected
    # A pass whose actual outcome is the expected one, to the last field, sends it once too.
    assert records[1][8] is records[1][7] and records[0][8] is not records[0][7]
    assert back_all[1].actual is back_all[1].expected and back_all[0].actual == failed.actual
    assert failed.severities and failed.actual is not None and failed.actual.usage == {"total": 3}
    assert back_all[0].actual is not None and back_all[0].actual.server_calls == server
