"""Cohere v2 chat streaming (`POST /v2/chat`, `stream: true`): SSE with `event:` names.

Each event's data repeats its name in `type`: `message-start`, `tool-plan-delta`,
`content-start` / `content-delta` / `content-end`, `tool-call-start` (top-level `index`,
`delta.message.tool_calls` = {id, type, function{name, arguments: ""}}), `tool-call-delta`
(`delta.message.tool_calls.function.arguments`, a string piece), `tool-call-end`, `citation-*`,
`message-end` (`delta.finish_reason` such as `TOOL_CALL` or `COMPLETE`, `delta.usage`), then a
bare `data: [DONE]`.

Keying rules of the reference accumulator (and of `fragments`):

- Every `tool-call-start` starts a new call, even when its index was used before (two calls at
  index 0 are two calls), except a start that repeats the still-open call at its index with
  the same id: a duplicated start (D10) is ignored. Deltas and ends go to the latest call
  started with their `index`; one with no index, or an index no call started with, goes to the
  only open call (dropped when several are open: it cannot be attributed). A delta for a call
  that has ended is ignored.
- The first non-empty id and name win: an id or name repeated on deltas is not concatenated, an
  empty-string id is no id, and a rotating id does not split the call.
- Arguments are the string pieces joined; all empty means `{}`. A `"{}"` placeholder in the start
  is dropped when deltas follow, and a delta that repeats the whole, already complete, arguments
  text is a duplicate and ignored. Arguments that do not parse make the call `invalid`.
- `tool_plan` is reasoning, not text; `content-delta` text is the text (thinking content is
  reasoning).

Finality: a call is final at its `tool-call-end`; one whose end never came becomes final at
`message-end` unless the finish reason is MAX_TOKENS (its arguments were cut). The stream is
complete at `[DONE]`, or at `message-end` followed by a clean end; a transport cut before `[DONE]`
is `cut` (after `message-end` too: its calls stay final) and reports the calls already final. A
`message-end` whose finish reason is ERROR* / TIMEOUT or that carries `delta.error`, or an
`{"error": ...}` object, is an error state that keeps the calls already final. Nothing after
`[DONE]` counts.
"""

from __future__ import annotations

import json
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from harness import bounded
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
    contradiction,
    copy_json,
    field_of,
)
from harness.wire.dialects.requesting import (
    FINAL_TEXT,
    THINKING_BUDGET,
    Entry,
    Followup,
    Recipe,
    Requesting,
    args_text,
    call_id,
    chat_body,
    sse,
)

SENTINEL = "[DONE]"
_ROLES = {"tool-call-start": Role.START, "tool-call-delta": Role.ARGS, "tool-call-end": Role.END}
_TC_KEYS = {Field.ID: "id", Field.TYPE: "type"}
_FN_KEYS = {Field.NAME: "name", Field.ARGS: "arguments"}


def event_type(payload: Any) -> str | None:
    value = payload.get("type") if isinstance(payload, dict) else None
    return value if isinstance(value, str) else None


def _delta_message(payload: Any) -> dict[str, Any]:
    delta = payload.get("delta") if isinstance(payload, dict) else None
    msg = delta.get("message") if isinstance(delta, dict) else None
    return msg if isinstance(msg, dict) else {}


def tool_call_of(payload: Any, *, create: bool = False) -> dict[str, Any] | None:
    """`delta.message.tool_calls` (an object on the wire; the first item if a list)."""
    if create:
        delta = payload.setdefault("delta", {})
        msg = delta.setdefault("message", {})
        if not isinstance(msg.get("tool_calls"), (dict, list)) or msg["tool_calls"] == []:
            msg["tool_calls"] = {}
    calls = _delta_message(payload).get("tool_calls")
    if isinstance(calls, list):
        calls = calls[0] if calls else None
    return calls if isinstance(calls, dict) else None


def _function(tc: dict[str, Any] | None, *, create: bool = False) -> dict[str, Any]:
    if tc is None:
        return {}
    if create and not isinstance(tc.get("function"), dict):
        tc["function"] = {}
    fn = tc.get("function")
    return fn if isinstance(fn, dict) else {}


def _finish_delta(payload: Any) -> dict[str, Any]:
    delta = payload.get("delta") if isinstance(payload, dict) else None
    return delta if isinstance(delta, dict) else {}


def _finish(payload: Any) -> Any:
    return field_of(payload, "delta.finish_reason", (str, type(None)))


def is_error_finish(reason: Any) -> bool:
    return isinstance(reason, str) and (reason.startswith("ERROR") or reason == "TIMEOUT")


@dataclass
class _Call:
    index: Any
    name: str | None = None
    id: str | None = None
    pieces: list[str] = field(default_factory=list)
    solid: int = 0  # the pieces' characters other than whitespace
    placeholder: bool = False  # the start carried "{}" before any real fragment
    ended: bool = False

    def take(self, tc: dict[str, Any] | None, *, start: bool) -> None:
        fn = _function(tc)
        if self.id is None and tc is not None and isinstance(tc.get("id"), str) and tc["id"]:
            self.id = tc["id"]
        if self.name is None and isinstance(fn.get("name"), str) and fn["name"]:
            self.name = fn["name"]
        piece = fn.get("arguments")
        if piece is None:
            return
        if not isinstance(piece, str):
            piece = json.dumps(piece, separators=(",", ":"))  # an object where text belongs
        solid = len("".join(piece.split()))  # `split()` drops what `strip()` would, and no more
        if start:
            self.placeholder = piece.strip() == "{}"
            self._add(piece, solid)
            return
        if piece and self.placeholder:
            self.pieces, self.solid, self.placeholder = [], 0, False
        # The text is joined only when the piece could be all of it again (as many characters
        # other than whitespace): joined for every piece, a long call's arguments were quadratic.
        if solid and solid == self.solid:
            text = "".join(self.pieces)
            if piece.strip() == text.strip() and _complete_json(text):
                return  # the whole arguments sent again
        self._add(piece, solid)

    def _add(self, piece: str, solid: int) -> None:
        self.pieces.append(piece)
        self.solid += solid

    def tool_call(self) -> ToolCall:
        return ToolCall.from_text(self.name, "".join(self.pieces), self.id)


def _complete_json(text: str) -> bool:
    try:
        bounded.loads(text)
    except ValueError:
        return False
    return True


class _Router:
    def __init__(self) -> None:
        self.calls: list[_Call] = []
        self.by_index: dict[Any, int] = {}

    def _target(self, payload: dict[str, Any]) -> int | None:
        index = payload.get("index")
        if isinstance(index, int) and not isinstance(index, bool) and index in self.by_index:
            return self.by_index[index]
        open_calls = [n for n, call in enumerate(self.calls) if not call.ended]
        return open_calls[0] if len(open_calls) == 1 else None

    def _duplicate_start(self, payload: dict[str, Any]) -> int | None:
        """A start repeating the open call at its index with the same id (D10) is not a new call."""
        index = payload.get("index")
        number = self.by_index.get(index) if isinstance(index, Hashable) else None
        new_id = (tool_call_of(payload) or {}).get("id")
        if number is None or not new_id:
            return None
        call = self.calls[number]
        return number if not call.ended and call.id == new_id else None

    def route(self, payload: Any) -> tuple[int, Role] | None:
        kind = event_type(payload)
        role = _ROLES.get(kind or "")
        if role is None or not isinstance(payload, dict):
            return None
        if role == Role.START:
            duplicate = self._duplicate_start(payload)
            if duplicate is not None:
                return duplicate, role
            call = _Call(index=payload.get("index"))
            call.take(tool_call_of(payload), start=True)
            self.calls.append(call)
            number = len(self.calls) - 1
            index = payload.get("index")
            if isinstance(index, int) and not isinstance(index, bool):
                self.by_index[index] = number
            return number, role
        target = self._target(payload)
        if target is None or self.calls[target].ended:
            return None  # unattributable, or a stray fragment after the call's end
        if role == Role.END:
            self.calls[target].ended = True
        else:
            self.calls[target].take(tool_call_of(payload), start=False)
        return target, role


class CohereAccumulator(ReferenceAccumulator):
    """Reference accumulator for Cohere v2 chat streams (rules in the module docstring)."""

    def __init__(self) -> None:
        self._router = _Router()
        self._text: list[str] = []
        self._finish: str | None = None
        self._ended = False  # message-end seen
        self._final = 0  # calls made final by a message-end that was no error
        self._done = False  # [DONE] seen
        self._error: str | None = None
        self._usage: dict[str, Any] | None = None

    def feed(self, event: Event) -> None:
        payload = event.payload
        if payload == SENTINEL:
            self._done = True
            return
        if not isinstance(payload, dict) or self._done:
            return  # nothing after the terminal `[DONE]` counts
        kind = event_type(payload)
        if kind is None and "error" in payload:
            self._error = self._error or _error_text(payload["error"])
            return
        if kind in _ROLES:
            self._router.route(payload)
        elif kind == "content-delta":
            content = _delta_message(payload).get("content")
            if isinstance(content, dict) and isinstance(content.get("text"), str):
                self._text.append(content["text"])
        elif kind == "message-end" and not self._ended:
            self._ended = True
            delta = _finish_delta(payload)
            reason = _finish(payload)
            self._finish = reason if isinstance(reason, str) else None
            if isinstance(delta.get("usage"), dict):
                self._usage = delta["usage"]
            if delta.get("error") or is_error_finish(reason):
                self._error = self._error or _error_text(delta.get("error") or f"finish_reason {reason}")
            elif self._error is None and reason != "MAX_TOKENS":
                self._final = len(self._router.calls)

    def close(self, error: str | None = None) -> Outcome:
        text = "".join(self._text)
        # A transport cut after message-end but before [DONE] is a cut (docs/oracle.md).
        over = self._done or (self._ended and error is None)
        calls = tuple(
            call.tool_call()
            for number, call in enumerate(self._router.calls)
            if call.ended
            or number < self._final
            or (over and self._error is None and self._finish != "MAX_TOKENS")
        )
        if self._error is not None:
            return Outcome(calls, text, self._finish, State.ERROR, self._error, self._usage)
        if not over:
            why = error or "stream ended without message-end"
            return Outcome(calls, text, self._finish, State.CUT, why, self._usage)
        return Outcome(calls, text, self._finish, State.COMPLETE, None, self._usage)


def _error_text(error: Any) -> str:
    if isinstance(error, dict):
        return str(error.get("message") or error)
    return str(error)


_CLAIMED_TYPES = frozenset(
    {
        "message-start",
        "content-start",
        "content-delta",
        "content-end",
        "tool-plan-delta",
        "tool-call-start",
        "tool-call-delta",
        "tool-call-end",
        "message-end",
        "citation-start",
        "citation-end",
    }
)


# The documented `finish_reason` values of a message-end.
FINISH_REASONS = frozenset({"COMPLETE", "STOP_SEQUENCE", "MAX_TOKENS", "TOOL_CALL", "ERROR", "TIMEOUT"})


class CohereDialect(Dialect, Requesting):
    name = "cohere"
    codec_name = "sse"

    names_events_by_type = True
    default_url = "https://api.cohere.com/v2/chat"
    claimed_types = _CLAIMED_TYPES

    def matches(self, request: Request) -> bool:
        return urlsplit(request.url).path.rstrip("/").endswith("/v2/chat")

    def kinds(self, event: Event) -> frozenset[Kind]:
        payload = event.payload
        if event.wire.is_comment:
            return frozenset({Kind.COMMENT})
        if payload == SENTINEL:
            return frozenset({Kind.SENTINEL})
        kind = event_type(payload)
        if kind is None:
            return frozenset(
                {Kind.ERROR} if isinstance(payload, dict) and "error" in payload else {Kind.OTHER}
            )
        if kind == "tool-call-start":
            args = _function(tool_call_of(payload)).get("arguments")
            return frozenset({Kind.TOOL_START, Kind.TOOL_ARGS} if args else {Kind.TOOL_START})
        if kind == "tool-call-delta":
            return frozenset({Kind.TOOL_ARGS})
        if kind == "tool-call-end":
            return frozenset({Kind.TOOL_END})
        if kind == "tool-plan-delta":
            return frozenset({Kind.REASONING})
        if kind in ("content-delta", "content-start"):
            content = _delta_message(payload).get("content")
            content = content if isinstance(content, dict) else {}
            if content.get("thinking"):
                return frozenset({Kind.REASONING})
            if content.get("text"):
                return frozenset({Kind.TEXT})
            return frozenset({Kind.META})
        if kind == "message-end":
            delta = _finish_delta(payload)
            out = {Kind.FINISH}
            if isinstance(delta.get("usage"), dict):
                out.add(Kind.USAGE)
            if delta.get("error") or is_error_finish(_finish(payload)):
                out.add(Kind.ERROR)
            return frozenset(out)
        if kind in ("message-start", "content-end"):
            return frozenset({Kind.META})
        return frozenset({Kind.OTHER})

    def accumulator(self) -> CohereAccumulator:
        return CohereAccumulator()

    # -- fragments ---------------------------------------------------------------------------

    def fragments(self, events: Sequence[Event]) -> list[Fragment]:
        router = _Router()
        out: list[Fragment] = []
        for number, event in enumerate(events):
            routed = router.route(event.payload)
            if routed is not None:
                out.append(Fragment(event=number, slot=0, call=routed[0], role=routed[1]))
        return out

    def _check(self, event: Event, slot: int) -> None:
        if slot != 0 or event_type(event.payload) not in _ROLES:
            raise DialectError(
                f"cohere: no tool-call fragment at slot {slot} of a {event.name or 'data'} event"
            )

    def get(self, event: Event, slot: int, field: Field) -> Any:
        self._check(event, slot)
        if field == Field.INDEX:
            return event.payload.get("index", MISSING)
        tc = tool_call_of(event.payload)
        if tc is None:
            return MISSING
        if field in _TC_KEYS:
            return tc.get(_TC_KEYS[field], MISSING)
        if field in _FN_KEYS:
            fn = tc.get("function")
            return fn.get(_FN_KEYS[field], MISSING) if isinstance(fn, dict) else MISSING
        return MISSING

    def set(self, event: Event, slot: int, field: Field, value: Any) -> Event:
        self._check(event, slot)
        payload = copy_json(event.payload)
        if field == Field.ITEM_ID:
            if value is MISSING:
                return event.with_payload(payload)
            raise DialectError("cohere: a tool-call event has no item id")
        if field == Field.INDEX:
            target, key = payload, "index"
        elif value is MISSING:
            tc = tool_call_of(payload)
            target = (tc if field in _TC_KEYS else _function(tc)) if tc is not None else {}
            key = _TC_KEYS.get(field) or _FN_KEYS[field]
        else:
            tc = tool_call_of(payload, create=True)
            target = tc if field in _TC_KEYS else _function(tc, create=True)
            key = _TC_KEYS.get(field) or _FN_KEYS[field]
        if value is MISSING:
            target.pop(key, None)
        else:
            target[key] = value
        return event.with_payload(payload)

    def continuation(self, event: Event, slot: int, args: str) -> Event:
        self._check(event, slot)
        payload: dict[str, Any] = {"type": "tool-call-delta"}
        if "index" in event.payload:
            payload["index"] = event.payload["index"]
        payload["delta"] = {"message": {"tool_calls": {"function": {"arguments": args}}}}
        return self._event(payload)

    def remove(self, event: Event, slot: int) -> Event | None:
        self._check(event, slot)
        return None  # a Cohere tool-call event carries exactly one fragment

    def finish_reason(self, event: Event) -> Any:
        if event_type(event.payload) != "message-end":
            return MISSING
        return _finish(event.payload)

    def with_finish_reason(self, event: Event, reason: Any) -> Event:
        if event_type(event.payload) != "message-end":
            if reason is MISSING:
                return event
            raise DialectError("cohere: only a message-end event carries a finish_reason")
        payload = copy_json(event.payload)
        delta = payload.setdefault("delta", {})
        if reason is MISSING:
            delta.pop("finish_reason", None)
        else:
            rebuilt = {"finish_reason": reason, **{k: v for k, v in delta.items() if k != "finish_reason"}}
            payload["delta"] = rebuilt
        return event.with_payload(payload)

    # -- building ----------------------------------------------------------------------------

    def _event(self, payload: Any) -> Event:
        if payload == SENTINEL:
            return Event(WireEvent(data=SENTINEL), SENTINEL)
        return Event(WireEvent(data=self.dumps(payload), name=payload["type"]), payload)

    # -- validation -----------------------------------------------------------------------------

    shape_codes = {
        "A1": Shape(
            "a tool call starts at an index an earlier call started at", False, shapes.calls_share_an_index
        ),
        "C1": Shape(
            "a call's deltas or end after the next call started (calls interleaved)",
            False,
            shapes.interleaved_calls,
        ),
        "C3": Shape("several tool calls, one after another", True, shapes.calls_one_after_another),
        "C4": Shape("a tool plan before the tool call", True, shapes.reasoning_before_call),
        "D1": Shape("finish reason `COMPLETE` after tool calls", False, shapes.stop_after_calls),
        "D6": Shape("no `message-end` at the end", False, shapes.no_terminal_event),
        "D9": Shape("finish reason `TOOL_CALL` without a tool call", False, shapes.tool_finish_without_calls),
    }

    invariant_codes = {
        "cohere.finish-reason-unknown": "finish_reason is one of the documented values",
        "cohere.finish-contradicts-calls": "finish_reason is TOOL_CALL exactly when tool calls were sent",
        "cohere.event-after-end": "nothing but [DONE] follows message-end",
        "cohere.block-start-repeated": "a tool call starts once",
        "cohere.block-overlap": "a tool call starts only after the previous one ended (tool-call-end)",
    }
    finish_reasons = {Finish.STOP: "COMPLETE", Finish.TOOL_CALLS: "TOOL_CALL", Finish.LENGTH: "MAX_TOKENS"}
    finish_vocabulary = FINISH_REASONS

    def invariants(self, events: Sequence[Event]) -> list[Violation]:
        """Chat v2 rules: a documented finish_reason, TOOL_CALL exactly when tool calls came;
        nothing but `[DONE]` after message-end; one tool call streamed at a time."""
        out: list[Violation] = []
        calls = 0
        ended = False
        open_call: Any = None  # the index of the call started and not yet ended
        for pos, event in enumerate(events):
            if event.wire.is_comment or event.payload == SENTINEL:
                continue
            kind = event_type(event.payload)
            if ended:
                out.append(Violation("cohere.event-after-end", pos, f"{kind} after message-end"))
            calls += kind == "tool-call-start"
            if kind == "tool-call-start":
                index = event.payload.get("index")  # a dict: it has a type
                if open_call is not None and open_call == index:
                    message = f"call {index!r} started again while open"
                    out.append(Violation("cohere.block-start-repeated", pos, message))
                elif open_call is not None:
                    message = f"call {index!r} starts while {open_call!r} is open"
                    out.append(Violation("cohere.block-overlap", pos, message))
                open_call = index
            elif kind == "tool-call-end":
                open_call = None
            if kind != "message-end":
                continue
            ended = True
            reason = _finish_delta(event.payload).get("finish_reason")
            if reason is None:
                continue
            if reason not in FINISH_REASONS:
                out.append(Violation("cohere.finish-reason-unknown", pos, f"finish_reason {reason!r}"))
            found = contradiction("cohere", pos, reason, calls, self.finish_reasons)
            if found is not None:
                out.append(found)
        return out

    tool_paths = (("tools", "*", "function", "name"), ("tools", "*", "name"))  # v2, v1

    def build(self, kind: Kind, **params: Any) -> list[Event]:
        index = params.get("index", 0)
        if kind == Kind.TEXT:
            content = {"text": params.get("text", "")}
            return [
                self._event(
                    {"type": "content-delta", "index": index, "delta": {"message": {"content": content}}}
                )
            ]
        if kind == Kind.REASONING:
            plan = {"tool_plan": params.get("text", "")}
            return [self._event({"type": "tool-plan-delta", "delta": {"message": plan}})]
        if kind == Kind.FINISH:
            delta: dict[str, Any] = {"finish_reason": params.get("reason", "COMPLETE")}
            if params.get("usage"):
                delta["usage"] = params["usage"]
            return [self._event({"type": "message-end", "delta": delta})]
        if kind == Kind.ERROR:
            delta = {"error": params.get("message", "internal server error"), "finish_reason": "ERROR"}
            return [self._event({"type": "message-end", "delta": delta})]
        if kind == Kind.SENTINEL:
            return [self._event(SENTINEL)]
        if kind == Kind.META:
            msg = {"role": "assistant", "content": [], "tool_plan": "", "tool_calls": [], "citations": []}
            start = {
                "id": params.get("id", "00000000-0000-0000-0000-000000000000"),
                "type": "message-start",
                "delta": {"message": msg},
            }
            return [self._event(start)]
        if kind == Kind.TOOL_CALL:
            return [*self.build(Kind.TOOL_START, **params), *self.build(Kind.TOOL_ARGS, **params),
                    *self.build(Kind.TOOL_END, **params)]  # fmt: skip
        if kind == Kind.TOOL_START:
            call = {
                "id": params.get("id", ""),
                "type": "function",
                "function": {"name": params["name"], "arguments": ""},
            }
            start = {"type": "tool-call-start", "index": index, "delta": {"message": {"tool_calls": call}}}
            return [self._event(start)]
        if kind == Kind.TOOL_ARGS:
            args = params.get("args", {})
            text = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
            delta = {"message": {"tool_calls": {"function": {"arguments": text}}}}
            return [self._event({"type": "tool-call-delta", "index": index, "delta": delta})]
        if kind == Kind.TOOL_END:
            return [self._event({"type": "tool-call-end", "index": index})]
        if kind in (Kind.PING, Kind.USAGE):
            return []  # no keepalives; usage comes only with message-end
        raise DialectError(f"cohere: cannot build a {kind} event")

    # -- asking the provider (Requesting: `toolstream record`) ----------------------------------

    provider = "cohere"
    api_root = "https://api.cohere.com"
    default_model = "command-a-03-2025"
    key_env = ("CO_API_KEY",)
    streams_reasoning = True

    def request_body(self, recipe: Recipe, model: str) -> dict[str, Any]:
        body = chat_body(recipe, model)
        if recipe.thinking:
            body["thinking"] = {"type": "enabled", "token_budget": THINKING_BUDGET}
        return body

    def request_path(self, model: str) -> str:
        return "/v2/chat"

    # -- standing in for the provider (Requesting: `toolstream serve`) ------------------------------

    followup = Followup(
        call=Entry(("id",), ("function", "arguments"), (("function", "name"),)),
        result=Entry(("tool_call_id",), ("content",), kind="role", kinds=("tool",)),
        calls_in="tool_calls",
    )

    def final_stream(self) -> bytes:
        usage = {
            "billed_units": {"input_tokens": 1, "output_tokens": 1},
            "tokens": {"input_tokens": 1, "output_tokens": 1},
        }
        start = {"role": "assistant", "content": [], "tool_plan": "", "tool_calls": [], "citations": []}
        return sse(
            [
                ("message-start", {"type": "message-start", "id": "final", "delta": {"message": start}}),
                (
                    "content-start",
                    {
                        "type": "content-start",
                        "index": 0,
                        "delta": {"message": {"content": {"type": "text", "text": ""}}},
                    },
                ),
                (
                    "content-delta",
                    {
                        "type": "content-delta",
                        "index": 0,
                        "delta": {"message": {"content": {"text": FINAL_TEXT}}},
                    },
                ),
                ("content-end", {"type": "content-end", "index": 0}),
                (
                    "message-end",
                    {"type": "message-end", "delta": {"finish_reason": "COMPLETE", "usage": usage}},
                ),
                (None, "[DONE]"),
            ]
        )

    def whole_response(self, outcome: Outcome) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant"}
        if outcome.text:
            message["content"] = [{"type": "text", "text": outcome.text}]
        if outcome.tool_calls:
            message["tool_calls"] = [
                {
                    "id": call_id(c, n, "call_"),
                    "type": "function",
                    "function": {"name": c.name or "", "arguments": args_text(c)},
                }
                for n, c in enumerate(outcome.tool_calls)
            ]
        finish = outcome.finish_reason or ("TOOL_CALL" if outcome.tool_calls else "COMPLETE")
        return {
            "id": "replay",
            "finish_reason": finish,
            "message": message,
            "usage": {
                "billed_units": {"input_tokens": 1, "output_tokens": 1},
                "tokens": {"input_tokens": 1, "output_tokens": 1},
            },
        }


DIALECT = CohereDialect()
