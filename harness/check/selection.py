"""Case selection: which cases a run holds, the same for `check`, `compare`, `explore` and the plugin.

A `Selection` is plain strings (it is sent to worker processes as is); a `Matrix` is a
selection made concrete in one process: its scenarios loaded, its cassettes listed, its cases
built on demand, one unit of work (cassette file x scenario x seed) at a time.

The rules, once:
- cassettes: files or folders (empty: the bundled corpus); a file reached twice counts once.
- scenarios: an item ending in `.yaml`/`.yml` is a scenario file, an existing folder a scenario
  folder, anything else a scenario name (`harness.mutate.scenario.is_scenario_path`); empty:
  every scenario of `scenarios_dir` (default the shipped library) plus `original`. A scenario
  named twice counts once; two different scenarios with one name are an error.
- a case id appears once in a matrix: the first unit that makes it keeps it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from harness.cassettes.corpus import bundled, cassette_paths
from harness.errors import ScenarioError
from harness.mutate.scenario import (
    SEPARATOR,
    Case,
    Known,
    RecordedStream,
    Scenario,
    cases_for,
    cassette_id,
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

        return replace(
            self,
            cassettes=tuple(fix(c) for c in self.cassettes),
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


@dataclass(frozen=True)
class Unit:
    """One cassette file x scenario x seed, or one case id; plain strings only."""

    cassette: str | None = None
    scenario: str | None = None
    seed: int | None = None
    case_id: str | None = None

    def describe(self) -> str:
        return self.case_id or f"{self.cassette} x {self.scenario} s{self.seed}"


class Matrix:
    """A selection made concrete in this process: its scenarios, its cassettes, its cases."""

    def __init__(self, selection: Selection, scenarios: Sequence[Scenario] | None = None) -> None:
        for name in selection.dialects:
            dialects.get(name)  # an unknown dialect is a usage error, before any work
        self.selection = selection
        self.roots = [Path(p) for p in selection.cassettes] or [bundled("cassettes")]
        self.scenarios = _selected_scenarios(selection) if scenarios is None else list(scenarios)
        self.by_name = {s.name: s for s in self.scenarios}
        self._sources: dict[str, list[RecordedStream]] = {}
        self._files: list[Path] | None = None
        self._named: dict[str, list[Path]] | None = None
        self._known: dict[int, tuple[RecordedStream, Known]] = {}

    def units(self) -> list[Unit]:
        """The units of work, in matrix order (cassette, scenario, seed)."""
        if self.selection.cases:
            return [Unit(case_id=c) for c in self.selection.cases]
        out: list[Unit] = []
        for path in self.cassette_files():
            for scenario in self.scenarios:
                seeds = range(self.selection.seeds) if self.selection.seeds is not None else scenario.seeds
                out.extend(Unit(str(path), scenario.name, seed) for seed in seeds)
        return out

    def cassette_files(self) -> list[Path]:
        """The selected cassette files, each once (listed once per matrix)."""
        if self._files is None:
            self._files = list({p.resolve(): p for p in cassette_paths(self.roots)}.values())
        return list(self._files)

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
        """The cases of one unit of work."""
        if unit.case_id is not None:
            return [self.case(unit.case_id)]
        assert unit.cassette is not None and unit.scenario is not None and unit.seed is not None
        scenario = self.by_name[unit.scenario]
        return [
            case
            for s in self.sources(unit.cassette)
            for case in cases_for(s, scenario, unit.seed, known=self._known_for(s))
        ]

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

    def case(self, case_id: str) -> Case:
        """The case a `cassette::scenario::s<seed>[::point]` id names, rebuilt from this selection's
        cassettes; the scenario is a selected one, else one of the library."""
        source, scenario, seed, point = self._named_unit(case_id)
        found = cases_for(source, scenario, seed, point)
        if not found:
            raise ScenarioError(f"case id {case_id!r}: scenario {scenario.name} does not apply to it")
        return found[0]

    def unit_cases(self, case_id: str) -> list[Case]:
        """Every case of the recorded stream x scenario x seed a case id names (each point of a
        sweep): one pipeline run for all of them, where `case` runs one per id."""
        source, scenario, seed, _ = self._named_unit(case_id)
        return cases_for(source, scenario, seed)

    def _named_unit(self, case_id: str) -> tuple[RecordedStream, Scenario, int, str | None]:
        parts = case_id.split(SEPARATOR)
        if len(parts) not in (3, 4) or not parts[2].startswith("s") or not parts[2][1:].isdigit():
            raise ScenarioError(f"case id {case_id!r}: expected cassette::scenario::s<seed>[::point]")
        cassette_name, scenario_name, seed_text = parts[:3]
        point = parts[3] if len(parts) == 4 else None
        scenario = self.by_name.get(scenario_name) or self._library_scenario(scenario_name)
        base, _, number = cassette_name.partition("#")
        if self._named is None:  # each file under the names an id may give it, in file order
            self._named = {}
            for path in self.cassette_files():
                for name in dict.fromkeys((cassette_id(path, self.roots), path.with_suffix("").name)):
                    self._named.setdefault(name, []).append(path)
        for path in self._named.get(base, []):
            for source in self.sources(path):
                if source.id.partition("#")[2] == number:
                    return source, scenario, int(seed_text[1:]), point
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


def _selected_scenarios(selection: Selection) -> list[Scenario]:
    library = load_scenarios([selection.scenarios_dir] if selection.scenarios_dir else None)
    if not selection.scenarios:
        return library if any(s.name == ORIGINAL.name for s in library) else [ORIGINAL, *library]
    chosen: dict[str, Scenario] = {}
    for item in selection.scenarios:
        if item == ORIGINAL.name and not any(s.name == item for s in library):
            found = [ORIGINAL]
        elif is_scenario_path(item):
            found = load_scenarios([item])
        else:
            found = [find_scenario(item, library)]
        for scenario in found:
            known = chosen.setdefault(scenario.name, scenario)
            if known != scenario:
                raise ScenarioError(
                    f"{item}: scenario {scenario.name!r} is also the name of another one ({known.path})"
                )
    return list(chosen.values())
