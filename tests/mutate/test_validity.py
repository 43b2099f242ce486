"""Every mutated stream is one a provider could send, or names the quirk it imitates.

Each shipped scenario runs on every bundled cassette (all its seeds; a sweep is sampled) and the
dialect's invariants check every case: a violation neither the recording had nor a step declares
(`Mutation.breaks`) fails. A block insertion that stops renumbering must be caught.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.cassettes.corpus import bundled, cassette_paths
from harness.mutate import Mutation, build
from harness.mutate.scenario import (
    Case,
    RecordedStream,
    Scenario,
    cases_for,
    find_scenario,
    load_scenarios,
    recorded_streams,
)
from harness.wire import dialects
from harness.wire.dialects import Violation

SWEEP_SAMPLE = 8  # points of a sweep checked per recording and seed
# Bundled cassettes that are themselves a quirk (synthesized to imitate one), with what they break.
QUIRK_CASSETTES = {
    "anthropic/seed004-interleaved-input-json": {"anthropic.block-overlap"},  # C1, docker-agent PR #3009
    "openai-responses/llamacpp-interleaved-parallel": {"openai-responses.item-overlap"},  # E7, llama.cpp
}


def _recordings() -> Iterator[RecordedStream]:
    roots = [bundled("cassettes")]
    for path in cassette_paths(roots):
        yield from recorded_streams(path, roots)


RECORDINGS = list(_recordings())
SCENARIOS = load_scenarios()


def own_violations(recording: RecordedStream) -> list[Violation]:
    events = dialects.events_of(recording.interaction.response, recording.dialect)
    return recording.dialect.invariants(events)


def own_request_violations(recording: RecordedStream) -> list[Violation]:
    events = dialects.events_of(recording.interaction.response, recording.dialect)
    return recording.dialect.request_rules(recording.interaction.request, events)


def violations(case: Case) -> list[Violation]:
    """What a case breaks of its protocol, and of its request (a choice beyond `n`, a tool not
    offered, usage not asked for): a stream is valid only as the answer to the request it carries."""
    d = dialects.get(case.dialect)
    return [*d.invariants(case.events), *d.request_rules(case.request, case.events)]


def undeclared(scenario: Scenario, recording: RecordedStream, seed: int) -> list[str]:
    """`case id: violation` for each violation of a case of this recording that neither the
    recording itself has nor a step of the scenario declares."""
    own = {v.code for v in [*own_violations(recording), *own_request_violations(recording)]}
    cases = cases_for(recording, scenario, seed)
    if len(cases) > SWEEP_SAMPLE:
        cases = random.Random(f"{recording.id}/{seed}").sample(cases, SWEEP_SAMPLE)
    return [
        f"{case.id}: {violation}"
        for case in cases
        for violation in violations(case)
        if violation.code not in own and not any(step.declares(violation.code) for step in scenario.steps)
    ]


def test_bundled_cassettes_break_no_invariant() -> None:
    found = {r.id: {v.code for v in own_violations(r)} for r in RECORDINGS}
    assert {name: codes for name, codes in found.items() if codes} == QUIRK_CASSETTES


def test_bundled_cassettes_answer_their_requests() -> None:
    assert {r.id: own_request_violations(r) for r in RECORDINGS if own_request_violations(r)} == {}


def test_every_code_a_dialect_reports_is_one_it_documents() -> None:
    for name in dialects.names():
        d = dialects.get(name)
        assert d.invariant_codes, f"{name} states no invariants"
        assert all(code.startswith(f"{name}.") for code in [*d.invariant_codes, *d.request_codes])
    for recording in RECORDINGS:
        assert {v.code for v in own_violations(recording)} <= set(recording.dialect.invariant_codes)
        assert {v.code for v in own_request_violations(recording)} <= set(recording.dialect.request_codes)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_every_scenario_keeps_streams_valid(scenario: Scenario) -> None:
    found = [
        line
        for recording in RECORDINGS
        for seed in scenario.seeds
        for line in undeclared(scenario, recording, seed)
    ]
    assert not found, f"{len(found)} undeclared violation(s):\n" + "\n".join(found[:20])


def test_a_quirk_mutation_names_its_source_and_what_it_breaks() -> None:
    from harness import mutate

    for name in mutate.names():
        cls: type[Mutation] = mutate.get(name)
        assert bool(cls.breaks) <= bool(cls.imitates), f"{name} breaks invariants without naming the quirk"
        for quirk in cls.imitates:
            assert quirk.id and quirk.source, name


def _recording(name: str) -> RecordedStream:
    return next(r for r in RECORDINGS if r.id == name)


@pytest.mark.parametrize(
    ("scenario", "cassette", "code"),
    [
        ("C6-text-mixed-with-tool-calls", "anthropic/single-call", "anthropic.block-index-reused"),
        ("F1-split-utf8-multibyte", "anthropic/overloaded-mid-call", "anthropic.block-index-reused"),
        (
            "C5-text-blocks-without-start",
            "bedrock-converse/single-call",
            "bedrock-converse.block-index-reused",
        ),
        (
            "C6-text-mixed-with-tool-calls",
            "openai-responses/single-call",
            "openai-responses.output-index-reused",
        ),
        (
            "D9-finish-without-tool-deltas",
            "anthropic/interleaved-thinking",
            "anthropic.block-index-out-of-order",
        ),
    ],
)
def test_the_check_catches_blocks_that_are_not_renumbered(
    monkeypatch: pytest.MonkeyPatch, scenario: str, cassette: str, code: str
) -> None:
    chosen, recording = find_scenario(scenario, SCENARIOS), _recording(cassette)
    assert undeclared(chosen, recording, 0) == []
    assert cases_for(recording, chosen, 0), "the scenario must apply for this check to mean anything"
    monkeypatch.setattr(type(recording.dialect), "renumber", lambda self, events: list(events))
    assert any(code in line for line in undeclared(chosen, recording, 0))


def test_a_declared_quirk_is_allowed_and_only_that() -> None:
    recording = _recording("anthropic/parallel-calls")
    interleave = build("interleave")
    assert interleave.declares("anthropic.block-overlap")
    assert not interleave.declares("anthropic.block-index-reused")
    chosen = find_scenario("interleaved-tool-blocks", SCENARIOS)
    case = cases_for(recording, chosen, 0)[0]
    assert {v.code for v in recording.dialect.invariants(case.events)} == {"anthropic.block-overlap"}
    assert undeclared(chosen, recording, 0) == []


def test_d1_writes_each_dialects_own_word_and_skips_dialects_without_the_quirk() -> None:
    chosen = find_scenario("D1-wrong-finish-reason", SCENARIOS)
    for name, word in [("openai-chat/parallel-2", "stop"), ("anthropic/single-call", "end_turn")]:
        (case, *_) = cases_for(_recording(name), chosen, 0)
        assert case.expected.finish_reason == word
        assert {v.code for v in _recording(name).dialect.invariants(case.events)} == {
            f"{case.dialect}.finish-contradicts-calls"
        }
    # Gemini says STOP after calls and Responses has no finish word for them: no D1 there.
    assert cases_for(_recording("gemini/no-args"), chosen, 0) == []
    assert cases_for(_recording("openai-responses/single-call"), chosen, 0) == []


def test_docs_list_every_invariant_code() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "dialects.md").read_text(encoding="utf-8")
    for name in dialects.names():
        for code in [*dialects.get(name).invariant_codes, *dialects.get(name).request_codes]:
            assert f"`{code}`" in doc, f"docs/dialects.md does not list {code}"


def test_scenarios_shows_the_quirks_with_their_sources(capsys: pytest.CaptureFixture[str]) -> None:
    from harness.cli import main

    assert main(["scenarios", "--quirks"]) == 0
    out = capsys.readouterr().out
    assert "interleave: breaks *.block-overlap *.item-overlap\n  C1  docker/docker-agent PR #3009" in out
    assert main(["scenarios"]) == 0
    assert "QUIRKS" in capsys.readouterr().out.splitlines()[0]


@pytest.mark.parametrize(
    ("scenario", "cassette"),
    [
        ("C6-text-mixed-with-tool-calls", "openai-responses/single-call"),  # inserts events
        ("E1-args-only-in-done", "openai-responses/parallel-2"),  # drops events
        ("partial-json-one-char-pieces", "openai-responses/single-call"),  # splits one event into many
    ],
)
def test_the_check_catches_sequence_numbers_that_are_not_counted_anew(
    monkeypatch: pytest.MonkeyPatch, scenario: str, cassette: str
) -> None:
    chosen, recording = find_scenario(scenario, SCENARIOS), _recording(cassette)
    cases = cases_for(recording, chosen, 0)
    assert cases, "the scenario must apply for this check to mean anything"
    assert undeclared(chosen, recording, 0) == []
    seqs = [e.payload["sequence_number"] for e in cases[0].events if isinstance(e.payload, dict)]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))
    monkeypatch.setattr(type(recording.dialect), "resequence", lambda self, events: list(events))
    found = " ".join(undeclared(chosen, recording, 0))
    assert "openai-responses.sequence-not-increasing" in found or "openai-responses.sequence-skipped" in found


@pytest.mark.parametrize(
    ("scenario", "cassette"),
    [
        ("later-call-has-shorter-id", "openai-responses/llamacpp-interleaved-parallel"),  # call_id
        ("A10-missing-id-entirely", "openai-responses/args-only-in-done"),  # call_id removed
        ("E5-name-only-in-added", "openai-responses/args-only-in-done"),  # name removed
        ("E2-done-corrects-deltas", "openai-responses/parallel-2"),  # arguments
    ],
)
def test_the_check_catches_a_final_output_that_is_not_rebuilt(
    monkeypatch: pytest.MonkeyPatch, scenario: str, cassette: str
) -> None:
    chosen, recording = find_scenario(scenario, SCENARIOS), _recording(cassette)
    assert cases_for(recording, chosen, 0), "the scenario must apply for this check to mean anything"
    assert undeclared(chosen, recording, 0) == []
    monkeypatch.setattr(type(recording.dialect), "restate", lambda self, events: list(events))
    assert "openai-responses.output-disagrees-with-items" in " ".join(undeclared(chosen, recording, 0))


def test_an_inserted_item_is_listed_in_the_final_output(monkeypatch: pytest.MonkeyPatch) -> None:
    chosen, recording = (
        find_scenario("C6-text-mixed-with-tool-calls", SCENARIOS),
        _recording("openai-responses/single-call"),
    )
    (case,) = cases_for(recording, chosen, 0)
    streamed = [
        e.payload["item"] for e in case.events if e.payload.get("type") == "response.output_item.done"
    ]
    (final,) = [e.payload for e in case.events if e.payload.get("type") == "response.completed"]
    assert [item["type"] for item in streamed] == ["message", "function_call", "message"]
    assert final["response"]["output"] == streamed
    # Without the rebuild the insertion would contradict the final output, so it is refused.
    monkeypatch.setattr(type(recording.dialect), "restate", lambda self, events: list(events))
    assert cases_for(recording, chosen, 0) == []
