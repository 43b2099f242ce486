"""Streams the mutation tests share: corpus cassettes and builder-made streams as `Stream`s, and a
reference check."""

from __future__ import annotations

import dataclasses
import random
from typing import Any

from harness.cassettes.corpus import bundled
from harness.cassettes.format import load
from harness.cassettes.outcome import Outcome, diff
from harness.mutate import Mutation, Stream, build
from harness.mutate.scenario import run_pipeline
from harness.wire import dialects
from harness.wire.codecs import decode_all
from harness.wire.dialects import Kind
from harness.wire.synthesis import synthesize


def stream_of(name: str, **asked: Any) -> Stream:
    """A bundled cassette (`openai-chat/parallel-2`) as a stream with its expected outcome, the
    answer to its recorded request with `asked` set in the body (`n=3`)."""
    cassette = load(bundled("cassettes") / f"{name}.yaml")
    interaction = cassette.interactions[0]
    d = dialects.get(cassette.dialect or "")
    expected = interaction.expected or dialects.reference_outcome(interaction.response, d)
    request = interaction.request
    if asked:
        request = dataclasses.replace(request, body={**request.body, **asked})
    return Stream.of(interaction.response, d, expected, request)


def reference(stream: Stream) -> Outcome:
    """What the dialect's reference accumulator makes of the stream's bytes, read by read."""
    d = stream.dialect
    acc = d.accumulator()
    for wire in decode_all(d.codec(), stream.current_reads()):
        acc.feed(d.parse(wire))
    return acc.close(None if stream.complete else stream.error)


def apply(name: str, stream: Stream, seed: int = 0, **params: object) -> Stream:
    return build(name, params).apply(stream, random.Random(seed))


def all_points(mutation: Mutation, stream: Stream, seed: int = 0) -> list[Stream]:
    return [s for _, s in run_pipeline([mutation], stream, seed)]


def assert_oracle(stream: Stream) -> None:
    """The stated expectation is what the reference accumulator reaches."""
    assert diff(stream.expected, reference(stream)) == []


def built(dialect: str, *kinds_and_params: tuple[Kind, dict[str, Any]]) -> Stream:
    """A stream of the dialect's own builders' events, expected what its reference makes of it."""
    d = dialects.get(dialect)
    events = [event for kind, params in kinds_and_params for event in d.build(kind, **params)]
    cassette = synthesize("built", dialect, url="https://x/v1", body={}, events=[d.render(e) for e in events],
                          provenance="test")  # fmt: skip
    interaction = cassette.interactions[0]
    return Stream.of(interaction.response, d, interaction.expected or Outcome())
