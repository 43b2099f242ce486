"""A baseline of verdicts: each case's verdict and failure signature as they were on a run kept
as the reference, so a later run fails only where a case got worse (a pass that fails, a
warning that fails, a known failure that changed signature) and says where one got better.

The way to keep CI green on a framework's known bugs: write the baseline once, then every run
holds the line. Kept by syrupy next to a pytest test (`harness.plugin.snapshot`), or in a file of
its own for `toolstream check --baseline FILE` (YAML: case id -> verdict and signature).

    verdict ranks: pass, skipped = 0 < warn = 1 < fail, error, timeout = 2
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any, Final

import yaml

from harness import bounded, files
from harness.bounded.yaml import plain_data
from harness.errors import UsageError
from harness.oracle.verdict import Result, Verdict, signature

__all__ = ["Change", "Entry", "compare", "entry_of", "read_baseline", "write_baseline"]

MAX_BASELINE: Final = 64 << 20  # a baseline of every case of every dialect is a few MiB
_RANK: Final = {
    Verdict.PASS: 0,
    Verdict.SKIPPED: 0,
    Verdict.WARN: 1,
    Verdict.FAIL: 2,
    Verdict.ERROR: 2,
    Verdict.TIMEOUT: 2,
}


class Change(StrEnum):
    """How a case's verdict compares with its baseline."""

    SAME = "same"  # the same verdict (and, failing, the same signature)
    BETTER = "better"  # a lower rank: the baseline can be tightened
    WORSE = "worse"  # a higher rank, or a known failure with another signature
    NEW = "new"  # no baseline entry: judged as without a baseline


@dataclass(frozen=True, slots=True)
class Entry:
    """A case's verdict as a baseline keeps it: the signature only where it fails or warns."""

    verdict: Verdict
    signature: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"verdict": str(self.verdict)}
        if self.signature is not None:
            out["signature"] = self.signature
        return out

    @classmethod
    def from_dict(cls, data: Any, where: str) -> Entry:
        if not isinstance(data, Mapping) or not isinstance(data.get("verdict"), str):
            raise UsageError(f"{where}: expected a mapping with a verdict")
        try:
            verdict = Verdict(data["verdict"])
        except ValueError:
            raise UsageError(
                f"{where}: verdict {data['verdict']!r} is not one of {', '.join(Verdict)}"
            ) from None
        sig = data.get("signature")
        return cls(verdict, str(sig) if sig is not None else None)

    def __str__(self) -> str:
        return f"{self.verdict} ({self.signature})" if self.signature else str(self.verdict)


def entry_of(result: Result) -> Entry:
    """What a baseline keeps of a verdict."""
    failing = _RANK[result.verdict] > 0
    return Entry(result.verdict, signature(result) if failing else None)


def compare(stored: Entry | None, current: Entry) -> Change:
    """How `current` compares with the baseline's `stored` entry (None: the case has none)."""
    if stored is None:
        return Change.NEW
    before, now = _RANK[stored.verdict], _RANK[current.verdict]
    if now > before:
        return Change.WORSE
    if now < before:
        return Change.BETTER
    if now == 2 and stored.signature != current.signature:
        return Change.WORSE
    return Change.SAME


def read_baseline(path: Path) -> dict[str, Entry]:
    """A baseline file: case id -> entry; a file that does not exist is an empty baseline."""
    if not path.exists():
        return {}
    text = bounded.read_input(path, MAX_BASELINE, "a baseline")
    data = plain_data(text, path, error=UsageError) or {}
    cases = data.get("cases") if isinstance(data, Mapping) else None
    if not isinstance(cases, Mapping):
        raise UsageError(f"{path}: field cases: expected a mapping of case id to verdict")
    return {str(k): Entry.from_dict(v, f"{path}: field cases.{k}") for k, v in cases.items()}


def write_baseline(path: Path, results: Iterable[Result]) -> None:
    """Write the verdicts of `results` as a baseline file (atomically, cases sorted by id)."""
    cases = {r.id: entry_of(r).to_dict() for r in sorted(results, key=lambda r: r.id)}
    text = yaml.safe_dump({"cases": cases}, sort_keys=False, allow_unicode=True, width=200)
    files.write(path, text.encode("utf-8"))
