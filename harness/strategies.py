"""Hypothesis strategies over the conformance matrix, for a developer's own `@given` tests.

    from hypothesis import given
    from harness.strategies import cases, check

    @given(cases(dialect="openai-chat"))
    def test_my_accumulator(case):
        check(MyAccumulator, case)

`cases(...)` draws the very `Case` objects `toolstream check` runs (`harness.matrix.selection`),
`events(...)` and `reads(...)` the streams they carry: the decoded events an event-level
accumulator is fed, or the network reads a byte-level one gets. A failure shrinks towards the
recording itself: each value is drawn as an index into a list ordered smallest first, in this
order, so hypothesis' shrinker (which makes earlier draws smaller first) prefers
1. the scenario: `original` (the recording, unmutated), then meaning-preserving scenarios before
   meaning-changing ones, fewer steps before more;
2. the recording: fewer bytes before more;
3. the seed: the smallest (seed 0; a random cut or read split is chosen by the seed);
4. the sweep point: the earliest cut (`e0` before `e5`, `b3` before `b40`).
Every drawn case is noted (`hypothesis.note`) with its id and the command that explains it.

Hypothesis is an optional dependency (`pip install toolstream-harness[hypothesis]`); `import
harness` never imports it.
"""

from __future__ import annotations

import bisect
import functools
import re
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

try:
    from hypothesis import assume, note
    from hypothesis import strategies as st
except ImportError:  # one line that says what to do, not hypothesis' own traceback
    raise ImportError(
        "harness.strategies needs hypothesis: pip install toolstream-harness[hypothesis]"
    ) from None

from harness.accumulators import Accumulator, prepare, resolve
from harness.errors import ScenarioError, UsageError
from harness.matrix.catalog import list_ids
from harness.matrix.judging import judge
from harness.matrix.selection import ORIGINAL, Matrix, Selection
from harness.mutate import Meaning
from harness.mutate.scenario import SEPARATOR, Case
from harness.oracle.verdict import Result, Verdict
from harness.report.replay import replay_command
from harness.wire.dialects import Event

__all__ = ["cases", "check", "events", "reads"]

_UNITS_KEPT: Final = 64  # built units (recording x scenario x seed) kept for the draws that follow
_POINT_NUMBER: Final = re.compile(r"\d+")


def cases(
    dialect: str | Sequence[str] | None = None,
    scenarios: Sequence[str] | None = None,
    cassettes: Sequence[str | Path] | None = None,
    *,
    seeds: int | None = None,
) -> st.SearchStrategy[Case]:
    """Cases of the matrix `toolstream check` runs with the same options: `dialect` (one name or
    several), `scenarios` (names or files; default every shipped one and `original`), `cassettes`
    (files or folders; default the bundled corpus), `seeds` (draw seeds 0..N-1 instead of each
    scenario's own). A bad option raises here (a `UsageError` or `ScenarioError`)."""
    chosen = (dialect,) if isinstance(dialect, str) else tuple(dialect or ())
    selection = Selection(
        cassettes=tuple(str(c) for c in cassettes or ()), scenarios=tuple(scenarios or ()), dialects=chosen
    )
    if seeds is not None and seeds < 1:
        raise UsageError(f"seeds: must be at least 1, not {seeds}")
    _matrix(selection)  # an unknown dialect or scenario is an error now, not at the first draw
    return _drawn_case(selection, seeds)


def events(
    dialect: str | Sequence[str] | None = None,
    scenarios: Sequence[str] | None = None,
    cassettes: Sequence[str | Path] | None = None,
    *,
    seeds: int | None = None,
) -> st.SearchStrategy[tuple[Event, ...]]:
    """The decoded events of a drawn case, as an event-level accumulator is fed them (`cases`'
    options; the case's id is noted, and its transport error is `case.error`)."""
    return cases(dialect, scenarios, cassettes, seeds=seeds).map(lambda case: case.events)


def reads(
    dialect: str | Sequence[str] | None = None,
    scenarios: Sequence[str] | None = None,
    cassettes: Sequence[str | Path] | None = None,
    *,
    seeds: int | None = None,
) -> st.SearchStrategy[tuple[bytes, ...]]:
    """The network reads of a drawn case, each as it arrives (`cases`' options)."""
    return cases(dialect, scenarios, cassettes, seeds=seeds).map(
        lambda case: tuple(chunk.data for chunk in case.response.chunks)
    )


def check(accumulator: str | Any, case: Case, *, strict: bool = False) -> Result:
    """Judge `accumulator` (a spec string or a Python object, as `toolstream check --accumulator`
    takes) on `case` as `toolstream check` does, its class and severities included; raise
    `AssertionError` with the diff, the case id and the replay command when the verdict fails the
    run (`strict`: warnings too). A skipped case (not for the accumulator's dialects) passes."""
    acc, spec = _accumulator(accumulator)
    result = judge(acc, spec, case)
    if result.fails(strict):
        lines = [f"{result.verdict.upper()} {result.id} [{result.case_class}: {result.class_reason or '-'}]"]
        if result.verdict in (Verdict.FAIL, Verdict.WARN):
            lines.extend(f"  {line}" for line in result.diff)
        else:
            lines.extend(f"  {line}" for line in (result.error or "(no message)").splitlines())
        lines.append(f"replay: {replay_command(spec, result.id, strict=strict)}")
        raise AssertionError("\n".join(lines))
    return result


# ---------------------------------------------------------------------------------------------
# Drawing


def _drawn_case(selection: Selection, seeds: int | None) -> st.SearchStrategy[Case]:
    @st.composite
    def drawn(draw: st.DrawFn) -> Case:
        corpus = _corpus(selection)
        scenario = draw(st.sampled_from(corpus.scenarios))
        # An index into every recording, not into those this scenario applies to: a scenario
        # shrunk to `original` keeps the very recording (`_Corpus.recording`).
        cassette = corpus.recording(scenario, draw(st.integers(0, len(corpus.recordings) - 1)))
        if seeds is None:
            seed = draw(st.sampled_from(corpus.seeds[(scenario, cassette)]))
        else:
            seed = draw(st.integers(min_value=0, max_value=seeds - 1))
        built = corpus.unit(cassette, scenario, seed)
        assume(built)  # a seed the scenario's own list does not hold may not apply to this recording
        case = built[draw(st.integers(min_value=0, max_value=len(built) - 1))]
        note(f"case {case.id} (toolstream explain {_explain_options(selection)}{case.id!r})")
        return case

    return drawn()


def _explain_options(selection: Selection) -> str:
    options = selection.replay_options()
    return "".join(f"{item} " if item.startswith("--") else f"{item!r} " for item in options)


@dataclass
class _Corpus:
    """What one selection's draws choose from, each list in shrinking order (smallest first)."""

    matrix: Matrix
    scenarios: list[str]
    recordings: list[str]  # every recording (cassette id) of the selection, fewest bytes first
    applies: dict[str, list[int]]  # scenario -> the places in `recordings` it makes cases of
    seeds: dict[tuple[str, str], list[int]]  # (scenario, recording) -> its seeds
    units: OrderedDict[tuple[str, str, int], list[Case]] = field(default_factory=OrderedDict)

    def recording(self, scenario: str, index: int) -> str:
        """The recording at `index`, else the nearest one before it that `scenario` applies to
        (else its first): an index shrinks to the recording's own place, where `original`, which
        applies to every recording, finds it again."""
        places = self.applies[scenario]
        at = bisect.bisect_right(places, index) - 1
        return self.recordings[places[max(at, 0)]]

    def unit(self, cassette: str, scenario: str, seed: int) -> list[Case]:
        """The cases of one recording x scenario x seed, earliest cut first."""
        key = (cassette, scenario, seed)
        found = self.units.get(key)
        if found is None:
            case_id = SEPARATOR.join([cassette, scenario, f"s{seed}"])
            found = sorted(self.matrix.unit_cases(case_id), key=_cut_order)
            self.units[key] = found
            while len(self.units) > _UNITS_KEPT:
                self.units.popitem(last=False)
        else:
            self.units.move_to_end(key)
        return found


def _cut_order(case: Case) -> tuple[int, str]:
    """A sweep point's place: by the number in its label (`e3` keeps 3 events, `b40` 40 bytes)."""
    if case.point is None:
        return (-1, "")
    number = _POINT_NUMBER.search(case.point)
    return (int(number.group()) if number else 0, case.point)


@functools.cache
def _matrix(selection: Selection) -> Matrix:
    """The selection made concrete (its scenarios loaded), once a process for every strategy of it."""
    return Matrix(selection)


@functools.cache
def _corpus(selection: Selection) -> _Corpus:
    """The selection's case ids (listed without building cases where the shipped catalog holds
    them), grouped and ordered for shrinking; made at the first draw and kept."""
    matrix = _matrix(selection)
    ids = list_ids(matrix)
    if not ids:
        raise UsageError(f"no cases in the selection {selection}")
    sizes: dict[str, int] = {}
    for path in matrix.cassette_files():
        for source in matrix.sources(path):
            sizes[source.id] = sum(len(chunk.data) for chunk in source.interaction.response.chunks)
    recordings = sorted(sizes, key=lambda c: (sizes[c], c))
    place = {c: n for n, c in enumerate(recordings)}
    applies: dict[str, set[int]] = {}
    seeds: dict[tuple[str, str], set[int]] = {}
    for case_id in ids:
        parts = case_id.split(SEPARATOR)
        if len(parts) not in (3, 4) or parts[0] not in place:
            raise ScenarioError(f"case id {case_id!r}: expected cassette::scenario::s<seed>[::point]")
        cassette, scenario, seed = parts[0], parts[1], int(parts[2][1:])
        applies.setdefault(scenario, set()).add(place[cassette])
        seeds.setdefault((scenario, cassette), set()).add(seed)
    order = {s.name: n for n, s in enumerate(matrix.scenarios)}

    def scenario_order(name: str) -> tuple[bool, bool, int, int]:
        scenario = matrix.by_name.get(name, ORIGINAL)
        steps = len(scenario.steps)
        return (name != ORIGINAL.name, scenario.meaning is Meaning.CHANGING, steps, order.get(name, 0))

    return _Corpus(
        matrix=matrix,
        scenarios=sorted(applies, key=scenario_order),
        recordings=recordings,
        applies={s: sorted(found) for s, found in applies.items()},
        seeds={key: sorted(found) for key, found in seeds.items()},
    )


# Resolved and warmed up once a process, by spec (an object's entry keeps it alive, so its id
# names it for as long as the entry lives).
_ACCUMULATORS: dict[Any, tuple[Accumulator, str, Any]] = {}


def _accumulator(spec: str | Any) -> tuple[Accumulator, str]:
    """The accumulator a spec names and its name, resolved and warmed up once (a property test
    calls `check` once an example)."""
    key = spec if isinstance(spec, str) else ("object", id(spec))
    found = _ACCUMULATORS.get(key)
    if found is None:
        acc = resolve(spec)
        name = spec if isinstance(spec, str) else _spec_of(spec, acc.name)
        prepare(acc, name)
        found = _ACCUMULATORS[key] = (acc, name, spec)
    return found[0], found[1]


def _spec_of(obj: Any, name: str) -> str:
    """An object as the spec `toolstream check --accumulator` loads it by, when it has one."""
    module, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    if isinstance(module, str) and isinstance(qualname, str) and module != "__main__" and "<" not in qualname:
        return f"{module}:{qualname}"
    return name


def _pretty_case(case: Case, printer: Any, cycle: bool) -> None:
    """How hypothesis prints a drawn case in a falsifying example: its id, not every event."""
    printer.text(f"<Case {case.id!r}>")


try:  # hypothesis' printer registry is not public API: without it, cases print as dataclasses
    from hypothesis.vendor.pretty import for_type_by_name

    for_type_by_name("harness.mutate.case", "Case", _pretty_case)
except (ImportError, AttributeError, TypeError):  # pragma: no cover - a hypothesis without it
    pass
