"""Custom (freeform) tool calls and the Responses items beyond function calls: what the reference
makes of them, how an outcome carries a call's kind and raw input, and how follow-ups read them back."""

from __future__ import annotations

import json
from typing import Any

import pytest

from harness.accumulators import EventLevel
from harness.accumulators.stdio import answer_outcome, outcome_answer
from harness.cassettes.outcome import CUSTOM, Outcome, ServerCall, State, ToolCall, diff
from harness.errors import OutcomeFormatError
from harness.matrix.selection import build_case
from harness.mutate.scenario import Case
from harness.oracle.severity import Severity, differences
from harness.wire import dialects
from harness.wire.codecs import WireEvent
from harness.wire.dialects import Event

CHAT = dialects.get("openai-chat")
RESPONSES = dialects.get("openai-responses")
SHELL = 'grep -rn "TODO\\|FIXME" src/ | wc -l\necho "done: $?"'


def chat_events(*entries_per_chunk: list[dict[str, Any]], finish: str = "tool_calls") -> list[Event]:
    chunks: list[Any] = [
        {"choices": [{"index": 0, "delta": {"tool_calls": entries}, "finish_reason": None}]}
        for entries in entries_per_chunk
    ]
    chunks += [{"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}, "[DONE]"]
    return [CHAT.parse(WireEvent(data=c if isinstance(c, str) else json.dumps(c))) for c in chunks]


def reference(dialect: Any, events: list[Event]) -> Outcome:
    acc = dialect.accumulator()
    for event in events:
        acc.feed(event)
    return acc.close(None)


def responses_events(*payloads: dict[str, Any]) -> list[Event]:
    out = []
    for n, payload in enumerate(payloads):
        data = {**payload, "sequence_number": n}
        out.append(RESPONSES.parse(WireEvent(data=json.dumps(data), name=payload["type"])))
    return out


def completed(*output: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "response.completed",
        "response": {"id": "resp_1", "status": "completed", "output": list(output)},
    }


# -- openai-chat ---------------------------------------------------------------------------------


def test_chat_custom_call_is_raw_input_with_null_members() -> None:
    header = {
        "index": 0,
        "id": "call_c1",
        "type": "custom",
        "function": None,
        "custom": {"name": "run_sql", "input": ""},
    }
    pieces = [
        {"index": 0, "id": None, "type": None, "function": None, "custom": {"input": "SELECT count(*) "}},
        {"index": 0, "custom": {"input": "FROM users"}},
    ]
    outcome = reference(CHAT, chat_events([header], [pieces[0]], [pieces[1]]))
    assert outcome.tool_calls == (ToolCall.freeform("run_sql", "SELECT count(*) FROM users", "call_c1"),)
    assert outcome.tool_calls[0].kind == CUSTOM and not outcome.tool_calls[0].invalid


@pytest.mark.parametrize("text", ['{"a":1}', "", "{}", "42"])
def test_chat_custom_input_that_looks_like_json_stays_text(text: str) -> None:
    header = {"index": 0, "id": "call_c1", "type": "custom", "custom": {"name": "echo", "input": text}}
    (call,) = reference(CHAT, chat_events([header])).tool_calls
    assert call.arguments == text and call.kind == CUSTOM  # never parsed, never {}


def test_chat_empty_custom_echoed_on_a_function_entry_is_no_custom_call() -> None:
    # A gateway echoing `custom: {}` on function deltas (earendil-works/pi#8504).
    header = {
        "index": 0,
        "id": "call_f",
        "type": "function",
        "custom": {},
        "function": {"name": "f", "arguments": ""},
    }
    piece = {"index": 0, "custom": {}, "function": {"arguments": '{"x":1}'}}
    (call,) = reference(CHAT, chat_events([header], [piece])).tool_calls
    assert call == ToolCall("f", {"x": 1}, "call_f")


def test_chat_custom_fragments_are_edited_under_custom() -> None:
    events = chat_events(
        [{"index": 0, "id": "c", "type": "custom", "custom": {"name": "run", "input": "a"}}],
        [{"index": 0, "custom": {"input": "b"}}],
    )
    fragments = CHAT.fragments(events)
    assert [CHAT.get(events[f.event], f.slot, dialects.Field.ARGS) for f in fragments] == ["a", "b"]
    edited = CHAT.set(events[1], 0, dialects.Field.ARGS, "B")
    more = CHAT.continuation(events[1], 0, "c")
    outcome = reference(CHAT, [events[0], edited, more, *events[2:]])
    assert outcome.tool_calls == (ToolCall.freeform("run", "aBc", "c"),)


# -- openai-responses ------------------------------------------------------------------------------


def custom_item(status: str = "in_progress", text: str = "") -> dict[str, Any]:
    return {
        "id": "ctc_9",
        "type": "custom_tool_call",
        "status": status,
        "call_id": "call_9",
        "name": "run_sql",
        "input": text,
    }


def test_responses_custom_tool_call_deltas_then_done() -> None:
    where = {"item_id": "ctc_9", "output_index": 0}
    events = responses_events(
        {"type": "response.output_item.added", "output_index": 0, "item": custom_item()},
        {"type": "response.custom_tool_call_input.delta", **where, "delta": "SELECT "},
        {"type": "response.custom_tool_call_input.delta", **where, "delta": "1"},
        {"type": "response.custom_tool_call_input.done", **where, "input": "SELECT 1"},
        {"type": "response.custom_tool_call_input.delta", **where, "delta": ";"},  # stray (E3)
        {
            "type": "response.output_item.done",
            "output_index": 0,
            "item": custom_item("completed", "SELECT 1"),
        },
        completed(custom_item("completed", "SELECT 1")),
    )
    assert reference(RESPONSES, events).tool_calls == (ToolCall.freeform("run_sql", "SELECT 1", "call_9"),)
    assert [f.role for f in RESPONSES.fragments(events)] == [
        dialects.Role.START,
        dialects.Role.ARGS,
        dialects.Role.ARGS,
        dialects.Role.END,
        dialects.Role.ARGS,
        dialects.Role.END,
    ]
    more = RESPONSES.continuation(events[1], 0, "x")
    assert more.payload["type"] == "response.custom_tool_call_input.delta"


def test_responses_server_and_client_items_are_kept_apart() -> None:
    mcp = {
        "id": "mcp_1",
        "type": "mcp_call",
        "status": "in_progress",
        "server_label": "wiki",
        "name": "ask",
        "arguments": "",
    }
    mcp_done = {**mcp, "status": "completed", "arguments": '{"q":"x"}', "output": "y"}
    listing = {"id": "mcpl_1", "type": "mcp_list_tools", "server_label": "wiki", "tools": []}
    patch = {"id": "apc_1", "type": "apply_patch_call", "status": "completed", "call_id": "call_p"}
    patch["operation"] = {"type": "delete_file", "path": "old.txt"}
    approval = {
        "id": "mcpr_1",
        "type": "mcp_approval_request",
        "server_label": "wiki",
        "name": "ask",
        "arguments": "{}",
    }
    events = responses_events(
        {"type": "response.output_item.added", "output_index": 0, "item": listing},
        {"type": "response.output_item.done", "output_index": 0, "item": listing},
        {"type": "response.output_item.added", "output_index": 1, "item": mcp},
        {
            "type": "response.mcp_call_arguments.delta",
            "item_id": "mcp_1",
            "output_index": 1,
            "delta": '{"q":"x"}',
        },
        {
            "type": "response.mcp_call_arguments.done",
            "item_id": "mcp_1",
            "output_index": 1,
            "arguments": '{"q":"x"}',
        },
        {"type": "response.output_item.done", "output_index": 1, "item": mcp_done},
        {"type": "response.output_item.added", "output_index": 2, "item": patch},
        {"type": "response.output_item.done", "output_index": 2, "item": patch},
        {"type": "response.output_item.added", "output_index": 3, "item": approval},
        {"type": "response.output_item.done", "output_index": 3, "item": approval},
        completed(listing, mcp_done, patch, approval),
    )
    assert RESPONSES.invariants(events) == []
    outcome = reference(RESPONSES, events)
    operation = {"operation": {"type": "delete_file", "path": "old.txt"}}
    assert outcome.tool_calls == (ToolCall(None, operation, "call_p", kind="apply_patch_call"),)
    assert [call.name for call in outcome.server_calls] == ["mcp_call", "mcp_approval_request"]
    assert outcome.server_calls[0].arguments["arguments"] == '{"q":"x"}'
    assert outcome.server_calls[1].result is None  # nothing ran: it awaits approval
    assert RESPONSES.fragments(events) == []  # no client call streams its arguments here


def test_an_mcp_argument_delta_after_its_done_breaks_the_invariant() -> None:
    mcp = {
        "id": "mcp_1",
        "type": "mcp_call",
        "status": "in_progress",
        "server_label": "w",
        "name": "a",
        "arguments": "",
    }
    where = {"item_id": "mcp_1", "output_index": 0}
    events = responses_events(
        {"type": "response.output_item.added", "output_index": 0, "item": mcp},
        {"type": "response.mcp_call_arguments.done", **where, "arguments": "{}"},
        {"type": "response.mcp_call_arguments.delta", **where, "delta": "}"},
    )
    assert [v.code for v in RESPONSES.invariants(events)] == ["openai-responses.delta-after-done"]


# -- the outcome -----------------------------------------------------------------------------------


def test_a_custom_call_round_trips_with_its_kind() -> None:
    outcome = Outcome(tool_calls=(ToolCall.freeform("run", "a b", "c1"), ToolCall("f", {"x": 1}, "c2")))
    data = outcome.to_dict()
    assert data["tool_calls"][0]["kind"] == "custom" and "kind" not in data["tool_calls"][1]
    assert Outcome.from_dict(data) == outcome
    assert Outcome.from_record(outcome.to_record()) == outcome
    assert answer_outcome(json.loads(json.dumps(outcome_answer(outcome))), cut=False) == outcome


def test_a_custom_call_from_outside_needs_its_raw_input() -> None:
    with pytest.raises(OutcomeFormatError, match=r"tool_calls\[0\]\.arguments"):
        Outcome.from_dict({"tool_calls": [{"name": "run", "arguments": {"a": 1}, "kind": "custom"}]})
    with pytest.raises(OutcomeFormatError, match=r"tool_calls\[0\]\.kind"):
        Outcome.from_dict({"tool_calls": [{"name": "run", "arguments": "x", "kind": 3}]})


def test_freeform_input_read_as_json_is_named_and_lost() -> None:
    want = Outcome(tool_calls=(ToolCall.freeform("run", "SELECT 1", "c1"),))
    parsed = Outcome(tool_calls=(ToolCall.from_text("run", "SELECT 1", "c1"),))
    (line,) = diff(want, parsed)
    assert line.startswith("call 1: kind 'custom' expected, got 'function': custom input 'SELECT 1'")
    assert "was parsed as invalid JSON" in line and "never JSON" in line
    assert differences(want, parsed) == [(line, Severity.LOST)]
    as_function = Outcome(tool_calls=(ToolCall("run", "SELECT 1", "c1"),))
    assert "a custom call answered as a function call" in diff(want, as_function)[0]


def test_server_calls_keep_their_own_rule() -> None:
    # An accumulator that reports an MCP call as a client call fails on tool_calls.
    want = Outcome(server_calls=(ServerCall("mcp_call", {"name": "ask"}, "mcp_1", "completed"),))
    got = Outcome(tool_calls=(ToolCall("ask", {"q": "x"}, "mcp_1"),))
    assert "call 1: unexpected 'ask'" in "\n".join(diff(want, got))


# -- follow-ups ------------------------------------------------------------------------------------


def test_chat_followup_reads_a_custom_call_back_raw() -> None:
    body = {
        "messages": [
            {"role": "user", "content": "count"},
            {
                "role": "assistant",
                "tool_calls": [
                    {"id": "call_c1", "type": "custom", "custom": {"name": "run_sql", "input": "SELECT 1"}}
                ],
            },
            {"role": "tool", "tool_call_id": "call_c1", "content": "1"},
        ]
    }
    turn = CHAT.read_followup(body)
    assert turn is not None and turn.calls == (ToolCall.freeform("run_sql", "SELECT 1", "call_c1"),)
    assert [r.call_id for r in turn.results] == ["call_c1"]
    whole = CHAT.whole_response(Outcome(tool_calls=turn.calls))
    assert whole["choices"][0]["message"]["tool_calls"][0]["custom"] == {
        "name": "run_sql",
        "input": "SELECT 1",
    }


def test_responses_followup_reads_custom_and_action_items_back() -> None:
    patch = {"type": "apply_patch_call", "call_id": "call_p", "status": "completed"}
    patch["operation"] = {"type": "delete_file", "path": "old.txt"}
    body = {
        "input": [
            {"role": "user", "content": "go"},
            {"type": "custom_tool_call", "call_id": "call_9", "name": "run_sql", "input": "SELECT 1"},
            patch,
            {"type": "custom_tool_call_output", "call_id": "call_9", "output": "1"},
            {"type": "apply_patch_call_output", "call_id": "call_p", "status": "completed"},
        ]
    }
    turn = RESPONSES.read_followup(body)
    assert turn is not None
    operation = {"operation": {"type": "delete_file", "path": "old.txt"}}
    assert turn.calls == (
        ToolCall.freeform("run_sql", "SELECT 1", "call_9"),
        ToolCall(None, operation, "call_p", kind="apply_patch_call"),
    )
    assert [r.call_id for r in turn.results] == ["call_9", "call_p"]
    output = RESPONSES.whole_response(Outcome(tool_calls=turn.calls))["output"]
    assert [item["type"] for item in output] == ["custom_tool_call", "apply_patch_call"]


# -- a client that reads custom input as JSON, written the way real clients are --------------------


class FunctionPathChat:
    """Routes every `tool_calls[]` entry down the function path, taking `custom.input` as the
    arguments text when `function` is absent, then parses the text as JSON (`from_text`), as a
    client that added custom tools to its function-call code does. `kind_aware` keeps it raw."""

    def __init__(self, kind_aware: bool) -> None:
        self.kind_aware = kind_aware
        self.calls: dict[int, dict[str, Any]] = {}
        self.finish: str | None = None

    def feed(self, event: Event) -> None:
        payload = event.payload
        if not isinstance(payload, dict) or not payload.get("choices"):
            return
        choice = payload["choices"][0]
        self.finish = choice.get("finish_reason") or self.finish
        for entry in (choice.get("delta") or {}).get("tool_calls") or []:
            call = self.calls.setdefault(
                entry["index"], {"id": None, "name": "", "text": "", "custom": False}
            )
            part = entry.get("function") or entry.get("custom") or {}
            call["custom"] = call["custom"] or entry.get("type") == "custom"
            call["id"] = call["id"] or entry.get("id")
            call["name"] += part.get("name") or ""
            call["text"] += part.get("arguments") or part.get("input") or ""

    def close(self, error: str | None) -> Outcome:
        made = []
        for call in self.calls.values():
            if self.kind_aware and call["custom"]:
                made.append(ToolCall.freeform(call["name"], call["text"], call["id"]))
            else:
                made.append(ToolCall.from_text(call["name"], call["text"], call["id"]))
        return Outcome(tool_calls=tuple(made), finish_reason=self.finish, state=State.COMPLETE)


def outcome_of(acc: Any, case: Case) -> Outcome:
    return EventLevel(lambda dialect: acc, type(acc).__name__).run(case)


def test_a_client_parsing_custom_input_as_json_fails_the_custom_tool_cassette() -> None:
    case = build_case("openai-chat/custom-tool::original::s0")
    problems = diff(case.expected, outcome_of(FunctionPathChat(kind_aware=False), case))
    assert len(problems) == 1 and "was parsed as invalid JSON" in problems[0], problems
    assert diff(case.expected, outcome_of(FunctionPathChat(kind_aware=True), case)) == []


# -- the openai SDK's adapter reads the client items a Responses user runs -------------------------


@pytest.mark.parametrize(
    "case_id",
    [
        "openai-responses/custom-tool::original::s0",
        "openai-responses/apply-patch::original::s0",
        "openai-responses/mcp-streamed-arguments::original::s0",
        "openai-chat/custom-tool::original::s0",  # the SDK keeps `custom` as an extra field
    ],
)
def test_the_openai_sdk_adapter_reports_custom_and_action_items(case_id: str) -> None:
    pytest.importorskip("openai")
    from harness.accumulators import resolve

    case = build_case(case_id)
    acc = resolve("openai-sdk")
    try:
        assert diff(case.expected, acc.run(case)) == []
    finally:
        acc.shutdown()
