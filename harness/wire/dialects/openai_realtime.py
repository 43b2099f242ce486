"""The OpenAI Realtime API over a WebSocket (`wss://api.openai.com/v1/realtime?model=...`): one
JSON server event per text message, no SSE framing, no sentinel. Sources: the openai-python types
`types/realtime/response_function_call_arguments_{delta,done}_event.py`,
`response_output_item_added_event.py`, `response_done_event.py`, `realtime_response.py`,
`realtime_error_event.py`; developers.openai.com/api/docs/guides/realtime.

A function call: `response.output_item.added` (`item`: `id`, `type: function_call`, `call_id`,
`name`, `arguments: ""`), `response.function_call_arguments.delta` (`item_id`, `call_id`,
`delta`), `response.function_call_arguments.done` (`arguments`, `name`), `response.output_item.done`
(the whole item); the response ends with `response.done` (`response`: `status`
completed|cancelled|failed|incomplete, `output`). Every event has an `event_id`; `error` events
are in-band errors; `rate_limits.updated` and the session and conversation events interleave.

Keying rules of the reference accumulator (and of `fragments`):

- A call is keyed by its item id (`item.id` of `output_item.added`, `item_id` of the argument
  events); its id is the item's `call_id`, its name the item's `name` (or `.done`'s).
- Arguments are the deltas joined; the `arguments` of `.done`, then of the item in
  `output_item.done`, win when present (they are the server's own text).
- A call is final at its `function_call_arguments.done` or `output_item.done`. `response.done`
  ends the response: with status `completed`, every call streamed is final; its `output` is not
  read for calls, since it may be `null` (openai/openai-python#2530): what was streamed is the
  answer. Another status keeps only the calls already final (`cancelled`, `incomplete` cut them;
  `failed` is an error state). `response.done` is the terminal event, `error` the in-band error
  (the ending rules: `Oracle`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from harness.cassettes.model import Request
from harness.cassettes.outcome import Outcome, State, ToolCall
from harness.errors import DialectError
from harness.wire.codecs import WireEvent
from harness.wire.dialects import shapes
from harness.wire.dialects.base import (
    MISSING,
    Dialect,
    Event,
    Field,
    Finish,
    Fragment,
    Kind,
    ReferenceAccumulator,
    Role,
    Shape,
    Violation,
    copy_json,
    payload_type,
)
from harness.wire.dialects.requesting import FINAL_TEXT, StandingIn, ToolResult, Turn, as_str, mappings

ADDED, ITEM_DONE = "response.output_item.added", "response.output_item.done"
DELTA, ARGS_DONE = "response.function_call_arguments.delta", "response.function_call_arguments.done"
DONE, ERROR = "response.done", "error"
TEXT_DELTAS: Final = frozenset({"response.output_text.delta", "response.text.delta"})
STATUSES: Final = frozenset({"completed", "cancelled", "failed", "incomplete", "in_progress"})
_CLAIMED: Final = frozenset({"session.created", "session.updated", "response.done", "rate_limits.updated",
                             "conversation.item.created", "conversation.item.added"})  # fmt: skip


def _item(payload: Any) -> dict[str, Any]:
    item = payload.get("item") if isinstance(payload, dict) else None
    return item if isinstance(item, dict) else {}


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


@dataclass
class _Call:
    item_id: str | None
    id: str | None = None
    name: str | None = None
    deltas: list[str] = field(default_factory=list)
    arguments: str | None = None  # the server's own whole text, when it sent it
    final: bool = False

    def fill(self, item: Mapping[str, Any]) -> None:
        self.id = self.id or _str(item.get("call_id"))
        self.name = self.name or _str(item.get("name"))

    def tool_call(self) -> ToolCall:
        text = self.arguments if self.arguments is not None else "".join(self.deltas)
        return ToolCall.from_text(self.name, text, self.id)


class _Calls:
    def __init__(self) -> None:
        self.calls: list[_Call] = []
        self.by_item: dict[str, int] = {}

    def _open(self, item_id: str | None) -> int:
        self.calls.append(_Call(item_id))
        if item_id is not None:
            self.by_item[item_id] = len(self.calls) - 1
        return len(self.calls) - 1

    def route(self, payload: Any) -> tuple[int, Role] | None:
        kind = payload_type(payload)
        if kind in (ADDED, ITEM_DONE):
            item = _item(payload)
            if item.get("type") != "function_call":
                return None
            item_id = _str(item.get("id"))
            number = self.by_item.get(item_id) if item_id is not None else None
            if kind == ADDED:
                if number is not None:
                    return None  # a repeated start
                number = self._open(item_id)
                self.calls[number].fill(item)
                return number, Role.START
            if number is None:
                number = self._open(item_id)
            call = self.calls[number]
            call.fill(item)
            if not call.final and isinstance(item.get("arguments"), str) and item["arguments"]:
                call.arguments = item["arguments"]
            call.final = True
            return number, Role.END
        if kind not in (DELTA, ARGS_DONE):
            return None
        item_id = _str(payload.get("item_id"))
        number = self.by_item.get(item_id) if item_id is not None else None
        if number is None:
            return None  # arguments for an item never added: nothing to give them to
        call = self.calls[number]
        if call.final:
            return None
        if kind == DELTA:
            if isinstance(payload.get("delta"), str):
                call.deltas.append(payload["delta"])
            return number, Role.ARGS
        call.fill(payload)
        if isinstance(payload.get("arguments"), str):
            call.arguments = payload["arguments"]
        call.final = True
        return number, Role.END


def _status(payload: Any) -> Any:
    response = payload.get("response") if isinstance(payload, dict) else None
    return response.get("status", MISSING) if isinstance(response, dict) else MISSING


class RealtimeAccumulator(ReferenceAccumulator):
    """Reference accumulator for Realtime server events (rules in the module docstring)."""

    def __init__(self) -> None:
        self._calls = _Calls()
        self._text: list[str] = []
        self._status: str | None = None
        self._done = False
        self._error: str | None = None

    def feed(self, event: Event) -> None:
        payload = event.payload
        if self._done or not isinstance(payload, dict):
            return
        self._calls.route(payload)
        kind = payload_type(payload)
        if kind in TEXT_DELTAS and isinstance(payload.get("delta"), str):
            self._text.append(payload["delta"])
        elif kind == DONE:
            self._done = True
            status = _status(payload)
            self._status = status if isinstance(status, str) else None
            if self._status == "completed":
                for call in self._calls.calls:
                    call.final = True
            elif self._status == "failed" and self._error is None:
                details = payload["response"].get("status_details")
                self._error = f"response failed: {json.dumps(details) if details else 'no details'}"
        elif kind == ERROR and self._error is None:
            error = payload.get("error")
            self._error = str(error.get("message") if isinstance(error, dict) else error)

    def close(self, error: str | None = None) -> Outcome:
        calls = tuple(call.tool_call() for call in self._calls.calls if call.final)
        text = "".join(self._text)
        if self._error is not None:
            return Outcome(calls, text, self._status, State.ERROR, self._error)
        if not self._done:
            return Outcome(
                calls, text, self._status, State.CUT, error or "session ended without response.done"
            )
        return Outcome(calls, text, self._status, State.COMPLETE)


class OpenAIRealtime(Dialect, StandingIn):
    name = "openai-realtime"
    codec_name = "websocket"
    default_url = "wss://api.openai.com/v1/realtime"
    claimed_types = _CLAIMED

    def matches(self, request: Request) -> bool:
        return request.url.split("?", 1)[0].rstrip("/").endswith("/realtime")

    def kinds(self, event: Event) -> frozenset[Kind]:
        if event.wire.is_comment:
            return frozenset({Kind.PING} if event.wire.comment in ("ping", "pong") else {Kind.COMMENT})
        payload = event.payload
        kind = payload_type(payload)
        if kind in (ADDED, ITEM_DONE) and _item(payload).get("type") == "function_call":
            return frozenset({Kind.TOOL_START} if kind == ADDED else {Kind.TOOL_END})
        if kind == DELTA:
            return frozenset({Kind.TOOL_ARGS})
        if kind == ARGS_DONE:
            return frozenset({Kind.TOOL_END})
        if kind in TEXT_DELTAS:
            return frozenset({Kind.TEXT})
        if kind == DONE:
            out = {Kind.FINISH, Kind.SENTINEL}
            response = payload.get("response") if isinstance(payload, dict) else None
            if isinstance(response, dict) and response.get("usage"):
                out.add(Kind.USAGE)
            return frozenset(out)
        if event.wire.name == "close":
            # A close frame is the session's control frame, no message (its data is the reason):
            # read as a comment is, so a recorded session that was closed normally loads.
            return frozenset({Kind.COMMENT})
        if kind == ERROR:
            return frozenset({Kind.ERROR})
        if kind is not None and kind.startswith(("session.", "conversation.", "response.")):
            return frozenset({Kind.META})
        return frozenset({Kind.OTHER})

    def accumulator(self) -> RealtimeAccumulator:
        return RealtimeAccumulator()

    def finish_reason(self, event: Event) -> Any:
        return _status(event.payload) if payload_type(event.payload) == DONE else MISSING

    def with_finish_reason(self, event: Event, reason: Any) -> Event:
        if payload_type(event.payload) != DONE:
            if reason is MISSING:
                return event
            raise DialectError("openai-realtime: only response.done carries a status")
        payload = copy_json(event.payload)
        response = payload.setdefault("response", {})
        if reason is MISSING:
            response.pop("status", None)
        else:
            response["status"] = reason
        return event.with_payload(payload)

    # -- editing -------------------------------------------------------------------------------

    finish_reasons = {Finish.STOP: "completed", Finish.LENGTH: "incomplete"}
    finish_vocabulary = STATUSES

    def fragments(self, events: Sequence[Event]) -> list[Fragment]:
        calls = _Calls()
        out: list[Fragment] = []
        for number, event in enumerate(events):
            routed = calls.route(event.payload)
            if routed is not None:
                out.append(Fragment(number, 0, routed[0], routed[1]))
        return out

    def _place(self, event: Event, slot: int, field: Field) -> tuple[bool, str | None]:
        """(whether the field is in `item`, its key) for a fragment's event."""
        kind = payload_type(event.payload)
        if slot != 0 or kind not in (ADDED, ITEM_DONE, DELTA, ARGS_DONE):
            raise DialectError(f"openai-realtime: no call event at slot {slot} of a {kind or 'data'} event")
        in_item = kind in (ADDED, ITEM_DONE)
        keys = {
            Field.ID: "call_id",
            Field.ITEM_ID: "id" if in_item else "item_id",
            Field.NAME: "name",
            Field.INDEX: "output_index",
            Field.ARGS: "arguments" if kind != DELTA else "delta",
            Field.TYPE: "type" if in_item else None,
        }
        key = keys.get(field)
        if field is Field.INDEX:
            return False, key
        if kind == DELTA and field is Field.NAME:
            key = None
        return in_item, key

    def get(self, event: Event, slot: int, field: Field) -> Any:
        in_item, key = self._place(event, slot, field)
        if key is None:
            return MISSING
        target = _item(event.payload) if in_item else event.payload
        return target.get(key, MISSING)

    def set(self, event: Event, slot: int, field: Field, value: Any) -> Event:
        in_item, key = self._place(event, slot, field)
        if key is None:
            raise DialectError(f"openai-realtime: a {payload_type(event.payload)} event has no {field}")
        if field is Field.ITEM_ID and not (isinstance(value, str) and value):
            raise DialectError("openai-realtime: the item id routes every event of a call")
        payload = copy_json(event.payload)
        target = payload.setdefault("item", {}) if in_item else payload
        if value is MISSING:
            target.pop(key, None)
        else:
            target[key] = value
        return event.with_payload(payload)

    def continuation(self, event: Event, slot: int, args: str) -> Event:
        in_item, _ = self._place(event, slot, Field.ARGS)
        payload = event.payload
        item_id = _item(payload).get("id") if in_item else payload.get("item_id")
        delta: dict[str, Any] = {"type": DELTA, "event_id": f"{payload.get('event_id', 'event')}_more"}
        delta.update({k: v for k, v in (("response_id", payload.get("response_id")), ("item_id", item_id),
                     ("output_index", payload.get("output_index")),
                     ("call_id", _item(payload).get("call_id") if in_item else payload.get("call_id")))
                     if v is not None})  # fmt: skip
        delta["delta"] = args
        return self._event(delta)

    def remove(self, event: Event, slot: int) -> Event | None:
        self._place(event, slot, Field.ARGS)
        return None

    def _event(self, payload: dict[str, Any]) -> Event:
        return Event(WireEvent(data=self.dumps(payload)), payload)

    def build(self, kind: Kind, **params: Any) -> list[Event]:
        n = params.get("index", 0)
        if kind == Kind.TEXT:
            return [self._event({"type": "response.output_text.delta", "event_id": f"event_text_{n}",
                                 "item_id": f"item_text_{n}", "output_index": n, "content_index": 0,
                                 "delta": params.get("text", "")})]  # fmt: skip
        if kind == Kind.ERROR:
            error = {
                "type": "server_error",
                "code": None,
                "message": params.get("message", "The server had an error"),
            }
            return [self._event({"type": ERROR, "event_id": "event_error", "error": error})]
        if kind in (Kind.FINISH, Kind.SENTINEL):
            status = params.get("reason", "completed")
            return [self._event({"type": DONE, "event_id": "event_done",
                                 "response": {"object": "realtime.response", "id": "resp_replay",
                                              "status": status, "output": []}})]  # fmt: skip
        if kind == Kind.META:
            return [self._event({"type": "response.created", "event_id": "event_created",
                                 "response": {"object": "realtime.response", "id": "resp_replay",
                                              "status": "in_progress", "output": []}})]  # fmt: skip
        if kind in (Kind.PING, Kind.USAGE, Kind.REASONING):
            return []
        raise DialectError(f"openai-realtime: cannot build a {kind} event")

    # -- validation ----------------------------------------------------------------------------

    shape_codes = {
        "C3": Shape("several function calls, one after another", True, shapes.calls_one_after_another),
        "D6": Shape("no `response.done` at the end", False, shapes.no_terminal_event),
        "D8": Shape("an `error` event", True, shapes.error_event),
    }

    invariant_codes = {
        "openai-realtime.item-unknown": "an argument event names an item that was added",
        "openai-realtime.delta-after-done": "no argument delta follows its item's arguments .done",
        "openai-realtime.status-unknown": "response.done's status is one of the documented values",
        "openai-realtime.event-after-done": "no response event follows response.done",
    }

    def invariants(self, events: Sequence[Event]) -> list[Violation]:
        out: list[Violation] = []
        added: set[Any] = set()
        finished: set[Any] = set()
        done = False
        for pos, event in enumerate(events):
            payload = event.payload
            kind = payload_type(payload)
            if kind is None:
                continue
            if done and kind.startswith("response."):
                out.append(Violation("openai-realtime.event-after-done", pos, f"{kind} after response.done"))
            if kind == ADDED:
                added.add(_item(payload).get("id"))
            elif kind in (DELTA, ARGS_DONE):
                item_id = payload.get("item_id")
                if item_id not in added:
                    out.append(Violation("openai-realtime.item-unknown", pos, f"{kind} for item {item_id!r}"))
                elif kind == DELTA and item_id in finished:
                    out.append(
                        Violation(
                            "openai-realtime.delta-after-done", pos, f"a delta for {item_id!r} after .done"
                        )
                    )
                if kind == ARGS_DONE:
                    finished.add(item_id)
            elif kind == DONE:
                done = True
                status = _status(payload)
                if status is not MISSING and status not in STATUSES:
                    out.append(Violation("openai-realtime.status-unknown", pos, f"status {status!r}"))
        return out

    # -- standing in for the server (`toolstream serve`) ------------------------------------------

    media_type = "application/x-websocket-frames"
    websocket_session = "on-connect"

    def websocket_followup(self, messages: Sequence[Mapping[str, Any]]) -> Turn | None:
        return self.read_followup({"events": list(messages)})

    def read_followup(self, body: Mapping[str, Any]) -> Turn | None:
        """What a client sent after the response: `{"events": [...]}`, its client events in order.
        A result is a `conversation.item.create` of a `function_call_output` item; the calls are
        the server's conversation state, named by `call_id` only (`by_reference`)."""
        results = tuple(
            ToolResult(as_str(_item(message).get("call_id")), None, _item(message).get("output"))
            for message in mappings(body.get("events"))
            if message.get("type") == "conversation.item.create"
            and _item(message).get("type") == "function_call_output"
        )
        return Turn((), results, by_reference=True) if results else None

    def final_stream(self) -> bytes:
        from harness.wire.codecs.websocket import WebSocketCodec

        payloads = [
            {
                "type": "response.created",
                "event_id": "event_final_1",
                "response": {
                    "object": "realtime.response",
                    "id": "resp_final",
                    "status": "in_progress",
                    "output": [],
                },
            },
            {
                "type": "response.output_text.delta",
                "event_id": "event_final_2",
                "response_id": "resp_final",
                "item_id": "item_final",
                "output_index": 0,
                "content_index": 0,
                "delta": FINAL_TEXT,
            },
            {
                "type": DONE,
                "event_id": "event_final_3",
                "response": {
                    "object": "realtime.response",
                    "id": "resp_final",
                    "status": "completed",
                    "output": [],
                },
            },
        ]
        return WebSocketCodec().encode(WireEvent(data=self.dumps(p)) for p in payloads)

    def whole_response(self, outcome: Outcome) -> dict[str, Any]:
        return {"type": DONE, "response": {"status": outcome.finish_reason or "completed", "output": []}}

    def error_body(self, message: str) -> Mapping[str, Any]:
        return {"type": ERROR, "error": {"type": "invalid_request_error", "message": message}}


DIALECT = OpenAIRealtime()
