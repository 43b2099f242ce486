"""The Ollama `/api/chat` dialect: its reference accumulator on each quirk class, and the fragment API."""

from __future__ import annotations

from typing import Any

import pytest

from harness.cassettes.format import Chunk, Request, Response
from harness.cassettes.outcome import Outcome, State
from harness.errors import DialectError
from harness.wire.codecs import NDJSONCodec, WireEvent
from harness.wire.dialects import (
    MISSING,
    Event,
    Field,
    Kind,
    Role,
    body_of,
    detect,
    events_of,
    reference_outcome,
)
from harness.wire.dialects.ollama import DIALECT
from harness.wire.synthesis import split_reads

MODEL = "qwen3:8b"


def line(content: str = "", *, calls: list[Any] | None = None, thinking: str | None = None) -> dict[str, Any]:
    msg: dict[str, Any] = {"role": "assistant", "content": content}
    if thinking is not None:
        msg["thinking"] = thinking
    if calls is not None:
        msg["tool_calls"] = calls
    return {"model": MODEL, "created_at": "2025-07-14T09:31:02.118731Z", "message": msg, "done": False}


def done(reason: str = "stop") -> dict[str, Any]:
    return {
        "model": MODEL,
        "created_at": "2025-07-14T09:31:03.402117Z",
        "message": {"role": "assistant", "content": ""},
        "done_reason": reason,
        "done": True,
        "total_duration": 2931577125,
        "load_duration": 41203250,
        "prompt_eval_count": 212,
        "prompt_eval_duration": 180220458,
        "eval_count": 38,
        "eval_duration": 1290310292,
    }


def fn(name: str, args: Any, *, id: str | None = None, index: int | None = None) -> dict[str, Any]:
    function: dict[str, Any] = {"name": name, "arguments": args}
    if index is not None:
        function = {"index": index, **function}
    return {"id": id, "function": function} if id else {"function": function}


def response(payloads: list[Any], *, reads: list[int] | None = None, **kw: Any) -> Response:
    data = NDJSONCodec().encode(WireEvent(data=DIALECT.dumps(p)) for p in payloads)
    pieces = split_reads(data, reads) if reads else [data]
    return Response(200, chunks=[Chunk(piece) for piece in pieces], **kw)


def outcome(payloads: list[Any], **kw: Any) -> Outcome:
    return reference_outcome(response(payloads, **kw), DIALECT)


def names_args(result: Outcome) -> list[tuple[str | None, Any]]:
    return [(c.name, c.arguments) for c in result.tool_calls]


# -- quirk classes -------------------------------------------------------------------------------


def test_A1_parallel_calls_all_at_index_zero_stay_distinct() -> None:
    result = outcome(
        [
            line(
                calls=[
                    fn("get_weather", {"city": "Paris"}, index=0),
                    fn("get_weather", {"city": "Rome"}, index=0),
                ]
            ),
            done(),
        ]
    )
    assert names_args(result) == [("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Rome"})]


def test_A2_one_call_per_line_each_at_position_zero() -> None:
    result = outcome([line(calls=[fn("a", {"n": 1})]), line(calls=[fn("a", {"n": 2})]), done()])
    assert names_args(result) == [("a", {"n": 1}), ("a", {"n": 2})]


def test_A3_index_missing() -> None:
    result = outcome([line(calls=[fn("a", {}), fn("b", {})]), done()])
    assert [c.name for c in result.tool_calls] == ["a", "b"]


def test_A10_missing_id() -> None:
    result = outcome([line(calls=[fn("a", {"x": 1})]), done()])
    assert result.tool_calls[0].id is None


def test_A10_ids_kept_when_present() -> None:
    result = outcome([line(calls=[fn("a", {}, id="call_k3m9x2qp"), fn("a", {}, id="call_p0z8d1aa")]), done()])
    assert [c.id for c in result.tool_calls] == ["call_k3m9x2qp", "call_p0z8d1aa"]


def test_B7_tool_with_no_args() -> None:
    result = outcome([line(calls=[fn("get_time", {})]), done()])
    assert names_args(result) == [("get_time", {})]


def test_B8_args_object_and_string_args_from_a_proxy() -> None:
    result = outcome([line(calls=[fn("a", {"k": [1, 2]}), fn("b", '{"k": 3}'), fn("c", '{"k":')]), done()])
    assert names_args(result)[:2] == [("a", {"k": [1, 2]}), ("b", {"k": 3})]
    assert result.tool_calls[2].invalid


def test_B9_reemitted_call_with_the_same_id_is_one_call() -> None:
    result = outcome(
        [line(calls=[fn("a", {"v": 1}, id="call_1")]), line(calls=[fn("a", {"v": 1}, id="call_1")]), done()]
    )
    assert names_args(result) == [("a", {"v": 1})]


def test_C2_several_calls_in_one_line() -> None:
    result = outcome([line(calls=[fn("a", {}), fn("b", {}), fn("c", {})]), done()])
    assert [c.name for c in result.tool_calls] == ["a", "b", "c"]


def test_C4_thinking_then_call() -> None:
    result = outcome(
        [
            line(thinking="The user wants "),
            line(thinking="the weather."),
            line(calls=[fn("get_weather", {"city": "Oslo"})]),
            done(),
        ]
    )
    assert result.text == ""
    assert names_args(result) == [("get_weather", {"city": "Oslo"})]


def test_C6_text_around_calls_is_kept() -> None:
    result = outcome([line("Checking "), line("now.", calls=[fn("a", {})]), line(" Done."), done()])
    assert result.text == "Checking now. Done."
    assert len(result.tool_calls) == 1


def test_D1_done_reason_stop_with_calls() -> None:
    result = outcome([line(calls=[fn("a", {})]), done()])
    assert result.finish_reason == "stop"
    assert result.state == State.COMPLETE
    assert result.usage is not None and result.usage["eval_count"] == 38


def test_D6_no_done_line_reports_no_calls() -> None:
    result = outcome([line(calls=[fn("a", {})])])
    assert result.state == State.CUT
    assert result.tool_calls == ()


def test_D7_cut_before_done() -> None:
    result = outcome([line(calls=[fn("a", {})])], complete=False, error="connection reset")
    assert result.state == State.CUT and result.error == "connection reset"
    assert result.tool_calls == ()


def test_D7_cut_after_done_is_complete() -> None:
    result = outcome([line(calls=[fn("a", {})]), done()], complete=False, error="connection reset")
    assert result.state == State.COMPLETE and len(result.tool_calls) == 1


def test_D8_error_line() -> None:
    result = outcome([line(calls=[fn("a", {})]), {"error": "model runner has unexpectedly stopped"}])
    assert result.state == State.ERROR
    assert result.error == "model runner has unexpectedly stopped"
    assert result.tool_calls == ()


def test_F1_multibyte_character_split_across_reads() -> None:
    payloads = [line(calls=[fn("translate", {"text": "Grüße 東京 🗼"})]), done()]
    data = response(payloads).body
    cut = data.index("東".encode()) + 2
    result = reference_outcome(Response(200, chunks=[Chunk(data[:cut]), Chunk(data[cut:])]), DIALECT)
    assert result.tool_calls[0].arguments == {"text": "Grüße 東京 🗼"}


def test_F3_lines_split_across_reads() -> None:
    result = outcome([line("Hi"), line(calls=[fn("a", {"q": "x" * 30})]), done()], reads=[9, 4])
    assert names_args(result) == [("a", {"q": "x" * 30})]


# -- the fragment API ----------------------------------------------------------------------------


def stream(payloads: list[Any]) -> tuple[list[Event], bytes]:
    resp = response(payloads)
    return events_of(resp, DIALECT), resp.body


def test_dumps_like_go() -> None:
    assert DIALECT.dumps({"content": "<think>a & b</think>", "é": 1}) == (
        '{"content":"\\u003cthink\\u003ea \\u0026 b\\u003c/think\\u003e","é":1}'
    )


def test_matches() -> None:
    assert DIALECT.matches(Request("POST", "http://localhost:11434/api/chat"))
    assert not DIALECT.matches(Request("POST", "http://localhost:11434/v1/chat/completions"))
    assert detect(Request("POST", "http://localhost:11434/api/chat")) == "ollama"


def test_round_trip_bytes() -> None:
    events, original = stream(
        [line("<think>"), line(calls=[fn("a", {"x": "&"}, id="call_1", index=0)]), done()]
    )
    assert body_of(events, DIALECT, like=original) == original
    edited = [e.with_payload(e.payload) for e in events]  # re-serialised the Go way: same bytes
    assert body_of(edited, DIALECT) == original


def test_kinds() -> None:
    events, _ = stream([line("hi"), line(thinking="t"), line(calls=[fn("a", {})]), done(), {"error": "x"}])
    assert [DIALECT.kinds(e) for e in events] == [
        {Kind.TEXT},
        {Kind.REASONING},
        {Kind.TOOL_CALL},
        {Kind.FINISH, Kind.SENTINEL, Kind.USAGE},
        {Kind.ERROR},
    ]


def test_fragments_get_set_round_trip() -> None:
    events, original = stream(
        [line(calls=[fn("a", {"v": 1}, id="call_1", index=0), fn("b", {}, index=1)]), done()]
    )
    frags = DIALECT.fragments(events)
    assert [(f.event, f.slot, f.call, f.role) for f in frags] == [
        (0, 0, 0, Role.WHOLE),
        (0, 1, 1, Role.WHOLE),
    ]
    first = events[0]
    assert DIALECT.get(first, 0, Field.ID) == "call_1"
    assert DIALECT.get(first, 1, Field.ID) is MISSING
    assert DIALECT.get(first, 1, Field.INDEX) == 1
    assert DIALECT.get(first, 0, Field.ARGS) == {"v": 1}
    edited = DIALECT.set(first, 1, Field.INDEX, 0)
    edited = DIALECT.set(edited, 0, Field.ID, MISSING)
    edited = DIALECT.set(edited, 1, Field.NAME, "c")
    data = body_of([edited, events[1]], DIALECT, like=original)
    result = reference_outcome(Response(200, chunks=[Chunk(data)]), DIALECT)
    assert [(c.id, c.name) for c in result.tool_calls] == [(None, "a"), (None, "c")]
    with pytest.raises(DialectError):
        DIALECT.get(first, 7, Field.NAME)


def test_remove_and_continuation() -> None:
    events, _ = stream([line(calls=[fn("a", {}), fn("b", {})]), line(calls=[fn("c", {})]), done()])
    left = DIALECT.remove(events[0], 0)
    assert left is not None and DIALECT.get(left, 0, Field.NAME) == "b"
    assert DIALECT.remove(events[1], 0) is None
    with pytest.raises(DialectError, match="no continuation"):
        DIALECT.continuation(events[0], 0, "{}")


def test_finish_reason_edit_keeps_go_field_order() -> None:
    events, _ = stream([done("stop")])
    assert DIALECT.finish_reason(events[0]) == "stop"
    gone = DIALECT.with_finish_reason(events[0], MISSING)
    assert DIALECT.finish_reason(gone) is MISSING
    back = DIALECT.with_finish_reason(gone, "length")
    keys = list(back.payload)
    assert keys.index("done_reason") == keys.index("done") - 1


def test_build_events() -> None:
    events, _ = stream([line(calls=[fn("a", {})])])
    (text,) = DIALECT.build(Kind.TEXT, text="hey", like=events[0])
    (tool,) = DIALECT.build(Kind.TOOL_CALL, name="b", args={"z": 1}, id="call_2")
    (finish,) = DIALECT.build(Kind.FINISH, reason="stop")
    assert DIALECT.build(Kind.SENTINEL)[0].payload["done"] is True
    assert DIALECT.kinds(DIALECT.build(Kind.ERROR, message="boom")[0]) == {Kind.ERROR}
    assert DIALECT.build(Kind.PING) == []
    data = body_of([events[0], text, tool, finish], DIALECT)
    result = reference_outcome(Response(200, chunks=[Chunk(data)]), DIALECT)
    assert names_args(result) == [("a", {}), ("b", {"z": 1})] and result.text == "hey"
    packed = DIALECT.pack([(events[0], 0), (tool, 0)])
    assert packed is not None and len(DIALECT.fragments([packed])) == 2
