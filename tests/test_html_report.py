"""The HTML report: one self-contained file, a coloured grid, cells that open their cases."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from harness.check.compare import Comparison, Difference
from harness.check.outcome import Outcome, ToolCall
from harness.check.selection import Selection
from harness.check.verdict import Report, Result, Verdict
from harness.report.html import render_html, write_html

EXPECTED = Outcome((ToolCall("read", {"path": "a"}, "c1"), ToolCall("search", {"q": "b"}, "c2")))
MERGED = Outcome((ToolCall("readsearch", {}, "c1"),))


def result(cassette: str, scenario: str, accumulator: str, verdict: Verdict) -> Result:
    good = verdict is Verdict.PASS
    return Result(
        id=f"{cassette}::{scenario}::s0",
        cassette=cassette,
        scenario=scenario,
        seed=0,
        dialect="openai-chat",
        accumulator=accumulator,
        verdict=verdict,
        expected=EXPECTED,
        actual=EXPECTED if good else MERGED,
        diff=()
        if good
        else ("call 1: name 'read' expected, got 'readsearch'", "tool_calls: 2 expected, got 1"),
    )


CASSETTES = ["openai-chat/parallel-2", "openai-chat/single-call", "anthropic/parallel-calls"]
SCENARIOS = ["original", "F3-one-byte-reads", "parallel-calls-share-index-0", "D7-truncated-mid-args"]


def comparison() -> Comparison:
    a, b, differences = Report("reference"), Report("mypkg.acc:merge_by_index"), []
    for scenario in SCENARIOS:
        for cassette in CASSETTES:
            bad = scenario == "parallel-calls-share-index-0" and "parallel" in cassette
            ra = result(cassette, scenario, "reference", Verdict.PASS)
            rb = result(cassette, scenario, "mypkg.acc:merge_by_index", Verdict.FAIL if bad else Verdict.PASS)
            a.results.append(ra)
            b.results.append(rb)
            if bad:
                differences.append(Difference(ra, rb, ("call 1: name 'read' in A, B has 'readsearch'",)))
    return Comparison(a, b, differences)


def test_page_is_self_contained_and_carries_every_case() -> None:
    page = render_html(comparison=comparison(), selection=Selection(cassettes=("cassettes",)))
    assert "<script src" not in page and "<link" not in page and "@import" not in page
    assert not re.search(r"(src|href)=\"https?:", page)
    data = json.loads(re.search(r'<script type="application/json" id="data">(.*?)</script>', page, re.S)[1])
    cell = data[0]["2,0"]  # share-index-0 x openai-chat/parallel-2
    assert cell["status"] == "differ"
    assert (
        "pytest -k openai-chat/parallel-2::parallel-calls-share-index-0::s0" in cell["cases"][0]["commands"]
    )
    assert any(
        "toolstream compare reference mypkg.acc:merge_by_index" in c for c in cell["cases"][0]["commands"]
    )
    assert page.count('class="cell differ"') == 2 and page.count('class="cell agree"') == 10


def test_check_grid_colours_by_worst_verdict_and_escapes() -> None:
    report = Report("<evil>")
    report.results += [
        result("c1", "s1", "<evil>", Verdict.PASS),
        result("c1", "s1", "<evil>", Verdict.FAIL),
        result("c2", "s1", "<evil>", Verdict.SKIPPED),
    ]
    page = render_html(reports=[report])
    assert "<evil>" not in page and "&lt;evil&gt;" in page
    assert 'class="cell fail"' in page and 'class="cell skipped"' in page
    assert ">1/2<" in page  # one of two cases in the cell fails


def chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        found = shutil.which(name)
        if found:
            return found
    return None


def test_compare_report_renders_in_headless_chromium(tmp_path: Path) -> None:
    binary = chromium()
    if binary is None:
        pytest.skip("no chromium binary found (apt-get install chromium)")
    page = write_html(tmp_path / "compare.html", comparison=comparison(), title="A vs B")
    shot = tmp_path / "compare.png"
    command = [
        binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        f"--user-data-dir={tmp_path / 'profile'}", f"--screenshot={shot}", "--window-size=1280,900",
        page.resolve().as_uri(),
    ]  # fmt: skip
    subprocess.run(command, check=True, capture_output=True, timeout=60)
    assert shot.stat().st_size > 5000
    png = shot.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    assert (width, height) == (1280, 900)


def test_cli_check_and_compare_write_the_same_page(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from harness.cli import main

    parallel = str(Path(__file__).resolve().parent.parent / "cassettes" / "openai-chat" / "parallel-2.yaml")
    selection = ["--cassettes", parallel, "--scenarios", "original", "--timeout", "0"]
    assert main(["check", "--accumulator", "reference", *selection, "--html", str(tmp_path / "c.html")]) == 0
    assert 'class="cell pass"' in (tmp_path / "c.html").read_text()
    out = str(tmp_path / "repro")
    assert (
        main(
            [
                "compare",
                "reference",
                "reference",
                *selection,
                "--out",
                out,
                "--html",
                str(tmp_path / "d.html"),
            ]
        )
        == 0
    )
    assert 'class="cell agree"' in (tmp_path / "d.html").read_text()
    capsys.readouterr()
