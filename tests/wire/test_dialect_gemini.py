"""The Gemini dialect: its reference accumulator on each quirk class, and the fragment API."""

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
from harness.wire.dialects.gemini import DIALECT, json_path
from harness.wire.synthesis import split_reads

SIG = "CiQBVKhc7v3Jx0k2mQ0Kx9w1YzE2NzM0ZTk3ZTEyMWRlNzJiOTQ="


def chunk(*parts: Any, finish: str | None = None, usage: int = 10, **extra: Any) -> dict[str, Any]:
    cand: dict[str, Any] = {"content": {"parts": list(parts), "role": "model"}}
    if finish is not None:
        cand["finishReason"] = finish
    cand["index"] = 0
    payload: dict[str, Any] = {"candidates": [cand]}
    payload["usageMetadata"] = {
        "promptTokenCount": 50,
        "candidatesTokenCount": usage,
        "totalTokenCount": 50 + usage,
    }
    payload["modelVersion"] = "gemini-2.5-flash"
    payload["responseId"] = "mUxQaI2bJ6mNvdIPk_3Y2Qk"
    payload.update(extra)
    return payload


def call(name: str, args: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    fc: dict[str, Any] = {"name": name}
    if args is not None:
        fc["args"] = args
    fc.update(extra)
    return {"functionCall": fc}


def body(payloads: list[Any], newline: str = "\n") -> bytes:
    wire = [p if isinstance(p, WireEvent) else WireEvent(data=DIALECT.dumps(p)) for p in payloads]
    return SSECodec(newline=newline).encode(wire)


def response(
    payloads: list[Any], *, reads: list[int] | None = None, newline: str = "\n", **kw: Any
) -> Response:
    data = body(payloads, newline)
    pieces = split_reads(data, reads) if reads else [data]
    return Response(200, chunks=[Chunk(piece) for piece in pieces], **kw)


def outcome(payloads: list[Any], **kw: Any) -> Outcome:
    return reference_outcome(response(payloads, **kw), DIALECT)


def names_args(result: Outcome) -> list[tuple[str | None, Any]]:
    return [(c.name, c.arguments) for c in result.tool_calls]


# -- quirk classes -------------------------------------------------------------------------------


def test_A2_one_call_per_chunk_each_at_position_zero() -> None:
    result = outcome(
        [
            chunk(call("get_weather", {"city": "Paris"})),
            chunk(call("get_weather", {"city": "Tokyo"})),
            chunk({"text": ""}, finish="STOP"),
        ]
    )
    assert names_args(result) == [("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Tokyo"})]
    assert result.state == State.COMPLETE


def test_A10_missing_id() -> None:
    result = outcome([chunk(call("lookup", {"q": "x"}), finish="STOP")])
    assert result.tool_calls[0].id is None
    assert names_args(result) == [("lookup", {"q": "x"})]


def test_A10_ids_kept_when_present() -> None:
    result = outcome(
        [chunk(call("lookup", {"q": "x"}, id="fc_1"), call("lookup", {"q": "y"}, id="fc_2"), finish="STOP")]
    )
    assert [c.id for c in result.tool_calls] == ["fc_1", "fc_2"]


def test_A5_id_and_name_repeated_on_partial_args_continuations() -> None:
    result = outcome(
        [
            chunk(call("controlLight", id="c1", willContinue=True)),
            chunk(
                call(
                    "controlLight",
                    id="c1",
                    partialArgs=[{"jsonPath": "$.level", "numberValue": 5}],
                    willContinue=True,
                )
            ),
            chunk(call("controlLight", id="c1", partialArgs=[{"jsonPath": "$.mode", "stringValue": "warm"}])),
            chunk({"text": ""}, finish="STOP"),
        ]
    )
    assert names_args(result) == [("controlLight", {"level": 5, "mode": "warm"})]


def test_B3_name_repeated_in_full_is_not_doubled() -> None:
    result = outcome(
        [
            chunk(call("search", willContinue=True)),
            chunk(call("search", partialArgs=[{"jsonPath": "$.q", "stringValue": "x"}], willContinue=True)),
            chunk({"functionCall": {}}, finish="STOP"),
        ]
    )
    assert names_args(result) == [("search", {"q": "x"})]


def test_B7_tool_with_no_args() -> None:
    result = outcome([chunk(call("get_time"), call("list_files", {}), finish="STOP")])
    assert names_args(result) == [("get_time", {}), ("list_files", {})]


def test_B8_args_are_an_object_kept_as_is() -> None:
    args = {"filters": {"tags": ["a", "b"], "limit": 3, "exact": False, "after": None}}
    result = outcome([chunk(call("query", args), finish="STOP")])
    assert result.tool_calls[0].arguments == args


def test_B9_reemitted_call_with_the_same_id_is_one_call() -> None:
    result = outcome(
        [
            chunk(call("save", {"v": 1}, id="fc_9")),
            chunk(call("save", {"v": 1}, id="fc_9"), finish="STOP"),
        ]
    )
    assert names_args(result) == [("save", {"v": 1})]


def test_B9_without_ids_two_identical_calls_stay_two() -> None:
    # Nothing on the wire tells a re-emission from a second call: honest, two calls.
    result = outcome([chunk(call("ping", {})), chunk(call("ping", {}), finish="STOP")])
    assert names_args(result) == [("ping", {}), ("ping", {})]


def test_C2_several_calls_in_one_chunk_same_name_distinct() -> None:
    result = outcome(
        [
            chunk(
                {**call("get_weather", {"city": "Paris"}), "thoughtSignature": SIG},
                call("get_weather", {"city": "Lyon"}),
                call("get_time", {"tz": "CET"}),
                finish="STOP",
            )
        ]
    )
    assert names_args(result) == [
        ("get_weather", {"city": "Paris"}),
        ("get_weather", {"city": "Lyon"}),
        ("get_time", {"tz": "CET"}),
    ]


def test_C4_thought_parts_before_the_call_are_reasoning() -> None:
    events = [
        chunk({"text": "**Planning** I should check the weather.", "thought": True}),
        chunk({**call("get_weather", {"city": "Oslo"}), "thoughtSignature": SIG}, finish="STOP"),
    ]
    result = outcome(events)
    assert result.text == ""
    assert names_args(result) == [("get_weather", {"city": "Oslo"})]
    parsed = [DIALECT.parse(WireEvent(data=DIALECT.dumps(p))) for p in events]
    assert DIALECT.kinds(parsed[0]) == {Kind.REASONING, Kind.USAGE}


def test_C6_text_around_calls_is_kept() -> None:
    result = outcome(
        [
            chunk({"text": "Let me check "}),
            chunk({"text": "that."}, call("get_weather", {"city": "Rome"})),
            chunk({"text": " Done."}, finish="STOP"),
        ]
    )
    assert result.text == "Let me check that. Done."
    assert len(result.tool_calls) == 1


def test_C7_other_candidates_are_ignored() -> None:
    second = {"content": {"parts": [call("other", {})], "role": "model"}, "index": 1}
    payload = chunk(call("mine", {}), finish="STOP")
    payload["candidates"].append(second)
    assert names_args(outcome([payload])) == [("mine", {})]


def test_D1_finish_reason_is_stop_with_calls() -> None:
    result = outcome([chunk(call("f", {"a": 1}), finish="STOP")])
    assert result.finish_reason == "STOP"
    assert result.state == State.COMPLETE
    assert len(result.tool_calls) == 1


def test_D2_call_chunk_then_separate_trailing_stop_chunk() -> None:
    result = outcome([chunk(call("f", {"a": 1})), chunk({"text": ""}, finish="STOP")])
    assert names_args(result) == [("f", {"a": 1})]
    assert result.finish_reason == "STOP"


def test_D2_leading_empty_stop_chunk_does_not_end_the_turn_early() -> None:
    result = outcome([chunk({"text": ""}, finish="STOP"), chunk(call("f", {"a": 1}), finish="STOP")])
    assert names_args(result) == [("f", {"a": 1})]


def test_D5_usage_on_every_chunk_last_one_wins() -> None:
    result = outcome([chunk(call("f", {}), usage=3), chunk({"text": ""}, finish="STOP", usage=7)])
    assert result.usage is not None and result.usage["candidatesTokenCount"] == 7
    assert names_args(result) == [("f", {})]


def test_D6_clean_end_without_finish_reason_reports_no_calls() -> None:
    result = outcome([chunk(call("f", {"a": 1}))])
    assert result.state == State.CUT
    assert result.tool_calls == ()


def test_D7_cut_inside_streamed_arguments_reports_no_calls() -> None:
    result = outcome(
        [
            chunk(call("write", willContinue=True)),
            chunk(
                {
                    "functionCall": {
                        "partialArgs": [{"jsonPath": "$.text", "stringValue": "Hel", "willContinue": True}],
                        "willContinue": True,
                    }
                }
            ),
        ],
        complete=False,
        error="peer closed connection",
    )
    assert result.state == State.CUT
    assert result.error == "peer closed connection"
    assert result.tool_calls == ()


def test_D7_cut_after_the_finish_chunk_is_complete() -> None:
    result = outcome([chunk(call("f", {"a": 1}), finish="STOP")], complete=False, error="reset")
    assert result.state == State.COMPLETE
    assert len(result.tool_calls) == 1


def test_D7_cut_after_a_leading_stop_but_before_the_last_call() -> None:
    result = outcome(
        [chunk({"text": ""}, finish="STOP"), chunk(call("f", {}))], complete=False, error="reset"
    )
    assert result.state == State.CUT
    assert result.tool_calls == ()


def test_D8_in_band_error_object() -> None:
    error = {"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}}
    result = outcome([chunk(call("f", {"a": 1})), error])
    assert result.state == State.ERROR
    assert result.error is not None and "overloaded" in result.error
    assert result.tool_calls == ()


def test_D8_blocked_prompt_is_an_error() -> None:
    result = outcome([{"promptFeedback": {"blockReason": "SAFETY"}, "modelVersion": "gemini-2.5-flash"}])
    assert result.state == State.ERROR


def test_F1_multibyte_character_split_across_reads() -> None:
    payloads = [chunk(call("translate", {"text": "東京タワー 🗼"}), finish="STOP")]
    data = body(payloads)
    cut = data.index("京".encode()) + 1  # inside the 3-byte character
    result = reference_outcome(Response(200, chunks=[Chunk(data[:cut]), Chunk(data[cut:])]), DIALECT)
    assert result.tool_calls[0].arguments == {"text": "東京タワー 🗼"}


def test_F3_event_split_across_many_small_reads() -> None:
    result = outcome(
        [chunk(call("f", {"a": "b" * 40})), chunk({"text": ""}, finish="STOP")], reads=[7, 3, 11]
    )
    assert names_args(result) == [("f", {"a": "b" * 40})]


def test_F4_crlf_line_ends_vertex() -> None:
    resp = response(
        [chunk(call("f", {"a": 1})), chunk({"text": ""}, finish="STOP")], newline="\r\n", reads=[5]
    )
    assert b"\r\n\r\n" in resp.body
    result = reference_outcome(resp, DIALECT)
    assert names_args(result) == [("f", {"a": 1})]
    events = events_of(resp, DIALECT)
    assert body_of(events, DIALECT, like=resp.body) == resp.body


def test_F5_json_split_over_several_data_lines() -> None:
    text = DIALECT.dumps(chunk(call("f", {"a": 1}), finish="STOP"))
    multi = WireEvent(data=text.replace(',"', ',\n"'))
    result = outcome([multi])
    assert names_args(result) == [("f", {"a": 1})]


def test_F6_comment_lines_are_ignored() -> None:
    result = outcome([WireEvent(comment=" keepalive"), chunk(call("f", {"a": 1}), finish="STOP")])
    assert names_args(result) == [("f", {"a": 1})] and result.state == State.COMPLETE


def test_G_malformed_function_call_is_an_error() -> None:
    result = outcome([chunk({"text": ""}, finish="MALFORMED_FUNCTION_CALL")])
    assert result.state == State.ERROR
    assert result.finish_reason == "MALFORMED_FUNCTION_CALL"


def test_G_safety_finish_after_a_call_drops_it() -> None:
    result = outcome([chunk(call("f", {})), chunk({"text": ""}, finish="SAFETY")])
    assert result.state == State.ERROR
    assert result.tool_calls == ()


def test_G_partial_args_assembled_with_nested_paths_and_string_continuation() -> None:
    result = outcome(
        [
            chunk({**call("makeRecipe", willContinue=True), "thoughtSignature": SIG}),
            chunk(
                {
                    "functionCall": {
                        "partialArgs": [
                            {"jsonPath": "$.recipe.name", "stringValue": "Pan", "willContinue": True}
                        ],
                        "willContinue": True,
                    }
                }
            ),
            chunk(
                {
                    "functionCall": {
                        "partialArgs": [
                            {"jsonPath": "$.recipe.name", "stringValue": "cakes"},
                            {"jsonPath": "$.recipe.ingredients[0].item", "stringValue": "flour"},
                            {"jsonPath": "$.recipe.ingredients[0].amount", "numberValue": 200},
                            {"jsonPath": "$.recipe.ingredients[1].item", "stringValue": "milk"},
                            {"jsonPath": "$.recipe.vegan", "boolValue": False},
                            {"jsonPath": "$.recipe.note", "nullValue": "NULL_VALUE"},
                        ],
                        "willContinue": True,
                    }
                }
            ),
            chunk({"functionCall": {}}),
            chunk(call("getWeather", willContinue=True)),
            chunk(
                {
                    "functionCall": {
                        "partialArgs": [{"jsonPath": "$.location", "stringValue": "Boston"}],
                        "willContinue": True,
                    }
                }
            ),
            chunk({"functionCall": {}}, finish="STOP"),
        ]
    )
    assert names_args(result) == [
        (
            "makeRecipe",
            {
                "recipe": {
                    "name": "Pancakes",
                    "ingredients": [{"item": "flour", "amount": 200}, {"item": "milk"}],
                    "vegan": False,
                    "note": None,
                }
            },
        ),
        ("getWeather", {"location": "Boston"}),
    ]


def test_G_partial_args_missing_terminal_is_kept_at_stop() -> None:
    events = [
        chunk(call("getWeather", willContinue=True)),
        chunk(
            {
                "functionCall": {
                    "partialArgs": [{"jsonPath": "$.city", "stringValue": "Oslo"}],
                    "willContinue": True,
                }
            },
            finish="STOP",
        ),
    ]
    assert names_args(outcome(events)) == [("getWeather", {"city": "Oslo"})]


def test_G_partial_args_missing_terminal_is_dropped_at_max_tokens() -> None:
    events = [
        chunk(call("done", {})),
        chunk(call("getWeather", willContinue=True)),
        chunk(
            {
                "functionCall": {
                    "partialArgs": [{"jsonPath": "$.city", "stringValue": "Os", "willContinue": True}],
                    "willContinue": True,
                }
            },
            finish="MAX_TOKENS",
        ),
    ]
    result = outcome(events)
    assert result.state == State.COMPLETE
    assert names_args(result) == [("done", {})]


def test_json_path_forms() -> None:
    assert json_path("$.a.b[2].c") == ["a", "b", 2, "c"]
    assert json_path("city") == ["city"]
    assert json_path("$['odd key'][0]") == ["odd key", 0]
    with pytest.raises(DialectError):
        json_path("$.a[")


# -- the fragment API ----------------------------------------------------------------------------


def stream(payloads: list[Any]) -> tuple[list[Event], bytes]:
    resp = response(payloads)
    return events_of(resp, DIALECT), resp.body


def test_dumps_matches_gemini_spacing() -> None:
    assert DIALECT.dumps({"a": [{"b": 1}, "é"], "c": 2}) == '{"a": [{"b": 1},"é"],"c": 2}'


def test_matches_stream_and_plain_urls() -> None:
    base = "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash"
    assert DIALECT.matches(Request("POST", base + ":streamGenerateContent?alt=sse"))
    assert DIALECT.matches(Request("POST", base + ":generateContent"))
    assert not DIALECT.matches(Request("POST", "http://localhost:11434/api/chat"))
    assert detect(Request("POST", base + ":streamGenerateContent?alt=sse")) == "gemini"


def test_untouched_events_round_trip_to_the_same_bytes() -> None:
    events, original = stream([chunk({"text": "Hi"}), chunk(call("f", {"a": "ü"}), finish="STOP")])
    assert body_of(events, DIALECT, like=original) == original


def test_fragments_roles_and_calls() -> None:
    events, _ = stream(
        [
            chunk(call("a", {}), call("a", {})),
            chunk(call("s", willContinue=True)),
            chunk(
                {
                    "functionCall": {
                        "partialArgs": [{"jsonPath": "$.x", "numberValue": 1}],
                        "willContinue": True,
                    }
                }
            ),
            chunk({"functionCall": {}}, finish="STOP"),
        ]
    )
    frags = DIALECT.fragments(events)
    assert [(f.event, f.slot, f.call, f.role) for f in frags] == [
        (0, 0, 0, Role.WHOLE),
        (0, 1, 1, Role.WHOLE),
        (1, 0, 2, Role.START),
        (2, 0, 2, Role.ARGS),
        (3, 0, 2, Role.END),
    ]
    assert [
        DIALECT.kinds(e) & {Kind.TOOL_CALL, Kind.TOOL_START, Kind.TOOL_ARGS, Kind.TOOL_END} for e in events
    ] == [{Kind.TOOL_CALL}, {Kind.TOOL_START}, {Kind.TOOL_ARGS}, {Kind.TOOL_END}]


def test_get_set_round_trip_through_bytes() -> None:
    events, original = stream([chunk(call("f", {"a": 1}, id="x1"), finish="STOP")])
    assert DIALECT.get(events[0], 0, Field.INDEX) is MISSING
    assert DIALECT.get(events[0], 0, Field.ID) == "x1"
    assert DIALECT.get(events[0], 0, Field.ARGS) == {"a": 1}
    edited = DIALECT.set(events[0], 0, Field.ID, MISSING)
    edited = DIALECT.set(edited, 0, Field.NAME, "g")
    edited = DIALECT.set(edited, 0, Field.ARGS, '{"b": 2}')
    data = body_of([edited], DIALECT, like=original)
    again = events_of(Response(200, chunks=[Chunk(data)]), DIALECT)
    assert DIALECT.get(again[0], 0, Field.ID) is MISSING
    result = reference_outcome(Response(200, chunks=[Chunk(data)]), DIALECT)
    assert names_args(result) == [("g", {"b": 2})]
    assert DIALECT.set(events[0], 0, Field.INDEX, MISSING).payload == events[0].payload
    with pytest.raises(DialectError):
        DIALECT.set(events[0], 0, Field.INDEX, 0)
    with pytest.raises(DialectError):
        DIALECT.get(events[0], 5, Field.NAME)


def test_remove_a_part_and_the_last_part() -> None:
    events, _ = stream([chunk(call("a", {}), call("b", {})), chunk(call("c", {}))])
    left = DIALECT.remove(events[0], 0)
    assert left is not None and DIALECT.get(left, 0, Field.NAME) == "b"
    assert DIALECT.remove(events[1], 0) is None
    with_finish = DIALECT.with_finish_reason(events[1], "STOP")
    kept = DIALECT.remove(with_finish, 0)
    assert kept is not None and DIALECT.finish_reason(kept) == "STOP"


def test_continuation_only_for_streamed_calls() -> None:
    events, original = stream(
        [
            chunk(call("whole", {})),
            chunk(call("s", willContinue=True)),
            chunk(
                {
                    "functionCall": {
                        "partialArgs": [{"jsonPath": "$.t", "stringValue": "ab", "willContinue": True}],
                        "willContinue": True,
                    }
                }
            ),
            chunk({"functionCall": {}}, finish="STOP"),
        ]
    )
    with pytest.raises(DialectError, match="no continuation"):
        DIALECT.continuation(events[0], 0, "{}")
    more = DIALECT.continuation(events[2], 0, "cd")
    assert DIALECT.get(more, 0, Field.ARGS) == [{"jsonPath": "$.t", "stringValue": "cd"}]
    leaves = DIALECT.continuation(events[1], 0, '{"n": 2, "o": {"p": true}}')
    assert DIALECT.get(leaves, 0, Field.ARGS) == [
        {"jsonPath": "$.n", "numberValue": 2},
        {"jsonPath": "$.o.p", "boolValue": True},
    ]
    mutated = [*events[:3], more, leaves, events[3]]
    data = body_of(mutated, DIALECT, like=original)
    result = reference_outcome(Response(200, chunks=[Chunk(data)]), DIALECT)
    assert names_args(result)[1] == ("s", {"t": "abcd", "n": 2, "o": {"p": True}})


def test_finish_reason_edit() -> None:
    events, _ = stream([chunk(call("f", {}), finish="STOP")])
    assert DIALECT.finish_reason(events[0]) == "STOP"
    gone = DIALECT.with_finish_reason(events[0], MISSING)
    assert DIALECT.finish_reason(gone) is MISSING
    assert (
        reference_outcome(Response(200, chunks=[Chunk(body_of([gone], DIALECT))]), DIALECT).state == State.CUT
    )


def test_build_events() -> None:
    events, _ = stream([chunk(call("f", {}))])
    like = events[0]
    (text,) = DIALECT.build(Kind.TEXT, text="hello", like=like)
    assert DIALECT.kinds(text) >= {Kind.TEXT} and text.payload["responseId"] == like.payload["responseId"]
    (finish,) = DIALECT.build(Kind.FINISH, reason="STOP")
    assert DIALECT.finish_reason(finish) == "STOP"
    (error,) = DIALECT.build(Kind.ERROR, message="boom")
    assert DIALECT.kinds(error) == {Kind.ERROR}
    assert DIALECT.build(Kind.SENTINEL) == [] and DIALECT.build(Kind.PING) == []
    (thought,) = DIALECT.build(Kind.REASONING, text="hmm")
    assert Kind.REASONING in DIALECT.kinds(thought)
    (tool,) = DIALECT.build(Kind.TOOL_CALL, name="g", args='{"x": 1}', id="i")
    data = body_of([*events, tool, text, finish], DIALECT)
    result = reference_outcome(Response(200, chunks=[Chunk(data)]), DIALECT)
    assert names_args(result) == [("f", {}), ("g", {"x": 1})]
    assert result.text == "hello"
    with pytest.raises(DialectError):
        DIALECT.build(Kind.TOOL_ARGS)


def test_pack_joins_whole_calls_into_one_chunk() -> None:
    events, _ = stream([chunk(call("a", {"n": 1})), chunk(call("b", {"n": 2}))])
    packed = DIALECT.pack([(events[0], 0), (events[1], 0)])
    assert packed is not None
    assert [f.role for f in DIALECT.fragments([packed])] == [Role.WHOLE, Role.WHOLE]
