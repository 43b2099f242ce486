"""Issue 10's done-when: accumulators written strictly to each documented protocol (tests/strict/)
have no unsafe or lost difference in a `spec` case over the full bundled matrix of their dialect,
and docs/strictness.md ("What strictness costs") lists exactly what they pay in quirk and policy cases."""

from __future__ import annotations

from functools import cache

import pytest

from harness import Report
from harness.oracle.expectation import CaseClass
from harness.oracle.severity import Severity
from tests.strict import STRICT
from tests.strict.costs import block, listed, run

DIALECTS = list(STRICT)


@cache
def _report(dialect: str) -> Report:
    return run(dialect)


@pytest.mark.parametrize("dialect", DIALECTS)
def test_no_unsafe_or_lost_difference_in_a_spec_case(dialect: str) -> None:
    report = _report(dialect)
    assert len(report.results) > 400  # the full bundled matrix of the dialect, not a sample
    bad = [
        f"{r.id}: {r.severity}: {'; '.join(r.diff) or r.error}"
        for r in report.results
        if r.case_class is CaseClass.SPEC and (r.severity in (Severity.UNSAFE, Severity.LOST) or r.error)
    ]
    assert not bad, f"{len(bad)} spec case(s):\n" + "\n".join(bad[:20])


@pytest.mark.parametrize("dialect", DIALECTS)
def test_the_readme_lists_what_strictness_costs(dialect: str) -> None:
    fresh = block(dialect, _report(dialect))
    assert listed(dialect) == fresh, "docs/strictness.md drifted: run `python -m tests.strict.costs`"


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.slow
def test_the_strict_accumulator_passes_every_recording_of_its_dialect(dialect: str) -> None:
    # A fixture that fails the clean recordings tells nothing about the harness.
    report = _report(dialect)
    failed = [
        r.id
        for r in report.results
        if r.scenario == "original" and r.case_class is CaseClass.SPEC and r.severity is not None
    ]
    assert failed == []
