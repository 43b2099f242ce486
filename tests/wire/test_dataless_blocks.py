"""SSE blocks without a `data:` line (`event: ping`, `retry: 10000`) reach the client as the
provider sent them, in place, through decode -> mutate -> encode; accumulators are not fed them."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.accumulators.event_level import EventLevel
from harness.cassettes.corpus import bundled
from harness.cassettes.format import Chunk, load, save
from harness.cassettes.outcome import Outcome
from harness.mutate import Meaning, Stream
from harness.mutate.scenario import cases_for, load_scenarios, recorded_streams
from harness.wire import dialects
from harness.wire.codecs import SSECodec, decode_all
from harness.wire.dialects import Event, Kind

RETRY = b"retry: 10000\n\n"
PING = b"event: ping\n\n"


def with_blocks(body: bytes) -> bytes:
    """An Anthropic body with `retry: 10000` before everything and a data-less ping after the first event."""
    first = body.index(b"\n\n") + 2
    return RETRY + body[:first] + PING + body[first:]


@pytest.fixture
def cassette_path(tmp_path: Path) -> Path:
    cassette = load(bundled("cassettes") / "anthropic/single-call.yaml")
    response = cassette.interactions[0].response
    response.chunks = [Chunk(with_blocks(response.body))]
    path = tmp_path / "anthropic" / "pinged.yaml"
    path.parent.mkdir()
    save(cassette, path)
    return path


def blocks_in_place(body: bytes) -> bool:
    """The retry block comes before the first event, and the ping block after `message_start` (pings
    and duplicate starts a mutation inserted aside)."""
    wire = decode_all(SSECodec(), [body.replace(b"\r\n", b"\n").replace(b"\r", b"\n")])
    kept = [(n, w.block) for n, w in enumerate(wire) if w.block is not None]
    if [block for _, block in kept] != ["retry: 10000", "event: ping"]:
        return False
    before = [[w.name for w in wire[:n] if not w.is_comment and w.name != "ping"] for n, _ in kept]
    return before[0] == [] and before[1] != [] and set(before[1]) == {"message_start"}


def test_decode_then_encode_keeps_the_blocks_byte_for_byte(cassette_path: Path) -> None:
    response = load(cassette_path).interactions[0].response
    d = dialects.get("anthropic")
    stream = Stream.of(response, d, dialects.reference_outcome(response, d))
    re_encoded = stream.with_events(stream.events)  # every event rendered again, one read each
    assert b"".join(re_encoded.current_reads()) == response.body
    blocks = [e for e in stream.events if e.wire.block is not None]
    assert [d.kinds(e) for e in blocks] == [frozenset({Kind.COMMENT})] * 2


def test_meaning_preserving_scenarios_keep_the_blocks_in_place(cassette_path: Path) -> None:
    (source,) = recorded_streams(cassette_path, [cassette_path.parent.parent])
    scenarios = load_scenarios()
    preserving = [s for s in scenarios if s.meaning is Meaning.PRESERVING and s.applies_to("anthropic")]
    cases = [case for scenario in preserving for case in cases_for(source, scenario, 0)]
    assert len(cases) > 10
    lost = [case.id for case in cases if not blocks_in_place(case.response.body)]
    assert lost == []


def test_accumulators_are_not_fed_blocks_without_data(cassette_path: Path) -> None:
    (source,) = recorded_streams(cassette_path, [cassette_path.parent.parent])
    (scenario,) = [s for s in load_scenarios() if s.name == "F3-event-split-across-reads"]
    (case,) = cases_for(source, scenario, 0)
    fed: list[Event] = []

    class Recorder:
        def __init__(self, dialect: str) -> None:
            self.reference = dialects.reference_accumulator(dialect)

        def feed(self, event: Event) -> None:
            fed.append(event)
            self.reference.feed(event)

        def close(self, error: str | None = None) -> Outcome:
            return self.reference.close(error)

    outcome = EventLevel(Recorder, "recorder").run(case)
    assert fed and all(event.wire.block is None and event.wire.data for event in fed)
    assert outcome == case.expected


SSE_STREAMS = [
    "anthropic/single-call", "openai-chat/parallel-2", "openai-responses/single-call", "cohere/single-call"
]


@pytest.mark.parametrize("name", SSE_STREAMS)
def test_blocks_without_data_break_no_invariant_even_after_the_end(name: str) -> None:
    cassette = load(bundled("cassettes") / f"{name}.yaml")
    d = dialects.get(cassette.dialect or "")
    body = cassette.interactions[0].response.body
    wire = decode_all(d.codec(), [RETRY + body + PING])
    assert d.invariants([d.parse(w) for w in wire]) == []
