"""The Cohere v2 chat dialect: its reference accumulator on each quirk class, and the fragment API."""

from __future__ import annotations

from typing import Any

import pytest

from harness.cassettes.format import Chunk, Request, Response
from harness.cassettes.outcome import Outcome, State
from harness.errors import DialectError
from harness.wire.codecs import SSECodec, WireEvent
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
from harness.wire.dialects.cohere import DIALECT
from harness.wire.synthesis import split_reads

USAGE = {
    "billed_units": {"input_tokens": 41, "output_tokens": 22},
    "tokens": {"input_tokens": 912, "output_tokens": 58},
}


def ev(payload: Any) -> WireEvent:
    if payload == "[DONE]":
        return WireEvent(data="[DONE]")
    return WireEvent(data=DIALECT.dumps(payload), name=payload.get("type"))


def start_msg() -> dict[str, Any]:
    msg = {"role": "assistant", "content": [], "tool_plan": "", "tool_calls": [], "citations": []}
    return {"id": "6f1e3c52-8d0a-4b8e-9d3c-2a7f5b1c9e04", "type": "message-start", "delta": {"message": msg}}


def plan(text: str) -> dict[str, Any]:
    return {"type": "tool-plan-delta", "delta": {"message": {"tool_plan": text}}}


def tc_start(
    index: Any, name: str, id: str | None = "get_weather_k2x9v8w1ab3c", args: str = ""
) -> dict[str, Any]:
    tc: dict[str, Any] = {"type": "function", "function": {"name": name, "arguments": args}}
    if id is not None:
        tc = {"id": id, **tc}
    payload: dict[str, Any] = {"type": "tool-call-start"}
    if index is not None:
        payload["index"] = index
    payload["delta"] = {"message": {"tool_calls": tc}}
    return payload


def tc_delta(index: Any, args: str, **extra: Any) -> dict[str, Any]:
    tc: dict[str, Any] = {**extra, "function": {"arguments": args}}
    payload: dict[str, Any] = {"type": "tool-call-delta"}
    if index is not None:
        payload["index"] = index
    payload["delta"] = {"message": {"tool_calls": tc}}
    return payload


def tc_end(index: Any) -> dict[str, Any]:
    return {"type": "tool-call-end", "index": index} if index is not None else {"type": "tool-call-end"}


def text(index: int, value: str) -> list[dict[str, Any]]:
    return [
        {
            "type": "content-start",
            "index": index,
            "delta": {"message": {"content": {"type": "text", "text": ""}}},
        },
        {"type": "content-delta", "index": index, "delta": {"message": {"content": {"text": value}}}},
        {"type": "content-end", "index": index},
    ]


def end(reason: str = "TOOL_CALL", **extra: Any) -> dict[str, Any]:
    return {"type": "message-end", "delta": {"finish_reason": reason, "usage": USAGE, **extra}}


def call(
    index: Any, name: str, pieces: list[str], id: str | None = "get_weather_k2x9v8w1ab3c"
) -> list[dict[str, Any]]:
    return [tc_start(index, name, id), *(tc_delta(index, p) for p in pieces), tc_end(index)]


def response(
    payloads: list[Any], *, reads: list[int] | None = None, newline: str = "\n", **kw: Any
) -> Response:
    wire = [p if isinstance(p, WireEvent) else ev(p) for p in payloads]
    data = SSECodec(newline=newline).encode(wire)
    pieces = split_reads(data, reads) if reads else [data]
    return Response(200, chunks=[Chunk(piece) for piece in pieces], **kw)


def outcome(payloads: list[Any], **kw: Any) -> Outcome:
    return reference_outcome(response(payloads, **kw), DIALECT)


def names_args(result: Outcome) -> list[tuple[str | None, Any]]:
    return [(c.name, c.arguments) for c in result.tool_calls]


# -- quirk classes -------------------------------------------------------------------------------


def test_A1_parallel_same_index_sequential_calls_stay_distinct() -> None:
    result = outcome(
        [
            start_msg(),
            *call(0, "a", ['{"x":', "1}"], "a_1"),
            *call(0, "b", ['{"y":2}'], "b_1"),
            end(),
            "[DONE]",
        ]
    )
    assert [(c.id, c.name, c.arguments) for c in result.tool_calls] == [
        ("a_1", "a", {"x": 1}),
        ("b_1", "b", {"y": 2}),
    ]


def test_A3_index_missing_on_every_fragment() -> None:
    result = outcome(
        [start_msg(), *call(None, "a", ['{"x"', ":1}"]), *call(None, "b", ["{}"]), end(), "[DONE]"]
    )
    assert names_args(result) == [("a", {"x": 1}), ("b", {})]


def test_A5_id_repeated_on_every_delta_is_not_concatenated() -> None:
    events = [
        start_msg(),
        tc_start(0, "a", "a_1"),
        tc_delta(0, '{"x":', id="a_1"),
        tc_delta(0, "1}", id="a_1"),
        tc_end(0),
        end(),
        "[DONE]",
    ]
    result = outcome(events)
    assert [(c.id, c.arguments) for c in result.tool_calls] == [("a_1", {"x": 1})]


def test_A6_empty_string_id_on_continuations() -> None:
    events = [start_msg(), tc_start(0, "a", "a_1"), tc_delta(0, '{"x":1}', id=""), tc_end(0), end(), "[DONE]"]
    assert [(c.id, c.arguments) for c in outcome(events).tool_calls] == [("a_1", {"x": 1})]


def test_A7_rotating_ids_do_not_split_the_call() -> None:
    events = [
        start_msg(),
        tc_start(0, "a", "a_1"),
        tc_delta(0, '{"x":', id="r_1"),
        tc_delta(0, "1}", id="r_2"),
        tc_end(0),
        end(),
        "[DONE]",
    ]
    assert [(c.id, c.arguments) for c in outcome(events).tool_calls] == [("a_1", {"x": 1})]


def test_A10_missing_id() -> None:
    result = outcome([start_msg(), *call(0, "a", ["{}"], id=None), end(), "[DONE]"])
    assert result.tool_calls[0].id is None and result.tool_calls[0].name == "a"


def test_A11_continuation_index_that_no_call_started_with_goes_to_the_open_call() -> None:
    events = [
        start_msg(),
        tc_start(0, "a"),
        tc_delta(1, '{"x":'),
        tc_delta(2, "1}"),
        tc_end(0),
        end(),
        "[DONE]",
    ]
    assert names_args(outcome(events)) == [("a", {"x": 1})]


def test_B3_name_repeated_on_deltas_is_not_doubled() -> None:
    delta = tc_delta(0, '{"q":"x"}', type="function")
    delta["delta"]["message"]["tool_calls"]["function"]["name"] = "search"
    events = [start_msg(), tc_start(0, "search"), delta, tc_end(0), end(), "[DONE]"]
    assert names_args(outcome(events)) == [("search", {"q": "x"})]


def test_B5_whole_call_in_the_start_event() -> None:
    events = [start_msg(), tc_start(0, "a", args='{"x":1}'), tc_end(0), end(), "[DONE]"]
    assert names_args(outcome(events)) == [("a", {"x": 1})]


def test_B6_placeholder_braces_in_the_start_are_dropped() -> None:
    events = [
        start_msg(),
        tc_start(0, "a", args="{}"),
        tc_delta(0, '{"x":'),
        tc_delta(0, "1}"),
        tc_end(0),
        end(),
        "[DONE]",
    ]
    assert names_args(outcome(events)) == [("a", {"x": 1})]


def test_B7_tool_with_no_args() -> None:
    events = [start_msg(), tc_start(0, "get_time"), tc_end(0), end(), "[DONE]"]
    assert names_args(outcome(events)) == [("get_time", {})]


def test_B9_duplicate_full_args_at_the_end_ignored() -> None:
    events = [start_msg(), *call(0, "a", ['{"x":', "1}", '{"x":1}']), end(), "[DONE]"]
    assert names_args(outcome(events)) == [("a", {"x": 1})]


def test_B10_truncated_args_are_invalid() -> None:
    result = outcome([start_msg(), *call(0, "a", ['{"x":', "1"]), end(), "[DONE]"])
    assert result.tool_calls[0].invalid and result.tool_calls[0].arguments == '{"x":1'


def test_C1_interleaved_fragments_routed_by_index() -> None:
    events = [
        start_msg(),
        tc_start(0, "a", "a_1"),
        tc_start(1, "b", "b_1"),
        tc_delta(1, '{"y":'),
        tc_delta(0, '{"x":'),
        tc_delta(0, "1}"),
        tc_delta(1, "2}"),
        tc_end(0),
        tc_end(1),
        end(),
        "[DONE]",
    ]
    assert names_args(outcome(events)) == [("a", {"x": 1}), ("b", {"y": 2})]


def test_C4_thinking_content_then_a_call_at_index_zero() -> None:
    thinking = {
        "type": "content-delta",
        "index": 0,
        "delta": {"message": {"content": {"thinking": "Need weather."}}},
    }
    result = outcome(
        [start_msg(), thinking, {"type": "content-end", "index": 0}, *call(0, "a", ["{}"]), end(), "[DONE]"]
    )
    assert result.text == "" and names_args(result) == [("a", {})]


def test_C6_text_and_tool_plan() -> None:
    result = outcome(
        [
            start_msg(),
            plan("I will "),
            plan("look."),
            *call(0, "a", ["{}"]),
            *text(0, "Done."),
            end(),
            "[DONE]",
        ]
    )
    assert result.text == "Done."
    assert len(result.tool_calls) == 1


def test_D1_complete_finish_with_calls_still_reports_them() -> None:
    result = outcome([start_msg(), *call(0, "a", ["{}"]), end("COMPLETE"), "[DONE]"])
    assert result.finish_reason == "COMPLETE" and len(result.tool_calls) == 1


def test_D6_no_done_sentinel_is_complete_at_message_end() -> None:
    result = outcome([start_msg(), *call(0, "a", ["{}"]), end()])
    assert result.state == State.COMPLETE and len(result.tool_calls) == 1


def test_D6_done_without_message_end() -> None:
    result = outcome([start_msg(), *call(0, "a", ["{}"]), "[DONE]"])
    assert result.state == State.COMPLETE and result.finish_reason is None


def test_D6_neither_message_end_nor_done_is_cut_keeping_ended_calls() -> None:
    result = outcome([start_msg(), *call(0, "a", ["{}"])])
    assert result.state == State.CUT and len(result.tool_calls) == 1


def test_D7_cut_mid_args_drops_the_open_call() -> None:
    events = [start_msg(), *call(0, "a", ["{}"], "a_1"), tc_start(1, "b", "b_1"), tc_delta(1, '{"city":"Par')]
    result = outcome(events, complete=False, error="incomplete chunked read")
    assert result.state == State.CUT and result.error == "incomplete chunked read"
    assert [c.id for c in result.tool_calls] == ["a_1"]


def test_D7_max_tokens_drops_the_unended_call() -> None:
    events = [start_msg(), tc_start(0, "a"), tc_delta(0, '{"x":'), end("MAX_TOKENS"), "[DONE]"]
    result = outcome(events)
    assert result.state == State.COMPLETE and result.tool_calls == ()


def test_D7_missing_end_marker_is_final_at_message_end() -> None:
    events = [start_msg(), tc_start(0, "a"), tc_delta(0, '{"x":1}'), end(), "[DONE]"]
    assert names_args(outcome(events)) == [("a", {"x": 1})]


def test_D8_error_finish_keeps_ended_calls() -> None:
    events = [
        start_msg(),
        *call(0, "a", ["{}"]),
        tc_start(1, "b"),
        tc_delta(1, "{"),
        {"type": "message-end", "delta": {"error": "internal server error", "finish_reason": "ERROR"}},
    ]
    result = outcome(events)
    assert result.state == State.ERROR and result.error == "internal server error"
    assert [c.name for c in result.tool_calls] == ["a"]


def test_D8_in_band_error_object() -> None:
    result = outcome([start_msg(), tc_start(0, "a"), {"error": {"message": "upstream overloaded"}}])
    assert result.state == State.ERROR and result.error == "upstream overloaded"


def test_D9_tool_call_finish_with_no_calls() -> None:
    result = outcome([start_msg(), *text(0, "Hi"), end("TOOL_CALL"), "[DONE]"])
    assert result.tool_calls == () and result.state == State.COMPLETE


def test_D10_duplicate_message_start() -> None:
    result = outcome([start_msg(), start_msg(), *call(0, "a", ['{"x":', "1}"]), end(), "[DONE]"])
    assert names_args(result) == [("a", {"x": 1})] and result.state == State.COMPLETE


def test_D10_duplicate_tool_call_start_is_one_call() -> None:
    first, *rest = call(0, "a", ['{"x":', "1}"])
    result = outcome([start_msg(), first, first, *rest, end(), "[DONE]"])
    assert names_args(result) == [("a", {"x": 1})]


def test_E3_stray_delta_after_end_is_ignored() -> None:
    events = [start_msg(), *call(0, "a", ['{"x":1}']), tc_delta(0, "}"), end(), "[DONE]"]
    assert names_args(outcome(events)) == [("a", {"x": 1})]


def test_F1_multibyte_split_across_reads() -> None:
    resp = response([start_msg(), *call(0, "a", ['{"t":"', "日本語", '"}']), end(), "[DONE]"])
    data = resp.body
    cut = data.index("本".encode()) + 1
    result = reference_outcome(Response(200, chunks=[Chunk(data[:cut]), Chunk(data[cut:])]), DIALECT)
    assert names_args(result) == [("a", {"t": "日本語"})]


def test_F3_events_split_across_small_reads() -> None:
    result = outcome([start_msg(), *call(0, "a", ['{"x":', "1}"]), end(), "[DONE]"], reads=[5, 13, 2])
    assert names_args(result) == [("a", {"x": 1})]


def test_F4_crlf() -> None:
    result = outcome([start_msg(), *call(0, "a", ['{"x":', "1}"]), end(), "[DONE]"], newline="\r\n")
    assert names_args(result) == [("a", {"x": 1})] and result.state == State.COMPLETE


def test_F6_comments_ignored() -> None:
    events = [WireEvent(comment=" ping"), start_msg(), *call(0, "a", ['{"x":', "1}"]), end(), "[DONE]"]
    result = outcome(events)
    assert names_args(result) == [("a", {"x": 1})] and result.state == State.COMPLETE


# -- the fragment API ----------------------------------------------------------------------------


def stream(payloads: list[Any]) -> tuple[list[Event], bytes]:
    resp = response(payloads)
    return events_of(resp, DIALECT), resp.body


def test_matches() -> None:
    assert DIALECT.matches(Request("POST", "https://api.cohere.com/v2/chat"))
    assert not DIALECT.matches(Request("POST", "https://api.cohere.com/v1/chat"))
    assert detect(Request("POST", "https://api.cohere.com/v2/chat")) == "cohere"


def test_round_trip_and_kinds() -> None:
    events, original = stream([start_msg(), plan("I"), *call(0, "a", ["{}"]), *text(0, "x"), end(), "[DONE]"])
    assert body_of(events, DIALECT, like=original) == original
    assert [DIALECT.kinds(e) for e in events] == [
        {Kind.META},
        {Kind.REASONING},
        {Kind.TOOL_START},
        {Kind.TOOL_ARGS},
        {Kind.TOOL_END},
        {Kind.META},
        {Kind.TEXT},
        {Kind.META},
        {Kind.FINISH, Kind.USAGE},
        {Kind.SENTINEL},
    ]


def test_fragments_get_set_round_trip() -> None:
    events, original = stream(
        [start_msg(), *call(0, "a", ['{"x":', "1}"], "a_1"), *call(1, "b", ["{}"], "b_1"), end()]
    )
    frags = DIALECT.fragments(events)
    assert [(f.event, f.call, f.role) for f in frags] == [
        (1, 0, Role.START),
        (2, 0, Role.ARGS),
        (3, 0, Role.ARGS),
        (4, 0, Role.END),
        (5, 1, Role.START),
        (6, 1, Role.ARGS),
        (7, 1, Role.END),
    ]
    start_b = events[5]
    assert DIALECT.get(start_b, 0, Field.INDEX) == 1
    assert DIALECT.get(start_b, 0, Field.ID) == "b_1"
    assert DIALECT.get(start_b, 0, Field.NAME) == "b"
    assert DIALECT.get(start_b, 0, Field.TYPE) == "function"
    assert DIALECT.get(events[2], 0, Field.ARGS) == '{"x":'
    assert DIALECT.get(events[2], 0, Field.ID) is MISSING
    assert DIALECT.get(events[4], 0, Field.NAME) is MISSING
    mutated = list(events)
    mutated[2] = DIALECT.set(events[2], 0, Field.ID, "a_1")
    mutated[3] = DIALECT.set(events[3], 0, Field.ARGS, "2}")
    mutated[5] = DIALECT.set(start_b, 0, Field.INDEX, MISSING)
    data = body_of(mutated, DIALECT, like=original)
    result = reference_outcome(Response(200, chunks=[Chunk(data)]), DIALECT)
    assert [(c.id, c.arguments) for c in result.tool_calls] == [("a_1", {"x": 2}), ("b_1", {})]
    with pytest.raises(DialectError):
        DIALECT.get(events[0], 0, Field.NAME)
    with pytest.raises(DialectError):
        DIALECT.set(events[2], 0, Field.ITEM_ID, "x")


def test_continuation_and_remove() -> None:
    events, original = stream([start_msg(), *call(3, "a", ['{"x":'], "a_1"), end()])
    more = DIALECT.continuation(events[2], 0, "7}")
    assert more.name == "tool-call-delta" and DIALECT.get(more, 0, Field.INDEX) == 3
    mutated = [*events[:3], more, *events[3:]]
    data = body_of(mutated, DIALECT, like=original)
    result = reference_outcome(Response(200, chunks=[Chunk(data)]), DIALECT)
    assert names_args(result) == [("a", {"x": 7})]
    assert DIALECT.remove(events[2], 0) is None


def test_finish_reason_edit_and_build() -> None:
    events, _ = stream([start_msg(), *call(0, "a", ["{}"]), end()])
    last = events[-1]
    assert DIALECT.finish_reason(last) == "TOOL_CALL"
    assert DIALECT.finish_reason(events[0]) is MISSING
    assert DIALECT.finish_reason(DIALECT.with_finish_reason(last, "COMPLETE")) == "COMPLETE"
    assert DIALECT.finish_reason(DIALECT.with_finish_reason(last, MISSING)) is MISSING
    with pytest.raises(DialectError):
        DIALECT.with_finish_reason(events[0], "COMPLETE")
    built = [
        *DIALECT.build(Kind.META, id="m1"),
        *DIALECT.build(Kind.REASONING, text="plan"),
        *DIALECT.build(Kind.TOOL_CALL, name="b", args={"k": "v"}, id="b_1"),
        *DIALECT.build(Kind.TEXT, text="ok"),
        *DIALECT.build(Kind.FINISH, reason="TOOL_CALL", usage=USAGE),
        *DIALECT.build(Kind.SENTINEL),
    ]
    assert DIALECT.build(Kind.PING) == []
    result = reference_outcome(Response(200, chunks=[Chunk(body_of(built, DIALECT))]), DIALECT)
    assert [(c.id, c.name, c.arguments) for c in result.tool_calls] == [("b_1", "b", {"k": "v"})]
    assert result.text == "ok" and result.state == State.COMPLETE
    (error,) = DIALECT.build(Kind.ERROR, message="boom")
    assert Kind.ERROR in DIALECT.kinds(error)


def test_argument_text_follows_the_plain_string_rules_piece_by_piece() -> None:
    # The text is joined only when a piece could re-send all of it (joined for every piece, a long
    # call was quadratic); against the rules written on the joined text, over random sequences.
    import random

    from harness.wire.dialects.cohere import _Call, _complete_json

    def plain(steps: list[tuple[Any, bool]]) -> str:
        pieces: list[str] = []
        placeholder = False
        for piece, start in steps:
            if piece is None:
                continue
            if start:
                placeholder = piece.strip() == "{}"
                pieces.append(piece)
                continue
            if piece and placeholder:
                pieces, placeholder = [], False
            text = "".join(pieces)
            if piece.strip() and piece.strip() == text.strip() and _complete_json(text):
                continue
            pieces.append(piece)
        return "".join(pieces)

    rng = random.Random("cohere-args")
    choices = ["{}", " ", "\n", "{", "}", " {", "} ", '{"a":1}', '"a"', ":", "1", "", None, "\u3000", "[]"]
    for _ in range(3000):
        steps = [(rng.choice(choices), rng.random() < 0.15) for _ in range(rng.randint(0, 7))]
        if steps and rng.random() < 0.3:
            steps.append((f" {plain(steps)} ", False))  # the whole text sent again, spaced
        call = _Call(index=0)
        for piece, start in steps:
            call.take({"function": {"arguments": piece}}, start=start)
        assert "".join(call.pieces) == plain(steps), steps
