"""Search and shrink: random pipelines over the corpus against an accumulator, minimised on failure.

Hypothesis draws a cassette, a pipeline of 1-3 mutations and a case seed; a case fails when the
accumulator's outcome differs from the stated expectation (`harness.check.outcome.diff`) or it raises.
Hypothesis shrinks the pipeline; then the stream is shrunk by dropping events of the recorded
source while the failure persists, each time recomputing the source's expectation with the
dialect's reference accumulator and re-running the pipeline, so the expectation stays consistent.
The result is written as a cassette (`source.kind: synthesized`) and a scenario YAML.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol, cast

import yaml
from hypothesis import HealthCheck, find, settings
from hypothesis import strategies as st
from hypothesis.errors import NoSuchExample

from harness.cassettes.corpus import bundled, cassette_paths
from harness.cassettes.format import Cassette, Interaction, Request, Response, Source, save
from harness.check.outcome import Outcome, diff
from harness.errors import NotApplicable, UsageError
from harness.mutate import Mutation, Stream, build
from harness.mutate.calls import reference_on
from harness.mutate.scenario import Recording, Scenario, recordings, run_pipeline
from harness.wire.dialects import Event

__all__ = ["CATALOGUE", "Finding", "explore", "load_factory"]


class Accumulator(Protocol):
    def feed(self, event: Event) -> None: ...

    def close(self, error: str | None = None) -> Outcome: ...


# What the search draws from: a mutation name and its parameters.
CATALOGUE: tuple[tuple[str, dict[str, Any]], ...] = (
    ("set-field", {"field": "index", "value": 0}),
    ("drop-field", {"field": "id", "on": "continuations"}),
    ("drop-field", {"field": "index", "on": "continuations"}),
    ("null-field", {"field": "index", "on": "continuations"}),
    ("empty-field", {"field": "id", "on": "continuations"}),
    ("field-on-every-fragment", {"field": "id"}),
    ("field-on-every-fragment", {"field": "name"}),
    ("fresh-field-per-fragment", {"field": "id"}),
    ("shift-field", {"field": "index", "by": 1}),
    ("restyle-ids", {"style": "bedrock"}),
    ("restyle-ids", {"shrinking": True}),
    ("split-args", {"size": 1}),
    ("split-args", {"size": 4}),
    ("coalesce-args", {}),
    ("args-in-header", {}),
    ("pack-fragments", {}),
    ("pack-fragments", {"what": "calls"}),
    ("interleave", {}),
    ("interleave", {"pattern": "random"}),
    ("empty-args-fragment", {}),
    ("placeholder-args", {}),
    ("repeat-args-at-end", {}),
    ("split-name", {}),
    ("insert-text", {}),
    ("insert-reasoning", {}),
    ("usage-chunks", {}),
    ("duplicate-start", {"what": "message"}),
    ("change-finish", {}),
    ("move-finish", {}),
    ("drop-sentinel", {}),
    ("cut", {}),
    ("cut-mid-args", {}),
    ("inject-error", {}),
    ("rechunk", {}),
    ("rechunk", {"how": "byte"}),
    ("line-ends", {}),
    ("sse-comments", {}),
    ("multiline-data", {}),
)


@dataclass(frozen=True)
class Finding:
    """A minimal failing case: where it came from, the pipeline, the shrunk stream and the diff."""

    source: Path
    dialect: str
    steps: tuple[Mutation, ...]
    seed: int
    stream: Stream
    problems: tuple[str, ...]
    events_before: int
    request: Request
    like: Response
    written: tuple[Path, ...] = ()

    @property
    def events(self) -> int:
        return len(self.stream.events)


def load_factory(spec: str) -> Callable[[], Accumulator]:
    """`module:attr` naming an event-level accumulator class or a factory returning one."""
    from harness.check.accumulators import import_object

    factory = import_object(spec)
    if not callable(factory):
        raise UsageError(f"--accumulator {spec!r}: {spec.partition(':')[2]} is not callable")
    return cast(Callable[[], Accumulator], factory)


def _check(factory: Callable[[], Accumulator], stream: Stream) -> list[str]:
    """The differences between what the accumulator makes of a stream and the expectation."""
    reads = stream.current_reads()
    d = stream.dialect
    try:
        from harness.wire.codecs import decode_all

        events = [d.parse(w) for w in decode_all(d.codec(), reads)]
        acc = factory()
        for event in events:
            acc.feed(event)
        got = acc.close(None if stream.complete else (stream.error or "stream cut"))
    except Exception as exc:
        return [f"raised {type(exc).__name__}: {exc}"]
    return diff(stream.expected, got)


def _sources(cassettes: Iterable[str | Path] | None, only: Sequence[str] | None) -> list[Recording]:
    paths = cassette_paths(cassettes)
    roots = [Path(p) for p in cassettes] if cassettes else [bundled("cassettes")]
    out = [r for path in paths for r in recordings(path, roots) if not only or r.dialect.name in only]
    if not out:
        raise UsageError("no cassettes to explore (check --cassettes and --dialect)")
    return out


def _run(steps: Sequence[Mutation], stream: Stream, seed: int) -> Stream | None:
    try:
        results = run_pipeline(steps, stream, seed)
    except NotApplicable:
        return None
    return results[0][1] if results else None


def explore(
    accumulator_factory: Callable[[], Accumulator],
    cassettes: Iterable[str | Path] | None = None,
    *,
    dialect: Sequence[str] | None = None,
    max_examples: int = 300,
    seed: int | None = 0,
    out: str | Path | None = None,
) -> Finding | None:
    """Search for a failing case; shrink it; write it under `out` when given. None: none found."""
    sources = _sources(cassettes, dialect)
    steps_strategy = st.lists(st.sampled_from(CATALOGUE), min_size=1, max_size=3)
    strategy = st.tuples(st.integers(0, len(sources) - 1), steps_strategy, st.integers(0, 7))

    def fails(example: tuple[int, list[tuple[str, dict[str, Any]]], int]) -> bool:
        index, raw, case_seed = example
        source = sources[index]
        steps = [build(name, params) for name, params in raw]
        mutated = _run(
            steps, Stream.of(source.interaction.response, source.dialect, source.expected), case_seed
        )
        return mutated is not None and bool(_check(accumulator_factory, mutated))

    config = settings(
        max_examples=max_examples,
        database=None,
        deadline=None,
        derandomize=seed is not None,
        suppress_health_check=list(HealthCheck),
    )
    try:
        index, raw, case_seed = find(strategy, fails, settings=config)
    except NoSuchExample:
        return None
    source = sources[index]
    steps = tuple(build(name, params) for name, params in raw)
    finding = _shrink_stream(accumulator_factory, source, steps, case_seed)
    if out is not None:
        finding = replace(finding, written=write_finding(finding, Path(out)))
    return finding


def _source_stream(source: Recording, events: Sequence[Event]) -> Stream:
    """The recorded source reduced to `events`, its expectation recomputed by the reference."""
    expected = reference_on(
        source.dialect, events, None if source.interaction.response.complete else "stream cut"
    )
    base = Stream.of(source.interaction.response, source.dialect, source.expected)
    return replace(base.with_events(events), expected=expected)


def _shrink_stream(
    factory: Callable[[], Accumulator], source: Recording, steps: tuple[Mutation, ...], seed: int
) -> Finding:
    base = Stream.of(source.interaction.response, source.dialect, source.expected)
    events = list(base.events)

    def attempt(candidate: list[Event]) -> tuple[Stream, list[str]] | None:
        mutated = _run(steps, _source_stream(source, candidate), seed)
        if mutated is None:
            return None
        problems = _check(factory, mutated)
        return (mutated, problems) if problems else None

    best = attempt(events)
    if best is None:  # the full recorded events re-rendered no longer fail: keep the original reads
        mutated = _run(steps, base, seed)
        assert mutated is not None
        best = (mutated, _check(factory, mutated))
    else:
        # Delta debugging: drop runs of events, halving the run length, while it still fails.
        size = max(1, len(events) // 2)
        while size >= 1:
            start = 0
            while start < len(events):
                candidate = events[:start] + events[start + size :]
                found = attempt(candidate) if candidate else None
                if found is not None:
                    events, best = candidate, found
                else:
                    start += size
            size //= 2
    stream, problems = best
    return Finding(
        source=source.path,
        dialect=source.dialect.name,
        steps=steps,
        seed=seed,
        stream=stream,
        problems=tuple(problems),
        events_before=len(base.events),
        request=source.interaction.request,
        like=source.interaction.response,
    )


def write_finding(finding: Finding, out: Path) -> tuple[Path, Path]:
    """The shrunk stream as a cassette and the pipeline as a scenario YAML, side by side."""
    stem = f"explore-{finding.source.stem}-{'-'.join(s.name for s in finding.steps)}"[:100]
    pipeline = " | ".join(step.describe() for step in finding.steps)
    provenance = (
        f"shrunk by toolstream explore from {finding.source} ({finding.events_before} -> {finding.events} "
        f"events) with pipeline {pipeline}, seed {finding.seed}; failure: {'; '.join(finding.problems)}"
    )
    response = finding.stream.response(finding.like)
    cassette = Cassette(
        name=stem,
        source=Source("synthesized", provenance),
        interactions=[Interaction(finding.request, response, finding.stream.expected)],
        dialect=finding.dialect,
    )
    cassette_path = save(cassette, out / f"{stem}.cassette.yaml")
    scenario = Scenario(
        name=stem,
        description=f"Found by toolstream explore on {finding.source.name}: {'; '.join(finding.problems)}",
        steps=finding.steps,
        dialects=(finding.dialect,),
        seeds=(finding.seed,),
    )
    data = scenario.to_data()
    data.pop("meaning")
    scenario_path = out / f"{stem}.scenario.yaml"
    scenario_path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return cassette_path, scenario_path
