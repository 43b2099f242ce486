"""The report card's choices that make it publishable (issue 30): which release `newest` grades,
what a known issue explains, where its quoted line is, and that no row repeats another's verdicts.
Unit tests over plain data: no environment is built."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness.card import environments, grading
from harness.card.environments import EnvironmentProblem, SideEnvironment
from harness.card.known import KnownIssue, LibraryLine, find_known
from harness.card.libraries import Library, library


def test_newest_walks_back_to_the_newest_release_that_installs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        environments, "available_versions", lambda package: ["1.8.4", "1.8.3", "1.8.2", "0.9"]
    )
    (newest,) = environments.resolve_versions("langchain-core", ["newest"])
    assert newest[:3] == ["1.8.4", "1.8.3", "1.8.2"]
    lib = library("langchain-core")

    def builder(lib: Library, version: str, say: Any = None) -> SideEnvironment:
        if version == "1.8.4":
            raise EnvironmentProblem(
                "pip install failed: No matching distribution found for langchain-protocol"
            )
        return SideEnvironment(lib, version, "/env/bin/python")

    env = environments.build_first(lib, newest, say=lambda _: None, builder=builder)
    assert env.version == "1.8.3"
    assert env.note is not None and "1.8.4" in env.note and "langchain-protocol" in env.note
    assert environments.build_first(lib, ["1.8.3"], say=lambda _: None, builder=builder).note is None


def test_no_release_that_installs_is_one_problem_naming_the_first_reason() -> None:
    def builder(lib: Library, version: str, say: Any = None) -> SideEnvironment:
        raise EnvironmentProblem(f"no {version}")

    with pytest.raises(EnvironmentProblem, match="none of the 2 newest releases installs here: no 2"):
        environments.build_first(library("litellm"), ["2", "1"], say=lambda _: None, builder=builder)


def test_pydantic_ai_is_graded_as_the_package_its_code_lives_in() -> None:
    lib = library("pydantic-ai")
    assert lib.requirement("2.68.0") == "pydantic-ai-slim[openai,anthropic]==2.68.0"
    assert lib.distributions[0] == "pydantic-ai-slim"
    assert library("openai").requirement("3.57.0") == "openai==3.57.0"


def _case(
    case_id: str, verdict: str = "fail", diff: tuple[str, ...] = ("tool_calls: 2 expected, got 3",)
) -> dict[str, Any]:
    scenario = case_id.split("::")[1]
    return {"id": case_id, "scenario": scenario, "verdict": verdict, "diff": list(diff),
            "severities": ["unsafe"] * len(diff), "severity": "unsafe", "class": "spec",
            "accumulator": "x", "error": None}  # fmt: skip


def test_a_known_issue_explains_only_the_cases_of_its_evidence(monkeypatch: pytest.MonkeyPatch) -> None:
    title = "a server_tool_use block is returned in tool_calls"
    evidence = ("anthropic/tool-search-then-call",)
    issue = KnownIssue("litellm", "SIG", title, "bug", None, None, None, cassettes=evidence)
    assert issue.covers("anthropic/tool-search-then-call::original::s0")
    assert not issue.covers("anthropic/interleaved-thinking::D10-x::s0")
    cases = [
        _case("anthropic/tool-search-then-call::original::s0"),
        _case("anthropic/interleaved-thinking::D10-x::s0"),
    ]
    monkeypatch.setattr(grading, "_signature", lambda case: "SIG")

    def known(lib: str, sig: str, case_id: str, scenario: str | None) -> KnownIssue | None:
        return issue if issue.covers(case_id, scenario) else None

    graded = grading.Graded("litellm", "1.0", "litellm", report={"cases": cases})
    row = grading.row(graded, known=known, repros={})
    by_worst = {s["worst"]: s["known"] for s in row["signatures"]}
    assert by_worst["anthropic/interleaved-thinking::D10-x::s0"] is None
    assert by_worst["anthropic/tool-search-then-call::original::s0"]["title"].startswith("a server_tool_use")


def test_the_bundled_entries_name_their_evidence() -> None:
    # litellm 1.102.4 returned server_tool_use blocks in tool_calls; in 1.110.2 the same signature
    # comes only from a repeated start event, and the entry says so: its evidence is that cassette.
    sig = "extra call; finish_reason differs; tool_calls count"
    assert find_known("litellm", sig, "anthropic/no-arguments::D10-duplicate-start-events::s0") is not None
    assert find_known("litellm", sig, "anthropic/code-execution-error::original::s0") is None


@pytest.mark.parametrize(
    ("lines", "expected_line", "dropped"),
    [
        (["a", "  target()", "b"], 2, False),
        (["x", "y", "a", "b", "   target()"], 5, False),
        (["gone"], None, True),
    ],
)
def test_a_quoted_line_is_read_again_in_the_graded_release(
    tmp_path: Path, lines: list[str], expected_line: int | None, dropped: bool
) -> None:
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "mod.py").write_text("\n".join(lines) + "\n", encoding="utf-8")
    issue = KnownIssue("lib", "SIG", "t", "bug", None, None, LibraryLine("1.0", "lib/mod.py", 2, "target()"))
    graded = grading.Graded("lib", "2.0", "lib", report={"cases": []}, site_packages=str(tmp_path))
    checked = grading._checked(issue.to_dict(), graded)
    if dropped:
        assert checked["source"] is None
        assert checked["source_note"] == "the quoted line (`lib/mod.py:2` in 1.0) is not in 2.0"
    else:
        assert checked["source"]["line"] == expected_line
        assert checked["source"]["version"] == "2.0"


def test_no_row_repeats_the_verdicts_of_the_integration_it_goes_through() -> None:
    same = _case("anthropic/single-call::original::s0")
    own = _case("anthropic/single-call::cut-at-every-event::s0::e3", diff=("tool_calls: 1 expected, got 0",))
    passing = _case("anthropic/single-call::A1::s0", verdict="pass", diff=())
    core = grading.Graded("langchain-core", "1.8.3", "langchain-core", report={"cases": [same, own, passing]})
    theirs = [same, {**own, "verdict": "pass", "diff": []}, passing]
    anthropic = grading.Graded("langchain-anthropic", "1.7.10", "adapter", report={"cases": theirs})
    card = grading.card([core, anthropic], date="2026-11-27")
    row = next(r for r in card["rows"] if r["library"] == "langchain-core")
    assert row["cases"] == 1 and row["shared"] == {"langchain-anthropic 1.7.10": 2}
    assert [s["worst"] for s in row["signatures"]] == [own["id"]]
    other = next(r for r in card["rows"] if r["library"] == "langchain-anthropic")
    assert other["cases"] == 3 and "shared" not in other


def test_a_card_rebuilt_from_stored_reports_keeps_why_a_release_was_graded(tmp_path: Path) -> None:
    import json

    from harness.cli import main

    reports = tmp_path / "reports"
    reports.mkdir()
    note = "newest that installs here; passed over 1.8.4 (pip install failed)"
    report = {
        "cases": [_case("openai-chat/single-call::original::s0", verdict="pass", diff=())],
        "card_note": note,
    }
    (reports / "langchain-core-1.8.3.json").write_text(json.dumps(report), encoding="utf-8")
    assert main(["report-card", "--from-reports", str(reports), "--out", str(tmp_path / "out")]) == 0
    card = json.loads((tmp_path / "out" / "report-card.json").read_text(encoding="utf-8"))
    assert card["rows"][0]["note"] == note
