"""The langchain-openai adapter as its library's users have it: custom (freeform) tools bound with
`custom_tool` and their calls read back from langchain's `{"__arg1": input}`, Responses action
items (`apply_patch_call`) read from the message's content, and a chat case with a custom tool
skipped with the reason (langchain-openai sends custom tools to the Responses API only)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from harness.accumulators import langchain_openai as adapter
from harness.accumulators import resolve
from harness.accumulators.client import replay_transport
from harness.cassettes.outcome import CUSTOM, Outcome, State, ToolCall, diff
from harness.matrix.judging import judge
from harness.matrix.selection import build_case
from harness.oracle.verdict import Verdict

pytest.importorskip("langchain_openai")


class Heard:
    """The case's own replay transport, keeping each request body the library sent."""

    def __init__(self, case: Any) -> None:
        self.transport = replay_transport(case)
        self.bodies: list[Any] = []

    def handle_request(self, request: Any) -> Any:
        self.bodies.append(json.loads(request.read() or b"null"))
        return self.transport.handle_request(request)

    async def handle_async_request(self, request: Any) -> Any:
        self.bodies.append(json.loads(await request.aread() or b"null"))
        return await self.transport.handle_async_request(request)

    def close(self) -> None:
        self.transport.close()

    async def aclose(self) -> None:
        await self.transport.aclose()


def test_a_custom_tool_is_bound_as_a_custom_tool() -> None:
    case = build_case("openai-responses/custom-tool::original::s0")
    heard = Heard(case)
    adapter.run(heard, case)
    assert [t["type"] for t in heard.bodies[0]["tools"]] == ["custom"]
    assert heard.bodies[0]["tools"][0]["name"] == "run_shell"
    assert heard.bodies[0]["tools"][0]["format"] == {"type": "text"}


def test_a_custom_call_comes_back_with_its_raw_input() -> None:
    case = build_case("openai-responses/custom-tool::original::s0")
    outcome = resolve("langchain-openai").run(case)
    assert outcome.tool_calls[0].kind == CUSTOM
    assert diff(case.expected, outcome) == []


def test_an_apply_patch_item_is_a_call_with_its_operation() -> None:
    case = build_case("openai-responses/apply-patch::original::s0")
    outcome = resolve("langchain-openai").run(case)
    assert [c.kind for c in outcome.tool_calls] == ["apply_patch_call"]
    assert diff(case.expected, outcome) == []


def test_a_chat_case_offering_a_custom_tool_is_skipped_with_the_reason() -> None:
    case = build_case("openai-chat/custom-tool::original::s0")
    result = judge(resolve("langchain-openai"), "langchain-openai", case)
    assert result.verdict is Verdict.SKIPPED
    assert result.error == f"langchain-openai: {adapter.CHAT_CUSTOM}"


def test_an_action_item_takes_its_place_among_the_calls() -> None:
    from langchain_core.messages import AIMessageChunk

    message = AIMessageChunk(
        content=[
            {"type": "function_call", "name": "a", "arguments": "{}", "call_id": "c1", "index": 0},
            {"type": "apply_patch_call", "call_id": "c2", "operation": {"path": "p"}, "index": 1},
            {"type": "custom_tool_call", "name": "sh", "call_id": "c3", "input": "ls", "index": 2},
        ],
        tool_call_chunks=[
            {"name": "a", "args": "{}", "id": "c1", "index": 0, "type": "tool_call_chunk"},
            {"name": "sh", "args": '{"__arg1": "ls"}', "id": "c3", "index": 2, "type": "tool_call_chunk"},
        ],
    )
    read = Outcome(
        tool_calls=(ToolCall("a", {}, "c1"), ToolCall("sh", {"__arg1": "ls"}, "c3")), state=State.COMPLETE
    )
    assert adapter._with_items(read, message).tool_calls == (
        ToolCall("a", {}, "c1"),
        ToolCall(None, {"operation": {"path": "p"}}, "c2", kind="apply_patch_call"),
        ToolCall.freeform("sh", "ls", "c3"),
    )


def test_a_function_taking_one_argument_named_like_the_convention_stays_a_function() -> None:
    from langchain_core.messages import AIMessageChunk

    message = AIMessageChunk(
        content=[{"type": "function_call", "name": "f", "call_id": "c1", "index": 0}],
        tool_call_chunks=[{"name": "f", "args": '{"__arg1": "x"}', "id": "c1", "index": 0}],
    )
    read = Outcome(tool_calls=(ToolCall("f", {"__arg1": "x"}, "c1"),))
    assert adapter._with_items(read, message).tool_calls == read.tool_calls
