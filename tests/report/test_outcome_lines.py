"""One renderer of an outcome as terminal lines (`harness.report.outcomes`), what `show` and
`explain` both print: the headline, each call (INVALID arguments as received), text and error,
escaped and shortened."""

from __future__ import annotations

from harness.cassettes.outcome import Outcome, State, ToolCall
from harness.report.outcomes import call_text, headline, outcome_lines

OUTCOME = Outcome(
    tool_calls=(ToolCall("read", {"path": "a"}, "c1"), ToolCall("bad", "{not json", "c2", invalid=True)),
    text="done\x1b[2J",
    finish_reason="tool_calls",
    state=State.ERROR,
    error="x" * 300,
)


def test_the_headline_and_each_call() -> None:
    assert headline(OUTCOME) == "state error, finish_reason 'tool_calls', 2 call(s)"
    assert call_text(OUTCOME.tool_calls[0]) == 'read {"path": "a"}'
    assert call_text(OUTCOME.tool_calls[1]) == "bad INVALID {not json"
    assert len(call_text(ToolCall("w", {"q": "y" * 200}))) <= 80


def test_the_lines_show_calls_text_and_error_escaped_and_shortened() -> None:
    lines = outcome_lines(OUTCOME, "outcome", indent="   ")
    assert lines[0] == "   outcome: state error, finish_reason 'tool_calls', 2 call(s)"
    joined = "\n".join(lines)
    assert "c1" in joined and '{"path": "a"}' in joined and "INVALID {not json" in joined
    assert "\x1b" not in joined and "   text: done" in joined
    (error,) = [line for line in lines if "error: " in line]
    assert len(error) < 120
