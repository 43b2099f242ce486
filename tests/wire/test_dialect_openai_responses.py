"""The openai-responses dialect: one hand-built stream per quirk class (named after its id in
STREAM-QUIRKS.md), then the fragment API and its round trips through `body_of` / `events_of`."""

from __future__ import annotations

import json
from typing import Any

import pytest

from harness.cassettes.format import Chunk, Request, Response
from harness.cassettes.outcome import Outcome, State
from harness.errors import DialectError
from harness.wire.codecs import WireEvent
from harness.wire.dialects import MISSING, Event, Field, Kind, Role, body_of, events_of, get

D = get("openai-responses")


def ev(type: str, **fields: Any) -> dict[str, Any]:
    return {"type": type, **fields}


def item(id: Any, call_id: str, name: str, args: str = "", status: str = "in_progress") -> dict[str, Any]:
    out: dict[str, Any] = {
        "type": "function_call",
        "status": status,
        "arguments": args,
        "call_id": call_id,
        "name": name,
    }
    if id is not None:
        out["id"] = id
    return out


def added(index: int, id: Any, call_id: str, name: str, args: str = "") -> dict[str, Any]:
    return ev("response.output_item.added", item=item(id, call_id, name, args), output_index=index)


def delta(index: int, id: Any, piece: str) -> dict[str, Any]:
    out = ev("response.function_call_arguments.delta", delta=piece, output_index=index)
    if id is not None:
        out["item_id"] = id
    return out


def args_done(index: int, id: Any, args: str) -> dict[str, Any]:
    out = ev("response.function_call_arguments.done", arguments=args, output_index=index)
    if id is not None:
        out["item_id"] = id
    return out


def item_done(index: int, id: Any, call_id: str, name: str, args: str) -> dict[str, Any]:
    return ev(
        "response.output_item.done", item=item(id, call_id, name, args, "completed"), output_index=index
    )


def completed(
    output: list[Any] | None = None, status: str = "completed", usage: Any = None
) -> dict[str, Any]:
    response = {
        "id": "resp_1",
        "object": "response",
        "status": status,
        "output": output or [],
        "usage": usage,
    }
    name = {"completed": "response.completed", "incomplete": "response.incomplete"}[status]
    return ev(name, response=response)


CREATED = ev("response.created", response={"id": "resp_1", "status": "in_progress", "output": []})


def events(*items: dict[str, Any]) -> list[Event]:
    out = []
    for n, payload in enumerate(items):
        payload = {**payload, "sequence_number": n}
        out.append(D.parse(WireEvent(data=json.dumps(payload), name=payload["type"])))
    return out


def run(*items: dict[str, Any], error: str | None = None) -> Outcome:
    acc = D.accumulator()
    for event in events(*items):
        acc.feed(event)
    return acc.close(error)


def calls(outcome: Outcome) -> list[tuple[str | None, Any, str | None]]:
    return [(call.name, call.arguments, call.id) for call in outcome.tool_calls]


def one_call(*middle: dict[str, Any], done_args: str = '{"city":"Paris"}') -> tuple[dict[str, Any], ...]:
    return (
        CREATED,
        added(0, "fc_1", "call_1", "get_weather"),
        *middle,
        args_done(0, "fc_1", done_args),
        item_done(0, "fc_1", "call_1", "get_weather", done_args),
        completed(),
    )


def test_standard_call() -> None:
    out = run(*one_call(delta(0, "fc_1", '{"city":'), delta(0, "fc_1", '"Paris"}')))
    assert calls(out) == [("get_weather", {"city": "Paris"}, "call_1")]
    assert out.state is State.COMPLETE and out.finish_reason == "completed"


def test_E1_args_only_in_done() -> None:
    out = run(*one_call())
    assert calls(out) == [("get_weather", {"city": "Paris"}, "call_1")]
    no_item_args = run(
        added(0, "fc_1", "call_1", "f"),
        args_done(0, "fc_1", '{"a":1}'),
        ev("response.output_item.done", item={}),
        completed(),
    )
    assert calls(no_item_args) == [("f", {"a": 1}, "call_1")]


def test_E2_corrected_done_wins_without_double_counting() -> None:
    out = run(
        *one_call(delta(0, "fc_1", '{"city":"Par'), delta(0, "fc_1", 'is"'), done_args='{"city":"Paris"}')
    )
    assert calls(out) == [("get_weather", {"city": "Paris"}, "call_1")]


def test_E3_stray_delta_after_done_is_ignored() -> None:
    out = run(
        added(0, "fc_1", "call_1", "f"),
        delta(0, "fc_1", '{"a":1}'),
        args_done(0, "fc_1", ""),
        delta(0, "fc_1", "}"),
        ev(
            "response.output_item.done",
            item={"id": "fc_1", "type": "function_call", "call_id": "call_1"},
            output_index=0,
        ),
        completed(),
    )
    assert calls(out) == [("f", {"a": 1}, "call_1")]


def test_E5_name_only_in_added() -> None:
    done = item_done(0, "fc_1", "call_1", "get_weather", '{"city":"Paris"}')
    del done["item"]["name"]
    out = run(
        added(0, "fc_1", "call_1", "get_weather"), delta(0, "fc_1", '{"city":"Paris"}'), done, completed()
    )
    assert calls(out) == [("get_weather", {"city": "Paris"}, "call_1")]


def test_E6_items_without_id_and_call_id_is_the_id() -> None:
    out = run(
        added(0, None, "call_1", "f"),
        added(1, None, "call_2", "g"),
        delta(0, None, '{"a":1}'),
        delta(1, None, '{"b":2}'),
        item_done(0, None, "call_1", "f", '{"a":1}'),
        item_done(1, None, "call_2", "g", '{"b":2}'),
        completed(),
    )
    assert calls(out) == [("f", {"a": 1}, "call_1"), ("g", {"b": 2}, "call_2")]


def test_E7_interleaved_deltas_routed_by_output_index_and_item_id() -> None:
    out = run(
        added(0, "fc_a", "call_a", "read_file"),
        added(1, "fc_b", "call_b", "search_text"),
        delta(0, "fc_a", '{"path":'),
        delta(1, "fc_b", '{"query":'),
        delta(0, "fc_a", '"foo.txt"}'),
        delta(1, None, '"bar"}'),
        item_done(0, "fc_a", "call_a", "read_file", ""),
        item_done(1, "fc_b", "call_b", "search_text", ""),
        completed(),
    )
    assert calls(out) == [
        ("read_file", {"path": "foo.txt"}, "call_a"),
        ("search_text", {"query": "bar"}, "call_b"),
    ]


def test_reasoning_and_message_items() -> None:
    out = run(
        CREATED,
        ev(
            "response.output_item.added",
            item={"id": "rs_1", "type": "reasoning", "summary": []},
            output_index=0,
        ),
        ev(
            "response.reasoning_summary_text.delta",
            item_id="rs_1",
            output_index=0,
            summary_index=0,
            delta="Think",
        ),
        ev(
            "response.output_item.done",
            item={"id": "rs_1", "type": "reasoning", "summary": []},
            output_index=0,
        ),
        ev(
            "response.output_item.added",
            item={"id": "msg_1", "type": "message", "content": []},
            output_index=1,
        ),
        ev("response.output_text.delta", item_id="msg_1", output_index=1, content_index=0, delta="Let me "),
        ev("response.output_text.delta", item_id="msg_1", output_index=1, content_index=0, delta="check."),
        ev("response.output_item.done", item={"id": "msg_1", "type": "message"}, output_index=1),
        added(2, "fc_1", "call_1", "f"),
        delta(2, "fc_1", "{}"),
        item_done(2, "fc_1", "call_1", "f", "{}"),
        completed(usage={"input_tokens": 5, "output_tokens": 9, "total_tokens": 14}),
    )
    assert out.text == "Let me check."
    assert calls(out) == [("f", {}, "call_1")]
    assert out.usage == {"input_tokens": 5, "output_tokens": 9, "total_tokens": 14}


def test_output_text_done_replaces_its_deltas() -> None:
    out = run(
        ev("response.output_text.delta", item_id="msg_1", output_index=0, content_index=0, delta="Hel"),
        ev("response.output_text.done", item_id="msg_1", output_index=0, content_index=0, text="Hello"),
        completed(),
    )
    assert out.text == "Hello"


def test_B7_no_arguments() -> None:
    out = run(
        added(0, "fc_1", "call_1", "now"),
        args_done(0, "fc_1", ""),
        item_done(0, "fc_1", "call_1", "now", ""),
        completed(),
    )
    assert calls(out) == [("now", {}, "call_1")]


def test_D10_duplicate_added() -> None:
    out = run(
        added(0, "fc_1", "call_1", "f"),
        added(0, "fc_1", "call_1", "f"),
        delta(0, "fc_1", '{"a":1}'),
        item_done(0, "fc_1", "call_1", "f", '{"a":1}'),
        completed(),
    )
    assert calls(out) == [("f", {"a": 1}, "call_1")]


def test_D7_cut_reports_only_final_calls() -> None:
    out = run(
        added(0, "fc_1", "call_1", "f"),
        item_done(0, "fc_1", "call_1", "f", '{"a":1}'),
        added(1, "fc_2", "call_2", "g"),
        delta(1, "fc_2", '{"b":'),
        error="peer closed connection",
    )
    assert out.state is State.CUT and out.error == "peer closed connection"
    assert calls(out) == [("f", {"a": 1}, "call_1")]


def test_D8_failed_and_error_events() -> None:
    failed = ev(
        "response.failed", response={"status": "failed", "error": {"code": "server_error", "message": "boom"}}
    )
    out = run(added(0, "fc_1", "call_1", "f"), delta(0, "fc_1", '{"a":'), failed)
    assert out.state is State.ERROR and out.error == "boom" and out.tool_calls == ()
    error = ev("error", code="rate_limit_exceeded", message="slow down", param=None)
    out = run(added(0, "fc_1", "call_1", "f"), error)
    assert out.state is State.ERROR and out.error == "slow down"


def test_incomplete_is_complete_with_its_status() -> None:
    out = run(added(0, "fc_1", "call_1", "f"), delta(0, "fc_1", '{"a":'), completed(status="incomplete"))
    assert out.state is State.COMPLETE and out.finish_reason == "incomplete"
    # docs/oracle.md length-with-open-call: an item the limit cut before its .done is not final.
    assert out.tool_calls == ()


def test_completed_output_fills_missing_events() -> None:
    output = [
        {"id": "msg_1", "type": "message"},
        item("fc_1", "call_1", "f", '{"a":1}', "completed"),
        item("fc_2", "call_2", "g", '{"b":2}', "completed"),
    ]
    out = run(added(1, "fc_1", "call_1", "f"), completed(output))
    assert calls(out) == [("f", {"a": 1}, "call_1"), ("g", {"b": 2}, "call_2")]


def test_invalid_arguments_reported_raw() -> None:
    out = run(*one_call(done_args="{city: Paris}"))
    assert out.tool_calls[0].invalid and out.tool_calls[0].arguments == "{city: Paris}"


# ---------------------------------------------------------------------------------------------
# The fragment API

STREAM = one_call(delta(0, "fc_1", '{"city":'), delta(0, "fc_1", '"Paris"}'))


def test_kinds() -> None:
    assert [set(D.kinds(e)) for e in events(*STREAM)] == [
        {Kind.META},
        {Kind.TOOL_START},
        {Kind.TOOL_ARGS},
        {Kind.TOOL_ARGS},
        {Kind.TOOL_END},
        {Kind.TOOL_END},
        {Kind.SENTINEL, Kind.FINISH},
    ]
    assert D.kinds(events(ev("error", message="x"))[0]) == {Kind.ERROR}
    assert D.kinds(D.parse(WireEvent(comment=" keepalive"))) == {Kind.COMMENT}


def test_fragments() -> None:
    two = (
        added(0, "fc_a", "call_a", "f"),
        added(1, "fc_b", "call_b", "g"),
        delta(1, "fc_b", "{}"),
        delta(0, None, "{}"),
    )
    frags = D.fragments(events(*STREAM, *two))
    assert [(f.event, f.call, f.role) for f in frags] == [
        (1, 0, Role.START),
        (2, 0, Role.ARGS),
        (3, 0, Role.ARGS),
        (4, 0, Role.END),
        (5, 0, Role.END),
        (7, 1, Role.START),
        (8, 2, Role.START),
        (9, 2, Role.ARGS),
        (10, 1, Role.ARGS),
    ]


def test_get_and_set() -> None:
    evs = events(*STREAM)
    start, piece, done = evs[1], evs[2], evs[4]
    assert [D.get(start, 0, f) for f in (Field.ID, Field.ITEM_ID, Field.NAME, Field.INDEX, Field.ARGS)] == [
        "call_1",
        "fc_1",
        "get_weather",
        0,
        "",
    ]
    assert [D.get(piece, 0, f) for f in (Field.ITEM_ID, Field.INDEX, Field.ARGS, Field.NAME)] == [
        "fc_1",
        0,
        '{"city":',
        MISSING,
    ]
    assert D.get(done, 0, Field.ARGS) == '{"city":"Paris"}' and D.get(done, 0, Field.NAME) is MISSING
    renamed = D.set(start, 0, Field.ITEM_ID, MISSING)
    assert "id" not in renamed.payload["item"] and D.get(start, 0, Field.ITEM_ID) == "fc_1"
    moved = D.set(piece, 0, Field.INDEX, 3)
    assert json.loads(D.render(moved).data)["output_index"] == 3
    assert D.get(D.set(done, 0, Field.NAME, "x"), 0, Field.NAME) == "x"
    with pytest.raises(DialectError):
        D.set(piece, 0, Field.NAME, "x")
    with pytest.raises(DialectError):
        D.get(piece, 1, Field.ARGS)


def test_round_trip_and_continuation() -> None:
    evs = events(*STREAM)
    body = D.codec().encode([D.render(e) for e in evs]).replace(b"\n", b"\r\n")
    response = Response(200, chunks=[Chunk(body[:50]), Chunk(body[50:200]), Chunk(body[200:])])
    decoded = events_of(response, D)
    assert body_of(decoded, D, like=body) == body
    cont = D.continuation(decoded[2], 0, '"Paris"}')
    assert cont.name == "response.function_call_arguments.delta"
    assert {k: cont.payload[k] for k in ("delta", "item_id", "output_index")} == {
        "delta": '"Paris"}',
        "item_id": "fc_1",
        "output_index": 0,
    }
    stream = [*decoded[:3], cont, *decoded[5:]]  # the args.done dropped: the deltas make the args
    stream[-2] = D.set(stream[-2], 0, Field.ARGS, "")
    acc = D.accumulator()
    for e in events_of(Response(200, chunks=[Chunk(body_of(stream, D))]), D):
        acc.feed(e)
    assert calls(acc.close()) == [("get_weather", {"city": "Paris"}, "call_1")]
    assert D.remove(decoded[2], 0) is None


def test_finish_reason() -> None:
    evs = events(*STREAM)
    assert D.finish_reason(evs[-1]) == "completed" and D.finish_reason(evs[2]) is MISSING
    changed = D.with_finish_reason(evs[-1], "incomplete")
    assert D.finish_reason(changed) == "incomplete"
    assert D.finish_reason(D.with_finish_reason(evs[-1], MISSING)) is MISSING
    with pytest.raises(DialectError):
        D.with_finish_reason(evs[2], "completed")


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        (Kind.META, [{Kind.META}]),
        # Text and reasoning are whole output items: added, part added, delta, done, part done, item done.
        (Kind.TEXT, [{Kind.META}, {Kind.META}, {Kind.TEXT}, {Kind.META}, {Kind.META}, {Kind.META}]),
        (Kind.REASONING, [{Kind.META}, *[{Kind.REASONING}] * 4, {Kind.META}]),
        (Kind.ERROR, [{Kind.ERROR}]),
        (Kind.SENTINEL, [{Kind.SENTINEL, Kind.FINISH}]),
        (Kind.FINISH, [{Kind.SENTINEL, Kind.FINISH}]),
        (Kind.TOOL_START, [{Kind.TOOL_START}]),
        (Kind.TOOL_ARGS, [{Kind.TOOL_ARGS}]),
        (Kind.TOOL_END, [{Kind.TOOL_END}, {Kind.TOOL_END}]),
        (Kind.TOOL_CALL, [{Kind.TOOL_START}, {Kind.TOOL_ARGS}, {Kind.TOOL_END}, {Kind.TOOL_END}]),
        (Kind.PING, []),
    ],
)
def test_build(kind: Kind, expected: list[set[Kind]]) -> None:
    built = D.build(kind, args='{"a":1}')
    assert [set(D.kinds(e)) for e in built] == expected
    assert all(e.name == e.payload["type"] for e in built)


def test_built_call_accumulates() -> None:
    acc = D.accumulator()
    for e in [*D.build(Kind.TOOL_CALL, id="call_Z", name="f", args='{"a":1}'), *D.build(Kind.SENTINEL)]:
        acc.feed(D.parse(D.render(e)))
    assert calls(acc.close()) == [("f", {"a": 1}, "call_Z")]


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://api.openai.com/v1/responses", True),
        ("https://x.openai.azure.com/openai/v1/responses?api-version=preview", True),
        ("https://api.openai.com/v1/responses/resp_abc123", True),
        ("https://api.openai.com/v1/chat/completions", False),
        ("https://api.openai.com/v1/responses/resp_abc/input_items", False),
    ],
)
def test_matches(url: str, expected: bool) -> None:
    assert D.matches(Request("POST", url)) is expected


def test_restate_lists_an_item_never_done_with_the_arguments_it_streamed() -> None:
    """A call whose `.done` never came, then `response.completed`: the rebuilt output lists it as
    the server that streamed it had it, with the arguments of its deltas. It listed the `added`
    form (arguments ""), so the openai SDK, which reads the final output, reported `{}`."""
    calls = [{"index": i, "id": f"call_{i}", "item_id": f"fc_{i}", "name": f"f{i}"} for i in (0, 1)]
    events = [*D.build(Kind.META), *D.build(Kind.TOOL_CALL, **calls[0], args='{"a":1}')]
    events += D.build(Kind.TOOL_START, **calls[1])
    events += [e for piece in ('{"b":', "2}") for e in D.build(Kind.TOOL_ARGS, **calls[1], args=piece)]
    events += D.build(Kind.FINISH, reason="completed")
    output = D.restate(D.renumber(events))[-1].payload["response"]["output"]
    listed = [(item["call_id"], item["arguments"]) for item in output]
    assert listed == [("call_0", '{"a":1}'), ("call_1", '{"b":2}')]
