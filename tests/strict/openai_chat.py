"""OpenAI Chat Completions, strictly (platform.openai.com/docs/api-reference/chat-streaming).

- A chunk's `choices[]` are keyed by `choices[].index`; the outcome is choice 0's.
- `delta.tool_calls[]` are keyed by `index`; `id`, `type` and `function.name` come on a call's
  first fragment, `function.arguments` pieces are concatenated. A `type: custom` call keeps its
  name and raw input under `custom` (platform.openai.com/docs/guides/function-calling#custom-tools;
  the streamed shape of openai/openai-python#2530): its input is text, never JSON.
- `delta.content` pieces are the text.
- Choice 0's `finish_reason` ends its message: every call it holds is final there.
- `data: [DONE]` ends the stream. A chunk with a non-null `error` (what openai-python raises as
  `APIError`) is an in-band error. Anything else that ends the stream is a cut.
"""

from __future__ import annotations

from typing import Any

from harness import Event, EventAccumulator, Outcome, State, ToolCall


class StrictChat(EventAccumulator):
    def __init__(self, dialect: str) -> None:
        self.calls: dict[int, dict[str, str]] = {}
        self.text = ""
        self.finish: str | None = None
        self.final = False  # choice 0's finish_reason arrived: every call is final
        self.done = False
        self.error: str | None = None
        self.usage: Any = None

    def feed(self, event: Event) -> None:
        payload = event.payload
        if self.done:
            return  # nothing after [DONE] is part of the stream
        if payload == "[DONE]":
            self.done = True
            return
        if not isinstance(payload, dict):
            return
        if payload.get("error") is not None:
            self.error = self.error or str(payload["error"])
            return
        if payload.get("usage"):
            self.usage = payload["usage"]
        for choice in payload.get("choices") or []:
            if choice.get("index") != 0:
                continue
            delta = choice.get("delta") or {}
            self.text += delta.get("content") or ""
            for fragment in delta.get("tool_calls") or []:
                if not isinstance(fragment.get("index"), int):
                    continue  # the documented key is missing: nothing says which call this continues
                call = self.calls.setdefault(
                    fragment["index"], {"id": "", "name": "", "args": "", "custom": ""}
                )
                if fragment.get("type") == "custom":
                    call["custom"] = "yes"
                function = fragment.get("custom") if call["custom"] else fragment.get("function")
                function = function or {}
                if call["custom"] and isinstance(function.get("input"), str):
                    call["args"] += function["input"]
                if fragment.get("id") and not call["id"]:
                    call["id"] = fragment["id"]
                if function.get("name") and not call["name"]:
                    call["name"] = function["name"]
                if isinstance(function.get("arguments"), str):  # documented as a string of JSON
                    call["args"] += function["arguments"]
            if choice.get("finish_reason") is not None:
                self.finish = choice["finish_reason"]
                self.final = True

    def close(self, error: str | None) -> Outcome:
        if self.error is not None and not self.done:
            state, message = State.ERROR, self.error
        elif self.done:
            state, message = State.COMPLETE, None
        else:
            state, message = State.CUT, error or "the stream ended before data: [DONE]"
        calls = [c for _, c in sorted(self.calls.items())] if self.final or self.done else []
        return Outcome(
            tool_calls=tuple(
                ToolCall.freeform(c["name"] or None, c["args"], c["id"] or None)
                if c["custom"]
                else ToolCall.from_text(c["name"] or None, c["args"], c["id"] or None)
                for c in calls
            ),
            text=self.text,
            finish_reason=self.finish,
            state=state,
            error=message,
            usage=self.usage,
        )
