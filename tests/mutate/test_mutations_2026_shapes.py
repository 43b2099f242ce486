"""The 2026 failure shapes as scenarios: each class kills a client written the way real clients
are, with a message naming what goes wrong, and leaves a correct one alone."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from harness.accumulators import EventLevel
from harness.cassettes.outcome import Outcome, Part, PartKind, State, ToolCall, diff
from harness.errors import ScenarioError
from harness.matrix.selection import build_case
from harness.mutate.scenario import Case
from harness.wire import dialects
from harness.wire.dialects import Event


def outcome_of(acc: Any, case: Case) -> Outcome:
    """`acc`'s outcome through the library's one decode -> feed -> close loop."""
    return EventLevel(lambda dialect: acc, type(acc).__name__).run(case)


def problems(case_id: str, acc: Any) -> list[str]:
    case = build_case(case_id)
    return diff(case.expected, outcome_of(acc, case))


# -- OpenAI chat clients -----------------------------------------------------------------------


class ChatClient:
    """Merges `tool_calls[]` entries by index. `present_overwrites`: a member that is present (even
    `null` or `""`) replaces the name (DeepSeek Harness, anomalyco/opencode#43328). `first_only`:
    reads `tool_calls[0]` alone. `calls_or_text`: a delta's text is read only when it has no calls.
    `strip`: trims each piece (a custom call's raw input loses its spaces). Custom entries keep
    their raw input."""

    def __init__(
        self,
        *,
        present_overwrites: bool = False,
        first_only: bool = False,
        calls_or_text: bool = False,
        strip: bool = False,
    ) -> None:
        self.present_overwrites = present_overwrites
        self.first_only = first_only
        self.calls_or_text = calls_or_text
        self.strip = strip
        self.calls: dict[Any, dict[str, Any]] = {}
        self.text = ""
        self.finish: str | None = None

    def feed(self, event: Event) -> None:
        payload = event.payload
        if not isinstance(payload, dict) or not payload.get("choices"):
            return
        choice = payload["choices"][0]
        self.finish = choice.get("finish_reason") or self.finish
        delta = choice.get("delta") or {}
        entries = delta.get("tool_calls") or []
        if entries and self.first_only:
            entries = entries[:1]
        if not (entries and self.calls_or_text):
            self.text += delta.get("content") or ""
        for entry in entries:
            call = self.calls.setdefault(
                entry.get("index"), {"id": None, "name": "", "text": "", "custom": False}
            )
            custom = isinstance(entry.get("custom"), dict)
            part = entry["custom"] if custom else entry.get("function") or {}
            call["custom"] = call["custom"] or custom
            call["id"] = call["id"] or entry.get("id") or None
            if self.present_overwrites:
                if "name" in part:
                    call["name"] = part["name"]
            else:
                call["name"] = part.get("name") or call["name"]
            piece = part.get("input" if custom else "arguments") or ""
            call["text"] += piece.strip() if self.strip else piece

    def close(self, error: str | None) -> Outcome:
        made = tuple(
            ToolCall.freeform(c["name"], c["text"], c["id"])
            if c["custom"]
            else ToolCall.from_text(c["name"] or None, c["text"], c["id"])
            for c in self.calls.values()
        )
        return Outcome(tool_calls=made, text=self.text, finish_reason=self.finish, state=State.COMPLETE)


def test_null_identity_members_kill_a_client_that_takes_a_present_member_as_an_update() -> None:
    case_id = "openai-chat/single-call::A12-null-identity-on-continuations::s0"
    assert problems(case_id, ChatClient(present_overwrites=True)) == [
        "call 1: name 'get_weather' expected, got None"
    ]
    assert problems(case_id, ChatClient()) == []
    assert problems("openai-chat/single-call::original::s0", ChatClient(present_overwrites=True)) == []


def test_empty_identity_members_kill_a_client_that_takes_empty_as_a_value() -> None:
    case_id = "openai-chat/single-call::A6-empty-id-and-name-continuation::s0"
    assert problems(case_id, ChatClient(present_overwrites=True)) == [
        "call 1: name 'get_weather' expected, got None"
    ]
    assert problems(case_id, ChatClient()) == []


def test_several_whole_calls_in_one_delta_kill_a_client_reading_the_first_entry() -> None:
    case_id = "openai-chat/parallel-2::C2-several-whole-calls-in-one-delta::s0"
    case = build_case(case_id)
    # Every call whole, all of them in one chunk.
    with_calls = [e for e in case.events if dialects.get("openai-chat").fragments([e])]
    assert len(with_calls) == 1 and len(with_calls[0].payload["choices"][0]["delta"]["tool_calls"]) == 2
    assert problems(case_id, ChatClient(first_only=True))[0] == "tool_calls: 2 expected, got 1"
    assert problems(case_id, ChatClient()) == []


def test_text_in_the_call_delta_kills_a_client_reading_text_or_calls() -> None:
    case_id = "openai-chat/single-call::C6-text-in-the-call-delta::s0"
    assert problems(case_id, ChatClient(calls_or_text=True)) == [
        "text: 'Checking that now. ' expected, got ''"
    ]
    assert problems(case_id, ChatClient()) == []
    assert problems("openai-chat/single-call::original::s0", ChatClient(calls_or_text=True)) == []


@pytest.mark.parametrize("cassette", ["openai-chat/custom-tool", "openai-responses/custom-tool"])
def test_custom_input_split_anywhere_keeps_the_raw_input(cassette: str) -> None:
    case = build_case(f"{cassette}::custom-input-split-anywhere::s0")
    d = dialects.get(case.dialect)
    pieces = [
        d.get(case.events[f.event], f.slot, dialects.Field.ARGS)
        for f in d.fragments(case.events)
        if f.role is not dialects.Role.END  # a Responses `.done` repeats the whole input
    ]
    text = case.expected.tool_calls[0].arguments
    assert "\\" in text and '"' in text and "\n" in text
    assert [p for p in pieces if isinstance(p, str) and p] == list(text)  # one character a piece
    assert d.invariants(case.events) == []


def test_custom_input_split_anywhere_kills_a_client_that_trims_pieces() -> None:
    case_id = "openai-chat/custom-tool::custom-input-split-anywhere::s0"
    (line,) = problems(case_id, ChatClient(strip=True))
    assert line.startswith(
        'call 1: arguments \'grep -rn "TODO\\\\|FIXME" src/ | wc -l\\necho "done: $?"\' expected'
    )
    assert problems(case_id, ChatClient()) == []
    assert (
        problems("openai-chat/custom-tool::original::s0", ChatClient(strip=True)) != []
    )  # tokens have spaces too


def test_split_custom_input_needs_a_custom_call() -> None:
    with pytest.raises(ScenarioError, match="does not apply"):
        build_case("openai-chat/single-call::custom-input-split-anywhere::s0")


# -- Anthropic: invalid streamed JSON under eager input streaming (G1) ---------------------------


class AnthropicClient:
    """Joins `input_json_delta` per block; at the block's stop parses it. `on_invalid`: `empty`
    reports `{}` (the SDK-less `json.loads(...) or {}` client), `prefix` runs the first JSON value
    that parses (`raw_decode`, as a partial parser does), `raw` reports it invalid as assembled."""

    def __init__(self, on_invalid: str) -> None:
        self.on_invalid = on_invalid
        self.blocks: dict[int, dict[str, Any]] = {}
        self.done: list[ToolCall] = []
        self.finish: str | None = None

    def feed(self, event: Event) -> None:
        p = event.payload if isinstance(event.payload, dict) else {}
        kind = p.get("type")
        if kind == "content_block_start" and p["content_block"].get("type") == "tool_use":
            block = p["content_block"]
            self.blocks[p["index"]] = {"id": block["id"], "name": block["name"], "text": ""}
        elif kind == "content_block_delta" and p["delta"].get("type") == "input_json_delta":
            self.blocks[p["index"]]["text"] += p["delta"]["partial_json"]
        elif kind == "content_block_stop" and p["index"] in self.blocks:
            block = self.blocks.pop(p["index"])
            self.done.append(self._call(block))
        elif kind == "message_delta":
            self.finish = p["delta"].get("stop_reason") or self.finish

    def _call(self, block: dict[str, Any]) -> ToolCall:
        text = block["text"]
        if self.on_invalid == "raw":
            return ToolCall.from_text(block["name"], text, block["id"])
        try:
            return ToolCall(block["name"], json.loads(text), block["id"])
        except ValueError:
            if self.on_invalid == "prefix":
                try:
                    return ToolCall(block["name"], json.JSONDecoder().raw_decode(text)[0], block["id"])
                except ValueError:
                    pass
            return ToolCall(block["name"], {}, block["id"])

    def close(self, error: str | None) -> Outcome:
        return Outcome(tool_calls=tuple(self.done), finish_reason=self.finish, state=State.COMPLETE)


@pytest.mark.parametrize("spoil", ["mis-escaped", "trailing-bytes", "bare-words"])
def test_invalid_eager_json_is_never_run_nor_empty(spoil: str) -> None:
    case_id = f"anthropic/eager-input-streaming::G1-eager-invalid-json-{spoil}::s0"
    case = build_case(case_id)
    (call,) = case.expected.tool_calls
    assert call.invalid and isinstance(call.arguments, str)
    assert dialects.get("anthropic").invariants(case.events) == []
    empty = problems(case_id, AnthropicClient("empty"))
    assert len(empty) == 1 and empty[0].startswith("call 1: arguments") and empty[0].endswith("got valid {}")
    assert problems(case_id, AnthropicClient("raw")) == []
    assert problems("anthropic/eager-input-streaming::original::s0", AnthropicClient("empty")) == []


def test_trailing_bytes_kill_a_client_that_runs_the_prefix_that_parses() -> None:
    case_id = "anthropic/eager-input-streaming::G1-eager-invalid-json-trailing-bytes::s0"
    (line,) = problems(case_id, AnthropicClient("prefix"))
    assert "expected, got valid {" in line and '"path":"notes/todo.md"' in line


def test_invalid_eager_json_needs_a_request_that_asked_for_it() -> None:
    with pytest.raises(ScenarioError, match="does not apply"):
        build_case("anthropic/single-call::G1-eager-invalid-json-bare-words::s0")


# -- late deltas after a block's end (E3), Bedrock Converse -------------------------------------


class BedrockClient:
    """Joins `toolUse` input deltas by `contentBlockIndex`. `respect_stop`: a delta for a block
    that stopped is ignored (anomalyco/opencode PR #45847); otherwise it is appended."""

    def __init__(self, respect_stop: bool) -> None:
        self.respect_stop = respect_stop
        self.blocks: dict[int, dict[str, Any]] = {}
        self.stopped: set[int] = set()
        self.finish: str | None = None

    def feed(self, event: Event) -> None:
        p = event.payload if isinstance(event.payload, dict) else {}
        index = p.get("contentBlockIndex")
        if event.name == "contentBlockStart" and "toolUse" in p.get("start", {}):
            use = p["start"]["toolUse"]
            self.blocks[index] = {"id": use["toolUseId"], "name": use["name"], "text": ""}
        elif event.name == "contentBlockDelta" and "toolUse" in p.get("delta", {}):
            if not (self.respect_stop and index in self.stopped):
                self.blocks[index]["text"] += p["delta"]["toolUse"].get("input", "")
        elif event.name == "contentBlockStop":
            self.stopped.add(index)
        elif event.name == "messageStop":
            self.finish = p.get("stopReason")

    def close(self, error: str | None) -> Outcome:
        made = tuple(ToolCall.from_text(b["name"], b["text"], b["id"]) for b in self.blocks.values())
        return Outcome(tool_calls=made, finish_reason=self.finish, state=State.COMPLETE)


def test_late_delta_after_a_bedrock_block_stop_kills_an_appending_client() -> None:
    case_id = "bedrock-converse/single-call::E3-stray-delta-after-done::s0"
    (line,) = problems(case_id, BedrockClient(respect_stop=False))
    assert line.startswith("call 1: arguments") and "got invalid" in line and line.endswith('"}}')
    assert problems(case_id, BedrockClient(respect_stop=True)) == []
    assert problems("bedrock-converse/single-call::original::s0", BedrockClient(respect_stop=False)) == []


# -- Responses: identity that changes mid-call ----------------------------------------------------


class ResponsesClient:
    """Function calls keyed by item id; arguments from the deltas. `index_fallback`: an unknown
    item id falls back to the `output_index` (as openai-python's stream state does)."""

    def __init__(self, index_fallback: bool) -> None:
        self.index_fallback = index_fallback
        self.by_id: dict[str, dict[str, Any]] = {}
        self.by_index: dict[int, dict[str, Any]] = {}
        self.finish: str | None = None

    def feed(self, event: Event) -> None:
        p = event.payload if isinstance(event.payload, dict) else {}
        kind = p.get("type")
        if kind == "response.output_item.added" and p["item"].get("type") == "function_call":
            call = {"id": p["item"]["call_id"], "name": p["item"]["name"], "text": ""}
            self.by_id[p["item"]["id"]] = self.by_index[p["output_index"]] = call
        elif kind == "response.function_call_arguments.delta":
            call = self.by_id.get(p.get("item_id"))
            if call is None and self.index_fallback:
                call = self.by_index.get(p.get("output_index"))
            if call is not None:
                call["text"] += p["delta"]
        elif kind == "response.completed":
            self.finish = p["response"]["status"]

    def close(self, error: str | None) -> Outcome:
        made = tuple(ToolCall.from_text(c["name"], c["text"], c["id"]) for c in self.by_index.values())
        return Outcome(tool_calls=made, finish_reason=self.finish, state=State.COMPLETE)


def test_item_id_changing_mid_call_kills_a_client_keyed_on_item_ids_alone() -> None:
    case_id = "openai-responses/single-call::E6-item-id-changes-mid-call::s0"
    found = problems(case_id, ResponsesClient(index_fallback=False))
    assert found and found[0].startswith("call 1: arguments") and found[0].endswith("got {}")
    assert problems(case_id, ResponsesClient(index_fallback=True)) == []
    assert problems("openai-responses/single-call::original::s0", ResponsesClient(index_fallback=False)) == []


# -- Responses starts and ends that are not announced --------------------------------------------


class SnapshotResponsesClient(ResponsesClient):
    """Opens its response at `response.created` and keeps items only inside it; with `from_output`
    its calls are those `response.completed` lists (a client built on the final snapshot)."""

    def __init__(self, from_output: bool = False) -> None:
        super().__init__(index_fallback=True)
        self.opened = False
        self.from_output = from_output
        self.listed: list[ToolCall] = []

    def feed(self, event: Event) -> None:
        p = event.payload if isinstance(event.payload, dict) else {}
        if p.get("type") == "response.created":
            self.opened = True
        if p.get("type") == "response.completed":
            self.listed = [
                ToolCall.from_text(i["name"], i["arguments"], i["call_id"])
                for i in p["response"]["output"]
                if i.get("type") == "function_call"
            ]
        if self.opened:
            super().feed(event)

    def close(self, error: str | None) -> Outcome:
        outcome = super().close(error)
        return replace(outcome, tool_calls=tuple(self.listed)) if self.from_output else outcome


def test_a_responses_stream_without_created_kills_a_client_that_waits_for_it() -> None:
    case_id = "openai-responses/parallel-2::D10-responses-without-created::s0"
    assert problems(case_id, SnapshotResponsesClient())[0] == "tool_calls: 2 expected, got 0"
    assert problems(case_id, ResponsesClient(index_fallback=True)) == []
    assert problems("openai-responses/parallel-2::original::s0", SnapshotResponsesClient()) == []


def test_a_bare_done_instead_of_completed_kills_a_client_reading_the_final_output() -> None:
    case_id = "openai-responses/parallel-2::D6-responses-ends-in-bare-done::s0"
    case = build_case(case_id)
    assert case.events[-1].payload == "[DONE]" and case.expected.state is State.CUT
    assert len(case.expected.tool_calls) == 2  # each item was done before the end
    found = problems(case_id, SnapshotResponsesClient(from_output=True))
    assert found[0] == "tool_calls: 2 expected, got 0"
    # What the done items say stands; that the turn ended without its terminal event is the state.
    assert problems(case_id, ResponsesClient(index_fallback=True)) == ["state: cut expected, got complete"]


def test_a_bare_done_after_completed_changes_nothing() -> None:
    case = build_case("openai-responses/parallel-2::D6-done-after-responses-terminal::s0")
    original = build_case("openai-responses/parallel-2::original::s0")
    assert case.expected == original.expected and case.events[-1].payload == "[DONE]"
    assert problems(case.id, ResponsesClient(index_fallback=True)) == []


# -- late deltas after a call's end (E3), AG-UI ---------------------------------------------------


class AgUiClient:
    """Joins `TOOL_CALL_ARGS` by `toolCallId`. `respect_end`: args for a call whose `TOOL_CALL_END`
    came are dropped (pydantic/pydantic-ai#4733's fix); otherwise they are appended."""

    def __init__(self, respect_end: bool) -> None:
        self.respect_end = respect_end
        self.calls: dict[str, dict[str, Any]] = {}
        self.ended: set[str] = set()

    def feed(self, event: Event) -> None:
        p = event.payload if isinstance(event.payload, dict) else {}
        kind, key = p.get("type"), str(p.get("toolCallId"))
        if kind == "TOOL_CALL_START":
            self.calls[key] = {"name": p["toolCallName"], "text": ""}
        elif kind == "TOOL_CALL_ARGS" and not (self.respect_end and key in self.ended):
            self.calls[key]["text"] += p["delta"]
        elif kind == "TOOL_CALL_END":
            self.ended.add(key)

    def close(self, error: str | None) -> Outcome:
        made = tuple(ToolCall.from_text(c["name"], c["text"], k) for k, c in self.calls.items())
        return Outcome(tool_calls=made, state=State.COMPLETE)


def test_late_args_after_an_ag_ui_call_end_kill_an_appending_client() -> None:
    case_id = "ag-ui/from-openai-chat-single-call::E3-stray-delta-after-done::s0"
    (line,) = problems(case_id, AgUiClient(respect_end=False))
    assert line.startswith("call 1: arguments") and "got invalid" in line and line.endswith('"}}')
    assert problems(case_id, AgUiClient(respect_end=True)) == []
    assert problems("ag-ui/from-openai-chat-single-call::original::s0", AgUiClient(respect_end=False)) == []


def test_late_input_after_an_ai_sdk_call_is_its_own_quirk() -> None:
    case = build_case("ai-sdk-ui/from-openai-chat-single-call::E3-stray-delta-after-done::s0")
    kinds = [e.payload.get("type") for e in case.events if isinstance(e.payload, dict)]
    assert kinds.index("tool-input-available") < len(kinds) - 1 - kinds[::-1].index("tool-input-delta")
    assert case.expected == build_case("ai-sdk-ui/from-openai-chat-single-call::original::s0").expected


# -- header and tail of one call under two indexes (A11 beyond OpenAI chat) ----------------------


class IndexedAnthropicClient:
    """Joins `input_json_delta` by the delta's `index`. `follow_start`: a delta at an index no block
    started goes to the one block open (vercel/ai PR #11771); otherwise it is dropped."""

    def __init__(self, follow_start: bool) -> None:
        self.follow_start = follow_start
        self.open: dict[int, dict[str, Any]] = {}
        self.done: list[ToolCall] = []
        self.text = ""
        self.finish: str | None = None

    def feed(self, event: Event) -> None:
        p = event.payload if isinstance(event.payload, dict) else {}
        kind = p.get("type")
        if kind == "content_block_delta" and p["delta"].get("type") == "text_delta":
            self.text += p["delta"]["text"]
        if kind == "content_block_start" and p["content_block"].get("type") == "tool_use":
            block = p["content_block"]
            self.open[p["index"]] = {"id": block["id"], "name": block["name"], "text": ""}
        elif kind == "content_block_delta" and p["delta"].get("type") == "input_json_delta":
            into: dict[str, Any] | None = self.open.get(p["index"])
            if into is None and self.follow_start and len(self.open) == 1:
                into = next(iter(self.open.values()))
            if into is not None:
                into["text"] += p["delta"]["partial_json"]
        elif kind == "content_block_stop" and p["index"] in self.open:
            b = self.open.pop(p["index"])
            self.done.append(ToolCall.from_text(b["name"], b["text"], b["id"]))
        elif kind == "message_delta":
            self.finish = p["delta"].get("stop_reason") or self.finish

    def close(self, error: str | None) -> Outcome:
        done = tuple(self.done)
        return Outcome(tool_calls=done, text=self.text, finish_reason=self.finish, state=State.COMPLETE)


def test_anthropic_deltas_under_the_next_index_kill_a_client_keyed_on_the_index_alone() -> None:
    case_id = "anthropic/parallel-calls::A11-continuations-under-the-next-index::s0"
    case = build_case(case_id)
    codes = {v.code for v in dialects.get("anthropic").invariants(case.events)}
    assert codes == {"anthropic.delta-outside-block"}
    found = problems(case_id, IndexedAnthropicClient(follow_start=False))
    assert found and all(line.startswith("call ") and "arguments" in line for line in found)
    assert problems(case_id, IndexedAnthropicClient(follow_start=True)) == []
    original = "anthropic/parallel-calls::original::s0"
    assert problems(original, IndexedAnthropicClient(follow_start=False)) == []


class OutputIndexResponsesClient(ResponsesClient):
    """Function calls keyed by `output_index` alone (agentgateway/agentgateway PR #1453's reader)."""

    def __init__(self) -> None:
        super().__init__(index_fallback=True)

    def feed(self, event: Event) -> None:
        p = event.payload if isinstance(event.payload, dict) else {}
        if p.get("type") == "response.function_call_arguments.delta":
            found = self.by_index.get(p["output_index"])
            if found is not None:
                found["text"] += p["delta"]
            return
        super().feed(event)


def test_responses_deltas_under_the_next_output_index_kill_a_client_keyed_on_it() -> None:
    case_id = "openai-responses/parallel-2::A11-continuations-under-the-next-index::s0"
    found = problems(case_id, OutputIndexResponsesClient())
    assert found and found[0].startswith("call 1: arguments") and found[0].endswith("got {}")
    assert problems(case_id, ResponsesClient(index_fallback=False)) == []
    assert problems("openai-responses/parallel-2::original::s0", OutputIndexResponsesClient()) == []


# -- the id as the word "null" (A12, Mistral) -----------------------------------------------------


class LastIdChatClient(ChatClient):
    """A later non-empty id replaces the call's (the Zed client before zed-industries/zed PR #53605)."""

    def feed(self, event: Event) -> None:
        payload = event.payload
        before = {k: c["id"] for k, c in self.calls.items()}
        super().feed(event)
        if not isinstance(payload, dict) or not payload.get("choices"):
            return
        for entry in (payload["choices"][0].get("delta") or {}).get("tool_calls") or []:
            if entry.get("id") and entry.get("index") in before:
                self.calls[entry["index"]]["id"] = entry["id"]


def test_a_null_word_id_kills_a_client_that_takes_a_later_id() -> None:
    case_id = "openai-chat/single-call::A12-null-word-id-on-continuations::s0"
    case = build_case(case_id)
    ids = [
        e["id"] for ev in case.events if isinstance(ev.payload, dict) and ev.payload.get("choices")
        for e in (ev.payload["choices"][0]["delta"].get("tool_calls") or []) if "id" in e
    ]  # fmt: skip
    assert ids[0].startswith("call_") and set(ids[1:]) == {"null"}
    (line,) = problems(case_id, LastIdChatClient())
    assert line.startswith("call 1: id") and line.endswith("got 'null'")
    assert problems(case_id, ChatClient()) == []
    assert problems("openai-chat/single-call::original::s0", LastIdChatClient()) == []


# -- a Gemini thought signature on the OpenAI-compatible endpoint, moved or repeated ----------------


class SigningChatClient(ChatClient):
    """Also reports each call's `extra_content.google.thought_signature` as its call part. `how`:
    `first` keeps the first one given on any fragment (earendil-works/pi PR #8590), `header` reads it
    only on the fragment that creates the call (pi PR #3234), `join` appends every piece."""

    def __init__(self, how: str) -> None:
        super().__init__()
        self.how = how
        self.signatures: dict[Any, str | None] = {}

    def feed(self, event: Event) -> None:
        payload = event.payload
        entries: list[dict[str, Any]] = []
        if isinstance(payload, dict) and payload.get("choices"):
            entries = (payload["choices"][0].get("delta") or {}).get("tool_calls") or []
        for entry in entries:
            key = entry.get("index")
            new = key not in self.calls
            piece = ((entry.get("extra_content") or {}).get("google") or {}).get("thought_signature")
            have = self.signatures.get(key)
            if self.how == "header":
                if new:
                    self.signatures[key] = piece
            elif self.how == "join":
                self.signatures[key] = (have or "") + piece if piece else have
            elif have is None:
                self.signatures[key] = piece
        super().feed(event)

    def close(self, error: str | None) -> Outcome:
        outcome = super().close(error)
        parts = tuple(Part(PartKind.CALL, signature=self.signatures.get(k)) for k in self.calls)
        return replace(outcome, parts=parts)


@pytest.mark.parametrize(
    ("scenario", "wrong", "says"),
    [
        ("signature-on-a-later-fragment", "header", "got None"),
        ("signature-on-every-fragment", "join", "got 'CpYBAY89"),
    ],
)
def test_a_moved_or_repeated_thought_signature_is_the_calls_once(
    scenario: str, wrong: str, says: str
) -> None:
    case_id = f"openai-chat/gemini-compat-thought-signature::{scenario}::s0"
    case = build_case(case_id)
    assert case.expected.parts[0].signature and case.expected.parts[0].signature.startswith("CpYBAY89")
    found = problems(case_id, SigningChatClient(wrong))
    assert found == [line for line in found if line.startswith("call part 1: signature")] and found
    assert says in found[0]
    assert problems(case_id, SigningChatClient("first")) == []
    original = "openai-chat/gemini-compat-thought-signature::original::s0"
    assert problems(original, SigningChatClient(wrong)) == []


# -- an Anthropic signature sent after the next block began (OpenRouter) ----------------------------


class PartsAnthropicClient:
    """The parts of a turn, calls and text as they came. `by_index`: thinking and signature deltas
    go to the block their index names; otherwise to the last part when it is reasoning, else to a
    new reasoning part (rikkahub's `appendChunk` before rikkahub/rikkahub PR #1076)."""

    def __init__(self, by_index: bool) -> None:
        self.by_index = by_index
        self.parts: list[dict[str, Any]] = []
        self.blocks: dict[int, dict[str, Any]] = {}
        self.calls: list[dict[str, Any]] = []
        self.text = ""
        self.finish: str | None = None

    def _reasoning(self, index: int) -> dict[str, Any]:
        if self.by_index and index in self.blocks:
            return self.blocks[index]
        if self.parts and self.parts[-1]["kind"] is PartKind.REASONING:
            return self.parts[-1]
        part = {"kind": PartKind.REASONING, "text": "", "signature": None}
        self.parts.append(part)
        return part

    def feed(self, event: Event) -> None:
        p = event.payload if isinstance(event.payload, dict) else {}
        kind, index = p.get("type"), p.get("index", -1)
        if kind == "content_block_start":
            block = p["content_block"]
            part: dict[str, Any] = {"kind": None, "text": "", "signature": None}
            if block["type"] == "thinking":
                part["kind"] = PartKind.REASONING
            elif block["type"] == "text":
                part["kind"] = PartKind.TEXT
            elif block["type"] == "tool_use":
                part["kind"] = PartKind.CALL
                self.calls.append({"id": block["id"], "name": block["name"], "text": ""})
            if part["kind"] is not None:
                self.parts.append(part)
                self.blocks[index] = part
        elif kind == "content_block_delta":
            delta = p["delta"]
            if delta["type"] == "thinking_delta":
                self._reasoning(index)["text"] += delta["thinking"]
            elif delta["type"] == "signature_delta":
                self._reasoning(index)["signature"] = delta["signature"]
            elif delta["type"] == "text_delta":
                self.blocks[index]["text"] += delta["text"]
                self.text += delta["text"]
            elif delta["type"] == "input_json_delta":
                self.calls[-1]["text"] += delta["partial_json"]
        elif kind == "message_delta":
            self.finish = p["delta"].get("stop_reason") or self.finish

    def close(self, error: str | None) -> Outcome:
        calls = tuple(ToolCall.from_text(c["name"], c["text"], c["id"]) for c in self.calls)
        parts = tuple(
            Part(p["kind"], p["text"] if p["kind"] is not PartKind.CALL else "", p["signature"])
            for p in self.parts
        )
        return Outcome(calls, text=self.text, finish_reason=self.finish, state=State.COMPLETE, parts=parts)


def test_a_signature_after_the_next_block_kills_a_client_signing_the_last_part() -> None:
    case_id = "anthropic/thinking-then-call::signature-after-the-next-block::s0"
    case = build_case(case_id)
    kinds = [(e.payload.get("type"), e.payload.get("index")) for e in case.events if e.payload != "[DONE]"]
    assert kinds.index(("content_block_stop", 0)) > kinds.index(("content_block_start", 1))
    assert case.expected.parts == build_case("anthropic/thinking-then-call::original::s0").expected.parts
    found = problems(case_id, PartsAnthropicClient(by_index=False))
    # The signature on an empty reasoning part of its own, after the text; the thinking unsigned.
    assert found[0].startswith("parts: 'reasoning, text") and found[0].endswith(", reasoning, call'")
    assert found[1].startswith("reasoning 1: text 'The user wants") and found[1].endswith("got ''")
    assert found[2].startswith("reasoning 1: unexpected 'The user wants")
    assert problems(case_id, PartsAnthropicClient(by_index=True)) == []
    original = "anthropic/thinking-then-call::original::s0"
    assert problems(original, PartsAnthropicClient(by_index=False)) == []


# -- a shell_call whose commands stream (response.shell_call_command.*) ---------------------------


class ShellClient:
    """Shell calls of a Responses stream. `per_command`: each command runs at its
    `shell_call_command.done` (the call is reported once one is done); otherwise the item runs at
    its `output_item.done`, with the action that event holds."""

    def __init__(self, per_command: bool) -> None:
        self.per_command = per_command
        self.items: dict[int, dict[str, Any]] = {}
        self.done: dict[int, ToolCall] = {}
        self.text = ""
        self.finish: str | None = None
        self.complete = False

    def feed(self, event: Event) -> None:
        p = event.payload if isinstance(event.payload, dict) else {}
        kind, index = p.get("type"), p.get("output_index", -1)
        if kind == "response.output_item.added" and p["item"].get("type") == "shell_call":
            self.items[index] = {"item": p["item"], "commands": []}
        elif kind == "response.shell_call_command.done" and self.per_command:
            entry = self.items[index]
            entry["commands"].append(p["command"])
            action = {**entry["item"]["action"], "commands": list(entry["commands"])}
            self.done[index] = ToolCall(None, {"action": action}, entry["item"]["call_id"], kind="shell_call")
        elif kind == "response.output_item.done" and p["item"].get("type") == "shell_call":
            item = p["item"]
            self.done[index] = ToolCall(None, {"action": item["action"]}, item["call_id"], kind="shell_call")
        elif kind == "response.output_text.delta":
            self.text += p["delta"]
        elif kind == "response.completed":
            self.finish, self.complete = p["response"]["status"], True

    def close(self, error: str | None) -> Outcome:
        state = State.COMPLETE if self.complete else State.CUT
        calls = tuple(self.done.values())
        return Outcome(calls, text=self.text, finish_reason=self.finish, state=state, error=error)


def test_a_shell_call_cut_between_its_streamed_commands_runs_nothing() -> None:
    cassette = "openai-responses/shell-call-streamed-commands"
    cut = build_case(f"{cassette}::cut-at-every-event::s0::e30")  # after the first command's .done
    assert cut.events[-1].payload["type"] == "response.shell_call_command.done"
    assert cut.expected.tool_calls == () and cut.expected.state is State.CUT
    found = problems(cut.id, ShellClient(per_command=True))
    assert found[0] == "tool_calls: 0 expected, got 1"  # the first command, run on a cut turn
    assert problems(cut.id, ShellClient(per_command=False)) == []
    whole = build_case(f"{cassette}::original::s0")
    (call,) = whole.expected.tool_calls
    assert call.kind == "shell_call" and len(call.arguments["action"]["commands"]) == 2
    assert problems(whole.id, ShellClient(per_command=False)) == []
