from __future__ import annotations

import pytest

from harness.errors import NotApplicable
from harness.mutate import Stream
from harness.mutate.calls import by_call, call_value
from harness.wire.dialects import MISSING, Field, Kind
from tests._mutation_streams import apply, assert_oracle, built, stream_of


def _values(stream, field):  # type: ignore[no-untyped-def]
    d = stream.dialect
    return [d.get(stream.events[f.event], f.slot, field) for f in d.fragments(stream.events)]


def test_set_field_puts_every_call_at_index_0_and_keeps_meaning() -> None:
    stream = stream_of("openai-chat/parallel-2")
    out = apply("set-field", stream, field="index", value=0)
    assert set(_values(out, Field.INDEX)) == {0}
    assert out.expected.tool_calls == stream.expected.tool_calls
    assert_oracle(out)


def test_drop_id_everywhere_expects_no_ids() -> None:
    out = apply("drop-field", stream_of("openai-chat/parallel-2"), field="id", on="all")
    assert all(v is MISSING for v in _values(out, Field.ID))
    assert all(call.id is None for call in out.expected.tool_calls)
    assert_oracle(out)


def test_id_on_every_fragment_and_only_on_first_round_trip() -> None:
    stream = apply("split-args", stream_of("openai-chat/single-call"), size=3)
    every = apply("field-on-every-fragment", stream, field="id")
    assert MISSING not in _values(every, Field.ID)
    first = apply("field-only-on-first", every, field="id")
    groups = by_call(first.dialect.fragments(first.events))
    assert [v is MISSING for v in _values(first, Field.ID)] == [
        k > 0 for g in groups.values() for k in range(len(g))
    ]
    assert_oracle(every)
    assert_oracle(first)


def test_fresh_id_per_fragment_keeps_the_first_id() -> None:
    stream = apply("split-args", stream_of("openai-chat/single-call"), size=2)
    out = apply("fresh-field-per-fragment", stream, field="id", seed=3)
    ids = [v for v in _values(out, Field.ID) if v is not MISSING]
    assert len(set(ids)) == len(ids) > 2
    assert out.expected.tool_calls[0].id == stream.expected.tool_calls[0].id
    assert_oracle(out)


def test_collapsing_indexes_of_interleaved_calls_is_refused() -> None:
    stream = apply("interleave", stream_of("openai-chat/parallel-2"))
    with pytest.raises(NotApplicable):
        apply("set-field", stream, field="index", value=0)


def test_shift_field_increments_continuations() -> None:
    stream = apply("split-args", stream_of("openai-chat/single-call"), size=5)
    out = apply("shift-field", stream, field="index", on="continuations", by=1, step=1)
    indexes = _values(out, Field.INDEX)
    assert indexes[0] == 0 and indexes[1:] == list(range(2, len(indexes) + 1))
    assert_oracle(out)


def test_restyle_ids_shrinking_gives_later_calls_shorter_ids() -> None:
    out = apply("restyle-ids", stream_of("openai-chat/parallel-2"), shrinking=True, seed=1)
    ids = [call.id or "" for call in out.expected.tool_calls]
    assert len(ids[0]) > len(ids[1])
    d = out.dialect
    groups = by_call(d.fragments(out.events))
    assert [call_value(d, out.events, g, Field.ID) for g in groups.values()] == ids
    assert_oracle(out)


def _many_calls(count: int) -> Stream:
    """An Anthropic message of `count` tool calls, each in its own block."""
    calls = [
        (Kind.TOOL_CALL, {"index": i, "id": f"toolu_01{i:022d}", "name": "f", "args": f'{{"path":"f{i}"}}'})
        for i in range(count)
    ]
    end = [(Kind.FINISH, {"reason": "tool_use"}), (Kind.SENTINEL, {})]
    stream = built("anthropic", (Kind.META, {}), *calls, *end)
    assert len(stream.expected.tool_calls) == count
    return stream


def test_restyle_ids_shrinking_over_many_calls_never_gives_two_calls_one_id() -> None:
    # Past a few calls the shrinking length bottoms out, where few ids fit: two calls once drew the
    # same one and the reference merged them (40 calls expected, fewer got).
    out = apply("restyle-ids", _many_calls(40), shrinking=True, seed=1)
    ids = [call.id or "" for call in out.expected.tool_calls]
    assert len(set(ids)) == 40
    assert [len(i) for i in ids[:5]] == sorted((len(i) for i in ids[:5]), reverse=True)
    assert len(ids[0]) > len(ids[1]) > len(ids[2])
    assert_oracle(out)


def test_a_fresh_id_is_none_taken_growing_when_a_length_holds_no_more() -> None:
    import random

    from harness.mutate.identity import restyled

    taken = {f"c{ch}" for ch in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"}
    before = set(taken)
    made = restyled("call_x", "short", random.Random(0), 2, taken=taken)  # every 2-character id is taken
    assert made not in before and len(made) > 2 and taken == before | {made}


@pytest.mark.parametrize(
    "style,prefix", [("bedrock", "tooluse_"), ("anthropic", "toolu_01"), ("mistral", "")]
)
def test_restyle_ids_into_provider_styles(style: str, prefix: str) -> None:
    out = apply("restyle-ids", stream_of("anthropic/parallel-calls"), style=style)
    assert all((call.id or "").startswith(prefix) for call in out.expected.tool_calls)
    assert_oracle(out)


def test_split_name_sends_the_name_in_two_pieces() -> None:
    out = apply("split-name", stream_of("openai-chat/single-call"), at=3)
    names = [v for v in _values(out, Field.NAME) if v is not MISSING]
    assert "".join(names) == out.expected.tool_calls[0].name and len(names) == 2
    assert_oracle(out)


def test_name_cannot_be_dropped_from_headers() -> None:
    with pytest.raises(NotApplicable):
        apply("drop-field", stream_of("openai-chat/single-call"), field="name", on="headers")
