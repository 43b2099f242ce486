"""Issue 32's smaller frictions, each as the user met it: piped tables cut, a refused accumulator
with no way forward, a key demanded of a local server, counts that did not add up, a compare
that listed 136 differences one by one."""

from __future__ import annotations

import io
import json
import re
import shlex
from pathlib import Path
from typing import Any

import pytest

from harness.cassettes.outcome import Outcome
from harness.cli import main
from harness.mutate.scenario import load_scenarios
from harness.oracle.verdict import Report, Result, Verdict
from harness.report.results import render_check
from harness.text.terminal import output_width, table


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


# ---------------------------------------------------------------------------------------------
# Piped output is never cut to a width


def test_piped_scenarios_keep_every_description_whole(capsys: pytest.CaptureFixture[str]) -> None:
    # capsys's stdout is no terminal: what `toolstream scenarios | less` gets.
    assert main(["scenarios"]) == 0
    out = capsys.readouterr().out
    longest = max((s.description for s in load_scenarios(None)), key=len)
    assert len(longest) > 120 and " ".join(longest.split()) in out
    assert "…" not in out


def test_a_table_fits_the_terminal_only_when_there_is_one() -> None:
    rows = [("a", "x" * 300)]
    assert output_width(io.StringIO()) is None and output_width(_Terminal()) is not None
    assert "x" * 300 in table(("name", "value"), rows)  # stdout under pytest: not a terminal
    fitted = table(("name", "value"), rows, max_width=80)
    assert max(map(len, fitted.splitlines())) <= 80 and fitted.endswith("…")


def test_piped_explain_cuts_no_event(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "openai-chat/parallel-2::A1-parallel-same-index::s0"]) == 0
    out = capsys.readouterr().out
    # The usage chunk is longer than half of any terminal: piped, both sides show it whole.
    assert out.count('"rejected_prediction_tokens":0}},"obfuscation"') == 2


# ---------------------------------------------------------------------------------------------
# repro refuses a user's own accumulator with the command that does reproduce the case


def test_repro_of_an_own_accumulator_names_the_command_that_reproduces_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    case_id = "openai-chat/parallel-2::parallel-calls-share-index-0::s0"
    assert main(["repro", case_id, "--accumulator", "examples.accumulators:IndexOnly"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no script template" in err
    suggested = re.search(r"`(toolstream compare [^`]+)`", err)
    assert suggested is not None
    assert "`toolstream explore --accumulator examples.accumulators:IndexOnly" in err
    # The command it names works as given: the case, shrunk, as a cassette in DIR.
    argv = shlex.split(suggested[1].replace("DIR", str(tmp_path / "found")))
    assert main(argv[1:]) == 1
    assert len(list((tmp_path / "found").glob("*.yaml"))) == 1


# ---------------------------------------------------------------------------------------------
# The HTML says what the terminal says: counts that add up, kinds numbered alike

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


# ---------------------------------------------------------------------------------------------
# compare groups its differences as check groups failures


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
