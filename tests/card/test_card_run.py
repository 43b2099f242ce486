"""The report card as a library (`harness.card.run`), no command line: a card graded from what is
wanted over a selection, written as JSON, Markdown and HTML, and read back as it was written."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from harness.card.run import Wanted, grade, load_card, write_card
from harness.errors import UsageError
from harness.matrix.selection import Selection

CASE = "openai-chat/parallel-2::parallel-calls-share-index-0::s0"


def test_a_card_graded_written_and_read_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLSTREAM_CACHE", str(tmp_path / "cache"))  # no stored verdicts
    wanted = Wanted(names=("openai",), clients=False, pythons=(sys.executable,))
    card = grade(wanted, Selection(cases=(CASE,)), timeout=None, reports=tmp_path / "reports", slots=1)
    (row,) = card["rows"]
    assert row["library"] == "openai" and row.get("problem") is None
    (report,) = (tmp_path / "reports").glob("openai-*.json")
    assert [case["id"] for case in json.loads(report.read_text())["cases"]] == [CASE]
    write_card(card, tmp_path / "out")
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "report-card.html",
        "report-card.json",
        "report-card.md",
    ]
    assert load_card(tmp_path / "out" / "report-card.json") == json.loads(json.dumps(card))
    assert "openai" in (tmp_path / "out" / "report-card.md").read_text()


def test_a_file_that_is_not_a_card_is_a_usage_error(tmp_path: Path) -> None:
    other = tmp_path / "other.json"
    other.write_text('{"version": 0}')
    with pytest.raises(UsageError, match=r"version: not a report-card\.json"):
        load_card(other)
