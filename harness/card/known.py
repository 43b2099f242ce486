"""What we know of a failure signature in a library: whether upstream tracks it, whether it is a
plain bug or robustness a maintainer may call the server's fault, and the library source line
responsible (read in the installed release, file:line and the line's text).

The list is `known.yaml` beside this module, keyed by library and exact signature (the
`harness.oracle.verdict.signature` of the failing case): a signature the matrix no longer
produces shows up in `tests/card/test_report_card.py`, not silently. A signature is what the library
did, not why: an entry also names its evidence, the streams it was found on (`cassettes` and
`scenarios`, shell patterns over the case's cassette and scenario names), and covers only those
cases. The same differences on another stream are not explained by it until someone looks.

A library that raises gives one signature per set of differences around its raise (`...; state
complete expected, got error (IndexError: list index out of range); ...`); an entry whose
signature is `raises <the error>` covers every signature carrying that raise, unless one of them
has an entry of its own.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from harness.errors import UsageError

__all__ = ["KNOWN_FILE", "KnownIssue", "LibraryLine", "find_known", "known_issues", "raise_key"]

KNOWN_FILE = Path(__file__).with_name("known.yaml")
KINDS = ("bug", "robustness")
_RAISE = re.compile(r"got error \((?P<error>.*?)\)(?=; |$)")


@dataclass(frozen=True)
class LibraryLine:
    """The line of the library that makes the signature, in one pinned release."""

    version: str  # of `package`
    file: str  # relative to site-packages
    line: int
    text: str
    package: str | None = None  # the distribution the file is in, when not the graded library


@dataclass(frozen=True)
class KnownIssue:
    library: str
    signature: str
    title: str
    kind: str  # bug | robustness
    upstream: str | None  # a link to the upstream issue or fix, when there is one
    fixed_in: str | None  # the first release without it (`toolstream bisect`)
    source: LibraryLine | None
    cassettes: tuple[str, ...] = ()  # patterns over cassette names (`anthropic/web-search`); none: any
    scenarios: tuple[str, ...] = ()  # patterns over scenario names; none: any
    introduced_in: str | None = None  # the first release with it (`toolstream bisect`)

    def covers(self, case_id: str, scenario: str | None = None) -> bool:
        """Whether this entry's evidence is the stream of this case (its cassette and scenario)."""
        cassette, _, rest = case_id.partition("::")
        scenario = scenario if scenario is not None else rest.partition("::")[0]
        return _any_match(cassette, self.cassettes) and _any_match(scenario, self.scenarios)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _any_match(name: str, patterns: tuple[str, ...]) -> bool:
    return not patterns or any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)


@cache
def known_issues(path: Path = KNOWN_FILE) -> dict[tuple[str, str], KnownIssue]:
    """Every entry of the list, by (library, signature)."""
    entries = yaml.safe_load(path.read_text(encoding="utf-8")) or []
    out: dict[tuple[str, str], KnownIssue] = {}
    for n, entry in enumerate(entries, start=1):
        where = f"{path}: entry {n}"
        try:
            source = entry.get("source")
            issue = KnownIssue(
                library=str(entry["library"]),
                signature=str(entry["signature"]),
                title=str(entry["title"]),
                kind=str(entry["kind"]),
                upstream=entry.get("upstream"),
                fixed_in=_release(entry, "fixed_in"),
                introduced_in=_release(entry, "introduced_in"),
                source=LibraryLine(**source) if source else None,
                cassettes=_patterns(entry, "cassettes"),
                scenarios=_patterns(entry, "scenarios"),
            )
        except (KeyError, TypeError, AttributeError) as exc:
            raise UsageError(f"{where}: missing or bad field ({exc})") from None
        if issue.kind not in KINDS:
            raise UsageError(f"{where}: kind must be one of {', '.join(KINDS)}, not {issue.kind!r}")
        out[(issue.library, issue.signature)] = issue
    return out


def _release(entry: dict[str, Any], field: str) -> str | None:
    value = entry.get(field)
    if value is not None and not isinstance(value, str | int | float):
        raise TypeError(f"{field} must be a release, as `1.2.14`")
    return None if value is None else str(value)


def _patterns(entry: dict[str, Any], field: str) -> tuple[str, ...]:
    value = entry.get(field) or []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise TypeError(f"{field} must be a list of patterns")
    return tuple(value)


def find_known(
    library: str, sig: str, case_id: str | None = None, scenario: str | None = None
) -> KnownIssue | None:
    """What we know of this signature in this library, if anything: its own entry, else the entry
    of the raise it carries (`raises <error>`); given a case, only an entry whose evidence covers it."""
    known = known_issues()
    issue = known.get((library, sig))
    if issue is None and (raise_ := raise_key(sig)):
        issue = known.get((library, raise_))
    if issue is not None and case_id is not None and not issue.covers(case_id, scenario):
        return None
    return issue


def raise_key(sig: str) -> str | None:
    """`raises <error>` for a signature with an unexpected error state, else None."""
    found = _RAISE.search(sig)
    return f"raises {found['error']}" if found else None
