"""The Vercel AI SDK UI message stream (`ai` v5+: `toUIMessageStreamResponse()`, read by `useChat`
and `readUIMessageStream`): SSE `data:` lines of JSON chunks, no `event:` names, ending with
`data: [DONE]`; the response is marked `x-vercel-ai-ui-message-stream: v1`.

Chunks: `start` (`messageId`), `start-step` / `finish-step`, `text-start` / `text-delta` /
`text-end` (`id`, `delta`), `reasoning-*` likewise, `tool-input-start` (`toolCallId`, `toolName`),
`tool-input-delta` (`toolCallId`, `inputTextDelta`: raw argument text), `tool-input-available`
(`toolCallId`, `toolName`, `input`: the parsed input), `tool-input-error` (`input`, `errorText`),
`tool-output-available` / `tool-output-error` (a tool the server ran), `finish` (`finishReason`
in v6+), `error` (`errorText`), `abort`. Source: ai-sdk.dev/docs/ai-sdk-ui/stream-protocol and
`packages/ai/src/ui-message-stream/ui-message-chunks.ts` of vercel/ai.

Keying rules of the reference accumulator (and of `fragments`), beyond those of `keyed.py`:

- A delta for an id no start opened is a stream resumed into the part (`resumeStream` joins the
  server's stream where it is): the call is known from there, its name and input from its
  `tool-input-available`. A delta after the call's input is available is ignored.
- The input of `tool-input-available` is the call's arguments, whatever the deltas said (it is
  the producer's own parse; a freeform tool's input is a string and stays one). Without one, the
  deltas joined. `tool-input-error` ends the call as invalid, its `input` as sent.

Finality: a call is final at its `tool-input-available` (or `tool-input-error`). The finish is
`finish`, the terminal event `[DONE]`, the in-band errors `error` and `abort` (the ending rules:
`Oracle`). Nothing after `[DONE]` counts.
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
    Finish,
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
    StandingIn,
    ToolResult,
    Turn,
    as_str,
    call_from,
    mappings,
    sse,
)

SENTINEL: Final = "[DONE]"
START, DELTA, AVAILABLE, INPUT_ERROR = (
    "tool-input-start",
    "tool-input-delta",
    "tool-input-available",
    "tool-input-error",
)
_CALL_TYPES: Final = frozenset({START, DELTA, AVAILABLE, INPUT_ERROR})
_ENDS: Final = frozenset({AVAILABLE, INPUT_ERROR})
# The chunk types only this stream sends (`start`, `finish` and `error` are too common a word).
_CLAIMED: Final = frozenset(
    {
        "start-step",
        "finish-step",
        "text-start",
        "text-delta",
        "text-end",
        "reasoning-start",
        "reasoning-delta",
        "reasoning-end",
        START,
        DELTA,
        AVAILABLE,
        INPUT_ERROR,
        "tool-output-available",
        "tool-output-error",
        "message-metadata",
    }
)
FINISH_REASONS: Final = frozenset({"stop", "length", "content-filter", "tool-calls", "error", "other"})
# Response headers `toUIMessageStreamResponse()` sends (ui-message-stream-headers.ts).
HEADERS: Final = {
    "content-type": "text/event-stream",
    "cache-control": "no-cache",
    "connection": "keep-alive",
    "x-vercel-ai-ui-message-stream": "v1",
    "x-accel-buffering": "no",
}


def _str(payload: dict[str, Any], key: str) -> str | None:
    value = payload.get(key)
    return value if isinstance(value, str) else None


def _input(args: Any) -> Any:
    """A call's arguments as `tool-input-available` carries them: parsed where they are JSON text
    (`streamText` parses them), as they are otherwise (a freeform tool's string)."""
    if isinstance(args, str):
        try:
            return json.loads(args)
        except ValueError:
            return args
    return args


def route(calls: KeyedCalls, payload: Any) -> tuple[int, Role] | None:
    """Which call a chunk belongs to and its role there (None: no tool-input chunk, or one that
    can be given to no call), updating `calls` as the reference reads the stream."""
    kind = payload_type(payload)
    if kind not in _CALL_TYPES:
        return None
    call_id = _str(payload, "toolCallId")
    if not call_id:
        return None
    number = calls.number(call_id)
    if kind == START:
        if number is not None:
            return None  # a repeated start: the call is already known
        return calls.open(call_id, _str(payload, "toolName")), Role.START
    if kind == DELTA:
        if number is None:
            number = calls.open(call_id, None)
            calls.calls[number].joined = True  # resumed into the part
        call = calls.calls[number]
        if call.ended:
            return None
        piece = payload.get("inputTextDelta")
        if isinstance(piece, str):
            call.pieces.append(piece)
        return number, Role.ARGS
    role = Role.END if number is not None else Role.WHOLE
    if number is None:
        number = calls.open(call_id, None)
    call = calls.calls[number]
    if call.ended:
        return None
    call.ended = True
    call.name = call.name or _str(payload, "toolName")
    if "input" in payload:
        call.whole = payload["input"]
    elif call.joined:
        call.whole = None  # the start of its text never came and nothing restates it
    call.invalid = kind == INPUT_ERROR
    return number, role


class AISDKUIAccumulator(ReferenceAccumulator):
    """Reference accumulator for the AI SDK UI message stream (rules in the module docstring)."""

    def __init__(self) -> None:
        self._calls = KeyedCalls()
        self._text: list[str] = []
        self._finish: str | None = None
        self._finished = False
        self._done = False
        self._error: str | None = None

    def feed(self, event: Event) -> None:
        payload = event.payload
        if payload == SENTINEL:
            self._done = True
            return
        if self._done or not isinstance(payload, dict):
            return
        kind = payload_type(payload)
        if kind in _CALL_TYPES:
            route(self._calls, payload)
        elif kind == "text-delta" and isinstance(payload.get("delta"), str):
            self._text.append(payload["delta"])
        elif kind == "finish":
            self._finished = True
            reason = payload.get("finishReason")
            self._finish = reason if isinstance(reason, str) else None
        elif kind == "error" and self._error is None:
            self._error = str(payload.get("errorText") or "error chunk")
        elif kind == "abort" and self._error is None:
            self._error = f"aborted: {payload.get('reason') or 'no reason given'}"

    def close(self, error: str | None = None) -> Outcome:
        calls, text = self._calls.final(), "".join(self._text)
        if self._error is not None:
            return Outcome(calls, text, self._finish, State.ERROR, self._error)
        if not (self._done or (self._finished and error is None)):
            return Outcome(calls, text, self._finish, State.CUT, error or "stream ended without finish")
        if self._finish != "length":  # a call still streaming when the turn ended: assembled
            calls = tuple(call.tool_call() for call in self._calls.calls)  # (docs/oracle.md)
        return Outcome(calls, text, self._finish, State.COMPLETE)


_FIELD_KEYS: Final = {Field.ID: "toolCallId", Field.NAME: "toolName"}
_ARGS_KEYS: Final = {DELTA: "inputTextDelta", AVAILABLE: "input", INPUT_ERROR: "input"}
_NAMED: Final = frozenset({START, AVAILABLE, INPUT_ERROR})


class AISDKUIDialect(Dialect, StandingIn):
    name = "ai-sdk-ui"
    codec_name = "sse"
    default_url = "http://localhost:3000/ui-message-stream"  # an app's endpoint has no usual path
    claimed_types = _CLAIMED

    def matches(self, request: Request) -> bool:
        """A `useChat` request: a `trigger`, or UI messages made of `parts`; or a request to the
        replay server's path for an app's chat endpoint."""
        if request.url.split("?", 1)[0].rstrip("/").endswith("/ui-message-stream"):
            return True
        body = request_body(request)
        if body is None:
            return False
        messages = body.get("messages")
        parts = isinstance(messages, list) and any(isinstance(m, dict) and "parts" in m for m in messages)
        return "trigger" in body or parts

    def kinds(self, event: Event) -> frozenset[Kind]:
        payload = event.payload
        if event.wire.is_comment:
            return frozenset({Kind.COMMENT})
        if payload == SENTINEL:
            return frozenset({Kind.SENTINEL})
        kind = payload_type(payload)
        if kind == START:
            return frozenset({Kind.TOOL_START})
        if kind == DELTA:
            return frozenset({Kind.TOOL_ARGS})
        if kind in _ENDS:
            return frozenset({Kind.TOOL_END})
        if kind == "text-delta":
            return frozenset({Kind.TEXT})
        if kind == "reasoning-delta":
            return frozenset({Kind.REASONING})
        if kind == "finish":
            return frozenset({Kind.FINISH})
        if kind in ("error", "abort"):
            return frozenset({Kind.ERROR})
        if kind in ("start", "start-step", "finish-step", "text-start", "text-end", "reasoning-start",
                    "reasoning-end", "message-metadata"):  # fmt: skip
            return frozenset({Kind.META})
        return frozenset({Kind.OTHER})

    def accumulator(self) -> AISDKUIAccumulator:
        return AISDKUIAccumulator()

    def finish_reason(self, event: Event) -> Any:
        if payload_type(event.payload) != "finish":
            return MISSING
        return event.payload.get("finishReason", MISSING)

    # -- editing -------------------------------------------------------------------------------

    finish_reasons = {
        Finish.STOP: "stop",
        Finish.TOOL_CALLS: "tool-calls",
        Finish.LENGTH: "length",
        Finish.CONTENT_FILTER: "content-filter",
    }
    finish_vocabulary = FINISH_REASONS

    def fragments(self, events: Sequence[Event]) -> list[Fragment]:
        calls = KeyedCalls()
        out: list[Fragment] = []
        for number, event in enumerate(events):
            routed = route(calls, event.payload)
            if routed is not None:
                out.append(Fragment(number, 0, routed[0], routed[1]))
        return out

    def _kind(self, event: Event, slot: int) -> str:
        kind = payload_type(event.payload)
        if slot != 0 or kind not in _CALL_TYPES:
            raise DialectError(f"ai-sdk-ui: no tool-input chunk at slot {slot} of a {kind or 'data'} event")
        return kind

    def _key(self, kind: str, field: Field) -> str | None:
        if field in (Field.ID, Field.ITEM_ID):
            return "toolCallId"  # the call's id is also what routes each of its fragments
        if field is Field.NAME:
            return "toolName" if kind in _NAMED else None
        if field is Field.ARGS:
            return _ARGS_KEYS.get(kind)
        return None  # no index or type on this wire

    def get(self, event: Event, slot: int, field: Field) -> Any:
        key = self._key(self._kind(event, slot), field)
        return MISSING if key is None else event.payload.get(key, MISSING)

    def set(self, event: Event, slot: int, field: Field, value: Any) -> Event:
        kind = self._kind(event, slot)
        key = self._key(kind, field)
        if key is None:
            raise DialectError(f"ai-sdk-ui: a {kind} chunk has no {field}")
        if field in (Field.ID, Field.ITEM_ID) and not (isinstance(value, str) and value):
            raise DialectError("ai-sdk-ui: every tool-input chunk names its call by toolCallId")
        if field is Field.NAME and not (isinstance(value, str) and value):
            raise DialectError("ai-sdk-ui: a tool part's name is its toolName")
        payload = copy_json(event.payload)
        if value is MISSING:
            payload.pop(key, None)
        else:
            payload[key] = value
        return event.with_payload(payload)

    def continuation(self, event: Event, slot: int, args: str) -> Event:
        self._kind(event, slot)
        call_id = event.payload.get("toolCallId")
        return self._event({"type": DELTA, "toolCallId": call_id, "inputTextDelta": args})

    def remove(self, event: Event, slot: int) -> Event | None:
        self._kind(event, slot)
        return None  # a chunk is one fragment

    def with_finish_reason(self, event: Event, reason: Any) -> Event:
        if payload_type(event.payload) != "finish":
            if reason is MISSING:
                return event
            raise DialectError("ai-sdk-ui: only a finish chunk carries a finishReason")
        payload = copy_json(event.payload)
        if reason is MISSING:
            payload.pop("finishReason", None)
        else:
            payload["finishReason"] = reason
        return event.with_payload(payload)

    def _event(self, payload: Any) -> Event:
        if payload == SENTINEL:
            return Event(WireEvent(data=SENTINEL), SENTINEL)
        return Event(WireEvent(data=self.dumps(payload)), payload)

    def build(self, kind: Kind, **params: Any) -> list[Event]:
        part = f"{kind.value}-{params.get('index', 0)}"
        if kind == Kind.TEXT:
            text = params.get("text", "")
            return [self._event({"type": "text-start", "id": part}),
                    self._event({"type": "text-delta", "id": part, "delta": text}),
                    self._event({"type": "text-end", "id": part})]  # fmt: skip
        if kind == Kind.REASONING:
            text = params.get("text", "")
            return [self._event({"type": "reasoning-start", "id": part}),
                    self._event({"type": "reasoning-delta", "id": part, "delta": text}),
                    self._event({"type": "reasoning-end", "id": part})]  # fmt: skip
        if kind == Kind.ERROR:
            return [
                self._event({"type": "error", "errorText": params.get("message", "internal server error")})
            ]
        if kind == Kind.FINISH:
            return [self._event({"type": "finish", "finishReason": params.get("reason", "stop")})]
        if kind == Kind.SENTINEL:
            return [self._event(SENTINEL)]
        if kind == Kind.META:
            return [self._event({"type": "start"})]
        if kind == Kind.TOOL_START:
            return [self._event({"type": START, "toolCallId": params["id"], "toolName": params["name"]})]
        if kind == Kind.TOOL_ARGS:
            args = params.get("args", {})
            text = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
            return [self._event({"type": DELTA, "toolCallId": params["id"], "inputTextDelta": text})]
        if kind == Kind.TOOL_END:
            end = {"type": AVAILABLE, "toolCallId": params["id"], "toolName": params["name"],
                   "input": _input(params.get("args", {}))}  # fmt: skip
            return [self._event(end)]
        if kind == Kind.TOOL_CALL:
            if params.get("one_event"):
                return self.build(Kind.TOOL_END, **params)  # a call its provider did not stream: no start
            return [*self.build(Kind.TOOL_START, **params), *self.build(Kind.TOOL_ARGS, **params),
                    *self.build(Kind.TOOL_END, **params)]  # fmt: skip
        if kind in (Kind.PING, Kind.USAGE):
            return []
        raise DialectError(f"ai-sdk-ui: cannot build a {kind} event")

    # -- validation ----------------------------------------------------------------------------

    shape_codes = {
        "C3": Shape("several tool calls, one after another", True, shapes.calls_one_after_another),
        "D6": Shape("no `finish` part (or `[DONE]`) at the end", False, shapes.no_terminal_event),
        "D8": Shape("an `error` part", True, shapes.error_event),
    }

    invariant_codes = {
        "ai-sdk-ui.delta-without-start": "a tool-input-delta names a call a tool-input-start opened "
        "(readUIMessageStream throws otherwise)",
        "ai-sdk-ui.tool-start-repeated": "a call starts once",
        "ai-sdk-ui.input-after-available": "no tool-input-delta follows its call's tool-input-available",
        "ai-sdk-ui.text-without-start": "a text-delta or text-end names a part a text-start opened",
        "ai-sdk-ui.finish-reason-unknown": "finishReason is one of the documented values",
        "ai-sdk-ui.event-after-finish": "nothing but [DONE] follows finish",
        "ai-sdk-ui.event-after-done": "nothing follows [DONE]",
    }

    def invariants(self, events: Sequence[Event]) -> list[Violation]:
        """The order `readUIMessageStream` holds a stream to (process-ui-message-stream.ts), and the
        end: a documented finishReason, nothing after finish but [DONE], nothing after [DONE]."""
        out: list[Violation] = []
        started: set[Any] = set()
        available: set[Any] = set()
        texts: set[Any] = set()
        finished = done = False
        for pos, event in enumerate(events):
            if event.wire.is_comment:
                continue
            payload = event.payload
            if done:
                out.append(Violation("ai-sdk-ui.event-after-done", pos, "an event after [DONE]"))
                continue
            if payload == SENTINEL:
                done = True
                continue
            kind = payload_type(payload)
            if finished:
                out.append(Violation("ai-sdk-ui.event-after-finish", pos, f"{kind} after finish"))
            call_id = payload.get("toolCallId") if isinstance(payload, dict) else None
            if kind == START:
                if call_id in started:
                    out.append(
                        Violation("ai-sdk-ui.tool-start-repeated", pos, f"call {call_id!r} started again")
                    )
                started.add(call_id)
            elif kind == DELTA:
                if call_id not in started:
                    message = f"tool-input-delta for {call_id!r}, which no tool-input-start opened"
                    out.append(Violation("ai-sdk-ui.delta-without-start", pos, message))
                elif call_id in available:
                    message = f"tool-input-delta for {call_id!r} after its input was available"
                    out.append(Violation("ai-sdk-ui.input-after-available", pos, message))
            elif kind in _ENDS:
                available.add(call_id)
            elif kind == "text-start":
                texts.add(payload.get("id"))
            elif kind in ("text-delta", "text-end") and payload.get("id") not in texts:
                out.append(Violation("ai-sdk-ui.text-without-start", pos, f"{kind} for a part never started"))
            elif kind == "finish":
                finished = True
                reason = payload.get("finishReason")
                if reason is not None and reason not in FINISH_REASONS:
                    out.append(Violation("ai-sdk-ui.finish-reason-unknown", pos, f"finishReason {reason!r}"))
        return out

    # -- standing in for the app (`toolstream serve`) --------------------------------------------

    def read_followup(self, body: Mapping[str, Any]) -> Turn | None:
        """`useChat`'s next request after its tools ran (`sendAutomaticallyWhen`): the whole UI
        message list, the last assistant message's tool parts holding each call's input and, once
        run, its `output` (`state: output-available` or `output-error`). None before any output."""
        messages = [m for m in mappings(body.get("messages")) if m.get("role") == "assistant"]
        if not messages:
            return None
        calls, results, text = [], [], []
        for part in mappings(messages[-1].get("parts")):
            kind = as_str(part.get("type")) or ""
            if kind == "text":
                text.append(as_str(part.get("text")) or "")
            if not (kind.startswith("tool-") or kind == "dynamic-tool"):
                continue
            name = as_str(part.get("toolName")) if kind == "dynamic-tool" else kind.removeprefix("tool-")
            calls.append(call_from(name, part.get("input"), part.get("toolCallId")))
            if part.get("state") in ("output-available", "output-error"):
                output = part.get("output", part.get("errorText"))
                results.append(ToolResult(as_str(part.get("toolCallId")), name, output))
        if not results:
            return None
        return Turn(tuple(calls), tuple(results), "".join(text))

    def final_stream(self) -> bytes:
        return sse(
            (None, payload)
            for payload in (
                {"type": "start"},
                {"type": "start-step"},
                {"type": "text-start", "id": "final"},
                {"type": "text-delta", "id": "final", "delta": FINAL_TEXT},
                {"type": "text-end", "id": "final"},
                {"type": "finish-step"},
                {"type": "finish", "finishReason": "stop"},
                SENTINEL,
            )
        )

    def whole_response(self, outcome: Outcome) -> dict[str, Any]:
        """The outcome as the assistant `UIMessage` it builds (the stream has no whole form)."""
        parts: list[dict[str, Any]] = [{"type": "text", "text": outcome.text}] if outcome.text else []
        for n, call in enumerate(outcome.tool_calls):
            parts.append({"type": f"tool-{call.name}", "toolCallId": call.id or f"call_{n}",
                          "state": "input-available", "input": call.arguments})  # fmt: skip
        return {"id": "replay", "role": "assistant", "parts": parts}

    def error_body(self, message: str) -> Mapping[str, Any]:
        return {"error": message}


DIALECT = AISDKUIDialect()
