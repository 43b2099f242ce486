"""OpenAI Chat Completions streaming (`POST .../chat/completions`, `stream: true`), which every
OpenAI-compatible server speaks too (vLLM, Groq, Mistral, DeepSeek, OpenRouter, Together, Ollama
`/v1`, Azure deployments): SSE `data: {chunk}` lines ended by `data: [DONE]`.

Reference accumulator, keying rules (the quirk classes of STREAM-QUIRKS.md in brackets):

- Only choice 0 is read: the choice whose `index` is 0, or, when a choice has no `index`, the
  one at position 0 of `choices`. Other choices of an `n>1` request are ignored (C7); so is a
  chunk with `choices` empty, null or absent (usage-only, Azure `prompt_filter_results`) (D4).
- Every entry of `delta.tool_calls` is routed, in order, to a logical call (B1, C2). An entry's
  `index` is its key when it is present and not null; an `id` counts only when non-empty, so
  `"id":""` is no id (A6).
  - At an index with an open call: the same id, or no id, continues it (A4, A5); a different id
    starts a new call when the entry names a function (A1, A2), continues the call that already
    has that id when there is one (interleaved calls repeating their ids), and otherwise is a
    continuation whose new id is ignored (A7: LM Studio rotates the id on every nameless
    fragment; the first id is kept). An id-less entry naming another function after the open call
    got arguments starts a new call (parallel calls without ids).
  - At an index not seen yet: an entry with an id or a name starts a new call (even if that id
    was used at another index); one with neither continues the latest call (A11: continuations
    whose index was incremented).
  - With no index (A3): a known id continues its call; a new id or a new name (once the latest
    call has arguments) starts one; anything else continues the latest call.
- The name, joined by the base rule (`joined_name`): a piece equal to the name so far, or one that
  extends it, replaces it (B3: repeated in full, or cumulative); any other piece is appended (B2:
  split). A split whose second half equals the first cannot be told from a repetition. `type` is
  not reported.
- Arguments: string pieces are concatenated; args given as an object (B8) are shallow-merged and
  used when no string piece came. When the text so far is a whole JSON object, a piece equal to
  it is a re-sent copy and is dropped (B9, and B5 args repeated after a whole header), and a
  `"{}"` placeholder is replaced by the real pieces that follow (B6). Empty text is `{}` (B7);
  text that is not JSON is reported `invalid` with the raw text, never as `{}`. A gateway that
  re-chunks by UTF-16 code units may end a piece with a high surrogate and start the next with
  the low one (each escaped, `\\ud83d` then `\\ude00`) (F2): the joined text's surrogate pairs
  are combined into the character they encode, as a UTF-16 client (JavaScript) would have them.
- Finality: calls are final once choice 0 has a `finish_reason` (any value: `stop` with calls
  still reports them, D1; at `length` the last call, the one the limit cut, is not final); they
  are reported in order of first appearance. Pieces arriving after
  the finish reason still count (D2). The stream is complete when `[DONE]` arrived, or a finish reason
  arrived and the stream then ended cleanly without `[DONE]` (D6); `[DONE]` without a finish
  reason completes it too (the server sent its terminal signal). Nothing after `[DONE]` counts. A
  chunk with a non-null `error` is an in-band error (D8): error state. Otherwise the stream is cut
  (a transport cut after the finish reason but before `[DONE]` too). A cut or errored stream
  reports only calls made final by a finish reason before it ended; normally none.
- Custom (freeform) tools: an entry whose `type` is `custom`, or whose `custom` object carries a
  string `name` or `input`, is a custom call's fragment (its other members may be present as
  `null`; a gateway's empty `custom: {}` on a function entry is no custom fragment). Its name is
  `custom.name`, its input the concatenated `custom.input` pieces, reported raw (`ToolCall.freeform`):
  never parsed as JSON, never `{}`, no placeholder or re-sent-copy rule (openai/openai-python#2530,
  openai/openai-openapi#576: the shape is reported, not yet in the chunk schema).
- Text is every `delta.content` of choice 0; reasoning (`reasoning_content`, `reasoning`) is not
  part of the outcome. Usage is the last non-null `usage`.
- Ambiguous shapes no client can resolve and that are merged: two parallel id-less calls to the
  same function at one index, and ids reused by different calls.
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urlparse

from harness import bounded
from harness.cassettes.model import Request
from harness.cassettes.outcome import CUSTOM, Outcome, Part, PartKind, State, ToolCall
from harness.errors import DialectError
from harness.wire.codecs import WireEvent
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
    contradiction,
    copy_json,
    field_of,
    request_body,
)
from harness.wire.dialects.parts import PartLog
from harness.wire.dialects.requesting import (
    FINAL_TEXT,
    REPLAY_MODEL,
    Entry,
    Followup,
    Recipe,
    Requesting,
    args_text,
    call_id,
    chat_body,
    chat_recipe,
    sse,
)

DONE = "[DONE]"

# Where each fragment field lives inside a `tool_calls[]` entry.
_FIELD_PATHS: dict[Field, tuple[str, ...]] = {
    Field.INDEX: ("index",),
    Field.ID: ("id",),
    Field.TYPE: ("type",),
    Field.NAME: ("function", "name"),
    Field.ARGS: ("function", "arguments"),
    Field.SIGNATURE: ("extra_content", "google", "thought_signature"),
}
# A custom (freeform) call's entry keeps its name and raw input under `custom`.
_CUSTOM_PATHS: dict[Field, tuple[str, ...]] = {
    Field.NAME: ("custom", "name"),
    Field.ARGS: ("custom", "input"),
}
_REASONING_KEYS = ("reasoning_content", "reasoning")
_ENVELOPE_KEYS = (
    "id",
    "provider",
    "object",
    "created",
    "model",
    "service_tier",
    "system_fingerprint",
    "usage",
)


# ---------------------------------------------------------------------------------------------
# Reading chunks


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _choice_position(payload: Any) -> int | None:
    """Where choice 0 sits in `choices` (see the module docstring), or None."""
    choices = _dict(payload).get("choices")
    if not isinstance(choices, list):
        return None
    for pos, choice in enumerate(choices):
        if isinstance(choice, dict):
            number = choice.get("index", pos)
            if number == 0 and not isinstance(number, bool):
                return pos
    return None


def _choice(payload: Any) -> dict[str, Any] | None:
    pos = _choice_position(payload)
    return None if pos is None else payload["choices"][pos]


def reasoning_of(delta: Mapping[str, Any]) -> str:
    """A delta's reasoning text: `reasoning_content` (DeepSeek, and vLLM before 0.11), else
    `reasoning` (vLLM since 0.11, OpenRouter), as vercel/ai reads them; "" without any."""
    for name in ("reasoning_content", "reasoning"):
        found = delta.get(name)
        if isinstance(found, str) and found:
            return found
    return ""


def sent_parts(message: Mapping[str, Any]) -> tuple[Part, ...]:
    """An assistant message a client sent back, as parts: its reasoning text first
    (`reasoning_content`, or `reasoning`), then its tool calls with their thought signatures."""
    thought = reasoning_of(message)
    out = [Part(PartKind.REASONING, thought)] if thought else []
    calls = message.get("tool_calls")
    for entry in calls if isinstance(calls, list) else []:
        if isinstance(entry, dict):
            out.append(Part(PartKind.CALL, signature=thought_signature(entry)))
    return tuple(out)


def thought_signature(entry: Any) -> str | None:
    """A tool call entry's Gemini thought signature (Gemini's OpenAI-compatible endpoint:
    `extra_content.google.thought_signature`), None without one."""
    extra = entry.get("extra_content") if isinstance(entry, dict) else None
    google = extra.get("google") if isinstance(extra, dict) else None
    found = google.get("thought_signature") if isinstance(google, dict) else None
    return found if isinstance(found, str) and found else None


def _entries(payload: Any) -> list[Any]:
    """Choice 0's `delta.tool_calls` list (positions are fragment slots)."""
    choice = _choice(payload)
    return _tool_calls(choice)


def _tool_calls(choice: Any) -> list[Any]:
    return field_of(choice, "delta.tool_calls", (list, type(None))) or []


def _finish(choice: Any) -> Any:
    """A choice's finish reason, None when absent or null."""
    reason = field_of(choice, "finish_reason", (str, type(None)))
    return None if reason is MISSING else reason


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _key(value: Any) -> Hashable | None:
    # A missing or null index is no key; one a mutation made unhashable still keys consistently.
    if value is None:
        return None
    return value if isinstance(value, Hashable) else repr(value)


def _is_error(payload: Any) -> bool:
    return isinstance(payload, dict) and payload.get("error") is not None


def _error_message(payload: dict[str, Any]) -> str:
    error = payload["error"]
    if isinstance(error, dict) and error.get("message") is not None:
        return str(error["message"])
    return str(error)


# ---------------------------------------------------------------------------------------------
# Keying: which logical call a `tool_calls[]` entry belongs to


@dataclass(slots=True, eq=False)
class _Call:
    index: Hashable | None
    position: int = 0  # its place among the router's calls
    id: str | None = None
    name: str = ""
    obj: dict[str, Any] | None = None
    pieces: int = 0  # how many fragments fed it
    args_pieces: int = 0  # how many of them carried non-empty args
    # The argument text as its pieces, joined when read (`text`): adding each piece to one string
    # copied it whole every time, quadratic over the thousands of fragments of a long call.
    parts: list[str] = field(default_factory=list)
    length: int = 0  # of the text
    solid: int = 0  # the text's characters other than whitespace, counted up to 3
    placeholder: bool = False  # the text is a JSON `{}`, whitespace around it aside
    custom: bool = False  # a custom (freeform) tool call: its text is raw input, never JSON
    aliases: list[str] = field(default_factory=list)  # other ids its fragments carried (A7)

    @property
    def text(self) -> str:
        if len(self.parts) > 1:
            self.parts[:] = ["".join(self.parts)]
        return self.parts[0] if self.parts else ""

    @property
    def has_args(self) -> bool:
        return self.solid > 0 or self.obj is not None

    def add_name(self, piece: str) -> None:
        self.name = DIALECT.joined_name((self.name, piece))

    def add_args(self, piece: Any) -> None:
        if isinstance(piece, dict):
            self.obj = {**(self.obj or {}), **piece}
            self.args_pieces += 1
            return
        if not isinstance(piece, str) or piece == "":
            return
        self.args_pieces += 1
        if self.custom:  # raw input: every piece counts, none is a copy or a placeholder
            self.parts.append(piece)
            self.length += len(piece)
            self.solid = 3
            return
        # Only a piece as long as the text can re-send it: the text is read (joined) only then.
        if len(piece) == self.length and piece == self.text and _is_object(piece):
            return  # a re-sent copy of the whole arguments
        if self.placeholder:
            # A placeholder before the real arguments.
            self.parts.clear()
            self.length = self.solid = 0
            self.placeholder = False
        self.parts.append(piece)
        self.length += len(piece)
        if self.solid < 3:
            # While the text may still be a placeholder, asked again at each piece: whitespace that
            # `strip()` drops but JSON does not allow (U+3000) makes it none. `split()` drops what
            # `strip()` would, and no more.
            self.solid += len("".join(piece.split()))
            self.placeholder = self.solid == 2 and self.text.strip() == "{}" and _is_object(self.text)

    def tool_call(self) -> ToolCall:
        name = self.name or None
        if self.custom:
            made = ToolCall.freeform(name, join_surrogates(self.text), id=self.id)
        elif self.obj is not None and not self.text.strip():
            made = ToolCall(name=name, arguments=self.obj, id=self.id)
        else:
            made = ToolCall.from_text(name, join_surrogates(self.text), id=self.id)
        return replace(made, aliases=tuple(self.aliases)) if self.aliases else made


_SURROGATE_PAIR = re.compile("[\ud800-\udbff][\udc00-\udfff]")


def custom_part(entry: Any) -> dict[str, Any] | None:
    """A `tool_calls[]` entry's `custom` object when the entry is a custom call's fragment: typed
    `custom`, or its `custom` carries a string name or input (an empty `{}` echoed on a function
    entry by a gateway is not one, earendil-works/pi#8504)."""
    if not isinstance(entry, dict):
        return None
    custom = entry.get("custom")
    if not isinstance(custom, dict):
        return {} if entry.get("type") == "custom" else None
    if (
        entry.get("type") == "custom"
        or isinstance(custom.get("input"), str)
        or isinstance(custom.get("name"), str)
    ):
        return custom
    return None


def join_surrogates(text: str) -> str:
    """Text with each high + low surrogate pair combined into its character (F2); lone halves stay."""
    return _SURROGATE_PAIR.sub(
        lambda pair: pair.group().encode("utf-16", "surrogatepass").decode("utf-16"), text
    )


def _is_object(text: str) -> bool:
    if not text.rstrip().endswith("}"):
        return False
    try:
        return isinstance(bounded.loads(text), dict)
    except ValueError:
        return False


@dataclass(slots=True)
class _Router:
    """The keying rules of the module docstring, shared by the accumulator and `fragments`."""

    calls: list[_Call] = field(default_factory=list)
    _at_index: dict[Hashable, _Call] = field(default_factory=dict)
    _by_id: dict[str, _Call] = field(default_factory=dict)  # the last call in `calls` with each id

    def feed(self, entry: Any) -> tuple[int, bool] | None:
        """Route and merge one entry; its call number and whether it started the call."""
        if not isinstance(entry, dict):
            return None
        custom = custom_part(entry)
        function = custom if custom is not None else _dict(entry.get("function"))
        index, call_id, name = _key(entry.get("index")), _text(entry.get("id")), _text(function.get("name"))
        call = self._route(index, call_id, name)
        new = call is None
        if call is None:
            call = _Call(index, len(self.calls))
            self.calls.append(call)
            if index is not None:
                self._at_index[index] = call
        if call_id and call.id is not None and call_id != call.id and call_id not in call.aliases:
            call.aliases.append(call_id)  # a rotated id (A7): the client may keep any of them
        if call_id and call.id is None:
            call.id = call_id
            known = self._by_id.get(call_id)
            if known is None or known.position < call.position:
                self._by_id[call_id] = call
        if custom is not None and not call.args_pieces:
            call.custom = True
        if name:
            call.add_name(name)
        call.add_args(function.get("input" if call.custom else "arguments"))
        call.pieces += 1
        return call.position, new

    def _route(self, index: Hashable | None, call_id: str, name: str) -> _Call | None:
        known = self._with_id(call_id)
        latest = self.calls[-1] if self.calls else None
        if index is not None:
            current = self._at_index.get(index)
            if current is None:
                if name or (call_id and known is None):
                    return None
                return known or latest
            if call_id and current.id and call_id != current.id:
                if known is not None:
                    return known
                return None if name else current
            return None if self._new_name(current, call_id, name) else current
        if call_id:
            if known is not None:
                return known
            return None if name or latest is None else latest
        return None if latest is None or self._new_name(latest, call_id, name) else latest

    @staticmethod
    def _new_name(call: _Call, call_id: str, name: str) -> bool:
        # An id-less entry naming another function once this call has arguments: a parallel call.
        return not call_id and bool(name) and bool(call.name) and name != call.name and call.has_args

    def _with_id(self, call_id: str) -> _Call | None:
        return self._by_id.get(call_id) if call_id else None


# ---------------------------------------------------------------------------------------------
# The reference accumulator


class OpenAIChatAccumulator(ReferenceAccumulator):
    def __init__(self) -> None:
        self._router = _Router()
        self._text: list[str] = []
        self._finish: str | None = None
        self._final = 0  # calls made final by a finish reason
        self._done = False
        self._error: str | None = None
        self._usage: Mapping[str, Any] | None = None
        self._parts = PartLog()  # calls keyed by their position

    def feed(self, event: Event) -> None:
        payload = event.payload
        if payload is None:
            return  # comment / keepalive
        if isinstance(payload, str):
            self._done = self._done or payload.strip() == DONE
            return
        if not isinstance(payload, dict) or self._done:
            return  # nothing after the terminal `[DONE]` counts (openai-python stops reading there)
        if isinstance(payload.get("usage"), dict):
            self._usage = payload["usage"]
        if _is_error(payload):
            self._error = self._error or _error_message(payload)
            return
        choice = _choice(payload)
        if choice is None:
            return
        delta = _dict(choice.get("delta"))
        thought = reasoning_of(delta)
        if thought:
            self._parts.text(thought, kind=PartKind.REASONING)
        if isinstance(delta.get("content"), str):
            self._text.append(delta["content"])
            self._parts.text(delta["content"])
        for entry in _entries(payload):
            routed = self._router.feed(entry)
            if routed is not None:
                self._parts.open(PartKind.CALL, routed[0])
                signature = thought_signature(entry)
                if signature is not None:  # on whichever fragment: the first one given is the call's
                    self._parts.sign(PartKind.CALL, routed[0], signature)
        reason = _finish(choice)
        if reason is not None:
            self._finish = reason
            self._final = len(self._router.calls)
            if self._finish == "length" and self._final:
                self._final -= 1  # the output limit cut the call being streamed: it is not final

    def close(self, error: str | None = None) -> Outcome:
        calls = self._router.calls
        if self._error is not None:
            state, message = State.ERROR, self._error
        elif self._done or (error is None and self._finish is not None):
            state, message = State.COMPLETE, None
        else:
            state = State.CUT
            message = error or "stream ended before a finish_reason or [DONE]"
        if state is not State.COMPLETE or self._finish == "length":
            calls = calls[: self._final]
        return Outcome(
            tool_calls=tuple(call.tool_call() for call in calls),
            text=join_surrogates("".join(self._text)),
            finish_reason=self._finish,
            state=state,
            error=message,
            usage=self._usage,
            parts=self._parts.close({call.position for call in calls}, text=join_surrogates),
        )


# ---------------------------------------------------------------------------------------------
# The dialect


# The documented `finish_reason` values (`function_call` is deprecated but still sent).
FINISH_REASONS = frozenset({"stop", "length", "tool_calls", "content_filter", "function_call"})


class OpenAIChat(Dialect, Requesting):
    """Fragments are the entries of choice 0's `delta.tool_calls`; the slot is the position in
    that list, so one chunk may hold several (`pack`). Calls are numbered by the accumulator's
    keying rules; a call's first fragment is START, the rest ARGS, and a call sent whole in one
    fragment is WHOLE. There is no END fragment on this wire."""

    name = "openai-chat"
    call_end_markers = False
    codec_name = "sse"

    default_url = "https://api.openai.com/v1/chat/completions"
    id_styles = {"openai": IdStyle("call_", 24), "mistral": IdStyle("", 9)}

    def claims(self, event: Event) -> bool:
        payload = event.payload
        return isinstance(payload, dict) and (
            "choices" in payload or payload.get("object") == "chat.completion.chunk"
        )

    def matches(self, request: Request) -> bool:
        path = urlparse(request.url).path.rstrip("/")
        return path.endswith("/chat/completions") or path == "chat/completions"

    def kinds(self, event: Event) -> frozenset[Kind]:
        payload = event.payload
        if event.wire.is_comment:
            return frozenset({Kind.COMMENT})
        if isinstance(payload, str):
            return frozenset({Kind.SENTINEL} if payload.strip() == DONE else {Kind.OTHER})
        if not isinstance(payload, dict):
            return frozenset({Kind.OTHER})
        if _is_error(payload):
            return frozenset({Kind.ERROR})
        out: set[Kind] = set()
        choices = payload.get("choices")
        for choice in choices if isinstance(choices, list) else []:
            out |= _choice_kinds(_dict(choice))
        if payload.get("usage") is not None:
            out.add(Kind.USAGE)
        return frozenset(out or {Kind.META})

    def accumulator(self) -> ReferenceAccumulator:
        return OpenAIChatAccumulator()

    # -- fragments ------------------------------------------------------------------------------

    def fragments(self, events: Sequence[Event]) -> list[Fragment]:
        router = _Router()
        out: list[Fragment] = []
        for pos, event in enumerate(events):
            if _is_error(event.payload):
                continue
            for slot, entry in enumerate(_entries(event.payload)):
                routed = router.feed(entry)
                if routed is not None:
                    out.append(Fragment(pos, slot, routed[0], Role.START if routed[1] else Role.ARGS))
        # A call sent whole in one fragment (Groq, Mistral, B5) is WHOLE rather than START.
        return [
            Fragment(f.event, f.slot, f.call, Role.WHOLE)
            if router.calls[f.call].pieces == 1 and router.calls[f.call].args_pieces == 1
            else f
            for f in out
        ]

    def get(self, event: Event, slot: int, field: Field) -> Any:
        node: Any = self._entry(event.payload, slot)
        path = _path(node, field)
        if path is None:
            return MISSING
        for key in path[:-1]:
            node = node.get(key)
            if not isinstance(node, dict):
                return MISSING
        return node.get(path[-1], MISSING)

    def set(self, event: Event, slot: int, field: Field, value: Any) -> Event:
        path = _path(self._entry(event.payload, slot), field)
        if path is None:
            raise DialectError(f"openai-chat: a tool_calls entry has no {field} field")
        # Copy on write: only the containers on the way to the field are new, the rest is shared
        # with the event's payload (payloads are never edited in place).
        payload = dict(event.payload)
        choices = payload["choices"] = list(payload["choices"])
        pos = _choice_position(payload)
        assert pos is not None  # _entry found choice 0
        choice = choices[pos] = dict(choices[pos])
        delta = choice["delta"] = dict(choice["delta"])
        entries = delta["tool_calls"] = list(delta["tool_calls"])
        target = entries[slot] = dict(entries[slot])
        for key in path[:-1]:
            inner = target.get(key)
            if not isinstance(inner, dict):
                if value is MISSING:
                    return event
                inner = {}
            target[key] = inner = dict(inner)
            target = inner
        _assign(target, path[-1], value)
        return event.with_payload(payload)

    def continuation(self, event: Event, slot: int, args: str) -> Event:
        entry = self._entry(event.payload, slot)
        piece: dict[str, Any] = {}
        if "index" in entry:
            piece["index"] = entry["index"]
        if custom_part(entry) is not None:
            piece["custom"] = {"input": args}
        else:
            piece["function"] = {"arguments": args}
        choice = _dict(_choice(event.payload))
        return _make(_chunk(event.payload, {"tool_calls": [piece]}, choice_number=choice.get("index", 0)))

    def remove(self, event: Event, slot: int) -> Event | None:
        payload = copy_json(event.payload)
        self._entry(payload, slot)
        choice = _choice(payload)
        assert choice is not None  # _entry found the entry in it
        delta = choice["delta"]
        del delta["tool_calls"][slot]
        if not delta["tool_calls"]:
            del delta["tool_calls"]
        meaningful = (
            any(delta.get(key) not in (None, "", []) for key in delta)
            or choice.get("finish_reason") is not None
            or payload.get("usage") is not None
            or len(payload["choices"]) > 1
        )
        return event.with_payload(payload) if meaningful else None

    def as_choice(self, event: Event, number: int, into: Event | None = None) -> Event | None:
        """Choice 0 of `event` as choice `number` of an `n>1` request (C7): appended to `into`'s
        `choices`, else alone in a chunk with `event`'s envelope (its usage nulled, as OpenAI
        sends usage once). None when `event` has no choice 0 or `into` no `choices` list."""
        choice = _choice(event.payload)
        if choice is None:
            return None
        other = {**copy_json(choice), "index": number}
        if into is None:
            payload = copy_json(event.payload)
            payload["choices"] = [other]
            if payload.get("usage") is not None:
                payload["usage"] = None
            return event.with_payload(payload)
        if not isinstance(_dict(into.payload).get("choices"), list):
            return None
        payload = copy_json(into.payload)
        payload["choices"].append(other)
        return into.with_payload(payload)

    def with_text(self, event: Event, text: str) -> Event | None:
        """Choice 0's delta with `content` (after any it had) beside its `tool_calls`."""
        if _choice(event.payload) is None:
            return None
        payload = copy_json(event.payload)
        choice = _choice(payload)
        assert choice is not None
        delta = choice.setdefault("delta", {})
        if not isinstance(delta, dict):
            return None
        delta["content"] = _text(delta.get("content")) + text
        return event.with_payload(payload)

    def pack(self, parts: Sequence[tuple[Event, int]]) -> Event | None:
        """The first part's chunk with every part's entry, in order, in one `tool_calls` list."""
        if not parts:
            return None
        entries = [copy_json(self._entry(event.payload, slot)) for event, slot in parts]
        payload = copy_json(parts[0][0].payload)
        choice = _choice(payload)
        assert choice is not None
        choice["delta"]["tool_calls"] = entries
        return parts[0][0].with_payload(payload)

    def finish_reason(self, event: Event) -> Any:
        """Choice 0's finish reason; MISSING when absent or null (null is OpenAI's "none yet")."""
        reason = _finish(_choice(event.payload))
        return MISSING if reason is None else reason

    def with_finish_reason(self, event: Event, reason: Any) -> Event:
        """MISSING writes null, as OpenAI does on every chunk without a reason. A chunk without a
        choice 0 (usage-only) gets one with an empty delta."""
        if not isinstance(event.payload, dict):
            raise DialectError(f"openai-chat: {event.payload!r} is not a chunk, it has no finish_reason")
        payload = copy_json(event.payload)
        choice = _choice(payload)
        if choice is None:
            if reason is MISSING:
                return event
            choice = {"index": 0, "delta": {}, "logprobs": None, "finish_reason": None}
            payload["choices"] = [choice, *(payload.get("choices") or [])]
        choice["finish_reason"] = None if reason is MISSING else reason
        return event.with_payload(payload)

    # -- validation -----------------------------------------------------------------------------

    invariant_codes = {
        "openai-chat.finish-reason-unknown": "finish_reason is one of the documented values",
        "openai-chat.finish-reason-repeated": "finish_reason is non-null on exactly one chunk per choice",
        "openai-chat.delta-after-finish": "a choice sends no content after its finish_reason",
        "openai-chat.finish-contradicts-calls": "tool_calls exactly when the choice made calls",
        "openai-chat.event-after-done": "nothing follows [DONE]",
    }
    finish_reasons = {
        Finish.STOP: "stop",
        Finish.TOOL_CALLS: "tool_calls",
        Finish.LENGTH: "length",
        Finish.CONTENT_FILTER: "content_filter",
    }
    finish_vocabulary = FINISH_REASONS

    # Told by one pass over the fragments (`shapes`), not a detector per row: at one event, the
    # classes come in the order the pass finds them, as `toolstream probe` has always listed them.
    shape_codes = {
        "A1": Shape("parallel calls start at one index", False, None),
        "A3": Shape("a call fragment without an index (absent or null)", False, None),
        "A5": Shape("the call id repeated on its continuation fragments", False, None),
        "A6": Shape("an empty-string id on a continuation fragment", False, None),
        "B1": Shape("two fragments of one index within one delta", False, None),
        "B3": Shape("the name repeated on a continuation fragment", False, None),
        "B5": Shape("a whole call, name and arguments, in one fragment", True, None),
        "B6": Shape("whole placeholder arguments (`{}`) in the header, then more arguments", False, None),
        "B7": Shape("an empty arguments fragment after the header", True, None),
        "C2": Shape("several calls in one delta", True, None),
        "D1": Shape("finish reason `stop` after tool calls", False, None),
        "D6": Shape("no `[DONE]` at the end", False, None),
        "D9": Shape("finish reason `tool_calls` without a tool call", False, None),
    }

    def shapes(self, events: Sequence[Event]) -> dict[str, int]:
        """The classes of `shape_codes` a whole stream shows, found in one pass over its fragments
        (then its events): in stream order, at one event in the order found."""
        found: dict[str, int] = {}
        fragments = self.fragments(events)
        ids: dict[int, Any] = {}  # call -> the id its first fragment gave
        headers: dict[int, Any] = {}  # call -> the arguments its first fragment gave
        started_at: dict[Any, int] = {}  # index -> the call that started there
        in_event: dict[int, list[tuple[int, Any]]] = {}  # event -> (call, index) of its fragments
        for fragment in fragments:
            event, slot, call = events[fragment.event], fragment.slot, fragment.call
            index, given_id = self.get(event, slot, Field.INDEX), self.get(event, slot, Field.ID)
            args, name = self.get(event, slot, Field.ARGS), self.get(event, slot, Field.NAME)
            in_event.setdefault(fragment.event, []).append((call, index))
            if index is MISSING or index is None:
                found.setdefault("A3", fragment.event)
            if call not in ids:
                ids[call], headers[call] = given_id, args
                if started_at.get(index, call) != call:
                    found.setdefault("A1", fragment.event)
                started_at.setdefault(index, call)
                if fragment.role is Role.WHOLE:
                    found.setdefault("B5", fragment.event)
                continue
            if given_id == "":
                found.setdefault("A6", fragment.event)
            elif isinstance(given_id, str) and given_id == ids[call]:
                found.setdefault("A5", fragment.event)
            if isinstance(name, str) and name:
                found.setdefault("B3", fragment.event)
            if args == "":
                found.setdefault("B7", fragment.event)
            elif isinstance(args, str) and _whole_json(headers[call]):
                found.setdefault("B6", fragment.event)
        for position, entries in in_event.items():
            if len({call for call, _ in entries}) > 1:
                found.setdefault("C2", position)
            indexes = [index for _, index in entries]
            if len(indexes) != len(set(map(repr, indexes))):
                found.setdefault("B1", position)
        for position, event in enumerate(events):
            reason = self.finish_reason(event)
            if reason == "stop" and fragments:
                found.setdefault("D1", position)
            elif reason == "tool_calls" and not fragments:
                found.setdefault("D9", position)
        meaningful = [e for e in events if not e.wire.is_comment]
        if meaningful and meaningful[-1].payload != DONE:
            found.setdefault("D6", len(events) - 1)
        return dict(sorted(found.items(), key=lambda item: item[1]))

    def invariants(self, events: Sequence[Event]) -> list[Violation]:
        """Chat Completions rules, per choice: one documented finish_reason, no content after it,
        `tool_calls` exactly when the choice made calls; nothing after `[DONE]`."""
        out: list[Violation] = []
        finished: dict[Any, tuple[int, Any]] = {}
        calls: dict[Any, int] = {}
        done = False
        for pos, event in enumerate(events):
            if event.wire.is_comment:
                continue
            if done:
                out.append(Violation("openai-chat.event-after-done", pos, "an event after [DONE]"))
            if event.payload == DONE:
                done = True
            choices = _dict(event.payload).get("choices")
            for place, choice in enumerate(choices if isinstance(choices, list) else []):
                if not isinstance(choice, dict):
                    continue
                number = _key(choice.get("index", place))
                delta = _dict(choice.get("delta"))
                entries = _tool_calls(choice)
                calls[number] = calls.get(number, 0) + len(entries)
                if number in finished and (entries or delta.get("content") or delta.get("refusal")):
                    out.append(
                        Violation(
                            "openai-chat.delta-after-finish",
                            pos,
                            f"choice {number} sends content after its finish",
                        )
                    )
                reason = _finish(choice)
                if reason is None:
                    continue
                if reason not in FINISH_REASONS:
                    out.append(
                        Violation("openai-chat.finish-reason-unknown", pos, f"finish_reason {reason!r}")
                    )
                if number in finished:
                    out.append(
                        Violation(
                            "openai-chat.finish-reason-repeated", pos, f"choice {number} finishes again"
                        )
                    )
                finished[number] = (pos, reason)
        for number, (pos, reason) in finished.items():
            found = contradiction("openai-chat", pos, reason, calls.get(number, 0), self.finish_reasons)
            if found is not None:
                out.append(found)
        return sorted(out, key=lambda v: v.event)

    tool_paths = (
        ("tools", "*", "function", "name"),
        ("tools", "*", "custom", "name"),
        ("tools", "*", "name"),
    )
    own_request_codes = {
        "openai-chat.choice-not-requested": "a choice's index is below the request's `n` (default 1)",
        "openai-chat.usage-not-requested": "a chunk carries `usage` only when the request set "
        "`stream_options.include_usage`",
    }

    def request_rules(self, request: Request | None, events: Sequence[Event]) -> list[Violation]:
        """A choice beyond the `n` asked for (C7 needs an `n>1` request), usage without
        `stream_options.include_usage`, and the tool rule of every dialect."""
        body = request_body(request)
        if body is None:
            return []
        asked = body.get("n", 1)
        asked = asked if isinstance(asked, int) and not isinstance(asked, bool) and asked >= 1 else 1
        options = body.get("stream_options")
        usage = isinstance(options, dict) and options.get("include_usage") is True
        out: list[Violation] = []
        for pos, event in enumerate(events):
            payload = _dict(event.payload)
            if not usage and payload.get("usage") is not None:
                out.append(Violation("openai-chat.usage-not-requested", pos, "usage nobody asked for"))
            choices = payload.get("choices")
            for place, choice in enumerate(choices if isinstance(choices, list) else []):
                number = _dict(choice).get("index", place)
                if isinstance(number, int) and not isinstance(number, bool) and number >= asked:
                    out.append(
                        Violation("openai-chat.choice-not-requested", pos, f"choice {number} of n={asked}")
                    )
        return sorted([*out, *super().request_rules(request, events)], key=lambda v: v.event)

    # -- builders -------------------------------------------------------------------------------

    def build(self, kind: Kind, **params: Any) -> list[Event]:
        """OpenAI-shaped chunks. `like=` an event whose envelope (id, created, model, ...) to copy.
        TEXT/REASONING `text`; FINISH `reason` (default `tool_calls`); USAGE `prompt_tokens`,
        `completion_tokens`; ERROR `message`, `code`; TOOL_START `index`, `id`, `name`, `args`;
        TOOL_ARGS `index`, `args`; TOOL_CALL both in one entry; META the role chunk; COMMENT
        `text` (an SSE comment such as OpenRouter's keepalive). No PING or TOOL_END on this wire."""
        like = params.get("like")
        source = _dict(like.payload) if isinstance(like, Event) else {}
        # Only a real chunk's identity is copied (not an Azure filter chunk's, nor its other fields).
        envelope = {key: source[key] for key in _ENVELOPE_KEYS if key in source} if source.get("id") else None
        index = params.get("index", 0)
        if kind is Kind.SENTINEL:
            return [Event(WireEvent(data=DONE), DONE)]
        if kind is Kind.COMMENT:
            text = params.get("text", " OPENROUTER PROCESSING")
            return [Event(WireEvent(comment=text), None)]
        if kind is Kind.ERROR:
            error = {
                "message": params.get("message", "Internal server error"),
                "code": params.get("code", 502),
            }
            return [_make({"error": error})]
        if kind is Kind.USAGE:
            prompt, completion = params.get("prompt_tokens", 10), params.get("completion_tokens", 10)
            usage = {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            }
            chunk = _chunk(envelope, None)
            chunk["choices"], chunk["usage"] = [], usage
            return [_make(chunk)]
        deltas: dict[Kind, dict[str, Any]] = {
            Kind.TEXT: {"content": params.get("text", "")},
            Kind.REASONING: {"reasoning_content": params.get("text", "")},
            Kind.META: {"role": "assistant", "content": ""},
            Kind.FINISH: {},
            Kind.TOOL_START: {"tool_calls": [_header(index, params, params.get("args", ""))]},
            Kind.TOOL_CALL: {"tool_calls": [_header(index, params, params.get("args", "{}"))]},
            Kind.TOOL_ARGS: {
                "tool_calls": [{"index": index, "function": {"arguments": params.get("args", "")}}]
            },
        }
        if kind not in deltas:
            return []
        reason = params.get("reason", "tool_calls") if kind is Kind.FINISH else None
        return [_make(_chunk(envelope, deltas[kind], finish_reason=reason))]

    # -- helpers --------------------------------------------------------------------------------

    @staticmethod
    def _entry(payload: Any, slot: int) -> dict[str, Any]:
        entries = _entries(payload)
        if not 0 <= slot < len(entries) or not isinstance(entries[slot], dict):
            raise DialectError(f"openai-chat: this chunk has no tool_calls entry at slot {slot} in choice 0")
        return entries[slot]

    # -- asking the provider (Requesting: `toolstream record`) ----------------------------------

    provider = "openai"
    api_root = "https://api.openai.com/v1"
    default_model = "gpt-4.1-mini"
    key_env = ("OPENAI_API_KEY",)
    base_url_env = ("OPENAI_BASE_URL",)
    takes_freeform_tools = True

    def request_body(self, recipe: Recipe, model: str) -> dict[str, Any]:
        return {**chat_body(recipe, model), "stream_options": {"include_usage": True}}

    def request_path(self, model: str) -> str:
        return "/chat/completions"

    def recipe_of(self, body: Mapping[str, Any]) -> Recipe | None:
        return chat_recipe(body)

    # -- standing in for the provider (Requesting: `toolstream serve`) ------------------------------

    followup = Followup(
        call=Entry(("id",), ("function", "arguments"), (("function", "name"),)),
        result=Entry(("tool_call_id",), ("content",), (("name",),), kind="role", kinds=("tool", "function")),
        calls_in="tool_calls",
        freeform=Entry(("id",), ("custom", "input"), (("custom", "name"),), kind="type", kinds=("custom",)),
        parts=sent_parts,
    )

    def final_stream(self) -> bytes:
        head = {
            "id": "chatcmpl-final",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": REPLAY_MODEL,
        }
        first = {"index": 0, "delta": {"role": "assistant", "content": FINAL_TEXT}, "finish_reason": None}
        return sse(
            [
                (None, {**head, "choices": [first]}),
                (None, {**head, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
                (None, "[DONE]"),
            ]
        )

    def whole_response(self, outcome: Outcome) -> dict[str, Any]:
        calls = [
            {
                "id": call_id(c, n, "call_"),
                "type": "custom",
                "custom": {"name": c.name or "", "input": args_text(c)},
            }
            if c.kind == CUSTOM
            else {
                "id": call_id(c, n, "call_"),
                "type": "function",
                "function": {"name": c.name or "", "arguments": args_text(c)},
            }
            for n, c in enumerate(outcome.tool_calls)
        ]
        message: dict[str, Any] = {"role": "assistant", "content": outcome.text or None}
        if calls:
            message["tool_calls"] = calls
        finish = outcome.finish_reason or ("tool_calls" if calls else "stop")
        return {
            "id": "chatcmpl-replay",
            "object": "chat.completion",
            "created": 0,
            "model": REPLAY_MODEL,
            "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }

    def error_body(self, message: str) -> Mapping[str, Any]:
        return {"error": {"message": message, "type": "server_error", "code": None, "param": None}}


def _path(entry: Any, field: Field) -> tuple[str, ...] | None:
    """Where `field` lives in this entry: under `custom` for a custom call's fragment."""
    if field in _CUSTOM_PATHS and custom_part(entry) is not None:
        return _CUSTOM_PATHS[field]
    return _FIELD_PATHS.get(field)


def _choice_kinds(choice: dict[str, Any]) -> set[Kind]:
    out: set[Kind] = set()
    delta = _dict(choice.get("delta"))
    if _text(delta.get("content")):
        out.add(Kind.TEXT)
    if any(_text(delta.get(key)) for key in _REASONING_KEYS):
        out.add(Kind.REASONING)
    for entry in _tool_calls(choice):
        entry = _dict(entry)
        custom = custom_part(entry)
        function = custom if custom is not None else _dict(entry.get("function"))
        args = function.get("input" if custom is not None else "arguments")
        header = bool(_text(entry.get("id")) or _text(function.get("name")))
        if header:
            out.add(Kind.TOOL_START)
        if not header or isinstance(args, dict) or _text(args):
            out.add(Kind.TOOL_ARGS)
    if _finish(choice) is not None:
        out.add(Kind.FINISH)
    return out


def _header(index: Any, params: dict[str, Any], args: str) -> dict[str, Any]:
    function = {"name": params.get("name", "get_weather"), "arguments": args}
    return {
        "index": index,
        "id": params.get("id", "call_harness0000000000000000"),
        "type": "function",
        "function": function,
    }


def _chunk(
    envelope: Any, delta: dict[str, Any] | None, *, choice_number: Any = 0, finish_reason: Any = None
) -> dict[str, Any]:
    """A chunk with the top-level keys of `envelope` (a payload; defaults when None) and one choice
    holding `delta`, or no choice when `delta` is None."""
    source = _dict(envelope)
    out: dict[str, Any] = {
        "id": "chatcmpl-harness",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "harness",
    }
    if source:
        out = {key: copy_json(value) for key, value in source.items() if key != "error"}
    out["choices"] = []
    if delta is not None:
        out["choices"] = [
            {"index": choice_number, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        ]
    if "usage" in out:
        out["usage"] = None
    return out


def _assign(target: dict[str, Any], key: str, value: Any) -> None:
    if value is MISSING:
        target.pop(key, None)
    else:
        target[key] = value


def _make(payload: dict[str, Any]) -> Event:
    return Event(WireEvent(data=DIALECT.dumps(payload)), payload)


DIALECT = OpenAIChat()


def _whole_json(text: Any) -> bool:
    """Whether arguments text is already a whole JSON value (`{}`): more after it cannot join it."""
    if not isinstance(text, str) or not text.strip():
        return False
    try:
        bounded.loads(text)
    except ValueError:
        return False
    return True
