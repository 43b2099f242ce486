"""Search and shrink: random pipelines over the corpus against an accumulator, minimised on failure.

Hypothesis draws a cassette, a pipeline of 1-3 mutations and a case seed; a case fails when the
accumulator (any spec `check` takes, resolved by `harness.accumulators.resolve`) gets a
verdict on it that fails a `check` run, its class read from the pipeline's steps as `check` reads
a scenario's (a case a policy step made only warns: no finding). Hypothesis shrinks the pipeline; then
`harness.search.shrink` drops events of the recorded source while the failure keeps its signature
and the mutated stream ends as it did, each time recomputing the source's expectation with the
dialect's reference accumulator and re-running the pipeline, so the expectation stays consistent.
The result is written as a cassette (`source.kind: synthesized`) and a scenario YAML.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, find, settings
from hypothesis import strategies as st
from hypothesis.errors import NoSuchExample

from harness import files
from harness.accumulators import Accumulator, dialects_of, prepare, resolve
from harness.cassettes.format import Cassette, Interaction, Request, Response, Source, save
from harness.cassettes.model import Declared
from harness.errors import NotApplicable, UsageError
from harness.matrix.judging import judge
from harness.matrix.selection import Matrix, Selection
from harness.mutate import Mutation, Stream, build
from harness.mutate.calls import reference_on
from harness.mutate.scenario import Case, RecordedStream, Scenario, case_of_stream, run_pipeline
from harness.oracle.expectation import declaration, stream_rules
from harness.oracle.verdict import Result, Verdict, character, signature
from harness.search.shrink import DEFAULT_BUDGET, ExitReason, shrink
from harness.text.shared import shared_name, without_machine_paths
from harness.wire.dialects import Event

__all__ = ["CATALOGUE", "Finding", "explore", "write_finding"]

EXPLORE = "explore"  # the scenario name of its cases

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
    """A minimal failing case: where it came from, the pipeline, the shrunk stream, the failure
    (its lines and signature) and why the shrinker stopped."""

    source: Path
    dialect: str
    steps: tuple[Mutation, ...]
    seed: int
    stream: Stream
    problems: tuple[str, ...]
    signature: str
    reason: ExitReason
    events_before: int
    request: Request
    like: Response
    declared: Declared | None = None  # the found case's class, when not spec: its cassette says it
    written: tuple[Path, ...] = ()

    @property
    def events(self) -> int:
        return len(self.stream.events)


def _judged(
    accumulator: Accumulator,
    name: str,
    source: RecordedStream,
    mutated: Stream,
    seed: int,
    pipeline: Scenario,
) -> Result:
    """The verdict `check` gives the case: its class read from the pipeline's steps (a case a
    policy step made only warns, so it is no finding)."""
    return judge(accumulator, name, _case(source, mutated, seed), pipeline)


def _pipeline(steps: Sequence[Mutation]) -> Scenario:
    """The pipeline as the scenario `classify` reads a case's class from."""
    return Scenario(name=EXPLORE, description="", steps=tuple(steps))


def _case(source: RecordedStream, mutated: Stream, seed: int) -> Case:
    return case_of_stream(source, mutated, EXPLORE, seed)


def _problems(result: Result) -> tuple[str, ...]:
    if result.verdict is Verdict.FAIL:
        return result.diff
    return (f"{result.verdict}: {result.error or '-'}",)


def _sources(cassettes: Iterable[str | Path] | None, only: Sequence[str] | None) -> list[RecordedStream]:
    selection = Selection(cassettes=tuple(str(c) for c in cassettes or ()), dialects=tuple(only or ()))
    matrix = Matrix(selection, scenarios=[])
    out = [source for path in matrix.cassette_files() for source in matrix.sources(path)]
    if not out:
        raise UsageError("no cassettes to explore (check --cassettes and --dialect)")
    return out


def _run(steps: Sequence[Mutation], stream: Stream, seed: int) -> Stream | None:
    try:
        results = run_pipeline(steps, stream, seed)
    except NotApplicable:
        return None
    return results[0][1] if results else None


def _recorded(source: RecordedStream) -> Stream:
    return Stream.of(source.interaction.response, source.dialect, source.expected, source.interaction.request)


def _ready(accumulator: Accumulator, name: str, source: RecordedStream) -> None:
    """A usage error when the accumulator cannot run at all (not loadable, not constructible, a
    command that does not start): tried on an unmutated recorded stream before the search."""
    result = _judged(accumulator, name, source, _recorded(source), 0, _pipeline(()))
    if result.verdict in (Verdict.ERROR, Verdict.TIMEOUT):
        raise UsageError(
            f"accumulator {name!r} cannot run: on the unmutated {source.id} ({source.dialect.name}) "
            f"it gave {result.verdict}: {result.error}; explore searches for mutated streams it gets "
            "wrong (pick its dialects with --dialect; `toolstream check --scenarios original` shows "
            "the recorded streams it fails on)"
        )


def explore(
    accumulator: str | Any,
    cassettes: Iterable[str | Path] | None = None,
    *,
    dialect: Sequence[str] | None = None,
    max_examples: int = 300,
    seed: int | None = 0,
    out: str | Path | None = None,
    budget: int = DEFAULT_BUDGET,
) -> Finding | None:
    """Search for a failing case; shrink it; write it under `out` when given. None: none found.

    `accumulator` is any spec `check` takes (or an object `resolve` wraps); one that cannot be
    resolved or run at all is a `UsageError`, never a finding."""
    name = accumulator if isinstance(accumulator, str) else getattr(accumulator, "__name__", "accumulator")
    resolved = resolve(accumulator)
    declared = dialects_of(resolved)
    if declared is not None:  # only the dialects it reads, as check and the pytest plugin skip the rest
        given = dialect
        dialect = [d for d in (given or declared) if d in declared]
        if not dialect:
            raise UsageError(
                f"accumulator {name!r} reads only {', '.join(declared)}; --dialect {' '.join(given or ())} "
                "leaves nothing to explore"
            )
    prepare(resolved, name)
    try:
        sources = _sources(cassettes, dialect)
        _ready(resolved, name, sources[0])
        return _search(resolved, name, sources, max_examples, seed, out, budget)
    finally:
        resolved.shutdown()


def _search(
    accumulator: Accumulator,
    name: str,
    sources: Sequence[RecordedStream],
    max_examples: int,
    seed: int | None,
    out: str | Path | None,
    budget: int,
) -> Finding | None:
    steps_strategy = st.lists(st.sampled_from(CATALOGUE), min_size=1, max_size=3)
    strategy = st.tuples(st.integers(0, len(sources) - 1), steps_strategy, st.integers(0, 7))

    def fails(example: tuple[int, list[tuple[str, dict[str, Any]]], int]) -> bool:
        index, raw, case_seed = example
        source = sources[index]
        steps = [build(n, params) for n, params in raw]
        mutated = _run(steps, _recorded(source), case_seed)
        if mutated is None:
            return False
        return _judged(accumulator, name, source, mutated, case_seed, _pipeline(steps)).failed

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
    steps = tuple(build(n, params) for n, params in raw)
    finding = _shrink_finding(accumulator, name, sources[index], steps, case_seed, budget)
    if out is not None:
        finding = replace(finding, written=write_finding(finding, Path(out)))
    return finding


def _source_stream(source: RecordedStream, events: Sequence[Event]) -> Stream:
    """The recorded source reduced to `events`, its expectation recomputed by the reference."""
    expected = reference_on(
        source.dialect, events, None if source.interaction.response.complete else "stream cut"
    )
    return replace(_recorded(source).with_events(events), expected=expected)


def _shrink_finding(
    accumulator: Accumulator,
    name: str,
    source: RecordedStream,
    steps: tuple[Mutation, ...],
    seed: int,
    budget: int,
) -> Finding:
    """The failure on the recorded reads, then the fewest source events that fail the same way:
    the same signature, and a mutated stream that ends as the found one did."""
    base = _recorded(source)
    found = _run(steps, base, seed)
    assert found is not None  # the search ran this very pipeline on these reads
    pipeline = _pipeline(steps)
    first = _judged(accumulator, name, source, found, seed, pipeline)
    # The same character (signature, severities), state and stream rules (the ending's, the protocol's).
    target = (character(first), found.expected.state, stream_rules(_case(source, found, seed)))
    kept: dict[tuple[int, ...], tuple[Stream, Result]] = {}  # by the identity of the events kept

    def same_failure(events: tuple[Event, ...]) -> bool:
        mutated = _run(steps, _source_stream(source, events), seed)
        if mutated is None:
            return False
        result = _judged(accumulator, name, source, mutated, seed, pipeline)
        rules = stream_rules(_case(source, mutated, seed))
        if not result.failed or (character(result), mutated.expected.state, rules) != target:
            return False
        kept[tuple(map(id, events))] = (mutated, result)
        return True

    shrunk = shrink(base.events, same_failure, budget)
    # Re-rendering the events one per read may lose a failure that lives in the reads: keep those.
    stream, result = (
        (found, first) if shrunk.reason is ExitReason.UNREPRODUCIBLE else kept[tuple(map(id, shrunk.items))]
    )
    return Finding(
        source=source.path,
        dialect=source.dialect.name,
        steps=steps,
        seed=seed,
        stream=stream,
        problems=_problems(result),
        signature=signature(result),
        reason=shrunk.reason,
        events_before=len(base.events),
        request=source.interaction.request,
        like=source.interaction.response,
        declared=declaration(_case(source, stream, seed), pipeline),
    )


def write_finding(finding: Finding, out: Path) -> tuple[Path, Path]:
    """The shrunk stream as a cassette and the pipeline as a scenario YAML, side by side."""
    stem = f"explore-{finding.source.stem}-{'-'.join(s.name for s in finding.steps)}"[:100]
    pipeline = " | ".join(step.describe() for step in finding.steps)
    # Written to be shared: the source by its corpus name or its path from here, no machine folder.
    provenance = without_machine_paths(
        f"shrunk by toolstream explore from {shared_name(finding.source)} "
        f"({finding.events_before} -> {finding.events} events, shrinking {finding.reason}) "
        f"with pipeline {pipeline}, seed {finding.seed}; "
        f"failure ({finding.signature}): {'; '.join(finding.problems)}"
    )
    response = finding.stream.response(finding.like)
    cassette = Cassette(
        name=stem,
        source=Source("synthesized", provenance),
        interactions=[Interaction(finding.request, response, finding.stream.expected, finding.declared)],
        dialect=finding.dialect,
    )
    cassette_path = save(cassette, out / f"{stem}.cassette.yaml")
    scenario = Scenario(
        name=stem,
        description=without_machine_paths(
            f"Found by toolstream explore on {finding.source.name}: {'; '.join(finding.problems)}"
        ),
        steps=finding.steps,
        dialects=(finding.dialect,),
        seeds=(finding.seed,),
    )
    data = scenario.to_data()
    data.pop("meaning")
    scenario_path = out / f"{stem}.scenario.yaml"
    files.write(scenario_path, yaml.safe_dump(data, sort_keys=False, allow_unicode=True).encode("utf-8"))
    return cassette_path, scenario_path
