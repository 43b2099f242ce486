"""Accumulators the way an agent's own code often writes them, for the README's examples.

`IndexOnly` keys OpenAI chat fragments by `index` alone and concatenates every string field, as
langchain-core's `merge_lists` did before 1.2.14. It is right on what OpenAI itself sends and
wrong on gateways that put every parallel call at index 0: the harness shows where.
"""

from __future__ import annotations

from typing import Any

from harness import Event, Outcome, State, ToolCall


class IndexOnly:
    """Event level: made fresh for each case as `IndexOnly(dialect)`, fed its events, then closed."""

    def __init__(self, dialect: str) -> None:
        self.dialect = dialect
        self.calls: dict[Any, dict[str, str]] = {}
        self.text: list[str] = []
        self.finish: str | None = None

    def feed(self, event: Event) -> None:
        payload = event.payload
        if not isinstance(payload, dict):
            return  # `[DONE]`
        for choice in payload.get("choices") or []:
            delta = choice.get("delta") or {}
            self.text.append(delta.get("content") or "")
            for fragment in delta.get("tool_calls") or []:
                call = self.calls.setdefault(fragment.get("index"), {"id": "", "name": "", "args": ""})
                function = fragment.get("function") or {}
                call["id"] += fragment.get("id") or ""
                call["name"] += function.get("name") or ""
                call["args"] += function.get("arguments") or ""
            self.finish = choice.get("finish_reason") or self.finish

    def close(self, error: str | None) -> Outcome:
        calls = tuple(ToolCall.from_text(c["name"], c["args"], c["id"] or None) for c in self.calls.values())
        state = State.COMPLETE if self.finish else State.CUT
        return Outcome(calls, "".join(self.text), self.finish, state, error)
