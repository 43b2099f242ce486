"""The accumulator equivalent to agent.py's loop, at event level: the Agents SDK's own
chat-completions stream handler (`ChatCmplStreamHandler`, what `Runner` uses over chat
completions) fed the case's decoded chunks, its function calls read from `response.completed`.

    toolstream check --accumulator accumulator:AgentsChatStream   # from this folder
"""

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from agents.models.chatcmpl_stream_handler import ChatCmplStreamHandler
from openai._models import construct_type  # how the SDK's own stream builds chunks: no validation
from openai.types.chat import ChatCompletionChunk
from openai.types.responses import Response

from harness import Outcome, State, ToolCall


class AgentsChatStream:
    def __init__(self, dialect: str) -> None:
        if dialect != "openai-chat":
            from harness import NotApplicable

            raise NotApplicable("the Agents SDK's chat handler reads openai-chat only")
        self.chunks: list[dict[str, Any]] = []
        self.finish_reason: str | None = None

    def feed(self, event: Any) -> None:
        if isinstance(event.payload, dict):
            self.chunks.append(event.payload)
            for choice in event.payload.get("choices") or []:
                self.finish_reason = choice.get("finish_reason") or self.finish_reason

    def close(self, error: str | None) -> Outcome:
        if error is not None:
            return Outcome(state=State.CUT, error=error)  # the Runner raises: nothing runs
        return asyncio.run(self._outcome())

    async def _outcome(self) -> Outcome:
        async def stream() -> AsyncIterator[ChatCompletionChunk]:
            for chunk in self.chunks:
                if "error" in chunk:
                    raise RuntimeError(f"in-band error: {chunk['error']}")
                yield construct_type(type_=ChatCompletionChunk, value=chunk)

        response = Response(
            id="r", created_at=0, model="m", object="response", output=[], tool_choice="auto",
            tools=[], parallel_tool_calls=False,
        )  # fmt: skip
        final: Any = None
        async for event in ChatCmplStreamHandler.handle_stream(response, stream()):  # type: ignore[arg-type]
            if event.type == "response.completed":
                final = event.response
        if final is None:
            return Outcome(state=State.CUT, error="no response.completed")
        calls, text = [], ""
        for item in final.output:
            if item.type == "function_call":
                calls.append(ToolCall.from_text(item.name, item.arguments, item.call_id))
            elif item.type == "message":
                text += "".join(getattr(part, "text", "") for part in item.content)
        return Outcome(tool_calls=tuple(calls), text=text, finish_reason=self.finish_reason)
