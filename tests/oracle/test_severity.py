"""Severities from the outcomes: unsafe (the wrong thing runs), lost (a finished call is gone),
cosmetic (labels and text), each diff line with the severity of the calls at its position."""

from __future__ import annotations

import pytest

from harness.cassettes.outcome import FINISH_NOT_SURFACED, Outcome, State, ToolCall, diff, meets
from harness.oracle.expectation import CaseClass
from harness.oracle.severity import Severity, call_severities, differences, worst
from harness.oracle.verdict import Verdict, verdict_for

READ = ToolCall("read", {"path": "a"}, "call_1")
SEARCH = ToolCall("search", {"q": "x"}, "call_2")
WRITE = ToolCall("write", {"path": "b"}, "call_3")
EXPECTED = Outcome(tool_calls=(READ, SEARCH), finish_reason="tool_calls")


def _severities(actual: Outcome, expected: Outcome = EXPECTED) -> list[Severity]:
    return [severity for _, severity in differences(expected, actual)]


def test_lines_are_the_diff_lines_in_order() -> None:
    actual = Outcome(tool_calls=(READ,), text="hi", state=State.CUT)
    assert [line for line, _ in differences(EXPECTED, actual)] == diff(EXPECTED, actual)


def test_a_call_the_stream_never_finished_is_unsafe() -> None:
    # A cut case: only the first call was final; the accumulator reports the second anyway.
    cut = Outcome(tool_calls=(READ,), state=State.CUT)
    got = Outcome(tool_calls=(READ, ToolCall("search", '{"q": "x', "call_2", invalid=True)), state=State.CUT)
    assert _severities(got, cut) == [Severity.UNSAFE, Severity.UNSAFE]


def test_merged_calls_are_unsafe_and_a_missing_call_is_lost() -> None:
    merged = Outcome(
        tool_calls=(ToolCall("readsearch", {"path": "a"}, "call_1"),), finish_reason="tool_calls"
    )
    found = differences(EXPECTED, merged)
    assert found[0] == ("tool_calls: 2 expected, got 1", Severity.UNSAFE)
    assert dict(found)["call 1: name 'read' expected, got 'readsearch'"] is Severity.UNSAFE
    assert found[-1][1] is Severity.LOST  # call 2 missing
    missing = Outcome(tool_calls=(READ,), finish_reason="tool_calls")
    assert set(_severities(missing)) == {Severity.LOST}


def test_a_missing_first_call_is_lost_not_every_later_call_renamed() -> None:
    expected = Outcome(tool_calls=(READ, SEARCH, WRITE))
    got = Outcome(tool_calls=(SEARCH, WRITE))
    assert call_severities(expected.tool_calls, got.tool_calls) == ({0: Severity.LOST}, {})
    assert set(_severities(got, expected)) == {Severity.LOST}


def test_arguments_that_parse_but_differ_are_unsafe_unparseable_ones_lost() -> None:
    other = Outcome(tool_calls=(READ, ToolCall("search", {"q": "y"}, "call_2")), finish_reason="tool_calls")
    assert _severities(other) == [Severity.UNSAFE]
    broken = Outcome(
        tool_calls=(READ, ToolCall("search", '{"q":"x"}{"q":"x"}', "call_2", invalid=True)),
        finish_reason="tool_calls",
    )
    assert _severities(broken) == [Severity.LOST]
    # Truncated by the server either way (B10): only the raw text differs.
    truncated = Outcome(tool_calls=(ToolCall("read", '{"path": "a"', "call_1", invalid=True),))
    assert _severities(
        Outcome(tool_calls=(ToolCall("read", '{"path":"a"', "call_1", invalid=True),)), truncated
    ) == [Severity.COSMETIC]
    # Repaired into JSON the stream never sent: runs with arguments nobody wrote.
    assert _severities(Outcome(tool_calls=(READ,)), truncated) == [Severity.UNSAFE]


def test_names_and_ids() -> None:
    nameless = Outcome(tool_calls=(READ, ToolCall(None, {"q": "x"}, "call_2")), finish_reason="tool_calls")
    assert _severities(nameless) == [Severity.LOST]
    no_id = Outcome(tool_calls=(READ, ToolCall("search", {"q": "x"}, None)), finish_reason="tool_calls")
    assert _severities(no_id) == [Severity.LOST]
    # The other call's id: the result would be routed to the wrong call.
    swapped = Outcome(tool_calls=(READ, ToolCall("search", {"q": "x"}, "call_1")), finish_reason="tool_calls")
    assert _severities(swapped) == [Severity.UNSAFE]


def test_state_finish_reason_and_text_are_cosmetic() -> None:
    expected = Outcome(tool_calls=EXPECTED.tool_calls, finish_reason="stop")
    got = Outcome(tool_calls=EXPECTED.tool_calls, text="hello", finish_reason="length", state=State.ERROR)
    assert _severities(got, expected) == [Severity.COSMETIC] * 3


def test_worst() -> None:
    assert worst([Severity.COSMETIC, Severity.LOST]) is Severity.LOST
    assert worst([Severity.LOST, Severity.UNSAFE]) is Severity.UNSAFE
    assert worst([]) is None


def test_each_line_says_the_severity_of_what_it_is_about() -> None:
    # Merged by index: the name line is unsafe (the wrong tool), the unparseable arguments lost.
    merged = Outcome(tool_calls=(ToolCall("readsearch", '{"path":"a"}{"q":"x"}', "call_1", invalid=True),))
    found = dict(differences(EXPECTED, merged))
    assert found["call 1: name 'read' expected, got 'readsearch'"] is Severity.UNSAFE
    assert [s for line, s in found.items() if line.startswith("call 1: arguments")] == [Severity.LOST]


@pytest.mark.parametrize("word", ["tool_use", "tool_calls", "TOOL_CALL"])
def test_a_tool_finish_the_client_loses_makes_its_agent_skip_the_calls(word: str) -> None:
    # anthropic's usage-only message_delta resets stop_reason to None (upstream #1940): an agent that
    # runs its calls on `stop_reason == "tool_use"` runs none of them.
    call = ToolCall("f", {"a": 1}, "c1")
    expected = Outcome(tool_calls=(call,), finish_reason=word)
    for got in (None, "end_turn", "stop"):
        assert differences(expected, Outcome(tool_calls=(call,), finish_reason=got)) == [
            (f"finish_reason: {word!r} expected, got {got!r}", Severity.LOST)
        ]


def test_other_finish_differences_stay_cosmetic() -> None:
    call = ToolCall("f", {}, "c1")
    assert differences(Outcome(tool_calls=(call,), finish_reason="stop"), Outcome(tool_calls=(call,))) == [
        ("finish_reason: 'stop' expected, got None", Severity.COSMETIC)
    ]
    # A word of the library's own for the same thing (pydantic-ai's `tool_call`): its wording.
    assert differences(
        Outcome(tool_calls=(call,), finish_reason="tool_calls"),
        Outcome(tool_calls=(call,), finish_reason="tool_call"),
    ) == [("finish_reason: 'tool_calls' expected, got 'tool_call'", Severity.COSMETIC)]
    # No call to skip: the word is only a label.
    assert differences(Outcome(finish_reason="tool_use"), Outcome()) == [
        ("finish_reason: 'tool_use' expected, got None", Severity.COSMETIC)
    ]


def test_calls_in_another_order_under_their_own_ids_are_one_cosmetic_order_line() -> None:
    # Issue 43: a pure reorder read as "id differs / arguments differ" at severity unsafe.
    got = Outcome(tool_calls=(SEARCH, READ), finish_reason="tool_calls")
    assert differences(EXPECTED, got) == [
        ("tool_calls: order differs: 'call_1', 'call_2' expected, got 'call_2', 'call_1'", Severity.COSMETIC)
    ]
    assert verdict_for(CaseClass.SPEC, _severities(got)) is Verdict.WARN


def test_calls_are_matched_by_id_before_position() -> None:
    # The reordered second call's arguments differ: that call's line, under its expected number.
    changed = ToolCall("search", {"q": "y"}, "call_2")
    lines = differences(EXPECTED, Outcome(tool_calls=(changed, READ), finish_reason="tool_calls"))
    assert lines[0][1] is Severity.COSMETIC and lines[0][0].startswith("tool_calls: order differs")
    assert lines[1:] == [('call 2: arguments {"q":"x"} expected, got {"q":"y"}', Severity.UNSAFE)]


def test_without_ids_a_reorder_routes_results_by_position_and_stays_unsafe() -> None:
    plain = Outcome(tool_calls=(ToolCall("read", {"path": "a"}), ToolCall("search", {"q": "x"})))
    got = Outcome(tool_calls=plain.tool_calls[::-1])
    assert Severity.UNSAFE in _severities(got, plain)
    assert not any(line.startswith("tool_calls: order") for line, _ in differences(plain, got))


def test_a_library_that_never_surfaces_a_finish_notes_it_and_its_finish_is_not_compared() -> None:
    # Issue 43: without the note, a turn of calls with no finish is lost (an agent waiting for
    # `tool_calls` skips them); a library with no notion of a finish says so instead.
    got = Outcome(tool_calls=EXPECTED.tool_calls)
    assert _severities(got) == [Severity.LOST]
    noted = Outcome(tool_calls=EXPECTED.tool_calls, notes=(FINISH_NOT_SURFACED,))
    assert differences(EXPECTED, noted) == [] and meets(EXPECTED, noted)
