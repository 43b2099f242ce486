"""The follow-up oracle's reader: from a request body, the assistant turn a client sent back.

Every agent loop echoes the assistant's tool calls (id, name, arguments) to the provider with the
results of running them. How each provider's request carries them is the dialect's knowledge
(`StandingIn.read_followup` in each dialect module); here is only the parsing of the body and
the dispatch by dialect.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from harness.wire import dialects
from harness.wire.dialects.requesting import StandingIn, ToolResult, Turn

__all__ = ["ToolResult", "Turn", "read_followup", "requesting"]


def requesting(dialect: str) -> StandingIn:
    """The dialect's `StandingIn` role (every shipped dialect has it)."""
    found = dialects.get(dialect)
    if not isinstance(found, StandingIn):
        raise TypeError(f"dialect {dialect!r} cannot stand in for its provider (no Requesting role)")
    return found


def read_followup(dialect: str, body: Any) -> Turn | None:
    """The turn a request body of `dialect` carries back, or None when it is not a follow-up."""
    if isinstance(body, (bytes, str)):
        try:
            body = json.loads(body)
        except ValueError:
            return None
    if not isinstance(body, Mapping):
        return None
    return requesting(dialect).read_followup(body)
