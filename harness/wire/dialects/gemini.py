"""Google Gemini `streamGenerateContent?alt=sse`: whole `functionCall` parts, and Gemini 3 streamed arguments.

Each SSE `data:` event is a whole `GenerateContentResponse`; there is no sentinel (the last chunk
carries `finishReason`, then the connection closes) and Vertex ends lines with CRLF. Only the
candidate with `index` 0 (or no index) is read; other candidates are ignored.

Keying rules of the reference accumulator (and of `fragments`, which share them):

- A `functionCall` part with a `name` starts a new call, even when the name repeats (two calls
  to the same function are two calls; nothing is keyed by name or position). There is no index
  on the wire: `get(..., Field.INDEX)` is MISSING and the fragment slot is the part's position in
  `candidates[0].content.parts`.
- Exception: a part whose non-empty `id` equals an earlier whole call's id and whose name is the
  same is a re-emission of that call (its args replace the earlier ones), not a new call.
- Gemini 3 streamed arguments: a named part with `willContinue: true` opens a call; the parts
  after it (`partialArgs` entries addressed by `jsonPath`, nested paths included) belong to the
  open call until a part without `willContinue: true` (normally the empty `functionCall: {}`)
  closes it. A repeated name or id on a continuation is the same call; a different name or id
  starts a new one. A string value whose previous piece at the same path said `willContinue`
  is appended; any other value replaces what the path held.
- A continuation or `{}` with no open call is a stray fragment of no call and is ignored.

Finality: calls are final when the model's turn ends with a `finishReason` of STOP or
MAX_TOKENS. A stream that ends (cleanly or cut) before any finishReason reports no calls (state
`cut`); one cut after a finishReason that followed its last call is complete. A streamed call
still open (its closing `{}` missing) when the finishReason arrives is kept as assembled at STOP
(the turn is over, nothing more can come for it) and dropped at MAX_TOKENS (the budget ran out
inside it). A documented error finishReason (MALFORMED_FUNCTION_CALL, SAFETY, RECITATION ...:
`ERROR_FINISH`), an in-band `{"error": ...}` object or a blocked prompt
(`promptFeedback.blockReason`) is an error state with no calls. A finishReason outside the
documented enum ends the turn like STOP (a new value must not drop finished calls). The chunk with
the finishReason is the stream's last: an error object after it, with no part in between, is
ignored, as events after any other dialect's terminal event are. Text is the non-thought `text`
parts joined; `thought: true` parts are reasoning.

Code execution runs on Google's side: an `executableCode` part is a server call (`code_execution`,
its `language` and `code` as arguments, its `id` when it has one), never a function call, and the
`codeExecutionResult` part that follows gives it its result (`outcome`), matched by `id` when both
have one, else to the latest call without a result. Server calls are final when calls are.
"""

from __future__ import annotations

import json
import re
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import quote, urlsplit

from harness import bounded
from harness.cassettes.model import Request
from harness.cassettes.outcome import Outcome, Part, PartKind, ServerCall, State, ToolCall
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
    IdStyle,
    Kind,
    ReferenceAccumulator,
    Role,
    Shape,
    Violation,
    copy_json,
    field_of,
)
from harness.wire.dialects.parts import PartLog
from harness.wire.dialects.requesting import (
    FINAL_TEXT,
    REPLAY_MODEL,
    THINKING_BUDGET,
    Entry,
    Followup,
    Recipe,
    Requesting,
    sse,
)

_NO_INDEX_FIELDS = (Field.INDEX, Field.TYPE, Field.ITEM_ID)


# ---------------------------------------------------------------------------------------------
# Reading a chunk


def candidate(payload: Any) -> dict[str, Any] | None:
    """The candidate this harness reads: `index` 0, or the first one without an index."""
    if not isinstance(payload, dict):
        return None
    candidates = payload.get("candidates")
    if not isinstance(candidates, list):
        return None
    for cand in candidates:
        if isinstance(cand, dict) and cand.get("index", 0) == 0:
            return cand
    return None


def _finish(cand: dict[str, Any] | None) -> Any:
    """A candidate's `finishReason`: a string, null, or MISSING."""
    return field_of(cand, "finishReason", (str, type(None)))


def content_parts(payload: Any) -> list[Any]:
    """The parts of the candidate this harness reads (empty when there are none)."""
    cand = candidate(payload)
    content = cand.get("content") if cand else None
    found = content.get("parts") if isinstance(content, dict) else None
    return found if isinstance(found, list) else []


def _function_call(part: Any) -> dict[str, Any] | None:
    fc = part.get("functionCall") if isinstance(part, dict) else None
    return fc if isinstance(fc, dict) else None


# ---------------------------------------------------------------------------------------------
# Streamed arguments: jsonPath -> value


_TOKEN = re.compile(r"\.([^.\[\]]+)|\[(\d+)\]|\[\s*(['\"])(.*?)\3\s*\]")


def json_path(path: str) -> list[str | int]:
    """`$.recipe.ingredients[0].amount` -> ['recipe', 'ingredients', 0, 'amount']."""
    text = path.strip()
    if text.startswith("$"):
        text = text[1:]
    elif text and text[0] not in ".[":
        text = "." + text  # some producers drop the `$.` prefix
    out: list[str | int] = []
    pos = 0
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None:
            raise DialectError(f"gemini: cannot read jsonPath {path!r} at {text[pos:]!r}")
        if match.group(1) is not None:
            out.append(match.group(1))
        elif match.group(2) is not None:
            out.append(int(match.group(2)))
        else:
            out.append(match.group(4))
        pos = match.end()
    return out


_VALUE_KEYS = ("stringValue", "numberValue", "boolValue", "nullValue", "structValue", "listValue")


def partial_value(arg: dict[str, Any]) -> Any:
    """The value a `partialArgs` entry carries, or MISSING."""
    for key in _VALUE_KEYS:
        if key in arg:
            return None if key == "nullValue" else arg[key]
    return MISSING


def _assign(root: dict[str, Any], steps: list[str | int], value: Any, append: bool) -> None:
    if not steps:
        if isinstance(value, dict):
            root.update(value)
        return
    node: Any = root
    for step, following in zip(steps, [*steps[1:], None], strict=True):
        last = following is None
        empty: Any = None if last else ([] if isinstance(following, int) else {})
        if isinstance(step, int):
            if not isinstance(node, list):
                return  # the path disagrees with what earlier pieces built: keep what we have
            while len(node) <= step:
                node.append(None)
            if node[step] is None and not last:
                node[step] = empty
            if last:
                node[step] = node[step] + value if append and isinstance(node[step], str) else value
            node = node[step]
        else:
            if not isinstance(node, dict):
                return
            if last:
                old = node.get(step)
                node[step] = old + value if append and isinstance(old, str) else value
            elif not isinstance(node.get(step), (dict, list)):
                node[step] = empty
            node = node[step]


# ---------------------------------------------------------------------------------------------
# Routing parts to calls (shared by the accumulator and the fragment view)


@dataclass
class _Call:
    name: str | None
    id: str | None
    args: dict[str, Any] = field(default_factory=dict)
    streamed: bool = False
    open: bool = False
    pending: set[tuple[str | int, ...]] = field(default_factory=set)  # paths whose string continues

    def apply(self, fc: dict[str, Any]) -> None:
        if isinstance(fc.get("args"), dict):
            if self.streamed:
                self.args.update(copy_json(fc["args"]))
            else:
                self.args = copy_json(fc["args"])
        for arg in fc.get("partialArgs") or ():
            if not isinstance(arg, dict) or not isinstance(arg.get("jsonPath"), str):
                continue
            value = partial_value(arg)
            if value is MISSING:
                continue
            steps = json_path(arg["jsonPath"])
            key = tuple(steps)
            _assign(self.args, steps, copy_json(value), append=key in self.pending)
            if arg.get("willContinue") is True and isinstance(value, str):
                self.pending.add(key)
            else:
                self.pending.discard(key)


class _Router:
    """Assigns each functionCall part to a logical call, by the rules in the module docstring."""

    def __init__(self) -> None:
        self.calls: list[_Call] = []
        self.open: int | None = None

    def route(self, fc: dict[str, Any]) -> tuple[int, Role] | None:
        name = fc.get("name") if isinstance(fc.get("name"), str) and fc.get("name") else None
        call_id = fc.get("id") if isinstance(fc.get("id"), str) and fc.get("id") else None
        more = fc.get("willContinue") is True
        if self.open is not None:
            current = self.calls[self.open]
            other_name = name is not None and current.name is not None and name != current.name
            other_id = call_id is not None and current.id is not None and call_id != current.id
            if not (other_name or other_id):
                number = self.open
                if current.name is None and name is not None:
                    current.name = name
                if current.id is None and call_id is not None:
                    current.id = call_id
                current.apply(fc)
                carries = any(key in fc for key in ("partialArgs", "args", "name", "id"))
                if not more:
                    current.open = False
                    self.open = None
                return number, (Role.ARGS if carries else Role.END)
            self.calls[self.open].open = False  # its terminator never came: a new call begins
            self.open = None
        if name is None:
            return None  # a continuation or `{}` of no open call
        if call_id is not None and not more and "partialArgs" not in fc:
            for number, earlier in enumerate(self.calls):
                if earlier.id == call_id and earlier.name == name and not earlier.streamed:
                    earlier.apply(fc)
                    return number, Role.WHOLE
        call = _Call(name=name, id=call_id, streamed=more or "partialArgs" in fc, open=more)
        call.apply(fc)
        self.calls.append(call)
        if more:
            self.open = len(self.calls) - 1
            return self.open, Role.START
        return len(self.calls) - 1, Role.WHOLE


# ---------------------------------------------------------------------------------------------
# The reference accumulator


def _error_text(error: Any) -> str:
    if isinstance(error, dict):
        status = error.get("status") or error.get("code") or "error"
        return f"{status}: {error.get('message', '')}".strip()
    return str(error)


class GeminiAccumulator(ReferenceAccumulator):
    """Reference accumulator for Gemini streams (rules in the module docstring)."""

    def __init__(self) -> None:
        self._router = _Router()
        self._servers: list[ServerCall] = []
        self._text: list[str] = []
        self._finish: str | None = None
        self._finish_is_last = False  # no functionCall part arrived after the last finishReason
        self._error: str | None = None
        self._usage: dict[str, Any] | None = None
        self._parts = PartLog()  # calls keyed by their router number, server calls by position

    def feed(self, event: Event) -> None:
        payload = event.payload
        if not isinstance(payload, dict):
            return
        if "error" in payload:
            if self._finish is not None and self._finish not in ERROR_FINISH and self._finish_is_last:
                return  # after the final chunk: nothing more belongs to the response
            self._error = self._error or _error_text(payload["error"])
            return
        feedback = payload.get("promptFeedback")
        if isinstance(feedback, dict) and feedback.get("blockReason") and candidate(payload) is None:
            self._error = self._error or f"prompt blocked: {feedback['blockReason']}"
        if isinstance(payload.get("usageMetadata"), dict):
            self._usage = payload["usageMetadata"]
        for part in content_parts(payload):
            fc = _function_call(part)
            signature = _signature(part)
            if fc is not None:
                routed = self._router.route(fc)
                self._finish_is_last = False
                if routed is not None:
                    self._parts.open(PartKind.CALL, routed[0])
                    if signature is not None:  # on the header part, or the first one that has it
                        self._parts.sign(PartKind.CALL, routed[0], signature)
            elif isinstance(part, dict) and ("executableCode" in part or "codeExecutionResult" in part):
                self._server_part(part)
            elif isinstance(part, dict) and isinstance(part.get("text"), str) and not part.get("thought"):
                self._text.append(part["text"])
                self._parts.text(part["text"], signature=signature)
            elif isinstance(part, dict) and part.get("thought") and isinstance(part.get("text"), str):
                # A thought summary: a part of its own when signed, else joined to the thoughts before.
                self._parts.text(part["text"], signature=signature, kind=PartKind.REASONING)
            elif signature is not None:  # a signature on a part of no other kind: kept where it came
                self._parts.text("", signature=signature)
        cand = candidate(payload)
        if isinstance(reason := _finish(cand), str):
            self._finish = reason
            self._finish_is_last = True

    def _server_part(self, part: dict[str, Any]) -> None:
        code = part.get("executableCode")
        if isinstance(code, dict):
            arguments = {k: code[k] for k in ("language", "code") if k in code}
            self._parts.open(PartKind.SERVER_CALL, len(self._servers))
            self._servers.append(ServerCall("code_execution", arguments, _nonempty(code.get("id"))))
            return
        result = part.get("codeExecutionResult")
        if not isinstance(result, dict):
            return
        result_id = _nonempty(result.get("id"))
        for n in reversed(range(len(self._servers))):
            call = self._servers[n]
            if call.result is None and (result_id is None or call.id in (None, result_id)):
                outcome = result.get("outcome")
                self._servers[n] = replace(call, result=outcome if isinstance(outcome, str) else "")
                return

    def close(self, error: str | None = None) -> Outcome:
        text = "".join(self._text)
        finish = self._finish
        said = self._parts.close()  # no call stands on a stream that did not complete
        if self._error is not None:
            return Outcome((), text, finish, State.ERROR, self._error, self._usage, parts=said)
        if finish is not None and finish in ERROR_FINISH:
            why = f"finishReason {finish}"
            return Outcome((), text, finish, State.ERROR, why, self._usage, parts=said)
        if finish is None or (error is not None and not self._finish_is_last):
            why = error or "stream ended without a finishReason"
            return Outcome((), text, finish, State.CUT, why, self._usage, parts=said)
        kept = [n for n, call in enumerate(self._router.calls) if not (call.open and finish == "MAX_TOKENS")]
        router = self._router.calls
        calls = tuple(ToolCall(name=router[n].name, arguments=router[n].args, id=router[n].id) for n in kept)
        servers = tuple(self._servers)
        parts = self._parts.close(set(kept), range(len(servers)))
        return Outcome(
            calls, text, finish, State.COMPLETE, None, self._usage, server_calls=servers, parts=parts
        )


def sent_parts(parts: Any) -> tuple[Part, ...]:
    """The functionCall and thought parts of a model turn a client sent back, as parts, each
    with the `thoughtSignature` it carries."""
    out: list[Part] = []
    for part in parts if isinstance(parts, list) else []:
        if _function_call(part) is not None:
            out.append(Part(PartKind.CALL, signature=_signature(part)))
        elif isinstance(part, dict) and part.get("thought") and isinstance(part.get("text"), str):
            out.append(Part(PartKind.REASONING, part["text"], _signature(part)))
    return tuple(out)


def _signature(part: Any) -> str | None:
    """A part's `thoughtSignature` (a sibling of its `functionCall` or `text`), None without one."""
    found = part.get("thoughtSignature") if isinstance(part, dict) else None
    return found if isinstance(found, str) and found else None


def _nonempty(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


# ---------------------------------------------------------------------------------------------
# The dialect


# The values of the API's `FinishReason` enum.
FINISH_REASONS = frozenset(
    {
        "FINISH_REASON_UNSPECIFIED",
        "STOP",
        "MAX_TOKENS",
        "SAFETY",
        "RECITATION",
        "LANGUAGE",
        "OTHER",
        "BLOCKLIST",
        "PROHIBITED_CONTENT",
        "SPII",
        "MALFORMED_FUNCTION_CALL",
        "IMAGE_SAFETY",
        "IMAGE_PROHIBITED_CONTENT",
        "IMAGE_RECITATION",
        "IMAGE_OTHER",
        "NO_IMAGE",
        "UNEXPECTED_TOOL_CALL",
        "TOO_MANY_TOOL_CALLS",
        "MISSING_THOUGHT_SIGNATURE",
        "MALFORMED_RESPONSE",
    }
)


class GeminiDialect(Dialect, Requesting):
    name = "gemini"
    calls_final_at_finish = True
    codec_name = "sse"

    default_url = (
        "https://generativelanguage.googleapis.com/v1beta/models/imported:streamGenerateContent?alt=sse"
    )
    id_styles = {"gemini": IdStyle("function-call-", 19, string.digits)}

    def claims(self, event: Event) -> bool:
        payload = event.payload
        return isinstance(payload, dict) and ("candidates" in payload or "usageMetadata" in payload)

    def dumps(self, payload: Any) -> str:
        # Gemini's alt=sse JSON: `"key": value` with a space, items joined by a bare comma.
        return json.dumps(payload, ensure_ascii=False, separators=(",", ": "))

    def matches(self, request: Request) -> bool:
        path = urlsplit(request.url).path
        return ":streamGenerateContent" in path or ":generateContent" in path

    def kinds(self, event: Event) -> frozenset[Kind]:
        payload = event.payload
        if event.wire.is_comment:
            return frozenset({Kind.COMMENT})
        if not isinstance(payload, dict):
            return frozenset({Kind.OTHER})
        if "error" in payload:
            return frozenset({Kind.ERROR})
        out: set[Kind] = set()
        feedback = payload.get("promptFeedback")
        if isinstance(feedback, dict) and feedback.get("blockReason"):
            out.add(Kind.ERROR)
        if isinstance(payload.get("usageMetadata"), dict):
            out.add(Kind.USAGE)
        for part in content_parts(payload):
            fc = _function_call(part)
            if fc is not None:
                out.add(_call_kind(fc))
            elif isinstance(part, dict):
                if part.get("thought") or (part.get("thoughtSignature") and not part.get("text")):
                    out.add(Kind.REASONING)
                elif part.get("text"):
                    out.add(Kind.TEXT)
        cand = candidate(payload)
        if _finish(cand) is not MISSING:
            out.add(Kind.FINISH)
        return frozenset(out or {Kind.OTHER})

    def accumulator(self) -> GeminiAccumulator:
        return GeminiAccumulator()

    def is_terminal(self, events: Sequence[Event]) -> bool:
        # No sentinel: the last chunk is the one carrying a finishReason (or an error).
        said = [event for event in events if not event.wire.is_comment]
        return bool(said) and bool(self.kinds(said[-1]) & {Kind.FINISH, Kind.ERROR})

    # -- fragments ---------------------------------------------------------------------------

    def fragments(self, events: Sequence[Event]) -> list[Fragment]:
        router = _Router()
        out: list[Fragment] = []
        for number, event in enumerate(events):
            for slot, part in enumerate(content_parts(event.payload)):
                fc = _function_call(part)
                routed = router.route(fc) if fc is not None else None
                if routed is not None:
                    out.append(Fragment(event=number, slot=slot, call=routed[0], role=routed[1]))
        return out

    def _call_of(self, event: Event, slot: int) -> dict[str, Any]:
        found = content_parts(event.payload)
        fc = _function_call(found[slot]) if 0 <= slot < len(found) else None
        if fc is None:
            raise DialectError(f"gemini: part {slot} of this chunk is not a functionCall")
        return fc

    def get(self, event: Event, slot: int, field: Field) -> Any:
        fc = self._call_of(event, slot)
        if field in _NO_INDEX_FIELDS:
            return MISSING
        if field == Field.ARGS:
            key = "partialArgs" if "partialArgs" in fc else "args"
            return fc.get(key, MISSING)
        return fc.get(str(field), MISSING)

    def set(self, event: Event, slot: int, field: Field, value: Any) -> Event:
        payload = copy_json(event.payload)
        fc = self._call_of(Event(event.wire, payload), slot)
        if field in _NO_INDEX_FIELDS:
            if value is MISSING:
                return event.with_payload(payload)
            raise DialectError(f"gemini: a functionCall part has no {field} field to set")
        if field == Field.ARGS:
            if value is MISSING:
                fc.pop("args", None)
                fc.pop("partialArgs", None)
            elif isinstance(value, list):
                fc["partialArgs"] = value
            else:
                fc["args"] = _args_object(value)
        elif value is MISSING:
            fc.pop(str(field), None)
        else:
            fc[str(field)] = value
        return event.with_payload(payload)

    def continuation(self, event: Event, slot: int, args: str) -> Event:
        fc = self._call_of(event, slot)
        if not ("partialArgs" in fc or fc.get("willContinue") is True):
            raise DialectError(
                "gemini: a whole functionCall has no continuation fragments on the wire "
                "(only Gemini 3 partialArgs calls stream their arguments)"
            )
        part = {"functionCall": {"partialArgs": _partial_args(fc, args), "willContinue": True}}
        return self._chunk_like(event, [part])

    def remove(self, event: Event, slot: int) -> Event | None:
        self._call_of(event, slot)
        payload = copy_json(event.payload)
        cand = candidate(payload)
        if cand is None:  # unreachable: _call_of found the part in this candidate
            return event
        del cand["content"]["parts"][slot]
        if not cand["content"]["parts"] and "finishReason" not in cand:
            return None
        return event.with_payload(payload)

    def finish_reason(self, event: Event) -> Any:
        cand = candidate(event.payload)
        return _finish(cand)

    def with_finish_reason(self, event: Event, reason: Any) -> Event:
        payload = copy_json(event.payload)
        cand = candidate(payload)
        if cand is None:
            if reason is MISSING:
                return event
            raise DialectError("gemini: this event has no candidate to carry a finishReason")
        if reason is MISSING:
            cand.pop("finishReason", None)
        else:
            cand["finishReason"] = reason
        return event.with_payload(payload)

    def pack(self, parts: Sequence[tuple[Event, int]]) -> Event | None:
        """Several functionCall parts in one chunk, shaped like the first one's chunk."""
        if not parts:
            return None
        collected = [copy_json(content_parts(event.payload)[slot]) for event, slot in parts]
        return self._chunk_like(parts[0][0], collected)

    # -- building ----------------------------------------------------------------------------

    def _chunk_like(self, like: Event | None, new_parts: list[Any], finish: str | None = None) -> Event:
        cand: dict[str, Any] = {"content": {"parts": new_parts, "role": "model"}}
        if finish is not None:
            cand["finishReason"] = finish
        cand["index"] = 0
        payload: dict[str, Any] = {"candidates": [cand]}
        source = like.payload if like is not None and isinstance(like.payload, dict) else {}
        for key in ("usageMetadata", "modelVersion", "responseId"):
            if key in source:
                payload[key] = copy_json(source[key])
        return _new_event(self, payload, like)

    # -- validation -----------------------------------------------------------------------------

    shape_codes = {
        "C2": Shape("several function calls in one chunk", True, shapes.calls_in_one_event),
        "C4": Shape("a thought part before the function call", True, shapes.reasoning_before_call),
        "D2": Shape(
            "the finish reason in a chunk of its own after the calls", True, shapes.finish_apart_from_calls
        ),
        "D6": Shape("no `finishReason` at the end", False, shapes.no_terminal_event),
        "D8": Shape("an in-band error object", True, shapes.error_event),
    }

    invariant_codes = {
        "gemini.finish-reason-unknown": "finishReason is a value of the FinishReason enum",
        "gemini.content-after-finish": "a candidate sends no parts after its finishReason",
    }
    # Gemini says STOP whether or not the model called functions: no word for tool calls.
    finish_reasons = {Finish.STOP: "STOP", Finish.LENGTH: "MAX_TOKENS", Finish.CONTENT_FILTER: "SAFETY"}
    finish_vocabulary = FINISH_REASONS

    def invariants(self, events: Sequence[Event]) -> list[Violation]:
        """GenerateContent rules, per candidate: a finishReason from the enum, no parts after it."""
        out: list[Violation] = []
        finished: set[Any] = set()
        for pos, event in enumerate(events):
            payload = event.payload
            candidates = payload.get("candidates") if isinstance(payload, dict) else None
            for cand in candidates if isinstance(candidates, list) else []:
                if not isinstance(cand, dict):
                    continue
                number = field_of(cand, "index", int)
                number = 0 if number is MISSING else number
                content = cand.get("content")
                parts = content.get("parts") if isinstance(content, dict) else None
                if number in finished and any(p for p in parts or [] if p != {"text": ""}):
                    out.append(
                        Violation(
                            "gemini.content-after-finish",
                            pos,
                            f"candidate {number} sends parts after its finish",
                        )
                    )
                reason = _finish(cand)
                if reason is not MISSING:
                    if reason not in FINISH_REASONS:
                        out.append(Violation("gemini.finish-reason-unknown", pos, f"finishReason {reason!r}"))
                    finished.add(number)
        return out

    tool_paths = (
        ("tools", "*", "functionDeclarations", "*", "name"),
        ("tools", "*", "function_declarations", "*", "name"),
    )

    def build(self, kind: Kind, **params: Any) -> list[Event]:
        like = params.get("like")
        if kind == Kind.TEXT:
            return [self._chunk_like(like, [{"text": params.get("text", "")}])]
        if kind == Kind.REASONING:
            return [self._chunk_like(like, [{"text": params.get("text", ""), "thought": True}])]
        if kind == Kind.FINISH:
            return [self._chunk_like(like, [{"text": ""}], finish=params.get("reason", "STOP"))]
        if kind == Kind.TOOL_CALL:
            call: dict[str, Any] = {"name": params["name"], "args": _args_object(params.get("args", {}))}
            if params.get("id"):
                call["id"] = params["id"]
            return [self._chunk_like(like, [{"functionCall": call}])]
        if kind == Kind.USAGE:
            usage = params.get("usage") or {"promptTokenCount": 0, "totalTokenCount": 0}
            return [_new_event(self, {"usageMetadata": usage}, like)]
        if kind == Kind.ERROR:
            error = {
                "code": params.get("code", 500),
                "message": params.get("message", "Internal error"),
                "status": params.get("status", "INTERNAL"),
            }
            return [_new_event(self, {"error": error}, like)]
        if kind in (Kind.PING, Kind.SENTINEL, Kind.META):
            return []  # Gemini has no keepalive, sentinel or framing events
        raise DialectError(f"gemini: cannot build a {kind} event")

    # -- asking the provider (Requesting: `toolstream record`) ----------------------------------

    provider = "gemini"
    api_root = "https://generativelanguage.googleapis.com"
    default_model = "gemini-2.5-flash"
    key_env = ("GEMINI_API_KEY", "GOOGLE_API_KEY")
    streams_reasoning = True

    def request_body(self, recipe: Recipe, model: str) -> dict[str, Any]:
        declarations = []
        for t in recipe.tools:
            declaration: dict[str, Any] = {"name": t.name, "description": t.description}
            if not t.takes_no_args:  # Gemini refuses an OBJECT schema with no properties
                declaration["parameters"] = dict(t.parameters)
            declarations.append(declaration)
        body: dict[str, Any] = {
            "contents": [{"role": "user", "parts": [{"text": recipe.prompt}]}],
            "tools": [{"functionDeclarations": declarations}],
        }
        if recipe.thinking:
            body["generationConfig"] = {
                "thinkingConfig": {"includeThoughts": True, "thinkingBudget": THINKING_BUDGET}
            }
        return body

    def request_path(self, model: str) -> str:
        return f"/v1beta/models/{quote(model, safe='')}:streamGenerateContent?alt=sse"

    def auth_headers(self, key: str) -> dict[str, str]:
        return {"x-goog-api-key": key}

    # -- standing in for the provider (Requesting: `toolstream serve`) ------------------------------

    followup = Followup(
        call=Entry(
            ("functionCall", "id"),
            ("functionCall", "args"),
            (("functionCall", "name"),),
            under="functionCall",
        ),
        result=Entry(
            ("functionResponse", "id"),
            ("functionResponse", "response"),
            (("functionResponse", "name"),),
            under="functionResponse",
        ),
        calls_in="parts",
        results_in="parts",
        turns="contents",
        assistant="model",
        text_in="parts",
        thought="thought",  # a thought's text is not the answer's
        plain_text=False,
        parts=lambda turn: sent_parts(turn.get("parts")),
    )

    def final_stream(self) -> bytes:
        return sse([(None, self.whole_response(Outcome(text=FINAL_TEXT, finish_reason="STOP")))])

    def whole_response(self, outcome: Outcome) -> dict[str, Any]:
        parts: list[Any] = [{"text": outcome.text}] if outcome.text else []
        for c in outcome.tool_calls:
            call: dict[str, Any] = {"name": c.name or "", "args": c.arguments}
            if c.id:
                call["id"] = c.id
            parts.append({"functionCall": call})
        return {
            "candidates": [
                {
                    "content": {"role": "model", "parts": parts},
                    "finishReason": outcome.finish_reason or "STOP",
                    "index": 0,
                }
            ],
            "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2},
            "modelVersion": REPLAY_MODEL,
        }

    def error_body(self, message: str) -> Mapping[str, Any]:
        return {"error": {"code": 500, "message": message, "status": "INTERNAL"}}


def _call_kind(fc: dict[str, Any]) -> Kind:
    # Judged from the part alone: a named part opens or is a call, a nameless one continues or ends.
    if fc.get("name"):
        return Kind.TOOL_START if fc.get("willContinue") is True or "partialArgs" in fc else Kind.TOOL_CALL
    return Kind.TOOL_ARGS if fc else Kind.TOOL_END


def _new_event(dialect: Dialect, payload: Any, like: Event | None) -> Event:
    wire = WireEvent(data=dialect.dumps(payload))
    if like is not None:
        wire = like.wire._replace(data=wire.data, comment=None, block=None)
    return Event(wire, payload)


def _args_object(value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        try:
            value = bounded.loads(value) if value.strip() else {}
        except ValueError:
            raise DialectError(f"gemini: functionCall args must be JSON, not {value[:40]!r}") from None
    if not isinstance(value, dict):
        raise DialectError(f"gemini: functionCall args must be an object, not {type(value).__name__}")
    return value


def _partial_args(fc: dict[str, Any], args: str) -> list[dict[str, Any]]:
    """Argument text as partialArgs: a JSON object becomes one entry per leaf; any other text
    continues the string at the fragment's last path."""
    try:
        value = bounded.loads(args)
    except ValueError:
        value = MISSING
    if isinstance(value, dict):
        return [_leaf(path, leaf) for path, leaf in _leaves(value, "$")]
    earlier = [a for a in fc.get("partialArgs") or () if isinstance(a, dict) and "jsonPath" in a]
    path = earlier[-1]["jsonPath"] if earlier else "$"
    return [{"jsonPath": path, "stringValue": args}]


def _leaves(value: Any, path: str) -> list[tuple[str, Any]]:
    if isinstance(value, dict) and value:
        return [leaf for key, item in value.items() for leaf in _leaves(item, f"{path}.{key}")]
    if isinstance(value, list) and value:
        return [leaf for n, item in enumerate(value) for leaf in _leaves(item, f"{path}[{n}]")]
    return [(path, value)]


def _leaf(path: str, value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"jsonPath": path, "boolValue": value}
    if isinstance(value, (int, float)):
        return {"jsonPath": path, "numberValue": value}
    if isinstance(value, str):
        return {"jsonPath": path, "stringValue": value}
    if value is None:
        return {"jsonPath": path, "nullValue": "NULL_VALUE"}
    return {"jsonPath": path, ("structValue" if isinstance(value, dict) else "listValue"): value}


# The documented finishReasons that say the turn went wrong (the oracle's error state); any other
# value, documented or new, ends the turn.
ERROR_FINISH = FINISH_REASONS - {"STOP", "MAX_TOKENS"}

DIALECT = GeminiDialect()
