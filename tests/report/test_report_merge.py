"""`toolstream report merge`: the shards' JSON reports merged into the report the whole run writes
(the same counts and failures, the same JSON apart from timings, the same HTML), or refused with
one line naming the file and the problem when they are not the shards of one run (exit 2)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main
from harness.errors import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from harness.matrix.runner import run_matrix
from harness.matrix.selection import Selection
from harness.oracle.verdict import root_cause
from harness.report.results import report_to_dict, write_json
from tests._pytester_support import CASSETTES, FIRST_CALL_ONLY, plugin_args, prepare

pytest_plugins = ["pytester"]

SCENARIOS = "original,parallel-calls-share-index-0,F3-one-byte-reads,A5-id-on-every-chunk"
SHARDS = 4
OPENAI = CASSETTES / "openai-chat"


def without_timings(data: Any) -> Any:
    """A report with every `seconds` (the run's and each case's) left out."""
    if isinstance(data, dict):
        return {k: without_timings(v) for k, v in data.items() if k != "seconds"}
    if isinstance(data, list):
        return [without_timings(v) for v in data]
    return data


def run_merge(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str, str]:
    code = main(["report", "merge", *map(str, args)])
    said = capsys.readouterr()
    return code, said.out, said.err


@pytest.mark.slow
def test_four_pytest_shards_merged_are_the_whole_run(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("pytest_shard")
    prepare(pytester, monkeypatch)
    pytester.makepyfile(accs=FIRST_CALL_ONLY)  # wrong on parallel calls: passes and failures to merge
    args = [*plugin_args(), "-p", "no:randomly", f"--toolstream-cassette-dir={OPENAI}"]
    args += ["--toolstream-scenarios", SCENARIOS, "--toolstream-accumulator", "accs:FirstCallOnly"]

    def run(name: str, *extra: str) -> None:
        pytester.runpytest(*args, f"--toolstream-json={name}.json", f"--toolstream-html={name}.html", *extra)

    run("whole")
    for i in range(SHARDS):
        run(f"shard-{i}", f"--shard-id={i}", f"--num-shards={SHARDS}")
    folder = pytester.path
    shards = [folder / f"shard-{i}.json" for i in range(SHARDS)]
    assert all(json.loads(p.read_text(encoding="utf-8"))["cases"] for p in shards), "a shard ran nothing"
    outputs = ["--json", folder / "merged.json", "--html", folder / "merged.html"]
    code, out, _ = run_merge(capsys, *shards, *outputs)
    whole = json.loads((folder / "whole.json").read_text(encoding="utf-8"))
    merged = json.loads((folder / "merged.json").read_text(encoding="utf-8"))
    assert whole["summary"]["fail"] > 0 and whole["summary"]["pass"] > 0
    assert merged["summary"] == whole["summary"]
    assert [c["id"] for c in merged["cases"] if c["verdict"] == "fail"] == [
        c["id"] for c in whole["cases"] if c["verdict"] == "fail"
    ]
    assert without_timings(merged) == without_timings(whole)
    assert (folder / "merged.html").read_bytes() == (folder / "whole.html").read_bytes()
    # What check would say of the whole run, and its exit code: a case fails.
    assert code == EXIT_FAILED
    assert f"{whole['summary']['total']} cases: {whole['summary']['pass']} pass" in out


# ---------------------------------------------------------------------------------------------
# Made without pytest: check runs' reports split into shards by hand


@pytest.fixture(scope="module")
def whole_check() -> dict[str, Any]:
    """A `check --json` report of a small matrix, with a failure (FirstCallOnly on parallel calls)."""
    selection = Selection(
        cassettes=(str(OPENAI / "single-call.yaml"), str(OPENAI / "parallel-2.yaml")),
        scenarios=("original", "F3-one-byte-reads"),
    )
    report = run_matrix("reference", selection)
    data = report_to_dict(report, selection)
    # One case made to fail, as a wrong accumulator's would.
    data["cases"][-1] = {**data["cases"][-1], "verdict": "fail", "diff": ["call 2: missing 'get_time'"]}
    data["cases"][-1]["root_cause"] = root_cause(data["cases"][-1])  # as a failing case's JSON has it
    data["summary"] = {**data["summary"], "pass": data["summary"]["pass"] - 1, "fail": 1, "ok": False}
    return data


def shards_of(data: dict[str, Any], parts: list[list[int]], folder: Path) -> list[Path]:
    """The report split into shards holding the cases at these places."""
    out = []
    for n, places in enumerate(parts):
        shard = {**data, "cases": [data["cases"][i] for i in places]}
        out.append(write_json(shard, folder / f"shard-{n}.json"))
    return out


def test_check_reports_split_and_merged_are_the_whole_report(
    whole_check: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    total = len(whole_check["cases"])
    assert total >= 4
    shards = shards_of(whole_check, [list(range(1, total, 2)), list(range(0, total, 2))], tmp_path)
    code, out, err = run_merge(capsys, *shards, "--json", tmp_path / "merged.json")
    merged = json.loads((tmp_path / "merged.json").read_text(encoding="utf-8"))
    assert without_timings(merged) == without_timings(whole_check)  # the matrix's order again
    assert "not checked" not in err  # the selection's ids were listed here
    assert code == EXIT_FAILED and "FAILED" in out


def test_merge_exits_0_when_no_case_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    selection = Selection(cassettes=(str(OPENAI / "single-call.yaml"),), scenarios=("original",))
    data = report_to_dict(run_matrix("reference", selection), selection)
    (shard,) = shards_of(data, [[0]], tmp_path)
    code, out, _ = run_merge(capsys, shard, "--html", tmp_path / "page.html")
    assert code == EXIT_OK and out.rstrip().endswith("ok")
    assert (tmp_path / "page.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def test_a_case_in_two_shards_is_named(
    whole_check: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    total = len(whole_check["cases"])
    shards = shards_of(whole_check, [list(range(total)), [0]], tmp_path)
    code, out, err = run_merge(capsys, *shards)
    first = whole_check["cases"][0]["id"]
    assert code == EXIT_USAGE and out == ""
    assert err == f"toolstream report: {shards[1]}: 1 cases also in {shards[0]}: {first}\n"


def test_a_missing_case_is_named(
    whole_check: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    total = len(whole_check["cases"])
    shards = shards_of(whole_check, [[0], list(range(2, total))], tmp_path)
    code, _, err = run_merge(capsys, *shards)
    assert code == EXIT_USAGE
    missing = whole_check["cases"][1]["id"]
    where = f"{shards[0]} and 1 other reports"
    assert err == f"toolstream report: {where}: 1 cases of the matrix are in no report: {missing}\n"


def test_a_pytest_shard_names_its_missing_cases_from_its_matrix(
    whole_check: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = {**whole_check, "matrix": [c["id"] for c in whole_check["cases"]] + ["x::y::s0"]}
    (shard,) = shards_of(data, [list(range(len(whole_check["cases"])))], tmp_path)
    code, _, err = run_merge(capsys, shard)
    assert code == EXIT_USAGE and err.rstrip().endswith("1 cases of the matrix are in no report: x::y::s0")


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"harness": "0.0.1"}, "toolstream version differs from {first}'s ('0.0.1', not '{version}')"),
        ({"selection": {"cassettes": [], "scenarios": ["original"], "scenarios_dir": None, "dialects": [],
                        "seeds": None, "cases": []}}, "selection differs from {first}'s"),
        ({"matrix": ["a::b::s0"]}, "matrix differs from {first}'s"),
    ],
)  # fmt: skip
def test_shards_of_different_runs_are_refused(
    change: dict[str, Any],
    problem: str,
    whole_check: dict[str, Any],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from harness import __version__

    first, second = shards_of(whole_check, [[0], [1]], tmp_path)
    write_json({**json.loads(second.read_text(encoding="utf-8")), **change}, second)
    code, _, err = run_merge(capsys, first, second)
    said = problem.format(first=first, version=__version__)
    assert code == EXIT_USAGE
    assert err == f"toolstream report: {second}: {said}: the reports are not shards of one run\n"


def test_another_accumulator_is_refused(
    whole_check: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first, second = shards_of(whole_check, [[0], [1]], tmp_path)
    data = json.loads(second.read_text(encoding="utf-8"))
    data["summary"]["accumulator"] = "mine:Acc"
    data["cases"] = [{**case, "accumulator": "mine:Acc"} for case in data["cases"]]
    write_json(data, second)
    code, _, err = run_merge(capsys, first, second)
    assert code == EXIT_USAGE and "accumulator differs" in err and "('mine:Acc', not 'reference')" in err


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("not json", "not a JSON report"),
        ("[1, 2]", "not a JSON report (an object with summary and cases)"),
        ('{"version": 1, "summary": {}, "differences": []}', "a compare report"),
        ('{"version": 1, "reports": []}', "a report of several accumulators"),
        ('{"version": 9, "summary": {}, "cases": []}', "version: 9; this toolstream reads 1"),
        ('{"version": 1, "summary": {"accumulator": "a", "strict": false}, "cases": [7]}',
         "cases[0]: must be"),
        ('{"version": 1, "summary": {"accumulator": "a", "strict": false}, "cases": [{"id": "x"}]}',
         "cases[0]: not a case's result (no 'cassette')"),
        ('{"version": 1, "summary": {"accumulator": "a", "strict": "no"}, "cases": []}',
         "summary.strict: must be true or false, not 'no'"),
        ("[" * 5000, "not a JSON report (JSON nested 5000 levels deep"),
    ],
)  # fmt: skip
def test_a_file_that_is_not_a_report_is_one_line_naming_it(
    text: str, problem: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.json"
    path.write_text(text, encoding="utf-8")
    code, out, err = run_merge(capsys, path)
    assert code == EXIT_USAGE and out == ""
    assert err.startswith(f"toolstream report: {path}: {problem}") and err.count("\n") == 1


def test_a_missing_file_and_a_hostile_case_id(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_merge(capsys, tmp_path / "nope.json")
    assert code == EXIT_USAGE and err == f"toolstream report: {tmp_path / 'nope.json'}: no such file\n"
    case = {
        "id": "a\n\x1b[31mFAKE::b::s0", "cassette": "a", "scenario": "b", "seed": 0, "dialect": "openai-chat",
        "accumulator": "a", "verdict": "pass", "expected": {"tool_calls": []}, "actual": {"tool_calls": []},
    }  # fmt: skip
    doc = {"version": 1, "summary": {"accumulator": "a", "strict": False}, "cases": [case, case]}
    path = write_json(doc, tmp_path / "twice.json")
    code, _, err = run_merge(capsys, path)
    assert code == EXIT_USAGE and err.count("\n") == 1 and "\x1b" not in err and "a\\n" in err


def test_a_device_is_refused_without_reading_it(capsys: pytest.CaptureFixture[str]) -> None:
    """A device says no size: it was read to its end (`/dev/zero`: until memory ran out)."""
    code, _, err = run_merge(capsys, "/dev/zero")
    assert code == EXIT_USAGE and err == "toolstream report: /dev/zero: cannot read: a device, not a file\n"


def test_without_a_known_matrix_the_merge_says_it_did_not_check_for_missing_cases(
    whole_check: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = {**whole_check, "selection": {**whole_check["selection"], "cassettes": ["/nowhere/here.yaml"]}}
    (shard,) = shards_of(data, [[0, 1]], tmp_path)
    code, _, err = run_merge(capsys, shard)
    assert code == EXIT_OK
    said = "report merge: not checked for missing cases: the selection's cases cannot be listed here"
    assert err.startswith(said)
