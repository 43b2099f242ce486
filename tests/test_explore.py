from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import yaml

from harness.cassettes.corpus import bundled
from harness.cassettes.format import load
from harness.check.explore import explore
from harness.check.outcome import Outcome, State, ToolCall, diff
from harness.mutate.scenario import iter_cases, load_scenario
from harness.wire.dialects import Event, reference_outcome


class IndexOnlyMerge:
    """A planted bug: tool-call entries merged by `index` alone, every string concatenated."""

    def __init__(self) -> None:
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


def test_planted_bug_is_found_and_shrunk(tmp_path: Path) -> None:
    started = time.monotonic()
    finding = explore(IndexOnlyMerge, [bundled("cassettes") / "openai-chat"], max_examples=200, out=tmp_path)
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
    case = next(iter(iter_cases([finding.source], [scenario])))
    acc = IndexOnlyMerge()
    for event in case.events:
        acc.feed(event)
    assert diff(case.expected, acc.close(None if case.response.complete else case.response.error))


def test_a_correct_accumulator_has_no_finding() -> None:
    from harness.wire.dialects import get

    finding = explore(get("openai-chat").accumulator, [bundled("cassettes") / "openai-chat"], max_examples=40)
    assert finding is None
