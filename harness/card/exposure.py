"""Which graded library releases fail on a catalogue class (`A1`, `B5` ...), read from the card's
stored verdicts (`report-card.json`, shipped beside this module): what `toolstream probe` says of
each class a server's streams show.

A release fails on a class when one of its failing signatures has a case of that class: a case of
a scenario named after it (`A1-parallel-same-index`), the `known` scenarios of the signature, or
an unmutated recording (`original`) whose stream shows the class (the dialect's detectors, run on
the bundled cassette). The card keeps one case per signature, so this is what its verdicts show,
not every case a release fails.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from harness import bounded
from harness.cassettes.corpus import located
from harness.cassettes.format import load
from harness.errors import HarnessError
from harness.wire import dialects
from harness.wire.codecs import decode_all

__all__ = ["CARD", "failing_releases"]

CARD = Path(__file__).resolve().parent / "report-card.json"
_CLASS = re.compile(r"^([A-F]\d+)-")


def failing_releases(classes: Iterable[str], card: Path = CARD) -> dict[str, list[str]]:
    """Per class asked, the releases (`library version`) whose stored verdicts fail on it."""
    wanted = set(classes)
    out: dict[str, list[str]] = {code: [] for code in sorted(wanted)}
    for row in _rows(card):
        release = f"{row.get('library')} {row.get('version')}"
        shown: set[str] = set()
        for signature in row.get("signatures") or []:
            if signature.get("verdict") != "fail":
                continue
            shown |= _classes_of(str(signature.get("worst", "")))
            known = signature.get("known") or {}
            shown |= {m[1] for name in known.get("scenarios") or [] if (m := _CLASS.match(str(name)))}
        for code in sorted(shown & wanted):
            out[code].append(release)
    return out


def _rows(card: Path) -> list[dict[str, Any]]:
    try:
        data = bounded.loads(card.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []  # no stored card (a trimmed install): no release is named
    rows = data.get("rows") if isinstance(data, dict) else None
    return [row for row in rows or [] if isinstance(row, dict)]


def _classes_of(case_id: str) -> set[str]:
    cassette, _, rest = case_id.partition("::")
    scenario = rest.partition("::")[0]
    found = _CLASS.match(scenario)
    if found:
        return {found[1]}
    return set(_recorded_classes(cassette)) if scenario == "original" else set()


@functools.cache
def _recorded_classes(cassette: str) -> frozenset[str]:
    """The classes a bundled recording's own stream shows (none when it cannot be read)."""
    try:
        loaded = load(located(cassette))
        d = dialects.get(loaded.dialect or cassette.partition("/")[0])
        response = loaded.interactions[0].response
        events = dialects.parse_all(d, decode_all(d.codec(), (c.data for c in response.chunks)))
    except (HarnessError, OSError, IndexError):
        return frozenset()
    return frozenset(d.shapes(events)) if response.complete else frozenset()
