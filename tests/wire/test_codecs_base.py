"""`new_event` and `data_events`: the decoders' fast `WireEvent` constructors make exactly what
`WireEvent(...)` makes."""

from __future__ import annotations

import copy
import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.wire.codecs.base import WireEvent, data_events, new_event
from tests._fuzz import examples

texts = st.none() | st.text(max_size=8)
headers = st.lists(st.tuples(st.text(max_size=5), st.integers(0, 9), st.integers()), max_size=2).map(tuple)


@settings(max_examples=examples(50, 200), deadline=None)
@given(st.text(max_size=8), texts, texts, st.none() | st.integers(0, 10**6), texts, headers, texts)
def test_new_event_makes_what_the_constructor_makes(
    data: str,
    name: str | None,
    id_: str | None,
    retry: int | None,
    comment: str | None,
    heads: tuple[tuple[str, int, object], ...],
    block: str | None,
) -> None:
    args = (data, name, id_, retry, comment, heads, block)
    made, expected = new_event(*args), WireEvent(*args)
    assert type(made) is WireEvent and made == expected and repr(made) == repr(expected)
    assert hash(made) == hash(expected)
    assert made._asdict() == expected._asdict()
    assert pickle.loads(pickle.dumps(made)) == expected and copy.deepcopy(made) == expected
    assert made._replace(data="z") == expected._replace(data="z")


@settings(max_examples=examples(30, 100), deadline=None)
@given(st.lists(st.text(max_size=8), max_size=5))
def test_data_events_are_the_constructors(datas: list[str]) -> None:
    made = data_events(iter(datas))
    assert made == [WireEvent(data=d) for d in datas]
    assert all(type(event) is WireEvent for event in made)


def test_defaults_and_keywords_are_the_constructors() -> None:
    assert new_event("x") == WireEvent(data="x")
    assert new_event() == WireEvent()
    assert new_event("d", "n", retry=5) == WireEvent(data="d", name="n", retry=5)
    assert WireEvent(data="d", retry=5).retry == 5 and WireEvent().headers == ()


def test_an_event_made_fast_is_still_immutable() -> None:
    event = new_event("x")
    with pytest.raises(AttributeError):
        event.data = "y"  # type: ignore[misc]
    assert event == WireEvent("x")
