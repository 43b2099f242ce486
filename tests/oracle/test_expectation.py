"""Every case's class: spec, quirk or policy, from one table of mutations, decided per case."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import ClassVar

from harness.matrix.selection import build_case
from harness.mutate import Mutation, Quirk, Stream, registry
from harness.mutate.scenario import Scenario
from harness.oracle.expectation import STEPS, CaseClass, Expectation, classify, rule_for


def _class(case_id: str) -> CaseClass:
    return classify(build_case(case_id)).case_class


def test_every_shipped_mutation_has_a_row() -> None:
    # A new mutation gets a class on purpose: a row here, or an `imitates` declaration.
    assert sorted(name for name, cls in registry().items() if name not in STEPS and not cls.imitates) == []


def test_shipped_scenarios_get_their_class() -> None:
    assert _class("openai-chat/parallel-2::original::s0") is CaseClass.SPEC
    assert _class("openai-chat/parallel-2::F3-event-split-across-reads::s0") is CaseClass.SPEC
    assert _class("openai-chat/parallel-2::A4-id-only-on-first::s0") is CaseClass.SPEC
    assert _class("openai-chat/parallel-2::A1-parallel-same-index::s0") is CaseClass.QUIRK
    assert _class("openai-chat/parallel-2::B9-full-args-re-emitted-at-end::s0") is CaseClass.QUIRK
    assert _class("openai-chat/parallel-2::D1-wrong-finish-reason::s0") is CaseClass.POLICY
    assert _class("openai-chat/parallel-2::D6-missing-done::s0") is CaseClass.POLICY
    assert _class("openai-chat/parallel-2::D6-missing-finish-reason::s0") is CaseClass.POLICY
    reason = classify(build_case("openai-chat/parallel-2::A1-parallel-same-index::s0")).reason
    assert "A1" in reason


def test_a_shape_one_dialect_documents_is_spec_there_only() -> None:
    assert _class("openai-chat/parallel-2::interleaved-tool-blocks::s0") is CaseClass.SPEC
    assert _class("anthropic/parallel-calls::interleaved-tool-blocks::s0") is CaseClass.QUIRK
    assert _class("anthropic/single-call::D8-mid-stream-error::s0") is CaseClass.SPEC
    assert _class("openai-chat/single-call::D8-mid-stream-error::s0") is CaseClass.QUIRK


def test_a_cut_is_spec_before_the_finish_and_policy_after_it() -> None:
    assert _class("openai-chat/single-call::cut-at-every-event::s0::e11") is CaseClass.SPEC
    assert _class("openai-chat/single-call::cut-at-every-event::s0::e12") is CaseClass.POLICY
    assert _class("anthropic/single-call::cut-at-every-event::s0::e13") is CaseClass.POLICY
    assert _class("openai-chat/single-call::truncated-mid-args::s0") is CaseClass.SPEC


def test_the_most_lenient_step_wins_and_parameters_count() -> None:
    case = build_case("openai-chat/parallel-2::original::s0")
    steps = {name: registry()[name] for name in ("rechunk", "set-field", "drop-sentinel", "drop-field")}
    mixed = Scenario("mixed", "", (steps["rechunk"](), steps["set-field"](), steps["drop-sentinel"]()))
    assert classify(case, mixed).case_class is CaseClass.POLICY
    quirky = Scenario("quirky", "", (steps["rechunk"](), steps["set-field"]()))
    assert classify(case, quirky).case_class is CaseClass.QUIRK
    plain = Scenario("plain", "", (steps["rechunk"](),))
    assert classify(case, plain).case_class is CaseClass.SPEC
    drop = steps["drop-field"]
    assert rule_for(drop(field="index")).quirk == "A3"  # type: ignore[call-arg]
    assert rule_for(drop(field="id", on="continuations")).case_class is CaseClass.SPEC  # type: ignore[call-arg]


@dataclass(frozen=True)
class _Declared(Mutation):
    name: ClassVar[str] = "my-gateway-quirk"
    imitates: ClassVar[tuple[Quirk, ...]] = (Quirk("Z9", "my gateway"),)

    def apply(self, stream: Stream, rng: random.Random) -> Stream:
        return stream


@dataclass(frozen=True)
class _Plain(Mutation):
    name: ClassVar[str] = "my-reframing"

    def apply(self, stream: Stream, rng: random.Random) -> Stream:
        return stream


def test_a_mutation_without_a_row_is_read_from_its_declaration() -> None:
    rule = rule_for(_Declared())
    assert rule.case_class is CaseClass.QUIRK and rule.quirk == "Z9"
    assert rule_for(_Plain()).case_class is CaseClass.SPEC


def test_an_unknown_scenario_name_is_judged_as_spec() -> None:
    from dataclasses import replace

    case = replace(build_case("openai-chat/parallel-2::original::s0"), scenario="nowhere")
    found = classify(case)
    assert found.case_class is CaseClass.SPEC and "nowhere" in found.reason


def test_a_recording_that_is_itself_a_quirk_makes_its_cases_quirk() -> None:
    # Found by the strict accumulators (tests/strict/): these recordings imitate a real deviation,
    # so a client written to the protocol is not wrong to fail them.
    for case_id in (
        "openai-chat/litellm-bridge-parallel-index0::original::s0",
        "openai-chat/litellm-bridge-parallel-index0::F3-single-read::s0",
        "openai-chat/glm5-openrouter-idless-continuation::original::s0",
    ):
        assert _class(case_id) is CaseClass.QUIRK, case_id
    assert "A1" in classify(build_case("openai-chat/litellm-bridge-parallel-index0::original::s0")).reason
    assert _class("openai-chat/litellm-bridge-parallel-index0::D6-missing-done::s0") is CaseClass.POLICY


def test_a_recording_that_breaks_its_protocol_is_quirk_without_being_listed() -> None:
    # A user's recording from a gateway that bends the protocol is not `spec` because its cassette
    # declares nothing: its dialect's invariants say what it breaks. (Before: "the recorded stream".)
    from dataclasses import replace

    for case_id, code in (
        ("anthropic/seed004-interleaved-input-json::original::s0", "anthropic.block-overlap"),
        ("anthropic/seed004-interleaved-input-json::F3-single-read::s0", "anthropic.block-overlap"),
        ("openai-responses/llamacpp-interleaved-parallel::original::s0", "openai-responses.item-overlap"),
    ):
        name = "mine/" + case_id.partition("/")[2].partition("::")[0]
        case = replace(build_case(case_id), cassette=name, declared=None)  # its cassette says nothing
        found = classify(case)
        assert found.case_class is CaseClass.QUIRK and code in found.reason, (case_id, found)
    # A stream its protocol allows stays spec, listed or not.
    case = replace(build_case("anthropic/parallel-calls::original::s0"), cassette="mine/parallel-calls")
    assert classify(case) == Expectation(CaseClass.SPEC, "the recorded stream")


def test_two_recordings_of_one_name_are_classed_apart() -> None:
    # Classes are found once per scenario and recording; a recording is not its name, which two
    # runs in one process may give to two streams (the tests' built `no-arguments` and the bundled
    # one did: the second took the first's class, and three bundled cases were misclassed).
    from dataclasses import replace

    bent_id = "openai-responses/llamacpp-interleaved-parallel::original::s0"
    bent = replace(build_case(bent_id), cassette="x/y", declared=None)
    plain = replace(build_case("openai-responses/parallel-2::original::s0"), cassette="x/y")
    assert classify(bent).case_class is CaseClass.QUIRK
    assert classify(plain).case_class is CaseClass.SPEC


def test_a_cut_after_a_whole_gemini_call_is_policy_and_before_any_call_spec() -> None:
    # Gemini has no end marker per call: whether a whole call before a cut stands is our rule.
    assert _class("gemini/parallel-one-per-chunk::D7-truncated-mid-args::s0") is CaseClass.POLICY
    assert _class("gemini/parallel-one-per-chunk::cut-at-every-event::s0::e1") is CaseClass.POLICY
    assert _class("gemini/parallel-one-per-chunk::cut-at-every-event::s0::e0") is CaseClass.SPEC
    # Where a call has its own end marker, a cut after it stays spec (the protocol says it is final).
    assert _class("anthropic/parallel-calls::truncated-mid-args::s0") is CaseClass.SPEC
