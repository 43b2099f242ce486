"""Anthropic Messages, strictly (docs.anthropic.com/en/docs/build-with-claude/streaming).

- `message_start`, then content blocks: `content_block_start` (its `index` and `content_block`),
  `content_block_delta`s with the same index, `content_block_stop`; then `message_delta` (the
  `stop_reason`) and `message_stop`, which ends the stream.
- A `tool_use` block is a client call: its `id` and `name` are in `content_block_start`, its
  input is the `input_json_delta.partial_json` pieces joined (the start's `input` when none came).
  It is final at its `content_block_stop`. `server_tool_use` and other blocks are not client
  calls; `text_delta` pieces of `text` blocks are the text.
- An `error` event is an in-band error; `ping` and unknown event types are ignored, as the docs
  ask. A stream that ends before `message_stop` is cut.
"""

from __future__ import annotations

import json
from typing import Any

from harness import Event, EventAccumulator, Outcome, State, ToolCall


class StrictAnthropic(EventAccumulator):
    def __init__(self, dialect: str) -> None:
        self.blocks: dict[int, dict[str, Any]] = {}
        self.order: list[int] = []  # tool_use block indexes, in start order
        self.stopped: set[int] = set()
        self.text = ""
        self.finish: str | None = None
        self.done = False
        self.error: str | None = None
        self.usage: Any = None

    def feed(self, event: Event) -> None:
        payload = event.payload
        if self.done or not isinstance(payload, dict):
            return
        kind = payload.get("type")
        if kind == "content_block_start":
            block = payload.get("content_block") or {}
            index = payload["index"]
            self.blocks[index] = {
                "type": block.get("type"),
                "id": block.get("id"),
                "name": block.get("name"),
                "input": block.get("input"),
                "json": "",
            }
            if block.get("type") == "tool_use":
                self.order.append(index)
            if block.get("type") == "text":
                self.text += block.get("text") or ""
        elif kind == "content_block_delta":
            block = self.blocks.get(payload.get("index"))
            delta = payload.get("delta") or {}
            if block is None:
                return
            if delta.get("type") == "input_json_delta":
                block["json"] += delta.get("partial_json") or ""
            elif delta.get("type") == "text_delta" and block["type"] == "text":
                self.text += delta.get("text") or ""
        elif kind == "content_block_stop":
            self.stopped.add(payload.get("index"))
        elif kind == "message_delta":
            delta = payload.get("delta") or {}
            if delta.get("stop_reason") is not None:
                self.finish = delta["stop_reason"]
            self.usage = payload.get("usage", self.usage)
        elif kind == "message_stop":
            self.done = True
        elif kind == "error":
            self.error = self.error or json.dumps(payload.get("error"))

    def close(self, error: str | None) -> Outcome:
        if self.done:
            state, message = State.COMPLETE, None
        elif self.error is not None:
            state, message = State.ERROR, self.error
        else:
            state, message = State.CUT, error or "the stream ended before message_stop"
        calls = []
        for index in self.order:
            if index not in self.stopped:
                continue  # a block never stopped was never final
            block = self.blocks[index]
            if block["json"]:
                calls.append(ToolCall.from_text(block["name"], block["json"], block["id"]))
            else:
                calls.append(ToolCall(id=block["id"], name=block["name"], arguments=block["input"] or {}))
        return Outcome(
            tool_calls=tuple(calls),
            text=self.text,
            finish_reason=self.finish,
            state=state,
            error=message,
            usage=self.usage,
        )
