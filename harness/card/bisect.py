"""`toolstream bisect`: the first release of a library where one case's verdict changed.

Each release is graded in the card's side environment for it (`environments.build`, built once and
cached, or an environment the user points at), the case run through the library's adapter over the
stdio protocol exactly as the card runs it. The releases between the two ends are bisected: the
verdict of the oldest and of the newest is taken, then the middle one's, keeping the half whose ends
differ, so a range of N releases costs about log2(N) + 2 environments. The change found is the
first release whose verdict (and failure signature) is the newest one's; with more than one change
in the range, bisection finds one of them, as `git bisect` does.

A release that cannot be graded here (it does not install, its adapter does not start) is no
verdict: as `git bisect skip`, the release nearest the middle that can be graded is tried instead,
and when none between two graded releases can, the change is named as lying between them. Without
a verdict at both ends nothing can be told.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.card import environments
from harness.card.libraries import Library
from harness.errors import UsageError
from harness.matrix.runner import run_matrix
from harness.matrix.selection import Selection
from harness.oracle.verdict import Result, signature

__all__ = ["Bisection", "Graded", "bisect", "release_range"]

_RELEASE = re.compile(r"\d+(\.\d+)*")


@dataclass(frozen=True)
class Graded:
    """One release's verdict on the case."""

    version: str
    verdict: str
    signature: str  # the failure's kind ("pass" when it passes)
    error: str | None = None  # why the release could not be graded (the environment's problem)

    @property
    def said(self) -> str:
        if self.error is not None:
            return f"not graded ({self.error})"
        return self.verdict if self.verdict == self.signature else f"{self.verdict} ({self.signature})"

    def same(self, other: Graded) -> bool:
        return (self.verdict, self.signature) == (other.verdict, other.signature)

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "verdict": self.verdict,
            "signature": self.signature,
            "error": self.error,
        }


@dataclass(frozen=True)
class Bisection:
    """What bisecting found: the last release with the old verdict and the first with the new one
    (None when the two ends agree), and every release graded on the way, oldest first."""

    library: str
    case: str
    adapter: str
    graded: tuple[Graded, ...]
    before: Graded | None
    after: Graded | None
    ungraded_between: tuple[str, ...] = ()  # the releases between `before` and `after`, none graded

    @property
    def changed(self) -> bool:
        return self.after is not None

    @property
    def told(self) -> bool:
        """Whether both ends were graded (without that, no change can be told from none)."""
        return self.graded[0].error is None and self.graded[-1].error is None

    @property
    def changed_in(self) -> str | None:
        """The first release with the newest verdict, when bisection could name one."""
        return self.after.version if self.after is not None and not self.ungraded_between else None

    def summary(self) -> str:
        first, last = self.graded[0], self.graded[-1]
        if not self.told:
            end = first if first.error is not None else last
            return f"{self.library}: cannot tell: {end.version} {end.said}"
        if self.before is None or self.after is None:
            return (
                f"{self.library}: no change from {first.version} to {last.version}: {first.said} at both ends"
            )
        verdicts = f"{self.before.version} {self.before.said} -> {self.after.version} {self.after.said}"
        if self.ungraded_between:
            return (
                f"{self.library}: the verdict of {self.case} changed in {', '.join(self.ungraded_between)} "
                f"(not graded here) or {self.after.version}: {verdicts}"
            )
        return f"{self.library} {self.after.version} changed the verdict of {self.case}: {verdicts}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "library": self.library,
            "case": self.case,
            "adapter": self.adapter,
            "changed_in": self.changed_in,
            "before": self.before.to_dict() if self.before is not None else None,
            "after": self.after.to_dict() if self.after is not None else None,
            "ungraded_between": list(self.ungraded_between),
            "graded": [g.to_dict() for g in self.graded],
        }


def release_range(available: Sequence[str], wanted: str) -> list[str]:
    """The releases `wanted` names, oldest first: `A..B` (every final release from A to B of
    `available`, ends included; an end may be left out) or a comma-separated list as given."""
    if ".." not in wanted:
        listed = [v.strip() for v in wanted.split(",") if v.strip()]
        if len(listed) < 2:
            raise UsageError(f"--versions: give A..B or at least two releases, not {wanted!r}")
        return sorted(dict.fromkeys(listed), key=_key)
    low, _, high = wanted.partition("..")
    releases = sorted({v for v in available if _RELEASE.fullmatch(v)}, key=_key)
    for end in (low, high):
        if end and end not in releases:
            raise UsageError(
                f"--versions: {end!r} is not a release here (known: {', '.join(releases[-8:])} ...)"
            )
    start = releases.index(low) if low else 0
    stop = releases.index(high) + 1 if high else len(releases)
    chosen = releases[start:stop]
    if len(chosen) < 2:
        raise UsageError(f"--versions: {wanted!r} holds fewer than two releases")
    return chosen


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", version))


def bisect(
    library: Library,
    case_id: str,
    versions: Sequence[str],
    *,
    adapter: str | None = None,
    environments_at: Mapping[str, str] | None = None,
    selection: Selection | None = None,
    say: Callable[[str], None] = print,
    grade: Callable[[str], Graded] | None = None,
    timeout: float | None = 30.0,
) -> Bisection:
    """Bisect `versions` (oldest first) for the first release whose verdict on `case_id` is the
    newest one's. `environments_at`: a release -> an interpreter (or a virtualenv) to grade it in
    instead of building one; `grade`: how one release is graded (default: in its environment);
    `timeout`: seconds the case may take in a release (a release that hangs on it is `timeout`)."""
    spec = adapter or library.adapter
    pointed = dict(environments_at or {})
    base = selection or Selection()

    def graded_in_environment(version: str) -> Graded:
        try:
            python = _python(pointed[version]) if version in pointed else None
            if python is None:
                python = environments.build(library, version, say=say).python
        except environments.EnvironmentProblem as exc:
            return Graded(version, "not graded", "not graded", str(exc))
        command = f"cmd:{python} -m harness.cli serve-accumulator {spec}"
        one = Selection(cassettes=base.cassettes, scenarios_dir=base.scenarios_dir, cases=(case_id,))
        results = run_matrix(command, one, timeout=timeout).results
        if not results:
            raise UsageError(f"case {case_id!r}: not in the selection")
        problem = environments.start_problem(spec, results[0].error)
        if problem is not None:  # the environment's problem, not the release's verdict
            return Graded(version, "not graded", "not graded", problem)
        return _graded(version, results[0])

    run = grade or graded_in_environment
    seen: dict[str, Graded] = {}

    def at(index: int) -> Graded:
        version = versions[index]
        if version not in seen:
            say(f"{library.name} {version}: grading {case_id}")
            seen[version] = run(version)
            say(f"{library.name} {version}: {seen[version].said}")
        return seen[version]

    low, high = 0, len(versions) - 1
    old, new = at(low), at(high)
    before = after = None
    between: tuple[str, ...] = ()
    if not old.same(new) and old.error is None and new.error is None:
        # invariant: versions[low] has the old verdict, versions[high] the new, both graded
        while (middle := _untried_middle(low, high, versions, seen)) is not None:
            found = at(middle)
            if found.error is not None:  # no verdict: another release of the range is tried
                continue
            if found.same(new):
                high = middle
            else:
                low = middle
        before, after = at(low), at(high)
        between = tuple(versions[low + 1 : high])  # each one tried and not graded
    graded = tuple(seen[v] for v in versions if v in seen)
    return Bisection(library.name, case_id, spec, graded, before, after, between)


def _untried_middle(low: int, high: int, versions: Sequence[str], seen: Mapping[str, Graded]) -> int | None:
    """The release strictly between `low` and `high` nearest their middle not yet tried, or None."""
    untried = [i for i in range(low + 1, high) if versions[i] not in seen]
    middle = (low + high) // 2
    return min(untried, key=lambda i: (abs(i - middle), i), default=None)


def _graded(version: str, result: Result) -> Graded:
    return Graded(version, str(result.verdict), signature(result))


def _python(path: str) -> str:
    """An interpreter given as itself or as its virtualenv."""
    where = Path(path)
    candidate = where / "bin" / "python" if where.is_dir() else where
    if not candidate.exists():
        raise UsageError(f"--env: {path!r} is no interpreter and no virtualenv")
    return str(candidate)
