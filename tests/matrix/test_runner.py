"""The matrix runner: verdicts, containment in process, selection by case id, usage errors."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from harness.matrix.runner import run_matrix
from harness.matrix.selection import Selection
from harness.oracle.verdict import Verdict
from tests._runner_accumulators import PARALLEL, SINGLE, STDIO, install


@pytest.fixture
def accs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    return install(tmp_path, monkeypatch)


def test_reference_passes_and_original_is_added_when_no_scenario_is_named() -> None:
    report = run_matrix("reference", Selection(cassettes=(SINGLE,), scenarios=("original", "F3-single-read")))
    assert [r.id for r in report.results] == [
        "openai-chat/single-call::original::s0",
        "openai-chat/single-call::F3-single-read::s0",
    ]
    assert report.ok and report.count(Verdict.PASS) == 2
    result = report.results[0]
    assert (result.cassette, result.scenario, result.seed, result.dialect) == (
        "openai-chat/single-call",
        "original",
        0,
        "openai-chat",
    )
    assert result.actual == result.expected and result.accumulator == "reference"


def test_every_verdict_in_process_and_the_run_goes_on(accs: str) -> None:
    report = run_matrix(
        f"{accs}:tame", Selection(cassettes=(PARALLEL, SINGLE), scenarios=("original", "F4-crlf-line-ends"))
    )
    verdicts = {(r.cassette, r.scenario): r.verdict for r in report.results}
    assert verdicts[("openai-chat/parallel-2", "original")] is Verdict.ERROR
    assert verdicts[("openai-chat/parallel-2", "F4-crlf-line-ends")] is Verdict.FAIL
    assert verdicts[("openai-chat/single-call", "original")] is Verdict.PASS
    assert verdicts[("openai-chat/single-call", "F4-crlf-line-ends")] is Verdict.SKIPPED
    error = next(r for r in report.results if r.verdict is Verdict.ERROR)
    assert error.error == "ValueError: boom" and error.actual is None
    failed = next(r for r in report.results if r.verdict is Verdict.FAIL)
    assert failed.diff and failed.diff[0].startswith("tool_calls: 2 expected, got 0")
    assert not report.ok


def test_stdio_command_that_dies_or_prints_garbage(tmp_path: Path) -> None:
    script = tmp_path / "acc.py"
    script.write_text(STDIO, encoding="utf-8")
    report = run_matrix(
        f"cmd:{sys.executable} {script}",
        Selection(cassettes=(PARALLEL, SINGLE), scenarios=("original", "F3-single-read")),
    )
    verdicts = [(r.cassette, r.scenario, r.verdict) for r in report.results]
    assert verdicts == [
        ("openai-chat/parallel-2", "original", Verdict.ERROR),
        ("openai-chat/parallel-2", "F3-single-read", Verdict.ERROR),
        ("openai-chat/single-call", "original", Verdict.SKIPPED),
        ("openai-chat/single-call", "F3-single-read", Verdict.ERROR),
    ]
    assert "5" in (report.results[0].error or "")  # the exit status is in the message
    assert "JSON" in (report.results[1].error or "") or "json" in (report.results[1].error or "")


def test_several_specs_give_one_report_each_in_the_same_case_order(accs: str) -> None:
    selection = Selection(cassettes=(PARALLEL,), scenarios=("original", "parallel-calls-share-index-0"))
    ours, theirs = run_matrix(["reference", f"{accs}:IndexOnly"], selection)
    assert [r.id for r in ours.results] == [r.id for r in theirs.results]
    assert (ours.accumulator, theirs.accumulator) == ("reference", f"{accs}:IndexOnly")
    assert ours.ok and not theirs.ok


def test_selection_by_case_id_dialect_and_seeds() -> None:
    case_id = "openai-chat/parallel-2::parallel-calls-share-index-0::s1"
    report = run_matrix("reference", Selection(cassettes=(PARALLEL,), cases=(case_id,)))
    assert [r.id for r in report.results] == [case_id]
    original = run_matrix(
        "reference", Selection(cassettes=(PARALLEL,), cases=("openai-chat/parallel-2::original::s0",))
    )
    assert [r.verdict for r in original.results] == [Verdict.PASS]
    other = run_matrix(
        "reference", Selection(cassettes=(PARALLEL,), scenarios=("original",), dialects=("anthropic",))
    )
    assert other.results == []
    seeded = run_matrix(
        "reference", Selection(cassettes=(PARALLEL,), scenarios=("parallel-calls-share-index-0",), seeds=3)
    )
    assert [r.seed for r in seeded.results] == [0, 1, 2]


def test_a_case_reached_twice_is_run_and_reported_once() -> None:
    folder = str(Path(PARALLEL).parent)
    twice = Selection(cassettes=(folder, PARALLEL), scenarios=("original", "original"))
    once = Selection(cassettes=(folder,), scenarios=("original",))
    ids = [r.id for r in run_matrix("reference", twice).results]
    assert ids == [r.id for r in run_matrix("reference", once).results]
    assert len(ids) == len(set(ids))


def test_one_case_id_from_two_roots_is_the_first_units(tmp_path: Path) -> None:
    # Two folders each with an `openai-chat/single-call`: one id, kept by the first unit that made
    # it (here a one-call and a two-call stream), for every accumulator of the run alike.
    import shutil

    for root, source in (("x", SINGLE), ("y", PARALLEL)):
        (tmp_path / root / "openai-chat").mkdir(parents=True)
        shutil.copy(source, tmp_path / root / "openai-chat" / "single-call.yaml")
    for first, calls in (("x", 1), ("y", 2)):
        roots = tuple(str(tmp_path / root / "openai-chat") for root in (first, "y" if first == "x" else "x"))
        reports = run_matrix(["reference", "reference"], Selection(cassettes=roots, scenarios=("original",)))
        for report in reports:
            assert [(r.id, len(r.expected.tool_calls)) for r in report.results] == [
                ("openai-chat/single-call::original::s0", calls)
            ]


def test_usage_errors() -> None:
    from harness.errors import HarnessError

    with pytest.raises(HarnessError, match="unknown scenario"):
        run_matrix("reference", Selection(cassettes=(SINGLE,), scenarios=("no-such-scenario",)))
    with pytest.raises(HarnessError, match="unknown dialect"):
        run_matrix("reference", Selection(cassettes=(SINGLE,), dialects=("klingon",)))
    with pytest.raises(HarnessError, match="unknown accumulator"):
        run_matrix("no-such-accumulator", Selection(cassettes=(SINGLE,), scenarios=("original",)))
    with pytest.raises(HarnessError, match="unknown accumulator"):
        run_matrix("no-such-accumulator", Selection(cassettes=(SINGLE,), scenarios=("original",)), jobs=2)
    with pytest.raises(HarnessError, match="no accumulator"):
        run_matrix([], Selection(cassettes=(SINGLE,)))


def test_an_in_process_run_leaves_the_collector_as_it_found_it() -> None:
    import gc

    selection = Selection(cassettes=(PARALLEL,), scenarios=("original",))
    assert gc.get_freeze_count() == 0
    assert run_matrix("reference", selection).ok
    assert gc.get_freeze_count() == 0  # what it froze for the run is back with the collector
    gc.freeze()  # a caller's own freeze (a forking server's) is left alone
    try:
        frozen = gc.get_freeze_count()
        assert run_matrix("reference", selection).ok
        # None added, none thawed (that would empty it); a frozen object the run frees (a cache
        # entry it replaces) leaves the count: one CI run saw 2 of 2,161,158 go.
        assert frozen - 1000 < gc.get_freeze_count() <= frozen
    finally:
        gc.unfreeze()
