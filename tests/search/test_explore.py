"""Explore: any spec `check` takes, found failures shrunk without changing the bug."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.accumulators import resolve
from harness.cassettes.corpus import bundled
from harness.cassettes.format import load
from harness.cassettes.outcome import Outcome, State, ToolCall, diff
from harness.cli import main
from harness.errors import UsageError
from harness.matrix.judging import judge
from harness.matrix.selection import Matrix, Selection, cases
from harness.mutate.scenario import load_scenario
from harness.oracle.verdict import signature
from harness.search.explore import explore
from harness.search.shrink import ExitReason
from harness.wire.dialects import Event, reference_outcome
from harness.wire.dialects import get as get_dialect

OPENAI_CHAT = bundled("cassettes") / "openai-chat"


class IndexOnlyMerge:
    """A planted bug: tool-call entries merged by `index` alone, every string concatenated."""

    def __init__(self, dialect: str) -> None:
        self.calls: dict[Any, dict[str, Any]] = {}
        self.finish: str | None = None
        self.text = ""
        self.done = False

    def feed(self, event: Event) -> None:
        payload = event.payload
        if payload == "[DONE]":
            self.done = True
            return
        if not isinstance(payload, dict) or not payload.get("choices"):
            return
        choice = payload["choices"][0]
        delta = choice.get("delta") or {}
        self.text += delta.get("content") or ""
        for entry in delta.get("tool_calls") or []:
            call = self.calls.setdefault(entry.get("index"), {"name": "", "args": "", "id": None})
            function = entry.get("function") or {}
            call["name"] += function.get("name") or ""
            call["args"] += function.get("arguments") or ""
            call["id"] = call["id"] or entry.get("id")
        self.finish = choice.get("finish_reason") or self.finish

    def close(self, error: str | None = None) -> Outcome:
        ok = error is None and (self.finish is not None or self.done)
        calls = tuple(ToolCall.from_text(c["name"] or None, c["args"], c["id"]) for c in self.calls.values())
        return Outcome(calls if ok else (), self.text, self.finish, State.COMPLETE if ok else State.CUT)


class StrictDone:
    """The reference, but a turn without `[DONE]` is cut and its calls dropped: a defensible
    policy (docs/oracle.md finish-without-terminal), which `check` only warns about."""

    def __init__(self, dialect: str) -> None:
        self.inner = get_dialect("openai-chat").accumulator()
        self.done = False

    def feed(self, event: Event) -> None:
        self.done = self.done or event.payload == "[DONE]"
        self.inner.feed(event)

    def close(self, error: str | None = None) -> Outcome:
        out = self.inner.close(error)
        if not self.done and out.state is State.COMPLETE:
            return Outcome((), out.text, out.finish_reason, State.CUT)
        return out


def test_a_policy_difference_is_no_finding() -> None:
    # explore judged every case as spec (its scenario, "explore", was looked up by name and not
    # found): it reported drop-sentinel as a failure where `check` warns. Now it reads the class
    # from the pipeline's steps, as check does.
    assert explore(StrictDone, [OPENAI_CHAT], max_examples=200) is None
    strict = resolve(StrictDone)
    selection = Selection(cassettes=(str(OPENAI_CHAT),), scenarios=("D6-missing-done",))
    assert {str(judge(strict, "strict", case).verdict) for case in cases(selection)} == {"warn"}


def test_planted_bug_is_found_and_shrunk(tmp_path: Path) -> None:
    started = time.monotonic()
    finding = explore(IndexOnlyMerge, [OPENAI_CHAT], max_examples=200, out=tmp_path)
    assert finding is not None
    assert time.monotonic() - started < 60
    assert finding.events <= 6 and finding.events <= finding.events_before
    assert any("name" in line or "tool_calls" in line for line in finding.problems)
    cassette_path, scenario_path = finding.written
    # The cassette is a replayable synthesized cassette whose expectation the reference meets
    # and the planted accumulator still misses.
    cassette = load(cassette_path)
    assert (
        cassette.source.kind == "synthesized" and "shrunk by toolstream explore" in cassette.source.provenance
    )
    interaction = cassette.interactions[0]
    assert interaction.expected is not None
    assert diff(interaction.expected, reference_outcome(interaction.response, "openai-chat")) == []
    # The scenario file reproduces the failure on the original cassette.
    scenario = load_scenario(scenario_path)
    assert yaml.safe_load(scenario_path.read_text())["dialects"] == ["openai-chat"]
    case = next(Matrix(Selection(cassettes=(str(finding.source),)), [scenario]).all())
    acc = IndexOnlyMerge("openai-chat")
    for event in case.events:
        acc.feed(event)
    assert diff(case.expected, acc.close(None if case.response.complete else case.response.error))
    assert finding.reason is ExitReason.FINISHED
    assert _replayed(IndexOnlyMerge, cassette_path) == finding.signature


def _replayed(spec: Any, cassette_path: Path) -> str:
    """The signature of the failure a written cassette gives when checked as any cassette."""
    (case,) = cases(Selection(cassettes=(str(cassette_path),), scenarios=("original",)))
    result = judge(resolve(spec), "under test", case)
    assert result.failed
    return signature(result)


class DialectIndexOnly(IndexOnlyMerge):
    """The constructor docs/accumulators.md recommends: it is given the dialect name."""

    def __init__(self, dialect: str) -> None:
        super().__init__(dialect)
        assert dialect == "openai-chat"


class Unbuildable(IndexOnlyMerge):
    def __init__(self, dialect: str, config: dict[str, Any]) -> None:
        super().__init__(dialect)


def test_the_readme_example_repro_keeps_its_bug(tmp_path: Path) -> None:
    """Issue 10: its repro said `0 expected, got 1` (the finish shrunk away) for a merged call."""
    finding = explore("examples.accumulators:IndexOnly", [OPENAI_CHAT], max_examples=200, out=tmp_path)
    assert finding is not None and "name concatenated" in finding.signature
    assert finding.stream.expected.state is State.COMPLETE
    cassette_path, _ = finding.written
    assert _replayed("examples.accumulators:IndexOnly", cassette_path) == finding.signature
    assert finding.signature in load(cassette_path).source.provenance


def test_a_class_taking_the_dialect_is_explored_not_reported() -> None:
    finding = explore(DialectIndexOnly, [OPENAI_CHAT], max_examples=200)
    assert finding is not None and "TypeError" not in finding.signature
    assert "name concatenated" in finding.signature


def test_reference_and_a_cmd_spec_have_no_finding() -> None:
    cassettes = [OPENAI_CHAT / "parallel-2.yaml"]
    assert explore("reference", cassettes, max_examples=20) is None
    served = f"cmd:{sys.executable} -m harness.cli serve-accumulator reference"
    assert explore(served, cassettes, max_examples=10) is None


def test_a_spec_that_cannot_load_or_run_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(UsageError, match="unknown accumulator"):
        explore("no-such-accumulator", [OPENAI_CHAT], max_examples=5)
    with pytest.raises(UsageError, match=r"cannot (run|be called)"):
        explore(Unbuildable, [OPENAI_CHAT], max_examples=5)
    assert main(["explore", "--accumulator", "no.such.module:Acc", "--cassettes", str(OPENAI_CHAT)]) == 2
    assert main(["explore", "--accumulator", "cmd:/no/such/program", "--cassettes", str(OPENAI_CHAT)]) == 2
    assert "cannot" in capsys.readouterr().err


def test_a_correct_accumulator_has_no_finding() -> None:
    from harness import reference_accumulator

    finding = explore(reference_accumulator, [OPENAI_CHAT], max_examples=40)
    assert finding is None
