"""The parts of a response and the state that goes back with them (`Outcome.parts`): how they are
compared, what a difference costs, what the reference reads, what a follow-up sends back, and
accumulators written the way real clients are, which these cases kill."""

from __future__ import annotations

import json
from typing import Any

from harness import Event, EventAccumulator, Outcome, Part, PartKind, State, ToolCall, resolve_accumulator
from harness.cassettes.outcome import diff, part_differences
from harness.matrix.judging import judge
from harness.matrix.selection import build_case
from harness.oracle.evidence import turn_outcome
from harness.oracle.severity import Severity, differences
from harness.oracle.verdict import Verdict
from harness.serve.followup import read_followup

R, C, T, S = PartKind.REASONING, PartKind.CALL, PartKind.TEXT, PartKind.SERVER_CALL
CALL = ToolCall("get_weather", {"city": "Paris"}, "toolu_1")


def signed(*parts: Part, calls: int = 1) -> Outcome:
    text = "".join(p.text for p in parts if p.kind is T)
    return Outcome(tool_calls=(CALL,) * calls, text=text, parts=parts)


def test_a_signature_changed_is_lost_and_names_it() -> None:
    want = signed(Part(R, "think", "sig-A"), Part(C))
    got = signed(Part(R, "think", "sig-B"), Part(C))
    assert differences(want, got) == [("reasoning 1: signature 'sig-A' expected, got 'sig-B'", Severity.LOST)]


def test_an_accumulator_without_parts_is_not_judged_on_them() -> None:
    want = signed(Part(R, "think", "sig-A"), Part(C))
    assert diff(want, Outcome(tool_calls=(CALL,))) == []


def test_reasoning_moved_after_its_call_is_lost_text_moved_is_cosmetic() -> None:
    want = signed(Part(T, "Let me look. "), Part(R, "think", "sig"), Part(C))
    moved = differences(want, signed(Part(T, "Let me look. "), Part(C), Part(R, "think", "sig")))
    assert moved[0][1] is Severity.LOST and moved[0][0].startswith("parts: ")
    text_after = differences(want, signed(Part(R, "think", "sig"), Part(C), Part(T, "Let me look. ")))
    assert [s for _, s in text_after] == [Severity.COSMETIC]


def test_text_chunks_and_an_unsigned_summary_may_be_joined_or_dropped() -> None:
    want = Outcome(text="ab", parts=(Part(R, "x"), Part(R, "y"), Part(T, "a"), Part(T, "b")))
    assert part_differences(want, Outcome(text="ab", parts=(Part(R, "xy"), Part(T, "ab")))) == []
    dropped = part_differences(want, Outcome(text="ab", parts=(Part(T, "ab"),)))
    assert dropped and not any(binding for _, binding in dropped)


def test_parts_are_not_judged_against_an_expectation_they_disagree_with() -> None:
    # An expectation a step edited by hand (a call dropped) without its parts says nothing of them.
    stale = Outcome(parts=(Part(R, "t", "sig"), Part(C)))
    assert part_differences(stale, Outcome(parts=(Part(R, "t", "other"),))) == []


def test_parts_round_trip() -> None:
    outcome = Outcome(
        tool_calls=(CALL,),
        text="hi",
        parts=(Part(T, "hi"), Part(R, "", None, "opaque", "rs_1"), Part(C, signature="Cp")),
    )
    assert Outcome.from_dict(json.loads(json.dumps(outcome.to_dict()))) == outcome
    assert Outcome.from_record(outcome.to_record()) == outcome
    assert "parts" not in Outcome().to_dict()


# -- what the reference reads ---------------------------------------------------------------------


def kinds(case_id: str) -> list[tuple[str, bool]]:
    return [(str(p.kind), p.marked) for p in build_case(case_id).expected.parts]


def test_reference_reads_thinking_between_calls() -> None:
    assert kinds("anthropic/interleaved-thinking::original::s0") == [
        ("reasoning", True), ("call", False), ("reasoning", True), ("call", False)
    ]  # fmt: skip


def test_reference_reads_text_after_a_server_call() -> None:
    plain = [("text", False), ("server_call", False), ("text", False)]
    assert kinds("anthropic/web-search::original::s0") == plain
    assert kinds("openai-responses/web-search-then-call::original::s0")[:2] == plain[1:]


def test_reference_reads_a_signature_on_the_first_parallel_call_only() -> None:
    parts = build_case("gemini/parallel-one-per-chunk::original::s0").expected.parts
    assert [p.signature is not None for p in parts if p.kind is C] == [True, False, False]


def test_reference_reads_a_reasoning_item_with_its_id() -> None:
    first = build_case("openai-responses/reasoning-then-call::original::s0").expected.parts[0]
    assert first.kind is R and first.id is not None and first.id.startswith("rs_")


def test_reference_reads_reasoning_content() -> None:
    first = build_case("openai-chat/deepseek-reasoning-content::original::s0").expected.parts[0]
    assert first.kind is R and first.text.startswith("The user wants")


# -- accumulators written the way real clients are ------------------------------------------------


class OneThinkingBuffer(EventAccumulator):
    """Anthropic, as clients that keep one `thinking` string and one `signature` per message are
    written: every thinking delta joined, each signature delta overwriting the last."""

    def __init__(self, dialect: str) -> None:
        self.blocks: dict[int, dict[str, Any]] = {}
        self.order: list[int] = []
        self.thinking = ""
        self.signature = ""
        self.text = ""
        self.finish: str | None = None
        self.done = False

    def feed(self, event: Event) -> None:
        p = event.payload if isinstance(event.payload, dict) else {}
        kind = p.get("type")
        if kind == "content_block_start":
            self.blocks[p["index"]] = {**p["content_block"], "json": ""}
            self.order.append(p["index"])
        elif kind == "content_block_delta":
            delta = p["delta"]
            if delta["type"] == "thinking_delta":
                self.thinking += delta["thinking"]
            elif delta["type"] == "signature_delta":
                self.signature = delta["signature"]
            elif delta["type"] == "text_delta":
                self.text += delta["text"]
            elif delta["type"] == "input_json_delta":
                self.blocks[p["index"]]["json"] += delta["partial_json"]
        elif kind == "message_delta":
            self.finish = p["delta"].get("stop_reason") or self.finish
        elif kind == "message_stop":
            self.done = True

    def close(self, error: str | None) -> Outcome:
        tools = [self.blocks[i] for i in self.order if self.blocks[i]["type"] == "tool_use"]
        parts = [Part(R, self.thinking, self.signature)] if self.thinking else []
        return Outcome(
            tool_calls=tuple(ToolCall.from_text(b["name"], b["json"], b["id"]) for b in tools),
            text=self.text,
            finish_reason=self.finish,
            state=State.COMPLETE if self.done else State.CUT,
            parts=(*parts, *(Part(C) for _ in tools)),
        )


class TextJoined(OneThinkingBuffer):
    """Anthropic, as clients that keep the text in one string and the blocks apart are written:
    the text is one part, before the calls, wherever its blocks were."""

    def close(self, error: str | None) -> Outcome:
        outcome = super().close(error)
        servers = [i for i in self.order if self.blocks[i]["type"] == "server_tool_use"]
        calls = [p for p in outcome.parts if p.kind is C]
        parts = (Part(T, self.text), *(Part(S) for _ in servers), *calls)
        return Outcome(outcome.tool_calls, outcome.text, outcome.finish_reason, outcome.state, parts=parts)


class PerBlock(OneThinkingBuffer):
    """Anthropic, as clients that keep each content block by its index are written: every block
    with its own text, thinking and signature, in its place."""

    def feed(self, event: Event) -> None:
        p = event.payload if isinstance(event.payload, dict) else {}
        delta = p.get("delta") if p.get("type") == "content_block_delta" else None
        key = {"thinking_delta": "thinking", "signature_delta": "signature", "text_delta": "text"}
        if delta is not None and delta["type"] in key:
            block = self.blocks[p["index"]]
            field = key[delta["type"]]
            block[field] = (block.get(field) or "") + delta[field]
        super().feed(event)

    def close(self, error: str | None) -> Outcome:
        outcome = super().close(error)
        kinds = {"thinking": R, "redacted_thinking": R, "tool_use": C, "text": T, "server_tool_use": S}
        parts = tuple(
            Part(
                kinds[b["type"]],
                b.get("thinking") or b.get("text") or "",
                b.get("signature") or None,
                b.get("data"),
            )
            for b in (self.blocks[i] for i in self.order)
            if b["type"] in kinds
        )
        return Outcome(outcome.tool_calls, outcome.text, outcome.finish_reason, outcome.state, parts=parts)


def verdict(accumulator: type[EventAccumulator], case_id: str) -> tuple[Verdict, str]:
    result = judge(resolve_accumulator(accumulator), "test", build_case(case_id))
    return result.verdict, "\n".join(result.diff)


def test_one_thinking_buffer_fails_on_thinking_between_calls() -> None:
    found, said = verdict(OneThinkingBuffer, "anthropic/interleaved-thinking::original::s0")
    assert found is Verdict.FAIL
    # The second block's signature now holds both texts: the first block is gone, the second changed.
    assert "reasoning 1: 'First I need" in said and "expected, missing" in said
    assert "reasoning 2: text 'I also want" in said


def test_one_thinking_buffer_passes_where_there_is_one_block() -> None:
    assert verdict(OneThinkingBuffer, "anthropic/thinking-then-call::original::s0")[0] is Verdict.PASS


def test_text_joined_across_a_server_call_is_named() -> None:
    found, said = verdict(TextJoined, "anthropic/web-search::original::s0")
    assert found is Verdict.WARN  # the API accepts the text back in one block: cosmetic
    assert said.startswith("parts: ") and "server call, text" in said and said.count("\n") == 0


def test_the_reference_passes_its_own_cases() -> None:
    for case_id in ("anthropic/interleaved-thinking::original::s0", "anthropic/web-search::original::s0"):
        result = judge(resolve_accumulator("reference"), "reference", build_case(case_id))
        assert result.verdict is Verdict.PASS


# -- what a follow-up sends back ------------------------------------------------------------------


def anthropic_followup(content: list[dict[str, Any]]) -> dict[str, Any]:
    ran = [{"type": "tool_result", "tool_use_id": b["id"], "content": "ok"} for b in content if "id" in b]
    return {
        "messages": [
            {"role": "user", "content": "Triage"},
            {"role": "assistant", "content": content},
            {"role": "user", "content": ran},
        ]
    }


def test_a_followup_without_its_thinking_blocks_loses_them() -> None:
    case = build_case("anthropic/thinking-then-call::original::s0")
    call = case.expected.tool_calls[0]
    tool_use = {"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments}
    thinking = next(p for p in case.expected.parts if p.kind is R)
    block = {"type": "thinking", "thinking": thinking.text, "signature": thinking.signature}
    whole = read_followup("anthropic", anthropic_followup([block, tool_use]))
    bare = read_followup("anthropic", anthropic_followup([tool_use]))
    assert whole is not None and bare is not None
    assert differences(case.expected, turn_outcome(case.expected, whole)) == []
    lost = differences(case.expected, turn_outcome(case.expected, bare))
    assert Severity.LOST in {s for _, s in lost} and any("reasoning 1:" in line for line, _ in lost)


def test_a_gemini_followup_with_the_signature_moved_to_another_call_loses_it() -> None:
    case = build_case("gemini/parallel-one-per-chunk::original::s0")
    signature = next(p.signature for p in case.expected.parts if p.signature)
    calls = [{"functionCall": {"name": c.name, "args": c.arguments}} for c in case.expected.tool_calls]
    moved = [calls[0], {**calls[1], "thoughtSignature": signature}, calls[2]]
    answers = [{"functionResponse": {"name": c.name, "response": {}}} for c in case.expected.tool_calls]
    body = {
        "contents": [
            {"role": "user", "parts": [{"text": "go"}]},
            {"role": "model", "parts": moved},
            {"role": "user", "parts": answers},
        ]
    }
    turn = read_followup("gemini", body)
    assert turn is not None
    lines = differences(case.expected, turn_outcome(case.expected, turn))
    assert any(line.startswith("call part 1: signature") and s is Severity.LOST for line, s in lines)
    assert any(line.startswith("call part 2: signature None expected") for line, _ in lines)


# -- the synthesized corpus of these shapes --------------------------------------------------------


def test_reference_reads_a_redacted_block_and_a_signature_only_block() -> None:
    redacted = build_case("anthropic/redacted-thinking-then-call::original::s0").expected.parts
    assert [(p.kind, p.signature is not None, p.data is not None) for p in redacted] == [
        (R, True, False), (R, False, True), (C, False, False)
    ]  # fmt: skip
    only = build_case("anthropic/thinking-parallel::original::s0").expected.parts[0]
    assert only.kind is R and only.text == "" and only.signature


def test_reference_keeps_the_compat_signature_on_its_call() -> None:
    parts = build_case("openai-chat/gemini-compat-thought-signature::original::s0").expected.parts
    assert [p.signature is not None for p in parts if p.kind is C] == [True, False]


def test_reference_reads_vllm_reasoning_field() -> None:
    parts = build_case("openai-chat/vllm-reasoning-field::original::s0").expected.parts
    assert [p.kind for p in parts if p.text or p.kind is C] == [R, C]


def test_reference_takes_encrypted_content_from_the_done_item() -> None:
    case = build_case("openai-responses/reasoning-encrypted-parallel::original::s0")
    added = next(
        e.payload["item"] for e in case.events if e.payload.get("type") == "response.output_item.added"
    )
    reasoning = case.expected.parts[0]
    assert reasoning.data is not None and reasoning.data.startswith(added["encrypted_content"])
    assert len(reasoning.data) > len(added["encrypted_content"])


def test_reference_reads_text_around_a_server_call_before_a_client_call() -> None:
    parts = build_case("anthropic/server-tool-then-call::original::s0").expected.parts
    assert [p.kind for p in parts] == [T, S, T, C]


NEW_ANTHROPIC = [
    "anthropic/interleaved-thinking::thinking-between-calls::s0",
    "anthropic/thinking-parallel::thinking-between-calls::s0",
    "anthropic/thinking-parallel::original::s0",
    "anthropic/redacted-thinking-then-call::original::s0",
    "anthropic/server-tool-then-call::original::s0",
]


def test_per_block_client_passes_the_new_anthropic_cases() -> None:
    assert [verdict(PerBlock, case_id)[0] for case_id in NEW_ANTHROPIC] == [Verdict.PASS] * len(NEW_ANTHROPIC)


def test_one_thinking_buffer_fails_on_thinking_between_calls_and_on_a_signature_only_block() -> None:
    between = verdict(OneThinkingBuffer, "anthropic/thinking-parallel::thinking-between-calls::s0")
    assert between[0] is Verdict.FAIL and "reasoning 1: signature" in between[1]
    only = verdict(OneThinkingBuffer, "anthropic/thinking-parallel::original::s0")
    assert only[0] is Verdict.FAIL and "reasoning 1:" in only[1] and "expected, missing" in only[1]


def test_a_followup_without_its_redacted_block_names_that_block() -> None:
    case = build_case("anthropic/redacted-thinking-then-call::original::s0")
    thinking, _ = (p for p in case.expected.parts if p.kind is R)
    call = case.expected.tool_calls[0]
    content = [
        {"type": "thinking", "thinking": thinking.text, "signature": thinking.signature},
        {"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments},
    ]
    turn = read_followup("anthropic", anthropic_followup(content))
    assert turn is not None
    lines = differences(case.expected, turn_outcome(case.expected, turn))
    assert [line.split(":")[0] for line, _ in lines] == ["parts", "reasoning 2"]
    assert lines[1][0].startswith("reasoning 2: payload 'EmwKAhgBEgy") and lines[1][1] is Severity.LOST


def test_chat_and_responses_followups_carry_their_reasoning_state() -> None:
    chat = {
        "messages": [
            {"role": "user", "content": "go"},
            {
                "role": "assistant",
                "content": None,
                "reasoning_content": "Think first.",
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": "{}"},
                        "extra_content": {"google": {"thought_signature": "CpYB"}},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "ok"},
        ]
    }
    turn = read_followup("openai-chat", chat)
    assert turn is not None and turn.parts == (Part(R, "Think first."), Part(C, signature="CpYB"))
    item = {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "S"}]}
    responses = {
        "input": [
            {"role": "user", "content": "go"},
            {**item, "encrypted_content": "gAAA"},
            {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "call_1", "output": "ok"},
        ]
    }
    turn = read_followup("openai-responses", responses)
    assert turn is not None and turn.parts == (Part(R, "S", None, "gAAA", "rs_1"), Part(C))


def test_bedrock_reasoning_goes_back_with_its_signature() -> None:
    case = build_case("bedrock-converse/reasoning-then-call::original::s0")
    thinking = case.expected.parts[0]
    assert thinking.kind is R and thinking.signature
    call = case.expected.tool_calls[0]
    use = {"toolUse": {"toolUseId": call.id, "name": call.name, "input": call.arguments}}
    said = {"reasoningContent": {"reasoningText": {"text": thinking.text, "signature": thinking.signature}}}

    def body(content: list[dict[str, Any]]) -> dict[str, Any]:
        ran = [{"toolResult": {"toolUseId": call.id, "content": [{"text": "ok"}]}}]
        return {"messages": [{"role": "assistant", "content": content}, {"role": "user", "content": ran}]}

    whole, bare = (
        read_followup("bedrock-converse", body([said, use])),
        read_followup("bedrock-converse", body([use])),
    )
    assert whole is not None and bare is not None
    assert differences(case.expected, turn_outcome(case.expected, whole)) == []
    assert Severity.LOST in {s for _, s in differences(case.expected, turn_outcome(case.expected, bare))}


def test_a_signature_duplicated_onto_another_call_is_cosmetic_one_moved_is_lost() -> None:
    want = signed(Part(C, signature="Cp"), Part(C), calls=2)
    duplicated = differences(want, signed(Part(C, signature="Cp"), Part(C, signature="Cp"), calls=2))
    assert duplicated == [("call part 2: signature None expected, got 'Cp'", Severity.COSMETIC)]
    moved = differences(want, signed(Part(C), Part(C, signature="Cp"), calls=2))
    assert moved[0] == ("call part 1: signature 'Cp' expected, got None", Severity.LOST)


def test_part_lines_have_their_own_signatures() -> None:
    from harness.oracle.verdict import diff_signature

    lines = [
        "parts: 'reasoning, call' expected, got 'call'",
        "reasoning 1: 'Think' signature 'Eq' expected, missing",
        "reasoning 2: text 'a' expected, got 'b'",
        "call part 1: signature 'Cp' expected, got None",
        "reasoning 3: unexpected 'x'",
    ]
    assert diff_signature(lines) == (
        "call part signature missing; parts order differs; reasoning extra; reasoning missing; "
        "reasoning text differs"
    )
