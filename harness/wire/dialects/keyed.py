"""Calls keyed by their id on every part: what the frontend streams share (the AI SDK UI message
stream's `toolCallId`, AG-UI's `toolCallId`), where no index or block number routes a fragment.

`KeyedCalls` holds the calls in order of first appearance; each dialect says which event starts,
continues or ends which id, and this module keeps the bookkeeping the same for both. The keying
rules the two references (and their `fragments`) share: a call is keyed by its `toolCallId` on
every event, calls are numbered by first appearance, and a start for an id already known starts
nothing new.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from harness.cassettes.outcome import ToolCall
from harness.wire.dialects.base import MISSING


@dataclass
class KeyedCall:
    """One call: its id, name, argument text in pieces, and whether its end came. `whole` is the
    final input when the end carried it (AI SDK `tool-input-available`'s `input`); `joined` is set
    when the call was first seen mid-arguments (a resumed stream): its pieces miss their start."""

    id: str
    name: str | None = None
    pieces: list[str] = field(default_factory=list)
    ended: bool = False
    whole: Any = MISSING
    invalid: bool = False
    joined: bool = False

    def tool_call(self) -> ToolCall:
        if self.whole is not MISSING:
            if self.invalid:
                text = self.whole if isinstance(self.whole, str) else json.dumps(self.whole)
                return ToolCall(self.name, text, self.id, invalid=True)
            return ToolCall(self.name, self.whole, self.id)
        return ToolCall.from_text(self.name, "".join(self.pieces), self.id)


class KeyedCalls:
    """The calls of a stream by id, in order of first appearance."""

    def __init__(self) -> None:
        self.calls: list[KeyedCall] = []
        self.by_id: dict[str, int] = {}

    def number(self, call_id: Any) -> int | None:
        return self.by_id.get(call_id) if isinstance(call_id, str) else None

    def open(self, call_id: str, name: str | None) -> int:
        """The call `call_id` starts (a start that repeats a known id starts nothing new)."""
        known = self.by_id.get(call_id)
        if known is not None:
            return known
        self.calls.append(KeyedCall(call_id, name or None))
        self.by_id[call_id] = len(self.calls) - 1
        return len(self.calls) - 1

    def final(self) -> tuple[ToolCall, ...]:
        return tuple(call.tool_call() for call in self.calls if call.ended)
