"""The stdio protocol v2: an accumulator in any language, as a process speaking JSON Lines.

UTF-8, one JSON object per line. The harness starts the command once and, for each case, writes

    {"op":"start","protocol":2,"case":ID,"dialect":D,"feed":"events"|"bytes","request":{...}}
    {"op":"event","event":NAME_OR_NULL,"data":PAYLOAD}     # feed events: one per wire event
    {"op":"bytes","b64":READ}                              # feed bytes: one per network read
    {"op":"end","error":null|TEXT}                         # TEXT: the transport error of a cut

(`request` is optional). PAYLOAD is the decoded JSON, or the raw text when the data is not JSON
(`[DONE]`); the event name is the SSE `event:` field or the eventstream `:event-type`; SSE
comments are not sent. The command answers each `end` with one line naming the case:

    {"case":ID,"tool_calls":[{"id":..,"name":..,"arguments":STRING_OR_OBJECT}],"text":..,
     "finish_reason":..,"error":..,"state":"complete"|"cut"|"error"}

(string arguments are parsed as JSON, text that is not JSON being an invalid call; `"invalid":true`
on a call keeps its arguments as raw text; a lone surrogate in a string may be written as its own
three bytes, WTF-8 style, so it is not joined with its neighbour as two escapes would be; without
`state`, an `error` means cut when the stream
was cut, else error; optional `"notes":[TEXT]` become the outcome's `notes`). Instead of an
outcome it may answer `{"case":ID,"failure":TEXT}` (it raised on this case) or
`{"case":ID,"skip":TEXT}` (it cannot run this case). It serves cases until stdin closes. Before
the first case the harness may send a warm-up case (`"warmup":true`, id `WARMUP_CASE`), answered
like any other; its answer is not judged.

The answer is the first line the process prints after its answer to the case before; any other
line is a protocol error for the case it arrives in, named with the line: a line before the
answer (a debug print, a line before `end`), an answer naming another case, or a line printed
after the previous answer (reported on the next case, which says so). The process is then
replaced, so the case after starts clean. A v1 answer (no `case`) is accepted while the process
has never named a case, the only time it is unambiguous.

Pipelined: to a process that has named a case (its warm-up answer), the cases a runner announces
are written ahead of their turn (up to 8), so the process never waits for the harness between
cases; it answers them in order, each when its `end` arrives. A case's timeout counts from its
turn. A v1 process gets one case at a time.

`Stdio` is the harness's side: garbage, a dead process and a hang each fail only their case
(`AccumulatorProtocolError`, `AccumulatorCrashed`, `AccumulatorTimeout`) and the next case gets a
fresh process; on Linux the process runs under `subreaper`, so whatever it starts ends with it.
It lives in `stdio_process` (processes and threads). The other side, `stdio_serve`, turns any
accumulator into such a process (`toolstream serve-accumulator SPEC`) and loads none of that.
This module is what both sides share: the messages of a case and the answer's form.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, Literal

from harness import bounded
from harness.accumulators.event_level import cut_error
from harness.cassettes.model import Chunk, Request, Response
from harness.cassettes.outcome import CUSTOM, FUNCTION, Outcome, State, ToolCall
from harness.errors import (
    AccumulatorProtocolError,
    OutcomeFormatError,
)

if TYPE_CHECKING:
    from harness.mutate.case import Case
    from harness.wire.dialects import Event

__all__ = [
    "PROTOCOL_VERSION",
    "WARMUP_CASE",
    "answer_line",
    "answer_outcome",
    "case_messages",
    "case_parts",
    "fed_message",
    "outcome_answer",
    "read_answer",
    "warmup_case",
]

PROTOCOL_VERSION: Final = 2
Feed = Literal["events", "bytes"]
FEEDS: Final = ("events", "bytes")
WARMUP_CASE: Final = "toolstream:warm-up"


# ---------------------------------------------------------------------------------------------
# Messages


def case_messages(case: Case, feed: Feed, *, warmup: bool = False) -> Iterator[dict[str, Any]]:
    """The protocol messages of one case, `start` to `end`."""
    start, fed, end = case_parts(case, feed, warmup=warmup)
    yield start
    yield from map(fed_message, fed)
    yield end


def case_parts(
    case: Case, feed: Feed, *, warmup: bool = False
) -> tuple[dict[str, Any], Sequence[Event | Chunk], dict[str, Any]]:
    """A case's `start` message, what it feeds (its events without SSE comments, or its reads),
    each one message (`fed_message`), and its `end` message."""
    start: dict[str, Any] = {
        "op": "start",
        "protocol": PROTOCOL_VERSION,
        "case": case.id,
        "dialect": case.dialect,
        "feed": feed,
    }
    if warmup:
        start["warmup"] = True
    if isinstance(case.request, Request):
        start["request"] = {"method": case.request.method, "url": case.request.url, "body": case.request.body}
    if feed == "bytes":
        fed: Sequence[Event | Chunk] = case.response.chunks
    else:
        fed = [event for event in case.events if not event.wire.is_comment]
    return start, fed, {"op": "end", "error": cut_error(case)}


def fed_message(item: Event | Chunk) -> dict[str, Any]:
    """The message that feeds one event (`event`) or one network read (`bytes`)."""
    if isinstance(item, Chunk):
        return {"op": "bytes", "b64": base64.b64encode(item.data).decode("ascii")}
    return {"op": "event", "event": item.name, "data": item.payload}


def warmup_case() -> Case:
    """The case `Stdio.prepare` sends: an OpenAI chat stream with no events that ended cleanly."""
    from harness.mutate.case import Case

    response = Response(status=200, headers={"content-type": "text/event-stream"}, chunks=[], complete=True)
    return Case(WARMUP_CASE, "openai-chat", response, (), Outcome(), "stdio", "warm-up", 0)


def answer_outcome(answer: Any, *, cut: bool) -> Outcome:
    """An answer line's object as an `Outcome`; `AccumulatorProtocolError` when it is not one."""
    if not isinstance(answer, Mapping):
        raise AccumulatorProtocolError("the answer must be a JSON object")
    calls = answer.get("tool_calls", [])
    if not isinstance(calls, list):
        raise AccumulatorProtocolError("tool_calls: must be a list")
    parsed = []
    for i, call in enumerate(calls):
        if not isinstance(call, Mapping):
            raise AccumulatorProtocolError(f"tool_calls[{i}]: must be an object with id, name and arguments")
        name, call_id, arguments = call.get("name"), call.get("id"), call.get("arguments", "")
        if name is not None and not isinstance(name, str):
            raise AccumulatorProtocolError(f"tool_calls[{i}].name: must be a string or null")
        if call_id is not None and not isinstance(call_id, str):
            raise AccumulatorProtocolError(f"tool_calls[{i}].id: must be a string or null")
        kind = call.get("kind", FUNCTION)
        if not isinstance(kind, str) or not kind:
            raise AccumulatorProtocolError(f"tool_calls[{i}].kind: must be a non-empty string")
        if kind == CUSTOM:  # freeform input: the raw text, never parsed
            if not isinstance(arguments, str):
                raise AccumulatorProtocolError(
                    f"tool_calls[{i}].arguments: must be the raw input text of a custom call"
                )
            parsed.append(ToolCall.freeform(name, arguments, call_id))
        elif kind != FUNCTION:
            parsed.append(ToolCall(name=name, arguments=arguments, id=call_id, kind=kind))
        elif call.get("invalid") is True:
            parsed.append(ToolCall(name=name, arguments=str(arguments), id=call_id, invalid=True))
        elif isinstance(arguments, str):
            parsed.append(ToolCall.from_text(name, arguments, call_id))
        else:
            parsed.append(ToolCall(name=name, arguments=arguments, id=call_id))
    data = {
        key: answer[key]
        for key in ("text", "finish_reason", "state", "error", "usage", "notes", "parts")
        if key in answer
    }
    if data.get("text") is None:
        data["text"] = ""
    if "state" not in data and data.get("error") is not None:
        data["state"] = str(State.CUT if cut else State.ERROR)
    try:
        base = Outcome.from_dict(data)
    except OutcomeFormatError as exc:
        raise AccumulatorProtocolError(str(exc)) from None
    return Outcome(
        tool_calls=tuple(parsed),
        text=base.text,
        finish_reason=base.finish_reason,
        state=base.state,
        error=base.error,
        usage=base.usage,
        notes=base.notes,
        parts=base.parts,
    )


def answer_line(answer: Mapping[str, Any]) -> bytes:
    """An answer as its line: UTF-8, where a lone surrogate is written as its own three bytes
    (`surrogatepass`, as WTF-8 does) rather than as an escape, which a JSON reader would join with
    a neighbouring half into one character: `"\\ud83c" "\\udf27"` side by side is not the pair."""
    line = json.dumps(answer, ensure_ascii=False, separators=(",", ":")) + "\n"
    return line.encode("utf-8", "surrogatepass")


def read_answer(raw: bytes) -> Any:
    """The JSON value of an answer line (`answer_line`'s lone surrogates read back as themselves);
    `ValueError` when it is not JSON."""
    return bounded.loads(raw.decode("utf-8", "surrogatepass"))


def outcome_answer(outcome: Outcome) -> dict[str, Any]:
    calls: list[dict[str, Any]] = []
    for call in outcome.tool_calls:
        if call.kind != FUNCTION:  # the raw input (custom) or the item's action, as it is
            calls.append({"id": call.id, "name": call.name, "arguments": call.arguments, "kind": call.kind})
        elif call.invalid:
            calls.append(
                {"id": call.id, "name": call.name, "arguments": str(call.arguments), "invalid": True}
            )
        else:  # a JSON value; a string value goes as JSON text so it is not parsed as arguments text
            arguments = call.arguments
            if isinstance(arguments, str):
                arguments = json.dumps(arguments, ensure_ascii=False)
            calls.append({"id": call.id, "name": call.name, "arguments": arguments})
    answer: dict[str, Any] = {
        "tool_calls": calls,
        "text": outcome.text,
        "finish_reason": outcome.finish_reason,
        "error": outcome.error,
        "state": str(outcome.state),
    }
    if outcome.usage is not None:
        answer["usage"] = dict(outcome.usage)
    if outcome.notes:
        answer["notes"] = list(outcome.notes)
    if outcome.parts:  # the state that goes back (reasoning, signatures), as the outcome's JSON has it
        answer["parts"] = outcome.to_dict()["parts"]
    return answer


# ---------------------------------------------------------------------------------------------
# The accumulator side
