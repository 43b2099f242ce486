"""Failures grouped into numbered kinds alike everywhere: the HTML's counts add up to the terminal's
last line and number its kinds as the terminal does, a small run's headings carry their numbers,
and `compare` groups its differences as `check` groups failures (terminal, JSON and HTML)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from harness import Selection, run_matrix
from harness.cassettes.outcome import Outcome
from harness.cli import main
from harness.oracle.verdict import Report, Result, Verdict, signature
from harness.report.results import failure_kinds, render_check, report_to_dict, root_cause_lines, root_causes

SELECTION = [
    "--dialect", "openai-chat",
    "--scenarios", "parallel-calls-share-index-0", "D7-truncated-mid-args", "B8-args-as-object",
    "D6-missing-finish-reason",
]  # fmt: skip
INDEX_ONLY = "examples.accumulators:IndexOnly"
_KIND_LINE = re.compile(r"^ *(\d+)\. +(\d+)  (?:\[[^\]]*\] )?(.*?)(?: \(warnings: neither side fails\))?$")


def _page_sections(page: str) -> list[dict[str, Any]]:
    found = re.search(r'<script type="application/json" id="data">(.*?)</script>', page, re.S)
    assert found is not None
    sections: list[dict[str, Any]] = json.loads(found[1])
    return sections


def _terminal_kinds(out: str) -> list[tuple[int, int, str]]:
    return [(int(m[1]), int(m[2]), m[3]) for m in map(_KIND_LINE.match, out.splitlines()) if m]


def test_html_counts_add_up_and_number_kinds_as_the_terminal(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    page = tmp_path / "check.html"
    assert main(["check", "--accumulator", INDEX_ONLY, *SELECTION, "--html", str(page)]) == 1
    out = capsys.readouterr().out
    html = page.read_text()
    # The terminal's last line: `IndexOnly: 78 cases: 2 pass, 34 fail, 22 warn, 20 error, ...`.
    last = re.search(r": (\d+) cases: ((?:\d+ \w+(?:, )?)+) \(", out.splitlines()[-1])
    assert last is not None
    total, said = int(last[1]), last[2]
    parts = {verdict: int(n) for n, verdict in (part.split() for part in said.split(", "))}
    assert sum(parts.values()) == total
    failing = parts["fail"] + parts["error"] + parts["timeout"]
    assert f"{INDEX_ONLY}: {failing} of {total} cases fail<" in html
    assert f'<p class="counts">{total} cases: {said}</p>' in html
    # The same kinds under the same numbers, with the same counts and signatures.
    kinds = _terminal_kinds(out)
    assert len(kinds) >= 3 and sum(count for _, count, _ in kinds) == failing
    groups = [g for g in _page_sections(html)[0]["groups"] if not g.get("warn")]
    assert [(g["kind"], g["count"], g["signature"]) for g in groups] == kinds
    for n, _, _ in kinds:
        assert f'<span class="no">kind {n}</span>' in html


def test_a_small_run_numbers_its_kinds_too() -> None:
    # A grid instead of the kinds' overview: each kind's heading still carries its number.
    def failed(scenario: str, diff: str) -> Result:
        return Result(
            id=f"openai-chat/a::{scenario}::s0", cassette="openai-chat/a", scenario=scenario, seed=0,
            dialect="openai-chat", accumulator="mine:Acc", verdict=Verdict.FAIL, expected=Outcome(),
            actual=Outcome(), diff=(diff,),
        )  # fmt: skip

    report = Report("mine:Acc", [failed("x", "text: '' expected, got 'a'"), failed("y", "finish_reason: x")])
    text = render_check(report, width=100)
    assert "== kind 1: finish_reason differs (1 cases)" in text
    assert "== kind 2: text differs (1 cases)" in text


def test_compare_groups_differences_into_numbered_kinds(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out_dir, report, page = tmp_path / "repro", tmp_path / "compare.json", tmp_path / "compare.html"
    argv = ["compare", "reference", INDEX_ONLY, *SELECTION, "--max-differences", "4"]
    argv += ["--out", str(out_dir), "--json", str(report), "--html", str(page)]
    assert main(argv) == 1
    out = capsys.readouterr().out
    head = re.search(r"^(\d+) differences in (\d+) kinds:$", out, re.M)
    assert head is not None
    kinds = _terminal_kinds(out)
    assert len(kinds) == int(head[2]) >= 4 and sum(count for _, count, _ in kinds) == int(head[1])
    assert kinds[0][2].startswith("A pass, B fail (")
    # With a cap of 4, each of the first four kinds shows one difference under its heading.
    assert out.count("DIFFERS ") == 4
    headings = re.findall(r"^== kind (\d+) \((\d+) cases\)$", out, re.M)
    assert [(int(n), int(k)) for n, k in headings] == [(n, k) for n, k, _ in kinds[:4]]
    # The differences shown are the ones reproduced.
    shown = re.findall(r"^DIFFERS (\S+)", out, re.M)
    reproduced = re.findall(r"^  reproduction: (\S+)", out, re.M)
    assert len(reproduced) == 4 and len(list(out_dir.glob("*.yaml"))) == 4
    # The JSON keeps every field it had, and adds each difference's kind; the HTML numbers alike.
    data = json.loads(report.read_text())
    kept = {"id", "lines", "a", "b", "meets_expectation", "warn", "reproduction"}
    assert kept <= set(data["differences"][0])
    by_id = {d["id"]: d for d in data["differences"]}
    assert [by_id[case_id]["kind"] for case_id in shown] == [1, 2, 3, 4]
    assert [(k["kind"], k["count"], k["signature"]) for k in data["kinds"]] == kinds
    groups = _page_sections(page.read_text())[0]["groups"]
    assert [(g["kind"], g["count"], g["signature"]) for g in groups] == kinds


def test_root_causes_group_the_kinds_one_bug_shows() -> None:
    # Issue 43: one bug, many kinds. IndexOnly merges calls sharing an index: with the scenarios
    # that also change ids, cuts or indexes after the merge, that one bug shows several kinds,
    # all with the first difference "name concatenated".
    scenarios = ("parallel-calls-share-index-0", "profile-ids-on-every-chunk-crlf", "A3-index-missing",
                 "B3-name-repeated-in-full", "profile-gateway-index-0-rechunked")  # fmt: skip
    selection = Selection(dialects=("openai-chat",), scenarios=scenarios)
    report = run_matrix("examples.accumulators:IndexOnly", selection)
    kinds = failure_kinds(report.failures)
    causes = root_causes(report.failures)
    assert len(kinds) > 1 and len(causes) < len(kinds)
    merged = causes["name concatenated"]
    assert len({signature(r) for r in merged}) > 1  # several kinds, one root cause
    lines = root_cause_lines(report.failures, kinds)
    assert lines[0].startswith(f"{len(report.failures)} failures from {len(causes)} root causes")
    assert any("name concatenated: kinds " in line for line in lines)
    assert all(case["root_cause"] for case in report_to_dict(report)["cases"] if case["verdict"] == "fail")


def test_an_error_is_its_own_root_cause_and_every_kind_its_own_prints_nothing() -> None:
    selection = Selection(dialects=("openai-chat",), scenarios=("B8-args-as-object",))
    report = run_matrix("examples.accumulators:IndexOnly", selection)
    kinds = failure_kinds(report.failures)
    assert list(root_causes(report.failures)) == list(kinds)  # one raise, one kind
    assert root_cause_lines(report.failures, kinds) == []
