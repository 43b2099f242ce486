"""Mutations valid for their request as well as their protocol (issue 30): C7 adds choices only
where the request asked for them, C4 shifts every later block alike on block dialects (no index
reused), D4's usage-only event goes after every block stopped and only where usage was asked for.
Each family's first test here failed before the change (C7 sent three choices to `n=1` requests,
C4 gave a thinking block a tool block's index, D4 put a `message_delta` inside an open block)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from harness.cassettes import format as cassettes
from harness.cassettes.corpus import bundled, cassette_paths
from harness.cassettes.outcome import diff
from harness.matrix.case_id import find_case
from harness.mutate.scenario import (
    Case,
    RecordedStream,
    case_cassette,
    cases_for,
    find_scenario,
    recorded_streams,
)
from harness.wire import dialects
from harness.wire.codecs import decode_all
from harness.wire.dialects import Kind

ROOTS = [bundled("cassettes")]
RECORDINGS = {r.id: r for path in cassette_paths(ROOTS) for r in recorded_streams(path, ROOTS)}


def asking(recording: RecordedStream, **asked: Any) -> RecordedStream:
    """The recording as the answer to its request with `asked` set in the body."""
    request = recording.interaction.request
    request = dataclasses.replace(request, body={**request.body, **asked})
    interaction = dataclasses.replace(recording.interaction, request=request)
    return dataclasses.replace(recording, interaction=interaction)


def cases(recording: str | RecordedStream, scenario: str, seed: int = 0) -> list[Case]:
    found = RECORDINGS[recording] if isinstance(recording, str) else recording
    return cases_for(found, find_scenario(scenario), seed)


def request_violations(case: Case) -> list[str]:
    return [str(v) for v in dialects.get(case.dialect).request_rules(case.request, case.events)]


def reference_meets(case: Case) -> bool:
    d = dialects.get(case.dialect)
    acc = d.accumulator()
    for wire in decode_all(d.codec(), (chunk.data for chunk in case.response.chunks)):
        acc.feed(d.parse(wire))
    return diff(case.expected, acc.close(None if case.response.complete else case.response.error)) == []


# ---------------------------------------------------------------------------------------------
# C7: n>1 choices only for a request that asked for them

C7 = "C7-n-greater-than-1-choices"
OPENAI_CHAT = sorted(name for name in RECORDINGS if name.startswith("openai-chat/"))


def test_c7_sends_no_extra_choice_to_a_request_for_one() -> None:
    assert cases("openai-chat/azure-prompt-filter", C7) == []
    assert all(cases(name, C7) == [] for name in OPENAI_CHAT)


@pytest.mark.parametrize("name", OPENAI_CHAT)
def test_c7_answers_a_request_for_three_choices(name: str) -> None:
    found = cases(asking(RECORDINGS[name], n=3), C7)
    if not found:  # no tool-call chunk to add choices beside (a cut before the first one)
        pytest.skip(f"{name}: nothing to add choices to")
    (case,) = found
    numbers = {
        choice.get("index", 0)  # GLM-5 via OpenRouter sends choice 0 without its index
        for event in case.events
        if isinstance(event.payload, dict)
        for choice in event.payload.get("choices") or []
    }
    assert numbers == {0, 1, 2} and request_violations(case) == [] and reference_meets(case)
    assert case.request.body["n"] == 3  # the case carries the request it answers


def test_c7_needs_as_many_choices_as_it_adds() -> None:
    assert cases(asking(RECORDINGS["openai-chat/parallel-2"], n=2), C7) == []  # the scenario adds 3


def test_a_c7_case_of_an_n3_cassette_replays_from_its_id(tmp_path: Path) -> None:
    """`find_case` (show, explain, shrink) rebuilds the case from the request it answers."""
    recording = asking(RECORDINGS["openai-chat/parallel-2"], n=3)
    (case,) = cases(recording, C7)
    original = case_cassette(dataclasses.replace(case, scenario="original"))
    original = dataclasses.replace(
        original,
        interactions=[dataclasses.replace(original.interactions[0], response=recording.interaction.response)],
    )
    path = tmp_path / "openai-chat" / "n3.yaml"
    path.parent.mkdir()
    cassettes.save(original, path)
    found = find_case(f"openai-chat/n3::{C7}::s0", [str(path)])
    assert [e.payload for e in found.case.events] == [e.payload for e in case.events]


# ---------------------------------------------------------------------------------------------
# C4: a whole shift keeps block indexes unique and increasing

C4 = "C4-reasoning-shifts-index"
BLOCK_DIALECTS = ("anthropic/", "bedrock-converse/", "openai-responses/")


def test_c4_on_anthropic_shifts_every_later_block_alike() -> None:
    (case,) = cases("anthropic/interleaved-thinking", C4)
    starts = [
        e.payload["index"]
        for e in case.events
        if isinstance(e.payload, dict) and e.payload.get("type") == "content_block_start"
    ]
    assert starts == [0, 1, 3, 4, 5]  # the recording's thinking, one inserted, then a gap of one
    codes = {v.code for v in dialects.get("anthropic").invariants(case.events)}
    assert codes == {"anthropic.block-index-out-of-order"}


@pytest.mark.parametrize("name", sorted(n for n in RECORDINGS if n.startswith(BLOCK_DIALECTS)))
def test_c4_reuses_no_block_index(name: str) -> None:
    recording = RECORDINGS[name]
    own = {v.code for v in recording.dialect.invariants(recording.stream.events)}  # a C1 cassette overlaps
    for case in cases(name, C4) + cases(name, C4, 1):
        codes = {v.code for v in dialects.get(case.dialect).invariants(case.events)} - own
        broken = {c for c in codes if c.endswith(("-reused", "-overlap", "outside-block"))}
        assert not broken, (case.id, codes)
        assert reference_meets(case)


def test_a_whole_shift_declares_the_gap_only() -> None:
    (step,) = [s for s in find_scenario(C4).steps if s.name == "shift-field"]
    assert step.declares("anthropic.block-index-out-of-order")
    assert not step.declares("anthropic.block-index-reused")
    assert not step.declares("openai-responses.output-index-reused")
    a11 = find_scenario("A11-index-incremented-on-continuation").steps[-1]
    assert a11.declares("anthropic.delta-outside-block")  # continuations moved: still the old list


def test_c4_on_openai_chat_still_shifts_the_call_index() -> None:
    (case,) = cases("openai-chat/single-call", C4)
    indexes = {
        entry["index"]
        for e in case.events
        if isinstance(e.payload, dict)
        for choice in e.payload.get("choices") or []
        for entry in choice.get("delta", {}).get("tool_calls") or []
    }
    assert indexes == {1}


# ---------------------------------------------------------------------------------------------
# D4: a usage-only event after every block stopped, only where usage was asked for

D4, D5 = "D4-usage-only-final-chunk", "D5-usage-on-every-chunk"


@pytest.mark.parametrize("name", ["anthropic/cut-mid-args", "anthropic/overloaded-mid-call"])
def test_d4_puts_no_usage_inside_an_open_block(name: str) -> None:
    assert cases(name, D4) == []


@pytest.mark.parametrize("name", sorted(RECORDINGS))
def test_d4_follows_every_block_stop_and_the_finish(name: str) -> None:
    for case in cases(name, D4):
        d = dialects.get(case.dialect)
        kinds = [d.kinds(e) for e in case.events]
        (usage,) = [i for i, k in enumerate(kinds) if k == {Kind.USAGE}]
        last_block = max(i for i, k in enumerate(kinds) if k & {Kind.TOOL_END, Kind.TOOL_ARGS, Kind.TEXT})
        finish = max(i for i, k in enumerate(kinds) if Kind.FINISH in k)
        assert last_block < finish < usage, case.id
        assert request_violations(case) == [] and reference_meets(case)


def test_d4_and_d5_send_no_usage_a_request_did_not_ask_for() -> None:
    groq = RECORDINGS["openai-chat/groq-whole-calls"]
    assert "stream_options" not in groq.interaction.request.body
    assert cases(groq, D4) == [] and cases(groq, D5) == []
    assert cases(asking(groq, stream_options={"include_usage": True}), D5)


def test_d4_adds_no_second_usage_only_event() -> None:
    for name in ["openai-chat/single-call", "bedrock-converse/single-call"]:
        assert cases(name, D4) == [], name  # they end with one already: their own case is D4
    assert cases("anthropic/single-call", D4)  # its usage rides on the finish


# ---------------------------------------------------------------------------------------------
# The request rules themselves


def test_request_rules_name_what_the_request_did_not_ask_for() -> None:
    d = dialects.get("openai-chat")
    recording = RECORDINGS["openai-chat/parallel-2"]
    events = list(recording.stream.events)
    assert d.request_rules(recording.interaction.request, events) == []
    renamed = asking(recording, tools=[{"type": "function", "function": {"name": "get_weather"}}])
    codes = [v.code for v in d.request_rules(renamed.interaction.request, events)]
    assert codes == ["openai-chat.tool-not-offered"]  # get_time is no longer offered
    no_usage = recording.interaction.request.body.copy()
    del no_usage["stream_options"]
    request = dataclasses.replace(recording.interaction.request, body=no_usage)
    assert [v.code for v in d.request_rules(request, events)] == ["openai-chat.usage-not-requested"]
    assert d.request_rules(None, events) == []  # an unknown request: nothing to say


TOOL_CASSETTES = ["anthropic/parallel-calls", "bedrock-converse/single-call", "gemini/parallel-one-chunk",
                  "cohere/parallel", "ollama/parallel", "openai-responses/parallel-2"]  # fmt: skip


@pytest.mark.parametrize("name", TOOL_CASSETTES)
def test_every_dialect_checks_the_tools_offered(name: str) -> None:
    recording = RECORDINGS[name]
    d, events = recording.dialect, list(recording.stream.events)
    assert d.request_rules(recording.interaction.request, events) == []
    body = dict(recording.interaction.request.body)
    for key in ("tools", "toolConfig"):
        if key in body:
            body[key] = {"tools": [{"toolSpec": {"name": "other"}}]} if key == "toolConfig" else [
                {"type": "function", "name": "other", "function": {"name": "other"},
                 "functionDeclarations": [{"name": "other"}]}
            ]  # fmt: skip
    request = dataclasses.replace(recording.interaction.request, body=body)
    assert {v.code for v in d.request_rules(request, events)} == {f"{d.name}.tool-not-offered"}
