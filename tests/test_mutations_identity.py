from __future__ import annotations

import pytest
from _mutation_streams import apply, assert_oracle, stream_of

from harness.errors import NotApplicable
from harness.mutate.calls import by_call, call_value
from harness.wire.dialects import MISSING, Field


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
