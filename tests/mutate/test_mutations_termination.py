from __future__ import annotations

import pytest

from harness.cassettes.outcome import State
from harness.mutate import build
from harness.mutate.calls import fragments_or_skip
from harness.wire.dialects import MISSING
from tests._mutation_streams import all_points, apply, assert_oracle, stream_of


@pytest.mark.parametrize(
    "name",
    [
        "openai-chat/parallel-2",
        "anthropic/parallel-calls",
        "bedrock-converse/seed000-parallel-read-search",
        "gemini/parallel-one-per-chunk",
    ],
)
def test_cut_at_every_event_expects_cut_and_only_final_calls(name: str) -> None:
    stream = stream_of(name)
    points = all_points(build("cut-at-every-event"), stream)
    assert len(points) > 3
    assert points[0].expected.tool_calls == () and points[0].expected.state is State.CUT
    for point in points:
        assert point.expected.tool_calls == stream.expected.tool_calls[: len(point.expected.tool_calls)]
        assert_oracle(point)


def test_cut_mid_args_never_keeps_the_partial_call() -> None:
    stream = stream_of("anthropic/parallel-calls")
    for call in range(len(stream.expected.tool_calls)):
        out = apply("cut-mid-args", stream, call=call)
        assert out.expected.state is State.CUT and len(out.expected.tool_calls) <= call
        assert not out.complete and out.error
        assert_oracle(out)


def test_clean_cut_has_no_transport_error() -> None:
    out = apply("cut", stream_of("openai-chat/parallel-2"), at=0.5, error=False)
    assert out.complete and out.error is None and out.expected.state is State.CUT
    assert_oracle(out)


@pytest.mark.parametrize(
    "name",
    ["openai-chat/parallel-2", "anthropic/parallel-calls", "ollama/parallel", "bedrock-converse/single-call"],
)
def test_injected_error_expects_error_state(name: str) -> None:
    out = apply("inject-error", stream_of(name))
    assert out.expected.state is State.ERROR
    assert_oracle(out)


def test_change_and_drop_finish() -> None:
    stream = stream_of("openai-chat/parallel-2")
    changed = apply("change-finish", stream, reason="stop")
    assert (
        changed.expected.finish_reason == "stop" and changed.expected.tool_calls == stream.expected.tool_calls
    )
    dropped = apply("drop-finish", stream)
    assert dropped.expected.finish_reason is None
    assert_oracle(changed)
    assert_oracle(dropped)


@pytest.mark.parametrize("to", ["with-last-args", "before-last-args"])
def test_move_finish_keeps_meaning(to: str) -> None:
    assert_oracle(apply("move-finish", stream_of("openai-chat/parallel-2"), to=to))


@pytest.mark.parametrize("name", ["drop-sentinel", "duplicate-sentinel", "duplicate-finish", "drop-calls"])
def test_sentinel_and_calls(name: str) -> None:
    assert_oracle(apply(name, stream_of("anthropic/parallel-calls")))


@pytest.mark.parametrize(
    "name",
    [
        "openai-chat/parallel-2",
        "anthropic/parallel-calls",
        "openai-responses/parallel-2",
        "bedrock-converse/seed000-parallel-read-search",
        "gemini/parallel-one-per-chunk",
    ],
)
def test_the_prefix_oracle_judges_every_prefix_as_the_reference_fed_from_the_start(name: str) -> None:
    from harness.mutate.calls import _PrefixOracle, reference_on

    stream = stream_of(name)
    d, events = stream.dialect, stream.events
    oracle = _PrefixOracle(d, events)
    tail = events[len(events) // 2 :]  # events that are not the base's own objects: fed to a copy
    # Forwards, then backwards (it starts again), with and without a cut, with a foreign tail.
    for n in [*range(len(events) + 1), *reversed(range(len(events) + 1))]:
        for error in (None, "cut"):
            assert oracle.outcome(events[:n], error) == reference_on(d, events[:n], error)
            mixed = (*events[:n], *tail)
            assert oracle.outcome(mixed, error) == reference_on(d, mixed, error)


def test_a_cut_inside_arguments_that_share_the_finish_chunk_loses_the_finish() -> None:
    """vLLM's shape (D2): the last argument fragment carries the finish. A cut inside that fragment
    cuts before the finish too: the call is not final, and the reference agrees (it used to keep
    the finish on the first half, expect the call, and fail the reference as a spec case)."""
    whole = apply("coalesce-args", stream_of("openai-chat/parallel-2"))  # each call's text in one piece
    shared = apply("move-finish", whole, to="with-last-args")
    last = len(shared.expected.tool_calls) - 1
    out = apply("cut-mid-args", shared, call=last)
    d = out.dialect
    assert all(d.finish_reason(event) is MISSING for event in out.events)
    assert out.expected.state is State.CUT and len(out.expected.tool_calls) < last + 1
    assert_oracle(out)


def test_a_split_keeps_the_finish_after_every_piece() -> None:
    whole = apply("coalesce-args", stream_of("openai-chat/parallel-2"))
    shared = apply("move-finish", whole, to="with-last-args")
    out = apply("split-args", shared, size=1)
    d = out.dialect
    finishes = [i for i, event in enumerate(out.events) if d.finish_reason(event) is not MISSING]
    assert len(finishes) == 1
    assert max(f.event for f in fragments_or_skip(out)) == finishes[0]
    assert out.expected == shared.expected
    assert_oracle(out)
