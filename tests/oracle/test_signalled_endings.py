"""Issue 30: a red `spec` case means the library is wrong. Each family of the hand triage, on the
bundled case it was found on (docs/oracle.md, "Signalled endings" and "Which class judges a
difference"): a client that says the stream ended badly may withhold the calls that were final
(`withheld`, a warning); a policy situation classes its recording; a bundled deviation declares
its class; a call announced done before a cut is policy, as sent; a lenient ending covers only
what it decides."""

from __future__ import annotations

from dataclasses import replace
from functools import cache

import pytest

from harness.cassettes.outcome import STATE_TAKEN, Outcome, State, ToolCall
from harness.matrix.judging import judge
from harness.matrix.selection import build_case
from harness.mutate.scenario import Case
from harness.oracle.evidence import FROM_FOLLOWUP
from harness.oracle.expectation import CaseClass, announced_calls, classify, scope, situation
from harness.oracle.severity import Severity, differences, weigh
from harness.oracle.verdict import Result, Verdict, verdict_for


class Fixed:
    """An accumulator that reports one outcome, whatever the case."""

    def __init__(self, outcome: Outcome) -> None:
        self.outcome = outcome

    def prints_nothing(self, case: Case) -> bool:
        return True

    def run(self, case: Case) -> Outcome:
        return self.outcome


@cache
def _case(case_id: str) -> Case:
    return build_case(case_id)


def _judge(case_id: str, outcome: Outcome) -> Result:
    return judge(Fixed(outcome), "fixed", _case(case_id))  # type: ignore[arg-type]


def _raised(case: Case, state: State) -> Outcome:
    """What a library that raised hands back: the state, no calls (`langchain_core.raised_outcome`)."""
    expected = case.expected
    return Outcome(text=expected.text, finish_reason=expected.finish_reason, state=state, error="raised")


# -- family 1: signalled endings ----------------------------------------------------------------


def test_withheld_warns_in_every_class_between_lost_and_cosmetic() -> None:
    for case_class in CaseClass:
        assert verdict_for(case_class, [Severity.WITHHELD]) is Verdict.WARN
    assert verdict_for(CaseClass.SPEC, [Severity.WITHHELD, Severity.LOST]) is Verdict.FAIL
    assert Severity.LOST.rank < Severity.WITHHELD.rank < Severity.COSMETIC.rank


CUT_WITH_FINAL_CALL = "anthropic/cut-mid-args::original::s0"


def test_a_raise_on_a_cut_stream_withholds_the_final_calls_a_warning() -> None:
    case = _case(CUT_WITH_FINAL_CALL)
    assert case.expected.state is State.CUT and case.expected.tool_calls
    assert classify(case).case_class is CaseClass.SPEC
    for state in (State.CUT, State.ERROR):  # the transport's error, or another the library raised
        result = _judge(CUT_WITH_FINAL_CALL, _raised(case, state))
        assert result.verdict is Verdict.WARN, result.diff
        assert Severity.WITHHELD in result.severities and Severity.LOST not in result.severities
        assert result.case_class is CaseClass.SPEC


def test_a_client_that_calls_a_cut_turn_complete_loses_its_calls() -> None:
    case = _case(CUT_WITH_FINAL_CALL)
    silent = Outcome(state=State.COMPLETE)  # nothing handed over, and nothing said of the cut
    result = _judge(CUT_WITH_FINAL_CALL, silent)
    assert result.verdict is Verdict.FAIL and result.severity is Severity.LOST
    assert case.expected.text  # the text before the call was streamed


def test_a_cut_turn_called_complete_with_its_partial_text_is_unsafe() -> None:
    # Issue 43: the state was always cosmetic, so an agent taking the partial text as its answer
    # only warned. The state line itself is unsafe now; with no text and no calls it is lost.
    case = _case(CUT_WITH_FINAL_CALL)
    result = _judge(CUT_WITH_FINAL_CALL, replace(_raised(case, State.COMPLETE), error=None))
    assert result.verdict is Verdict.FAIL and result.severity is Severity.UNSAFE
    state_line = [
        s for line, s in zip(result.diff, result.severities, strict=True) if line.startswith("state:")
    ]
    assert state_line == [Severity.UNSAFE]
    bare = _judge(CUT_WITH_FINAL_CALL, Outcome(state=State.COMPLETE))
    assert [s for line, s in zip(bare.diff, bare.severities, strict=True) if line.startswith("state:")] == [
        Severity.LOST
    ]


def test_a_raise_on_a_complete_stream_still_fails() -> None:
    case_id = "anthropic/parallel-calls::original::s0"
    case = _case(case_id)
    assert case.expected.state is State.COMPLETE and case.expected.tool_calls
    result = _judge(case_id, _raised(case, State.ERROR))
    assert result.verdict is Verdict.FAIL and result.severity is Severity.LOST


def test_a_call_the_stream_never_finished_is_unsafe_on_a_signalled_ending() -> None:
    case_id = "anthropic/cut-mid-args::D7-truncated-mid-args::s0"
    case = _case(case_id)
    assert classify(case).case_class is CaseClass.SPEC  # D7 stays spec
    half = ToolCall("read_file", {}, id="toolu_half")
    outcome = replace(case.expected, tool_calls=(*case.expected.tool_calls, half), error="cut")
    result = _judge(case_id, outcome)
    assert result.verdict is Verdict.FAIL and result.severity is Severity.UNSAFE
    assert result.case_class is CaseClass.SPEC


def test_a_state_taken_as_expected_signals_nothing() -> None:
    # A follow-up request has no state on its wire (`harness.oracle.evidence`): a program that went on
    # after a cut without a final call dropped it silently.
    assert STATE_TAKEN in FROM_FOLLOWUP
    case = _case(CUT_WITH_FINAL_CALL)
    silent = replace(_raised(case, case.expected.state), notes=(FROM_FOLLOWUP,))
    assert {s for _, s in differences(case.expected, silent)} == {Severity.LOST}
    said = _raised(case, case.expected.state)
    assert {s for _, s in differences(case.expected, said)} == {Severity.WITHHELD}


# -- family 2: a policy situation classes its recording ------------------------------------------

OVERLOADED = "anthropic/overloaded-mid-call::original::s0"


def test_an_error_after_a_final_call_is_policy_in_a_recording() -> None:
    case = _case(OVERLOADED)
    assert situation(case) == "error-after-final-call"
    found = classify(case)
    assert found.case_class is CaseClass.POLICY and "error-after-final-call" in found.reason
    # bedrock's exception frame after a final call, the same situation
    bedrock = _case("bedrock-converse/exception-mid-call::original::s0")
    assert situation(bedrock) == "error-after-final-call" and classify(bedrock).case_class is CaseClass.POLICY


# -- family 8: a bundled deviation declares its class ---------------------------------------------


def test_args_only_in_done_declares_e1() -> None:
    case = _case("openai-responses/args-only-in-done::original::s0")
    assert case.declared is not None
    found = classify(case)
    assert found.case_class is CaseClass.QUIRK and "E1" in found.reason


# -- family 9: a call announced done before a cut ------------------------------------------------

ANNOUNCED = "openai-chat/groq-whole-calls::cut-at-every-event::s0::e3"


def test_a_call_announced_done_before_a_cut_is_policy_as_sent() -> None:
    case = _case(ANNOUNCED)
    assert case.expected.state is State.CUT and not case.expected.tool_calls
    (first,) = announced_calls(case)  # the first call: the second began after it
    assert first.name == "get_weather" and first.arguments == {"city": "Paris"}
    assert classify(case).case_class is CaseClass.SPEC  # the case stays spec: only that call is ours
    as_sent = replace(case.expected, tool_calls=(first,), error="APIConnectionError: Connection error.")
    result = _judge(ANNOUNCED, as_sent)
    assert result.verdict is Verdict.WARN and result.case_class is CaseClass.POLICY, result


def test_a_call_text_followed_before_a_cut_is_announced_too() -> None:
    # pydantic-ai ends a part (PartEndEvent) when the next part begins, text as well as a call.
    case_id = "openai-chat/openrouter-text-between-calls::cut-at-every-event::s0::e17"
    case = _case(case_id)
    (first,) = announced_calls(case)
    assert first.name == "get_weather" and first.arguments == {"city": "Paris"}
    result = _judge(case_id, replace(case.expected, tool_calls=(first,), error="ModelConnectionError"))
    assert result.verdict is Verdict.WARN and result.case_class is CaseClass.POLICY, result


def test_a_call_announced_done_with_other_arguments_is_unsafe() -> None:
    case = _case(ANNOUNCED)
    (first,) = announced_calls(case)
    other = replace(first, arguments={"city": "Lyon"})
    result = _judge(ANNOUNCED, replace(case.expected, tool_calls=(other,)))
    assert result.verdict is Verdict.FAIL and result.case_class is CaseClass.SPEC


def test_the_call_still_open_at_the_cut_is_unsafe() -> None:
    case = _case(ANNOUNCED)
    (first,) = announced_calls(case)
    second = ToolCall("get_weather", {"city": "Lyon"}, id=None)
    result = _judge(ANNOUNCED, replace(case.expected, tool_calls=(first, second)))
    assert result.verdict is Verdict.FAIL and result.severity is Severity.UNSAFE
    assert result.case_class is CaseClass.SPEC


def test_nothing_is_announced_on_a_complete_stream_or_with_end_markers() -> None:
    assert announced_calls(_case("openai-chat/groq-whole-calls::original::s0")) == ()
    assert announced_calls(_case("anthropic/parallel-calls::cut-at-every-event::s0::e10")) == ()


# -- family 10: a lenient ending covers only what it decides --------------------------------------

D1_MERGE = "openai-chat/litellm-bridge-parallel-index0::D1-wrong-finish-reason::s0"


def test_a_merge_is_judged_under_the_recordings_class_not_the_finish_reasons() -> None:
    case = _case(D1_MERGE)
    assert classify(case).case_class is CaseClass.POLICY  # a stop finish with calls made
    found = scope(case)
    assert found.ending.case_class is CaseClass.POLICY and found.rest.case_class is CaseClass.QUIRK
    read, search = case.expected.tool_calls
    text = '{"path":"foo.txt"}{"query":"bar"}'
    merged = ToolCall(f"{read.name}{search.name}", text, id=f"{read.id}{search.id}", invalid=True)
    result = _judge(D1_MERGE, replace(case.expected, tool_calls=(merged,)))
    assert result.verdict is Verdict.FAIL and result.case_class is CaseClass.QUIRK
    assert "A1" in result.class_reason


def test_dropping_the_calls_over_the_finish_reason_is_the_endings_question() -> None:
    case = _case(D1_MERGE)
    result = _judge(D1_MERGE, replace(case.expected, tool_calls=()))
    assert result.verdict is Verdict.WARN and result.case_class is CaseClass.POLICY


def test_only_state_finish_and_call_presence_are_the_endings() -> None:
    case = _case(D1_MERGE)
    read, _ = case.expected.tool_calls
    actual = replace(case.expected, tool_calls=(read,), text="other", state=State.CUT, finish_reason="x")
    by_line = {d.line.split(":")[0]: d.ending for d in weigh(case.expected, actual)}
    assert by_line.pop("text") is False  # what the client made of the text: no ending decides it
    assert by_line == {"tool_calls": True, "call 2": True, "finish_reason": True, "state": True}


@pytest.mark.parametrize("case_id", [CUT_WITH_FINAL_CALL, OVERLOADED, ANNOUNCED, D1_MERGE])
def test_the_expected_outcome_passes(case_id: str) -> None:
    assert _judge(case_id, _case(case_id).expected).verdict is Verdict.PASS


def test_explain_says_what_class_judges_the_rest() -> None:
    from harness.matrix.case_id import find_case
    from harness.report.explanation import explain

    assert "\n  the rest: quirk: A1 " in explain(find_case(D1_MERGE))
    announced = explain(find_case(ANNOUNCED))
    assert "\n  ending:   policy: a cut or an in-band error after a call the stream moved past" in announced
    assert "\n  the rest: spec: " in announced
