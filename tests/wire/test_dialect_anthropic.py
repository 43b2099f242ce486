"""The Anthropic Messages dialect: its reference accumulator on each quirk class, and its fragment API."""

from __future__ import annotations

import json
from typing import Any

import pytest

from harness.cassettes.format import Chunk, Request, Response
from harness.cassettes.outcome import Outcome, ServerCall, State, ToolCall
from harness.errors import DialectError
from harness.wire import dialects
from harness.wire.codecs import WireEvent
from harness.wire.dialects import MISSING, Event, Field, Kind, Role
from harness.wire.dialects.anthropic_messages import DIALECT

MODEL = "claude-sonnet-4-5-20250929"


def ev(payload: Any, name: str | None = None) -> Event:
    data = payload if isinstance(payload, str) else json.dumps(payload, separators=(",", ":"))
    if name is None:
        name = payload["type"] if isinstance(payload, dict) else None
    return DIALECT.parse(WireEvent(data=data, name=name))


def message_start(input_tokens: int = 100, msg_id: str = "msg_01AbCdEfGhIjKlMnOpQrStUv") -> Event:
    usage = {"input_tokens": input_tokens, "output_tokens": 1}
    message: dict[str, Any] = {
        "id": msg_id,
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage,
    }
    return ev({"type": "message_start", "message": message})


def tool_start(index: int, call_id: str, name: str) -> Event:
    block = {"type": "tool_use", "id": call_id, "name": name, "input": {}}
    return ev({"type": "content_block_start", "index": index, "content_block": block})


def block_start(index: int, kind: str) -> Event:
    block: dict[str, Any] = {"type": kind, kind: ""}
    if kind == "thinking":
        block["signature"] = ""
    return ev({"type": "content_block_start", "index": index, "content_block": block})


def args(index: int, text: str) -> Event:
    delta = {"type": "input_json_delta", "partial_json": text}
    return ev({"type": "content_block_delta", "index": index, "delta": delta})


def text(index: int, value: str) -> Event:
    return ev({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": value}})


def thinking(index: int, value: str) -> Event:
    delta = {"type": "thinking_delta", "thinking": value}
    return ev({"type": "content_block_delta", "index": index, "delta": delta})


def stop(index: int) -> Event:
    return ev({"type": "content_block_stop", "index": index})


def message_delta(reason: str | None = "tool_use", output_tokens: int = 50) -> Event:
    payload = {
        "type": "message_delta",
        "delta": {"stop_reason": reason, "stop_sequence": None},
        "usage": {"output_tokens": output_tokens},
    }
    return ev(payload)


PING = ev('{"type": "ping"}', "ping")
MESSAGE_STOP = ev({"type": "message_stop"})


def run(events: list[Event], error: str | None = None) -> Outcome:
    acc = DIALECT.accumulator()
    for event in events:
        acc.feed(event)
    return acc.close(error)


def call(name: str, arguments: Any, call_id: str) -> ToolCall:
    return ToolCall(name=name, arguments=arguments, id=call_id)


def single(index: int, call_id: str, name: str, *pieces: str) -> list[Event]:
    return [tool_start(index, call_id, name), args(index, ""), *(args(index, p) for p in pieces), stop(index)]


def test_single_call_complete() -> None:
    events = [message_start(), *single(0, "toolu_1", "get_weather", '{"city":', ' "Paris"}')]
    out = run([*events, message_delta(), MESSAGE_STOP])
    assert out.tool_calls == (call("get_weather", {"city": "Paris"}, "toolu_1"),)
    assert (out.state, out.finish_reason, out.error) == (State.COMPLETE, "tool_use", None)


def test_A1_parallel_same_index_sequential() -> None:
    # Two calls at index 0 with different ids and no stop between: the second ends the first.
    events = [message_start(), tool_start(0, "toolu_a", "read_file"), args(0, '{"path":"a"}')]
    events += [tool_start(0, "toolu_b", "search_text"), args(0, '{"query":"b"}'), stop(0)]
    out = run([*events, message_delta(), MESSAGE_STOP])
    assert out.tool_calls == (
        call("read_file", {"path": "a"}, "toolu_a"),
        call("search_text", {"query": "b"}, "toolu_b"),
    )


def test_B5_whole_input_in_start_without_deltas() -> None:
    start = tool_start(0, "toolu_1", "f").with_payload(
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {"a": 1}},
        }
    )
    out = run([message_start(), start, stop(0), message_delta(), MESSAGE_STOP])
    assert out.tool_calls == (call("f", {"a": 1}, "toolu_1"),)


def test_B7_no_arguments_is_empty_object() -> None:
    events = [message_start(), tool_start(0, "toolu_1", "list_tasks"), args(0, ""), stop(0)]
    out = run([*events, message_delta(), MESSAGE_STOP])
    assert out.tool_calls == (call("list_tasks", {}, "toolu_1"),)


def test_B10_truncated_args_are_invalid() -> None:
    events = [message_start(), *single(0, "toolu_1", "f", '{"a": 1'), message_delta(), MESSAGE_STOP]
    (got,) = run(events).tool_calls
    assert got.invalid and got.arguments == '{"a": 1'


def test_B11_parsable_prefix_is_not_final_before_stop() -> None:
    events = [message_start(), tool_start(0, "toolu_1", "search"), args(0, '{"query":"x"}')]
    assert run(events).tool_calls == ()
    events += [args(0, ',"limit":10}')]
    out = run([*events, stop(0), message_delta(), MESSAGE_STOP])
    assert out.tool_calls[0].invalid  # `{"query":"x"},"limit":10}` is the honest concatenation


def test_C1_interleaved_blocks() -> None:
    # Seed 004: block 1's deltas keep arriving after block 2 started.
    events = [message_start(), tool_start(1, "toolu_a", "read_file"), args(1, '{"pa')]
    events += [tool_start(2, "toolu_b", "search_text"), args(2, '{"query"'), args(1, 'th": "foo.txt"}')]
    events += [args(2, ': "bar"}'), stop(1), stop(2), message_delta(), MESSAGE_STOP]
    out = run(events)
    assert out.tool_calls == (
        call("read_file", {"path": "foo.txt"}, "toolu_a"),
        call("search_text", {"query": "bar"}, "toolu_b"),
    )


def test_C3_two_tool_blocks_in_one_message() -> None:
    events = [message_start(), *single(0, "toolu_a", "f", '{"x":1}'), *single(1, "toolu_b", "f", '{"x":2}')]
    out = run([*events, message_delta(), MESSAGE_STOP])
    assert [c.arguments for c in out.tool_calls] == [{"x": 1}, {"x": 2}]
    assert [c.id for c in out.tool_calls] == ["toolu_a", "toolu_b"]


def test_C4_thinking_then_reused_and_gapped_indices() -> None:
    events = [message_start(), block_start(0, "thinking"), thinking(0, "Let me look."), stop(0)]
    events += single(0, "toolu_a", "f", '{"x":1}')  # index 0 reused after its block stopped
    events += single(3, "toolu_b", "g", '{"y":2}')  # a gap: 1 and 2 never used
    out = run([*events, message_delta(), MESSAGE_STOP])
    assert out.tool_calls == (call("f", {"x": 1}, "toolu_a"), call("g", {"y": 2}, "toolu_b"))


def test_C4_interleaved_thinking_between_tool_blocks() -> None:
    events = [message_start(), *single(0, "toolu_a", "f", "{}")]
    events += [block_start(1, "thinking"), thinking(1, "Now the second."), stop(1)]
    events += single(2, "toolu_b", "g", '{"q":"z"}')
    out = run([*events, message_delta(), MESSAGE_STOP])
    assert out.tool_calls == (call("f", {}, "toolu_a"), call("g", {"q": "z"}, "toolu_b"))
    assert out.text == ""


def test_C6_text_around_a_call_is_kept() -> None:
    events = [message_start(), block_start(0, "text"), text(0, "I'll check "), text(0, "that now."), stop(0)]
    events += single(1, "toolu_a", "f", "{}")
    events += [block_start(2, "text"), text(2, " Done."), stop(2), message_delta(), MESSAGE_STOP]
    out = run(events)
    assert out.text == "I'll check that now. Done."
    assert len(out.tool_calls) == 1


def test_D1_stop_reason_end_turn_still_reports_calls() -> None:
    events = [message_start(), *single(0, "toolu_a", "f", "{}"), message_delta("end_turn"), MESSAGE_STOP]
    out = run(events)
    assert out.finish_reason == "end_turn" and len(out.tool_calls) == 1


def test_D6_no_message_stop_after_the_finish_is_complete_unless_the_transport_failed() -> None:
    # docs/oracle.md, "finish without terminal": the same rule as OpenAI chat without [DONE].
    events = [message_start(), *single(0, "toolu_a", "f", "{}"), message_delta()]
    out = run(events)
    assert out.state is State.COMPLETE and len(out.tool_calls) == 1 and out.error is None
    cut = run(events, "peer closed connection")
    assert cut.state is State.CUT and len(cut.tool_calls) == 1
    assert cut.error == "peer closed connection"
    no_finish = run([message_start(), *single(0, "toolu_a", "f", "{}")])
    assert no_finish.state is State.CUT and no_finish.error == "stream ended before message_stop"


def test_D7_cut_mid_args_reports_only_stopped_blocks() -> None:
    events = [message_start(), *single(0, "toolu_a", "f", '{"x":1}'), tool_start(1, "toolu_b", "g")]
    events.append(args(1, '{"y":'))
    out = run(events, error="peer closed connection")
    assert out.state is State.CUT and out.error == "peer closed connection"
    assert out.tool_calls == (call("f", {"x": 1}, "toolu_a"),)


def test_D8_error_event_after_a_partial_call() -> None:
    error = ev({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
    events = [message_start(), tool_start(0, "toolu_a", "f"), args(0, '{"x":'), error]
    out = run([*events, args(0, "1}"), stop(0), message_delta(), MESSAGE_STOP])
    assert out.state is State.ERROR and out.error == "overloaded_error: Overloaded"
    assert out.tool_calls == ()


def test_D9_tool_use_stop_reason_without_calls() -> None:
    out = run([message_start(), message_delta("tool_use"), MESSAGE_STOP])
    assert out.tool_calls == () and out.finish_reason == "tool_use" and out.state is State.COMPLETE


def test_D10_duplicate_message_start_and_block_start() -> None:
    events = [message_start(100), message_start(999), tool_start(0, "toolu_a", "f"), args(0, '{"x":')]
    events += [tool_start(0, "toolu_a", "f"), args(0, "1}"), stop(0), message_delta(), MESSAGE_STOP]
    out = run(events)
    assert out.tool_calls == (call("f", {"x": 1}, "toolu_a"),)
    assert out.usage is not None and out.usage["input_tokens"] == 100


def test_D10_restart_of_a_final_call_is_not_reported_twice() -> None:
    events = [message_start(), *single(0, "toolu_a", "f", '{"x":1}'), *single(0, "toolu_a", "f", "")]
    out = run([*events, message_delta(), MESSAGE_STOP])
    assert out.tool_calls == (call("f", {"x": 1}, "toolu_a"),)


def test_E3_stray_delta_after_stop_is_dropped() -> None:
    events = [message_start(), *single(0, "toolu_a", "f", '{"x":1}'), args(0, "}")]
    out = run([*events, message_delta(), MESSAGE_STOP])
    assert out.tool_calls == (call("f", {"x": 1}, "toolu_a"),)


def test_F8_pings_anywhere_and_unknown_events() -> None:
    unknown = ev({"type": "content_block_future", "index": 0})
    events = [PING, message_start(), PING, tool_start(0, "toolu_a", "f"), PING, args(0, '{"x"'), unknown]
    events += [PING, args(0, ":1}"), PING, stop(0), PING, message_delta(), PING, MESSAGE_STOP]
    assert run(events).tool_calls == (call("f", {"x": 1}, "toolu_a"),)


def test_events_after_message_stop_are_ignored() -> None:
    events = [message_start(), MESSAGE_STOP, *single(0, "toolu_a", "f", "{}")]
    assert run(events).tool_calls == ()


def test_message_stop_makes_an_open_block_final() -> None:
    events = [
        message_start(),
        tool_start(0, "toolu_a", "f"),
        args(0, '{"x":1}'),
        message_delta(),
        MESSAGE_STOP,
    ]
    assert run(events).tool_calls == (call("f", {"x": 1}, "toolu_a"),)


def test_usage_is_cumulative() -> None:
    start = message_start(472)
    out = run([start, message_delta(None, 10), message_delta("end_turn", 89), MESSAGE_STOP])
    assert out.usage == {"input_tokens": 472, "output_tokens": 89}
    assert out.finish_reason == "end_turn"


def test_server_tool_use_is_a_server_call_not_a_client_call() -> None:
    block = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}
    start = ev({"type": "content_block_start", "index": 0, "content_block": block})
    out = run([message_start(), start, args(0, '{"query":"x"}'), stop(0), message_delta(), MESSAGE_STOP])
    assert out.tool_calls == ()
    assert out.server_calls == (ServerCall("web_search", {"query": "x"}, "srvtoolu_1"),)


# -- the dialect surface -------------------------------------------------------------------------


def test_matches() -> None:
    assert DIALECT.matches(Request("POST", "https://api.anthropic.com/v1/messages"))
    assert DIALECT.matches(Request("POST", "http://127.0.0.1:9/x", {"Anthropic-Version": "2023-06-01"}))
    assert not DIALECT.matches(Request("POST", "https://api.openai.com/v1/chat/completions"))
    assert dialects.get("anthropic") is DIALECT


def test_kinds() -> None:
    assert DIALECT.kinds(message_start()) == {Kind.META, Kind.USAGE}
    assert DIALECT.kinds(tool_start(0, "t", "f")) == {Kind.TOOL_START}
    assert DIALECT.kinds(args(0, "{")) == {Kind.TOOL_ARGS}
    assert DIALECT.kinds(text(0, "hi")) == {Kind.TEXT}
    assert DIALECT.kinds(thinking(0, "hm")) == {Kind.REASONING}
    assert DIALECT.kinds(stop(0)) == {Kind.TOOL_END}
    assert DIALECT.kinds(message_delta()) == {Kind.FINISH, Kind.USAGE}
    assert DIALECT.kinds(MESSAGE_STOP) == {Kind.SENTINEL}
    assert DIALECT.kinds(PING) == {Kind.PING}
    assert DIALECT.kinds(DIALECT.build(Kind.ERROR)[0]) == {Kind.ERROR}
    assert DIALECT.kinds(DIALECT.parse(WireEvent(comment=" keepalive"))) == {Kind.COMMENT}


def interleaved_stream() -> list[Event]:
    events = [message_start(), block_start(0, "text"), text(0, "Checking."), stop(0)]
    events += [
        tool_start(1, "toolu_a", "read_file"),
        args(1, '{"pa'),
        tool_start(2, "toolu_b", "search_text"),
    ]
    events += [args(1, 'th":"foo.txt"}'), args(2, '{"query":"bar"}'), stop(2), stop(1)]
    return [*events, message_delta(), MESSAGE_STOP]


def test_fragments_follow_block_indices() -> None:
    got = [(f.event, f.call, f.role) for f in DIALECT.fragments(interleaved_stream())]
    assert got == [
        (4, 0, Role.START),
        (5, 0, Role.ARGS),
        (6, 1, Role.START),
        (7, 0, Role.ARGS),
        (8, 1, Role.ARGS),
        (9, 1, Role.END),
        (10, 0, Role.END),
    ]


def test_fragments_duplicate_start_is_the_same_call_and_reuse_is_a_new_one() -> None:
    events = [tool_start(0, "a", "f"), tool_start(0, "a", "f"), stop(0), tool_start(0, "b", "g"), stop(0)]
    assert [f.call for f in DIALECT.fragments(events)] == [0, 0, 0, 1, 1]


def test_get_fields() -> None:
    start, delta = tool_start(3, "toolu_x", "f"), args(3, '{"a"')
    assert DIALECT.get(start, 0, Field.ID) == "toolu_x"
    assert DIALECT.get(start, 0, Field.NAME) == "f"
    assert DIALECT.get(start, 0, Field.TYPE) == "tool_use"
    assert DIALECT.get(start, 0, Field.INDEX) == 3
    assert DIALECT.get(start, 0, Field.ARGS) is MISSING
    assert DIALECT.get(delta, 0, Field.ARGS) == '{"a"'
    assert DIALECT.get(delta, 0, Field.ID) is MISSING
    assert DIALECT.get(delta, 0, Field.ITEM_ID) is MISSING


def test_set_and_delete_fields() -> None:
    start = tool_start(0, "toolu_x", "f")
    renamed = DIALECT.set(start, 0, Field.NAME, "g")
    assert renamed.edited and DIALECT.get(renamed, 0, Field.NAME) == "g"
    assert DIALECT.get(start, 0, Field.NAME) == "f"  # the original is untouched
    no_id = DIALECT.set(start, 0, Field.ID, MISSING)
    assert "id" not in no_id.payload["content_block"]
    moved = DIALECT.set(args(0, "{}"), 0, Field.INDEX, 7)
    assert json.loads(DIALECT.render(moved).data)["index"] == 7
    with pytest.raises(DialectError, match="no id field"):
        DIALECT.set(args(0, "{}"), 0, Field.ID, "x")
    with pytest.raises(DialectError, match="slot"):
        DIALECT.get(start, 1, Field.ID)


def test_continuation_and_remove() -> None:
    cont = DIALECT.continuation(args(2, '{"a"'), 0, ":1}")
    assert cont.name == "content_block_delta"
    assert cont.payload == {
        "type": "content_block_delta",
        "index": 2,
        "delta": {"type": "input_json_delta", "partial_json": ":1}"},
    }
    assert DIALECT.remove(args(0, "{}"), 0) is None


def test_finish_reason() -> None:
    delta = message_delta("tool_use")
    assert DIALECT.finish_reason(delta) == "tool_use"
    assert DIALECT.finish_reason(MESSAGE_STOP) is MISSING
    changed = DIALECT.with_finish_reason(delta, "end_turn")
    assert DIALECT.finish_reason(changed) == "end_turn"
    assert DIALECT.finish_reason(DIALECT.with_finish_reason(delta, MISSING)) is MISSING
    with pytest.raises(DialectError):
        DIALECT.with_finish_reason(MESSAGE_STOP, "end_turn")


def test_build_covers_every_kind_a_stream_needs() -> None:
    events = DIALECT.build(Kind.META) + DIALECT.build(Kind.TEXT, text="Hi. ", index=0)
    events += DIALECT.build(Kind.REASONING, text="hmm", index=1)
    events += DIALECT.build(Kind.TOOL_CALL, id="toolu_z", name="f", args='{"k":"v"}', index=2)
    events += DIALECT.build(Kind.TOOL_START, id="toolu_y", name="g", index=3)
    events += DIALECT.build(Kind.TOOL_ARGS, args="{}", index=3) + DIALECT.build(Kind.TOOL_END, index=3)
    events += DIALECT.build(Kind.PING) + DIALECT.build(Kind.USAGE, output_tokens=5)
    events += DIALECT.build(Kind.FINISH, reason="tool_use") + DIALECT.build(Kind.SENTINEL)
    out = run([DIALECT.parse(DIALECT.render(e)) for e in events])
    assert out.tool_calls == (call("f", {"k": "v"}, "toolu_z"), call("g", {}, "toolu_y"))
    assert (out.text, out.finish_reason, out.state) == ("Hi. ", "tool_use", State.COMPLETE)
    assert DIALECT.build(Kind.OTHER) == []
    assert DIALECT.render(DIALECT.build(Kind.PING)[0]).data == '{"type": "ping"}'


def sse_body(events: list[Event]) -> bytes:
    return DIALECT.codec().encode(DIALECT.render(e) for e in events)


def test_body_of_round_trips_untouched_and_edited_events() -> None:
    body = sse_body(interleaved_stream()).replace(b"\n", b"\r\n")
    reads = [body[i : i + 37] for i in range(0, len(body), 37)]
    response = Response(200, {"content-type": "text/event-stream"}, [Chunk(r) for r in reads])
    events = dialects.events_of(response, "anthropic")
    assert dialects.body_of(events, "anthropic", like=body) == body
    # An edited fragment is re-serialised compactly; everything else stays byte for byte.
    position = DIALECT.fragments(events)[1].event
    events[position] = DIALECT.set(events[position], 0, Field.ARGS, '{"path":"bar.txt"}')
    events.pop(DIALECT.fragments(events)[3].event)
    edited = dialects.body_of(events, "anthropic")
    again = dialects.events_of(Response(200, {}, [Chunk(edited)]), "anthropic")
    out = run(again)
    assert out.tool_calls[0].arguments == {"path": "bar.txt"}
    assert b'"partial_json":"{\\"path\\":\\"bar.txt\\"}"' in edited


def test_reference_outcome_of_a_cut_response() -> None:
    body = sse_body([message_start(), *single(0, "toolu_a", "f", '{"x":1}'), tool_start(1, "toolu_b", "g")])
    response = Response(200, {}, [Chunk(body)], complete=False, error="ReadTimeout")
    out = dialects.reference_outcome(response, "anthropic")
    assert out.state is State.CUT and out.error == "ReadTimeout"
    assert out.tool_calls == (call("f", {"x": 1}, "toolu_a"),)


def test_F1_F3_multibyte_args_split_across_reads() -> None:
    events = [
        message_start(),
        *single(0, "toolu_a", "f", '{"city": "東', '京 🗼"}'),
        message_delta(),
        MESSAGE_STOP,
    ]
    body = sse_body(events)
    for size in (1, 2, 3, 5, 7):
        reads = [Chunk(body[i : i + size]) for i in range(0, len(body), size)]
        out = dialects.reference_outcome(Response(200, {}, reads), "anthropic")
        assert out.tool_calls == (call("f", {"city": "東京 🗼"}, "toolu_a"),), size
