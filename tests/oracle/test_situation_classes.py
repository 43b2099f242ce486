"""Every situation of docs/oracle.md's table is a class a stream earns by itself: over every bundled
cassette and scenario, a case whose situation the table calls `policy` is `policy` (its recording's
included), and what its ending decides is judged so (`Scope.ending`). The fast lane walks a few
recordings; the whole matrix is slow."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from harness import Selection
from harness.matrix.selection import Matrix
from harness.oracle.expectation import CaseClass, classify, scope, situation

ROOT = Path(__file__).resolve().parents[2]
_ORDER = (CaseClass.SPEC, CaseClass.QUIRK, CaseClass.POLICY)
_ROW = re.compile(r"^\| `([a-z-]+)` \| [^|]+ \| `\w+` \| `\w+` \| `(\w+)` \|", re.M)


def _table() -> dict[str, CaseClass]:
    text = (ROOT / "docs" / "oracle.md").read_text(encoding="utf-8")
    return {name: CaseClass(kind) for name, kind in _ROW.findall(text)}


def _walk(selection: Selection) -> Counter[tuple[str, str]]:
    table = _table()
    wrong, seen = [], Counter[tuple[str, str]]()
    for case in Matrix(selection).all():
        name = situation(case)
        want = table.get(name, CaseClass.SPEC)  # `whole-stream`: no row, the protocol's
        got = classify(case).case_class
        seen[(name, str(got))] += 1
        if _ORDER.index(got) < _ORDER.index(want):
            wrong.append(f"{case.id}: {name} is {want}, the case {got}")
        elif want is CaseClass.POLICY and scope(case).ending.case_class is not CaseClass.POLICY:
            wrong.append(f"{case.id}: {name}: its ending is not judged as policy")
    assert not wrong, f"{len(wrong)} case(s):\n" + "\n".join(wrong[:20])
    return seen


def test_the_table_has_every_situation_with_a_class() -> None:
    table = _table()
    assert len(table) == 14
    assert table["error-after-final-call"] is CaseClass.POLICY and table["cut-mid-call"] is CaseClass.SPEC


def test_a_few_recordings_earn_their_situations_class() -> None:
    cassettes = tuple(
        str(ROOT / "cassettes" / name)
        for name in (
            "anthropic/overloaded-mid-call.yaml",
            "bedrock-converse/exception-mid-call.yaml",
            "openai-chat/parallel-2.yaml",
            "gemini/single-call.yaml",
        )
    )
    seen = _walk(Selection(cassettes=cassettes))
    assert seen[("error-after-final-call", "policy")] > 40  # the two recordings, nearly every scenario
    assert seen[("whole-stream", "spec")] > 20  # a whole Gemini turn is no finish-without-terminal


@pytest.mark.slow
def test_every_bundled_case_earns_its_situations_class() -> None:
    seen = _walk(Selection())
    assert sum(seen.values()) > 5000
    absent = {"terminal-with-open-call", "length-with-open-call", "unknown-finish", "error-after-terminal"}
    assert {name for name, _ in seen} >= set(_table()) - absent  # the bundled corpus has none of these
