from __future__ import annotations

import random
from typing import Any

import pytest

from harness.cassettes.outcome import State
from harness.mutate import build
from harness.mutate.wire import split_at
from tests._mutation_streams import all_points, apply, assert_oracle, stream_of


@pytest.mark.parametrize("how", ["random", "utf8", "line", "field", "byte", "whole", "pack", "split"])
def test_rechunk_keeps_bytes_and_meaning(how: str) -> None:
    stream = apply("insert-text", stream_of("openai-chat/parallel-2"), text="天気 ☀️ ")
    out = apply("rechunk", stream, how=how, seed=2)
    assert b"".join(out.current_reads()) == b"".join(stream.current_reads())
    if how == "byte":
        assert {len(r) for r in out.current_reads()} == {1}
    if how == "utf8":
        assert any(r[-1] >= 0xC0 for r in out.current_reads())
    assert_oracle(out)


def test_rechunk_eventstream_frames() -> None:
    stream = stream_of("bedrock-converse/seed000-parallel-read-search")
    for how in ("random", "byte", "pack", "split"):
        assert_oracle(apply("rechunk", stream, how=how, max_size=40))


@pytest.mark.parametrize("style,newline", [("crlf", b"\r\n\r\n"), ("cr", b"\r\r")])
def test_line_ends(style: str, newline: bytes) -> None:
    out = apply("line-ends", stream_of("anthropic/parallel-calls"), style=style)
    body = b"".join(out.current_reads())
    assert newline in body and (style == "cr") == (b"\n" not in body)
    assert_oracle(apply("rechunk", out, max_size=5))


def test_comments_multiline_and_no_space() -> None:
    stream = stream_of("openai-chat/parallel-2")
    commented = apply("sse-comments", stream, where="between")
    assert b": OPENROUTER PROCESSING" in b"".join(commented.current_reads())
    multi = apply("multiline-data", stream)
    assert b"\ndata:  " in b"".join(multi.current_reads())
    bare = apply("no-space", stream)
    assert b"data: " not in b"".join(bare.current_reads())
    for out in (commented, multi, bare):
        assert_oracle(out)


def test_cut_bytes_with_and_without_error() -> None:
    stream = stream_of("openai-chat/parallel-2")
    hard = apply("cut-bytes", stream, at=0.5, error=True)
    soft = apply("cut-bytes", stream, at=0.5, error=False)
    assert not hard.complete and soft.complete
    assert hard.expected.state is State.CUT
    assert_oracle(hard)
    assert_oracle(soft)


def test_cut_at_every_byte_is_sampled_with_the_seed() -> None:
    stream = stream_of("anthropic/parallel-calls")
    sweep = build("cut-at-every-byte", {"max_points": 10})
    first, again = all_points(sweep, stream, 4), all_points(sweep, stream, 4)
    assert len(first) == 10
    assert [s.current_reads() for s in first] == [s.current_reads() for s in again]
    for point in first:
        assert_oracle(point)


def test_split_at() -> None:
    assert split_at(b"abcdef", [2, 2, 4, 9]) == [b"ab", b"cd", b"ef"]


@pytest.mark.parametrize("largest", [1, 2, 7, 64, 1000])
def test_the_size_drawer_draws_what_randint_draws(largest: int) -> None:
    import random

    from harness.mutate.wire import size_drawer

    ours, theirs = random.Random(f"seed/{largest}"), random.Random(f"seed/{largest}")
    draw = size_drawer(ours, largest)
    assert [draw() for _ in range(500)] == [theirs.randint(1, largest) for _ in range(500)]


@pytest.mark.parametrize("largest", [1, 2, 7, 64, 1000])
def test_random_sizes_are_what_randint_draws(largest: int) -> None:
    import random

    from harness.mutate.wire import random_sizes

    class Subclassed(random.Random):  # another `_randbelow`: drawn through `size_drawer`
        pass

    theirs = random.Random(f"seed/{largest}")
    expected: list[int] = []
    while sum(expected) < 5000:
        expected.append(theirs.randint(1, largest))
    assert random_sizes(random.Random(f"seed/{largest}"), largest, 5000) == expected
    assert random_sizes(Subclassed(f"seed/{largest}"), largest, 5000) == expected


def test_every_multibyte_character_and_line_has_a_cut_inside() -> None:
    from harness.mutate.wire import _line_inner_offsets, _utf8_inner_offsets

    body = "data: é☀\r\n\r\nx\nab\rabc\n".encode()
    assert _utf8_inner_offsets(body) == [7, 9]
    assert _line_inner_offsets(body) == [5, 18, 21]


def test_sweep_points_are_the_offsets_whose_meaning_is_clear() -> None:
    import random
    from types import SimpleNamespace

    from harness.mutate.wire import _clear_points, _meaning_is_clear

    sse: Any = SimpleNamespace(dialect=SimpleNamespace(codec_name="sse"))
    rng = random.Random("clear-points")
    for _ in range(2000):
        sizes = [rng.randint(0, 8) for _ in range(rng.randint(1, 6))]
        parts = [bytes(rng.choice(b"ab\r\n") for _ in range(size)) for size in sizes]
        body, ends = b"".join(parts), [sum(map(len, parts[: i + 1])) for i in range(len(parts))]
        limit = rng.randint(0, max(0, len(body) - 1))
        one_by_one = [p for p in range(1, limit + 1) if _meaning_is_clear(sse, body, ends, p)]
        points = _clear_points(sse, body, ends, limit)
        assert list(points) == one_by_one, (parts, limit)
        # Read by position, as `random.sample` reads it: the same as the list.
        assert len(points) == len(one_by_one)
        assert [points[i] for i in range(-len(points), len(points))] == one_by_one * 2
        if one_by_one:
            k = rng.randint(1, len(one_by_one))
            assert random.Random(k).sample(points, k) == random.Random(k).sample(one_by_one, k)


def test_a_long_stream_sweep_samples_its_points_without_listing_them() -> None:
    import random
    import tracemalloc

    from harness.mutate.wire import _Offsets

    ranges = [range(start, start + 400_000) for start in range(1, 8_000_000, 500_000)]
    tracemalloc.start()
    try:
        points = _Offsets(ranges)
        drawn = sorted(random.Random(7).sample(points, 24))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(points) == 16 * 400_000 and peak < 100_000  # a list of them: 230 MB
    assert all(any(p in r for r in ranges) for p in drawn) and len(set(drawn)) == 24
    assert points[399_998:400_002] == [399_999, 400_000, 500_001, 500_002]
    with pytest.raises(IndexError):
        points[len(points)]


def test_a_split_left_for_later_gives_the_reads_the_split_gives_now() -> None:
    from harness.mutate.wire import random_sizes

    for name in (
        "openai-chat/parallel-2",
        "anthropic/parallel-calls",
        "bedrock-converse/seed000-parallel-read-search",
    ):
        stream = stream_of(name).with_events(stream_of(name).events)  # one read per event

        def split(body: bytes) -> list[bytes]:
            sizes, reads, pos = random_sizes(random.Random(7), 16, len(body)), [], 0
            for size in sizes:
                reads.append(body[pos : pos + size])
                pos += size
            return reads

        later, now = stream.with_split(split), stream.with_reads(split(stream.body()), same_events=True)
        assert later.fixed_reads and later.events is stream.events
        assert later.current_reads() == now.current_reads() and later.body() == now.body()
        # What a later step makes of it is what it makes of the reads cut at once.
        for step in ("cut-bytes", "rechunk"):
            assert apply(step, later, 3).current_reads() == apply(step, now, 3).current_reads()


def test_rechunk_draws_its_sizes_only_when_the_reads_are_asked_for() -> None:
    from harness.mutate.scenario import step_rng

    stream = stream_of("openai-chat/parallel-2")
    step = build("rechunk", {"how": "random", "max_size": 8})
    rng = step_rng(0, 0, step)
    out = step.apply(stream, rng)
    assert (
        out.reads is None
        and out.split is not None
        and rng.getstate() == random.Random(f"toolstream/0/0/{step.name}").getstate()
    ), "nothing drawn yet"
    eager = step.apply(stream, step_rng(0, 0, step)).current_reads()
    assert out.current_reads() == eager and len(eager) > len(stream.events)
