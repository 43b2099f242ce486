"""The card's verdicts kept from one run to the next: the same library release in the same
environment, judged by the same harness code over the same selection, gets the same verdicts.

A row's key (`row_key`) names what it ran (the row, the versions its environment holds, the
Python or Node that ran it, the program's own files for a client), the harness that judged it
(`fingerprint`: every `.py` file of the package, the bundled cassettes and scenarios) and what
was asked (the selection and the per-case timeout). Its report is stored under the key's hash in
`report-card/verdicts/` of the harness's cache (`$TOOLSTREAM_CACHE`), with the key beside it: an
entry is used only when it holds that very key and a report, so a corrupt, truncated or foreign
file is ignored (and written again), never trusted. Entries are written whole or not at all (a
temporary file, then a rename).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from harness import bounded, files
from harness.errors import HarnessError

__all__ = ["VERSION", "VerdictCache", "files_digest", "fingerprint", "row_key"]

VERSION = 1  # of an entry's layout: another layout is not read
DURATIONS = "durations.json"  # row -> seconds it took when last graded
MAX_ENTRY_BYTES = 1 << 30  # a row's report over the whole bundled matrix is tens of MB
_FINGERPRINTS: dict[Path, str] = {}


def files_digest(paths: Iterable[Path], root: Path) -> str:
    """A hash of these files' names (relative to `root`) and contents, in name order."""
    digest = hashlib.sha256()
    for path in sorted(paths, key=lambda p: p.relative_to(root).as_posix()):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        try:
            digest.update(hashlib.sha256(path.read_bytes()).digest())
        except OSError:
            digest.update(b"unreadable")
    return digest.hexdigest()


def fingerprint(package: Path | None = None) -> str:
    """The harness code that can change a verdict: the package's `.py` files and the bundled
    cassettes and scenarios (all of them, to be safe). Computed once a process per package."""
    from harness.cassettes.corpus import bundled

    here = (package or Path(__file__).resolve().parent.parent).resolve()
    if here not in _FINGERPRINTS:
        parts = [files_digest((p for p in here.rglob("*.py") if "__pycache__" not in p.parts), here)]
        for kind in ("cassettes", "scenarios"):
            folder = bundled(kind) if package is None else here.parent / kind
            files = [p for p in folder.rglob("*") if p.is_file()] if folder.is_dir() else []
            parts.append(files_digest(files, folder))
        _FINGERPRINTS[here] = hashlib.sha256("\n".join(parts).encode()).hexdigest()
    return _FINGERPRINTS[here]


def row_key(
    row: str,
    versions: Mapping[str, Any],
    selection: Mapping[str, Any],
    timeout: float | None,
    harness: str | None = None,
) -> dict[str, Any]:
    """What a row's verdicts depend on, as plain data. `versions`: what its environment holds
    (distributions and their versions, the interpreter's version, a client program's files)."""
    return {
        "version": VERSION,
        "row": row,
        "versions": dict(versions),
        "harness": harness or fingerprint(),
        "selection": dict(selection),
        "timeout": timeout,
    }


def _digest(key: Mapping[str, Any]) -> str:
    return hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()[:32]


class VerdictCache:
    """Row reports by key, one JSON file each in `folder`."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def path(self, key: Mapping[str, Any]) -> Path:
        return self.folder / f"{_digest(key)}.json"

    def get(self, key: Mapping[str, Any]) -> dict[str, Any] | None:
        """The stored report of this key; None when there is none or the file is not a whole
        entry of this very key (it is then written again by the run)."""
        entry = self._read(self.path(key))
        if not isinstance(entry, dict) or entry.get("key") != json.loads(json.dumps(key, default=str)):
            return None
        report = entry.get("report")
        if not isinstance(report, dict) or not isinstance(report.get("cases"), list):
            return None
        if not all(isinstance(case, dict) and "id" in case and "verdict" in case for case in report["cases"]):
            return None
        return report

    def put(self, key: Mapping[str, Any], report: Mapping[str, Any]) -> None:
        """Store a row's report; a cache that cannot be written is left as it is (the card does
        not need it)."""
        self._write(self.path(key), {"key": key, "report": report})

    def durations(self) -> dict[str, float]:
        """What each row took when it was last graded, by row (the scheduler starts the costliest
        first); empty when unknown or unreadable."""
        found = self._read(self.folder / DURATIONS)
        if not isinstance(found, dict):
            return {}
        return {k: seconds for k, v in found.items() if (seconds := _seconds(v)) is not None}

    def record_durations(self, seconds: Mapping[str, float]) -> None:
        if seconds:
            self._write(self.folder / DURATIONS, {**self.durations(), **seconds})

    @staticmethod
    def _read(path: Path) -> Any:
        """The JSON in `path`, or None when it cannot be read or is not JSON (never trusted)."""
        try:
            return bounded.loads(bounded.read(path, MAX_ENTRY_BYTES), finite=True)
        except (OSError, ValueError, RecursionError):
            return None

    @staticmethod
    def _write(target: Path, data: Any) -> None:
        text = json.dumps(data, default=str, ensure_ascii=False)
        with contextlib.suppress(HarnessError):  # the card does not need its cache
            files.write(target, text.encode("utf-8", "replace"))


def _seconds(value: Any) -> float | None:
    """A stored duration as seconds; None for anything else (a forged 400-digit number too)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        seconds = float(value)
    except OverflowError:
        return None
    return seconds if math.isfinite(seconds) and seconds >= 0 else None
