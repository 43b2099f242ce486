"""Declarative scenarios: a named pipeline of mutations, the dialects it applies to, its seeds.

    name: parallel-calls-share-index-0
    description: Every parallel call at index 0 (seed 000, A1).
    dialects: [openai-chat]          # or: all
    steps:
      - set-field: {field: index, value: 0}
      - rechunk: {how: random}
    seeds: 3                          # or a list: [0, 7, 42]
    meaning: changing                 # optional; checked against the steps

A case is one cassette run through one scenario with one seed; its id
`cassette::scenario::s<seed>` (plus `::<point>` for a sweep such as `cut-at-every-event`)
replays the identical stream anywhere: every random step draws from an RNG derived from the case
seed and the step's position. A scenario whose steps do not apply to a cassette (no tool calls,
another dialect) is skipped for it.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any, cast

from harness.cassettes.corpus import bundled
from harness.cassettes.model import Cassette, Chunk, Declared, Interaction, Response, Source
from harness.cassettes.outcome import Outcome, coherent
from harness.errors import MutationError, NotApplicable, ScenarioError, UsageError, did_you_mean, in_cassette
from harness.mutate import Meaning, Mutation, Stream, build, evolve
from harness.mutate.case import Case, Conversation, DeferredResponse
from harness.wire import dialects
from harness.wire.codecs import decode_all
from harness.wire.dialects import Dialect, Event

__all__ = [
    "MAX_SEED",
    "MAX_SEEDS",
    "Case",
    "Conversation",
    "DeferredResponse",
    "RecordedStream",
    "Scenario",
    "case_cassette",
    "case_of_stream",
    "case_with_events",
    "cases_for",
    "cassette_id",
    "cassette_ids",
    "find_scenario",
    "is_scenario_path",
    "load_scenario",
    "load_scenarios",
    "recorded_streams",
    "run_pipeline",
    "scenario_from_data",
]

SEPARATOR = "::"
# More seeds than this is a typo, not a run anyone waits for; a seed is a 64-bit value.
MAX_SEEDS = 10_000
MAX_SEED = 2**63 - 1


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    steps: tuple[Mutation, ...]
    dialects: tuple[str, ...] | None = None  # None: all
    seeds: tuple[int, ...] = (0,)
    meaning: Meaning = Meaning.PRESERVING
    path: Path | None = field(default=None, compare=False)

    def applies_to(self, dialect: str) -> bool:
        return self.dialects is None or dialect in self.dialects

    def to_data(self) -> dict[str, Any]:
        """Plain YAML-ready data (what `load_scenario` reads back)."""
        return {
            "name": self.name,
            "description": self.description,
            "dialects": "all" if self.dialects is None else list(self.dialects),
            "steps": [{step.name: _plain(step.params())} for step in self.steps],
            "seeds": list(self.seeds),
            "meaning": str(self.meaning),
        }


def _plain(params: Mapping[str, Any]) -> dict[str, Any]:
    return {k: list(v) if isinstance(v, tuple) else v for k, v in params.items()}


# ---------------------------------------------------------------------------------------------
# Loading


MAX_SCENARIO_BYTES = 16 * 1024 * 1024  # a scenario is a few lines of steps


def load_scenario(path: str | Path) -> Scenario:
    import yaml  # the YAML reader is loaded by what reads files, not by what only runs cases

    from harness import bounded
    from harness.bounded.yaml import plain_data

    path = Path(path)
    try:
        data = plain_data(bounded.read(path, MAX_SCENARIO_BYTES).decode("utf-8"), path, error=ScenarioError)
    except bounded.TooLarge:
        raise ScenarioError(
            f"{path}: over the {MAX_SCENARIO_BYTES:,} bytes a scenario file may have"
        ) from None
    except FileNotFoundError:
        raise ScenarioError(f"{path}: no such scenario file") from None
    except UnicodeDecodeError as exc:
        raise ScenarioError(f"{path}: not a UTF-8 text file (byte {exc.start})") from None
    except OSError as exc:
        raise ScenarioError(f"{path}: cannot read: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        raise ScenarioError(f"{where}: broken YAML: {getattr(exc, 'problem', exc)}") from None
    return scenario_from_data(data, where=str(path), path=path)


def scenario_from_data(data: Any, *, where: str = "<scenario>", path: Path | None = None) -> Scenario:
    """Build and check a scenario from plain data; errors name the file and the field."""

    def fail(field_name: str, message: str) -> ScenarioError:
        return ScenarioError(f"{where}: {field_name}: {message}" if field_name else f"{where}: {message}")

    if not isinstance(data, Mapping):
        raise fail("", "a scenario must be a mapping with name, description, dialects and steps")
    known = {"name", "description", "dialects", "steps", "seeds", "meaning"}
    for key in data:
        if key not in known:
            raise fail(str(key), f"unknown field (fields: {', '.join(sorted(known))})")
    name = data.get("name")
    if not isinstance(name, str) or not name or SEPARATOR in name:
        raise fail("name", "must be a non-empty string without '::'")
    description = data.get("description", "")
    if not isinstance(description, str):
        raise fail("description", "must be a string")
    scope = data.get("dialects", "all")
    chosen: tuple[str, ...] | None
    if scope == "all":
        chosen = None
    elif isinstance(scope, list) and scope and all(isinstance(s, str) for s in scope):
        unknown = [s for s in scope if s not in dialects.names()]
        if unknown:
            raise fail("dialects", f"unknown dialect {unknown[0]!r}; known: {', '.join(dialects.names())}")
        chosen = tuple(scope)
    else:
        raise fail("dialects", "must be `all` or a list of dialect names")
    raw_steps = data.get("steps")
    if not isinstance(raw_steps, list) or not raw_steps:
        raise fail("steps", "must be a non-empty list of {mutation-name: {params}}")
    steps: list[Mutation] = []
    for i, raw in enumerate(raw_steps):
        where_step = f"steps[{i}]"
        if isinstance(raw, str):
            raw = {raw: {}}
        if not isinstance(raw, Mapping) or len(raw) != 1:
            raise fail(where_step, "must be one {mutation-name: {params}} mapping")
        ((step_name, params),) = raw.items()
        if params is None:
            params = {}
        if not isinstance(params, Mapping):
            raise fail(f"{where_step}.{step_name}", "parameters must be a mapping")
        try:
            steps.append(build(str(step_name), params))
        except MutationError as exc:
            raise fail(where_step, str(exc)) from None
    if sum(1 for step in steps if _is_sweep(step)) > 1:
        raise fail("steps", "at most one sweep step (cut-at-every-event, cut-at-every-byte)")
    seeds_raw = data.get("seeds", 1)
    if isinstance(seeds_raw, int) and not isinstance(seeds_raw, bool) and 0 < seeds_raw <= MAX_SEEDS:
        seeds = tuple(range(seeds_raw))
    elif (
        isinstance(seeds_raw, list)
        and 0 < len(seeds_raw) <= MAX_SEEDS
        and all(isinstance(s, int) and not isinstance(s, bool) and 0 <= s <= MAX_SEED for s in seeds_raw)
    ):
        seeds = tuple(seeds_raw)
    else:
        raise fail(
            "seeds",
            f"must be a count from 1 to {MAX_SEEDS} or a list of at most {MAX_SEEDS} integers "
            f"from 0 to {MAX_SEED}",
        )
    derived = Meaning.CHANGING if any(s.meaning is Meaning.CHANGING for s in steps) else Meaning.PRESERVING
    meaning = derived
    if "meaning" in data:
        try:
            meaning = Meaning(data["meaning"])
        except ValueError:
            raise fail("meaning", "must be `preserving` or `changing`") from None
        if meaning is Meaning.PRESERVING and derived is Meaning.CHANGING:
            changing = next(s.name for s in steps if s.meaning is Meaning.CHANGING)
            raise fail("meaning", f"declared preserving, but step {changing!r} changes the meaning")
    return Scenario(name, description, tuple(steps), chosen, seeds, meaning, path)


def _is_sweep(step: Mutation) -> bool:
    return type(step).sweep is not Mutation.sweep


def scenario_paths(paths: Iterable[str | Path] | None = None) -> list[Path]:
    roots = [Path(p) for p in paths] if paths else [bundled("scenarios")]
    out: list[Path] = []
    for root in roots:
        if root.is_dir():
            out.extend(sorted(p for p in root.glob("*.y*ml") if p.is_file()))
        elif root.is_file():
            out.append(root)
        else:
            raise ScenarioError(f"{root}: no such scenario file or folder")
    return out


def load_scenarios(
    paths: Iterable[str | Path] | None = None, *, load: Callable[[Path], Scenario] | None = None
) -> list[Scenario]:
    """Scenarios from files and folders (default: the bundled library), checked for unique names.
    `load`: reads one file (default `load_scenario`; the built-case store keeps them parsed)."""
    out: dict[str, Scenario] = {}
    for path in scenario_paths(paths):
        found = (load or load_scenario)(path)
        if found.name in out:
            raise ScenarioError(f"{path}: name: {found.name!r} is also the name of {out[found.name].path}")
        out[found.name] = found
    return list(out.values())


def is_scenario_path(item: str | Path) -> bool:
    """The one rule for a scenario argument: a path when it ends in `.yaml`/`.yml` (it must
    exist) or names an existing folder; anything else is a scenario name."""
    path = Path(item)
    return path.suffix in (".yaml", ".yml") or path.is_dir()


def find_scenario(name: str, scenarios: Sequence[Scenario] | None = None) -> Scenario:
    """A scenario by name (from `scenarios`, default the bundled library), or by its file."""
    if is_scenario_path(name):
        found = load_scenarios([name])
        if len(found) != 1:
            raise ScenarioError(f"{name}: holds {len(found)} scenarios; name one of them")
        return found[0]
    pool = load_scenarios() if scenarios is None else scenarios
    for scenario in pool:
        if scenario.name == name:
            return scenario
    hint = did_you_mean(name, [s.name for s in pool])
    raise ScenarioError(f"unknown scenario {name!r}{hint or '; `toolstream scenarios` lists them'}")


# ---------------------------------------------------------------------------------------------
# Running a pipeline


def step_rng(seed: int, position: int, step: Mutation) -> random.Random:
    """The RNG of one step of one case: the same seed and position always draw the same values."""
    return _SeededOnUse(f"toolstream/{seed}/{position}/{step.name}")


class _SeededOnUse(random.Random):
    """`random.Random(text)`, seeded at its first draw: seeding (a SHA-512 and the whole Mersenne
    Twister state) costs more than most steps' whole work, and most steps draw nothing. Every draw
    goes through `random` or `getrandbits`; once seeded, those are the base class's own again."""

    def __init__(self, text: str | None = None) -> None:  # not super().__init__: it seeds at once
        self.gauss_next = None
        self._pending = True
        self._text = text

    def _seed_now(self) -> None:
        if self._pending:
            self.seed(self._text)

    def random(self) -> float:
        self._seed_now()
        return super().random()

    def getrandbits(self, k: int, /) -> int:
        self._seed_now()  # a caller may hold this method from before the first draw: seed once
        return super().getrandbits(k)

    def seed(self, a: Any = None, version: int = 2) -> None:
        super().seed(a, version)
        self._seeded()

    def getstate(self) -> tuple[Any, ...]:
        self._seed_now()
        return super().getstate()

    def setstate(self, state: tuple[Any, ...]) -> None:
        super().setstate(state)
        self._seeded()

    def _seeded(self) -> None:
        self._pending = False
        # Instance attributes shadow the methods above: later draws pay nothing for the laziness.
        self.random = super().random  # type: ignore[method-assign]
        self.getrandbits = super().getrandbits  # type: ignore[method-assign]


def run_pipeline(
    steps: Sequence[Mutation],
    stream: Stream,
    seed: int,
    point: str | None = None,
    *,
    known: Known | None = None,
) -> list[tuple[str | None, Stream]]:
    """Apply steps in order; a sweep step fans out into one stream per point (only `point` when
    given). Raises `NotApplicable` when a step has nothing to work on. `known`: what first steps
    that drew nothing made of this very `stream` before (`_applied`), kept by the caller for one
    run, so scenarios and seeds that begin alike share the work."""
    current: list[tuple[str | None, Stream]] = [(None, stream)]
    seeded = False  # whether a step so far drew from its RNG: the streams then depend on the seed
    for position, step in enumerate(steps):
        step.check_codec(stream)
        nxt: list[tuple[str | None, Stream]] = []
        for label, item in current:
            # One RNG per stream: each point of an earlier sweep draws what it draws when its case
            # is rebuilt alone from its id, and a step may draw late (`Stream.with_split`).
            rng = step_rng(seed, position, step)
            points = step.sweep(item, rng)
            if points is None:
                if known is not None and not seeded:
                    out, kept = _applied(known, tuple(steps[: position + 1]), item, rng)
                    seeded = not kept  # what comes next no longer follows from the steps alone
                else:
                    out = step.apply(item, rng)
                nxt.append((label, out))
                continue
            seeded = True  # points apart: none is shared
            chosen = [(p, m) for p, m in points if point is None or p == point]
            if point is not None and not chosen:
                raise NotApplicable(f"no sweep point {point!r} in this stream")
            for p, m in chosen:
                nxt.append((p, m.apply(item, step_rng(seed, position, step))))
        current = nxt
    return current


# What a pipeline's first steps made of one recorded stream, by those steps (`run_pipeline`).
Known = dict[tuple[Mutation, ...], Stream | NotApplicable]


def _applied(
    known: Known, steps: tuple[Mutation, ...], stream: Stream, rng: random.Random
) -> tuple[Stream, bool]:
    """`steps[-1].apply(stream, rng)`, where `stream` is what `steps[:-1]` made of a recording
    (kept in `known`), and whether the result is kept there too: when this step drew nothing from
    its RNG, the result depends on the steps' parameters and the recording alone, and the next
    scenario or seed with the same first steps gets it again. Not kept: a step that left work for
    later (`Stream.with_split` keeps its RNG to draw from), or a user's (it may keep state)."""
    step = steps[-1]
    try:
        found = known.get(steps)
    except TypeError:  # a parameter that cannot be hashed (a list): not kept
        return step.apply(stream, rng), False
    if isinstance(found, NotApplicable):
        raise NotApplicable(*found.args)
    if found is not None:
        return found, True
    ours = type(step).__module__.startswith(_OWN_MUTATIONS)
    try:
        out = step.apply(stream, rng)
    except NotApplicable as exc:
        if ours and _drew_nothing(rng):
            known[steps] = NotApplicable(*exc.args)
        raise
    kept = ours and _drew_nothing(rng) and (out.split is None or out.split is stream.split)
    if kept:
        known[steps] = out
    return out, kept


_OWN_MUTATIONS = "harness.mutate."


def _drew_nothing(rng: random.Random) -> bool:
    return isinstance(rng, _SeededOnUse) and rng._pending


# ---------------------------------------------------------------------------------------------
# Cases


@dataclass(frozen=True)
class RecordedStream:
    """One recorded streamed response that cases are built from: its interaction (and its place
    in the cassette, from 0), dialect, case-id base and expectation; in a conversation, the turns
    around it."""

    id: str
    path: Path
    dialect: Dialect
    interaction: Interaction
    expected: Outcome
    number: int = 0
    conversation: Conversation | None = None

    @cached_property
    def stream(self) -> Stream:
        """The recorded response as a `Stream`, decoded once (streams and events are immutable);
        bytes its dialect cannot decode are a `CassetteError` naming the file and interaction."""
        with in_cassette(self.path, f"interactions[{self.number}].response"):
            item = self.interaction
            stream = Stream.of(item.response, self.dialect, self.expected, item.request)
            dialects.check_recorded(self.dialect, stream.events, complete=stream.complete)
            return stream


def cassette_id(path: Path, roots: Sequence[Path]) -> str:
    """A cassette's name in case ids: its path below the bundled corpus (`openai-chat/parallel-2`),
    else below the parent of the folder it was found in, so that `--cassettes cassettes/openai-chat`
    still says `openai-chat/...` and two dialects' `single-call` never share an id."""
    return cassette_ids([path], roots)[0]


def cassette_ids(paths: Sequence[Path], roots: Sequence[Path]) -> list[str]:
    """`cassette_id` of each path, the folders they are named below resolved once for all."""
    bases = [corpus_root] if (corpus_root := _bundled_cassettes()) else []
    bases += [(root.resolve() if root.is_dir() else root.resolve().parent).parent for root in roots]
    return [_cassette_name(path, bases) for path in paths]


def _cassette_name(path: Path, bases: Sequence[Path]) -> str:
    resolved = path.resolve()
    for base in bases:
        if resolved.is_relative_to(base):
            return resolved.relative_to(base).with_suffix("").as_posix()
    return path.with_suffix("").name


def _bundled_cassettes() -> Path | None:
    try:
        return bundled("cassettes").resolve()
    except UsageError:
        return None


def with_parts(declared: Outcome | None, response: Response, dialect: Dialect) -> Outcome:
    """A recorded stream's expectation: the one its cassette declares, else the reference's. A
    declared one written without parts (before they were judged) gets the reference's parts when
    they agree with its calls and text (`coherent`); otherwise it keeps none, and no parts are
    judged on its cases."""
    found = dialects.reference_outcome(response, dialect)
    if declared is None:
        return found
    if declared.parts or not found.parts:
        return declared
    joined = evolve(declared, parts=found.parts)
    return joined if coherent(joined) else declared


def recorded_streams(path: Path, roots: Sequence[Path]) -> list[RecordedStream]:
    """The streamed interactions of one cassette file that cases are built from, named for case
    ids by `cassette_id`.

    A cassette of one interaction is one source. A conversation (several interactions: turn 1
    asks and the model streams tool calls, turn 2 sends the results and the model answers) is
    tested where the model streams tool calls: its sources are the turns whose response holds
    tool calls by their dialect's reading, or that declare an expected outcome (a turn written
    by `toolstream mutate`); every streamed turn when none does. One source keeps the cassette's
    name as its id; several are `name#N`, N the turn's place from 1 (as `show` numbers it)."""
    from harness.cassettes.format import load  # the YAML reader, loaded when a file is read

    cassette = load(path)
    base = cassette_id(path, roots)
    streamed: list[tuple[int, Dialect, Interaction, Outcome]] = []
    for n, interaction in enumerate(cassette.interactions):
        name = cassette.dialect or dialects.detect(interaction.request)
        if name is None or not interaction.response.chunks:
            continue
        dialect = dialects.get(name)
        with in_cassette(path, f"interactions[{n}].response"):
            expected = with_parts(interaction.expected, interaction.response, dialect)
        streamed.append((n, dialect, interaction, expected))
    turns = tuple(cassette.interactions)
    if len(turns) > 1:
        streamed = [s for s in streamed if s[3].tool_calls or s[2].expected is not None] or streamed
    out = []
    for n, dialect, interaction, expected in streamed:
        case_id = base if len(streamed) == 1 else f"{base}#{n + 1}"
        conversation = None if len(turns) == 1 else Conversation(n + 1, turns[:n], turns[n + 1 :])
        out.append(RecordedStream(case_id, path, dialect, interaction, expected, n, conversation))
    return out


def cases_for(
    source: RecordedStream,
    scenario: Scenario,
    seed: int,
    point: str | None = None,
    *,
    known: Known | None = None,
) -> list[Case]:
    """The cases of one recorded stream under one scenario and seed (empty when skipped); `known`:
    what earlier pipelines made of this source, kept by the caller for one run (`run_pipeline`)."""
    if not scenario.applies_to(source.dialect.name):
        return []
    try:
        results = run_pipeline(scenario.steps, source.stream, seed, point, known=known)
    except NotApplicable:
        return []
    return [case_of_stream(source, mutated, scenario.name, seed, label) for label, mutated in results]


def case_of_stream(
    source: RecordedStream, mutated: Stream, scenario: str, seed: int, point: str | None = None
) -> Case:
    """The case a pipeline made of `source`: the mutated reads and events, the mutated expectation."""
    case_id = SEPARATOR.join([source.id, scenario, f"s{seed}", *([point] if point else [])])
    return Case(
        id=case_id,
        dialect=source.dialect.name,
        # Rendered when first read (`_BuiltOnRead`), so typed as what reading it gives.
        response=cast(Response, (mutated, source.interaction.response)),
        events=as_sent(source.dialect, mutated.events),
        expected=mutated.expected,
        cassette=source.id,
        scenario=scenario,
        seed=seed,
        point=point,
        request=source.interaction.request,
        declared=source.interaction.declared,
        conversation=source.conversation,
    )


# Each edited event as sent, by identity: the cases of one pipeline (a cut's many points) share
# their events, so each is rendered once. Bounded small: it keeps the events alive for their ids,
# and a long recording's pipelines edit 100,000 of them (65,536 cost 40 MB there, 4,096 none).
_SENT: dict[int, tuple[Event, Event]] = {}


def as_sent(d: Dialect, events: tuple[Event, ...]) -> tuple[Event, ...]:
    """The events with each one a step edited given the `wire` it is sent as (its payload
    rendered): an edited event's `wire` still holds the bytes it was received with, and an
    event-level accumulator that reads `event.wire.data` must get what the case sends."""
    if not any(event.edited for event in events):
        return events
    out = []
    for event in events:
        if event.edited:
            found = _SENT.get(id(event))
            if found is None or found[0] is not event:
                if len(_SENT) >= 4096:
                    _SENT.clear()
                found = _SENT[id(event)] = (event, Event(d.render(event), event.payload, True))
            event = found[1]
        out.append(event)
    return tuple(out)


def case_with_events(case: Case, events: Sequence[Event]) -> Case:
    """The case with other events, one read per event, its expectation the reference outcome."""
    d = dialects.get(case.dialect)
    like = case.response.body
    chunks = [Chunk(dialects.body_of([event], d, like=like)) for event in events]
    response = replace(case.response, chunks=chunks, headers=dict(case.response.headers))
    parsed = tuple(dialects.parse_all(d, decode_all(d.codec(), (chunk.data for chunk in chunks))))
    return replace(case, response=response, events=parsed, expected=dialects.reference_outcome(response, d))


def case_cassette(case: Case, *, name: str | None = None, declared: Declared | None = None) -> Cassette:
    """A case as a cassette, its expected outcome stored, replayable as any other: one
    interaction, or a conversation's turns with the case's in its place; `declared`: the class of
    that expectation (`harness.oracle.expectation.declaration`)."""
    talk = case.conversation
    provenance = (
        f"mutated from {case.cassette}"
        + (f" (turn #{talk.turn} of {len(talk.before) + 1 + len(talk.after)})" if talk else "")
        + f" by scenario {case.scenario} seed {case.seed}"
        + (f" point {case.point}" if case.point else "")
        + f" (case {case.id})"
    )
    mutated = Interaction(case.request, case.response, case.expected, declared)
    return Cassette(
        name=name or case.id.replace(SEPARATOR, "--").replace("/", "-"),
        source=Source("synthesized", provenance),
        interactions=[*talk.before, mutated, *talk.after] if talk else [mutated],
        dialect=case.dialect,
    )
