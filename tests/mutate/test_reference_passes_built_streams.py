"""Every scenario over streams the bundled corpus does not have (many parallel calls, one call
streamed in hundreds of pieces, text, reasoning, pings and usage around calls, arguments empty or
beyond the BMP), made by each dialect's own builders: the reference accumulator passes every
case, and no step stops the run. A case the reference fails
is a stream no provider sends or an expectation that says something else than the stream: ours,
not the accumulator's. Before 5ffff75 and b496733 these failed: two of twelve Gemini calls drew
one id (`later-call-has-shorter-id`), and a step calling for a continuation that Ollama's wire
cannot carry stopped the run."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from harness.cassettes import format as cassettes
from harness.errors import DialectError
from harness.matrix.case_id import find_case
from harness.matrix.runner import run_matrix
from harness.matrix.selection import Selection
from harness.report.explanation import situation_of
from harness.wire import dialects
from harness.wire.dialects import Finish, Kind
from harness.wire.synthesis import synthesize

CALLS = 12  # more parallel calls than any bundled recording has
PIECES = 240  # argument pieces of the long call


def _call_of(d: dialects.Dialect, i: int, name: str = "read_file") -> dict[str, Any]:
    """The builder parameters of call `i`: its own index, id and (Responses) item id."""
    style = next(iter(d.id_styles.values()), None)
    call_id = style.fresh(random.Random(i)) if style else f"call_{i}"
    return {"index": i, "id": call_id, "item_id": f"fc_{i:04d}", "name": name}


def _calls(d: dialects.Dialect, count: int) -> list[Any]:
    events = []
    for i in range(count):
        events += d.build(Kind.TOOL_CALL, **_call_of(d, i), args=f'{{"path":"f{i}.txt"}}')
    return events


def _interleaved(d: dialects.Dialect) -> list[Any]:
    """Two calls whose argument pieces alternate (C1; llama.cpp's Responses items)."""
    calls = [(_call_of(d, 0), '{"path":"a.txt"}'), (_call_of(d, 1, "search"), '{"q":"needle"}')]
    events = [e for call, _ in calls for e in d.build(Kind.TOOL_START, **call)]
    for at in range(0, 16, 4):
        for call, text in calls:
            if text[at:]:
                events += d.build(Kind.TOOL_ARGS, **call, args=text[at : at + 4])
    return events + [e for call, text in calls for e in d.build(Kind.TOOL_END, **call, args=text)]


def _long_call(d: dialects.Dialect) -> list[Any]:
    call = _call_of(d, 0, "write_file")
    text = '{"content":"' + "lorem ipsum " * (PIECES // 2) + '"}'
    step = len(text) // PIECES + 1
    events = d.build(Kind.TOOL_START, **call)
    for at in range(0, len(text), step):
        events += d.build(Kind.TOOL_ARGS, **call, args=text[at : at + step])
    return events + d.build(Kind.TOOL_END, **call, args=text)


def _open_call(d: dialects.Dialect) -> list[Any]:
    """A whole call, then a second one streamed in full but never ended by its own end marker."""
    call = _call_of(d, 1, "search")
    args = '{"q":"needle"}'
    return _calls(d, 1) + d.build(Kind.TOOL_START, **call) + d.build(Kind.TOOL_ARGS, **call, args=args)


def _call(name: str, args: str) -> Any:
    return lambda d: d.build(Kind.TOOL_CALL, **_call_of(d, 0, name), args=args)


# A shape: the events between the turn's start and its end, and how it ends (a finish meaning, or
# "cut" / "error": no finish, the connection lost or an in-band error).
SHAPES: dict[str, tuple[Any, str]] = {
    "many-calls": (lambda d: _calls(d, CALLS), Finish.TOOL_CALLS),
    "long-call": (_long_call, Finish.TOOL_CALLS),
    "interleaved": (_interleaved, Finish.TOOL_CALLS),
    "text-then-call": (lambda d: d.build(Kind.TEXT, text="Reading it.") + _calls(d, 1), Finish.TOOL_CALLS),
    "calls-then-text": (lambda d: _calls(d, 2) + d.build(Kind.TEXT, text="Done."), Finish.TOOL_CALLS),
    "reasoning-then-call": (lambda d: d.build(Kind.REASONING, text="Hm.") + _calls(d, 1), Finish.TOOL_CALLS),
    "no-arguments": (_call("now", "{}"), Finish.TOOL_CALLS),
    "unicode-arguments": (_call("say", '{"t":"天気 ☀️🌧 é"}'), Finish.TOOL_CALLS),
    "pings-and-usage": (lambda d: [*_calls(d, 2), *d.build(Kind.PING), *d.build(Kind.USAGE)], "tool-calls"),
    # The output limit hit: the call being streamed is not final (scenarios that moved or changed
    # the finish kept an expectation without it, or cut another call).
    "length": (lambda d: _calls(d, 3), Finish.LENGTH),
    "cut": (lambda d: _calls(d, 3)[:-1], "cut"),
    "error": (lambda d: _calls(d, 2) + d.build(Kind.ERROR, message="Overloaded"), "error"),
    # Where the terminal event is not the finish (OpenAI chat `[DONE]`, Anthropic `message_stop`,
    # Cohere `message-end`): one of the two alone ends the turn by a rule of ours.
    "finish-without-terminal": (lambda d: _calls(d, 2), "no-terminal"),
    "terminal-without-finish": (lambda d: _calls(d, 2), "no-finish"),
    # A finish reason the protocol does not document (Hugging Face TGI's OpenAI-compatible
    # `eos_token`): it still ends the turn, by a rule of ours.
    "unknown-finish": (lambda d: _calls(d, 2), "unknown"),
    # The turn ends while a call's end marker never came (where calls have one): reported as
    # assembled, by a rule of ours.
    "terminal-with-open-call": (_open_call, Finish.TOOL_CALLS),
}
UNKNOWN_FINISH = "eos_token"
# Where the protocol never interleaves two calls' blocks or items (C1, E7 are quirks there).
NEVER_INTERLEAVED = {"anthropic", "bedrock-converse", "openai-responses", "cohere"}
# Endings docs/oracle.md judges by a rule of ours: the recording's own case is `policy`, naming it.
POLICY_ENDINGS = {Finish.LENGTH: "length-with-open-call", "no-terminal": "finish-without-terminal",
                  "no-finish": "terminal-without-finish", "unknown": "unknown-finish"}  # fmt: skip


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dialect", dialects.names())
def test_the_reference_passes_every_case_of_a_built_stream(dialect: str, shape: str, tmp_path: Path) -> None:
    d = dialects.get(dialect)
    make, end = SHAPES[shape]
    try:
        body = make(d)
    except DialectError:
        pytest.skip(f"{dialect} has no such events (it sends each call whole)")
    events = [*d.build(Kind.META), *body]
    terminal = d.build(Kind.SENTINEL)
    if end in ("no-terminal", "no-finish"):
        if not terminal or any(Kind.FINISH in d.kinds(e) for e in terminal):
            pytest.skip(f"{dialect}'s terminal event is its finish, or it has none")
        word = d.finish_reasons.get(Finish.TOOL_CALLS) or d.finish_reasons[Finish.STOP]
        events += d.build(Kind.FINISH, reason=word) if end == "no-terminal" else terminal
    elif end not in ("cut", "error"):
        if end == "unknown":
            reason = UNKNOWN_FINISH
        else:
            reason = d.finish_reasons.get(Finish(end)) or d.finish_reasons.get(Finish.STOP)
        finish = d.build(Kind.FINISH, reason=reason)
        said = {kind for event in finish for kind in d.kinds(event)}
        events += [*finish, *([] if Kind.SENTINEL in said else terminal)]  # one terminal event
    # Blocks numbered by position, Responses' final summary and sequence numbers as sent: a stream
    # its protocol allows (the builders number each call as asked, not as the wire would).
    events = d.resequence(d.restate(d.renumber(events)))
    lost = "peer closed connection without sending complete message body" if end == "cut" else None
    cassette = synthesize(shape, dialect, url="https://x/v1", body={}, events=[d.render(e) for e in events],
                          provenance="test", complete=lost is None, error=lost)  # fmt: skip
    expected = cassette.interactions[0].expected
    state = end if end in ("cut", "error") else "complete"
    assert expected is not None and str(expected.state) == state
    assert not any(c.invalid for c in expected.tool_calls)
    if state == "complete" and end != Finish.LENGTH:  # every call built is one call of the outcome
        starts = [e for e in body if {Kind.TOOL_START, Kind.TOOL_CALL} & d.kinds(e)]
        assert len(expected.tool_calls) == len(starts)
    path = tmp_path / dialect / f"{shape}.yaml"
    path.parent.mkdir()
    cassettes.save(cassette, path)
    report = run_matrix("reference", Selection(cassettes=(str(path),)))
    wrong = [(r.id, str(r.verdict), r.error, r.diff[:2]) for r in report.results if str(r.verdict) != "pass"]
    assert len(report.results) > 20 and not [w for w in wrong if w[1] != "skipped"], wrong[:5]
    rule = POLICY_ENDINGS.get(end)
    if shape == "terminal-with-open-call" and d.call_end_markers:
        rule = shape
    (original,) = [r for r in report.results if r.scenario == "original"]
    if end == "error" and original.expected.tool_calls:
        rule = "error-after-final-call"  # a call final by its end marker, then the error: policy
    if rule is not None:
        assert str(original.case_class) == "policy" and rule in original.class_reason
        # `explain` names the same situation of docs/oracle.md as the class does.
        found = find_case(original.id, [str(path)])
        assert situation_of(found).name == rule and situation_of(found).state == found.case.expected.state
    elif shape == "interleaved" and dialect in NEVER_INTERLEAVED:  # the recording breaks its protocol
        assert str(original.case_class) == "quirk" and "overlap" in original.class_reason
    else:
        assert str(original.case_class) == "spec", original.class_reason
