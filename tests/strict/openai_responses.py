"""OpenAI Responses, strictly (platform.openai.com/docs/api-reference/responses-streaming).

- Items are added by `response.output_item.added` (`output_index`, `item`) and finished by
  `response.output_item.done`, which carries the whole item. A `function_call` item is a client
  call: `call_id` is its id, `name` its name; `response.function_call_arguments.delta` (by
  `item_id`) stream its arguments and `response.function_call_arguments.done` gives them whole.
  A `custom_tool_call` item is a client call too, its raw `input` streamed by
  `response.custom_tool_call_input.delta` and given whole by its `.done`: text, never JSON.
  `apply_patch_call` and `shell_call` items are client calls whose item says what to do (its
  `operation`, `action`). Hosted tool items (`web_search_call`, `mcp_call` ...) are not client calls.
- A call is final at its `response.output_item.done`, and is what that item says.
- `response.output_text.delta` pieces are the text.
- `response.completed` and `response.incomplete` end the stream (the response's `status` is the
  finish reason); `response.failed` and an `error` event are in-band errors. A stream that ends
  before any of them is cut.
"""

from __future__ import annotations

import json
from typing import Any

from harness import Event, EventAccumulator, Outcome, State, ToolCall

_END = {"response.completed", "response.incomplete"}
_ACTIONS = {"shell_call", "local_shell_call", "apply_patch_call", "computer_call"}
_CLIENT = {"function_call", "custom_tool_call", *_ACTIONS}


class StrictResponses(EventAccumulator):
    def __init__(self, dialect: str) -> None:
        self.items: dict[str, dict[str, Any]] = {}  # function_call items by item id, in added order
        self.done_items: dict[str, dict[str, Any]] = {}
        self.text = ""
        self.finish: str | None = None
        self.ended = False
        self.error: str | None = None
        self.usage: Any = None

    def feed(self, event: Event) -> None:
        payload = event.payload
        if self.ended or not isinstance(payload, dict):
            return
        kind = payload.get("type")
        item = payload.get("item") or {}
        if kind == "response.output_item.added" and item.get("type") == "function_call":
            self.items[item.get("id")] = {"id": item.get("call_id"), "name": item.get("name"), "args": ""}
        elif kind == "response.function_call_arguments.delta" and payload.get("item_id") in self.items:
            self.items[payload["item_id"]]["args"] += payload.get("delta") or ""
        elif kind == "response.function_call_arguments.done" and payload.get("item_id") in self.items:
            self.items[payload["item_id"]]["args"] = payload.get("arguments") or ""
        elif kind == "response.output_item.done" and item.get("type") in _CLIENT:
            self.done_items[item.get("id")] = {
                "id": item.get("call_id"),
                "name": item.get("name"),
                "args": item.get("input" if item.get("type") == "custom_tool_call" else "arguments") or "",
                "type": item.get("type"),
                "item": item,
            }
            self.items.setdefault(item.get("id"), self.done_items[item.get("id")])
        elif kind == "response.output_text.delta":
            self.text += payload.get("delta") or ""
        elif kind in _END or kind == "response.failed":
            response = payload.get("response") or {}
            self.finish = response.get("status")
            self.usage = response.get("usage")
            self.ended = True
            if kind == "response.failed":
                self.error = json.dumps(response.get("error"))
        elif kind == "error":
            self.error = self.error or str(payload.get("message") or payload.get("code"))

    def close(self, error: str | None) -> Outcome:
        if self.error is not None:
            state, message = State.ERROR, self.error
        elif self.ended:
            state, message = State.COMPLETE, None
        else:
            state, message = State.CUT, error or "the stream ended before response.completed"
        calls = [self.done_items[key] for key in self.items if key in self.done_items]
        return Outcome(
            tool_calls=tuple(_call(c) for c in calls),
            text=self.text,
            finish_reason=self.finish,
            state=state,
            error=message,
            usage=self.usage,
        )


def _call(c: dict[str, Any]) -> ToolCall:
    if c["type"] == "custom_tool_call":
        return ToolCall.freeform(c["name"], c["args"], c["id"])
    if c["type"] in _ACTIONS:
        what = {k: v for k, v in c["item"].items() if k not in ("id", "type", "status", "call_id")}
        return ToolCall(None, what, c["id"], kind=c["type"])
    return ToolCall.from_text(c["name"], c["args"], c["id"])
