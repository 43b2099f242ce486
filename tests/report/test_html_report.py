"""The HTML report: one self-contained file that leads with what is wrong, then grids by dialect."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from harness.cassettes.corpus import bundled
from harness.cassettes.outcome import Outcome, ToolCall
from harness.matrix.runner import run_matrix
from harness.matrix.selection import Selection
from harness.oracle.expectation import CaseClass
from harness.oracle.severity import Severity
from harness.oracle.verdict import Report, Result, Verdict
from harness.report.html import render_html, write_html
from harness.search.compare import Comparison, Difference
from harness.wire import dialects
from harness.wire.dialects import Event

EXPECTED = Outcome((ToolCall("read", {"path": "a"}, "c1"), ToolCall("search", {"q": "b"}, "c2")))
MERGED = Outcome((ToolCall("readsearch", {}, "c1"),))
MERGED_DIFF = ("call 1: name 'read' expected, got 'readsearch'", "tool_calls: 2 expected, got 1")


def no_stream(case_id: str) -> None:
    return None


def result(
    cassette: str,
    scenario: str,
    accumulator: str,
    verdict: Verdict,
    *,
    dialect: str = "openai-chat",
    diff: tuple[str, ...] = MERGED_DIFF,
    seed: int = 0,
) -> Result:
    good = verdict is Verdict.PASS
    return Result(
        id=f"{cassette}::{scenario}::s{seed}",
        cassette=cassette,
        scenario=scenario,
        seed=seed,
        dialect=dialect,
        accumulator=accumulator,
        verdict=verdict,
        expected=EXPECTED,
        actual=EXPECTED if good else MERGED,
        diff=() if good else diff,
        error="ValueError: boom" if verdict is Verdict.ERROR else None,
    )


def page_data(page: str) -> list[dict[str, Any]]:
    found = re.search(r'<script type="application/json" id="data">(.*?)</script>', page, re.S)
    assert found is not None
    data: list[dict[str, Any]] = json.loads(found[1])
    return data


def cell_of(section: dict[str, Any], case_id: str) -> dict[str, Any]:
    return next(
        cell
        for cell in section["cells"].values()
        if any(section["cases"][n]["id"] == case_id for n in cell["cases"])
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
    page = render_html(
        comparison=comparison(), selection=Selection(cassettes=("cassettes",)), stream=no_stream
    )
    assert "<script src" not in page and "<link" not in page and "@import" not in page
    assert not re.search(r"(src|href)=\"https?:", page)
    section = page_data(page)[0]
    case_id = "openai-chat/parallel-2::parallel-calls-share-index-0::s0"
    cell = cell_of(section, case_id)
    assert cell["status"] == "differ"
    commands = section["cases"][cell["cases"][0]]["commands"]
    # The pytest line names the compared accumulators: without them it runs nothing (issue 13).
    # It also names the cassettes the case comes from, and selects the item exactly (`compare[ID]`).
    pytest_line = next(c for c in commands if c.startswith("pytest "))
    assert pytest_line.startswith("pytest --toolstream-compare reference mypkg.acc:merge_by_index ")
    # Named for sharing: the bundled folder by its name (`./cassettes` where the corpus is the
    # installed wheel's and this checkout's folder is one below the current one), never this
    # machine's path to it.
    assert re.search(r"--toolstream-cassette-dir (\./)?cassettes ", pytest_line), pytest_line
    assert pytest_line.endswith(f"-k 'compare[{case_id}]'")
    assert any("toolstream compare reference mypkg.acc:merge_by_index" in c for c in commands)
    assert page.count('class="cell differ"') == 2 and page.count('class="cell agree"') == 10
    # The summary names the one kind of difference (as `compare` prints it), both cases behind it.
    [kind] = section["groups"]
    assert kind["count"] == 2 and kind["kind"] == 1
    assert kind["signature"] == "A pass, B fail (name concatenated; tool_calls count)"


def test_check_grid_colours_by_worst_verdict_counts_one_way_and_escapes() -> None:
    report = Report("<evil>")
    report.results += [
        result("c1", "s1", "<evil>", Verdict.PASS),
        result("c1", "s1", "<evil>", Verdict.FAIL, seed=1),
        result("c2", "s1", "<evil>", Verdict.SKIPPED),
        result("c2", "s2", "<evil>", Verdict.FAIL),
        result("c2", "s2", "<evil>", Verdict.FAIL, seed=1),
        result("c1", "s2", "<evil>", Verdict.PASS),
        result("c1", "s2", "<evil>", Verdict.PASS, seed=1),
    ]
    page = render_html(reports=[report], stream=no_stream)
    assert "<evil>" not in page and "&lt;evil&gt;" in page
    assert 'class="cell fail"' in page and 'class="cell skipped"' in page
    # Every cell says its counts the same way, whatever its colour (never "2/2" beside "2").
    assert ">1\u2717 1\u2713<" in page and ">2\u2717<" in page and ">2\u2713<" in page and ">1 skip<" in page
    assert "/2<" not in page


def test_summary_comes_first_worst_kind_first_with_its_worst_case() -> None:
    cut = ("state: cut expected, got complete",)
    longer = (*MERGED_DIFF, "call 2: name 'search' expected, got 'searchread'")  # same kind, more said
    report = Report(
        "mine:Acc",
        [
            result("openai-chat/a", "original", "mine:Acc", Verdict.FAIL, diff=cut),
            result("openai-chat/a", "A1", "mine:Acc", Verdict.FAIL),
            result("openai-chat/b", "A1", "mine:Acc", Verdict.FAIL, diff=longer),
            result("openai-chat/b", "original", "mine:Acc", Verdict.PASS),
            result("anthropic/c", "original", "mine:Acc", Verdict.ERROR, dialect="anthropic"),
        ],
    )
    page = render_html(reports=[report], stream=no_stream)
    assert page.index('class="summary"') < page.index('class="grid"')
    section = page_data(page)[0]
    kinds = [(g["count"], g["signature"]) for g in section["groups"]]
    assert kinds == [
        (2, "name concatenated; tool_calls count"),
        (1, "error: ValueError: boom"),
        (1, "state cut expected, got complete"),
    ]
    # The worst case of a kind is the one with the most to say.
    assert section["groups"][0]["worst_id"] == "openai-chat/b::A1::s0"
    assert "mine:Acc: 4 of 5 cases fail<" in page
    assert ">5 cases: 1 pass, 3 fail, 1 error, 0 timeout, 0 skipped<" in page
    # Grids by dialect: the one with more failures first, its failing rows and columns first.
    assert page.index(">openai-chat <span>3 of 4 failing") < page.index(">anthropic <span>1 of 1 failing")
    rows = re.findall(r'<th class="row" title="([^"]+)"', page)
    assert rows[:2] == ["A1", "original"]


def graded(scenario: str, severity: Severity, cls: CaseClass, n: int, diff: tuple[str, ...]) -> Result:
    made = result("openai-chat/a", scenario, "mine:Acc", Verdict.FAIL, seed=n, diff=diff)
    return replace(made, severities=(severity,) * len(diff), case_class=cls)


def test_kinds_are_the_terminals_tagged_with_severity_and_classes() -> None:
    cut = ("state: cut expected, got complete",)
    results = [graded("many", Severity.COSMETIC, CaseClass.POLICY, n, cut) for n in range(5)]
    results += [graded("few", Severity.UNSAFE, CaseClass.SPEC, 0, MERGED_DIFF)]
    results += [graded("some", Severity.UNSAFE, CaseClass.QUIRK, n, MERGED_DIFF) for n in range(2)]
    page = render_html(reports=[Report("mine:Acc", results)], stream=no_stream)
    groups = page_data(page)[0]["groups"]
    assert [(g["kind"], g["severity"], g.get("classes"), g["count"]) for g in groups] == [
        (1, "unsafe", [["quirk", 2], ["spec", 1]], 3),
        (2, "cosmetic", None, 5),
    ]
    assert '<span class="no">kind 1</span><span class="tag unsafe">unsafe</span>' in page
    assert '<span class="tag quirk">quirk 2</span><span class="tag spec">spec 1</span>' in page
    # Every result has a class now (spec by default); one without severities shows none.
    plain = render_html(reports=[Report("mine:Acc", [result("o/a", "x", "mine:Acc", Verdict.FAIL)])])
    assert '<span class="tag spec">spec</span><strong>' in plain and 'class="tag unsafe' not in plain
    assert "severity" not in json.dumps(page_data(plain))


def test_warnings_have_cells_of_their_own_and_a_table_apart() -> None:
    warned = replace(
        result("openai-chat/a", "D6", "mine:Acc", Verdict.WARN), severities=(Severity.UNSAFE, Severity.UNSAFE)
    )
    failed = result("openai-chat/a", "A1", "mine:Acc", Verdict.FAIL)
    page = render_html(reports=[Report("mine:Acc", [warned, failed])], stream=no_stream)
    section = page_data(page)[0]
    assert cell_of(section, warned.id)["status"] == "warn"
    assert [bool(g.get("warn")) for g in section["groups"]] == [False, True]
    assert page.index("what is wrong") < page.index("warnings: fail only with --strict")
    assert "mine:Acc: 1 of 2 cases fail<" in page and ">2 cases: 0 pass, 1 fail, 1 warn, 0 error," in page
    box = section["cases"][0]
    assert box["lines"][0].startswith("unsafe    call 1: name") and box["severity"] == "unsafe"
    strict = page_data(
        render_html(reports=[Report("mine:Acc", [warned, failed], strict=True)], stream=no_stream)
    )
    assert cell_of(strict[0], warned.id)["status"] == "fail" and not any(
        g.get("warn") for g in strict[0]["groups"]
    )


def test_only_glyphs_every_font_draws() -> None:
    report = Report("mine:Acc")
    for verdict in Verdict:
        report.results.append(result("openai-chat/a", str(verdict), "mine:Acc", verdict))
    for page in (
        render_html(reports=[report], stream=no_stream),
        render_html(comparison=comparison(), stream=no_stream),
    ):
        # check, cross, not-equal, times, middle dot, ellipsis: in DejaVu Sans and every desktop font
        assert set(re.findall(r"[^\x00-\x7f]", page)) <= {
            "\u2713",
            "\u2717",
            "\u2260",
            "\u00d7",
            "\u00b7",
            "…",
        }


# ---------------------------------------------------------------------------------------------
# In a real browser


class FirstCallOnly:
    """Keeps only the first call and calls a cut stream complete: fails parallel and cut cases."""

    def __init__(self, dialect: str) -> None:
        self.inner = dialects.get(dialect).accumulator()

    def feed(self, event: Event) -> None:
        self.inner.feed(event)

    def close(self, error: str | None = None) -> Outcome:
        outcome = self.inner.close(None)
        return replace(outcome, tool_calls=outcome.tool_calls[:1])


def chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        found = shutil.which(name)
        if found:
            return found
    return None


def browse(tmp_path: Path, page: Path, *options: str) -> subprocess.CompletedProcess[str]:
    binary = chromium()
    if binary is None:
        pytest.skip("no chromium binary found: apt-get update && apt-get install -y chromium")
    command = [
        binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        f"--user-data-dir={tmp_path / 'profile'}", "--enable-logging=stderr", "--v=0",
        "--virtual-time-budget=3000", *options, page.resolve().as_uri(),
    ]  # fmt: skip
    return subprocess.run(command, check=True, capture_output=True, text=True, timeout=90)


def console_messages(stderr: str) -> list[str]:
    # The page itself never logs: any console line is an error or a stray message.
    return [line for line in stderr.splitlines() if ":CONSOLE" in line]


# Appended to a copy of the page only: where the summary sits, and what a click on it opens.
PROBE = """<script>
const summary = document.querySelector('.summary').getBoundingClientRect();
document.body.dataset.summaryTop = summary.top;
document.body.dataset.summaryBottom = summary.bottom;
document.body.dataset.fold = window.innerHeight;
const grid = document.querySelector('table.grid');
window.scrollTo(0, grid.getBoundingClientRect().top + 300);
document.body.dataset.headTop = grid.querySelector('thead th.col').getBoundingClientRect().top;
document.querySelector('tr.kind').click();
document.body.dataset.panel = document.getElementById('panel').className;
</script></body>"""


@pytest.mark.slow
def test_real_report_in_headless_chromium_leads_with_the_summary(tmp_path: Path) -> None:
    cassettes = [
        str(bundled("cassettes") / name)
        for name in (
            "openai-chat/parallel-2.yaml",
            "openai-chat/single-call.yaml",
            "openai-chat/cut-mid-arguments.yaml",
            "anthropic/parallel-calls.yaml",
            "anthropic/single-call.yaml",
            "gemini/parallel-one-chunk.yaml",
        )
    ]
    report = run_matrix(f"{__name__}:FirstCallOnly", Selection(cassettes=tuple(cassettes)))
    assert not report.ok and report.count(Verdict.PASS)
    page = write_html(
        tmp_path / "report.html", reports=[report], selection=Selection(cassettes=tuple(cassettes))
    )
    data = page_data(page.read_text(encoding="utf-8"))[0]
    assert len(data["groups"]) >= 2 and all("stream" in data["cases"][g["worst"]] for g in data["groups"])

    shot = tmp_path / "report.png"
    shown = browse(tmp_path, page, f"--screenshot={shot}", "--window-size=1280,800")
    png = shot.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 20000
    assert (int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")) == (1280, 800)
    assert console_messages(shown.stderr) == []

    probed = tmp_path / "probed.html"
    probed.write_text(page.read_text(encoding="utf-8").replace("</body>", PROBE), encoding="utf-8")
    dom = browse(tmp_path, probed, "--dump-dom", "--window-size=1280,800")
    assert console_messages(dom.stderr) == []
    marks = dict(re.findall(r'data-(summary-top|summary-bottom|fold|head-top|panel)="([^"]*)"', dom.stdout))
    assert float(marks["summary-top"]) < 150  # the first thing under the headline
    # All of it above the fold: the viewport of a 1280x800 window, browser chrome taken off.
    assert float(marks["summary-bottom"]) <= float(marks["fold"]) and float(marks["fold"]) > 600
    assert float(marks["head-top"]) == 0  # scrolled into a grid, its column labels stay in view
    assert marks["panel"] == "open"
    assert 'class="verdict fail"' in dom.stdout and "<li" in dom.stdout  # the worst case and its stream


@pytest.mark.slow
def test_compare_report_renders_in_headless_chromium(tmp_path: Path) -> None:
    page = write_html(tmp_path / "compare.html", comparison=comparison(), title="A vs B")
    shot = tmp_path / "compare.png"
    shown = browse(tmp_path, page, f"--screenshot={shot}", "--window-size=1280,900")
    assert shot.stat().st_size > 5000
    png = shot.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    assert (width, height) == (1280, 900)
    assert console_messages(shown.stderr) == []


def test_cli_check_and_compare_write_the_same_page(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from harness.cli import main

    parallel = str(Path(__file__).resolve().parents[2] / "cassettes" / "openai-chat" / "parallel-2.yaml")
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


def test_a_case_stream_shows_an_edited_event_as_sent() -> None:
    # truncate-args edits the last argument piece's payload; the page showed that event's bytes as
    # received (its `wire`), marked edited, so the truncation was not on the page.
    from harness.matrix.selection import build_case
    from harness.report.html import _stream_of
    from harness.text.terminal import shorten
    from harness.wire import dialects

    case_id = "openai-chat/parallel-2::B10-truncated-args::s0"
    case = build_case(case_id)
    edited = [n for n, event in enumerate(case.events) if event.edited]
    shown = _stream_of(case_id, None)
    assert edited and shown is not None
    d = dialects.get("openai-chat")
    recorded = build_case("openai-chat/parallel-2::original::s0").events
    for n in edited:
        assert shown[n]["edited"] and shown[n]["text"] == shorten(d.render(case.events[n]).data, 400)
        assert shown[n]["text"] != shorten(recorded[n].wire.data, 400)  # the truncation is on the page
