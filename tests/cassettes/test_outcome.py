"""Outcome comparison: JSON-valued arguments, ids only where expected, a readable diff."""

from __future__ import annotations

import pytest

from harness.cassettes.outcome import Outcome, ServerCall, State, ToolCall, diff
from harness.errors import OutcomeFormatError


def call(name: str, args: object, id: str | None = None, invalid: bool = False) -> ToolCall:
    return ToolCall(name=name, arguments=args, id=id, invalid=invalid)


def test_equal_outcomes_have_no_diff() -> None:
    a = Outcome((call("f", {"x": 1, "y": [1, 2]}, "c1"),), finish_reason="tool_calls")
    b = Outcome((call("f", {"y": [1, 2.0], "x": 1.0}, "c1"),), finish_reason="tool_calls")
    assert diff(a, b) == []


def test_merged_parallel_calls_read_like_the_seed() -> None:
    expected = Outcome(
        (
            call("read_file", {"path": "foo.txt"}, "tooluse_ABC"),
            call("search_text", {"query": "bar"}, "tooluse_DEF"),
        )
    )
    actual = Outcome(
        (
            call(
                "read_filesearch_text",
                '{"path": "foo.txt"}{"query": "bar"}',
                "tooluse_ABCtooluse_DEF",
                invalid=True,
            ),
        )
    )
    lines = diff(expected, actual)
    assert lines[0] == "tool_calls: 2 expected, got 1"
    assert "call 1: name 'read_file' expected, got 'read_filesearch_text'" in lines
    assert "call 1: id 'tooluse_ABC' expected, got 'tooluse_ABCtooluse_DEF'" in lines
    assert any(line.startswith("call 2: 'search_text'") and line.endswith("missing") for line in lines)


def test_ids_are_compared_only_where_expected() -> None:
    assert diff(Outcome((call("f", {}),)), Outcome((call("f", {}, "generated"),))) == []
    assert diff(Outcome((call("f", {}, "a"),)), Outcome((call("f", {}, None),))) == [
        "call 1: id 'a' expected, got None"
    ]


def test_bool_is_not_an_integer_in_json() -> None:
    assert diff(Outcome((call("f", {"a": True}),)), Outcome((call("f", {"a": 1}),)))


def test_empty_arguments_text_is_an_empty_object_and_garbage_is_invalid() -> None:
    assert ToolCall.from_text("f", "") == call("f", {})
    assert ToolCall.from_text("f", '{"a":') == call("f", '{"a":', invalid=True)
    lines = diff(Outcome((call("f", {"query": "x"}),)), Outcome((call("f", {}),)))
    assert lines == ['call 1: arguments {"query":"x"} expected, got {}']


def test_state_text_and_finish_reason() -> None:
    lines = diff(Outcome(text="hi", finish_reason="tool_calls"), Outcome(state=State.CUT, text="h"))
    assert lines == [
        "text: 'hi' expected, got 'h'",
        "finish_reason: 'tool_calls' expected, got None",
        "state: complete expected, got cut",
    ]


def test_fields_can_be_narrowed() -> None:
    assert diff(Outcome(text="a"), Outcome(text="b"), fields=("tool_calls",)) == []


def test_server_calls_are_diffed_apart_from_client_calls() -> None:
    search = ServerCall("web_search", {"query": "x"}, "srvtoolu_1", "web_search_tool_result")
    expected = Outcome(server_calls=(search,))
    # Reporting the provider's call as one the client must run is the failure that matters.
    assert diff(expected, Outcome((call("web_search", {"query": "x"}, "srvtoolu_1"),))) == [
        "tool_calls: 0 expected, got 1",
        "call 1: unexpected 'web_search' {\"query\":\"x\"}",
    ]
    other = ServerCall("web_search", {"query": "y"}, "srvtoolu_1", None)
    assert diff(expected, Outcome(server_calls=(other,))) == [
        'server call 1: arguments {"query":"x"} expected, got {"query":"y"}',
        "server call 1: result 'web_search_tool_result' expected, got None",
    ]
    two = Outcome(server_calls=(search, other))
    assert diff(expected, two) == [
        "server_calls: 1 expected, got 2",
        "server call 2: unexpected 'web_search' {\"query\":\"y\"}",
    ]
    assert diff(two, Outcome(server_calls=(search,)))[-1].startswith("server call 2: 'web_search'")
    assert diff(expected, Outcome(server_calls=(other,)), fields=("tool_calls",)) == []


def test_server_calls_are_compared_only_when_the_accumulator_reports_some() -> None:
    # An accumulator with no notion of server calls runs none of them, which is what matters.
    search = ServerCall("web_search", {"query": "x"}, "srvtoolu_1", "web_search_tool_result")
    assert diff(Outcome(server_calls=(search,)), Outcome()) == []


def test_server_calls_round_trip_and_default_to_none() -> None:
    outcome = Outcome(server_calls=(ServerCall("code_execution", {"code": "1"}, None, "OUTCOME_OK"),))
    data = outcome.to_dict()
    assert data["server_calls"] == [
        {"id": None, "name": "code_execution", "arguments": {"code": "1"}, "result": "OUTCOME_OK"}
    ]
    assert Outcome.from_dict(data) == outcome
    # Outcomes without server calls are written (and read, e.g. an older stdio answer) as before.
    assert "server_calls" not in Outcome().to_dict()
    assert Outcome.from_dict({"tool_calls": [], "state": "complete"}).server_calls == ()


def test_a_malformed_server_call_names_its_field() -> None:
    with pytest.raises(OutcomeFormatError, match=r"server_calls\[0\]\.name"):
        Outcome.from_dict({"server_calls": [{"name": 3}]})
    with pytest.raises(OutcomeFormatError, match="server_calls"):
        Outcome.from_dict({"server_calls": "web_search"})


def _variants() -> list[Outcome]:
    """Outcomes that differ from one another in each way `diff` looks at, one at a time."""
    base = Outcome((call("f", {"x": 1, "y": [1, 2]}, "c1"),), text="hi", finish_reason="tool_calls")
    calls = [
        (call("f", {"y": [1, 2], "x": 1.0}, "c1"),),  # the same JSON
        (call("f", {"x": True, "y": [1, 2]}, "c1"),),  # True is not 1
        (call("f", {"x": 1, "y": [2, 1]}, "c1"),),
        (call("f", {"x": 1}, "c1"),),
        (call("g", {"x": 1, "y": [1, 2]}, "c1"),),
        (call("f", {"x": 1, "y": [1, 2]}, None),),  # no id: not compared where none is expected
        (call("f", {"x": 1, "y": [1, 2]}, "c2"),),
        (call("f", '{"x": 1', "c1", invalid=True),),
        (call("f", {"x": 1, "y": [1, 2]}, "c1"), call("f", {}, "c3")),
        (),
    ]
    out = [base, *(Outcome(c, text="hi", finish_reason="tool_calls") for c in calls)]
    out += [
        Outcome(base.tool_calls, text="ho", finish_reason="tool_calls"),
        Outcome(base.tool_calls, text="hi", finish_reason="stop"),
        Outcome(base.tool_calls, text="hi", finish_reason="tool_calls", state=State.CUT),
        Outcome(base.tool_calls, text="hi", finish_reason="tool_calls", server_calls=(ServerCall("s", {}),)),
        Outcome(base.tool_calls, text="hi", finish_reason="tool_calls", server_calls=(ServerCall("t", {}),)),
    ]
    return out


def test_meets_says_what_an_empty_diff_says() -> None:
    from harness.cassettes.outcome import meets

    variants = _variants()
    pairs = [(a, b) for a in variants for b in variants]
    assert [meets(a, b) for a, b in pairs] == [not diff(a, b) for a, b in pairs]
    assert sum(meets(a, b) for a, b in pairs) > len(variants)  # some that are not the same object meet
