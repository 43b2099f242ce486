"""`langchain-core`: `AIMessageChunk` addition, fed chunks built the way the provider packages build them.

Event level, so any installed langchain-core (0.3 to current) is tested without a provider
package. Each wire event becomes the `AIMessageChunk` that langchain-openai
(`_convert_delta_to_message_chunk`: choice 0 only, `tool_call_chunk(name, args, id, index)` with
the `index` as given, None where an entry lacks it: it reads the SDK's `model_dump()`) or langchain-anthropic
(`_make_message_chunk_from_anthropic_event`: a `tool_use` block start gives name, id and args "",
an `input_json_delta` gives args at the block index while the last started block is a tool_use)
would make of it; the chunks are summed with `+`. The outcome is the summed message's
`tool_calls` and `invalid_tool_calls`, in the order of its `tool_call_chunks`.
Where the SDK underneath would raise (an in-band error, a cut), or langchain itself raises (an
`AIMessageChunk` that fails validation), langchain's `stream` raises: the outcome is that error
with the text and finish reason streamed so far and no call (`raised_outcome`).
Needs `pip install 'toolstream-harness[langchain]'`.
"""

from __future__ import annotations

import json
from typing import Any

from harness.accumulators.base import EventAccumulator
from harness.accumulators.client import raised, raised_error, require
from harness.accumulators.event_level import EventLevel
from harness.cassettes.outcome import Outcome, State, ToolCall
from harness.errors import NotApplicable
from harness.wire.dialects import Event

__all__ = ["LangchainCoreAccumulator", "accumulator", "outcome_of", "raised_outcome"]

NAME = "langchain-core"
DIALECTS = ("openai-chat", "anthropic")
# Block types whose start langchain-anthropic turns into a content block of its own.
_ANTHROPIC_STRUCTURED = ("tool_result", "tool_use", "document", "redacted_thinking")


def accumulator() -> EventLevel:
    """The adapter, after checking langchain-core is installed."""
    require("langchain_core", "langchain")
    return EventLevel(LangchainCoreAccumulator, NAME, dialects=DIALECTS)


class LangchainCoreAccumulator(EventAccumulator):
    """Sums the `AIMessageChunk`s a langchain provider package would yield for one stream."""

    def __init__(self, dialect: str) -> None:
        if dialect not in DIALECTS:
            raise NotApplicable(f"{NAME} reads {' and '.join(DIALECTS)} streams, not {dialect}")
        messages = require("langchain_core.messages", "langchain")
        tool = require("langchain_core.messages.tool", "langchain")
        self._chunk_class = messages.AIMessageChunk
        self._tool_call_chunk = tool.tool_call_chunk
        self.dialect = dialect
        self.total: Any = None
        self.error: str | None = None
        self._block_start: dict[str, Any] | None = None  # the last content_block_start's block

    def feed(self, event: Event) -> None:
        if self.error is not None:
            return  # the SDK underneath raised: nothing after it reaches langchain
        payload = event.payload
        try:
            chunk = (
                self._openai(payload)
                if self.dialect == "openai-chat"
                else self._anthropic(event.name, payload)
            )
            if chunk is not None:
                self.total = chunk if self.total is None else self.total + chunk
        except Exception as exc:  # langchain raised building or adding a chunk: `client.raised`
            raised(exc)
            self.error = raised_error(exc)

    def close(self, error: str | None) -> Outcome:
        # Where the SDK underneath raises, `BaseChatModel.stream` re-raises: its user gets no message.
        if self.error is not None:
            return raised_outcome(self.total, State.ERROR, self.error)
        if error is not None:
            return raised_outcome(self.total, State.CUT, error)
        return outcome_of(self.total, State.COMPLETE, None)

    # -- langchain-openai ---------------------------------------------------------------------

    def _openai(self, payload: Any) -> Any:
        if not isinstance(payload, dict):
            return None  # `[DONE]`: the SDK stops reading
        if payload.get("error"):
            self.error = _error_message(payload["error"])
            return None
        choices = payload.get("choices") or []
        if not choices:
            return self._chunk_class(content="")
        choice = choices[0]
        delta = choice.get("delta")
        if delta is None:
            return None
        tool_call_chunks = []
        if raw_tool_calls := delta.get("tool_calls"):
            if any(isinstance(rtc, dict) and rtc.get("custom") is not None for rtc in raw_tool_calls):
                # langchain-openai refuses a custom tool in the request (`bind_tools`), and reads
                # `function` only: a freeform call never reaches langchain-core as a chunk.
                raise NotApplicable(f"{NAME}: a custom (freeform) tool call reaches it as no chunk")
            # langchain-openai reads the SDK's `chunk.model_dump()`, where a fragment the gateway
            # sent without `index` has `index: None`: each such fragment is a tool call chunk of
            # its own, which `+` never merges (A3).
            tool_call_chunks = [
                self._tool_call_chunk(
                    name=(rtc.get("function") or {}).get("name"),
                    args=(rtc.get("function") or {}).get("arguments"),
                    id=rtc.get("id"),
                    index=rtc.get("index"),
                )
                for rtc in raw_tool_calls
                if isinstance(rtc, dict)
            ]
        metadata = {"finish_reason": choice["finish_reason"]} if choice.get("finish_reason") else {}
        return self._chunk_class(
            content=delta.get("content") or "",
            id=delta.get("id"),
            tool_call_chunks=tool_call_chunks,
            response_metadata=metadata,
        )

    # -- langchain-anthropic ------------------------------------------------------------------

    def _anthropic(self, name: str | None, payload: Any) -> Any:
        if not isinstance(payload, dict):
            return None
        kind = payload.get("type") or name
        if kind == "error" or name == "error":
            self.error = _error_message(payload.get("error", payload))
            return None
        if kind == "message_start":
            model = (payload.get("message") or {}).get("model")
            return self._chunk_class(content=[], response_metadata={"model_name": model} if model else {})
        if kind == "content_block_start":
            return self._anthropic_start(payload)
        if kind == "content_block_delta":
            return self._anthropic_delta(payload)
        if kind == "message_delta":
            delta = payload.get("delta") or {}
            return self._chunk_class(
                content=[],
                response_metadata={
                    "stop_reason": delta.get("stop_reason"),
                    "stop_sequence": delta.get("stop_sequence"),
                },
            )
        return None  # ping, content_block_stop, message_stop

    def _anthropic_start(self, payload: dict[str, Any]) -> Any:
        block = dict(payload.get("content_block") or {})
        block_type = str(block.get("type", ""))
        index = payload.get("index")
        if any(word in block_type for word in _ANTHROPIC_STRUCTURED):
            if block.get("caller", "") is None:
                block.pop("caller")
            block["index"] = index
            chunks = []
            if block_type == "tool_use":
                given = block.get("input")
                args = json.dumps(given) if given and isinstance(given, dict) else ""
                chunks = [
                    self._tool_call_chunk(index=index, id=block.get("id"), name=block.get("name"), args=args)
                ]
            self._block_start = block
            return self._chunk_class(content=[block], tool_call_chunks=chunks)
        if block_type in ("text", "thinking"):
            self._block_start = block
            opening = (
                block.get("text") if block_type == "text" else block.get("thinking") or block.get("signature")
            )
            if opening:
                block["index"] = index
                if block.get("citations", "") is None:
                    block.pop("citations")
                return self._chunk_class(content=[block])
        return None

    def _anthropic_delta(self, payload: dict[str, Any]) -> Any:
        delta = dict(payload.get("delta") or {})
        index = payload.get("index")
        delta_type = delta.get("type")
        delta["index"] = index
        if delta_type in ("text_delta", "citations_delta"):
            delta["type"] = "text"
            if "citation" in delta:
                delta["citations"] = [delta.pop("citation")]
            return self._chunk_class(content=[delta])
        if delta_type in ("thinking_delta", "signature_delta"):
            delta["type"] = "thinking"
            if delta_type == "signature_delta":
                delta.setdefault("thinking", "")
            return self._chunk_class(content=[delta])
        if delta_type == "input_json_delta":
            chunks = []
            if self._block_start is not None and self._block_start.get("type") == "tool_use":
                chunks = [
                    self._tool_call_chunk(index=index, id=None, name=None, args=delta.get("partial_json"))
                ]
            return self._chunk_class(content=[delta], tool_call_chunks=chunks)
        return None


def _error_message(error: Any) -> str:
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return str(error["message"])
    return json.dumps(error) if not isinstance(error, str) else error


def outcome_of(message: Any, state: State, error: str | None) -> Outcome:
    """The outcome of a summed `AIMessageChunk` (None: nothing arrived)."""
    if message is None:
        return Outcome(state=state, error=error)
    parse = require("langchain_core.utils.json", "langchain").parse_partial_json
    valid = iter(message.tool_calls)
    invalid = iter(message.invalid_tool_calls)
    calls: list[ToolCall] = []
    for chunk in message.tool_call_chunks:
        # init_tool_calls made each chunk a tool call when its args parse to a dict, else an invalid call
        try:
            args = parse(chunk["args"]) if chunk["args"] else {}
            is_valid = isinstance(args, dict)
        except Exception:
            is_valid = False
        if is_valid:
            found = next(valid, None)
            if found is not None:
                calls.append(ToolCall(name=found["name"], arguments=found["args"], id=found["id"]))
        else:
            bad = next(invalid, None)
            if bad is not None:
                calls.append(
                    ToolCall(name=bad["name"], arguments=bad["args"] or "", id=bad["id"], invalid=True)
                )
    metadata = message.response_metadata or {}
    finish = metadata.get("finish_reason") or metadata.get("stop_reason") or metadata.get("status")
    return Outcome(
        tool_calls=tuple(calls),
        text=_text(message.content),
        finish_reason=finish if isinstance(finish, str) else None,
        state=state,
        error=error,
    )


def raised_outcome(message: Any, state: State, error: str) -> Outcome:
    """What the user of a langchain stream that raised has: the text and finish reason of the chunks
    it was given, and no tool call. `BaseChatModel.stream` ends in `except BaseException: ...
    run_manager.on_llm_error(e, ...); raise`, so no final message exists, and the summed chunks'
    `tool_calls` are previews: langchain marks the end of a message with a `chunk_position="last"`
    chunk ("`tool_call_chunks` in message content will be parsed into `tool_calls`"), yielded only
    after `self._stream` ended without raising."""
    streamed = outcome_of(message, state, error)
    return Outcome(text=streamed.text, finish_reason=streamed.finish_reason, state=state, error=error)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(
        block["text"]
        for block in content or []
        if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str)
    )
