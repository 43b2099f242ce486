"""The Bedrock ConverseStream dialect: its reference accumulator on each quirk class, and its fragment API."""

from __future__ import annotations

import json
from typing import Any

import pytest

from harness.cassettes.format import Chunk, Request, Response
from harness.cassettes.outcome import Outcome, State, ToolCall
from harness.errors import DialectError
from harness.wire import dialects
from harness.wire.codecs import WireEvent
from harness.wire.dialects import MISSING, Event, Field, Kind, Role
from harness.wire.dialects.bedrock_converse import DIALECT, exception_event, padding


def ev(name: str, payload: dict[str, Any]) -> Event:
    """An event as it comes out of the codec: decoded from real frame bytes, headers and all."""
    frame = DIALECT.codec().encode([WireEvent(data=json.dumps(payload, separators=(",", ":")), name=name)])
    (wire,) = DIALECT.codec().decoder().feed(frame)
    return DIALECT.parse(wire)


MESSAGE_START = ev("messageStart", {"p": padding(10), "role": "assistant"})


def tool_start(index: int, call_id: str, name: str) -> Event:
    start = {"toolUse": {"name": name, "toolUseId": call_id}}
    return ev("contentBlockStart", {"contentBlockIndex": index, "p": padding(30), "start": start})


def args(index: int, text: str) -> Event:
    return ev(
        "contentBlockDelta", {"contentBlockIndex": index, "delta": {"toolUse": {"input": text}}, "p": "ab"}
    )


def text(index: int, value: str) -> Event:
    return ev("contentBlockDelta", {"contentBlockIndex": index, "delta": {"text": value}, "p": padding(5)})


def reasoning(index: int, **delta: str) -> Event:
    return ev("contentBlockDelta", {"contentBlockIndex": index, "delta": {"reasoningContent": delta}})


def stop(index: int) -> Event:
    return ev("contentBlockStop", {"contentBlockIndex": index, "p": padding(40)})


def message_stop(reason: str = "tool_use") -> Event:
    return ev("messageStop", {"p": padding(3), "stopReason": reason})


METADATA = ev(
    "metadata",
    {
        "metrics": {"latencyMs": 812},
        "p": padding(12),
        "usage": {"inputTokens": 402, "outputTokens": 88, "totalTokens": 490},
    },
)


def run(events: list[Event], error: str | None = None) -> Outcome:
    acc = DIALECT.accumulator()
    for event in events:
        acc.feed(event)
    return acc.close(error)


def call(name: str, arguments: Any, call_id: str) -> ToolCall:
    return ToolCall(name=name, arguments=arguments, id=call_id)


def single(index: int, call_id: str, name: str, *pieces: str) -> list[Event]:
    return [tool_start(index, call_id, name), *(args(index, p) for p in pieces), stop(index)]


def finish(reason: str = "tool_use") -> list[Event]:
    return [message_stop(reason), METADATA]


def test_single_call_complete_with_usage_after_message_stop() -> None:
    out = run([MESSAGE_START, *single(0, "tooluse_1", "get_weather", '{"city":', '"Paris"}'), *finish()])
    assert out.tool_calls == (call("get_weather", {"city": "Paris"}, "tooluse_1"),)
    assert (out.state, out.finish_reason, out.error) == (State.COMPLETE, "tool_use", None)
    assert out.usage == {"inputTokens": 402, "outputTokens": 88, "totalTokens": 490}


def test_A1_parallel_same_index_sequential() -> None:
    # Seed 000's shape on the wire: two calls at index 0, the second start ends the first.
    events = [MESSAGE_START, tool_start(0, "tooluse_a", "read_file"), args(0, '{"path": "foo.txt"}')]
    events += [tool_start(0, "tooluse_b", "search_text"), args(0, '{"query": "bar"}'), stop(0)]
    assert run([*events, *finish()]).tool_calls == (
        call("read_file", {"path": "foo.txt"}, "tooluse_a"),
        call("search_text", {"query": "bar"}, "tooluse_b"),
    )


def test_B7_no_arguments_is_empty_object() -> None:
    for pieces in ((), ("",)):
        out = run([MESSAGE_START, *single(0, "tooluse_1", "list_tasks", *pieces), *finish()])
        assert out.tool_calls == (call("list_tasks", {}, "tooluse_1"),)


def test_B10_truncated_args_are_invalid() -> None:
    (got,) = run([MESSAGE_START, *single(0, "tooluse_1", "f", '{"a": 1'), *finish()]).tool_calls
    assert got.invalid and got.arguments == '{"a": 1'


def test_C1_interleaved_blocks() -> None:
    events = [MESSAGE_START, tool_start(0, "tooluse_a", "read_file"), args(0, '{"pa')]
    events += [tool_start(1, "tooluse_b", "search_text"), args(1, '{"query"'), args(0, 'th": "foo.txt"}')]
    events += [args(1, ': "bar"}'), stop(0), stop(1)]
    assert run([*events, *finish()]).tool_calls == (
        call("read_file", {"path": "foo.txt"}, "tooluse_a"),
        call("search_text", {"query": "bar"}, "tooluse_b"),
    )


def test_C3_two_tool_blocks_in_one_message() -> None:
    events = [MESSAGE_START, *single(0, "tooluse_a", "f", '{"x":1}'), *single(1, "tooluse_b", "f", '{"x":2}')]
    out = run([*events, *finish()])
    assert [(c.id, c.arguments) for c in out.tool_calls] == [("tooluse_a", {"x": 1}), ("tooluse_b", {"x": 2})]


def test_C4_reasoning_then_reused_and_gapped_indices() -> None:
    events = [MESSAGE_START, reasoning(0, text="Let me think."), reasoning(0, signature="sig"), stop(0)]
    events += single(0, "tooluse_a", "f", '{"x":1}')  # index 0 reused after its block stopped
    events += single(4, "tooluse_b", "g", '{"y":2}')  # a gap
    out = run([*events, *finish()])
    assert out.tool_calls == (call("f", {"x": 1}, "tooluse_a"), call("g", {"y": 2}, "tooluse_b"))
    assert out.text == ""


def test_C5_text_blocks_have_no_start() -> None:
    events = [MESSAGE_START, text(0, "I'll check "), text(0, "that now."), stop(0)]
    events += single(1, "tooluse_a", "read_file", '{"path":"a"}')
    events += [text(2, " And then"), text(2, " this."), stop(2)]
    events += single(3, "tooluse_b", "search_text", '{"query":"b"}')
    out = run([*events, *finish()])
    assert out.text == "I'll check that now. And then this."
    assert out.tool_calls == (
        call("read_file", {"path": "a"}, "tooluse_a"),
        call("search_text", {"query": "b"}, "tooluse_b"),
    )


def test_C5_a_text_block_without_stop_is_ended_by_a_tool_start_at_its_index() -> None:
    events = [MESSAGE_START, text(0, "Hi."), *single(0, "tooluse_a", "f", "{}"), *finish()]
    out = run(events)
    assert out.text == "Hi." and out.tool_calls == (call("f", {}, "tooluse_a"),)


def test_D6_no_message_stop_is_cut() -> None:
    out = run([MESSAGE_START, *single(0, "tooluse_a", "f", "{}")])
    assert out.state is State.CUT and out.error == "stream ended before messageStop"
    assert len(out.tool_calls) == 1


def test_D7_cut_mid_args_reports_only_stopped_blocks() -> None:
    events = [MESSAGE_START, *single(0, "tooluse_a", "f", '{"x":1}'), tool_start(1, "tooluse_b", "g")]
    out = run([*events, args(1, '{"y":')], error="ReadTimeout")
    assert (out.state, out.error) == (State.CUT, "ReadTimeout")
    assert out.tool_calls == (call("f", {"x": 1}, "tooluse_a"),)


def test_D8_exception_frame_after_a_partial_call() -> None:
    boom = exception_event("modelStreamErrorException", "Model stream error")
    events = [MESSAGE_START, tool_start(0, "tooluse_a", "f"), args(0, '{"x":'), boom, args(0, "1}"), stop(0)]
    out = run([*events, *finish()])
    assert out.state is State.ERROR and out.error == "modelStreamErrorException: Model stream error"
    assert out.tool_calls == () and out.usage is None


def test_D8_exception_frame_survives_the_codec() -> None:
    frame = DIALECT.codec().encode([DIALECT.render(exception_event("throttlingException", "Too many"))])
    (wire,) = DIALECT.codec().decoder().feed(frame)
    event = DIALECT.parse(wire)
    assert event.name == "throttlingException" and DIALECT.kinds(event) == {Kind.ERROR}
    assert run([MESSAGE_START, event]).error == "throttlingException: Too many"


def test_an_exception_frame_decoded_without_its_headers_renders_as_an_exception_frame() -> None:
    """The stdio protocol carries an event's name and payload only: a `...Exception` event rebuilt
    from them is written back with Bedrock's exception headers, so a client's SDK raises it (it
    ignores an `event` frame of a type it does not know)."""
    payload = {"message": "Model stream error"}
    rebuilt = Event(WireEvent(data=json.dumps(payload), name="modelStreamErrorException"), payload)
    (wire,) = DIALECT.codec().decoder().feed(DIALECT.codec().encode([DIALECT.render(rebuilt)]))
    assert (":message-type", 7, "exception") in wire.headers
    assert (":exception-type", 7, "modelStreamErrorException") in wire.headers
    assert DIALECT.kinds(DIALECT.parse(wire)) == {Kind.ERROR}


def test_D10_duplicate_message_start_and_block_start() -> None:
    events = [MESSAGE_START, MESSAGE_START, tool_start(0, "tooluse_a", "f"), args(0, '{"x":')]
    events += [tool_start(0, "tooluse_a", "f"), args(0, "1}"), stop(0), *single(1, "tooluse_a", "f", "{}")]
    assert run([*events, *finish()]).tool_calls == (call("f", {"x": 1}, "tooluse_a"),)


def test_E3_stray_and_orphan_tool_deltas_are_dropped() -> None:
    events = [MESSAGE_START, args(5, '{"orphan":1}'), *single(0, "tooluse_a", "f", '{"x":1}'), args(0, "}")]
    assert run([*events, *finish()]).tool_calls == (call("f", {"x": 1}, "tooluse_a"),)


def test_message_stop_makes_an_open_block_final_and_later_events_are_ignored() -> None:
    events = [MESSAGE_START, tool_start(0, "tooluse_a", "f"), args(0, '{"x":1}'), *finish()]
    events += single(1, "tooluse_b", "g", "{}")
    out = run(events)
    assert out.tool_calls == (call("f", {"x": 1}, "tooluse_a"),) and out.usage is not None


# -- the dialect surface -------------------------------------------------------------------------

URL = "https://bedrock-runtime.us-east-1.amazonaws.com/model/us.anthropic.claude-sonnet-4-20250514-v1%3A0"


def test_matches() -> None:
    assert DIALECT.matches(Request("POST", f"{URL}/converse-stream"))
    assert not DIALECT.matches(Request("POST", f"{URL}/converse"))
    assert not DIALECT.matches(Request("POST", "https://api.anthropic.com/v1/messages"))
    assert dialects.get("bedrock-converse") is DIALECT


def test_kinds() -> None:
    assert DIALECT.kinds(MESSAGE_START) == {Kind.META}
    assert DIALECT.kinds(tool_start(0, "t", "f")) == {Kind.TOOL_START}
    assert DIALECT.kinds(args(0, "{")) == {Kind.TOOL_ARGS}
    assert DIALECT.kinds(text(0, "hi")) == {Kind.TEXT}
    assert DIALECT.kinds(reasoning(0, text="hm")) == {Kind.REASONING}
    assert DIALECT.kinds(stop(0)) == {Kind.TOOL_END}
    assert DIALECT.kinds(message_stop()) == {Kind.FINISH, Kind.SENTINEL}
    assert DIALECT.kinds(METADATA) == {Kind.USAGE}


def interleaved_stream() -> list[Event]:
    events = [MESSAGE_START, text(0, "Checking."), stop(0), tool_start(1, "tooluse_a", "read_file")]
    events += [args(1, '{"pa'), tool_start(2, "tooluse_b", "search_text"), args(1, 'th":"foo.txt"}')]
    events += [args(2, '{"query":"bar"}'), stop(2), stop(1)]
    return [*events, *finish()]


def test_fragments_follow_block_indices() -> None:
    got = [(f.event, f.call, f.role) for f in DIALECT.fragments(interleaved_stream())]
    assert got == [
        (3, 0, Role.START),
        (4, 0, Role.ARGS),
        (5, 1, Role.START),
        (6, 0, Role.ARGS),
        (7, 1, Role.ARGS),
        (8, 1, Role.END),
        (9, 0, Role.END),
    ]


def test_get_set_fields() -> None:
    start, delta = tool_start(3, "tooluse_x", "f"), args(3, '{"a"')
    assert [DIALECT.get(start, 0, f) for f in (Field.ID, Field.NAME, Field.INDEX)] == ["tooluse_x", "f", 3]
    assert DIALECT.get(start, 0, Field.TYPE) is MISSING
    assert DIALECT.get(start, 0, Field.ARGS) is MISSING
    assert DIALECT.get(delta, 0, Field.ARGS) == '{"a"'
    assert DIALECT.get(delta, 0, Field.ID) is MISSING
    renamed = DIALECT.set(start, 0, Field.NAME, "g")
    assert DIALECT.get(renamed, 0, Field.NAME) == "g" and DIALECT.get(start, 0, Field.NAME) == "f"
    assert "toolUseId" not in DIALECT.set(start, 0, Field.ID, MISSING).payload["start"]["toolUse"]
    assert DIALECT.set(delta, 0, Field.INDEX, 9).payload["contentBlockIndex"] == 9
    with pytest.raises(DialectError, match="no id field"):
        DIALECT.set(delta, 0, Field.ID, "x")
    with pytest.raises(DialectError, match="slot"):
        DIALECT.get(start, 2, Field.ID)


def test_continuation_keeps_the_padding_and_remove() -> None:
    cont = DIALECT.continuation(args(2, '{"a"'), 0, ":1}")
    assert cont.name == "contentBlockDelta"
    assert cont.payload == {"contentBlockIndex": 2, "delta": {"toolUse": {"input": ":1}"}}, "p": "ab"}
    assert DIALECT.remove(args(0, "{}"), 0) is None


def test_finish_reason() -> None:
    end = message_stop("tool_use")
    assert DIALECT.finish_reason(end) == "tool_use" and DIALECT.finish_reason(METADATA) is MISSING
    assert DIALECT.finish_reason(DIALECT.with_finish_reason(end, "end_turn")) == "end_turn"
    assert DIALECT.finish_reason(DIALECT.with_finish_reason(end, MISSING)) is MISSING
    with pytest.raises(DialectError):
        DIALECT.with_finish_reason(METADATA, "end_turn")


def test_build_covers_every_kind_a_stream_needs() -> None:
    events = DIALECT.build(Kind.META) + DIALECT.build(Kind.REASONING, text="hmm", index=0)
    events += DIALECT.build(Kind.TEXT, text="Hi. ", index=1)
    events += DIALECT.build(Kind.TOOL_CALL, id="tooluse_z", name="f", args='{"k":"v"}', index=2)
    events += DIALECT.build(Kind.TOOL_START, id="tooluse_y", name="g", index=3)
    events += DIALECT.build(Kind.TOOL_ARGS, args="{}", index=3) + DIALECT.build(Kind.TOOL_END, index=3)
    events += DIALECT.build(Kind.FINISH, reason="tool_use") + DIALECT.build(Kind.USAGE, output_tokens=5)
    body = DIALECT.codec().encode(DIALECT.render(e) for e in events)
    out = run([DIALECT.parse(w) for w in DIALECT.codec().decoder().feed(body)])
    assert out.tool_calls == (call("f", {"k": "v"}, "tooluse_z"), call("g", {}, "tooluse_y"))
    assert (out.text, out.finish_reason, out.state) == ("Hi. ", "tool_use", State.COMPLETE)
    assert out.usage == {"inputTokens": 10, "outputTokens": 5, "totalTokens": 15}
    assert DIALECT.build(Kind.PING) == [] and DIALECT.build(Kind.SENTINEL)[0].name == "messageStop"
    assert DIALECT.kinds(DIALECT.build(Kind.ERROR, message="x")[0]) == {Kind.ERROR}


def test_body_of_round_trips_untouched_and_edited_events() -> None:
    body = DIALECT.codec().encode(DIALECT.render(e) for e in interleaved_stream())
    reads = [body[i : i + 53] for i in range(0, len(body), 53)]
    events = dialects.events_of(Response(200, {}, [Chunk(r) for r in reads]), "bedrock-converse")
    assert dialects.body_of(events, "bedrock-converse") == body
    position = DIALECT.fragments(events)[1].event
    events[position] = DIALECT.set(events[position], 0, Field.ARGS, '{"path":"bar.txt"}')
    events.pop(DIALECT.fragments(events)[3].event)
    again = dialects.events_of(
        Response(200, {}, [Chunk(dialects.body_of(events, "bedrock-converse"))]), DIALECT
    )
    assert run(again).tool_calls[0].arguments == {"path": "bar.txt"}
    assert again[position].wire.headers == events[position].wire.headers


def test_reference_outcome_of_a_cut_response() -> None:
    events = [MESSAGE_START, *single(0, "tooluse_a", "f", '{"x":1}'), tool_start(1, "tooluse_b", "g")]
    body = DIALECT.codec().encode(DIALECT.render(e) for e in events)
    response = Response(200, {}, [Chunk(body[:-7])], complete=False, error="peer closed connection")
    out = dialects.reference_outcome(response, "bedrock-converse")
    assert out.state is State.CUT and out.error == "peer closed connection"
    assert out.tool_calls == (call("f", {"x": 1}, "tooluse_a"),)


def test_F9_frames_split_and_packed_across_reads() -> None:
    events = [MESSAGE_START, *single(0, "tooluse_a", "f", '{"city": "東', '京"}'), *finish()]
    body = DIALECT.codec().encode(DIALECT.render(e) for e in events)
    for size in (1, 7, 100, 1000, len(body)):
        reads = [Chunk(body[i : i + size]) for i in range(0, len(body), size)]
        out = dialects.reference_outcome(Response(200, {}, reads), "bedrock-converse")
        assert out.tool_calls == (call("f", {"city": "東京"}, "tooluse_a"),), size
