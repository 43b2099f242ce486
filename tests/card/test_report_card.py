"""`toolstream report-card`: libraries graded in their own environments through `serve-accumulator`.

Offline: the installed openai and anthropic are graded from this venv (`--use-current-env`), the two
langchain-core releases from the side environments `.ci/run` builds. The generated blocks of
docs/report-card.md and the known list are checked against the stored card and the installed
library sources.
"""

from __future__ import annotations

import json
import os
import sys
from importlib.metadata import PackageNotFoundError, distribution, version
from pathlib import Path
from typing import Any

import pytest

from harness.card import render
from harness.card.gateways import GATEWAYS
from harness.card.known import find_known, known_issues, raise_key
from harness.cli import main

ROOT = Path(__file__).resolve().parents[2]
STORED = ROOT / "harness" / "card" / "report-card.json"

ISSUE_CASES = [
    "openai-chat/litellm-bridge-parallel-index0::original::s0",  # index-0 calls merged
    "openai-chat/groq-whole-calls::B3-name-repeated-in-full::s0",  # a repeated name concatenated
    "openai-chat/parallel-2::C4-reasoning-shifts-index::s0",  # first call at index 1: IndexError
    "anthropic/interleaved-thinking::D4-usage-only-final-chunk::s0",  # stop_reason reset to None
    "anthropic/single-call::D7-truncated-mid-args::s0",  # no message_stop: tool_use with {} input
]


def _card(out: Path) -> dict[str, Any]:
    return json.loads((out / "report-card.json").read_text(encoding="utf-8"))


def _row(card: dict[str, Any], library: str) -> dict[str, Any]:
    (row,) = [r for r in card["rows"] if r["library"] == library]
    return row


def _cases(out: Path, library: str, release: str) -> dict[str, dict[str, Any]]:
    report = json.loads((out / "reports" / f"{library}-{release}.json").read_text(encoding="utf-8"))
    return {case["id"]: case for case in report["cases"]}


@pytest.fixture(scope="module")
def issue_card(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("card")
    cases = [arg for case_id in ISSUE_CASES for arg in ("--case", case_id)]
    argv = ["report-card", "--libraries", "openai,anthropic", "--use-current-env", "--timeout", "0"]
    assert main([*argv, *cases, "--out", str(out)]) == 0
    return out


@pytest.mark.slow  # the module's issue card: `report-card` over two libraries, each in its own process
def test_openai_row_merges_concatenates_and_raises(issue_card: Path) -> None:
    row = _row(_card(issue_card), "openai")
    assert row["problem"] is None and row["version"] == version("openai")
    assert row["adapter"] == "openai-sdk" and row["cases"] == 3
    merged = [s for s in row["signatures"] if s["worst"] == ISSUE_CASES[0]]
    assert merged and "name concatenated" in merged[0]["signature"] and merged[0]["severity"] == "unsafe"
    # The unmutated gateway recording is itself a deviation (A1, its cassette's `expected_class`):
    # a quirk case.
    assert merged[0]["classes"] == {"quirk": 1}
    # The SDK raises IndexError: its user gets that raise and no call (`client.raised`).
    raise_ = "got error (IndexError: list index out of range)"
    raises = [s for s in row["signatures"] if raise_ in s["signature"]]
    assert raises and raises[0]["worst"] == ISSUE_CASES[2] and raises[0]["severity"] == "lost"
    cases = _cases(issue_card, "openai", row["version"])
    assert "'get_weatherget_weather" in " ".join(cases[ISSUE_CASES[1]]["diff"])
    assert cases[ISSUE_CASES[2]]["verdict"] == "fail" and cases[ISSUE_CASES[2]]["actual"]["state"] == "error"


@pytest.mark.slow  # the issue card
def test_anthropic_row_resets_stop_reason_and_keeps_an_unfinished_call(issue_card: Path) -> None:
    row = _row(_card(issue_card), "anthropic")
    assert row["problem"] is None and row["cases"] == 2
    cases = _cases(issue_card, "anthropic", row["version"])
    reset = cases[ISSUE_CASES[3]]
    assert reset["actual"]["finish_reason"] is None and reset["expected"]["finish_reason"] == "tool_use"
    # An agent that runs its calls on stop_reason == "tool_use" skips them: lost, not cosmetic.
    assert reset["verdict"] == "fail" and reset["severity"] == "lost"
    unfinished = cases[ISSUE_CASES[4]]
    assert unfinished["verdict"] == "fail" and unfinished["severity"] == "unsafe"
    assert unfinished["actual"]["state"] == "complete"
    assert [call["arguments"] for call in unfinished["actual"]["tool_calls"]] == [{}]
    worst = {s["worst"] for s in row["signatures"]}
    assert {ISSUE_CASES[3], ISSUE_CASES[4]} <= worst


@pytest.mark.slow  # the issue card
def test_the_card_is_written_as_markdown_and_html(issue_card: Path) -> None:
    markdown = (issue_card / "report-card.md").read_text(encoding="utf-8")
    page = (issue_card / "report-card.html").read_text(encoding="utf-8")
    for text in (markdown, page):
        assert ISSUE_CASES[0] in text and "anthropic-sdk" in text and "unsafe" in text
    assert page.startswith("<!doctype html>") and page.rstrip().endswith("</html>")


@pytest.mark.slow  # grades anthropic in a serve-accumulator process
def test_a_library_that_is_not_there_is_a_row_not_a_crash(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["report-card", "--libraries", "anthropic,litellm", "--use-current-env", "--timeout", "0"]
    assert main([*argv, "--case", ISSUE_CASES[3], "--out", str(tmp_path)]) == 0
    card = _card(tmp_path)
    assert "not installed in" in _row(card, "litellm")["problem"]
    assert _row(card, "anthropic")["cases"] == 1
    assert "not graded: not installed in" in capsys.readouterr().out


def test_an_adapter_that_does_not_load_is_a_row_with_its_own_words(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The environment's `serve-accumulator` stands in for one whose library fails to import.
    from harness.card.environments import SideEnvironment

    broken = tmp_path / "broken.py"
    said = "cannot import name Stream from openai"
    broken.write_text(f"import sys\nprint('loading', file=sys.stderr)\nraise ImportError({said!r})\n")
    monkeypatch.setattr(SideEnvironment, "spec", lambda self: f"cmd:{sys.executable} {broken}")
    out = tmp_path / "out"
    argv = ["report-card", "--libraries", "openai", "--use-current-env", "--timeout", "0"]
    assert main([*argv, "--case", ISSUE_CASES[0], "--case", ISSUE_CASES[1], "--out", str(out)]) == 0
    row = _row(_card(out), "openai")
    assert row["problem"] == f"adapter openai-sdk does not load: ImportError: {said}"
    assert not (out / "reports" / f"openai-{row['version']}.json").exists()


@pytest.mark.slow  # makes a virtualenv for the release
def test_a_release_that_does_not_install_is_a_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # No index at all: pip fails at once, offline, as it would for a release that does not exist.
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path / "no-wheels"))
    monkeypatch.setenv("TOOLSTREAM_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "out"
    argv = ["report-card", "--libraries", "anthropic", "--versions", "0.0.1", "--case", ISSUE_CASES[3]]
    assert main([*argv, "--out", str(out)]) == 0
    row = _row(_card(out), "anthropic")
    assert row["version"] == "0.0.1" and row["problem"].startswith("pip install failed")


def test_usage_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report-card", "--libraries", "nosuch", "--out", str(tmp_path)]) == 2
    assert "unknown library 'nosuch'" in capsys.readouterr().err
    bad = tmp_path / "bad.json"
    bad.write_text('{"version": 99}', encoding="utf-8")
    assert main(["report-card", "--from-json", str(bad), "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert str(bad) in err and "version" in err and len(err.strip().splitlines()) == 1


def _side(release: str) -> Path:
    side = ROOT / f".venv-langchain-core-{release}"
    if not (side / "bin" / "toolstream").exists():
        build = f"python3 -m venv {side.name} && {side.name}/bin/pip install . langchain-core=={release}"
        pytest.skip(f"no side environment (.ci/run makes it): {build}")
    return side


@pytest.mark.slow  # one process per side environment
def test_langchain_core_fix_shows_as_a_change_between_versions(tmp_path: Path) -> None:
    old, new = _side("1.2.13"), _side("1.2.14")
    case = "openai-chat/parallel-2::parallel-calls-share-index-0::s0"
    argv = ["report-card", "--libraries", "langchain-core", "--env", str(old), "--env", str(new)]
    assert main([*argv, "--timeout", "0", "--case", case, "--out", str(tmp_path)]) == 0
    card = _card(tmp_path)
    assert [r["version"] for r in card["rows"]] == ["1.2.13", "1.2.14"]
    (change,) = card["changes"]
    assert (change["from"], change["to"], change["broken"]) == ("1.2.13", "1.2.14", [])
    assert change["fixed"] == [{"scenario": "parallel-calls-share-index-0", "cases": 1, "examples": [case]}]
    assert "fixed 1 x `parallel-calls-share-index-0`" in (tmp_path / "report-card.md").read_text(
        encoding="utf-8"
    )


# ---------------------------------------------------------------------------------------------
# The stored card, the page docs/report-card.md and the known list

PAGE = ROOT / "docs" / "report-card.md"


def _between(text: str, which: str) -> str:
    start, end = render.MARKERS[which]
    return text.split(start + "\n", 1)[1].split("\n" + end, 1)[0]


def test_page_blocks_are_what_the_stored_card_generates() -> None:
    card = json.loads(STORED.read_text(encoding="utf-8"))
    text = PAGE.read_text(encoding="utf-8")
    # The page is in docs/: its links to examples/repros/ climb one folder.
    assert _between(text, "adapters") == render.adapters_block(card, "../")
    assert _between(text, "card") == render.card_block(card, "../")


def test_rerendering_the_stored_card_rewrites_the_page_identically(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--page` writes the page's blocks, with its links from where the page is in the checkout
    (here a copy of the checkout's docs/ folder)."""
    from harness.card import environments

    monkeypatch.setattr(environments, "source_root", lambda: tmp_path)
    page = tmp_path / "docs" / "report-card.md"
    page.parent.mkdir()
    original = PAGE.read_text(encoding="utf-8")
    page.write_text(original, encoding="utf-8")
    argv = ["report-card", "--from-json", str(STORED), "--out", str(tmp_path / "out"), "--page", str(page)]
    assert main(argv) == 0
    assert page.read_text(encoding="utf-8") == original


def test_every_known_signature_is_in_the_stored_card() -> None:
    """A gateway's entries, until the stored card has its rows, are held by the live run of
    tests/card/test_report_card_gateways.py (slow) instead."""
    card = json.loads(STORED.read_text(encoding="utf-8"))
    found = {(r["library"], s["signature"]) for r in card["rows"] for s in r.get("signatures", [])}
    found |= {(library, raise_key(sig)) for library, sig in found if raise_key(sig)}
    # A library or gateway the stored card has no row for (a gateway not graded, a row added since
    # the card was generated) is checked once the card has its row.
    graded = {r["library"] for r in card["rows"]}
    missing = [key for key in known_issues() if key[0] in graded and key not in found]
    assert sorted(missing) == []


def test_a_raise_entry_covers_every_signature_carrying_that_raise() -> None:
    sig = "missing call; state complete expected, got error (IndexError: list index out of range); tool_calls"
    assert raise_key(sig) == "raises IndexError: list index out of range"
    assert raise_key("state complete expected, got error (JSONDecodeError: x (char …))") == (
        "raises JSONDecodeError: x (char …)"
    )
    assert raise_key("state complete expected, got cut") is None
    issue = find_known("openai", sig)
    assert issue is not None and issue.signature == "raises IndexError: list index out of range"


# Libraries whose every signature has its line read and quoted (every library with an adapter here).
ATTRIBUTED = (
    "openai",
    "anthropic",
    "langchain-anthropic",
    "langchain-core",
    "langchain-openai",
    "pydantic-ai",
    "litellm",
    "agno",
    "google-adk",
    "smolagents",
    "strands-agents",
)


def test_every_signature_of_the_adapter_table_names_its_library_line() -> None:
    card = json.loads(STORED.read_text(encoding="utf-8"))
    newest = {r["library"]: r for r in card["rows"] if r["library"] in ATTRIBUTED}
    assert sorted(newest) == sorted(ATTRIBUTED)
    missing = [
        (r["library"], s["signature"])
        for r in newest.values()
        for s in r.get("signatures", [])
        if not (s.get("known") or {}).get("source")
    ]
    assert missing == []


@pytest.mark.parametrize("key", sorted(known_issues()), ids=lambda key: f"{key[0]}:{key[1][:40]}")
def test_each_attribution_quotes_the_installed_source(key: tuple[str, str]) -> None:
    issue = known_issues()[key]
    if issue.source is None and issue.library in {g.library for g in GATEWAYS.values()}:
        pytest.skip("a gateway's line responsible is not attributed yet (docs/gateways.md)")
    assert issue.source is not None, "every known signature names the line responsible"
    package = issue.source.package or issue.library
    site = _site_with(package, issue.source.version)
    if site is None:
        pytest.skip(f"{package} {issue.source.version} is installed neither here nor in a .venv-* side env")
    lines = (site / issue.source.file).read_text(encoding="utf-8").splitlines()
    assert lines[issue.source.line - 1].strip() == issue.source.text.strip()


def _site_with(package: str, release: str) -> Path | None:
    """The site-packages holding this release of a distribution: this Python's, else a side
    environment's (`.ci/run` builds them: pydantic-ai and litellm are not installed here)."""
    try:
        if version(package) == release:
            return Path(str(distribution(package).locate_file("")))
    except PackageNotFoundError:
        pass
    name = package.replace("-", "_").lower()
    for site in sorted(ROOT.glob(".venv-*/lib/python*/site-packages")):
        for info in site.glob("*.dist-info"):
            dist, _, found = info.name.removesuffix(".dist-info").rpartition("-")
            if dist.replace("-", "_").lower() == name and found == release:
                return site
    return None


def test_cache_is_under_toolstream_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from harness.card.environments import cache_root

    monkeypatch.setenv("TOOLSTREAM_CACHE", str(tmp_path))
    assert cache_root() == tmp_path / "report-card"
    monkeypatch.delenv("TOOLSTREAM_CACHE")
    assert cache_root() == Path(os.path.expanduser("~")) / ".cache" / "toolstream" / "report-card"


def test_side_environments_install_the_checkout_the_command_runs_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Installed from a wheel (the README's `pip install .`), the checkout is found from where the
    command runs; elsewhere there is none and building says so."""
    from harness.card import environments

    monkeypatch.setattr(environments, "PACKAGE", tmp_path / "site" / "harness")
    monkeypatch.chdir(ROOT / "harness")
    assert environments.source_root() == ROOT
    monkeypatch.chdir(tmp_path)
    assert environments.source_root() is None


@pytest.mark.parametrize(
    ("pip", "elsewhere"), [("26.3", True), ("22.3", True), ("22.2.2", False), ("9.0.1", False), (None, False)]
)
def test_side_environments_are_made_without_pip_when_this_pip_installs_elsewhere(
    pip: str | None, elsewhere: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`pip --python` (pip 22.3 on) installs into an environment that has no pip of its own, which
    saves making one (`ensurepip`, ~7 s of CPU); an older pip, or none, leaves each its own."""
    import importlib.metadata

    from harness.card import environments

    def version(name: str) -> str:
        assert name == "pip"
        if pip is None:
            raise importlib.metadata.PackageNotFoundError(name)
        return pip

    monkeypatch.setattr(importlib.metadata, "version", version)
    assert environments._pip_installs_elsewhere() is elsewhere


# ---------------------------------------------------------------------------------------------
# Links to the standalone reproductions (examples/repros/)


@pytest.mark.slow  # the issue card
def test_a_signature_links_the_repro_scripts_of_its_cases(issue_card: Path) -> None:
    row = _row(_card(issue_card), "openai")
    by_worst = {s["worst"]: s for s in row["signatures"]}
    script = "examples/repros/openai-parallel-calls-share-index-0.py"
    assert by_worst[ISSUE_CASES[0]]["repros"] == [script]
    # The IndexError script reproduces single-call's case; the card ran parallel-2's: no link.
    assert by_worst[ISSUE_CASES[2]]["repros"] == []
    markdown = (issue_card / "report-card.md").read_text(encoding="utf-8")
    # The card is outside the checkout: a link climbing to it would spell this machine's folders
    # (issue 29), so the script is named as in the project (the link resolves from its root).
    assert not issue_card.resolve().is_relative_to(ROOT)
    assert f"[openai-parallel-calls-share-index-0]({script})" in markdown
    assert f"href='{script}'" in (issue_card / "report-card.html").read_text(encoding="utf-8")
    # Inside the checkout the link resolves from where the card is.
    card = json.loads((issue_card / "report-card.json").read_text(encoding="utf-8"))
    assert f"[openai-parallel-calls-share-index-0](../{script})" in render.markdown(card, "../")


def test_the_page_card_links_every_repro_of_a_graded_library() -> None:
    from harness.card.repros import repro_scripts

    card = json.loads(STORED.read_text(encoding="utf-8"))
    graded = {r["library"] for r in card["rows"] if not r.get("problem")}
    block = _between(PAGE.read_text(encoding="utf-8"), "card")
    scripts = {path for (library, _), path in repro_scripts(ROOT).items() if library in graded}
    assert len(scripts) >= 5  # openai's three and anthropic's two at least
    for path in sorted(scripts):
        assert f"](../{path})" in block, f"{path} is not linked from the report card of {PAGE.name}"


def test_upstream_reports_are_issue_links_shown_in_the_card() -> None:
    import re

    linked = {key: issue for key, issue in known_issues().items() if issue.upstream}
    assert linked, "some known signatures have an upstream report"
    card = json.loads(STORED.read_text(encoding="utf-8"))
    readme = PAGE.read_text(encoding="utf-8")
    page = render.page(card)
    for (library, sig), issue in linked.items():
        assert re.fullmatch(r"https://github\.com/[\w.-]+/[\w.-]+/(issues|pull)/\d+", str(issue.upstream))
        rows = [r for r in card["rows"] if r["library"] == library]
        found = [
            s
            for r in rows
            for s in r.get("signatures", [])
            if sig in (s["signature"], raise_key(s["signature"]))
        ]
        assert found and all((s["known"] or {}).get("upstream") == issue.upstream for s in found)
        assert f"href='{issue.upstream}'" in page
        if any(s in rows[-1].get("signatures", []) for s in found):  # the page shows the newest row
            assert f"[upstream]({issue.upstream})" in _between(readme, "adapters")
