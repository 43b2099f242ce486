"""The verdict model: judging one case, and failure signatures that ignore values."""

from __future__ import annotations

from _runner_accumulators import SINGLE

from harness.check.selection import Selection, build_case
from harness.check.verdict import Verdict, diff_signature, judge


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
