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
on a call keeps its arguments as raw text; without `state`, an `error` means cut when the stream
was cut, else error; optional `"notes":[TEXT]` become the outcome's `notes`). Instead of an
outcome it may answer `{"case":ID,"failure":TEXT}` (it raised on this case) or
`{"case":ID,"skip":TEXT}` (it cannot run this case). It serves cases until stdin closes. Before
the first case the harness may send a warm-up case (`"warmup":true`, id `WARMUP_CASE`), answered
like any other; its answer is not judged.

The answer is the first line the process prints after the case is sent; any other line is a
protocol error for the case it arrives in, named with the line: a line before the answer (a
debug print, a line before `end`), an answer naming another case, or a line printed after the
previous answer (reported on the next case, which says so). The process is then replaced, so the
case after starts clean. A v1 answer (no `case`) is accepted while the process has never named a
case, the only time it is unambiguous.

`Stdio` is the harness's side: garbage, a dead process and a hang each fail only their case
(`AccumulatorProtocolError`, `AccumulatorCrashed`, `AccumulatorTimeout`) and the next case gets a
fresh process; on Linux the process runs under `subreaper`, so whatever it starts ends with it.
It lives in `stdio_process` (processes and threads), so that `serve`, the other side, loads none
of that: it turns any accumulator into such a process (`toolstream serve-accumulator SPEC`).
"""

from __future__ import annotations

import base64
import contextlib
import json
import sys
from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import IO, TYPE_CHECKING, Any, Final, Literal

from harness.cassettes.model import Chunk, Request, Response
from harness.check.accumulators import reference
from harness.check.accumulators.base import not_for
from harness.check.accumulators.event_level import cut_error
from harness.check.outcome import Outcome, State, ToolCall
from harness.errors import (
    AccumulatorProtocolError,
    HarnessError,
    NotApplicable,
    OutcomeFormatError,
    UsageError,
)
from harness.wire import bounded, dialects
from harness.wire.codecs import CodecError, WireEvent

if TYPE_CHECKING:
    from harness.check.accumulators.base import Accumulator
    from harness.check.accumulators.stdio_process import Stdio
    from harness.check.case import Case

__all__ = [
    "PROTOCOL_VERSION",
    "WARMUP_CASE",
    "Stdio",
    "answer_outcome",
    "case_messages",
    "serve",
    "warmup_case",
]

PROTOCOL_VERSION: Final = 2
Feed = Literal["events", "bytes"]
FEEDS: Final = ("events", "bytes")
WARMUP_CASE: Final = "toolstream:warm-up"
_REFERENCE: Final = reference.accumulator()
_CONTENT_TYPES: Final = {
    "sse": "text/event-stream",
    "ndjson": "application/x-ndjson",
    "eventstream": "application/vnd.amazon.eventstream",
}


def __getattr__(name: str) -> Any:
    # The harness's side (processes, threads, the subreaper) is its own module, so a
    # `serve-accumulator` child, which only answers, does not load it.
    if name == "Stdio":
        from harness.check.accumulators.stdio_process import Stdio

        return Stdio
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# ---------------------------------------------------------------------------------------------
# Messages


def case_messages(case: Case, feed: Feed, *, warmup: bool = False) -> Iterator[dict[str, Any]]:
    """The protocol messages of one case, `start` to `end`."""
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
    yield start
    if feed == "bytes":
        for chunk in case.response.chunks:
            yield {"op": "bytes", "b64": base64.b64encode(chunk.data).decode("ascii")}
    else:
        for event in case.events:
            if not event.wire.is_comment:
                yield {"op": "event", "event": event.name, "data": event.payload}
    yield {"op": "end", "error": cut_error(case)}


def warmup_case() -> Case:
    """The case `Stdio.prepare` sends: an OpenAI chat stream with no events that ended cleanly."""
    from harness.check.case import Case

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
        if call.get("invalid") is True:
            parsed.append(ToolCall(name=name, arguments=str(arguments), id=call_id, invalid=True))
        elif isinstance(arguments, str):
            parsed.append(ToolCall.from_text(name, arguments, call_id))
        else:
            parsed.append(ToolCall(name=name, arguments=arguments, id=call_id))
    data = {
        key: answer[key]
        for key in ("text", "finish_reason", "state", "error", "usage", "notes")
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
    )


def _outcome_answer(outcome: Outcome) -> dict[str, Any]:
    calls: list[dict[str, Any]] = []
    for call in outcome.tool_calls:
        if call.invalid:
            calls.append(
                {"id": call.id, "name": call.name, "arguments": str(call.arguments), "invalid": True}
            )
        else:  # a JSON value; a string value goes as JSON text so it is not parsed as arguments text
            arguments = json.dumps(call.arguments) if isinstance(call.arguments, str) else call.arguments
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
    return answer


# ---------------------------------------------------------------------------------------------
# The accumulator side


class _Pending:
    """One case being received."""

    def __init__(self, start: Mapping[str, Any]) -> None:
        case_id, dialect, feed = start.get("case"), start.get("dialect"), start.get("feed", "events")
        if not isinstance(case_id, str) or not isinstance(dialect, str) or feed not in FEEDS:
            raise UsageError("start: needs case (string), dialect (string) and feed (events or bytes)")
        self.id = case_id
        self.dialect = dialects.get(dialect)
        self.feed = feed
        self.request = _request(start.get("request"))
        self.events: list[dialects.Event] = []
        self.chunks: list[Chunk] = []

    def add(self, message: Mapping[str, Any]) -> None:
        op = message.get("op")
        if op == "event" and self.feed == "events":
            name, data = message.get("event"), message.get("data")
            if name is not None and not isinstance(name, str):
                raise UsageError("event: `event` must be a string or null")
            text = data if isinstance(data, str) else self.dialect.dumps(data)
            event = self.dialect.parse(WireEvent(data=text, name=name))
            self.events.append(event)
            self.chunks.append(Chunk(dialects.body_of([event], self.dialect)))
        elif op == "bytes" and self.feed == "bytes":
            try:
                self.chunks.append(Chunk(base64.b64decode(str(message.get("b64", "")), validate=True)))
            except ValueError:
                raise UsageError("bytes: `b64` is not base64") from None
        else:
            raise UsageError(f"unexpected op {op!r} in a case fed by {self.feed}")

    def case(self, error: str | None) -> Case:
        from harness.check.case import Case

        response = Response(
            status=200,
            headers={"content-type": _CONTENT_TYPES.get(self.dialect.codec_name, "application/octet-stream")},
            chunks=self.chunks,
            complete=error is None,
            error=error,
        )
        events = self.events if self.feed == "events" else _decode(self.chunks, self.dialect)
        case = Case(
            id=self.id,
            dialect=self.dialect.name,
            response=response,
            events=tuple(events),
            expected=Outcome(),
            cassette="stdio",
            scenario="stdio",
            seed=0,
            request=self.request,
        )
        # What the case is expected to give, so `view()` notes mean the same as in the harness.
        return replace(case, expected=_REFERENCE.run(case))


def _request(data: Any) -> Request | None:
    if not isinstance(data, Mapping) or not isinstance(data.get("url"), str):
        return None
    return Request(method=str(data.get("method") or "POST").upper(), url=data["url"], body=data.get("body"))


def _decode(chunks: list[Chunk], dialect: dialects.Dialect) -> list[dialects.Event]:
    decoder = dialect.codec().decoder()
    wire: list[WireEvent] = []
    for chunk in chunks:
        wire.extend(decoder.feed(chunk.data))
    with contextlib.suppress(CodecError):  # a cut stream may end inside an event
        wire.extend(decoder.close())
    return [dialect.parse(w) for w in wire]


def serve(accumulator: str | Accumulator, stdin: IO[str] | None = None, stdout: IO[str] | None = None) -> int:
    """Serve cases read from `stdin` with `accumulator` (a spec or a resolved one) until stdin closes.

    While the accumulator runs, whatever it prints goes to stderr: stdout carries answers only.
    Returns 0 at the end of input, 2 after a message that breaks the protocol (reported on stderr).
    """
    from harness.check.accumulators import prepare, resolve

    acc = resolve(accumulator)
    # Before the first line is read: the harness's warm-up case waits for it. Not the reference's,
    # which is loading every dialect: here each dialect is loaded when its first case arrives.
    if not isinstance(acc, type(_REFERENCE)):
        prepare(acc, accumulator if isinstance(accumulator, str) else acc.name, quiet=False)
    source = stdin if stdin is not None else sys.stdin
    out = stdout if stdout is not None else sys.stdout
    pending: _Pending | None = None
    try:
        for number, raw in enumerate(source, start=1):
            if not raw.strip():
                continue
            try:
                message = bounded.loads(raw)
                if not isinstance(message, dict):
                    raise UsageError("a message must be a JSON object")
                op = message.get("op")
                if op == "start":
                    pending = _Pending(message)
                    continue
                if pending is None:
                    raise UsageError(f"op {op!r} before start")
                if op != "end":
                    pending.add(message)
                    continue
                error = message.get("error")
                case = pending.case(None if error is None else str(error))
                pending = None
            except (ValueError, HarnessError) as exc:
                print(f"toolstream serve-accumulator: line {number}: {exc}", file=sys.stderr)
                return 2
            out.write(json.dumps(_answer(acc, case), ensure_ascii=False, separators=(",", ":")) + "\n")
            out.flush()
    finally:
        acc.shutdown()
    return 0


def _answer(acc: Accumulator, case: Case) -> dict[str, Any]:
    """The answer line for one case, naming the case it answers (protocol v2); a skip for a case
    of a dialect the accumulator declares it does not read, as `judge` gives in process."""
    why = not_for(acc, acc.name, case.dialect)
    if why is not None:
        return {"case": case.id, "skip": why}
    try:
        with contextlib.redirect_stdout(sys.stderr):
            answer = _outcome_answer(acc.run(case))
    except NotApplicable as exc:
        answer = {"skip": str(exc)}
    except Exception as exc:
        answer = {"failure": f"{type(exc).__name__}: {exc}"}
    return {"case": case.id, **answer}
