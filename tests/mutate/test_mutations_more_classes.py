"""C7 (n>1 choices), E2 (a `.done` that corrects the deltas) and F2 (a surrogate pair split across
fragments): each mutation's wire shape read back through its dialect, its expectation, the
reference meeting it, and a buggy accumulator of the class failing it."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from harness.cassettes.outcome import Outcome, ToolCall, diff
from harness.errors import MutationError, NotApplicable
from harness.mutate import Stream, build
from harness.wire.codecs import decode_all
from harness.wire.dialects import Event, Field, Role
from harness.wire.dialects.base import escape_surrogates
from harness.wire.dialects.openai_chat import join_surrogates
from tests._mutation_streams import apply, assert_oracle, stream_of

# ---------------------------------------------------------------------------------------------
# Reading a mutated stream back


def wire_events(stream: Stream) -> list[Event]:
    """The events a client decodes from the stream's bytes."""
    d = stream.dialect
    body = b"".join(stream.current_reads())
    body.decode("utf-8")  # the bytes are valid UTF-8
    return [d.parse(wire) for wire in decode_all(d.codec(), [body])]


def payloads(stream: Stream) -> list[dict[str, Any]]:
    return [e.payload for e in wire_events(stream) if isinstance(e.payload, dict)]


def chat_calls(
    stream: Stream,
    choices: Callable[[dict[str, Any]], list[dict[str, Any]]],
    piece: Callable[[str], str] = lambda text: text,
) -> Outcome:
    """A naive chat accumulator: `tool_calls` entries of the chosen choices keyed on `index`
    alone, argument pieces concatenated after `piece`, no surrogate pairs combined."""
    calls: dict[int, dict[str, str]] = {}
    for payload in payloads(stream):
        for choice in choices(payload):
            for entry in (choice.get("delta") or {}).get("tool_calls") or []:
                call = calls.setdefault(entry.get("index", 0), {"id": "", "name": "", "args": ""})
                function = entry.get("function") or {}
                call["id"] = call["id"] or entry.get("id") or ""
                call["name"] += function.get("name") or ""
                call["args"] += piece(function.get("arguments") or "")
    found = tuple(ToolCall.from_text(c["name"], c["args"], id=c["id"]) for c in calls.values())
    return Outcome(tool_calls=found, finish_reason=stream.expected.finish_reason)


def calls_only(outcome: Outcome) -> Outcome:
    return Outcome(tool_calls=outcome.tool_calls, finish_reason=outcome.finish_reason)


# ---------------------------------------------------------------------------------------------
# C7: n>1 choices


@pytest.mark.parametrize("layout", ["same-chunk", "interleaved"])
@pytest.mark.parametrize("n", [2, 3])
def test_extra_choices_shape_and_oracle(layout: str, n: int) -> None:
    stream = stream_of("openai-chat/parallel-2", n=3)
    out = apply("extra-choices", stream, layout=layout, n=n)
    chunks = payloads(out)
    numbers = [[c["index"] for c in p.get("choices") or []] for p in chunks]
    if layout == "same-chunk":
        assert [0, *range(1, n)] in numbers and all(ns in ([], list(range(n))) for ns in numbers)
    else:
        assert all(len(ns) <= 1 for ns in numbers) and {k for ns in numbers for k in ns} == set(range(n))
    by_choice: dict[int, set[str]] = {}
    finishes: dict[int, list[str]] = {}
    for p in chunks:
        for choice in p.get("choices") or []:
            for entry in choice["delta"].get("tool_calls") or []:
                if entry.get("id"):
                    by_choice.setdefault(choice["index"], set()).add(entry["id"])
            if choice.get("finish_reason"):
                finishes.setdefault(choice["index"], []).append(choice["finish_reason"])
    assert all(by_choice[k].isdisjoint(by_choice[0]) for k in range(1, n))  # other ids
    assert sorted(finishes) == list(range(n))  # each choice its own finish_reason
    assert out.expected == stream.expected
    assert_oracle(out)


def test_extra_choices_are_other_completions() -> None:
    out = apply("extra-choices", stream_of("openai-chat/parallel-2", n=3), layout="interleaved")
    choice_1 = chat_calls(out, lambda p: [c for c in p.get("choices") or [] if c["index"] == 1])
    assert len(choice_1.tool_calls) == 2 and not any(call.invalid for call in choice_1.tool_calls)
    assert diff(calls_only(out.expected), choice_1)  # other arguments than choice 0's


def test_extra_text_choice_finishes_with_stop() -> None:
    out = apply("extra-choices", stream_of("openai-chat/single-call", n=2), other="text")
    text = "".join(
        c["delta"].get("content") or ""
        for p in payloads(out)
        for c in p.get("choices") or []
        if c["index"] == 1
    )
    stops = [c["finish_reason"] for p in payloads(out) for c in p.get("choices") or [] if c["index"] == 1]
    assert text.startswith("I can look") and "stop" in stops
    assert_oracle(out)


@pytest.mark.parametrize("layout", ["same-chunk", "interleaved"])
def test_a_client_mixing_choices_fails_extra_choices(layout: str) -> None:
    out = apply("extra-choices", stream_of("openai-chat/parallel-2", n=3), layout=layout)
    every_choice = chat_calls(out, lambda p: p.get("choices") or [])
    assert diff(calls_only(out.expected), every_choice)
    right = chat_calls(out, lambda p: [c for c in p.get("choices") or [] if c["index"] == 0])
    assert diff(calls_only(out.expected), right) == []


def test_a_client_reading_choices_0_fails_interleaved_choices() -> None:
    out = apply("extra-choices", stream_of("openai-chat/parallel-2", n=3), layout="interleaved")
    first = chat_calls(out, lambda p: (p.get("choices") or [])[:1])
    assert diff(calls_only(out.expected), first)


@pytest.mark.parametrize(
    "name", ["anthropic/single-call", "openai-responses/single-call", "gemini/single-call"]
)
def test_extra_choices_need_a_dialect_with_choices(name: str) -> None:
    with pytest.raises(NotApplicable, match="no choices"):
        apply("extra-choices", stream_of(name))


def test_extra_choices_needs_two() -> None:
    with pytest.raises(MutationError, match="n must be at least 2"):
        build("extra-choices", {"n": 1})


# ---------------------------------------------------------------------------------------------
# E2: the `.done` arguments differ from the deltas


def responses_args(stream: Stream) -> tuple[list[str], list[str]]:
    """Per item: the concatenated deltas and the `.done` arguments, read off the wire."""
    deltas: dict[str, str] = {}
    done: dict[str, str] = {}
    for p in payloads(stream):
        if p.get("type") == "response.function_call_arguments.delta":
            deltas[p["item_id"]] = deltas.get(p["item_id"], "") + p["delta"]
        elif p.get("type") == "response.function_call_arguments.done":
            done[p["item_id"]] = p["arguments"]
    return list(deltas.values()), [done[k] for k in deltas]


def appending_client(stream: Stream) -> Outcome:
    """A Responses client that appends the `.done` arguments to the deltas (opencode)."""
    deltas, done = responses_args(stream)
    texts = [d + f for d, f in zip(deltas, done, strict=True)]
    return Outcome(
        tool_calls=tuple(
            ToolCall.from_text(c.name, t) for c, t in zip(stream.expected.tool_calls, texts, strict=True)
        )
    )


def deltas_client(stream: Stream) -> Outcome:
    """A Responses client that keeps the deltas and ignores `.done`."""
    deltas, _ = responses_args(stream)
    return Outcome(
        tool_calls=tuple(
            ToolCall.from_text(c.name, t) for c, t in zip(stream.expected.tool_calls, deltas, strict=True)
        )
    )


def names_only(outcome: Outcome) -> Outcome:
    return Outcome(
        tool_calls=tuple(ToolCall(c.name, c.arguments, invalid=c.invalid) for c in outcome.tool_calls)
    )


def test_corrected_done_wins() -> None:
    out = apply("correct-args-at-done", stream_of("openai-responses/parallel-2"), how="append-key")
    deltas, done = responses_args(out)
    assert all(
        json.loads(f) == {**json.loads(d), "corrected": True} for d, f in zip(deltas, done, strict=True)
    )
    items = [p["item"]["arguments"] for p in payloads(out) if p.get("type") == "response.output_item.done"]
    assert items == done
    assert [c.arguments for c in out.expected.tool_calls] == [json.loads(f) for f in done]
    assert_oracle(out)
    assert diff(names_only(out.expected), deltas_client(out))
    assert diff(names_only(out.expected), appending_client(out))


def test_non_prefix_final_keeps_the_value() -> None:
    stream = stream_of("openai-responses/parallel-2")
    out = apply("correct-args-at-done", stream, how="rewrite")
    deltas, done = responses_args(out)
    assert all(
        not f.startswith(d) and json.loads(f) == json.loads(d) for d, f in zip(deltas, done, strict=True)
    )
    assert diff(out.expected, stream.expected) == []
    assert_oracle(out)


def test_done_repeating_the_deltas_is_double_counted_by_an_appending_client() -> None:
    stream = stream_of("openai-responses/single-call")
    out = apply("correct-args-at-done", stream, how="same")
    deltas, done = responses_args(out)
    assert deltas == done and diff(out.expected, stream.expected) == []
    assert_oracle(out)
    assert diff(names_only(out.expected), appending_client(out))


@pytest.mark.parametrize(
    "name", ["anthropic/single-call", "bedrock-converse/single-call", "openai-chat/single-call"]
)
def test_correct_args_at_done_needs_end_events_with_arguments(name: str) -> None:
    with pytest.raises(NotApplicable):
        apply("correct-args-at-done", stream_of(name))


def test_correct_args_at_done_skips_args_only_in_done() -> None:
    with pytest.raises(NotApplicable):
        apply("correct-args-at-done", stream_of("openai-responses/args-only-in-done"))


# ---------------------------------------------------------------------------------------------
# F2: a surrogate pair split across two fragments


def test_escape_and_join_surrogates() -> None:
    assert escape_surrogates('{"a":"x\ud83c"}') == '{"a":"x\\ud83c"}'
    assert escape_surrogates('{"a":"é🌧"}') == '{"a":"é🌧"}'
    assert join_surrogates("a\ud83c\udf27b\ud83c") == "a🌧b\ud83c"


def test_split_surrogate_pairs_shape_and_oracle() -> None:
    stream = stream_of("openai-chat/single-call")
    out = apply("split-surrogate-pairs", stream)
    body = b"".join(out.current_reads())
    assert b"\\ud83c" in body and b"\\udf27" in body
    d = out.dialect
    events = wire_events(out)
    pieces = [
        d.get(events[f.event], f.slot, Field.ARGS)
        for f in d.fragments(events)
        if f.role in (Role.START, Role.ARGS, Role.WHOLE)
    ]
    at = next(n for n, p in enumerate(pieces) if p.endswith("\ud83c"))
    assert pieces[at + 1].startswith("\udf27")
    assert json.loads(join_surrogates("".join(pieces)))["city"] == "Paris 🌧"
    assert out.expected.tool_calls[0].arguments == {
        **stream.expected.tool_calls[0].arguments,
        "city": "Paris 🌧",
    }
    assert_oracle(out)
    # Events the mutation did not touch keep their bytes.
    before = set(stream.current_reads())
    assert sum(r in before for r in out.current_reads()) >= len(stream.events) - 2


def test_split_surrogate_pairs_keeps_an_existing_astral_character() -> None:
    joined = apply("coalesce-args", stream_of("openai-chat/single-call"))
    d = joined.dialect
    piece = next(f for f in d.fragments(joined.events) if f.role is Role.ARGS)
    text = d.get(joined.events[piece.event], piece.slot, Field.ARGS)
    events = list(joined.events)
    events[piece.event] = d.set(events[piece.event], piece.slot, Field.ARGS, text.replace("Paris", "Paris 🌧"))
    call = joined.expected.tool_calls[0]
    emoji = ToolCall(call.name, {**call.arguments, "city": "Paris 🌧"}, id=call.id)
    stream = joined.with_events(events, replace(joined.expected, tool_calls=(emoji,)))
    out = apply("split-surrogate-pairs", stream, insert=None)
    assert out.expected == stream.expected and len(out.events) == len(stream.events) + 1
    assert_oracle(out)


def test_split_surrogate_pairs_needs_an_astral_character() -> None:
    with pytest.raises(NotApplicable):
        apply("split-surrogate-pairs", stream_of("openai-chat/single-call"), insert=None)
    with pytest.raises(MutationError, match="outside the BMP"):
        build("split-surrogate-pairs", {"insert": "é"})


@pytest.mark.parametrize(
    "piece",
    [
        pytest.param(lambda t: t, id="surrogates-not-combined"),
        pytest.param(lambda t: t.encode("utf-8", "replace").decode("utf-8"), id="utf8-per-fragment"),
    ],
)
def test_a_client_not_combining_surrogates_fails(piece: Callable[[str], str]) -> None:
    out = apply("split-surrogate-pairs", stream_of("openai-chat/parallel-2"))
    naive = chat_calls(out, lambda p: (p.get("choices") or [])[:1], piece)
    assert diff(calls_only(out.expected), naive)
    fixed = chat_calls(out, lambda p: (p.get("choices") or [])[:1], lambda t: t)
    combined = Outcome(
        tool_calls=tuple(
            ToolCall(c.name, json.loads(join_surrogates(json.dumps(c.arguments))), id=c.id)
            for c in fixed.tool_calls
        ),
        finish_reason=fixed.finish_reason,
    )
    assert diff(calls_only(out.expected), combined) == []
