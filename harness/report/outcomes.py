"""An outcome as terminal lines, the one way `show` and `explain` write it: a headline (state,
finish reason, how many calls), each call as its name and arguments (marked INVALID where they
are not JSON), the text and the error; every value escaped and shortened."""

from __future__ import annotations

import json

from harness.cassettes.outcome import Outcome, ToolCall
from harness.text.escape import terminal_line as one_line
from harness.text.terminal import shorten, table

__all__ = ["arguments_text", "call_text", "headline", "outcome_lines"]


def headline(outcome: Outcome) -> str:
    """`state complete, finish_reason 'tool_calls', 2 call(s)`."""
    finish = one_line(repr(outcome.finish_reason))
    return f"state {outcome.state}, finish_reason {finish}, {len(outcome.tool_calls)} call(s)"


def arguments_text(call: ToolCall) -> str:
    """A call's arguments as JSON, or as received after `INVALID ` when they are not JSON."""
    if call.invalid:
        return f"INVALID {call.arguments}"
    return json.dumps(call.arguments, ensure_ascii=False)


def call_text(call: ToolCall, width: int = 80) -> str:
    """`name {"arg": 1}` in at most `width` characters."""
    return shorten(f"{call.name or '-'} {arguments_text(call)}", width)


def outcome_lines(outcome: Outcome, label: str, indent: str = "") -> list[str]:
    """`label: headline`, then the calls as a table (number, id, name, arguments), the text, the error."""
    lines = [f"{indent}{label}: {headline(outcome)}"]
    if outcome.tool_calls:
        calls = enumerate(outcome.tool_calls, start=1)
        rows = [(n, call.id or "-", call.name or "-", arguments_text(call)) for n, call in calls]
        drawn = table(["call", "id", "name", "arguments"], rows)
        lines += [f"{indent}  {line}" for line in drawn.splitlines()]
    if outcome.text:
        lines.append(f"{indent}  text: {shorten(outcome.text, 100)}")
    if outcome.error:
        lines.append(f"{indent}  error: {shorten(outcome.error, 100)}")
    return lines
