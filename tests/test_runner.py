"""The matrix runner: verdicts, containment (raise, hang, dead process, garbage), -j N, compare."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from harness.cassettes import format as cassette
from harness.check.outcome import diff
from harness.check.runner import (
    ORIGINAL,
    Selection,
    Verdict,
    build_selected_case,
    case_with_events,
    compare_matrix,
    judge,
    resolve_accumulator,
    run_matrices,
    run_matrix,
    shrink_difference,
    write_reproductions,
)

ROOT = Path(__file__).resolve().parent.parent
SINGLE = str(ROOT / "cassettes/openai-chat/single-call.yaml")
PARALLEL = str(ROOT / "cassettes/openai-chat/parallel-2.yaml")

# Accumulators the tests plug in by `module:attr`, written to a temp folder on sys.path so the
# worker processes can import them too.
ACCUMULATORS = textwrap.dedent(
    '''
    import os
    import time

    from harness.wire import dialects
    from harness.errors import NotApplicable
    from harness.check.outcome import Outcome, State, ToolCall


    def reference(case):
        acc = dialects.get(case.dialect).accumulator()
        for event in case.events:
            acc.feed(event)
        return acc.close(None if case.response.complete else (case.response.error or "stream cut"))


    class Mixed:
        """A different misbehaviour per case: the run must go on after each."""

        name = "mixed"

        def run(self, case):
            key = (case.cassette, case.scenario)
            if key == ("openai-chat/single-call", "F3-single-read"):
                time.sleep(3600)
            if key == ("openai-chat/single-call", "F4-crlf-line-ends"):
                raise NotApplicable("not for CRLF streams")
            if key == ("openai-chat/parallel-2", "original"):
                raise ValueError("boom")
            if key == ("openai-chat/parallel-2", "F3-single-read"):
                os._exit(3)
            if key == ("openai-chat/parallel-2", "F4-crlf-line-ends"):
                return Outcome()
            return reference(case)

        def shutdown(self):
            pass


    mixed = Mixed()


    class Tame(Mixed):
        """Mixed without the hang and the exit, for an in-process run."""

        def run(self, case):
            if case.scenario == "F3-single-read":
                return reference(case)
            return super().run(case)


    tame = Tame()


    class IndexOnly:
        """OpenAI chat tool calls merged by index alone: parallel calls at one index collapse."""

        def __init__(self, dialect):
            self.calls = {}
            self.text = ""
            self.finish = None

        def feed(self, event):
            payload = event.payload
            if not isinstance(payload, dict):
                return
            for choice in payload.get("choices") or []:
                delta = choice.get("delta") or {}
                self.text += delta.get("content") or ""
                for fragment in delta.get("tool_calls") or []:
                    blank = {"id": None, "name": "", "args": ""}
                    call = self.calls.setdefault(fragment.get("index") or 0, blank)
                    function = fragment.get("function") or {}
                    call["id"] = call["id"] or fragment.get("id")
                    call["name"] += function.get("name") or ""
                    call["args"] += function.get("arguments") or ""
                self.finish = choice.get("finish_reason") or self.finish

        def close(self, error):
            calls = tuple(ToolCall.from_text(c["name"], c["args"], c["id"]) for c in self.calls.values())
            state = State.COMPLETE if error is None else State.CUT
            return Outcome(
                tool_calls=calls, text=self.text, finish_reason=self.finish, state=state, error=error
            )
    '''
)

STDIO = textwrap.dedent(
    """
    import json
    import sys

    case = None
    for line in sys.stdin:
        message = json.loads(line)
        if message["op"] == "start":
            case = message["case"]
            if case.startswith("openai-chat/parallel-2::original"):
                sys.exit(5)  # dies mid-case
        elif message["op"] == "end":
            if "F3-single-read" in case:
                print("this is not JSON", flush=True)
            else:
                print(json.dumps({"skip": "stdio test skips it"}), flush=True)
    """
)


@pytest.fixture
def accs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    (tmp_path / "runner_accs.py").write_text(ACCUMULATORS, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("runner_accs", None)
    return "runner_accs"


def _selection(*scenarios: str) -> Selection:
    return Selection(cassettes=(PARALLEL, SINGLE), scenarios=scenarios)


def _key(report_results: list) -> list[tuple[str, str, tuple[str, ...], str | None]]:
    return [(r.id, str(r.verdict), r.diff, r.error) for r in report_results]


def test_reference_passes_and_original_is_added_when_no_scenario_is_named() -> None:
    report = run_matrix("reference", cassettes=[SINGLE], scenarios=["original", "F3-single-read"])
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
    from harness.check.runner import _selected_scenarios

    assert _selected_scenarios(Selection())[0] is ORIGINAL


def test_every_verdict_in_process_and_the_run_goes_on(accs: str) -> None:
    report = run_matrix(
        f"{accs}:tame", cassettes=[PARALLEL, SINGLE], scenarios=["original", "F4-crlf-line-ends"]
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


def test_containment_in_workers_hang_and_dead_process(accs: str) -> None:
    report = run_matrix(
        f"{accs}:mixed",
        cassettes=[PARALLEL, SINGLE],
        scenarios=["original", "F3-single-read", "F4-crlf-line-ends"],
        seeds=1,
        timeout=1,
    )
    verdicts = [(r.cassette, r.scenario, r.verdict) for r in report.results]
    assert verdicts == [
        ("openai-chat/parallel-2", "original", Verdict.ERROR),
        ("openai-chat/parallel-2", "F3-single-read", Verdict.ERROR),
        ("openai-chat/parallel-2", "F4-crlf-line-ends", Verdict.FAIL),
        ("openai-chat/single-call", "original", Verdict.PASS),
        ("openai-chat/single-call", "F3-single-read", Verdict.TIMEOUT),
        ("openai-chat/single-call", "F4-crlf-line-ends", Verdict.SKIPPED),
    ]
    died = report.results[1]
    assert "died" in (died.error or "") and "exit code 3" in (died.error or "")
    assert "within 1 s" in (report.results[4].error or "")


def test_stdio_command_that_dies_or_prints_garbage(tmp_path: Path) -> None:
    script = tmp_path / "acc.py"
    script.write_text(STDIO, encoding="utf-8")
    report = run_matrix(
        f"cmd:{sys.executable} {script}",
        cassettes=[PARALLEL, SINGLE],
        scenarios=["original", "F3-single-read"],
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


def test_parallel_jobs_give_the_serial_report(accs: str) -> None:
    selection = _selection("original", "parallel-calls-share-index-0", "F4-crlf-line-ends")
    serial = run_matrices([f"{accs}:IndexOnly"], selection)[0]
    parallel = run_matrices([f"{accs}:IndexOnly"], selection, jobs=2, timeout=30)[0]
    assert _key(serial.results) == _key(parallel.results)
    assert serial.count(Verdict.FAIL) >= 2 and serial.count(Verdict.PASS) >= 2


def test_selection_by_case_id_dialect_and_seeds() -> None:
    case_id = "openai-chat/parallel-2::parallel-calls-share-index-0::s1"
    report = run_matrices(["reference"], Selection(cassettes=(PARALLEL,), cases=(case_id,)))[0]
    assert [r.id for r in report.results] == [case_id]
    original = run_matrices(
        ["reference"], Selection(cassettes=(PARALLEL,), cases=("openai-chat/parallel-2::original::s0",))
    )[0]
    assert [r.verdict for r in original.results] == [Verdict.PASS]
    other = run_matrix("reference", cassettes=[PARALLEL], scenarios=["original"], dialects=["anthropic"])
    assert other.results == []
    seeded = run_matrix(
        "reference", cassettes=[PARALLEL], scenarios=["parallel-calls-share-index-0"], seeds=3
    )
    assert [r.seed for r in seeded.results] == [0, 1, 2]


def test_usage_errors() -> None:
    from harness.errors import HarnessError

    with pytest.raises(HarnessError, match="unknown scenario"):
        run_matrix("reference", cassettes=[SINGLE], scenarios=["no-such-scenario"])
    with pytest.raises(HarnessError, match="unknown dialect"):
        run_matrix("reference", cassettes=[SINGLE], dialects=["klingon"])
    with pytest.raises(HarnessError, match="unknown accumulator"):
        run_matrix("no-such-accumulator", cassettes=[SINGLE], scenarios=["original"])
    with pytest.raises(HarnessError, match="unknown accumulator"):
        run_matrix("no-such-accumulator", cassettes=[SINGLE], scenarios=["original"], jobs=2)


def test_judge_maps_a_non_outcome_to_error() -> None:
    class Odd:
        name = "odd"

        def run(self, case: object) -> object:
            return {"tool_calls": []}

        def shutdown(self) -> None:
            pass

    case = build_selected_case("openai-chat/single-call::original::s0", Selection(cassettes=(SINGLE,)))
    result = judge(Odd(), "odd", case)  # type: ignore[arg-type]
    assert result.verdict is Verdict.ERROR and "not an Outcome" in (result.error or "")


def test_compare_finds_differences_and_writes_shrunk_reproductions(accs: str, tmp_path: Path) -> None:
    selection = Selection(cassettes=(PARALLEL,), scenarios=("original", "parallel-calls-share-index-0"))
    comparison = compare_matrix("reference", f"{accs}:IndexOnly", selection)
    ids = [d.id for d in comparison.differences]
    assert ids and all("parallel-calls-share-index-0" in i for i in ids)
    assert any("name" in line for line in comparison.differences[0].lines)
    assert comparison.differences[0].a.verdict is Verdict.PASS
    written = write_reproductions(comparison, selection, tmp_path / "out")
    assert set(written) == set(ids)
    a, b = resolve_accumulator("reference"), resolve_accumulator(f"{accs}:IndexOnly")
    for case_id, path in written.items():
        loaded = cassette.load(path)
        assert loaded.dialect == "openai-chat" and len(loaded.interactions) == 1
        assert case_id in loaded.source.provenance
        original = build_selected_case(case_id, selection)
        shrunk = run_matrix("reference", cassettes=[path], scenarios=["original"]).results[0]
        assert shrunk.verdict is Verdict.PASS  # the stored expectation is the reference's
        interaction = loaded.interactions[0]
        assert len(interaction.response.chunks) < len(original.response.chunks)
        rebuilt = build_selected_case(shrunk.id, Selection(cassettes=(str(path),)))
        assert diff(a.run(rebuilt), b.run(rebuilt))  # it still shows the difference
    agree = compare_matrix("reference", "reference", selection)
    assert agree.agree


def test_shrink_keeps_a_difference_and_drops_events(accs: str) -> None:
    case = build_selected_case(
        "openai-chat/parallel-2::parallel-calls-share-index-0::s0", Selection(cassettes=(PARALLEL,))
    )
    a, b = resolve_accumulator("reference"), resolve_accumulator(f"{accs}:IndexOnly")
    shrunk, smaller = shrink_difference(case, a, b)
    assert smaller and len(shrunk.events) < len(case.events)
    assert diff(a.run(shrunk), b.run(shrunk))
    same = case_with_events(case, list(case.events))
    assert len(same.events) == len(case.events)
