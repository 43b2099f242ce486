"""Ollama native `/api/chat` streaming: NDJSON lines, each tool call whole in one line.

Every line is a `ChatResponse` (`model`, `created_at`, `message{role, content, thinking,
tool_calls}`, `done`); the last one has `done: true`, `done_reason` and the duration counters.
An `{"error": "..."}` line is an in-band error. Lines are serialised the way Go's encoding/json
does (compact, `<`, `>` and `&` escaped).

Keying rules of the reference accumulator (and of `fragments`):

- Each entry of `message.tool_calls` is a whole call (`function.name`, `function.arguments` as an
  object) and a new call, in order of appearance. Nothing is keyed by `function.index` (it can
  be missing or 0 for every parallel call) nor by name (two calls to one function are two calls).
- Exception: an entry whose non-empty `id` and name equal an earlier call's is a re-emission of
  that call (its arguments replace the earlier ones), not a new call.
- `arguments` given as a JSON string (some proxies) is parsed; text that is not JSON makes the
  call `invalid`.

Finality: calls are final at the `done: true` line. A stream that ends before it (cut, or a clean
end of input without it) reports no calls (state `cut`). An error line before `done` is an error
state with no calls. Text is `message.content` joined; `message.thinking` is reasoning.
`finish_reason` is `done_reason` (`stop` even when calls were made, `length` ...).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

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
    field_of,
)
from harness.wire.dialects.requesting import (
    FINAL_TEXT,
    REPLAY_MODEL,
    Entry,
    Followup,
    Recipe,
    Requesting,
    chat_body,
    dumps,
)

_GO_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def message(payload: Any) -> dict[str, Any] | None:
    msg = payload.get("message") if isinstance(payload, dict) else None
    return msg if isinstance(msg, dict) else None


def tool_calls(payload: Any) -> list[Any]:
    """The `message.tool_calls` list of a line (empty when there is none)."""
    msg = message(payload)
    calls = msg.get("tool_calls") if msg else None
    return calls if isinstance(calls, list) else []


def _function(entry: Any) -> dict[str, Any]:
    fn = entry.get("function") if isinstance(entry, dict) else None
    return fn if isinstance(fn, dict) else {}


@dataclass
class _Call:
    name: str | None
    id: str | None
    arguments: Any

    def tool_call(self) -> ToolCall:
        args = self.arguments
        if isinstance(args, str):
            return ToolCall.from_text(self.name, args, self.id)
        return ToolCall(name=self.name, arguments={} if args is None else args, id=self.id)


class _Router:
    def __init__(self) -> None:
        self.calls: list[_Call] = []

    def route(self, entry: Any) -> int:
        fn = _function(entry)
        name = fn.get("name") if isinstance(fn.get("name"), str) else None
        raw_id = entry.get("id") if isinstance(entry, dict) else None
        call_id = raw_id if isinstance(raw_id, str) and raw_id else None
        arguments = copy_json(fn.get("arguments"))
        if call_id is not None:
            for number, earlier in enumerate(self.calls):
                if earlier.id == call_id and earlier.name == name:
                    earlier.arguments = arguments
                    return number
        self.calls.append(_Call(name, call_id, arguments))
        return len(self.calls) - 1


class OllamaAccumulator(ReferenceAccumulator):
    """Reference accumulator for Ollama `/api/chat` streams (rules in the module docstring)."""

    def __init__(self) -> None:
        self._router = _Router()
        self._text: list[str] = []
        self._done = False
        self._finish: str | None = None
        self._error: str | None = None
        self._usage: dict[str, Any] | None = None

    def feed(self, event: Event) -> None:
        payload = event.payload
        if not isinstance(payload, dict) or self._done:
            return
        if "error" in payload:
            self._error = self._error or str(payload["error"])
            return
        msg = message(payload)
        if msg is not None and isinstance(msg.get("content"), str):
            self._text.append(msg["content"])
        for entry in tool_calls(payload):
            self._router.route(entry)
        if payload.get("done") is True:
            self._done = True
            reason = payload.get("done_reason")
            self._finish = reason if isinstance(reason, str) else None
            self._usage = {key: payload[key] for key in _COUNTERS if key in payload} or None

    def close(self, error: str | None = None) -> Outcome:
        text = "".join(self._text)
        if self._error is not None and not self._done:
            return Outcome((), text, self._finish, State.ERROR, self._error, self._usage)
        if not self._done:
            why = error or "stream ended without a done line"
            return Outcome((), text, None, State.CUT, why, None)
        calls = tuple(call.tool_call() for call in self._router.calls)
        return Outcome(calls, text, self._finish, State.COMPLETE, None, self._usage)


_COUNTERS = (
    "total_duration",
    "load_duration",
    "prompt_eval_count",
    "prompt_eval_duration",
    "eval_count",
    "eval_duration",
)


# The `done_reason` values the server writes.
DONE_REASONS = frozenset({"stop", "length", "load", "unload"})


class OllamaDialect(Dialect, Requesting):
    name = "ollama"
    calls_final_at_finish = True
    codec_name = "ndjson"

    default_url = "http://localhost:11434/api/chat"

    def claims(self, event: Event) -> bool:
        payload = event.payload
        return (
            isinstance(payload, dict) and "done" in payload and ("message" in payload or "model" in payload)
        )

    def dumps(self, payload: Any) -> str:
        # Go's json.Marshal: compact, UTF-8 kept, HTML-sensitive characters escaped.
        text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
        return "".join(_GO_ESCAPES.get(char, char) for char in text)

    def matches(self, request: Request) -> bool:
        return urlsplit(request.url).path.rstrip("/").endswith("/api/chat")

    def kinds(self, event: Event) -> frozenset[Kind]:
        payload = event.payload
        if not isinstance(payload, dict):
            return frozenset({Kind.OTHER})
        if "error" in payload:
            return frozenset({Kind.ERROR})
        out: set[Kind] = set()
        msg = message(payload) or {}
        if msg.get("content"):
            out.add(Kind.TEXT)
        if msg.get("thinking"):
            out.add(Kind.REASONING)
        if tool_calls(payload):
            out.add(Kind.TOOL_CALL)
        if payload.get("done") is True:
            out.update({Kind.FINISH, Kind.SENTINEL})
            if any(key in payload for key in _COUNTERS):
                out.add(Kind.USAGE)
        return frozenset(out or {Kind.OTHER})

    def accumulator(self) -> OllamaAccumulator:
        return OllamaAccumulator()

    # -- fragments ---------------------------------------------------------------------------

    def fragments(self, events: Sequence[Event]) -> list[Fragment]:
        router = _Router()
        out: list[Fragment] = []
        for number, event in enumerate(events):
            for slot, entry in enumerate(tool_calls(event.payload)):
                out.append(Fragment(event=number, slot=slot, call=router.route(entry), role=Role.WHOLE))
        return out

    def _entry(self, payload: Any, slot: int) -> dict[str, Any]:
        found = tool_calls(payload)
        if not (0 <= slot < len(found)) or not isinstance(found[slot], dict):
            raise DialectError(f"ollama: this line has no tool call at position {slot}")
        entry: dict[str, Any] = found[slot]
        return entry

    def get(self, event: Event, slot: int, field: Field) -> Any:
        entry = self._entry(event.payload, slot)
        fn = _function(entry)
        if field == Field.ID:
            return entry.get("id", MISSING)
        if field == Field.INDEX:
            return fn.get("index", MISSING)
        if field == Field.NAME:
            return fn.get("name", MISSING)
        if field == Field.ARGS:
            return fn.get("arguments", MISSING)
        if field == Field.TYPE:
            return entry.get("type", MISSING)
        return MISSING

    def set(self, event: Event, slot: int, field: Field, value: Any) -> Event:
        payload = copy_json(event.payload)
        entry = self._entry(payload, slot)
        if field in (Field.ID, Field.TYPE):
            target, key = entry, str(field)
        elif field == Field.ITEM_ID:
            if value is MISSING:
                return event.with_payload(payload)
            raise DialectError("ollama: a tool call has no item id")
        else:
            target = entry.setdefault("function", {})
            key = {Field.INDEX: "index", Field.NAME: "name", Field.ARGS: "arguments"}[field]
        if value is MISSING:
            target.pop(key, None)
        else:
            target[key] = value
        return event.with_payload(payload)

    def continuation(self, event: Event, slot: int, args: str) -> Event:
        raise DialectError(
            "ollama: /api/chat sends each tool call whole in one line; the wire has no continuation fragments"
        )

    def remove(self, event: Event, slot: int) -> Event | None:
        payload = copy_json(event.payload)
        self._entry(payload, slot)
        msg = message(payload)
        if msg is None:
            return None
        del msg["tool_calls"][slot]
        if not msg["tool_calls"]:
            del msg["tool_calls"]
            if not msg.get("content") and not msg.get("thinking") and payload.get("done") is not True:
                return None
        return event.with_payload(payload)

    def finish_reason(self, event: Event) -> Any:
        payload = event.payload
        return field_of(payload, "done_reason", (str, type(None)))

    def with_finish_reason(self, event: Event, reason: Any) -> Event:
        if not isinstance(event.payload, dict):
            raise DialectError("ollama: this line is not a JSON object")
        payload = copy_json(event.payload)
        if reason is MISSING:
            payload.pop("done_reason", None)
            return event.with_payload(payload)
        # Go writes done_reason just before done; keep that order when adding it.
        rebuilt: dict[str, Any] = {}
        for key, value in payload.items():
            if key == "done":
                rebuilt["done_reason"] = reason
            if key != "done_reason":
                rebuilt[key] = value
        rebuilt.setdefault("done_reason", reason)
        return event.with_payload(rebuilt)

    def pack(self, parts: Sequence[tuple[Event, int]]) -> Event | None:
        """Several whole tool calls in one line, shaped like the first one's line."""
        if not parts:
            return None
        entries = [copy_json(tool_calls(event.payload)[slot]) for event, slot in parts]
        return self._line(parts[0][0], {"role": "assistant", "content": "", "tool_calls": entries})

    # -- building ----------------------------------------------------------------------------

    def _line(self, like: Event | None, msg: dict[str, Any] | None, **extra: Any) -> Event:
        source = like.payload if like is not None and isinstance(like.payload, dict) else {}
        payload: dict[str, Any] = {
            "model": source.get("model", "llama3.1"),
            "created_at": source.get("created_at", "2025-01-01T00:00:00.000000000Z"),
        }
        if msg is not None:
            payload["message"] = msg
        payload.update(extra)
        payload.setdefault("done", False)
        wire = WireEvent(data=self.dumps(payload))
        return Event(like.wire._replace(data=wire.data) if like is not None else wire, payload)

    # -- validation -----------------------------------------------------------------------------

    shape_codes = {
        "C2": Shape("several tool calls in one line", True, shapes.calls_in_one_event),
        "C4": Shape("thinking before the tool call", True, shapes.reasoning_before_call),
        "D6": Shape("no `done: true` line at the end", False, shapes.no_terminal_event),
        "D8": Shape("an in-band `error` line", True, shapes.error_event),
    }

    invariant_codes = {
        "ollama.done-reason-unknown": "done_reason is stop, length, load or unload",
        "ollama.event-after-done": "nothing follows the line with `done: true`",
    }
    # Ollama says `stop` whether or not the model called tools: no word for tool calls.
    finish_reasons = {Finish.STOP: "stop", Finish.LENGTH: "length"}
    finish_vocabulary = DONE_REASONS

    def invariants(self, events: Sequence[Event]) -> list[Violation]:
        """/api/chat rules: a documented done_reason; nothing after `done: true`."""
        out: list[Violation] = []
        done = False
        for pos, event in enumerate(events):
            payload = event.payload if isinstance(event.payload, dict) else {}
            if done:
                out.append(Violation("ollama.event-after-done", pos, "a line after done: true"))
            reason = payload.get("done_reason")
            if reason is not None and reason not in DONE_REASONS:
                out.append(Violation("ollama.done-reason-unknown", pos, f"done_reason {reason!r}"))
            done = done or payload.get("done") is True
        return out

    tool_paths = (("tools", "*", "function", "name"),)

    def build(self, kind: Kind, **params: Any) -> list[Event]:
        like = params.get("like")
        if kind == Kind.TEXT:
            return [self._line(like, {"role": "assistant", "content": params.get("text", "")})]
        if kind == Kind.REASONING:
            msg = {"role": "assistant", "content": "", "thinking": params.get("text", "")}
            return [self._line(like, msg)]
        if kind == Kind.TOOL_CALL:
            fn: dict[str, Any] = {"name": params["name"], "arguments": params.get("args", {})}
            entry: dict[str, Any] = (
                {"id": params["id"], "function": fn} if params.get("id") else {"function": fn}
            )
            return [self._line(like, {"role": "assistant", "content": "", "tool_calls": [entry]})]
        if kind in (Kind.FINISH, Kind.SENTINEL):
            msg = {"role": "assistant", "content": ""}
            counters = params.get("usage") or {"total_duration": 0, "eval_count": 0}
            return [self._line(like, msg, done_reason=params.get("reason", "stop"), done=True, **counters)]
        if kind == Kind.ERROR:
            payload = {"error": params.get("message", "an error was encountered while running the model")}
            return [Event(WireEvent(data=self.dumps(payload)), payload)]
        if kind in (Kind.PING, Kind.USAGE, Kind.META):
            return []  # no keepalives; counters come only on the done line; no framing lines
        raise DialectError(f"ollama: cannot build a {kind} event")

    # -- asking the provider (Requesting: `toolstream record`) ----------------------------------

    provider = "ollama"
    api_root = "http://localhost:11434"
    default_model = "qwen3"
    streams_reasoning = True

    def request_body(self, recipe: Recipe, model: str) -> dict[str, Any]:
        body = chat_body(recipe, model)
        if recipe.thinking:
            body["think"] = True
        return body

    def request_path(self, model: str) -> str:
        return "/api/chat"

    def auth_headers(self, key: str) -> dict[str, str]:
        return {}  # a local server: a key given with --api-key-env is read but not sent

    # -- standing in for the provider (Requesting: `toolstream serve`) ------------------------------

    media_type = "application/x-ndjson"

    # Ollama sends arguments as an object and names the tool in `tool_name`.
    followup = Followup(
        call=Entry(("id",), ("function", "arguments"), (("function", "name"),)),
        result=Entry(
            ("tool_call_id",), ("content",), (("tool_name",), ("name",)), kind="role", kinds=("tool",)
        ),
        calls_in="tool_calls",
    )

    def final_stream(self) -> bytes:
        head = {"model": REPLAY_MODEL, "created_at": "2025-01-01T00:00:00Z"}
        lines = [
            {**head, "message": {"role": "assistant", "content": FINAL_TEXT}, "done": False},
            {**head, "message": {"role": "assistant", "content": ""}, "done": True, "done_reason": "stop"},
        ]
        return "".join(dumps(line) + "\n" for line in lines).encode()

    def whole_response(self, outcome: Outcome) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": outcome.text}
        if outcome.tool_calls:
            message["tool_calls"] = [
                {
                    **({"id": c.id} if c.id else {}),
                    "function": {"name": c.name or "", "arguments": c.arguments},
                }
                for c in outcome.tool_calls
            ]
        return {
            "model": REPLAY_MODEL,
            "created_at": "2025-01-01T00:00:00Z",
            "message": message,
            "done": True,
            "done_reason": outcome.finish_reason or "stop",
        }

    def error_body(self, message: str) -> Mapping[str, Any]:
        return {"error": message}


DIALECT = OllamaDialect()
