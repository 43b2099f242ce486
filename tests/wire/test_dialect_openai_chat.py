"""The openai-chat dialect: one hand-built stream per quirk class (named after its id in
STREAM-QUIRKS.md), then the fragment API and its round trips through `body_of` / `events_of`."""

from __future__ import annotations

import json
from typing import Any

import pytest

from harness.cassettes.format import Chunk, Request, Response
from harness.cassettes.outcome import Outcome, State, ToolCall
from harness.errors import DialectError
from harness.wire.codecs import WireEvent
from harness.wire.dialects import MISSING, Event, Field, Kind, Role, body_of, events_of, get

D = get("openai-chat")
DONE = "[DONE]"
_ABSENT = object()


def tc(
    index: Any = 0, id: Any = _ABSENT, name: Any = _ABSENT, args: Any = _ABSENT, type: Any = _ABSENT
) -> dict:
    """One `tool_calls[]` entry with only the keys given."""
    entry: dict[str, Any] = {} if index is _ABSENT else {"index": index}
    if id is not _ABSENT:
        entry["id"] = id
    if type is not _ABSENT:
        entry["type"] = type
    function = {}
    if name is not _ABSENT:
        function["name"] = name
    if args is not _ABSENT:
        function["arguments"] = args
    if function:
        entry["function"] = function
    return entry


def header(index: Any, id: str, name: str, args: str = "") -> dict:
    return tc(index, id=id, type="function", name=name, args=args)


def chunk(
    *entries: dict, content: Any = _ABSENT, finish: Any = None, usage: Any = None, **delta: Any
) -> dict:
    d: dict[str, Any] = dict(delta)
    if content is not _ABSENT:
        d["content"] = content
    if entries:
        d["tool_calls"] = list(entries)
    choice = {"index": 0, "delta": d, "logprobs": None, "finish_reason": finish}
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [choice],
        "usage": usage,
    }


def finish(reason: str = "tool_calls") -> dict:
    return chunk(finish=reason)


def events(*items: Any) -> list[Event]:
    return [D.parse(WireEvent(data=item if isinstance(item, str) else json.dumps(item))) for item in items]


def run(*items: Any, error: str | None = None) -> Outcome:
    acc = D.accumulator()
    for event in events(*items):
        acc.feed(event)
    return acc.close(error)


def calls(outcome: Outcome) -> list[tuple[str | None, Any, str | None]]:
    return [(call.name, call.arguments, call.id) for call in outcome.tool_calls]


# ---------------------------------------------------------------------------------------------
# A. identity and keying


def test_A1_parallel_same_index_sequential() -> None:
    out = run(
        chunk(header(0, "call_A", "read_file")),
        chunk(tc(0, args='{"path":"foo.txt"}')),
        chunk(header(0, "call_B", "search_text")),
        chunk(tc(0, args='{"query":"bar"}')),
        finish(),
        DONE,
    )
    assert calls(out) == [
        ("read_file", {"path": "foo.txt"}, "call_A"),
        ("search_text", {"query": "bar"}, "call_B"),
    ]
    assert out.state is State.COMPLETE and out.finish_reason == "tool_calls"


def test_A1_parallel_same_index_interleaved_with_ids() -> None:
    out = run(
        chunk(header(0, "call_A", "read_file")),
        chunk(header(0, "call_B", "search_text")),
        chunk(tc(0, id="call_A", args='{"path":')),
        chunk(tc(0, id="call_B", args='{"query":')),
        chunk(tc(0, id="call_A", args='"foo.txt"}')),
        chunk(tc(0, id="call_B", args='"bar"}')),
        finish(),
        DONE,
    )
    assert calls(out) == [
        ("read_file", {"path": "foo.txt"}, "call_A"),
        ("search_text", {"query": "bar"}, "call_B"),
    ]


def test_A1_same_function_twice_at_one_index() -> None:
    out = run(
        chunk(header(0, "call_A", "get_weather", '{"city":"Paris"}')),
        chunk(header(0, "call_B", "get_weather", '{"city":"Rome"}')),
        finish(),
        DONE,
    )
    assert calls(out) == [
        ("get_weather", {"city": "Paris"}, "call_A"),
        ("get_weather", {"city": "Rome"}, "call_B"),
    ]


def test_A2_index_restarts_per_chunk() -> None:
    out = run(
        chunk(header(0, "call_1", "a", '{"x":1}')),
        chunk(header(0, "call_2", "b", '{"x":2}')),
        chunk(header(0, "call_3", "c", '{"x":3}')),
        finish(),
        DONE,
    )
    assert [c[0] for c in calls(out)] == ["a", "b", "c"]
    assert [c[1] for c in calls(out)] == [{"x": 1}, {"x": 2}, {"x": 3}]


@pytest.mark.parametrize("absent", ["missing", "null"])
def test_A3_index_missing_or_null(absent: str) -> None:
    index: Any = _ABSENT if absent == "missing" else None
    out = run(
        chunk(tc(index, id="call_A", type="function", name="f", args="")),
        chunk(tc(index, args='{"a":')),
        chunk(tc(index, args="1}")),
        chunk(tc(index, id="call_B", type="function", name="g", args="")),
        chunk(tc(index, args='{"b":2}')),
        finish(),
        DONE,
    )
    assert calls(out) == [("f", {"a": 1}, "call_A"), ("g", {"b": 2}, "call_B")]


def test_A3_index_missing_on_continuations_only() -> None:
    out = run(chunk(header(0, "call_A", "f")), chunk(tc(_ABSENT, args='{"a":1}')), finish(), DONE)
    assert calls(out) == [("f", {"a": 1}, "call_A")]


def test_A4_id_only_on_first() -> None:
    out = run(
        chunk(header(0, "call_A", "f")),
        chunk(tc(0, args='{"q":')),
        chunk(tc(0, args='"x"}')),
        chunk(header(1, "call_B", "g")),
        chunk(tc(1, args="{}")),
        finish(),
        DONE,
    )
    assert calls(out) == [("f", {"q": "x"}, "call_A"), ("g", {}, "call_B")]


def test_A5_id_type_and_name_on_every_chunk() -> None:
    out = run(
        chunk(header(0, "call_A", "web_search")),
        chunk(header(0, "call_A", "web_search", '{"q":')),
        chunk(header(0, "call_A", "web_search", '"x"}')),
        finish(),
        DONE,
    )
    assert calls(out) == [("web_search", {"q": "x"}, "call_A")]


def test_A6_empty_string_id_continuations() -> None:
    out = run(
        chunk(header(0, "call_A", "f")),
        chunk(tc(0, id="", type="function", name="", args='{"a":')),
        chunk(tc(0, id="", type="function", name="", args="1}")),
        finish(),
        DONE,
    )
    assert calls(out) == [("f", {"a": 1}, "call_A")]


def test_A7_id_rotates_per_fragment_with_empty_name() -> None:
    pieces = list('{"city":"Oslo"}')
    out = run(
        chunk(header(0, "call_first", "get_weather")),
        *[chunk(tc(0, id=f"call_r{n}", type="function", name="", args=p)) for n, p in enumerate(pieces)],
        finish(),
        DONE,
    )
    assert calls(out) == [("get_weather", {"city": "Oslo"}, "call_first")]


def test_A10_missing_id_entirely() -> None:
    out = run(
        chunk(tc(0, type="function", name="f", args="")),
        chunk(tc(0, args='{"a":1}')),
        chunk(tc(1, type="function", name="g", args='{"b":2}')),
        finish(),
        DONE,
    )
    assert calls(out) == [("f", {"a": 1}, None), ("g", {"b": 2}, None)]


def test_A10_idless_parallel_calls_at_one_index() -> None:
    out = run(
        chunk(tc(0, name="f", args='{"a":1}')),
        chunk(tc(0, name="g", args='{"b":2}')),
        finish(),
        DONE,
    )
    assert calls(out) == [("f", {"a": 1}, None), ("g", {"b": 2}, None)]


def test_A11_continuation_index_incremented() -> None:
    out = run(
        chunk(header(0, "call_A", "f")),
        chunk(tc(1, args='{"a":')),
        chunk(tc(2, args="1}")),
        finish(),
        DONE,
    )
    assert calls(out) == [("f", {"a": 1}, "call_A")]


# ---------------------------------------------------------------------------------------------
# B. field merges


def test_B1_same_index_fragments_within_one_delta() -> None:
    out = run(
        chunk(header(0, "call_X", "bocha_websearch_tool"), tc(0, args="{")),
        chunk(tc(0, args='"query": "bar"}')),
        finish(),
        DONE,
    )
    assert calls(out) == [("bocha_websearch_tool", {"query": "bar"}, "call_X")]


def test_B2_name_split_across_fragments() -> None:
    out = run(
        chunk(tc(0, id="call_A", type="function", name="get_wea", args="")),
        chunk(tc(0, name="ther", args='{"city":"Oslo"}')),
        finish(),
        DONE,
    )
    assert calls(out) == [("get_weather", {"city": "Oslo"}, "call_A")]


@pytest.mark.parametrize(
    ("pieces", "name"),
    [
        (["get_wea", "ther"], "get_weather"),  # B2: split
        (["get_weather", "get_weather"], "get_weather"),  # B3: repeated in full
        (["get", "get_wea", "get_weather"], "get_weather"),  # B3: cumulative
        (["get", "get_wea", "ther"], "get_weather"),  # cumulative, then split
        (["ab", "ab"], "ab"),  # a split into two equal halves reads as a repetition
    ],
)
def test_the_reference_joins_a_name_by_the_dialects_rule(pieces: list[str], name: str) -> None:
    first, *rest = pieces
    out = run(
        chunk(tc(0, id="call_A", type="function", name=first, args="")),
        *(chunk(tc(0, name=piece)) for piece in rest),
        chunk(tc(0, args='{"city":"Oslo"}')),
        finish(),
        DONE,
    )
    assert calls(out) == [(name, {"city": "Oslo"}, "call_A")]
    assert D.joined_name(pieces) == name


def test_B3_name_repeated_in_full_without_ids() -> None:
    out = run(
        chunk(tc(0, type="function", name="web_search", args="")),
        chunk(tc(0, type="function", name="web_search", args='{"q":')),
        chunk(tc(0, type="function", name="web_search", args='"x"}')),
        finish(),
        DONE,
    )
    assert calls(out) == [("web_search", {"q": "x"}, None)]


def test_B5_whole_call_in_the_header() -> None:
    out = run(chunk(header(0, "call_A", "f", '{"a":1}')), finish(), DONE)
    assert calls(out) == [("f", {"a": 1}, "call_A")]


def test_B6_placeholder_braces_in_header() -> None:
    out = run(
        chunk(header(0, "call_A", "f", "{}")),
        chunk(tc(0, args='{"a":')),
        chunk(tc(0, args="1}")),
        finish(),
        DONE,
    )
    assert calls(out) == [("f", {"a": 1}, "call_A")]


def test_B7_empty_args_fragment_and_zero_arg_tool() -> None:
    out = run(
        chunk(header(0, "call_A", "list_files")),
        chunk(tc(0, args="")),
        chunk(header(1, "call_B", "now")),
        finish(),
        DONE,
    )
    assert calls(out) == [("list_files", {}, "call_A"), ("now", {}, "call_B")]
    assert not any(call.invalid for call in out.tool_calls)


def test_B8_args_as_an_object() -> None:
    out = run(chunk(tc(0, id="call_A", name="f", args={"a": 1})), chunk(tc(0, args={"b": 2})), finish(), DONE)
    assert calls(out) == [("f", {"a": 1, "b": 2}, "call_A")]


def test_B9_full_args_re_emitted_at_end() -> None:
    out = run(
        chunk(header(0, "call_A", "f")),
        chunk(tc(0, args='{"a":')),
        chunk(tc(0, args="1}")),
        chunk(tc(0, id="call_A", name="f", args='{"a":1}')),
        finish(),
        DONE,
    )
    assert calls(out) == [("f", {"a": 1}, "call_A")]


def test_argument_text_follows_the_plain_string_rules_piece_by_piece() -> None:
    # The call keeps its text as pieces (one string copied whole at each piece was quadratic over
    # a long call); against the rules written on one string, over random piece sequences mixing
    # placeholders, whitespace, re-sent copies and object pieces.
    import random

    from harness.wire.dialects.openai_chat import _Call, _is_object

    def plain(pieces: list[Any]) -> tuple[str, dict[str, Any] | None, bool]:
        text, obj = "", None
        for piece in pieces:
            if isinstance(piece, dict):
                obj = {**(obj or {}), **piece}
                continue
            if not isinstance(piece, str) or piece == "":
                continue
            if _is_object(text):
                if piece == text:
                    continue
                if text.strip() == "{}":
                    text = ""
            text += piece
        return text, obj, text.strip() != "" or obj is not None

    rng = random.Random("openai-chat-args")
    choices = ["{}", " ", "\n", "{", "}", " {", "} ", '{"a":1}', '"a"', ":", "1", "", None, {"k": 1}]
    choices.append("\u3000")  # whitespace to `strip()`, not to JSON
    for _ in range(3000):
        pieces = [rng.choice(choices) for _ in range(rng.randint(0, 7))]
        if pieces and rng.random() < 0.3:
            text = plain(pieces)[0]
            pieces.append(text)  # the whole text sent again
        call = _Call(0)
        for piece in pieces:
            call.add_args(piece)
        assert (call.text, call.obj, call.has_args) == plain(pieces), pieces


def test_an_id_names_the_last_call_that_has_it_even_when_an_earlier_one_gets_it_later() -> None:
    from harness.wire.dialects.openai_chat import _Router

    router = _Router()
    assert router.feed(tc(0, name="a")) == (0, True)
    assert router.feed(tc(1, id="x", name="b")) == (1, True)
    assert router.feed(tc(0, id="x")) == (0, False)  # call 0 takes the id after call 1 has it
    assert router.feed(tc(_ABSENT, id="x", args="1")) == (1, False)  # the last call with it


def test_B10_truncated_args_are_invalid_not_empty() -> None:
    out = run(chunk(header(0, "call_A", "f")), chunk(tc(0, args='{"a":1')), finish(), DONE)
    assert out.tool_calls == (ToolCall(name="f", arguments='{"a":1', id="call_A", invalid=True),)


def test_B11_parsable_prefix_is_not_final() -> None:
    out = run(
        chunk(header(0, "call_A", "f")),
        chunk(tc(0, args='{"query":"x"')),
        chunk(tc(0, args="}")),
        chunk(tc(0, args="")),
        finish(),
        DONE,
    )
    assert calls(out) == [("f", {"query": "x"}, "call_A")]


# ---------------------------------------------------------------------------------------------
# C. routing


def test_C1_interleaved_fragments_routed_by_index() -> None:
    out = run(
        chunk(header(0, "call_A", "f")),
        chunk(header(1, "call_B", "g")),
        chunk(tc(0, args='{"a":')),
        chunk(tc(1, args='{"b":')),
        chunk(tc(0, args="1}")),
        chunk(tc(1, args="2}")),
        finish(),
        DONE,
    )
    assert calls(out) == [("f", {"a": 1}, "call_A"), ("g", {"b": 2}, "call_B")]


def test_C2_several_calls_in_one_delta() -> None:
    out = run(
        chunk(header(0, "call_A", "f", '{"a":1}'), header(1, "call_B", "g", '{"b":2}')),
        finish(),
        DONE,
    )
    assert calls(out) == [("f", {"a": 1}, "call_A"), ("g", {"b": 2}, "call_B")]


def test_C4_reasoning_then_call_at_index_1() -> None:
    out = run(
        chunk(reasoning_content="Let me look."),
        chunk(header(1, "call_A", "f")),
        chunk(tc(1, args='{"a":1}')),
        finish(),
        DONE,
    )
    assert calls(out) == [("f", {"a": 1}, "call_A")]
    assert out.text == ""


def test_C6_text_mixed_with_tool_calls() -> None:
    out = run(
        chunk(content="I'll check "),
        chunk(header(0, "call_A", "f", "{}")),
        chunk(content="that now."),
        finish(),
        DONE,
    )
    assert out.text == "I'll check that now."
    assert calls(out) == [("f", {}, "call_A")]


def test_C7_n_greater_than_1_reports_choice_0() -> None:
    def other(payload: dict, number: int) -> dict:
        payload["choices"][0]["index"] = number
        return payload

    out = run(
        chunk(header(0, "call_A", "f"), content="zero"),
        other(chunk(header(0, "call_Z", "z", '{"z":1}'), content="one"), 1),
        chunk(tc(0, args='{"a":1}')),
        other(finish("tool_calls"), 1),
        finish("tool_calls"),
        DONE,
    )
    assert calls(out) == [("f", {"a": 1}, "call_A")]
    assert out.text == "zero"


# ---------------------------------------------------------------------------------------------
# D. lifecycle


def test_D1_stop_finish_still_reports_calls() -> None:
    out = run(chunk(header(0, "call_A", "f", '{"a":1}')), finish("stop"), DONE)
    assert calls(out) == [("f", {"a": 1}, "call_A")]
    assert out.finish_reason == "stop"


def test_D2_finish_with_or_before_the_last_args() -> None:
    same = run(chunk(header(0, "call_A", "f", '{"a":')), chunk(tc(0, args="1}"), finish="tool_calls"), DONE)
    before = run(chunk(header(0, "call_A", "f", '{"a":')), finish(), chunk(tc(0, args="1}")), DONE)
    assert calls(same) == calls(before) == [("f", {"a": 1}, "call_A")]


@pytest.mark.parametrize("choices", [[], None, _ABSENT])
def test_D4_usage_only_final_chunk(choices: Any) -> None:
    usage_chunk: dict[str, Any] = {
        "id": "chatcmpl-1",
        "usage": {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7},
    }
    if choices is not _ABSENT:
        usage_chunk["choices"] = choices
    out = run(chunk(header(0, "call_A", "f", "{}")), finish(), usage_chunk, DONE)
    assert calls(out) == [("f", {}, "call_A")]
    assert out.usage == {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}
    assert D.kinds(events(usage_chunk)[0]) == {Kind.USAGE}


def test_D5_usage_on_every_chunk() -> None:
    usage = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
    out = run(
        chunk(header(0, "call_A", "f"), usage=usage),
        chunk(tc(0, args='{"a":1}'), usage=usage),
        finish(),
        DONE,
    )
    assert calls(out) == [("f", {"a": 1}, "call_A")]


def test_D6_missing_done_or_missing_finish() -> None:
    no_done = run(chunk(header(0, "call_A", "f", "{}")), finish())
    assert no_done.state is State.COMPLETE and len(no_done.tool_calls) == 1
    no_finish = run(chunk(header(0, "call_A", "f", "{}")), DONE)
    assert no_finish.state is State.COMPLETE and len(no_finish.tool_calls) == 1
    neither = run(chunk(header(0, "call_A", "f", "{}")), chunk(content="tail"))
    assert neither.state is State.CUT and neither.tool_calls == () and neither.text == "tail"


def test_D7_cut_mid_args_reports_no_call() -> None:
    out = run(chunk(header(0, "call_A", "f")), chunk(tc(0, args='{"a":')), error="peer closed connection")
    assert out.state is State.CUT and out.tool_calls == () and out.error == "peer closed connection"
    length = run(chunk(header(0, "call_A", "f")), chunk(tc(0, args='{"a":')), finish("length"), DONE)
    # docs/oracle.md length-with-open-call: the call the output limit cut is not final.
    assert length.state is State.COMPLETE and length.tool_calls == () and length.finish_reason == "length"


def test_D8_in_band_error_chunk() -> None:
    error = {"error": {"code": 502, "message": "Upstream provider error"}}
    out = run(chunk(header(0, "call_A", "f")), chunk(tc(0, args='{"a":')), error)
    assert out.state is State.ERROR and out.error == "Upstream provider error" and out.tool_calls == ()
    assert D.kinds(events(error)[0]) == {Kind.ERROR}


def test_D9_tool_calls_finish_without_tool_deltas() -> None:
    out = run(chunk(content="Hi"), finish("tool_calls"), DONE)
    assert out.tool_calls == () and out.state is State.COMPLETE and out.finish_reason == "tool_calls"


def test_D10_duplicate_header() -> None:
    out = run(
        chunk(header(0, "call_A", "f")),
        chunk(header(0, "call_A", "f")),
        chunk(tc(0, args='{"a":1}')),
        finish(),
        DONE,
    )
    assert calls(out) == [("f", {"a": 1}, "call_A")]


def test_F8_azure_prompt_filter_chunk_is_meta() -> None:
    azure = {
        "choices": [],
        "created": 0,
        "id": "",
        "model": "",
        "object": "",
        "prompt_filter_results": [{"prompt_index": 0}],
    }
    assert D.kinds(events(azure)[0]) == {Kind.META}
    out = run(azure, chunk(header(0, "call_A", "f", "{}")), finish(), DONE)
    assert calls(out) == [("f", {}, "call_A")]


def test_invalid_json_is_reported_raw() -> None:
    out = run(chunk(header(0, "call_A", "f", "{'a': 1}")), finish(), DONE)
    assert out.tool_calls[0].invalid and out.tool_calls[0].arguments == "{'a': 1}"


# ---------------------------------------------------------------------------------------------
# The fragment API


def _response(*items: Any) -> Response:
    body = b"".join(
        f"data: {item if isinstance(item, str) else json.dumps(item)}\n\n".encode() for item in items
    )
    return Response(200, chunks=[Chunk(body[:37]), Chunk(body[37:])])


STREAM = (
    chunk(role="assistant", content=None),
    chunk(header(0, "call_A", "f")),
    chunk(tc(0, args='{"a":')),
    chunk(tc(0, args="1}")),
    chunk(header(1, "call_B", "g", '{"b":2}')),
    finish(),
    DONE,
)


def test_kinds_per_chunk() -> None:
    evs = events(*STREAM, ": keepalive", chunk(content="hi"), chunk(reasoning="hmm"))
    evs[-3] = D.parse(WireEvent(comment=" keepalive"))
    assert [set(D.kinds(e)) for e in evs] == [
        {Kind.META},
        {Kind.TOOL_START},
        {Kind.TOOL_ARGS},
        {Kind.TOOL_ARGS},
        {Kind.TOOL_START, Kind.TOOL_ARGS},
        {Kind.FINISH},
        {Kind.SENTINEL},
        {Kind.COMMENT},
        {Kind.TEXT},
        {Kind.REASONING},
    ]


def test_fragments_number_calls_and_roles() -> None:
    frags = D.fragments(events(*STREAM))
    assert [(f.event, f.slot, f.call, f.role) for f in frags] == [
        (1, 0, 0, Role.START),
        (2, 0, 0, Role.ARGS),
        (3, 0, 0, Role.ARGS),
        (4, 0, 1, Role.WHOLE),
    ]
    same_index = D.fragments(
        events(chunk(header(0, "call_A", "f"), tc(0, args="{"), header(0, "call_B", "g")))
    )
    assert [(f.slot, f.call, f.role) for f in same_index] == [
        (0, 0, Role.START),
        (1, 0, Role.ARGS),
        (2, 1, Role.START),
    ]


def test_get_and_set_every_field() -> None:
    event = events(chunk(header(3, "call_A", "f", "{}")))[0]
    assert [D.get(event, 0, f) for f in (Field.INDEX, Field.ID, Field.TYPE, Field.NAME, Field.ARGS)] == [
        3,
        "call_A",
        "function",
        "f",
        "{}",
    ]
    assert D.get(event, 0, Field.ITEM_ID) is MISSING
    edited = D.set(D.set(event, 0, Field.ID, MISSING), 0, Field.NAME, "g")
    assert D.get(edited, 0, Field.ID) is MISSING and D.get(edited, 0, Field.NAME) == "g"
    assert D.get(event, 0, Field.ID) == "call_A"  # the original is untouched
    entry = json.loads(D.render(edited).data)["choices"][0]["delta"]["tool_calls"][0]
    assert entry == {"index": 3, "type": "function", "function": {"name": "g", "arguments": "{}"}}
    bare = D.set(events(chunk(tc(0)))[0], 0, Field.ARGS, "x")
    assert D.get(bare, 0, Field.ARGS) == "x"
    with pytest.raises(DialectError):
        D.get(event, 1, Field.ID)
    with pytest.raises(DialectError):
        D.set(event, 0, Field.ITEM_ID, "x")


def test_round_trip_through_body_of() -> None:
    response = _response(*STREAM)
    evs = events_of(response, D)
    assert body_of(evs, D, like=response.body) == response.body
    evs[2] = D.set(evs[2], 0, Field.ARGS, '{"a":')  # edited: re-rendered compactly, the rest kept as sent
    assert D.render(evs[2]).data == D.dumps(evs[2].payload)
    assert D.render(evs[3]).data == json.dumps(STREAM[3])
    reread = events_of(Response(200, chunks=[Chunk(body_of(evs, D))]), D)
    acc = D.accumulator()
    for e in reread:
        acc.feed(e)
    assert calls(acc.close()) == [("f", {"a": 1}, "call_A"), ("g", {"b": 2}, "call_B")]


def test_continuation_is_index_and_arguments_only() -> None:
    source = events(chunk(header(2, "call_A", "f")))[0]
    cont = D.continuation(source, 0, '{"a":1}')
    payload = json.loads(D.render(cont).data)
    assert payload["choices"][0]["delta"] == {
        "tool_calls": [{"index": 2, "function": {"arguments": '{"a":1}'}}]
    }
    assert payload["id"] == "chatcmpl-1" and payload["choices"][0]["finish_reason"] is None
    out = run(json.loads(source.wire.data), payload, finish(), DONE)
    assert calls(out) == [("f", {"a": 1}, "call_A")]


def test_remove() -> None:
    two = events(chunk(header(0, "call_A", "f", "{}"), header(1, "call_B", "g", "{}")))[0]
    left = D.remove(two, 0)
    assert left is not None and D.get(left, 0, Field.ID) == "call_B"
    assert D.remove(events(chunk(tc(0, args="x")))[0], 0) is None
    with_finish = D.remove(events(chunk(tc(0, args="x"), finish="stop"))[0], 0)
    assert with_finish is not None and D.finish_reason(with_finish) == "stop"
    assert "tool_calls" not in with_finish.payload["choices"][0]["delta"]


def test_pack_puts_fragments_in_one_delta() -> None:
    evs = events(*STREAM)
    packed = D.pack([(evs[1], 0), (evs[2], 0)])
    assert packed is not None
    assert [D.get(packed, slot, Field.ARGS) for slot in (0, 1)] == ["", '{"a":']
    assert D.kinds(packed) == {Kind.TOOL_START, Kind.TOOL_ARGS}
    out = run(
        *(
            json.loads(D.render(e).data) if not isinstance(e.payload, str) else e.payload
            for e in [packed, *evs[3:]]
        )
    )
    assert calls(out) == [("f", {"a": 1}, "call_A"), ("g", {"b": 2}, "call_B")]


def test_finish_reason_read_and_replace() -> None:
    evs = events(*STREAM)
    assert D.finish_reason(evs[5]) == "tool_calls" and D.finish_reason(evs[1]) is MISSING
    assert D.finish_reason(evs[6]) is MISSING
    stop = D.with_finish_reason(evs[5], "stop")
    assert D.finish_reason(stop) == "stop"
    cleared = D.with_finish_reason(evs[5], MISSING)
    assert cleared.payload["choices"][0]["finish_reason"] is None
    usage_only = events({"id": "x", "choices": [], "usage": {"total_tokens": 1}})[0]
    assert D.finish_reason(D.with_finish_reason(usage_only, "length")) == "length"
    with pytest.raises(DialectError):
        D.with_finish_reason(evs[6], "stop")


@pytest.mark.parametrize(
    ("kind", "params", "expected"),
    [
        (Kind.TEXT, {"text": "hi"}, {Kind.TEXT}),
        (Kind.REASONING, {"text": "hm"}, {Kind.REASONING}),
        (Kind.META, {}, {Kind.META}),
        (Kind.FINISH, {"reason": "stop"}, {Kind.FINISH}),
        (Kind.USAGE, {}, {Kind.USAGE}),
        (Kind.ERROR, {"message": "boom"}, {Kind.ERROR}),
        (Kind.SENTINEL, {}, {Kind.SENTINEL}),
        (Kind.COMMENT, {}, {Kind.COMMENT}),
        (Kind.TOOL_START, {"id": "call_Q", "name": "f"}, {Kind.TOOL_START}),
        (Kind.TOOL_ARGS, {"args": "{}"}, {Kind.TOOL_ARGS}),
        (Kind.TOOL_CALL, {"id": "call_Q", "name": "f"}, {Kind.TOOL_START, Kind.TOOL_ARGS}),
    ],
)
def test_build_makes_events_of_that_kind(kind: Kind, params: dict, expected: set) -> None:
    like = events(STREAM[1])[0]
    built = D.build(kind, like=like, **params)
    assert len(built) == 1 and set(D.kinds(built[0])) == expected
    reparsed = D.parse(D.render(built[0]))
    assert reparsed.payload == built[0].payload
    if isinstance(built[0].payload, dict) and "id" in built[0].payload:
        assert built[0].payload["id"] == "chatcmpl-1"


def test_build_has_no_ping() -> None:
    assert D.build(Kind.PING) == [] and D.build(Kind.TOOL_END) == []


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://api.openai.com/v1/chat/completions", True),
        ("https://x.openai.azure.com/openai/deployments/gpt4o/chat/completions?api-version=2024-10-21", True),
        ("http://localhost:11434/v1/chat/completions/", True),
        ("https://api.openai.com/v1/responses", False),
        ("https://api.anthropic.com/v1/messages", False),
    ],
)
def test_matches(url: str, expected: bool) -> None:
    assert D.matches(Request("POST", url)) is expected


def test_build_copies_only_a_real_chunks_identity() -> None:
    azure = events({"choices": [], "id": "", "model": "", "object": "", "prompt_filter_results": []})[0]
    (text,) = D.build(Kind.TEXT, like=azure, text="hi")
    assert "prompt_filter_results" not in text.payload and text.payload["id"] == "chatcmpl-harness"
    real = events({**chunk(content="x"), "obfuscation": "abc", "x_extra": 1})[0]
    (copied,) = D.build(Kind.TEXT, like=real, text="hi")
    assert copied.payload["id"] == "chatcmpl-1" and copied.payload["usage"] is None
    assert "obfuscation" not in copied.payload and "x_extra" not in copied.payload


def test_cut_after_the_finish_reason_keeps_the_final_calls() -> None:
    out = run(chunk(header(0, "call_A", "f", '{"a":1}')), finish(), error="connection reset")
    assert out.state is State.CUT and out.error == "connection reset"
    assert calls(out) == [("f", {"a": 1}, "call_A")]
