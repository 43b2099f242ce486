"""One rule per situation across dialects: each situation of docs/oracle.md's table, built in every
dialect that can express it (from the dialects' own `build`), gets the same state and calls from
every reference accumulator, and the table in the doc says what this file checks."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness.cassettes.outcome import Outcome, State
from harness.wire import dialects
from harness.wire.codecs import WireEvent
from harness.wire.dialects.base import Event, Kind

ROOT = Path(__file__).resolve().parents[2]
CUT = "peer closed connection without sending complete message body"
UNKNOWN = "brand_new_reason"


@dataclass(frozen=True)
class Speech:
    """How one dialect says each step of a situation. `finish` and `terminal` are None where the wire
    has no such separate event (the finish is the terminal event: Bedrock `messageStop`, a Responses
    terminal event, Gemini's last chunk, Ollama's `done` line)."""

    start: list[Event]
    first: list[Event]  # a whole call, ended by its own end marker where the wire has one
    second: list[Event]  # another call, not final: its arguments unfinished, or no end yet
    end: Callable[[str], list[Event]]  # how a turn ends with a finish reason (finish + terminal)
    error: list[Event]
    normal: str  # the finish reason of a turn that made calls
    call_has_end: bool  # a call is final at its own end marker, before the finish
    finish: Callable[[str], list[Event]] | None = None
    terminal: list[Event] | None = None
    length: str | None = None  # the finish reason of a turn the output limit ended (None: nothing open)


def _parsed(name: str, payload: object) -> Event:
    d = dialects.get(name)
    return d.parse(WireEvent(data=json.dumps(payload)))


def _openai_chat() -> Speech:
    d = dialects.get("openai-chat")
    return Speech(
        start=d.build(Kind.META),
        first=d.build(Kind.TOOL_START, index=0, id="call_1", name="first", args='{"n": 1}'),
        second=d.build(Kind.TOOL_START, index=1, id="call_2", name="second", args='{"n": '),
        end=lambda reason: [*d.build(Kind.FINISH, reason=reason), *d.build(Kind.SENTINEL)],
        error=d.build(Kind.ERROR),
        normal="tool_calls",
        call_has_end=False,
        finish=lambda reason: d.build(Kind.FINISH, reason=reason),
        terminal=d.build(Kind.SENTINEL),
        length="length",
    )


def _anthropic() -> Speech:
    d = dialects.get("anthropic")
    return Speech(
        start=d.build(Kind.META),
        first=d.build(Kind.TOOL_CALL, index=0, id="toolu_1", name="first", args='{"n": 1}'),
        second=[
            *d.build(Kind.TOOL_START, index=1, id="toolu_2", name="second"),
            *d.build(Kind.TOOL_ARGS, index=1, args='{"n": '),
        ],
        end=lambda reason: [*d.build(Kind.FINISH, reason=reason), *d.build(Kind.SENTINEL)],
        error=d.build(Kind.ERROR),
        normal="tool_use",
        call_has_end=True,
        finish=lambda reason: d.build(Kind.FINISH, reason=reason),
        terminal=d.build(Kind.SENTINEL),
        length="max_tokens",
    )


def _bedrock() -> Speech:
    d = dialects.get("bedrock-converse")
    return Speech(
        start=d.build(Kind.META),
        first=d.build(Kind.TOOL_CALL, index=0, id="tooluse_1", name="first", args='{"n": 1}'),
        second=[
            *d.build(Kind.TOOL_START, index=1, id="tooluse_2", name="second"),
            *d.build(Kind.TOOL_ARGS, index=1, args='{"n": '),
        ],
        end=lambda reason: [*d.build(Kind.FINISH, reason=reason), *d.build(Kind.USAGE)],
        error=d.build(Kind.ERROR, message="stream error"),
        normal="tool_use",
        call_has_end=True,
        length="max_tokens",
    )


def _responses() -> Speech:
    d = dialects.get("openai-responses")
    return Speech(
        start=d.build(Kind.META),
        first=d.build(Kind.TOOL_CALL, index=0, item_id="fc_1", id="call_1", name="first", args='{"n": 1}'),
        second=[
            *d.build(Kind.TOOL_START, index=1, item_id="fc_2", id="call_2", name="second"),
            *d.build(Kind.TOOL_ARGS, index=1, item_id="fc_2", args='{"n": '),
        ],
        end=lambda reason: d.build(Kind.FINISH, reason=reason),
        error=d.build(Kind.ERROR),
        normal="completed",
        call_has_end=True,
        length="incomplete",
    )


def _gemini() -> Speech:
    d = dialects.get("gemini")
    streamed = {"functionCall": {"name": "second", "willContinue": True}}
    piece = {"functionCall": {"partialArgs": [{"jsonPath": "$.n", "numberValue": 2}], "willContinue": True}}
    return Speech(
        start=[],
        first=d.build(Kind.TOOL_CALL, name="first", args={"n": 1}),
        second=[
            _parsed("gemini", {"candidates": [{"content": {"role": "model", "parts": [part]}, "index": 0}]})
            for part in (streamed, piece)
        ],
        end=lambda reason: d.build(Kind.FINISH, reason=reason),
        error=d.build(Kind.ERROR),
        normal="STOP",
        call_has_end=False,
        length="MAX_TOKENS",
    )


def _ollama() -> Speech:
    d = dialects.get("ollama")
    return Speech(
        start=[],
        first=d.build(Kind.TOOL_CALL, name="first", args={"n": 1}),
        second=d.build(Kind.TOOL_CALL, name="second", args={"n": 2}),
        end=lambda reason: d.build(Kind.FINISH, reason=reason),
        error=d.build(Kind.ERROR),
        normal="stop",
        call_has_end=False,
    )


def _cohere() -> Speech:
    d = dialects.get("cohere")
    return Speech(
        start=d.build(Kind.META),
        first=d.build(Kind.TOOL_CALL, index=0, id="c_1", name="first", args='{"n": 1}'),
        second=d.build(Kind.TOOL_CALL, index=1, id="c_2", name="second", args='{"n": ')[:2],
        end=lambda reason: [*d.build(Kind.FINISH, reason=reason), *d.build(Kind.SENTINEL)],
        error=d.build(Kind.ERROR),
        normal="TOOL_CALL",
        call_has_end=True,
        finish=lambda reason: d.build(Kind.FINISH, reason=reason),
        terminal=d.build(Kind.SENTINEL),
        length="MAX_TOKENS",
    )


SPEECH: dict[str, Callable[[], Speech]] = {
    "openai-chat": _openai_chat,
    "anthropic": _anthropic,
    "bedrock-converse": _bedrock,
    "openai-responses": _responses,
    "gemini": _gemini,
    "ollama": _ollama,
    "cohere": _cohere,
}

# A situation: the events and the transport error at close, or None where the dialect cannot say it.
Built = tuple[list[Event], str | None] | None


def _finish_without_terminal(s: Speech) -> Built:
    return None if s.finish is None else ([*s.start, *s.first, *s.finish(s.normal)], None)


def _terminal_without_finish(s: Speech) -> Built:
    return None if s.terminal is None else ([*s.start, *s.first, *s.terminal], None)


def _error_after_final_call(s: Speech) -> Built:
    if s.call_has_end:
        return [*s.start, *s.first, *s.error], None
    if s.finish is None:
        return None  # calls are final only at the finish, which is the terminal event itself
    return [*s.start, *s.first, *s.finish(s.normal), *s.error], None


def _error_mid_call(s: Speech) -> Built:
    return [*s.start, *s.second, *s.error], None


def _cut_mid_call(s: Speech) -> Built:
    return [*s.start, *s.second], CUT


def _cut_after_final_call(s: Speech) -> Built:
    return ([*s.start, *s.first, *s.second], CUT) if s.call_has_end else None


def _cut_after_finish(s: Speech) -> Built:
    return None if s.finish is None else ([*s.start, *s.first, *s.finish(s.normal)], CUT)


def _cut_after_terminal(s: Speech) -> Built:
    return [*s.start, *s.first, *s.end(s.normal)], CUT


def _error_after_terminal(s: Speech) -> Built:
    return [*s.start, *s.first, *s.end(s.normal), *s.error], None


def _unknown_finish(s: Speech) -> Built:
    return [*s.start, *s.first, *s.end(UNKNOWN)], None


def _error_then_cut(s: Speech) -> Built:
    return [*s.start, *s.second, *s.error], CUT


def _stream_just_stops(s: Speech) -> Built:
    return [*s.start, *s.first], None


def _terminal_with_open_call(s: Speech) -> Built:
    return ([*s.start, *s.first, *s.second, *s.end(s.normal)], None) if s.call_has_end else None


def _length_with_open_call(s: Speech) -> Built:
    if s.length is None:
        return None  # Ollama sends whole calls only: nothing is open when the limit hits
    return [*s.start, *s.first, *s.second, *s.end(s.length)], None


@dataclass(frozen=True)
class Rule:
    """A row of docs/oracle.md's table: the state, and which calls are reported (`all` of them,
    the `final` ones: final by their own end marker or by a finish before the stream ended, or `none`)."""

    build: Callable[[Speech], Built]
    state: State
    calls: str


RULES: dict[str, Rule] = {
    "finish-without-terminal": Rule(_finish_without_terminal, State.COMPLETE, "all"),
    "terminal-without-finish": Rule(_terminal_without_finish, State.COMPLETE, "all"),
    "error-after-final-call": Rule(_error_after_final_call, State.ERROR, "final"),
    "error-mid-call": Rule(_error_mid_call, State.ERROR, "none"),
    "cut-mid-call": Rule(_cut_mid_call, State.CUT, "none"),
    "cut-after-final-call": Rule(_cut_after_final_call, State.CUT, "final"),
    "cut-after-finish": Rule(_cut_after_finish, State.CUT, "final"),
    "cut-after-terminal": Rule(_cut_after_terminal, State.COMPLETE, "all"),
    "error-after-terminal": Rule(_error_after_terminal, State.COMPLETE, "all"),
    "unknown-finish": Rule(_unknown_finish, State.COMPLETE, "all"),
    "error-then-cut": Rule(_error_then_cut, State.ERROR, "none"),
    "stream-just-stops": Rule(_stream_just_stops, State.CUT, "final"),
    "terminal-with-open-call": Rule(_terminal_with_open_call, State.COMPLETE, "all"),
    "length-with-open-call": Rule(_length_with_open_call, State.COMPLETE, "final"),
}


def _expected_names(situation: str, speech: Speech) -> list[str]:
    rule = RULES[situation]
    if rule.calls == "none":
        return []
    if rule.calls == "all":
        return ["first", "second"] if situation == "terminal-with-open-call" else ["first"]
    # `final`: the first call is final by its own end marker, or by the finish that followed it.
    # At a length finish the first call is final because another call came after it.
    finished = speech.call_has_end or situation in (
        "error-after-final-call",
        "cut-after-finish",
        "length-with-open-call",
    )
    return ["first"] if finished else []


def _run(name: str, events: list[Event], error: str | None) -> Outcome:
    acc = dialects.get(name).accumulator()
    for event in events:
        acc.feed(event)
    return acc.close(error)


CASES = [
    (situation, name)
    for situation, rule in RULES.items()
    for name, speech in SPEECH.items()
    if rule.build(speech()) is not None
]


@pytest.mark.parametrize(("situation", "name"), CASES, ids=[f"{s}-{n}" for s, n in CASES])
def test_every_dialect_follows_the_table(situation: str, name: str) -> None:
    speech = SPEECH[name]()
    built = RULES[situation].build(speech)
    assert built is not None
    out = _run(name, *built)
    assert out.state is RULES[situation].state, out
    assert [call.name for call in out.tool_calls] == _expected_names(situation, speech), out
    if situation == "unknown-finish":
        assert out.finish_reason == UNKNOWN
    if situation == "length-with-open-call":
        assert out.finish_reason == speech.length  # reported as sent
    if situation == "error-then-cut":
        assert out.error is not None and CUT not in out.error  # the provider's reason, not the cut


def test_every_situation_has_dialects_that_disagree_without_the_rule() -> None:
    # Each rule binds at least two dialects, or it would not be a rule across dialects.
    for situation in RULES:
        assert sum(1 for s, _ in CASES if s == situation) >= 2, situation


def test_the_last_disagreement_of_issue_10_is_gone() -> None:
    # Anthropic called stop_reason tool_use + every block stopped + no message_stop `cut`, OpenAI
    # chat called finish_reason + no [DONE] `complete`: now both are complete.
    for name in ("anthropic", "openai-chat"):
        built = _finish_without_terminal(SPEECH[name]())
        assert built is not None
        assert _run(name, *built).state is State.COMPLETE


# -- the doc's table is this file's table --------------------------------------------------------

_ROW = re.compile(r"^\| `([a-z-]+)` \|(.*)$")


def _doc_rows() -> dict[str, list[str]]:
    rows: dict[str, list[str]] = {}
    for line in (ROOT / "docs" / "oracle.md").read_text(encoding="utf-8").splitlines():
        found = _ROW.match(line)
        cells = [cell.strip() for cell in found.group(2).split("|")] if found else []
        if found and len(cells) >= 5:  # the situations table (the states table has fewer columns)
            rows[found.group(1)] = cells
    return rows


def test_the_doc_table_lists_every_situation_with_its_state_calls_and_class() -> None:
    rows = _doc_rows()
    assert sorted(rows) == sorted(RULES)
    for situation, cells in rows.items():
        _, state, calls, kind = cells[:4]
        assert state == f"`{RULES[situation].state}`", situation
        assert calls == f"`{RULES[situation].calls}`", situation
        assert kind in ("`spec`", "`quirk`", "`policy`"), situation
        assert cells[4], f"{situation}: the reason is missing"
