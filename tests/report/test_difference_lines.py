"""Difference lines a user reads: `compare` says which side misses a call ("missing in A"), not
"unexpected", and a diff of split surrogates renders non-BMP text alike on both sides."""

from __future__ import annotations

from harness.cassettes.outcome import Outcome, ToolCall, diff
from harness.oracle.verdict import Result, Verdict
from harness.search.compare import outcome_difference


def _result(actual: Outcome, spec: str) -> Result:
    return Result(
        id="c::original::s0", accumulator=spec, verdict=Verdict.FAIL, expected=Outcome(), actual=actual,
        dialect="openai-chat", cassette="c", scenario="original", seed=0,
    )  # fmt: skip


def test_compare_says_missing_in_a_or_b_not_unexpected() -> None:
    one = Outcome(tool_calls=(ToolCall("a", {}),))
    two = Outcome(tool_calls=(ToolCall("a", {}), ToolCall("b", {"x": 1})))
    assert outcome_difference(_result(one, "A"), _result(two, "B")) == [
        "tool_calls: 1 in A, B has 2",
        "call 2: 'b' {\"x\":1} in B, missing in A",
    ]
    assert (
        outcome_difference(_result(two, "A"), _result(one, "B"))[1]
        == "call 2: 'b' {\"x\":1} in A, missing in B"
    )


def test_an_f2_diff_renders_non_bmp_text_alike_on_both_sides() -> None:
    joined = Outcome(tool_calls=(ToolCall("w", {"q": "rain \U0001f327"}),))
    split = Outcome(tool_calls=(ToolCall("w", {"q": "rain \ud83c\udf27"}),))
    (line,) = diff(joined, split)
    assert line == 'call 1: arguments {"q":"rain \\U0001f327"} expected, got {"q":"rain \\ud83c\\udf27"}'
    line.encode("utf-8")  # printable as it is: no lone surrogate left in the line
    # Without a lone surrogate nothing is escaped.
    assert "🌧" in diff(joined, Outcome(tool_calls=(ToolCall("w", {"q": "sun 🌧"}),)))[0]
