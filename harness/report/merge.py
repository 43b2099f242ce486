"""One report from many: the JSON reports of the shards of one run, merged into the report the
whole run writes (`toolstream report merge`).

A shard is a run over part of one matrix: a pytest session under pytest-shard or pytest-split
(`--toolstream-json`), or a `toolstream check --json` over part of a selection. The shards must
have run one matrix, or the merge is refused with one line naming the file and the problem
(`UsageError`, exit 2):
- each is the report of one accumulator (`report_to_dict`; a compare or a session of several
  accumulators is not merged), of this report format;
- all were written by one toolstream version, for one accumulator, strictness and selection, and
  name one matrix (`matrix`: the ids a whole run reports, which the pytest plugin writes);
- no case is in two of them;
- none of the matrix is missing: the ids are the documents' `matrix`, else the selection's, listed
  by `harness.matrix.catalog` (without building a case where the shipped ids hold them) when its
  files are here and this is the toolstream that wrote the shards. When neither is known the merge
  says so (`Merged.unchecked`) and goes on.

The merged report is the whole run's: its cases in the whole run's order (the matrix's when known,
else by id as the plugin orders them), its seconds the shards' summed (the one thing that differs
from a whole run's, with each case's own timing).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from harness import bounded
from harness._version import __version__
from harness.errors import HarnessError, UsageError
from harness.matrix.catalog import list_ids
from harness.matrix.selection import Matrix, Selection
from harness.oracle.verdict import Report, Result
from harness.report.results import REPORT_VERSION, report_to_dict
from harness.text.escape import terminal_line

__all__ = ["Merged", "Shard", "merge", "read_shard"]

_NAMED: Final = 5  # case ids named in a message before "and N more"
MAX_BYTES: Final = 1 << 30  # a report of the whole bundled matrix is tens of MB


class _Absent:
    """A key the document does not have (an older writer, or `check`, which writes no `matrix`)."""

    def __repr__(self) -> str:
        return "absent"


ABSENT: Final = _Absent()


@dataclass(frozen=True)
class Shard:
    """One shard's report as read: its results and what says which matrix it ran."""

    path: Path
    report: Report
    harness: str | None
    selection: Selection | None
    matrix: list[str] | _Absent | None


@dataclass(frozen=True)
class Merged:
    """The whole run's report, its selection, and its JSON document. `unchecked`: why no case
    was checked missing, when the matrix could not be known (None: it was checked)."""

    report: Report
    selection: Selection | None
    document: dict[str, Any]
    unchecked: str | None


def merge(paths: Sequence[str | Path]) -> Merged:
    """The shards' reports merged into the whole run's, after checking they ran one matrix."""
    if not paths:
        raise UsageError("report merge: name at least one JSON report")
    shards = [read_shard(path) for path in paths]
    first = shards[0]
    for shard in shards[1:]:
        _same_run(first, shard)
    _no_case_twice(shards)
    expected, unchecked = _matrix(first)
    present = {r.id for shard in shards for r in shard.report.results}
    if expected is not None:
        missing = [case_id for case_id in expected if case_id not in present]
        if missing:
            where = _name(first.path) + (f" and {len(shards) - 1} other reports" if len(shards) > 1 else "")
            raise UsageError(
                f"{where}: {len(missing)} cases of the matrix are in no report: {_some(missing)}"
            )
    place = {case_id: n for n, case_id in enumerate(expected or ())}
    results = sorted(
        (r for shard in shards for r in shard.report.results),
        key=lambda r: (place.get(r.id, len(place)), r.id),
    )
    seconds = sum(shard.report.seconds for shard in shards)
    report = Report(first.report.accumulator, results, seconds, first.report.strict)
    matrix = first.matrix
    if isinstance(matrix, _Absent):  # as the whole run wrote it: `check` writes no matrix
        document = report_to_dict(report, first.selection)
    else:
        document = report_to_dict(report, first.selection, matrix=matrix)
    return Merged(report, first.selection, document, unchecked)


# ---------------------------------------------------------------------------------------------
# Reading one shard


def read_shard(path: str | Path) -> Shard:
    """A JSON report as `check --json` or the pytest plugin writes it; a file that is not one is
    a `UsageError` naming it and the field."""
    path = Path(path)
    where = _name(path)
    try:
        data = bounded.loads(bounded.read(path, MAX_BYTES), finite=True)
    except bounded.TooLarge:
        raise UsageError(f"{where}: over the {MAX_BYTES:,} bytes a report may have") from None
    except FileNotFoundError:
        raise UsageError(f"{where}: no such file") from None
    except IsADirectoryError:
        raise UsageError(f"{where}: a folder, not a JSON report") from None
    except OSError as exc:
        raise UsageError(f"{where}: cannot read: {exc.strerror}") from None
    except (ValueError, RecursionError) as exc:  # not JSON, not UTF-8, or nested too deep
        raise UsageError(f"{where}: not a JSON report ({terminal_line(str(exc))[:200]})") from None
    if not isinstance(data, dict):
        raise UsageError(f"{where}: not a JSON report (an object with summary and cases)")
    if "differences" in data:
        raise UsageError(f"{where}: a compare report; report merge merges the reports of one accumulator")
    if "reports" in data:
        raise UsageError(
            f"{where}: a report of several accumulators; run each shard with one accumulator to merge them"
        )
    if data.get("version") != REPORT_VERSION:
        raise UsageError(
            f"{where}: version: {_shown(data.get('version'))}; this toolstream reads {REPORT_VERSION}"
        )
    summary = _field(data, "summary", dict, where)
    accumulator = _field(summary, "accumulator", str, where, "summary.")
    strict = _field(summary, "strict", bool, where, "summary.")
    seconds = summary.get("seconds", 0.0)
    if (
        isinstance(seconds, bool)
        or not isinstance(seconds, int | float)
        or not math.isfinite(seconds)
        or seconds < 0
    ):
        raise UsageError(f"{where}: summary.seconds: must be a number of seconds, not {_shown(seconds)}")
    harness = data.get("harness")
    if harness is not None and not isinstance(harness, str):
        raise UsageError(f"{where}: harness: must be a version string, not {_shown(harness)}")
    cases = _field(data, "cases", list, where)
    results = []
    for n, item in enumerate(cases):
        if not isinstance(item, dict):
            raise UsageError(f"{where}: cases[{n}]: must be an object, not {_shown(item)}")
        try:
            results.append(Result.from_dict(item))
        except (KeyError, TypeError, ValueError, AttributeError, HarnessError) as exc:
            what = f"no {exc.args[0]!r}" if isinstance(exc, KeyError) else terminal_line(str(exc))[:200]
            raise UsageError(f"{where}: cases[{n}]: not a case's result ({what})") from None
        if not isinstance(results[-1].id, str) or results[-1].accumulator != accumulator:
            raise UsageError(
                f"{where}: cases[{n}].accumulator: {_shown(item.get('accumulator'))}, "
                f"not the summary's {_shown(accumulator)}"
            )
    selection = _selection(data["selection"], where) if "selection" in data else None
    matrix = _matrix_field(data["matrix"], where) if "matrix" in data else ABSENT
    return Shard(path, Report(accumulator, results, float(seconds), strict), harness, selection, matrix)


def _field(data: Mapping[str, Any], key: str, kind: type, where: str, prefix: str = "") -> Any:
    value = data.get(key)
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
        raise UsageError(f"{where}: {prefix}{key}: must be {_KINDS[kind]}, not {_shown(value)}")
    return value


_KINDS: Final = {dict: "an object", list: "a list", str: "a string", bool: "true or false"}


def _selection(data: Any, where: str) -> Selection | None:
    if data is None:
        return None
    if not isinstance(data, dict):
        raise UsageError(f"{where}: selection: must be an object, not {_shown(data)}")
    lists = {}
    for key in ("cassettes", "scenarios", "dialects", "cases"):
        value = data.get(key, [])
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise UsageError(f"{where}: selection.{key}: must be a list of strings, not {_shown(value)}")
        lists[key] = tuple(value)
    scenarios_dir, seeds = data.get("scenarios_dir"), data.get("seeds")
    if scenarios_dir is not None and not isinstance(scenarios_dir, str):
        raise UsageError(
            f"{where}: selection.scenarios_dir: must be a folder or null, not {_shown(scenarios_dir)}"
        )
    if seeds is not None and (isinstance(seeds, bool) or not isinstance(seeds, int) or seeds < 1):
        raise UsageError(f"{where}: selection.seeds: must be a count of seeds or null, not {_shown(seeds)}")
    return Selection(scenarios_dir=scenarios_dir, seeds=seeds, **lists)


def _matrix_field(data: Any, where: str) -> list[str] | None:
    if data is None:
        return None
    if not isinstance(data, list) or not all(isinstance(item, str) for item in data):
        raise UsageError(f"{where}: matrix: must be a list of case ids or null, not {_shown(data)}")
    if len(set(data)) != len(data):
        raise UsageError(f"{where}: matrix: names a case id twice")
    return data


# ---------------------------------------------------------------------------------------------
# Checking the shards ran one matrix


def _same_run(first: Shard, shard: Shard) -> None:
    """`shard` ran what `first` ran: one toolstream, accumulator, strictness, selection, matrix."""
    said = {
        "toolstream version": (shard.harness, first.harness),
        "accumulator": (shard.report.accumulator, first.report.accumulator),
        "strict": (shard.report.strict, first.report.strict),
        "selection": (shard.selection, first.selection),
        "matrix": (shard.matrix, first.matrix),
    }
    for what, (mine, theirs) in said.items():
        if mine != theirs:
            shown = "" if what in ("selection", "matrix") else f" ({_shown(mine)}, not {_shown(theirs)})"
            raise UsageError(
                f"{_name(shard.path)}: {what} differs from {_name(first.path)}'s{shown}: "
                "the reports are not shards of one run"
            )


def _no_case_twice(shards: Sequence[Shard]) -> None:
    seen: dict[str, Path] = {}
    for shard in shards:
        inside: set[str] = set()
        twice: list[str] = []
        elsewhere: dict[str, Path] = {}
        for result in shard.report.results:
            if result.id in inside:
                twice.append(result.id)
            elif result.id in seen:
                elsewhere.setdefault(result.id, seen[result.id])
            inside.add(result.id)
        if twice:
            raise UsageError(f"{_name(shard.path)}: {len(twice)} cases twice in it: {_some(twice)}")
        if elsewhere:
            others = list(dict.fromkeys(elsewhere.values()))
            also = _name(others[0]) + (" and other reports" if len(others) > 1 else "")
            raise UsageError(
                f"{_name(shard.path)}: {len(elsewhere)} cases also in {also}: {_some(list(elsewhere))}"
            )
        seen.update(dict.fromkeys(inside, shard.path))


def _matrix(shard: Shard) -> tuple[list[str] | None, str | None]:
    """The ids a whole run reports, in its order, and why they are not known when they are not."""
    if isinstance(shard.matrix, list):
        return shard.matrix, None
    if shard.matrix is None:
        return None, "the reports do not know their whole matrix (a session of toolstream_case tests)"
    if shard.selection is None:
        return None, "the reports carry no selection"
    if shard.harness != __version__:
        wrote = shard.harness or "an older version"
        return None, f"the reports were written by toolstream {wrote}, this is {__version__}"
    try:
        return list(list_ids(Matrix(shard.selection))), None
    except HarnessError as exc:
        return None, f"the selection's cases cannot be listed here ({terminal_line(str(exc))[:200]})"


def _some(ids: Sequence[str]) -> str:
    shown = ", ".join(terminal_line(case_id) for case_id in ids[:_NAMED])
    return shown + (f" and {len(ids) - _NAMED} more" if len(ids) > _NAMED else "")


def _name(path: Path) -> str:
    return terminal_line(str(path))


def _shown(value: Any) -> str:
    return terminal_line(repr(value))[:80]
