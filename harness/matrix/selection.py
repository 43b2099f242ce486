"""Case selection: which cases a run holds, the same for `check`, `compare`, `explore` and the plugin.

A `Selection` is plain strings (it is sent to worker processes as is); a `Matrix` is a
selection made concrete in one process: its scenarios loaded, its cassettes listed, its cases
built on demand, one unit of work (cassette file x scenario x seed) at a time.

The rules, once:
- cassettes: files or folders, by path or by their name in case ids (`corpus.located`; empty:
  the bundled corpus); a file reached twice counts once.
- scenarios: an item ending in `.yaml`/`.yml` is a scenario file, an existing folder a scenario
  folder, anything else a scenario name (`harness.mutate.scenario.is_scenario_path`); empty:
  every scenario of `scenarios_dir` (default the shipped library) plus `original`. A scenario
  named twice counts once; two different scenarios with one name are an error.
- a case id appears once in a matrix: the first unit that makes it keeps it.
"""

from __future__ import annotations

import contextlib
import weakref
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, NamedTuple

from harness.cassettes.corpus import bundled, cassette_paths, located
from harness.cassettes.model import Response
from harness.collector import collector_paused
from harness.errors import ScenarioError
from harness.matrix.casecache import CaseStore, ScenarioFiles, StoredUnits, default_store
from harness.matrix.keys import file_key, scenario_key
from harness.mutate.scenario import (
    SEPARATOR,
    Case,
    Known,
    RecordedStream,
    Scenario,
    cases_for,
    cassette_id,
    cassette_ids,
    find_scenario,
    is_scenario_path,
    load_scenarios,
    recorded_streams,
    scenario_from_data,
)
from harness.wire import dialects

__all__ = ["ORIGINAL", "Matrix", "Selection", "Unit", "build_case", "cases"]

# The recorded stream itself, unmutated: a scenario with no steps (the scenario files need one).
ORIGINAL = Scenario(name="original", description="The recorded stream, unmutated.", steps=())


@dataclass(frozen=True)
class Selection:
    """Which cases to run, as plain strings (paths and sequences are normalised on creation).

    `cassettes`: files or folders. `scenarios`: names, files or folders. `scenarios_dir`: the
    library names are looked up in. `dialects`: only these. `seeds`: run seeds 0..N-1 instead of
    each scenario's own. `cases`: exactly these case ids.
    """

    cassettes: tuple[str, ...] = ()
    scenarios: tuple[str, ...] = ()
    scenarios_dir: str | None = None
    dialects: tuple[str, ...] = ()
    seeds: int | None = None
    cases: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        # Frozen, so normalise through object.__setattr__: a Path or a list in, strings out.
        for name in ("cassettes", "scenarios", "dialects", "cases"):
            object.__setattr__(self, name, tuple(dict.fromkeys(str(item) for item in getattr(self, name))))
        if self.scenarios_dir is not None:
            object.__setattr__(self, "scenarios_dir", str(self.scenarios_dir))

    def absolute(self) -> Selection:
        """The same selection with paths made absolute (workers may start elsewhere)."""

        def fix(item: str) -> str:
            return str(Path(item).resolve()) if Path(item).exists() else item

        def fix_cassette(item: str) -> str:  # also one given by its name in case ids
            found = located(item)
            return str(found.resolve()) if found.exists() else item

        return replace(
            self,
            cassettes=tuple(fix_cassette(c) for c in self.cassettes),
            scenarios=tuple(fix(s) for s in self.scenarios),
            scenarios_dir=None if self.scenarios_dir is None else fix(self.scenarios_dir),
        )

    def replay_options(self) -> list[str]:
        """The command-line options that rebuild this selection's cases (for replay commands)."""
        out: list[str] = []
        for item in self.cassettes:
            out += ["--cassettes", item]
        if self.scenarios_dir is not None:
            out += ["--scenarios-dir", self.scenarios_dir]
        paths = [s for s in self.scenarios if is_scenario_path(s)]
        if paths:
            out += ["--scenarios", *paths]
        return out


class Unit(NamedTuple):
    """One cassette file x scenario x seed, or one case id; plain strings only (a named tuple:
    a full matrix makes thousands, and a frozen dataclass's `__init__` showed in its time)."""

    cassette: str | None = None
    scenario: str | None = None
    seed: int | None = None
    case_id: str | None = None

    def describe(self) -> str:
        return self.case_id or f"{self.cassette} x {self.scenario} s{self.seed}"


_DEFAULT_STORE: Any = object()  # `Matrix(store=...)` not given: the store `casecache.default_store` says


class Matrix:
    """A selection made concrete in this process: its scenarios, its cassettes, its cases.

    `store`: where built cases are kept between runs (`harness.matrix.casecache`; default: the
    user's cache folder unless turned off; None: build every case). Call `flush()` when done
    building (the runner does; what is left unflushed is written when the matrix is collected)."""

    def __init__(
        self,
        selection: Selection,
        scenarios: Sequence[Scenario] | None = None,
        *,
        store: CaseStore | None = _DEFAULT_STORE,
    ) -> None:
        for name in selection.dialects:
            dialects.get(name)  # an unknown dialect is a usage error, before any work
        self.selection = selection
        self.roots = [located(p) for p in selection.cassettes] or [bundled("cassettes")]
        self.store: CaseStore | None = default_store() if store is _DEFAULT_STORE else store
        self.scenarios = _selected_scenarios(selection, self.store) if scenarios is None else list(scenarios)
        self.by_name = {s.name: s for s in self.scenarios}
        self._sources: dict[str, list[RecordedStream]] = {}
        self._files: list[Path] | None = None
        self._named: dict[str, list[Path]] | None = None
        self._names: dict[str, str] | None = None  # cassette file -> its name in case ids
        self._known: dict[int, tuple[RecordedStream, Known]] = {}
        self._last_users: dict[Any, int] | None = None  # first steps -> the last scenario they begin
        self._order = {s.name: n for n, s in enumerate(self.scenarios)}  # scenario name -> its place
        self._scenario_at = 0  # the place of the scenario of the last unit built
        self._stored = StoredUnits(self.store, self.by_name)
        weakref.finalize(self, self._stored.flush)  # holds no reference to this matrix: it may go
        self._file_keys: dict[str, str] = {}  # cassette file -> `keys.file_key`
        self._scenario_keys: dict[str, str] = {}  # scenario name -> `keys.scenario_key`
        self._rebuilt: OrderedDict[Unit, dict[str, Case]] = OrderedDict()

    def units(self) -> list[Unit]:
        """The units of work, in matrix order (cassette, scenario, seed)."""
        if self.selection.cases:
            return [Unit(case_id=c) for c in self.selection.cases]
        out: list[Unit] = []
        make = tuple.__new__  # `Unit(...)` without its keyword handling: a full matrix makes 8,142
        for path in self.cassette_files():
            cassette = str(path)
            for scenario in self.scenarios:
                seeds = range(self.selection.seeds) if self.selection.seeds is not None else scenario.seeds
                name = scenario.name
                out.extend([make(Unit, (cassette, name, seed, None)) for seed in seeds])
        return out

    def cassette_files(self) -> list[Path]:
        """The selected cassette files, each once (listed once per matrix)."""
        if self._files is None:
            self._files = list({p.resolve(): p for p in cassette_paths(self.roots)}.values())
        return list(self._files)

    def cassette_name(self, path: Path) -> str:
        """A selected cassette file's name in case ids (`cassette_id`), found once per matrix."""
        if self._names is None:
            files = self.cassette_files()
            self._names = dict(zip(map(str, files), cassette_ids(files, self.roots), strict=True))
        found = self._names.get(str(path))
        return found if found is not None else cassette_id(path, self.roots)

    def case_ids(self) -> list[str]:
        """Every case id, in matrix order, each once (what `all` yields the ids of)."""
        return [case.id for case in self.all()]

    def sources(self, cassette: str | Path) -> list[RecordedStream]:
        """The recorded streams of one cassette file of this selection, of the selected dialects."""
        key = str(cassette)
        if key not in self._sources:
            found = recorded_streams(Path(cassette), self.roots)
            only = self.selection.dialects
            self._sources[key] = [s for s in found if not only or s.dialect.name in only]
        return self._sources[key]

    def cases(self, unit: Unit) -> list[Case]:
        """The cases of one unit of work: from the store when it holds them, else built (and
        stored when the matrix is flushed)."""
        if unit.case_id is not None:
            return [self.case(unit.case_id)]
        assert unit.cassette is not None and unit.scenario is not None and unit.seed is not None
        if self.store is None:
            return self._built(unit)
        file_key, unit_key = self._keys(unit)
        found = self._stored.get(file_key, unit_key, self._rebuilt_response, unit)
        if found is not None:
            return found
        built = self._built(unit)
        self._stored.put(file_key, unit_key, built)
        return built

    def flush(self) -> None:
        """Write the cases built since the last flush to the store."""
        self._stored.flush()

    def _built(self, unit: Unit) -> list[Case]:
        assert unit.cassette is not None and unit.scenario is not None and unit.seed is not None
        scenario = self.by_name[unit.scenario]
        self._forget_before(unit.scenario)
        # No cyclic collection while a unit is built: its pipelines make containers by the
        # hundred thousand on a long recording, none in a cycle of ours, and the collector's
        # passes over them took a sixth of such a run. A cycle a plugin's mutation makes is
        # collected after the unit, as any other.
        with collector_paused():
            return [
                case
                for s in self.sources(unit.cassette)
                for case in cases_for(s, scenario, unit.seed, known=self._known_for(s))
            ]

    def _keys(self, unit: Unit) -> tuple[str, str]:
        """The store keys of a unit: its cassette file's (`keys.file_key`) and its own in it."""
        cassette, scenario, seed, _ = unit
        assert cassette is not None and scenario is not None
        fkey = self._file_keys.get(cassette)
        if fkey is None:
            fkey = file_key(self.cassette_name(Path(cassette)), self.selection.dialects, Path(cassette))
            self._file_keys[cassette] = fkey
        skey = self._scenario_keys.get(scenario)
        if skey is None:
            skey = self._scenario_keys[scenario] = scenario_key(self.by_name[scenario], ())
        return fkey, f"{skey}:{seed}"

    def _rebuilt_response(self, unit: Unit, case_id: str) -> Response:
        """The response of a case read back from the store without it: its unit built again
        (the last few such units are kept, as a run reads a unit's cases one after another)."""
        cases = self._rebuilt.get(unit)
        if cases is None:
            cases = self._rebuilt[unit] = {c.id: c for c in self._built(unit)}
            while len(self._rebuilt) > _REBUILT_KEPT:
                self._rebuilt.popitem(last=False)
        if case_id not in cases:
            raise ScenarioError(f"case id {case_id!r}: its unit no longer makes it; clear the case cache")
        return cases[case_id].response

    def _forget_before(self, name: str) -> None:
        """Drop from `_known` what no scenario from `name` on begins with: units come in matrix
        order, so it would not be asked for again (if it is, as when units come in another order,
        it is made again, the same). Most first steps begin one scenario; a big recording's
        streams kept for none took most of a run's memory."""
        if self._last_users is None:
            self._last_users = {}
            for n, scenario in enumerate(self.scenarios):
                for end in range(1, len(scenario.steps) + 1):
                    with contextlib.suppress(TypeError):  # a parameter that cannot be hashed: not kept
                        self._last_users[tuple(scenario.steps[:end])] = n
        at = self._order.get(name, 0)
        moved_on = at > self._scenario_at  # not: the same scenario, or the next cassette's first ones
        self._scenario_at = at
        if not moved_on:
            return
        last = self._last_users
        for _, known in self._known.values():
            for steps in [k for k in known if last.get(k, at) < at]:
                del known[steps]

    def _known_for(self, source: RecordedStream) -> Known:
        """What earlier pipelines made of `source` in this matrix (see `run_pipeline`): kept for
        the matrix's life, so a dialect changed in between (a test's monkeypatch) is seen anew."""
        found = self._known.get(id(source))
        if found is None or found[0] is not source:
            found = self._known[id(source)] = (source, {})
        return found[1]

    def all(self) -> Iterator[Case]:
        """Every case, in matrix order, each id once."""
        seen: set[str] = set()
        for unit in self.units():
            for case in self.cases(unit):
                if case.id not in seen:
                    seen.add(case.id)
                    yield case
        self.flush()

    def case(self, case_id: str) -> Case:
        """The case a `cassette::scenario::s<seed>[::point]` id names, rebuilt from this selection's
        cassettes (or read from the store); the scenario is a selected one, else one of the library."""
        for case in self._stored_unit(case_id) or ():
            if case.id == case_id:
                return case
        source, scenario, seed, point = self._named_unit(case_id)
        found = cases_for(source, scenario, seed, point)
        if not found:
            raise ScenarioError(f"case id {case_id!r}: scenario {scenario.name} does not apply to it")
        return found[0]

    def unit_cases(self, case_id: str) -> list[Case]:
        """Every case of the recorded stream x scenario x seed a case id names (each point of a
        sweep): one pipeline run for all of them, where `case` runs one per id."""
        stored = self._stored_unit(case_id)
        if stored is not None:
            return stored
        source, scenario, seed, _ = self._named_unit(case_id)
        if self.store is not None and self.by_name.get(scenario.name) is scenario:
            # built as the whole unit, so it is stored: the same cases, the other recordings' too
            unit = Unit(str(source.path), scenario.name, seed)
            return [c for c in self.cases(unit) if c.cassette == source.id]
        return cases_for(source, scenario, seed)

    def _stored_unit(self, case_id: str) -> list[Case] | None:
        """The cases of the recording x scenario x seed an id names, when the store holds its unit
        (found without reading a cassette: the files an id may name, by name alone)."""
        parts = _id_parts(case_id)
        if self.store is None or parts is None or parts[1] not in self.by_name:
            return None
        cassette_name, scenario_name, seed, _ = parts
        for path in self._named_paths().get(cassette_name.partition("#")[0], []):
            unit = Unit(str(path), scenario_name, seed)
            found = self._stored.get(*self._keys(unit), self._rebuilt_response, unit)
            if found is not None and any(c.cassette == cassette_name for c in found):
                return [c for c in found if c.cassette == cassette_name]
        return None

    def _named_paths(self) -> dict[str, list[Path]]:
        if self._named is None:  # each file under the names an id may give it, in file order
            self._named = {}
            for path in self.cassette_files():
                for name in dict.fromkeys((self.cassette_name(path), path.with_suffix("").name)):
                    self._named.setdefault(name, []).append(path)
        return self._named

    def _named_unit(self, case_id: str) -> tuple[RecordedStream, Scenario, int, str | None]:
        parts = _id_parts(case_id)
        if parts is None:
            raise ScenarioError(f"case id {case_id!r}: expected cassette::scenario::s<seed>[::point]")
        cassette_name, scenario_name, seed, point = parts
        scenario = self.by_name.get(scenario_name) or self._library_scenario(scenario_name)
        base, _, number = cassette_name.partition("#")
        named: list[str] = []
        for path in self._named_paths().get(base, []):
            for source in self.sources(path):
                if source.id.partition("#")[2] == number:
                    return source, scenario, seed, point
                named.append(source.id)
        if named:  # the file is there, the turn is not (a conversation's turns are `name#N`)
            listed = ", ".join(named)
            raise ScenarioError(
                f"case id {case_id!r}: no recorded stream {cassette_name!r}; that file's are {listed}"
            )
        raise ScenarioError(f"case id {case_id!r}: no cassette {cassette_name!r} in the selection")

    def _library_scenario(self, name: str) -> Scenario:
        library = load_scenarios([self.selection.scenarios_dir] if self.selection.scenarios_dir else None)
        if name == ORIGINAL.name and not any(s.name == name for s in library):
            return ORIGINAL
        return find_scenario(name, library)

    def scenario_data(self) -> list[dict[str, Any]]:
        """The scenarios as plain data, for a worker process (`rebuilt_scenarios` reads them back)."""
        return [
            {"data": s.to_data(), "path": None if s.path is None else str(s.path)} for s in self.scenarios
        ]


_REBUILT_KEPT = 4  # units built again for their responses (`Matrix._rebuilt_response`)


def _id_parts(case_id: str) -> tuple[str, str, int, str | None] | None:
    """A case id's cassette name, scenario name, seed and sweep point; None if it is not shaped as one."""
    parts = case_id.split(SEPARATOR)
    if len(parts) not in (3, 4) or not parts[2].startswith("s") or not parts[2][1:].isdigit():
        return None
    return parts[0], parts[1], int(parts[2][1:]), parts[3] if len(parts) == 4 else None


def rebuilt_scenarios(items: Sequence[Mapping[str, Any]]) -> list[Scenario]:
    """Scenarios from `Matrix.scenario_data` (a worker does not parse the YAML again)."""
    out = []
    for item in items:
        path = None if item["path"] is None else Path(item["path"])
        data = item["data"]
        if data["name"] == ORIGINAL.name and not data["steps"]:
            out.append(ORIGINAL)
        else:
            out.append(scenario_from_data(data, where=str(path or data["name"]), path=path))
    return out


def cases(selection: Selection) -> Iterator[Case]:
    """Every case of a selection, in matrix order, each id once."""
    return Matrix(selection).all()


def build_case(case_id: str, selection: Selection | None = None) -> Case:
    """The case an id names (also `cassette::original::s0`), from a selection's cassettes
    (default: the bundled corpus and the shipped scenarios)."""
    return Matrix(selection or Selection()).case(case_id)


def _selected_scenarios(selection: Selection, store: CaseStore | None = None) -> list[Scenario]:
    files = None if store is None else ScenarioFiles(store)
    try:
        return _chosen_scenarios(selection, files)
    finally:
        if files is not None:
            files.save()


def _chosen_scenarios(selection: Selection, files: ScenarioFiles | None) -> list[Scenario]:
    library = load_scenarios([selection.scenarios_dir] if selection.scenarios_dir else None, load=files)
    if not selection.scenarios:
        return library if any(s.name == ORIGINAL.name for s in library) else [ORIGINAL, *library]
    chosen: dict[str, Scenario] = {}
    for item in selection.scenarios:
        if item == ORIGINAL.name and not any(s.name == item for s in library):
            found = [ORIGINAL]
        elif is_scenario_path(item):
            found = load_scenarios([item], load=files)
        else:
            found = [find_scenario(item, library)]
        for scenario in found:
            known = chosen.setdefault(scenario.name, scenario)
            if known != scenario:
                raise ScenarioError(
                    f"{item}: scenario {scenario.name!r} is also the name of another one ({known.path})"
                )
    return list(chosen.values())
