from __future__ import annotations

import pytest

from harness.errors import NotApplicable
from harness.mutate import calls, evolve
from harness.mutate.calls import args_text, by_call, contiguous
from harness.wire.dialects import Field, Kind, Role
from tests._mutation_streams import apply, assert_oracle, built, stream_of


def test_split_args_down_to_one_character() -> None:
    stream = stream_of("openai-chat/single-call")
    out = apply("split-args", stream, size=1)
    d = out.dialect
    pieces = [
        d.get(out.events[f.event], f.slot, Field.ARGS) for f in d.fragments(out.events) if f.role is Role.ARGS
    ]
    assert all(len(p) <= 1 for p in pieces)
    assert args_text(d, out.events, d.fragments(out.events)) == args_text(
        d, stream.events, d.fragments(stream.events)
    )
    assert_oracle(out)


def test_coalesce_and_args_in_header() -> None:
    stream = apply("split-args", stream_of("openai-chat/parallel-2"), size=2)
    joined = apply("coalesce-args", stream)
    assert len(joined.events) < len(stream.events)
    whole = apply("args-in-header", stream)
    d = whole.dialect
    assert all(len(g) == 1 for g in by_call(d.fragments(whole.events)).values())
    assert_oracle(joined)
    assert_oracle(whole)


def test_pack_header_and_first_args_piece_in_one_event() -> None:
    out = apply("pack-fragments", apply("split-args", stream_of("openai-chat/single-call"), size=1))
    d = out.dialect
    first = d.fragments(out.events)[:2]
    assert first[0].event == first[1].event and (first[0].slot, first[1].slot) == (0, 1)
    assert_oracle(out)


def test_pack_is_refused_where_the_wire_cannot_express_it() -> None:
    with pytest.raises(NotApplicable):
        apply("pack-fragments", stream_of("anthropic/parallel-calls"))


@pytest.mark.parametrize(
    "name", ["openai-chat/parallel-2", "anthropic/parallel-calls", "openai-responses/parallel-2"]
)
@pytest.mark.parametrize("pattern", ["round-robin", "random"])
def test_interleave_keeps_meaning(name: str, pattern: str) -> None:
    stream = apply("split-args", stream_of(name), size=3)
    out = apply("interleave", stream, pattern=pattern, seed=5)
    assert not contiguous(out.dialect.fragments(out.events))
    assert_oracle(out)


def test_interleave_refuses_calls_sharing_an_index() -> None:
    with pytest.raises(NotApplicable):
        apply("interleave", stream_of("openai-chat/litellm-bridge-parallel-index0"))


def test_truncate_args_expects_the_truncated_text() -> None:
    out = apply("truncate-args", stream_of("openai-chat/single-call"), chars=1)
    call = out.expected.tool_calls[-1]
    assert call.invalid and not str(call.arguments).endswith("}")
    assert_oracle(out)


@pytest.mark.parametrize(
    "name", ["empty-args-fragment", "placeholder-args", "repeat-args-at-end", "args-as-object"]
)
def test_chat_argument_quirks_keep_meaning(name: str) -> None:
    out = apply(name, stream_of("openai-chat/parallel-2"))
    assert_oracle(out)


def test_responses_done_only_and_stray_delta() -> None:
    stream = stream_of("openai-responses/parallel-2")
    done_only = apply("drop-args-deltas", stream)
    assert not any(f.role is Role.ARGS for f in done_only.dialect.fragments(done_only.events))
    assert_oracle(done_only)
    assert_oracle(apply("stray-args-after-end", stream))


def test_done_events_without_the_streamed_arguments_keep_their_deltas() -> None:
    # A `.done` that does not carry what the deltas sent: dropping the deltas would change the
    # call (the reference then read `{}` where the expectation kept the arguments).
    call = {"id": "call_1", "name": "write"}
    stream = built(
        "openai-responses",
        (Kind.META, {}),
        (Kind.TOOL_START, call),
        (Kind.TOOL_ARGS, {"args": '{"a":'}),
        (Kind.TOOL_ARGS, {"args": "1}"}),
        (Kind.TOOL_END, {**call, "args": ""}),
        (Kind.FINISH, {}),
    )
    assert stream.expected.tool_calls and stream.expected.tool_calls[0].arguments == {"a": 1}
    with pytest.raises(NotApplicable):
        apply("drop-args-deltas", stream)


def test_a_wire_without_continuations_makes_argument_splits_not_applicable() -> None:
    # Ollama sends each call whole; a proxy's arguments as text still have no continuation on that
    # wire: the step is skipped (it raised a DialectError that stopped the whole run), and a cut
    # inside the arguments is a cut right after the call, as for arguments as an object.
    stream = built("ollama", (Kind.TOOL_CALL, {"name": "f", "args": '{"path":"a.txt"}'}), (Kind.FINISH, {}))
    assert stream.expected.tool_calls[0].arguments == {"path": "a.txt"}
    with pytest.raises(NotApplicable, match="whole"):
        apply("split-args", stream, size=1)
    cut = apply("cut-mid-args", stream)
    assert str(cut.expected.state) == "cut" and not cut.expected.tool_calls and len(cut.events) == 1
    assert_oracle(cut)


def test_what_is_found_in_streams_is_kept_for_a_bounded_number_of_events(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # 256 streams of a 20,000-event recording were kept alive by this cache: most of a run's memory.
    monkeypatch.setattr(calls, "_FOUND", type(calls._FOUND)())
    monkeypatch.setattr(calls, "_held", 0)
    monkeypatch.setattr(calls, "_CACHED_EVENTS", 100)
    stream = stream_of("openai-chat/parallel-2")
    copies = [evolve(stream, events=tuple(list(stream.events))) for _ in range(40)]  # new tuples
    assert len(stream.events) * 5 < 100 < len(stream.events) * 40
    for copy in copies:
        assert calls.fragments_or_skip(copy) == calls.fragments_or_skip(stream)
    held = sum(len(events) for events, _ in calls._FOUND.values())
    assert held == calls._held <= 100 and len(calls._FOUND) >= 2
    assert calls._FOUND[next(reversed(calls._FOUND))][0] is stream.events  # the latest is kept
    big = evolve(stream, events=tuple(stream.events) * 10)  # over the bound alone: kept alone
    calls.kinds_of(big)
    assert next(iter(calls._FOUND.values()))[0] is big.events and len(calls._FOUND) == 1
