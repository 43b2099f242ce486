"""A known issue says which release introduced it and which fixed it, where `toolstream bisect`
found them (issue 43, point 9): `introduced_in` and `fixed_in` in known.yaml, shown on the card."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.card import render
from harness.card.known import find_known, known_issues
from harness.errors import UsageError

ENTRY = """\
- library: lib
  signature: SIG
  title: calls sharing an index merge
  kind: bug
  upstream: null
  introduced_in: {introduced}
  fixed_in: 1.2.14
  source: null
"""


def test_an_entry_reads_the_releases_that_introduced_and_fixed_it(tmp_path: Path) -> None:
    path = tmp_path / "known.yaml"
    path.write_text(ENTRY.format(introduced="1.1.0"))
    issue = known_issues(path)[("lib", "SIG")]
    assert (issue.introduced_in, issue.fixed_in) == ("1.1.0", "1.2.14")
    bad = tmp_path / "bad.yaml"
    bad.write_text(ENTRY.format(introduced="[1]"))
    with pytest.raises(UsageError, match="entry 1: missing or bad field"):
        known_issues(bad)


def test_the_card_shows_both_releases() -> None:
    known = {
        "kind": "bug",
        "title": "t",
        "upstream": "https://u",
        "introduced_in": "1.1.0",
        "fixed_in": "1.2.14",
    }
    sig = {"signature": "SIG", "cases": 1, "verdict": "fail", "severity": "unsafe", "classes": {"spec": 1},
           "worst": "c::original::s0", "example": "e", "known": known, "repros": []}  # fmt: skip
    row = {"library": "lib", "version": "1.2.13", "adapter": "a", "problem": None, "cases": 1,
           "verdicts": {"fail": 1}, "signatures": [sig]}  # fmt: skip
    card = {"version": 1, "date": "2026-11-28", "selection": {}, "rows": [row], "changes": []}
    assert "[upstream](https://u); introduced in 1.1.0, fixed in 1.2.14 |" in render.markdown(card)
    assert "upstream</a> (introduced in 1.1.0, fixed in 1.2.14)" in render.page(card)
    assert "fixed in 1.2.14" in render.adapters_block(card)


def test_the_langchain_core_index_0_merge_is_known_fixed_in_the_release_bisect_names() -> None:
    # `toolstream bisect langchain-core openai-chat/litellm-bridge-parallel-index0::original::s0
    # --adapter langchain-core` names 1.2.14 (tests/card/test_bisect.py, slow lane).
    case = "openai-chat/litellm-bridge-parallel-index0::original::s0"
    issue = find_known(
        "langchain-core", "id differs; missing call; name concatenated; tool_calls count", case
    )
    assert issue is not None and issue.fixed_in == "1.2.14"
    assert issue.introduced_in is not None
