"""A report card from matrix reports: one row per library and version, each failure signature
once with its worst case, and what changed between versions of the same library.

Everything here works from the JSON documents `toolstream check --json` writes (`report_to_dict`),
so a card can be rebuilt from stored reports without running anything.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from harness.accumulators.client import REFUSED
from harness.card.environments import source_root
from harness.card.known import KnownIssue, find_known
from harness.card.libraries import LIBRARIES
from harness.card.repros import repro_scripts
from harness.oracle.severity import WORST_FIRST
from harness.oracle.verdict import FAILING, Verdict, root_cause, signature

__all__ = ["CARD_VERSION", "Graded", "card", "changes", "does_not_run", "root_causes", "row", "version_key"]

CARD_VERSION = 1
_SEVERITY_ORDER = WORST_FIRST
_CLASS_ORDER = {"spec": 0, "quirk": 1, "policy": 2}
EXAMPLES = 5  # case ids kept per scenario in a change between versions


@dataclass
class Graded:
    """One library version: its matrix report (a `report_to_dict` document) or why there is none."""

    library: str
    version: str
    adapter: str
    report: Mapping[str, Any] | None = None
    problem: str | None = None
    # Cases left out because a row it goes through gives them the same verdict: row -> count.
    shared: dict[str, int] = field(default_factory=dict)
    note: str | None = None  # why this release was graded and not a newer one
    site_packages: str | None = None  # where the graded release is installed (its lines are read there)
    cutoff: str | None = None  # its dependencies were uploaded before this time (UTC)
    undated: str | None = None  # why its dependencies are not dated (the build day's releases)


def version_key(version: str) -> tuple[tuple[int, ...], str]:
    """Releases in order: numeric parts compared as numbers."""
    return tuple(int(n) for n in re.findall(r"\d+", version)), version


def _failing(case: Mapping[str, Any]) -> bool:
    return Verdict(case["verdict"]) in FAILING


def _rank(case: Mapping[str, Any]) -> tuple[int, int, int, str]:
    """How bad a failing case is: its severity (an error or timeout after lost), then spec before
    quirk before policy, then an unmutated stream first (the most convincing reproduction)."""
    severity = case.get("severity")
    rank = _SEVERITY_ORDER.index(severity) if severity in _SEVERITY_ORDER else len(_SEVERITY_ORDER) - 0.5
    return (
        int(rank * 2),
        _CLASS_ORDER.get(str(case.get("class")), 3),
        0 if case.get("scenario") == "original" else 1,
        str(case["id"]),
    )


def _own(case: Mapping[str, Any]) -> Mapping[str, Any]:
    """The case with its error as the library gave it: the stdio runner's `SPEC: case ID: `
    prefix (which names the environment's path) is not part of the library's error."""
    error = case.get("error")
    prefix = f"{case.get('accumulator')}: case {case['id']}: "
    if error and error.startswith(prefix):
        return {**case, "error": error[len(prefix) :]}
    return case


def _signature(case: Mapping[str, Any]) -> str:
    """The case's signature as the library gave it (`_own`)."""
    return signature(_own(case))


def _example(case: Mapping[str, Any]) -> str:
    error = (case.get("error") or str(case["verdict"])).removeprefix(
        f"{case.get('accumulator')}: case {case['id']}: "
    )
    lines = list(case.get("diff") or []) or [error.splitlines()[0] if error else ""]
    text = lines[0] if lines else ""
    return text if len(text) <= 200 else text[:199] + "…"


def row(
    graded: Graded,
    known: Callable[[str, str, str, str | None], KnownIssue | None] = find_known,
    repros: Mapping[tuple[str, str], str] | None = None,
) -> dict[str, Any]:
    """The card's row for one library version. `repros`: (library, case id) -> a standalone
    script reproducing that case (default: examples/repros/ of this checkout)."""
    scripts = repro_scripts(source_root()) if repros is None else repros
    out: dict[str, Any] = {
        "library": graded.library,
        "version": graded.version,
        "adapter": graded.adapter,
        "problem": graded.problem,
    }
    if graded.note:
        out["note"] = graded.note
    if graded.cutoff:
        out["dependencies_before"] = graded.cutoff
    if graded.undated:
        out["dependencies_undated"] = graded.undated
    if graded.shared:
        out["shared"] = graded.shared
    if graded.report is None:
        return out
    stopped = does_not_run(graded.report.get("cases", []))
    cases = [c for c in graded.report.get("cases", []) if c["verdict"] != Verdict.SKIPPED]
    if stopped:
        out["does_not_run"] = stopped
        cases = [c for c in cases if c.get("dialect") not in stopped]
        if not cases:
            said = "; ".join(f"{d} streams: {why}" for d, why in stopped.items())
            out["problem"] = f"does not run here ({said})"
            return out
    out["cases"] = len(cases)
    out["verdicts"] = {str(v): n for v in Verdict if (n := sum(c["verdict"] == v for c in cases))}
    by_class: dict[str, Counter[str]] = defaultdict(Counter)
    by_severity: Counter[str] = Counter()
    for case in cases:
        by_class[str(case.get("class"))][case["verdict"]] += 1
        if case["verdict"] != Verdict.PASS:
            by_severity[case.get("severity") or case["verdict"]] += 1
    out["by_class"] = {c: dict(by_class[c]) for c in sorted(by_class, key=lambda c: _CLASS_ORDER.get(c, 3))}
    out["by_severity"] = dict(sorted(by_severity.items(), key=lambda kv: _severity_sort(kv[0])))
    # Cases are grouped by what the library did (the signature) and what explains it: a known
    # issue covers the cases of its evidence only, the rest of the signature stands apart.
    groups: dict[tuple[str, KnownIssue | None], list[Mapping[str, Any]]] = defaultdict(list)
    for case in cases:
        if case["verdict"] != Verdict.PASS:  # warnings too: a cosmetic difference is still one
            sig = _signature(case)
            groups[(sig, known(graded.library, sig, str(case["id"]), case.get("scenario")))].append(case)
    signatures = []
    for (sig, issue), members in groups.items():
        worst = min(members, key=_rank)
        signatures.append(
            {
                "signature": sig,
                "cases": len(members),
                "verdict": "fail" if any(_failing(c) for c in members) else "warn",
                "severity": worst.get("severity") or worst["verdict"],
                "classes": dict(Counter(str(c.get("class")) for c in members).most_common()),
                "worst": worst["id"],
                "example": _example(worst),
                "known": _checked(issue.to_dict(), graded) if issue is not None else None,
                "repros": sorted(
                    {scripts[key] for c in members if (key := (graded.library, str(c["id"]))) in scripts}
                ),
            }
        )
    signatures.sort(
        key=lambda s: (
            s["verdict"] == "warn",
            _severity_sort(s["severity"]),
            -s["cases"],
            s["signature"],
            s["worst"],
        )
    )
    out["signatures"] = signatures
    out["root_causes"] = root_causes([c for c in cases if c["verdict"] != Verdict.PASS])
    return out


def root_causes(cases: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A row's failing and warning cases grouped a level above their signatures
    (`verdict.root_cause`: the same raise site in the library, else the same raise or the same
    first difference), each with its scenarios: one bug a recording shows under many signatures
    is one entry. Ordered as the signatures are: failures first, the worst severity, the largest."""
    groups: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for case in cases:
        groups[root_cause(_own(case))].append(case)
    out = []
    for cause, members in groups.items():
        worst = min(members, key=_rank)
        scenarios = Counter(str(c.get("scenario")) for c in members)
        out.append(
            {
                "root_cause": cause,
                "cases": len(members),
                "verdict": "fail" if any(_failing(c) for c in members) else "warn",
                "severity": worst.get("severity") or worst["verdict"],
                "classes": dict(Counter(str(c.get("class")) for c in members).most_common()),
                "signatures": dict(Counter(_signature(c) for c in members).most_common()),
                "scenarios": dict(sorted(scenarios.items(), key=lambda kv: (-kv[1], kv[0]))),
                "recordings": len({str(c.get("cassette")) for c in members}),
                "worst": worst["id"],
            }
        )
    out.sort(
        key=lambda g: (g["verdict"] == "warn", _severity_sort(g["severity"]), -g["cases"], g["root_cause"])
    )
    return out


def _raise_of(case: Mapping[str, Any]) -> str | None:
    """What a case's library (or adapter) raised: the adapter's error, else an outcome in state
    error; None when it raised nothing."""
    actual = case.get("actual") or {}
    if case.get("error"):
        return str(case["error"])
    if actual.get("state") == "error":
        return str(actual.get("error") or "an error")
    return None


def does_not_run(cases: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """The dialects whose unmutated recordings (`original`) the release cannot even stream here:
    every `original` case of the dialect fails with a raise, or is skipped as a request the library
    refused before reading the stream (`client.REFUSED`: a release beside an SDK it cannot call).
    Each with the reason, its first raise: the environment's fault or the adapter's, not stream
    handling, so those cases are not graded (a recording the release reads, or fails without a
    raise, keeps the dialect)."""
    originals: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for case in cases:
        if case.get("scenario") == "original" and (
            case["verdict"] != Verdict.SKIPPED or REFUSED in str(case.get("error"))
        ):
            originals[str(case.get("dialect"))].append(case)
    stopped = {}
    for dialect, members in originals.items():
        raises = [_raise_of(c) if _failing(c) or c["verdict"] == Verdict.SKIPPED else None for c in members]
        if all(raises):
            first = str(raises[0]).removeprefix(f"{members[0].get('accumulator')}: case {members[0]['id']}: ")
            stopped[dialect] = first.split(f"{REFUSED}: ", 1)[-1].splitlines()[0][:300]
    return dict(sorted(stopped.items()))


def _checked(known: dict[str, Any], graded: Graded) -> dict[str, Any]:
    """A known issue with its library line read again in the graded release: kept (at its line, or
    where the same text moved to, the nearest), or dropped and said so (`source_note`). Without the
    release at hand (a card rebuilt from stored reports) the line is shown as quoted, for its own
    version."""
    source = known.get("source")
    if not source or graded.site_packages is None:
        return known
    try:
        lines = (Path(graded.site_packages) / source["file"]).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        lines = []
    text = str(source["text"]).strip()
    at = [n for n, line in enumerate(lines, start=1) if line.strip() == text]
    release = " ".join(filter(None, (source.get("package"), source["version"])))
    if not at:
        quoted = f"`{source['file']}:{source['line']}` in {release}"
        note = f"the quoted line ({quoted}) is not in {graded.version}"
        return {**known, "source": None, "source_note": note}
    line = min(at, key=lambda n: abs(n - int(source["line"])))
    moved = line != source["line"] or source["version"] != graded.version
    # A line of another distribution (`package`) keeps that one's version.
    checked = {**source, "line": line, **({} if source.get("package") else {"version": graded.version})}
    return {**known, "source": checked, "source_note": f"read in {graded.version}" if moved else None}


def _severity_sort(severity: str) -> int:
    order = [*_SEVERITY_ORDER, "error", "timeout", "fail", "warn"]
    return order.index(severity) if severity in order else len(order)


def changes(graded: Sequence[Graded]) -> list[dict[str, Any]]:
    """For each library with several graded versions, each pair of consecutive versions: the cases
    that stopped failing (`fixed`) and those that started (`broken`), by scenario. Two client
    programs on one package (`ai`: `generateText` and `readUIMessageStream`) are two surfaces of
    it, not two versions: versions are paired within one adapter."""
    by_library: dict[tuple[str, str], list[Graded]] = defaultdict(list)
    for g in graded:
        if g.report is not None:
            by_library[(g.library, g.adapter.split(" ", 1)[0])].append(g)
    out = []
    for (library, _), versions in by_library.items():
        versions.sort(key=lambda g: version_key(g.version))
        for old, new in itertools.pairwise(versions):
            before, after = _running(old), _running(new)
            common = [
                i
                for i in before
                if i in after and Verdict.SKIPPED not in (before[i]["verdict"], after[i]["verdict"])
            ]
            fixed = [i for i in common if _failing(before[i]) and not _failing(after[i])]
            broken = [i for i in common if not _failing(before[i]) and _failing(after[i])]
            out.append(
                {
                    "library": library,
                    "from": old.version,
                    "to": new.version,
                    "cases": len(common),
                    "fixed": _by_scenario(fixed, before),
                    "broken": _by_scenario(broken, after),
                }
            )
    return out


def _running(graded: Graded) -> dict[str, Mapping[str, Any]]:
    """A row's cases by id, but those of the dialects it does not run here (`does_not_run`)."""
    cases = (graded.report or {}).get("cases", [])
    stopped = does_not_run(cases)
    return {c["id"]: c for c in cases if c.get("dialect") not in stopped}


def _by_scenario(ids: Sequence[str], cases: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    groups: dict[str, list[str]] = defaultdict(list)
    for case_id in ids:
        groups[str(cases[case_id]["scenario"])].append(case_id)
    return [
        {"scenario": scenario, "cases": len(members), "examples": members[:EXAMPLES]}
        for scenario, members in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    ]


def card(
    graded: Sequence[Graded], *, date: str, selection: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The whole card as plain data (what `report-card.json` holds and every rendering reads)."""
    # Python libraries first, then the programs run through the replay server (`client:...`),
    # then the gateways (`gateway:...`).
    kinds = ("client:", "gateway:")
    ordered = sorted(
        graded,
        key=lambda g: (
            next((n for n, kind in enumerate(kinds, 1) if g.adapter.startswith(kind)), 0),
            g.library,
            version_key(g.version),
        ),
    )
    return {
        "version": CARD_VERSION,
        "date": date,
        "selection": dict(selection or {}),
        "rows": [row(g) for g in _without_repeats(ordered)],
        "changes": changes(ordered),
    }


def _outcome(case: Mapping[str, Any]) -> tuple[str, str]:
    """A case's verdict and, when it does not pass, its signature: what two rows agree on."""
    return case["verdict"], _signature(case) if case["verdict"] != Verdict.PASS else ""


def _without_repeats(graded: Sequence[Graded]) -> list[Graded]:
    """Each row as graded, but for a library graded through others (`Library.via`): its cases that
    the newest graded release of one of those gives the same verdict and signature are left out of
    its row (counted there, not twice), and the row says how many (`shared`)."""
    newest: dict[str, Graded] = {}
    for g in graded:
        if g.report is not None and (
            g.library not in newest or version_key(g.version) > version_key(newest[g.library].version)
        ):
            newest[g.library] = g
    out = []
    for g in graded:
        lib = LIBRARIES.get(g.library)
        others = [newest[name] for name in (lib.via if lib else ()) if name in newest]
        if g.report is None or not others:
            out.append(g)
            continue
        seen = {
            str(c["id"]): (other, _outcome(c))
            for other in others
            for c in (other.report or {}).get("cases", [])
        }
        kept, shared = [], Counter[str]()
        for c in g.report.get("cases", []):
            found = seen.get(str(c["id"]))
            if found is not None and found[1] == _outcome(c) and c["verdict"] != Verdict.SKIPPED:
                shared[f"{found[0].library} {found[0].version}"] += 1
            else:
                kept.append(c)
        report = {**g.report, "cases": kept}
        out.append(replace(g, report=report, shared=dict(shared)))
    return out
