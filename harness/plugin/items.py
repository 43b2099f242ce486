"""What the pytest plugin hands tests, and the matrix items it generates; no hooks live here.

- `CaseCatalog`: the case ids of a selection (cassettes x scenarios x seeds), each case built when run.
- `MatrixCase`: the `toolstream_case` fixture: one case, `.run(acc)` and `.check(acc)`.
- `CaseItem` / `CompareItem`: the items `--toolstream-accumulator` / `--toolstream-compare` add.
- `MatrixResults`: every verdict of the session (also from xdist workers), for the summary and reports.
"""

from __future__ import annotations

import contextlib
import json
import shlex
from collections import Counter, OrderedDict, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import pytest

from harness.accumulators import Accumulator, dialects_of, resolve
from harness.cassettes.outcome import Outcome
from harness.errors import HarnessError, UsageError
from harness.matrix.catalog import list_ids
from harness.matrix.judging import judge
from harness.matrix.selection import ORIGINAL, Matrix, Selection
from harness.mutate import Meaning
from harness.mutate.scenario import Case, Scenario
from harness.oracle.verdict import Report, Result, Verdict, signature
from harness.plugin.names import COMPARE_KEY, RESULT_KEY
from harness.processes.capture import captured_output
from harness.report.replay import pytest_command, pytest_item_name, replay_command
from harness.report.results import counts, failure_kinds, group_tags, warning_lines
from harness.search.compare import Comparison, Difference, outcome_difference

__all__ = [
    "CaseCatalog",
    "CaseFailed",
    "CaseItem",
    "CompareItem",
    "MatrixCase",
    "MatrixResults",
    "compare_text",
    "failure_text",
    "node_location",
    "result_property",
    "snapshot_key",
]

_UNITS_KEPT: Final = 8  # units (stream x scenario x seed) built by id and kept for their other points


# ---------------------------------------------------------------------------------------------
# The matrix: cases, verdicts, failure text


class CaseCatalog:
    """The cases of each selection asked for in a session, kept by id.

    Items are collected from the ids alone (`ids`, from `harness.matrix.catalog`: the ids shipped
    for the bundled corpus, else those a `cache` (pytest's) holds from an earlier session, else
    computed by building the cases, which are then kept), so each xdist worker builds only the
    cases it runs: a case is built when its item runs (`case`), with the other points of its
    sweep, which the items after it ask for."""

    def __init__(self, cache: Any = None) -> None:
        self.cache = cache  # pytest's `config.cache` (get/set of JSON values), or None
        self._matrices: dict[Selection, Matrix] = {}
        self._ids: dict[Selection, dict[str, str]] = {}
        self._built: dict[Selection, dict[str, Case]] = {}
        self._units: OrderedDict[tuple[Selection, str], dict[str, Case]] = OrderedDict()
        self._meaning: dict[str, Meaning] = {ORIGINAL.name: ORIGINAL.meaning}
        self._scenarios: dict[str, Scenario] = {ORIGINAL.name: ORIGINAL}
        self._accumulators: dict[str, Accumulator] = {}
        self._prepared: set[int] = set()

    def matrix(self, selection: Selection) -> Matrix:
        if selection not in self._matrices:
            self._matrices[selection] = matrix = Matrix(selection)
            for scenario in matrix.scenarios:
                self._meaning[scenario.name] = scenario.meaning
                self._scenarios[scenario.name] = scenario
        return self._matrices[selection]

    def ids(self, selection: Selection) -> dict[str, str]:
        """Case id -> its dialect's name, in matrix order (cassette, scenario, seed), each id once."""
        if selection not in self._ids:
            built = self._built.setdefault(selection, {})
            self._ids[selection] = list_ids(self.matrix(selection), self.cache, built)
        return self._ids[selection]

    def cases(self, selection: Selection) -> dict[str, Case]:
        """Case id -> case, in matrix order (cassette, scenario, seed), each id once: all built."""
        return {case_id: self.case(selection, case_id) for case_id in self.ids(selection)}

    def case(self, selection: Selection, case_id: str) -> Case:
        """One case of the selection: kept from listing the ids, else built now with the rest of
        its unit (the few units built last are kept, items arriving in matrix order)."""
        if case_id not in self.ids(selection):
            raise UsageError(f"case id {case_id!r} is not in the selected matrix")
        found = self._built.get(selection, {}).get(case_id)
        if found is not None:
            return found
        for key, unit in self._units.items():
            if key[0] == selection and case_id in unit:
                self._units.move_to_end(key)
                return unit[case_id]
        unit = {case.id: case for case in self.matrix(selection).unit_cases(case_id)}
        if case_id not in unit:  # listed, yet the pipeline no longer makes it: say so
            return self.matrix(selection).case(case_id)
        self._units[(selection, case_id)] = unit
        while len(self._units) > _UNITS_KEPT:
            self._units.popitem(last=False)
        return unit[case_id]

    def meaning(self, scenario: str) -> Meaning:
        return self._meaning.get(scenario, Meaning.CHANGING)

    def scenario(self, name: str) -> Scenario | None:
        """The scenario called `name` of a selection asked for (it classes the cases it made)."""
        return self._scenarios.get(name)

    def judge(self, spec: str | Any, case: Case) -> Result:
        """One case through the accumulator `spec` names, classed by the scenario that made it."""
        acc = self.accumulator(spec)
        name = spec if isinstance(spec, str) else acc.name
        return judge(acc, name, case, self.scenario(case.scenario))

    def resolved(self, spec: str | Any) -> Accumulator:
        """The accumulator a spec names (or an object wraps to), resolved once a session, not
        yet warmed up (collection resolves every spec, so a bad one is one usage error)."""
        key = spec if isinstance(spec, str) else f"object-{id(spec)}"
        if key not in self._accumulators:
            self._accumulators[key] = resolve(spec)
        return self._accumulators[key]

    def accumulator(self, spec: str | Any) -> Accumulator:
        """The accumulator a spec names, warmed up once a session (so no item's time counts the
        library's imports); what the warm-up prints is thrown away, as in `run_matrix`."""
        acc = self.resolved(spec)
        if id(acc) not in self._prepared:
            self._prepared.add(id(acc))
            with captured_output():
                acc.prepare()
        return acc

    def not_for(self, specs: Sequence[str | Any], dialect: str) -> str | None:
        """Why a case of `dialect` is skipped: an accumulator declares dialects without it."""
        for spec in specs:
            declared = dialects_of(self.resolved(spec))
            if declared is not None and dialect not in declared:
                name = spec if isinstance(spec, str) else self.resolved(spec).name
                return f"{name} declares dialects {', '.join(declared)}; this case is {dialect}"
        return None

    def shutdown(self) -> None:
        """The session's end: its accumulators shut down, and the cases it kept let go."""
        for acc in self._accumulators.values():
            with contextlib.suppress(Exception):
                acc.shutdown()
        self._accumulators.clear()
        self._prepared.clear()
        self._built.clear()
        self._units.clear()


class CaseFailed(AssertionError):
    """A case whose verdict is not pass; its message is the whole failure text."""


def replay_lines(commands: Iterable[str | None]) -> list[str]:
    return ["replay just this case:", *(f"  {c}" for c in commands if c is not None)]


def failure_text(
    result: Result,
    selection: Selection | None = None,
    *,
    strict: bool = False,
    test: tuple[str, str] | None = None,
    session: Selection | None = None,
    served: bool = False,
) -> str:
    """The outcome diff (or error) with each line's severity, the case id and class, and the
    commands that replay just this case (`test`: file and name of a `toolstream_case` test, whose
    pytest line carries the `session`'s options while `selection` is the marker's). `served`: the
    result is a `toolstream_served_case` test's, judged by its follow-up; only pytest replays it."""
    severity = f"{result.severity}, " if result.severity else ""
    judged = f"test {result.accumulator}" if served else f"accumulator {result.accumulator}"
    lines = [
        f"{result.verdict.upper()} {result.id} ({judged}) "
        f"[{severity}{result.case_class}: {result.class_reason or '-'}]"
    ]
    if served and result.verdict in (Verdict.FAIL, Verdict.WARN) and result.error:
        lines.append(f"  {result.error}")  # no follow-up came: say so before the calls it lost
    if result.verdict in (Verdict.FAIL, Verdict.WARN) and len(result.severities) == len(result.diff):
        lines.extend(f"  {s:<8}  {line}" for line, s in zip(result.diff, result.severities, strict=True))
    elif result.verdict in (Verdict.FAIL, Verdict.WARN):
        lines.extend(f"  {line}" for line in result.diff)
    else:
        lines.extend(f"  {line}" for line in (result.error or "(no message)").splitlines())
    spec = None if test is not None else result.accumulator
    pytest_line = pytest_command(session or selection, result.id, strict=strict, spec=spec, test=test)
    check_line = None if served else replay_command(result.accumulator, result.id, selection, strict=strict)
    lines.extend(replay_lines([pytest_line, check_line]))
    return "\n".join(lines)


def compare_text(
    a: Result, b: Result, lines: Sequence[str], selection: Selection | None = None, *, strict: bool = False
) -> str:
    """A difference between two accumulators on one case, with the commands that replay it."""
    out = [f"DIFFERS {a.id}", f"  A = {a.accumulator} ({a.verdict})", f"  B = {b.accumulator} ({b.verdict})"]
    out.extend(f"  {line}" for line in lines)
    options = selection.replay_options() if selection is not None else []
    argv = ["toolstream", "compare", a.accumulator, b.accumulator, *options, "--case", a.id]
    argv += ["--strict"] if strict else []
    pytest_line = pytest_command(selection, a.id, strict=strict, compare=(a.accumulator, b.accumulator))
    out.extend(replay_lines([pytest_line, " ".join(shlex.quote(x) for x in argv)]))
    return "\n".join(out)


@dataclass
class MatrixCase:
    """The `toolstream_case` fixture: one case of the matrix.

    `run(acc)` is the accumulator's outcome (for `assert case.run(acc) == toolstream_snapshot`);
    `check(acc)` judges it against the case's expectation and fails the test with the diff, the
    case id and the replay commands.
    """

    case: Case
    selection: Selection
    catalog: CaseCatalog
    node: Any = None  # the pytest item, to carry verdicts to the summary and reports
    results: list[Result] = field(default_factory=list)
    strict: bool = False  # warnings fail too
    replay_selection: Selection | None = None  # the session's options, for the replay command

    @property
    def id(self) -> str:
        return self.case.id

    @property
    def expected(self) -> Outcome:
        return self.case.expected

    def run(self, accumulator: str | Any) -> Outcome:
        """The outcome `accumulator` (a spec string or an object) reaches on this case."""
        return self.catalog.accumulator(accumulator).run(self.case)

    def check(self, accumulator: str | Any) -> Result:
        """Judge `accumulator` on this case; raises `CaseFailed` when it fails (a warning only
        when strict; skips when it says the case is not for it)."""
        reason = self.catalog.not_for([accumulator], self.case.dialect)
        if reason is not None:
            pytest.skip(reason)
        result = self.catalog.judge(accumulator, self.case)
        spec = result.accumulator
        self.results.append(result)
        if self.node is not None:
            self.node.user_properties.append(result_property(result))
        if result.verdict is Verdict.SKIPPED:
            pytest.skip(result.error or f"{spec} says case {self.id} is not for it")
        if result.fails(self.strict):
            text = failure_text(
                result, self.selection, strict=self.strict, test=self._test(), session=self.replay_selection
            )
            raise CaseFailed(text)
        return result

    def _test(self) -> tuple[str, str] | None:
        return None if self.node is None else node_location(self.node)


def node_location(node: Any) -> tuple[str, str]:
    """A test's file (relative to where pytest runs) and name, for its replay command."""
    path = Path(node.path)
    with contextlib.suppress(ValueError):
        path = path.relative_to(Path.cwd())
    return str(path), node.name


def snapshot_key(case: Case, meaning: Meaning) -> str:
    """Which snapshot a case's outcome is kept in: its cassette's when the scenario preserves the
    meaning, else one of its own (`cassette::scenario::s<seed>[::point]`)."""
    if meaning is Meaning.PRESERVING:
        return case.cassette
    return case.id


# ---------------------------------------------------------------------------------------------
# Generated items


class MatrixCollector(pytest.Collector):
    """The virtual node the generated items hang from (no file behind it)."""

    def collect(self) -> list[pytest.Item | pytest.Collector]:
        return []  # items are made by the plugin's collection hook, not collected


class _MatrixItem(pytest.Item):
    def __init__(
        self,
        *,
        case_id: str,
        selection: Selection,
        catalog: CaseCatalog,
        strict: bool = False,
        results: MatrixResults | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.case_id = case_id
        self.selection = selection
        self.catalog = catalog
        self.strict = strict  # warnings fail too
        self.results = results  # the session's, when it takes this process's reports (not an xdist worker)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, CaseFailed | HarnessError):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style=style)


class CaseItem(_MatrixItem):
    """One case through one accumulator; fails with the diff and the replay commands."""

    def __init__(self, *, spec: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.spec = spec

    def runtest(self) -> None:
        case = self.catalog.case(self.selection, self.case_id)
        result = self.catalog.judge(self.spec, case)
        carried = self.results.carry(result) if self.results is not None else result_property(result)
        self.user_properties.append(carried)
        if result.verdict is Verdict.SKIPPED:
            pytest.skip(result.error or "the accumulator says this case is not for it")
        if result.fails(self.strict):
            raise CaseFailed(failure_text(result, self.selection, strict=self.strict))

    def reportinfo(self) -> tuple[Any, int | None, str]:
        return self.path, 0, f"toolstream {self.spec} {self.case_id}"  # a line: skip reports need one


class CompareItem(_MatrixItem):
    """One case through accumulators A and B; fails where their outcomes differ."""

    def __init__(self, *, specs: tuple[str, str], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.specs = specs

    def runtest(self) -> None:
        case = self.catalog.case(self.selection, self.case_id)
        a, b = (self.catalog.judge(spec, case) for spec in self.specs)
        lines = outcome_difference(a, b)
        pair = {"a": a.to_dict(), "b": b.to_dict(), "lines": lines}
        self.user_properties.append((COMPARE_KEY, json.dumps(pair)))
        if lines and counts(Difference(a, b, tuple(lines)), self.strict):
            raise CaseFailed(compare_text(a, b, lines, self.selection, strict=self.strict))

    def reportinfo(self) -> tuple[Any, int | None, str]:
        return self.path, 0, f"toolstream compare {self.case_id}"


def result_property(result: Result) -> tuple[str, str]:
    """A verdict as the user property its item's reports carry to the session's results."""
    return RESULT_KEY, json.dumps(result.to_dict())


def item_name(spec: str) -> str:
    """An accumulator spec as a node name: no spaces, no `::`, no brackets."""
    return pytest_item_name(spec)


# ---------------------------------------------------------------------------------------------
# Results of the session


class MatrixResults:
    """Every verdict reported in the session, in arrival order (xdist workers included).
    `strict`: warnings count as failures."""

    def __init__(self, strict: bool = False) -> None:
        self.strict = strict
        self.results: list[Result] = []
        self.pairs: list[tuple[Result, Result, tuple[str, ...]]] = []
        self._made: dict[str, Result] = {}  # property text -> the verdict it was made from (`carry`)

    def clear(self) -> None:
        """Let go of every verdict (the summary and the reports are written)."""
        self.results.clear()
        self.pairs.clear()
        self._made.clear()

    def carry(self, result: Result) -> tuple[str, str]:
        """`result_property(result)`, remembered: when its report arrives in this process (a
        serial run) `take` finds the verdict by its text instead of parsing the JSON back."""
        prop = result_property(result)
        self._made[prop[1]] = result
        return prop

    def take(self, user_properties: Iterable[tuple[str, Any]]) -> None:
        for key, value in user_properties:
            if key == RESULT_KEY:
                made = self._made.pop(value, None)
                self.results.append(made if made is not None else Result.from_dict(json.loads(value)))
            elif key == COMPARE_KEY:
                value = json.loads(value)
                a, b = Result.from_dict(value["a"]), Result.from_dict(value["b"])
                self.pairs.append((a, b, tuple(value["lines"])))

    def reports(self) -> list[Report]:
        """One report per accumulator, cases sorted by id (arrival order differs under xdist)."""
        by_spec: dict[str, list[Result]] = defaultdict(list)
        for result in self.results:
            by_spec[result.accumulator].append(result)
        ordered = {spec: sorted(found, key=lambda r: r.id) for spec, found in by_spec.items()}
        return [Report(spec, found, strict=self.strict) for spec, found in ordered.items()]

    def comparison(self) -> Comparison | None:
        if not self.pairs:
            return None
        pairs = sorted(self.pairs, key=lambda p: p[0].id)
        a = Report(pairs[0][0].accumulator, [p[0] for p in pairs], strict=self.strict)
        b = Report(pairs[0][1].accumulator, [p[1] for p in pairs], strict=self.strict)
        return Comparison(a, b, [Difference(x, y, lines) for x, y, lines in pairs if lines])

    def summary_lines(self) -> list[str]:
        """The terminal summary: counts per accumulator, failures by signature and by scenario."""
        lines: list[str] = []
        for report in self.reports():
            said = ", ".join(f"{report.count(v)} {v}" for v in Verdict if report.count(v))
            lines.append(f"{report.accumulator}: {len(report.results)} cases: {said}")
            lines.extend(_grouped(report.failures))
            if report.warnings:
                lines.extend(warning_lines(report.warnings, "--toolstream-strict"))
        comparison = self.comparison()
        if comparison is not None:
            total = len(comparison.a.results)
            lines.append(
                f"{comparison.a.accumulator} vs {comparison.b.accumulator}: "
                + (
                    f"agree on all {total} cases"
                    if comparison.agree
                    else f"differ on {len(comparison.differences)} of {total} cases"
                )
            )
            by_scenario = Counter(d.a.scenario for d in comparison.differences)
            for scenario, n in by_scenario.most_common(10):
                lines.append(f"  {n:>5}  {scenario}")
        return lines


def _grouped(failures: Sequence[Result]) -> list[str]:
    if not failures:
        return []
    ordered = list(failure_kinds(failures).items())  # numbered as the terminal and the HTML number them
    if len(ordered) == 1:
        out = [f"{len(failures)} failures, all: {ordered[0][0]}"]
        if group_tags(ordered[0][1]):
            out.append(f"  {group_tags(ordered[0][1]).strip()}")
    else:
        out = [f"{len(failures)} failures in {len(ordered)} kinds:"]
        for n, (sig, members) in enumerate(ordered, start=1):
            out.append(f"  {n:>3}. {len(members):>5}  {group_tags(members)}{sig}")
    out.append("by scenario:")
    by_scenario: dict[str, list[Result]] = defaultdict(list)
    for result in failures:
        by_scenario[result.scenario].append(result)
    # Each signature is said once, above: a scenario names the kinds it shows by their number.
    number = {sig: n for n, (sig, _) in enumerate(ordered, start=1)}
    for scenario, members in sorted(by_scenario.items(), key=lambda item: (-len(item[1]), item[0])):
        kinds = sorted({number[signature(r)] for r in members})
        word = "kind" if len(kinds) == 1 else "kinds"
        shown = "" if len(ordered) == 1 else f": {word} {', '.join(map(str, kinds))}"
        out.append(f"  {len(members):>5}  {scenario}{shown}")
    return out
