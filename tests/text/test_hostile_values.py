"""Names and values from cassettes, scenarios and case ids are data in every writer (issue 29).

A stranger's cassette file name, provenance, declared reason or scenario name holds quotes,
triple quotes, backticks, newlines, `</script>` and terminal escapes. The repro script still runs
as intended (nothing in it executes), the report card's Markdown and the HTML report show them as
text, and the terminal output of show, check, compare and explain spells control characters.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from harness.cassettes.format import Declared, load, save
from harness.cassettes.outcome import Outcome
from harness.cli import main
from harness.oracle.verdict import Report, Result, Verdict
from harness.report.html import render_html
from harness.text.escape import markdown_code, markdown_text, python_text, script_json, terminal

ROOT = Path(__file__).resolve().parents[2]
SINGLE_CALL = ROOT / "cassettes" / "openai-chat" / "single-call.yaml"

# Code that leaves a file behind if it ever runs: in a docstring, a comment or a literal.
PAYLOAD = '"""+str(__import__("os").system("touch PWNED"))+"""'
# A file name may hold all of this on Linux (not `/`; `#` numbers a cassette's interactions in ids):
# a newline ends a comment, `\x1b` recolours.
FILE_NAME = f"a{PAYLOAD}\nimport os; os.system('touch PWNED2')  ; `|<img src=x onerror=alert(1)>\x1b[31m"
VALUE = (
    f"{PAYLOAD}\n# x\r\x1b[2J\x1b]0;owned\x07 `tick` | pipe </script><!-- <img src=x onerror=alert(1)> "
    "&amp; [link](http://evil) \x9b31m \\N{oops} \u202e"
)
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def hostile_cassette(folder: Path, name: str = FILE_NAME) -> Path:
    """single-call.yaml under a hostile file name, with a hostile provenance and declared reason."""
    cassette = load(SINGLE_CALL)
    cassette.source.provenance = VALUE
    cassette.name = VALUE
    cassette.interactions[0].declared = Declared("quirk", VALUE)
    folder.mkdir(parents=True, exist_ok=True)
    return save(cassette, folder / f"{name}.yaml")


# ---------------------------------------------------------------------------------------------
# The escapers


@pytest.mark.parametrize("text", [VALUE, FILE_NAME, "", "\\", '"', "'''", 'end"', "a\\"])
def test_python_text_is_the_same_string_inside_any_quotes(text: str) -> None:
    for quote in ('"', "'", '"""', "'''"):
        source = f"{quote}{python_text(text)}{quote}"
        assert ast.literal_eval(source) == text  # nothing but the string comes back
    assert python_text(text).isascii() and "\n" not in python_text(text)


def test_markdown_escapers_leave_no_markup() -> None:
    text = markdown_text(VALUE)
    assert "<" not in text and "\n" not in text and "|" not in text.replace("\\|", "")
    assert "`" not in text.replace("\\`", "")
    code = markdown_code("a ``` b | c\nd", in_table=True)
    assert code == "```` a ``` b \\| c d ````"
    assert markdown_code("plain") == "`plain`"


def test_script_json_cannot_close_the_script_element() -> None:
    text = script_json({"x": VALUE + "\u2028"})
    assert "<" not in text and "\u2028" not in text
    assert json.loads(text) == {"x": VALUE + "\u2028"}


def test_terminal_spells_every_control_character_but_newline_and_tab() -> None:
    assert not CONTROL.search(terminal(VALUE).replace("\n", "").replace("\t", ""))
    assert "\\x1b[2J" in terminal(VALUE)


# ---------------------------------------------------------------------------------------------
# repro: the script runs as intended, the payload never


def test_repro_from_hostile_names_runs_as_intended(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    hostile_cassette(tmp_path / "fn")
    scenarios = tmp_path / "scenarios"
    scenarios.mkdir()
    scenario_name = f"s{PAYLOAD}\n# `x` </script>"
    (scenarios / "mine.yaml").write_text(
        json.dumps({"name": scenario_name, "description": VALUE, "dialects": "all",
                    "steps": [{"drop-sentinel": {}}]}),
        encoding="utf-8",
    )  # fmt: skip
    for case_id in (f"fn/{FILE_NAME}::original::s0", f"fn/{FILE_NAME}::{scenario_name}::s0"):
        out = tmp_path / "r.py"
        argv = ["repro", case_id, "--accumulator", "openai-sdk", "--cassettes", "fn", "-o", str(out)]
        assert main([*argv, "--scenarios-dir", str(scenarios)]) == 0
        text = out.read_text(encoding="utf-8")
        compile(text, str(out), "exec")
        run = subprocess.run(
            [sys.executable, str(out)], capture_output=True, text=True, timeout=300, cwd=tmp_path
        )
        assert not list(tmp_path.glob("PWNED*")), "code from a name ran"
        assert run.returncode == 0, run.stdout + run.stderr
        assert "OK: the library handles this stream." in run.stdout
        # The docstring still says which case it is, escaped: its value is the case id itself.
        docstring = re.search(r'^"""(.*?)"""$', text, re.S | re.M)
        assert docstring is not None
        assert case_id in ast.literal_eval('"""' + docstring[1] + '"""')


# ---------------------------------------------------------------------------------------------
# The terminal: show, explain, check, compare


def test_show_and_explain_spell_control_characters(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    path = hostile_cassette(tmp_path / "fn", "plain")
    for argv in (
        ["show", str(path)],
        ["show", "--json", str(path)],
        ["show", "fn/plain::original::s0", "--cassettes", "fn"],
        ["show", "fn/plain.yaml::original::s0"],
        ["explain", "fn/plain::original::s0", "--cassettes", "fn"],
    ):
        assert main(argv) == 0, argv
        out = capsys.readouterr().out
        assert not CONTROL.search(out.replace("\n", "").replace("\t", "")), argv
    assert main(["show", str(path)]) == 0
    out = capsys.readouterr().out
    assert "source: synthesized: " in out and "\\x1b[2J" in out
    # The provenance stays on its line: its newline is spelled, not obeyed.
    assert "\n# x" not in out


def _hostile_report(case_id: str) -> Report:
    expected = Outcome.from_dict({"tool_calls": [], "text": "", "finish_reason": "stop", "state": "complete"})
    actual = Outcome.from_dict({"tool_calls": [], "text": VALUE, "finish_reason": VALUE, "state": "complete"})
    result = Result(
        id=case_id, cassette=case_id.split("::")[0], scenario="original", seed=0, dialect="openai-chat",
        accumulator="mine", verdict=Verdict.FAIL, expected=expected, actual=actual,
        diff=(f"text: '' expected, got {VALUE}",), output=VALUE, error=VALUE,
    )  # fmt: skip
    return Report("mine", [result])


def test_check_output_spells_control_characters() -> None:
    from harness.report.results import render_check

    text = render_check(_hostile_report(f"fn/{FILE_NAME}::original::s0"))
    assert not CONTROL.search(text.replace("\n", "").replace("\t", ""))
    assert "FAIL fn/a" in text and "\\n" in text.split("FAIL fn/a", 1)[1].splitlines()[0]


# ---------------------------------------------------------------------------------------------
# HTML and Markdown


def test_html_report_shows_hostile_values_as_text() -> None:
    case_id = f"fn/{FILE_NAME}::original::s0"
    page = render_html(reports=[_hostile_report(case_id)], stream=lambda _: [{"text": VALUE, "edited": True}])
    script = page.split('<script type="application/json" id="data">', 1)[1].split("</script>", 1)[0]
    assert "<" not in script
    body = page.split('<script type="application/json"', 1)[0]
    assert "<img" not in body and "</script>" not in body and "<!--" not in body
    assert "\x1b" not in body
    data = json.loads(script)
    assert data[0]["cases"][0]["id"] == case_id  # the data is the value itself, unchanged


def _card(value: str) -> dict[str, object]:
    signature = {
        "cases": 3, "verdict": "fail", "severity": "unsafe", "classes": {"spec": 3},
        "signature": value, "worst": value, "example": value, "repros": [],
    }  # fmt: skip
    return {
        "version": 1,
        "date": "2026-01-01",
        "selection": {"cassettes": [value]},
        "rows": [
            {"library": "lib", "version": value, "adapter": value, "cases": 3, "problem": None,
             "verdicts": {"fail": 3}, "by_class": {"spec": {"fail": 3}}, "by_severity": {"unsafe": 3},
             "signatures": [signature]},
            {"library": "other", "version": "1", "adapter": "x", "problem": value},
        ],
        "changes": [{"library": "lib", "from": "1", "to": value, "cases": 3,
                     "fixed": [{"cases": 1, "scenario": value, "examples": [value]}], "broken": []}],
    }  # fmt: skip


def test_report_card_markdown_and_html_show_hostile_values_as_text() -> None:
    from harness.card import render

    value = f"fn/{FILE_NAME}`::``{VALUE}"
    assert "\n" in value
    markdown = render.markdown(_card(value))
    for line in markdown.splitlines():
        text = _outside_code_spans(line)
        # No HTML outside code spans (inside one, `<img ...>` is shown as written), no link.
        assert "<" not in text and not re.search(r"(?<!\\)\]\(", text), line
        if line.startswith("| "):  # every table row keeps its columns: no raw `|`, no newline
            cells = re.split(r"(?<!\\)\|", line)
            assert len(cells) in (13, 11), line
    page = render.page(_card(value))
    assert "<img" not in page and "</script>" not in page and "<!--" not in page


def _outside_code_spans(line: str) -> str:
    """A Markdown line without its code spans (a run of n backticks up to the next run of n)."""
    out, pos = [], 0
    while pos < len(line):
        if line[pos] == "\\":
            out.append(line[pos : pos + 2])
            pos += 2
            continue
        if line[pos] != "`":
            out.append(line[pos])
            pos += 1
            continue
        run = len(line[pos:]) - len(line[pos:].lstrip("`"))
        closing = re.compile(rf"(?<!`)`{{{run}}}(?!`)").search(line, pos + run)
        if closing is None:
            out.append(line[pos : pos + run])
            pos += run
        else:
            pos = closing.end()
    return "".join(out)


def test_repro_script_prints_json_without_terminal_controls() -> None:
    from harness.search import repro_templates

    namespace: dict[str, object] = {"json": json}
    exec(repro_templates.HELPERS, namespace)  # the helpers every script defines
    printed = namespace["shown"]({"text": VALUE})  # type: ignore[operator]
    assert not CONTROL.search(printed.replace("\n", ""))
    assert json.loads(printed) == {"text": VALUE}
