"""Compare: where two accumulators differ, and reproductions shrunk without changing the difference."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.accumulators import resolve
from harness.cassettes import format as cassette
from harness.cassettes.outcome import diff
from harness.matrix.judging import judge
from harness.matrix.runner import run_matrix
from harness.matrix.selection import Selection, build_case
from harness.mutate.scenario import case_with_events
from harness.oracle.expectation import stream_rules
from harness.oracle.verdict import Verdict, character, diff_signature
from harness.search.compare import (
    Comparison,
    Difference,
    compare_matrix,
    meets_expectation,
    shrink_difference,
    write_reproductions,
)
from harness.search.shrink import ExitReason
from tests._runner_accumulators import PARALLEL, ROOT, install


@pytest.fixture
def accs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    return install(tmp_path, monkeypatch)


def _way(difference: Difference) -> tuple[str, str]:
    assert difference.a.actual is not None and difference.b.actual is not None
    return diff_signature(diff(difference.a.actual, difference.b.actual)), meets_expectation(
        difference.a, difference.b
    )


def _replayed(comparison: Comparison, path: Path) -> Difference:
    """The difference A and B show on a written reproduction, run as any cassette."""
    selection = Selection(cassettes=(str(path),), scenarios=("original",))
    again = compare_matrix(comparison.a.accumulator, comparison.b.accumulator, selection)
    assert len(again.differences) == 1, f"{path}: A and B no longer differ"
    return again.differences[0]


def test_compare_finds_differences_and_writes_shrunk_reproductions(accs: str, tmp_path: Path) -> None:
    selection = Selection(cassettes=(PARALLEL,), scenarios=("original", "parallel-calls-share-index-0"))
    comparison = compare_matrix("reference", f"{accs}:IndexOnly", selection)
    ids = [d.id for d in comparison.differences]
    assert ids and all("parallel-calls-share-index-0" in i for i in ids)
    assert any("name" in line for line in comparison.differences[0].lines)
    assert comparison.differences[0].a.verdict is Verdict.PASS
    written = write_reproductions(comparison, selection, tmp_path / "out")
    assert set(written) == set(ids)
    a, b = resolve("reference"), resolve(f"{accs}:IndexOnly")
    for difference in comparison.differences:
        path = written[difference.id]
        loaded = cassette.load(path)
        assert loaded.dialect == "openai-chat" and len(loaded.interactions) == 1
        assert difference.id in loaded.source.provenance
        original = build_case(difference.id, selection)
        shrunk = run_matrix("reference", Selection(cassettes=(str(path),), scenarios=("original",))).results[
            0
        ]
        assert shrunk.verdict is Verdict.PASS  # the stored expectation is the reference's
        assert len(loaded.interactions[0].response.chunks) < len(original.response.chunks)
        rebuilt = build_case(shrunk.id, Selection(cassettes=(str(path),)))
        assert diff(a.run(rebuilt), b.run(rebuilt))  # it still shows the difference
        replayed = _replayed(comparison, path)
        assert _way(replayed) == _way(difference)  # the same way
        # judged as the case was: its cassette declares the class (A1: quirk), not "spec"
        assert replayed.a.case_class == difference.a.case_class == "quirk"
        assert replayed.a.class_reason == difference.a.class_reason
    agree = compare_matrix("reference", "reference", selection)
    assert agree.agree


def test_a3_reproductions_keep_the_difference_the_report_gave(tmp_path: Path) -> None:
    """Issue 10: shrinking turned these into a `state` difference both sides fail."""
    folder = ROOT / "cassettes/openai-chat"
    selection = Selection(
        cassettes=(str(folder / "parallel-2.yaml"), str(folder / "azure-prompt-filter.yaml")),
        scenarios=("A3-index-null-on-continuations",),
        seeds=1,
    )
    comparison = compare_matrix("reference", "examples.accumulators:IndexOnly", selection)
    assert len(comparison.differences) == 2
    written = write_reproductions(comparison, selection, tmp_path / "out")
    for difference in comparison.differences:
        assert _way(difference)[1] == "A"
        assert "shrunk" in cassette.load(written[difference.id]).source.provenance
        assert _way(_replayed(comparison, written[difference.id])) == _way(difference)


def test_shrink_keeps_a_difference_drops_events_and_says_why_it_stopped(accs: str) -> None:
    selection = Selection(cassettes=(PARALLEL,), scenarios=("parallel-calls-share-index-0",), seeds=1)
    comparison = compare_matrix("reference", f"{accs}:IndexOnly", selection)
    difference = comparison.differences[0]
    case = build_case(difference.id, selection)
    a, b = resolve("reference"), resolve(f"{accs}:IndexOnly")
    shrunk, reason = shrink_difference(case, a, b, difference)
    assert reason is ExitReason.FINISHED and len(shrunk.events) < len(case.events)
    assert diff(a.run(shrunk), b.run(shrunk))
    same = case_with_events(case, list(case.events))
    assert len(same.events) == len(case.events)
    _, tight = shrink_difference(case, a, b, difference, budget=2)
    assert tight is ExitReason.BUDGET


def test_a_reproduction_keeps_what_its_stream_says_of_its_class() -> None:
    # Shrinking kept the difference and the state but not the stream: Anthropic reproductions lost
    # a block's start (deltas outside any block: a stream no provider sends, `quirk`) or its stop
    # (a call open at the end: `policy`, a warning). Of the differences of the reference and
    # IndexOnly on the openai-chat and Anthropic cassettes (up to 40 a file), 585 changed so.
    path = ROOT / "cassettes/anthropic/web-search.yaml"
    selection = Selection(cassettes=(str(path),), scenarios=("cut-at-every-event",), seeds=1)
    comparison = compare_matrix("reference", "examples.accumulators:IndexOnly", selection)
    a, b = resolve("reference"), resolve("examples.accumulators:IndexOnly")
    chosen = [d for d in comparison.differences if d.id.endswith(("::e19", "::e20", "::e21"))]
    assert len(chosen) == 3
    for difference in chosen:
        case = build_case(difference.id, selection)
        shrunk, reason = shrink_difference(case, a, b, difference)
        assert reason is ExitReason.FINISHED and len(shrunk.events) < len(case.events)
        # e21 is cut after the finish (cut-after-finish, an ending rule of ours): the shrunk keeps it.
        assert stream_rules(shrunk) == stream_rules(case), difference.id
        assert stream_rules(case)[1] is False, difference.id


def test_a_reproduction_from_a_scenario_file_declares_the_class_the_run_gave(
    accs: str, tmp_path: Path
) -> None:
    # A scenario given as a file is not in the library by name: the reproduction's class was looked
    # up by that name, not found, and the cassette declared none (spec) for a policy case.
    scenario = tmp_path / "mine.yaml"
    scenario.write_text(
        "name: mine-shared-index-no-done\ndescription: A1, then no [DONE]\ndialects: all\n"
        "steps:\n- args-in-header: {}\n- set-field: {field: index, value: 0}\n- drop-sentinel: {}\n"
    )
    selection = Selection(cassettes=(PARALLEL,), scenarios=(str(scenario),), seeds=1)
    comparison = compare_matrix("reference", f"{accs}:IndexOnly", selection)
    assert comparison.differences and comparison.differences[0].a.case_class == "policy"
    written = write_reproductions(comparison, selection, tmp_path / "out")
    for path in written.values():
        declared = cassette.load(path).interactions[0].declared
        assert declared is not None and declared.case_class == "policy"


FIRST_ENTRY_ONLY = '''
from harness import Outcome, State, ToolCall


class FirstEntryOnly:
    """Keyed by index, but reads only the first tool-call entry of each delta: a second fragment
    in the same delta is dropped (B1)."""

    def __init__(self, dialect):
        self.calls, self.text, self.finish = {}, [], None

    def feed(self, event):
        if not isinstance(event.payload, dict):
            return
        for choice in event.payload.get("choices") or []:
            delta = choice.get("delta") or {}
            self.text.append(delta.get("content") or "")
            for entry in (delta.get("tool_calls") or [])[:1]:
                call = self.calls.setdefault(entry.get("index"), {"id": "", "name": "", "args": ""})
                function = entry.get("function") or {}
                call["id"] = call["id"] or entry.get("id") or ""
                call["name"] += function.get("name") or ""
                call["args"] += function.get("arguments") or ""
            self.finish = choice.get("finish_reason") or self.finish

    def close(self, error):
        calls = tuple(ToolCall.from_text(c["name"], c["args"], c["id"] or None) for c in self.calls.values())
        state = State.COMPLETE if self.finish else State.CUT
        return Outcome(calls, "".join(self.text), self.finish, state, error)
'''


def test_a_shrunk_reproduction_keeps_the_failure_s_character(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Issue 43: shrinking a "second fragment in a delta dropped" difference cut the stream inside
    # an expected call, so the reproduction's expected call was the invalid `{` and the failure
    # became "invalid arguments" (4 of these 4 cases before). Its signature, severities and the
    # validity of the expected calls now stay.
    (tmp_path / "first_entry.py").write_text(FIRST_ENTRY_ONLY, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = "first_entry:FirstEntryOnly"
    scenarios = ("B1-same-index-fragments-within-one-delta", "same-index-fragments-in-one-delta")
    case_ids = [f"openai-chat/litellm-bridge-parallel-index0::{s}::s{n}" for s in scenarios for n in (0, 1)]
    comparison = compare_matrix("reference", spec, Selection(cases=tuple(case_ids)))
    assert len(comparison.differences) == len(case_ids)
    a, b = resolve("reference"), resolve(spec)
    for difference in comparison.differences:
        case = build_case(difference.id)
        shrunk, reason = shrink_difference(case, a, b, difference)
        assert reason is ExitReason.FINISHED and len(shrunk.events) < len(case.events)
        again = judge(b, spec, shrunk)
        assert character(again) == character(difference.b), difference.id
        assert not any(call.invalid for call in shrunk.expected.tool_calls)
