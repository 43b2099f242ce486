"""AG-UI (the Agent-User Interaction protocol, read by CopilotKit and `@ag-ui/client`): a client
POSTs a `RunAgentInput` (`threadId`, `runId`, `messages`, `tools` ...) and reads SSE `data:` lines
of JSON events, no `event:` names, no sentinel: the run ends with `RUN_FINISHED` or `RUN_ERROR`.

Events: `RUN_STARTED` / `RUN_FINISHED` (`threadId`, `runId`), `RUN_ERROR` (`message`),
`STEP_STARTED` / `STEP_FINISHED`, `TEXT_MESSAGE_START` / `_CONTENT` (`delta`) / `_END` and the
`TEXT_MESSAGE_CHUNK` shorthand, `TOOL_CALL_START` (`toolCallId`, `toolCallName`,
`parentMessageId`), `TOOL_CALL_ARGS` (`toolCallId`, `delta`), `TOOL_CALL_END` (`toolCallId`),
`TOOL_CALL_CHUNK` (`toolCallId?`, `toolCallName?`, `delta?`), `TOOL_CALL_RESULT`, state, reasoning,
`RAW`, `CUSTOM`. Sources: docs.ag-ui.com/spec/1.0/events/tool-calls; ag-ui-protocol/ag-ui
`sdks/typescript/packages/core/src/events.ts`, `client/src/chunks/transform.ts`,
`client/src/verify/verify.ts`.

Keying rules of the reference accumulator (and of `fragments`), beyond those of `keyed.py`:

- `TOOL_CALL_ARGS` and `TOOL_CALL_END` go to the call their id names, only while it is open: an
  id that is not active (never started, or ended) is ignored, never given to another open call.
- `TOOL_CALL_CHUNK` expands as the client's `transform.ts` does: a chunk with an id other than
  the open chunk call's ends that call and starts its own (its name, its `delta` as the first
  piece); a chunk without an id continues the open chunk call; any other event ends the open
  chunk call. So one chunk with a name and the whole arguments is a whole call, ended by
  whatever comes next.
- Arguments are the pieces joined (the spec carries them unvalidated): all empty means `{}`;
  text that does not parse makes the call `invalid`.

Finality: a call is final at its `TOOL_CALL_END` (a chunk call at the event after it). The
terminal event is `RUN_FINISHED`, the in-band error `RUN_ERROR` (the ending rules: `Oracle`);
AG-UI has no finish reason.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

from harness.cassettes.model import Request
from harness.cassettes.outcome import Outcome, State
from harness.errors import DialectError
from harness.wire.codecs import WireEvent
from harness.wire.dialects import shapes
from harness.wire.dialects.base import (
    MISSING,
    Dialect,
    Event,
    Field,
    Fragment,
    Kind,
    ReferenceAccumulator,
    Role,
    Shape,
    Violation,
    copy_json,
    payload_type,
    request_body,
)
from harness.wire.dialects.keyed import KeyedCalls
from harness.wire.dialects.requesting import (
    FINAL_TEXT,
    Entry,
    Followup,
    StandingIn,
    Turn,
    call_id,
    dumps,
    mappings,
    sse,
)

START, ARGS, END, CHUNK = "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_CHUNK"
_CALL_TYPES: Final = frozenset({START, ARGS, END, CHUNK})
_CLAIMED: Final = frozenset(
    {
        "RUN_STARTED",
        "RUN_FINISHED",
        "RUN_ERROR",
        "STEP_STARTED",
        "STEP_FINISHED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "TEXT_MESSAGE_CHUNK",
        START,
        ARGS,
        END,
        CHUNK,
        "TOOL_CALL_RESULT",
        "STATE_SNAPSHOT",
        "STATE_DELTA",
        "MESSAGES_SNAPSHOT",
    }
)
_META: Final = frozenset(
    {"RUN_STARTED", "STEP_STARTED", "STEP_FINISHED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_END"}
)
HEADERS: Final = {"content-type": "text/event-stream", "cache-control": "no-cache"}


def _id(payload: dict[str, Any]) -> str | None:
    value = payload.get("toolCallId")
    return value if isinstance(value, str) and value else None


class ChunkedCalls(KeyedCalls):
    """`KeyedCalls` with the call a `TOOL_CALL_CHUNK` opened and no other event has ended yet."""

    def __init__(self) -> None:
        super().__init__()
        self.chunk: int | None = None

    def end_chunk(self) -> None:
        if self.chunk is not None:
            self.calls[self.chunk].ended = True
            self.chunk = None


def route(calls: ChunkedCalls, payload: Any) -> tuple[int, Role] | None:
    """Which call an event belongs to and its role there (None: no call event, or one that goes to
    no call), updating `calls` as the reference reads the stream. Every event must pass here: any
    but a chunk ends the open chunk call."""
    kind = payload_type(payload)
    if kind != CHUNK:
        calls.end_chunk()
    if kind not in _CALL_TYPES:
        return None
    call_id = _id(payload)
    number = calls.number(call_id)
    active = number is not None and not calls.calls[number].ended
    delta = payload.get("delta")
    if kind == START:
        if number is not None or call_id is None:
            return None
        name = payload.get("toolCallName")
        return calls.open(call_id, name if isinstance(name, str) else None), Role.START
    if kind in (ARGS, END):
        if number is None or not active:
            return None  # an id that is not active: no open call of that id to give it to
        if kind == END:
            calls.calls[number].ended = True
            return number, Role.END
        if isinstance(delta, str):
            calls.calls[number].pieces.append(delta)
        return number, Role.ARGS
    open_id = calls.calls[calls.chunk].id if calls.chunk is not None else None
    if call_id is None or call_id == open_id:
        if calls.chunk is None:
            return None  # nothing to continue
        number, role = calls.chunk, Role.ARGS
    else:
        calls.end_chunk()
        if number is not None and not active:
            return None
        if number is None:
            name = payload.get("toolCallName")
            number, role = calls.open(call_id, name if isinstance(name, str) else None), Role.START
        else:
            role = Role.ARGS  # a chunk for a call TOOL_CALL_START opened continues it
        calls.chunk = number
    if isinstance(delta, str):
        calls.calls[number].pieces.append(delta)
    return number, role


class AGUIAccumulator(ReferenceAccumulator):
    """Reference accumulator for AG-UI event streams (rules in the module docstring)."""

    def __init__(self) -> None:
        self._calls = ChunkedCalls()
        self._text: list[str] = []
        self._finished = False
        self._error: str | None = None

    def feed(self, event: Event) -> None:
        payload = event.payload
        if self._finished or self._error is not None or not isinstance(payload, dict):
            return
        route(self._calls, payload)
        kind = payload_type(payload)
        if kind in ("TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_CHUNK") and isinstance(payload.get("delta"), str):
            self._text.append(payload["delta"])
        elif kind == "RUN_FINISHED":
            self._finished = True
        elif kind == "RUN_ERROR":
            self._error = str(payload.get("message") or "RUN_ERROR")

    def close(self, error: str | None = None) -> Outcome:
        calls, text = self._calls.final(), "".join(self._text)
        if self._error is not None:
            return Outcome(calls, text, None, State.ERROR, self._error)
        if not self._finished:
            return Outcome(calls, text, None, State.CUT, error or "stream ended without RUN_FINISHED")
        # A call whose TOOL_CALL_END never came before RUN_FINISHED: assembled (docs/oracle.md).
        return Outcome(tuple(call.tool_call() for call in self._calls.calls), text, None, State.COMPLETE)


class AGUIDialect(Dialect, StandingIn):
    name = "ag-ui"
    codec_name = "sse"
    default_url = "http://localhost:8000/ag-ui"
    claimed_types = _CLAIMED

    def matches(self, request: Request) -> bool:
        """A `RunAgentInput` (a `threadId` and a `runId`), or a request to the replay server's
        path for an agent's endpoint."""
        if request.url.split("?", 1)[0].rstrip("/").endswith("/ag-ui"):
            return True
        body = request_body(request)
        return body is not None and "threadId" in body and "runId" in body

    def kinds(self, event: Event) -> frozenset[Kind]:
        if event.wire.is_comment:
            return frozenset({Kind.COMMENT})
        payload = event.payload
        kind = payload_type(payload)
        if kind == START:
            return frozenset({Kind.TOOL_START})
        if kind == ARGS:
            return frozenset({Kind.TOOL_ARGS})
        if kind == END:
            return frozenset({Kind.TOOL_END})
        if kind == CHUNK:
            out = set()
            if isinstance(payload.get("toolCallName"), str):
                out.add(Kind.TOOL_START)
            if payload.get("delta"):
                out.add(Kind.TOOL_ARGS)
            return frozenset(out or {Kind.TOOL_ARGS})
        if kind in ("TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_CHUNK"):
            return frozenset({Kind.TEXT})
        if kind == "RUN_FINISHED":
            return frozenset({Kind.FINISH, Kind.SENTINEL})  # the run's end is its only finish
        if kind == "RUN_ERROR":
            return frozenset({Kind.ERROR})
        if kind in _META:
            return frozenset({Kind.META})
        return frozenset({Kind.OTHER})

    def accumulator(self) -> AGUIAccumulator:
        return AGUIAccumulator()

    def finish_reason(self, event: Event) -> Any:
        # AG-UI has no finish reason: the run's end says only that it finished.
        return None if payload_type(event.payload) == "RUN_FINISHED" else MISSING

    # -- editing -------------------------------------------------------------------------------

    def fragments(self, events: Sequence[Event]) -> list[Fragment]:
        calls = ChunkedCalls()
        out: list[Fragment] = []
        for number, event in enumerate(events):
            routed = route(calls, event.payload)
            if routed is not None:
                out.append(Fragment(number, 0, routed[0], routed[1]))
        # A chunk call sent in one chunk and ended by what came next is a whole call in one event.
        counts: dict[int, int] = {}
        for fragment in out:
            counts[fragment.call] = counts.get(fragment.call, 0) + 1
        return [
            Fragment(f.event, f.slot, f.call, Role.WHOLE)
            if counts[f.call] == 1
            and calls.calls[f.call].ended
            and payload_type(events[f.event].payload) == CHUNK
            else f
            for f in out
        ]

    def _kind(self, event: Event, slot: int) -> str:
        kind = payload_type(event.payload)
        if slot != 0 or kind not in _CALL_TYPES:
            raise DialectError(f"ag-ui: no tool-call event at slot {slot} of a {kind or 'data'} event")
        return kind

    def _key(self, kind: str, field: Field) -> str | None:
        if field is Field.ITEM_ID and kind == CHUNK:
            return None  # chunks are routed by position: another id ends the open chunk call
        if field in (Field.ID, Field.ITEM_ID):
            return "toolCallId"  # the call's id is also what routes each of its fragments
        if field is Field.NAME:
            return "toolCallName" if kind in (START, CHUNK) else None
        if field is Field.ARGS:
            return "delta" if kind in (ARGS, CHUNK) else None
        return None  # no index or type on this wire

    def get(self, event: Event, slot: int, field: Field) -> Any:
        key = self._key(self._kind(event, slot), field)
        return MISSING if key is None else event.payload.get(key, MISSING)

    def set(self, event: Event, slot: int, field: Field, value: Any) -> Event:
        kind = self._kind(event, slot)
        key = self._key(kind, field)
        if key is None:
            raise DialectError(f"ag-ui: a {kind} event has no {field}")
        # Only a chunk that continues the open chunk call may go without an id (or a name).
        continues = kind == CHUNK and not isinstance(event.payload.get("toolCallName"), str)
        if (
            field in (Field.ID, Field.ITEM_ID, Field.NAME)
            and not continues
            and not (isinstance(value, str) and value)
        ):
            raise DialectError(f"ag-ui: a {kind} event names its call by {key}")
        payload = copy_json(event.payload)
        if value is MISSING:
            payload.pop(key, None)
        else:
            payload[key] = value
        return event.with_payload(payload)

    def continuation(self, event: Event, slot: int, args: str) -> Event:
        kind = self._kind(event, slot)
        call_id = event.payload.get("toolCallId")
        if kind == CHUNK:
            return self._event({"type": CHUNK, "toolCallId": call_id, "delta": args})
        return self._event({"type": ARGS, "toolCallId": call_id, "delta": args})

    def remove(self, event: Event, slot: int) -> Event | None:
        self._kind(event, slot)
        return None  # an event is one fragment

    def with_finish_reason(self, event: Event, reason: Any) -> Event:
        if reason is MISSING or (reason is None and payload_type(event.payload) == "RUN_FINISHED"):
            return event
        raise DialectError("ag-ui: no event carries a finish reason")

    def _event(self, payload: Any) -> Event:
        return Event(WireEvent(data=self.dumps(payload)), payload)

    def build(self, kind: Kind, **params: Any) -> list[Event]:
        message = f"{kind.value}-{params.get('index', 0)}"
        if kind == Kind.TEXT:
            return [self._event({"type": "TEXT_MESSAGE_START", "messageId": message, "role": "assistant"}),
                    self._event({"type": "TEXT_MESSAGE_CONTENT", "messageId": message,
                                 "delta": params.get("text", "")}),
                    self._event({"type": "TEXT_MESSAGE_END", "messageId": message})]  # fmt: skip
        if kind == Kind.ERROR:
            return [
                self._event({"type": "RUN_ERROR", "message": params.get("message", "internal server error")})
            ]
        if kind == Kind.SENTINEL:
            return [self._event({"type": "RUN_FINISHED", "threadId": params.get("thread", "thread"),
                                 "runId": params.get("run", "run")})]  # fmt: skip
        if kind == Kind.META:
            return [self._event({"type": "RUN_STARTED", "threadId": params.get("thread", "thread"),
                                 "runId": params.get("run", "run")})]  # fmt: skip
        if kind == Kind.TOOL_START:
            start = {"type": START, "toolCallId": params["id"], "toolCallName": params["name"]}
            return [self._event(start)]
        if kind == Kind.TOOL_ARGS:
            args = params.get("args", {})
            text = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
            return [self._event({"type": ARGS, "toolCallId": params["id"], "delta": text})]
        if kind == Kind.TOOL_END:
            return [self._event({"type": END, "toolCallId": params["id"]})]
        if kind == Kind.TOOL_CALL:
            if not params.get("one_event"):
                return [*self.build(Kind.TOOL_START, **params), *self.build(Kind.TOOL_ARGS, **params),
                        *self.build(Kind.TOOL_END, **params)]  # fmt: skip
            args = params.get("args", {})
            text = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
            chunk = {"type": CHUNK, "toolCallId": params["id"], "toolCallName": params["name"], "delta": text}
            return [self._event(chunk)]  # a chunk that starts a call and, with the next event, ends it
        if kind in (Kind.PING, Kind.USAGE, Kind.FINISH, Kind.REASONING):
            return []
        raise DialectError(f"ag-ui: cannot build a {kind} event")

    # -- validation ----------------------------------------------------------------------------

    shape_codes = {
        "C3": Shape("several tool calls, one after another", True, shapes.calls_one_after_another),
        "D6": Shape("no `RUN_FINISHED` (or `RUN_ERROR`) at the end", False, shapes.no_terminal_event),
        "D8": Shape("a `RUN_ERROR` event", True, shapes.error_event),
    }

    invariant_codes = {
        "ag-ui.first-not-run-started": "the first event is RUN_STARTED",
        "ag-ui.start-repeated": "TOOL_CALL_START names an id that is not already open",
        "ag-ui.id-not-active": "TOOL_CALL_ARGS and TOOL_CALL_END name an open call",
        "ag-ui.chunk-without-call": "a TOOL_CALL_CHUNK that starts a call has a toolCallId and a "
        "toolCallName",
        "ag-ui.text-not-active": "TEXT_MESSAGE_CONTENT and TEXT_MESSAGE_END name an open message",
        "ag-ui.finished-while-open": "RUN_FINISHED comes with no tool call or text message open",
        "ag-ui.event-after-end": "nothing follows RUN_FINISHED or RUN_ERROR but a new RUN_STARTED",
    }

    def invariants(self, events: Sequence[Event]) -> list[Violation]:
        """What the reference client's verifier (`verify.ts`) refuses."""
        out: list[Violation] = []
        open_calls: set[Any] = set()
        texts: set[Any] = set()
        chunk: str | None = None
        ended = False
        first = True
        for pos, event in enumerate(events):
            payload = event.payload
            if event.wire.is_comment or not isinstance(payload, dict):
                continue
            kind = payload_type(payload)
            if first and kind != "RUN_STARTED":
                out.append(Violation("ag-ui.first-not-run-started", pos, f"the run starts with {kind}"))
            first = False
            if ended and kind != "RUN_STARTED":
                out.append(Violation("ag-ui.event-after-end", pos, f"{kind} after the run ended"))
            if kind != CHUNK:
                chunk = None
            call_id = payload.get("toolCallId")
            if kind == "RUN_STARTED":
                ended = False
            elif kind == START:
                if call_id in open_calls:
                    out.append(Violation("ag-ui.start-repeated", pos, f"call {call_id!r} started again"))
                open_calls.add(call_id)
            elif kind in (ARGS, END):
                if call_id not in open_calls:
                    out.append(
                        Violation("ag-ui.id-not-active", pos, f"{kind} for {call_id!r}, not an open call")
                    )
                elif kind == END:
                    open_calls.discard(call_id)
            elif kind == CHUNK:
                if call_id is not None and call_id != chunk and call_id not in open_calls:
                    if not isinstance(payload.get("toolCallName"), str):
                        message = f"a chunk starts {call_id!r} without a toolCallName"
                        out.append(Violation("ag-ui.chunk-without-call", pos, message))
                    chunk = call_id
                elif call_id is None and chunk is None:
                    out.append(
                        Violation("ag-ui.chunk-without-call", pos, "a chunk without an id and no open call")
                    )
            elif kind == "TEXT_MESSAGE_START":
                texts.add(payload.get("messageId"))
            elif kind in ("TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END"):
                if payload.get("messageId") not in texts:
                    out.append(Violation("ag-ui.text-not-active", pos, f"{kind} for a message not started"))
                elif kind == "TEXT_MESSAGE_END":
                    texts.discard(payload.get("messageId"))
            elif kind == "RUN_FINISHED":
                if open_calls or texts:
                    message = f"{len(open_calls)} call(s) and {len(texts)} message(s) still open"
                    out.append(Violation("ag-ui.finished-while-open", pos, message))
                ended = True
            elif kind == "RUN_ERROR":
                ended = True
        return out

    # -- standing in for the agent (`toolstream serve`) -------------------------------------------

    # A frontend tool's result is a new run: its `messages` hold the assistant message with
    # `toolCalls` and a `role: tool` message per result (docs.ag-ui.com/concepts/tools).
    followup = Followup(
        call=Entry(("id",), ("function", "arguments"), (("function", "name"),)),
        result=Entry(("toolCallId",), ("content",), kind="role", kinds=("tool",)),
        calls_in="toolCalls",
    )

    def read_followup(self, body: Mapping[str, Any]) -> Turn | None:
        """The turn after the last user message: the reducer keeps a call without a
        `parentMessageId` in an assistant message of its own, so the calls of one turn may be
        spread over several; their results are the `role: tool` messages among them."""
        messages = mappings(body.get("messages"))
        users = [n for n, m in enumerate(messages) if m.get("role") == "user"]
        turn = messages[users[-1] + 1 :] if users else messages
        assistant = {
            "messages": [
                {
                    "role": "assistant",
                    "content": "".join(
                        m["content"]
                        for m in turn
                        if m.get("role") == "assistant" and isinstance(m.get("content"), str)
                    ),
                    "toolCalls": [
                        c for m in turn if m.get("role") == "assistant" for c in mappings(m.get("toolCalls"))
                    ],
                }
            ]
        }
        results = [m for m in turn if m.get("role") == "tool"]
        return self.followup.read({"messages": [*assistant["messages"], *results]})

    def final_stream(self) -> bytes:
        return sse(
            (None, payload)
            for payload in (
                {"type": "RUN_STARTED", "threadId": "final", "runId": "final"},
                {"type": "TEXT_MESSAGE_START", "messageId": "final", "role": "assistant"},
                {"type": "TEXT_MESSAGE_CONTENT", "messageId": "final", "delta": FINAL_TEXT},
                {"type": "TEXT_MESSAGE_END", "messageId": "final"},
                {"type": "RUN_FINISHED", "threadId": "final", "runId": "final"},
            )
        )

    def whole_response(self, outcome: Outcome) -> dict[str, Any]:
        """The outcome as the assistant message a client's reducer builds (AG-UI has no whole form)."""
        calls = [
            {"id": call_id(c, n, "call_"), "type": "function",
             "function": {"name": c.name or "", "arguments": c.arguments if isinstance(c.arguments, str)
                          else dumps(c.arguments)}}
            for n, c in enumerate(outcome.tool_calls)
        ]  # fmt: skip
        return {"id": "replay", "role": "assistant", "content": outcome.text, "toolCalls": calls}


DIALECT = AGUIDialect()
