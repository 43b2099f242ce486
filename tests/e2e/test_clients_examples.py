"""The real clients of examples/clients/, unchanged, run by `toolstream check --client` over their
dialect's cases (each Node one from its folder where the documented install put exactly what its
lockfile pins there, else by its own `npm ci --offline` in a temp folder, from the npm cache that
install filled; skipped with the install command where that cannot be done), and the table of
docs/clients.md of what each gets wrong, which must match the stored results."""

from __future__ import annotations

import json
import runpy
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main
from harness.matrix.selection import Matrix, Selection

ROOT = Path(__file__).resolve().parents[2]
TABLE = runpy.run_path(str(ROOT / "examples" / "clients" / "table.py"))
STORED: dict[str, Any] = json.loads((ROOT / "examples" / "clients" / "results.json").read_text())
# Per dialect, the scenarios run here: the recorded streams and the quirk that merges parallel calls.
HERE = {
    "openai-chat": ("original", "parallel-calls-share-index-0"),
    "anthropic": ("original", "D7-truncated-mid-args", "D10-duplicate-start-events"),
}
# Per dialect, the recordings run here, where not all of them: a Node process per case costs about
# a second of CPU, and the whole matrix is the stored table's (checked below without running it).
# OpenAI chat: one call, parallel ones (sharing index 0 merges them), text first, a cut mid-arguments.
# Anthropic: parallel calls (a repeated message_start fails), a cut and an error mid-call (it passes).
SAMPLE = {
    dialect: tuple(str(ROOT / "cassettes" / dialect / f"{name}.yaml") for name in names)
    for dialect, names in {
        "openai-chat": (
            "single-call",
            "parallel-2",
            "parallel-3-same-function",
            "text-then-call",
            "cut-mid-arguments",
        ),
        "anthropic": ("parallel-calls", "cut-mid-args", "overloaded-mid-call"),
    }.items()
}
SHARED = "openai-chat/parallel-2::parallel-calls-share-index-0::s0"
PARALLEL = "openai-chat/parallel-2::original::s0"
CUT = "openai-chat/cut-mid-arguments::original::s0"


INSTALLED: dict[str, Path] = {}  # client folder -> where it is installed for this session


def need(name: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    """A Node client installed from its pinned lockfile: its own folder where that holds exactly
    what the lockfile pins (the documented install), else a folder of this test session's own
    (`npm ci --offline`: from the npm cache the documented install filled, never the network);
    skipped with the install command where node or the cached packages are missing."""
    folder = TABLE["CLIENTS"][name][0]
    if folder in INSTALLED:
        return
    skip = f"{name} is not installed: {TABLE['install_command'](name)}"
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip(skip)
    source = ROOT / "examples" / "clients" / folder
    if _installed_from_lockfile(source):
        INSTALLED[folder] = source  # the documented install, from this lockfile: nothing to add
        return
    copy = tmp_path_factory.mktemp(folder)
    for path in source.iterdir():
        if path.is_file():
            shutil.copy2(path, copy / path.name)
    done = subprocess.run(
        ["npm", "ci", "--offline", "--no-audit", "--no-fund", "--silent"],
        cwd=copy, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        pytest.skip(f"{skip} ({done.stderr.strip().splitlines()[-1:] or 'npm ci failed'})")
    INSTALLED[folder] = copy


def _installed_from_lockfile(folder: Path) -> bool:
    """Whether the folder's node_modules holds exactly what its lockfile pins: npm's record of
    what it installed (`node_modules/.package-lock.json`) lists the lockfile's packages."""
    try:
        pinned = json.loads((folder / "package-lock.json").read_text(encoding="utf-8"))["packages"]
        installed = json.loads((folder / "node_modules" / ".package-lock.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, KeyError):
        return False
    return installed.get("packages") == {path: entry for path, entry in pinned.items() if path}


def check(name: str, tmp_path: Path) -> dict[str, dict[str, Any]]:
    """`toolstream check --client` over this test's selection; the JSON report's cases by id."""
    dialect = TABLE["CLIENTS"][name][2]
    out = tmp_path / "report.json"
    program = TABLE["command"](name, INSTALLED.get(TABLE["CLIENTS"][name][0]))
    sample = ["--cassettes", *SAMPLE[dialect]] if dialect in SAMPLE else []
    code = main(
        ["check", "--client", program, "--dialect", dialect, *sample, "--scenarios", *HERE[dialect],
         "--seeds", "1", "-j", "2", "--timeout", "30", "--json", str(out)]
    )  # fmt: skip
    cases = {c["id"]: c for c in json.loads(out.read_text())["cases"]}
    assert code == (1 if any(c["verdict"] in ("fail", "error", "timeout") for c in cases.values()) else 0)
    return cases


def agrees_with_stored(name: str, cases: dict[str, dict[str, Any]]) -> None:
    """Each case run here has the verdict the table of docs/clients.md was written from."""
    from harness.oracle.verdict import signature

    stored = {row["id"]: row for row in STORED[name]["cases"]}
    seen = [(i, c["verdict"], signature(c)) for i, c in cases.items() if i in stored]
    assert len(seen) == len(cases)
    assert seen == [(i, stored[i]["verdict"], stored[i]["signature"]) for i, _, _ in seen]


@pytest.mark.slow
def test_the_node_openai_sdk_loop_merges_parallel_calls_sharing_index_0(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    need("node-openai", tmp_path_factory)
    cases = check("node-openai", tmp_path)
    agrees_with_stored("node-openai", cases)
    assert cases[PARALLEL]["verdict"] == "pass"
    # The SDK's stream helper keys calls by index: one call, the second one's name and id, both
    # argument objects glued together; the loop tells the model, and the follow-up shows it all.
    merged = cases[SHARED]
    assert merged["verdict"] == "fail" and merged["severity"] == "unsafe" and merged["class"] == "quirk"
    # The case is retargeted onto the loop's one tool (`lookup`, no parameters): both calls are
    # `lookup` {}, so the merge shows as the glued arguments and the missing second call.
    assert "call 1: arguments {} expected, got invalid {}{}" in merged["diff"]
    assert "call 2: 'lookup' {} expected, missing" in merged["diff"]
    # A stream cut mid-arguments: the SDK throws (no finish_reason) and nothing runs: right.
    assert cases[CUT]["verdict"] == "pass"


@pytest.mark.slow
def test_the_vercel_ai_sdk_stream_text_loop_keys_calls_by_id(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    need("vercel-ai", tmp_path_factory)
    streamed = check("vercel-ai-stream", tmp_path)
    agrees_with_stored("vercel-ai-stream", streamed)
    # streamText keys calls by id: parallel calls sharing index 0 come back whole...
    assert streamed[SHARED]["verdict"] == "pass"
    # ...but a stream cut mid-arguments still runs the half-streamed call.
    assert streamed[CUT]["verdict"] == "fail" and streamed[CUT]["severity"] == "unsafe"


@pytest.mark.slow
def test_the_vercel_ai_sdk_generate_text_loops_over_several_steps(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    need("vercel-ai", tmp_path_factory)
    # generateText asks for no stream: it gets each case's outcome whole, and the loop follows up.
    whole = check("vercel-ai", tmp_path)
    agrees_with_stored("vercel-ai", whole)
    assert {c["verdict"] for c in whole.values()} == {"pass"}


@pytest.mark.slow
def test_the_node_anthropic_sdk_loop(tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    need("node-anthropic", tmp_path_factory)
    cases = check("node-anthropic", tmp_path)
    agrees_with_stored("node-anthropic", cases)
    by_scenario: dict[str, set[str]] = {}
    for case in cases.values():
        by_scenario.setdefault(case["scenario"], set()).add(case["verdict"])
    assert by_scenario["original"] == by_scenario["D7-truncated-mid-args"] == {"pass"}
    # A repeated message_start makes the SDK throw ("Unexpected event order"): on every stream that
    # ended cleanly the loop dies with the calls unrun, its user gets the raise (a failure).
    duplicated = [c for c in cases.values() if c["scenario"] == "D10-duplicate-start-events"]
    complete = [c for c in duplicated if c["expected"]["state"] == "complete"]
    assert complete and {c["verdict"] for c in complete} == {"fail"}
    raised = "state: complete expected, got error (AnthropicError: Unexpected event order"
    assert all(any(line.startswith(raised) for line in c["diff"]) for c in complete)


def test_the_clients_page_table_is_the_stored_results() -> None:
    readme = (ROOT / "docs" / "clients.md").read_text()
    block = readme.split(TABLE["BEGIN"], 1)[1].split(TABLE["END"], 1)[0].strip()
    stored = {name: STORED[name] for name in TABLE["CLIENTS"] if name in STORED}
    assert block == TABLE["table"](stored)
    assert set(stored) == set(TABLE["CLIENTS"])  # every client has results in the table


def test_the_stored_results_are_each_clients_whole_dialect_matrix() -> None:
    # The table is over every case of the client's dialect (the issue: "over the openai-chat
    # matrix"), not a selection: a new cassette or scenario needs `python examples/clients/table.py --run`.
    # An entry run with `--selection` says so, and the table shows it (the Agents SDK's imports
    # cost ~3 s of CPU per case: its whole matrix did not fit the loaded machine it was run on).
    partial = []
    for name, entry in STORED.items():
        dialect = TABLE["CLIENTS"][name][2]
        assert entry["dialect"] == dialect
        chosen = entry.get("selection") or {}
        scenarios = tuple(chosen.get("scenarios", ()))
        matrix = Matrix(Selection(dialects=(dialect,), scenarios=scenarios, seeds=chosen.get("seeds")))
        ids = [row["id"] for row in entry["cases"]]
        assert ids == [case.id for case in matrix.all()], f"{name}: rerun examples/clients/table.py --run"
        cost = entry["cost"]
        assert cost["jobs"] >= 1 and cost["wall_s"] > 0 and cost["cpu_s"] > 0
        if chosen:
            partial.append(name)
            assert "not the whole matrix" in TABLE["table"]({name: entry})
    assert partial in ([], ["openai-agents"])  # every Node client and the stdlib loop: whole matrix


def test_table_run_gives_the_stored_verdicts_and_what_it_cost() -> None:
    # The standard-library loop needs no toolchain: the command the table is written by, on two
    # scenarios, agrees with the stored whole-matrix run case for case.
    rows, cost = TABLE["run"]("python-stdlib", jobs=2, scenarios=("original", "parallel-calls-share-index-0"))
    stored = {row["id"]: row for row in STORED["python-stdlib"]["cases"]}
    assert len(rows) >= 15 and all(row == stored[row["id"]] for row in rows)
    assert cost["jobs"] == 2 and cost["wall_s"] > 0 and cost["cpu_s"] > 0


def test_rerun_errors_rejudges_only_the_error_cases_and_keeps_the_cost() -> None:
    # `--rerun-errors` on a copy of the stdlib loop's row where one raising case (a `\r` line end
    # breaks its `json.loads`) is stored as the old `error`: that case alone runs again and gets
    # what the stored run says now; a case not stored as an error is not run (a pass stored as a
    # made-up fail stays so); the cost is the recorded run's, and the row says what was re-judged.
    stored = {row["id"]: row for row in STORED["python-stdlib"]["cases"]}
    raising, other = "openai-chat/azure-prompt-filter::F4-cr-line-ends::s0", PARALLEL
    old = {**stored[raising], "verdict": "error", "severity": None, "signature": "error: exited"}
    made_up = {**stored[other], "verdict": "fail"}
    entry = {**STORED["python-stdlib"], "cases": [old, made_up]}
    entry.pop("rejudged", None)
    cost = dict(entry["cost"])
    assert TABLE["rerun_errors"]("python-stdlib", entry, 2, 30.0, "2026-01-02") == 1
    assert entry["cases"] == [stored[raising], made_up]
    assert "got error (JSONDecodeError: Extra data" in stored[raising]["signature"]
    assert entry["cost"] == cost and [n["cases"] for n in entry["rejudged"]] == [1]
    assert "1 `error` cases re-judged 2026-01-02" in TABLE["table"]({"python-stdlib": entry})
    assert TABLE["rerun_errors"]("python-stdlib", entry, 2, 30.0, "2026-01-03") == 0  # nothing left
