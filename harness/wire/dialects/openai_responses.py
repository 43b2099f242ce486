"""OpenAI Responses streaming (`POST .../responses`, `stream: true`): SSE events with an `event:`
name that the payload repeats in `type`, a `sequence_number` on each, and no `[DONE]`.

Reference accumulator, keying rules (the quirk classes of STREAM-QUIRKS.md in brackets):

- A function call is an output item: `response.output_item.added` opens it with its `name`
  (the only place the name is sure to be, E5), its `call_id` (the call id) and its `id` (the item
  id, `fc_...`; some servers send none, E6). Argument events find their item by `item_id` when
  that id is known, else by `output_index` (E6, E7: deltas of parallel calls may interleave).
- A repeated `output_item.added` for an item still open (same `output_index`, same or no item id)
  is a duplicate and fills only missing fields (D10); one with another item id opens a new call.
- Arguments are the concatenated `function_call_arguments.delta` pieces until the item's
  `function_call_arguments.done`, whose `arguments` win when non-empty (E1: args only in `.done`;
  E2: a corrected `.done`, never added to the deltas). `output_item.done` can correct them once
  more. A delta for an item whose arguments are done, or for no known item, is dropped (E3).
  Empty arguments are `{}`; text that is not JSON is reported `invalid` with the raw text.
- A call is final at its `output_item.done`; `response.completed` and `response.incomplete` end the
  stream (complete) and make every call final (`response.incomplete`: only those already done; the
  output limit cut the rest, docs/oracle.md length-with-open-call). The function calls in their
  `response.output` fill
  what the events lacked, matched by item id, then `call_id`, then position; a call found only
  there is added. `response.failed` and a top-level `error` event put the stream in the error
  state; a stream with no terminal event is cut. Either way only calls already final are reported.
- Items of tools the provider runs itself (`web_search_call`, `file_search_call`,
  `code_interpreter_call`, `mcp_call`, `image_generation_call`) are server calls, reported apart
  from function calls and final the same way (at their `output_item.done`, or at the terminal
  event, whose `response.output` fills them). A server call is named by its item type; its
  arguments are what the item says the call is (every field but the id, type, status and results:
  `action`, `queries`, `code`, `server_label` ...); its result is the item's `status`, with the
  item's `error` when it has one.
- Custom (freeform) tool calls: a `custom_tool_call` item is a client call keyed like a function
  call; its input is the concatenated `response.custom_tool_call_input.delta` pieces until its
  `.done` (whose `input` wins when non-empty) or the item's `input`, reported raw
  (`ToolCall.freeform`), never parsed as JSON. Client-run items without streamed arguments
  (`shell_call`, `local_shell_call`, `apply_patch_call`, `computer_call`, answered by `call_id`)
  are client calls of their item type (`kind`), their arguments the item's action (`action`,
  `operation` ...), final at their `output_item.done`. A `shell_call`'s commands may stream first
  (`response.shell_call_command.added` / `.delta` / `.done`, keyed by `output_index` and
  `command_index`: the OpenAI OpenAPI document 2.3.0): they are no call until `output_item.done`,
  whose action holds them all, and are otherwise skipped. `mcp_call` arguments may stream through
  `response.mcp_call_arguments.delta`: a server call's, never a client call's. An
  `mcp_approval_request` is a server call awaiting the client's approval (no result); an
  `mcp_list_tools` item is no call.
- Calls are reported in order of first appearance. Text is the `output_text` of message items:
  deltas per content part, replaced by the part's `output_text.done` text. Reasoning items are
  skipped. The finish reason is the terminal response's `status` (`completed`, `incomplete`,
  `failed`); usage is its `usage`.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

from harness.cassettes.model import Request
from harness.cassettes.outcome import CUSTOM, FUNCTION, Outcome, Part, PartKind, ServerCall, State, ToolCall
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
    payload_type,
)
from harness.wire.dialects.parts import PartLog
from harness.wire.dialects.requesting import (
    FINAL_TEXT,
    REPLAY_MODEL,
    Recipe,
    Requesting,
    ToolResult,
    Turn,
    args_text,
    as_dict,
    as_str,
    call_from,
    call_id,
    last_user_text,
    recipe_from,
    sse,
    text_of,
)

ADDED = "response.output_item.added"
ITEM_DONE = "response.output_item.done"
ARGS_DELTA = "response.function_call_arguments.delta"
ARGS_DONE = "response.function_call_arguments.done"
TEXT_DELTA = "response.output_text.delta"
TEXT_DONE = "response.output_text.done"
COMPLETED = "response.completed"
INCOMPLETE = "response.incomplete"
FAILED = "response.failed"
ERROR = "error"
TERMINAL = frozenset({COMPLETED, INCOMPLETE, FAILED})
FUNCTION_CALL = "function_call"
# -- custom tools and other client items (custom_tool_call, shell_call ...) --------------------
CUSTOM_CALL = "custom_tool_call"
CUSTOM_DELTA = "response.custom_tool_call_input.delta"
CUSTOM_DONE = "response.custom_tool_call_input.done"
MCP_ARGS_DELTA = "response.mcp_call_arguments.delta"
MCP_ARGS_DONE = "response.mcp_call_arguments.done"
# A shell call's streamed commands (`.added`, `.delta`, `.done`): no item_id, no call until the item's end.
SHELL_COMMAND = "response.shell_call_command."
# Items the client runs, answered by `call_id`, whose arguments are not streamed: what the item
# says to do is the call (developers.openai.com/api/docs/guides/tools-shell; openai-python
# `types/responses/response_function_shell_tool_call.py`, `response_apply_patch_tool_call.py`).
ACTION_ITEM_TYPES = frozenset({"shell_call", "local_shell_call", "apply_patch_call", "computer_call"})
# The items a client runs: their arguments stream (function and custom calls) or come whole.
CLIENT_ITEM_TYPES = frozenset({FUNCTION_CALL, CUSTOM_CALL}) | ACTION_ITEM_TYPES
_ACTION_SKIPPED = frozenset({"id", "type", "status", "call_id", "pending_safety_checks"})
# -- end custom tools and other client items ---------------------------------------------------
REASONING = "reasoning"
# The deltas of a reasoning item's summary and of its reasoning text.
REASONING_DELTAS = frozenset({"response.reasoning_summary_text.delta", "response.reasoning_text.delta"})
# Output items of tools the provider runs itself (`computer_call` and `local_shell_call` are run by
# the client, so they are not here).
SERVER_ITEM_TYPES = frozenset(
    {
        "web_search_call",
        "file_search_call",
        "code_interpreter_call",
        "mcp_call",
        "image_generation_call",
        "mcp_approval_request",  # a server call awaiting the client's approval: nothing ran yet
    }
)
# Item fields that say how a server call went, not what it was asked to do.
_SERVER_RESULT_FIELDS = frozenset(
    {
        "id",
        "type",
        "status",
        "results",
        "outputs",
        "output",
        "result",
        "error",
        "partial_images",
        "approval_request_id",
    }
)

_RESPONSE_PATH = re.compile(r"/responses(/resp_[^/]+)?$")

# Where each fragment field lives: in the `item` of item events, at the top of argument events.
_ITEM_FIELDS = {
    Field.ID: "call_id",
    Field.ITEM_ID: "id",
    Field.NAME: "name",
    Field.TYPE: "type",
    Field.ARGS: "arguments",
}
_CUSTOM_DONE_FIELDS = {Field.ITEM_ID: "item_id", Field.INDEX: "output_index", Field.ARGS: "input"}
_DELTA_FIELDS = {Field.ITEM_ID: "item_id", Field.INDEX: "output_index", Field.ARGS: "delta"}
_ARGS_DONE_FIELDS = {
    Field.ITEM_ID: "item_id",
    Field.INDEX: "output_index",
    Field.ARGS: "arguments",
    Field.NAME: "name",
}

_KINDS: dict[str, Kind] = {
    "response.created": Kind.META,
    "response.in_progress": Kind.META,
    "response.queued": Kind.META,
    "response.content_part.added": Kind.META,
    "response.content_part.done": Kind.META,
    TEXT_DELTA: Kind.TEXT,
    TEXT_DONE: Kind.META,
    "response.refusal.delta": Kind.TEXT,
    "response.reasoning_summary_part.added": Kind.REASONING,
    "response.reasoning_summary_part.done": Kind.REASONING,
    "response.reasoning_summary_text.delta": Kind.REASONING,
    "response.reasoning_summary_text.done": Kind.REASONING,
    "response.reasoning_text.delta": Kind.REASONING,
    "response.reasoning_text.done": Kind.REASONING,
    ARGS_DELTA: Kind.TOOL_ARGS,
    ARGS_DONE: Kind.TOOL_END,
    CUSTOM_DELTA: Kind.TOOL_ARGS,
    CUSTOM_DONE: Kind.TOOL_END,
    MCP_ARGS_DELTA: Kind.META,  # a server call's arguments: nothing a client runs
    MCP_ARGS_DONE: Kind.META,
    FAILED: Kind.ERROR,
    ERROR: Kind.ERROR,
}


def event_type(event: Event) -> str | None:
    """The payload `type` (what the SDK dispatches on), else the SSE event name."""
    payload = event.payload
    if isinstance(payload, dict) and isinstance(payload.get("type"), str):
        return str(payload["type"])
    return event.name


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _item(payload: Any) -> dict[str, Any]:
    return _dict(_dict(payload).get("item"))


def _is_call_item(event: Event) -> bool:
    return event_type(event) in (ADDED, ITEM_DONE) and _item_type(event.payload) in CLIENT_ITEM_TYPES


def _args_key(item: Mapping[str, Any]) -> str:
    """Where an item keeps its arguments: a custom call's raw `input`, else `arguments`."""
    return "input" if item.get("type") == CUSTOM_CALL else "arguments"


def _item_type(payload: Any) -> Any:
    return field_of(payload, "item.type", str)


def _response_status(payload: Any) -> Any:
    return field_of(payload, "response.status", (str, type(None)))


def reasoning_text(item: Mapping[str, Any]) -> str:
    """A reasoning item's text: its summary texts, then its reasoning texts, joined."""
    pieces = [
        entry.get("text")
        for name in ("summary", "content")
        for entry in _list(item.get(name))
        if isinstance(entry, Mapping)
    ]
    return "".join(piece for piece in pieces if isinstance(piece, str))


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def sent_parts(items: Sequence[Mapping[str, Any]]) -> tuple[Part, ...]:
    """The reasoning and function_call items of a turn a client sent back, as parts: each
    reasoning item with its id, text and `encrypted_content`."""
    out: list[Part] = []
    for item in items:
        if item.get("type") == FUNCTION_CALL:
            out.append(Part(PartKind.CALL))
        elif item.get("type") == REASONING:
            data, item_id = _str(item.get("encrypted_content")), _str(item.get("id"))
            out.append(Part(PartKind.REASONING, reasoning_text(item), None, data, item_id))
    return tuple(out)


def _key(value: Any) -> Hashable | None:
    if value is None:
        return None
    return value if isinstance(value, Hashable) else repr(value)


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


# ---------------------------------------------------------------------------------------------
# Function-call items


@dataclass(slots=True, eq=False)
class _Call:
    index: Hashable | None
    item_id: str | None = None
    call_id: str | None = None
    name: str = ""
    deltas: list[str] = field(default_factory=list)
    done_args: str | None = None  # the `.done` (or item) arguments, which win over the deltas
    closed: bool = False  # arguments done: later deltas are stray
    final: bool = False
    kind: str = FUNCTION_CALL  # the item type
    action: dict[str, Any] = field(default_factory=dict)  # an action item's fields (ACTION_ITEM_TYPES)

    def fill(self, item: Mapping[str, Any]) -> None:
        self.item_id = self.item_id or _str(item.get("id"))
        self.call_id = self.call_id or _str(item.get("call_id"))
        self.name = self.name or _str(item.get("name")) or ""
        if item.get("type") in CLIENT_ITEM_TYPES and self.kind == FUNCTION_CALL:
            self.kind = str(item["type"])
        if self.kind in ACTION_ITEM_TYPES:
            self.action.update({k: v for k, v in item.items() if k not in _ACTION_SKIPPED})

    def finish_args(self, arguments: Any) -> None:
        if isinstance(arguments, str) and (arguments or not self.deltas):
            self.done_args = arguments
        self.closed = True

    def tool_call(self) -> ToolCall:
        if self.kind in ACTION_ITEM_TYPES:
            return ToolCall(None, dict(self.action), id=self.call_id, kind=self.kind)
        text = self.done_args if self.done_args is not None else "".join(self.deltas)
        if self.kind == CUSTOM_CALL:
            return ToolCall.freeform(self.name or None, text, id=self.call_id)
        return ToolCall.from_text(self.name or None, text, id=self.call_id)


@dataclass(slots=True)
class _Calls:
    """Finds and updates the call each event is about: the keying rules, shared by the accumulator
    and `fragments`."""

    calls: list[_Call] = field(default_factory=list)
    _by_index: dict[Hashable, _Call] = field(default_factory=dict)
    _by_item: dict[str, _Call] = field(default_factory=dict)

    def feed(self, event: Event) -> tuple[_Call, Role] | None:
        kind, payload = event_type(event), _dict(event.payload)
        index = _key(payload.get("output_index"))
        if kind == ADDED and _is_call_item(event):
            return self._added(index, _item(payload)), Role.START
        if kind == ITEM_DONE and _is_call_item(event):
            item = _item(payload)
            call = self._find(_str(item.get("id")), index) or self._open(index, item)
            call.fill(item)
            call.finish_args(item.get(_args_key(item)))
            call.final = True
            return call, Role.END
        if kind in (ARGS_DELTA, CUSTOM_DELTA):
            found = self._find(_str(payload.get("item_id")), index)
            if found is None:
                return None
            if not found.closed and isinstance(payload.get("delta"), str):
                found.deltas.append(payload["delta"])
            return found, Role.ARGS
        if kind in (ARGS_DONE, CUSTOM_DONE):
            item = {"id": payload.get("item_id"), "name": payload.get("name")}
            if kind == CUSTOM_DONE:
                item["type"] = CUSTOM_CALL
            call = self._find(_str(item["id"]), index) or self._open(index, item)
            call.fill(item)
            call.finish_args(payload.get("input" if kind == CUSTOM_DONE else "arguments"))
            return call, Role.END
        return None

    def settle(self, output: Any, *, open_final: bool = True) -> None:
        """The terminal response's `output`: fill what the events lacked, then everything is final
        (`open_final=False`: only what its own `output_item.done` made final; the rest is dropped)."""
        if not open_final:
            return  # the output limit ended the response inside the open items (length-with-open-call)
        items = output if isinstance(output, list) else []
        for position, item in enumerate(items):
            if not isinstance(item, dict) or item.get("type") not in CLIENT_ITEM_TYPES:
                continue
            call = self._find(_str(item.get("id")), None) or self._with_call_id(_str(item.get("call_id")))
            if call is None and item.get("id") is None:
                call = self._by_index.get(position)
            if call is None:
                call = self._open(position, item)
            call.fill(item)
            if not call.final:
                call.finish_args(item.get(_args_key(item)))
        for call in self.calls:
            call.final = True

    def _added(self, index: Hashable | None, item: dict[str, Any]) -> _Call:
        item_id = _str(item.get("id"))
        current = self._find(item_id, index)
        if current is not None and not current.final and (item_id is None or item_id == current.item_id):
            current.fill(item)  # a duplicate start
            return current
        call = self._open(index, item)
        if isinstance(item.get(_args_key(item)), str):
            call.deltas.append(item[_args_key(item)])
        return call

    def _open(self, index: Hashable | None, item: Mapping[str, Any]) -> _Call:
        call = _Call(index)
        call.fill(item)
        self.calls.append(call)
        if index is not None:
            self._by_index[index] = call
        if call.item_id is not None:
            self._by_item[call.item_id] = call
        return call

    def _find(self, item_id: str | None, index: Hashable | None) -> _Call | None:
        if item_id is not None and item_id in self._by_item:
            return self._by_item[item_id]
        return None if index is None else self._by_index.get(index)

    def _with_call_id(self, call_id: str | None) -> _Call | None:
        return next((call for call in self.calls if call_id and call.call_id == call_id), None)


@dataclass(slots=True)
class _ServerItems:
    """Server-call items by item id (else output index), in order of first appearance."""

    items: dict[Hashable, dict[str, Any]] = field(default_factory=dict)
    final: set[Hashable] = field(default_factory=set)

    def feed(self, kind: str | None, payload: Mapping[str, Any]) -> bool:
        item = _item(payload)
        if kind not in (ADDED, ITEM_DONE) or _item_type(payload) not in SERVER_ITEM_TYPES:
            return False
        key = _str(item.get("id")) or _key(payload.get("output_index"))
        if key in self.final:
            return True  # a repeated done, or an added after it: the item is settled
        self.items[key] = {**self.items.get(key, {}), **item}
        if kind == ITEM_DONE:
            self.final.add(key)
        return True

    def settle(self, output: Any) -> None:
        for position, item in enumerate(output if isinstance(output, list) else []):
            if isinstance(item, dict) and item.get("type") in SERVER_ITEM_TYPES:
                key = _str(item.get("id")) or position
                if key not in self.final:
                    self.items[key] = {**self.items.get(key, {}), **item}
        self.final.update(self.items)

    def calls(self) -> tuple[ServerCall, ...]:
        return tuple(_server_call(item) for key, item in self.items.items() if key in self.final)


def _server_call(item: Mapping[str, Any]) -> ServerCall:
    arguments = {k: v for k, v in item.items() if k not in _SERVER_RESULT_FIELDS}
    status = _str(item.get("status"))
    error = item.get("error")
    result = f"{status}: {error}" if status and isinstance(error, str) and error else status
    return ServerCall(_str(item.get("type")), arguments, id=_str(item.get("id")), result=result)


# ---------------------------------------------------------------------------------------------
# The reference accumulator


class OpenAIResponsesAccumulator(ReferenceAccumulator):
    def __init__(self) -> None:
        self._servers = _ServerItems()
        self._calls = _Calls()
        self._text: dict[tuple[Hashable | None, Hashable | None], str] = {}
        self._state: State | None = None
        self._error: str | None = None
        self._finish: str | None = None
        self._usage: Mapping[str, Any] | None = None
        # Calls keyed by their `_Call` (hashed by identity, which a pickled copy keeps consistent
        # with `_calls`), server items and text as above.
        self._parts = PartLog()

    def feed(self, event: Event) -> None:
        if self._state is not None:
            return  # nothing after the terminal event counts
        routed = self._calls.feed(event)
        if routed is not None:
            self._parts.open(PartKind.CALL, routed[0])
            return
        kind, payload = event_type(event), _dict(event.payload)
        if self._servers.feed(kind, payload):
            key = _str(_item(payload).get("id")) or _key(payload.get("output_index"))
            self._parts.open(PartKind.SERVER_CALL, key)
            return
        if kind in (TEXT_DELTA, TEXT_DONE):
            part = (
                _key(payload.get("item_id") or payload.get("output_index")),
                _key(payload.get("content_index")),
            )
            if kind == TEXT_DELTA and isinstance(payload.get("delta"), str):
                self._text[part] = self._text.get(part, "") + payload["delta"]
                self._parts.add(PartKind.TEXT, part, payload["delta"])
            elif kind == TEXT_DONE and isinstance(payload.get("text"), str):
                self._text[part] = payload["text"]
                self._parts.add(PartKind.TEXT, part)
                self._parts.replace_text(PartKind.TEXT, part, payload["text"])
        elif kind in (ADDED, ITEM_DONE) and _item_type(payload) == REASONING:
            self._reasoning(kind, payload)
        elif kind in REASONING_DELTAS and isinstance(payload.get("delta"), str):
            key = _str(payload.get("item_id")) or _key(payload.get("output_index"))
            self._parts.reasoning(key, payload["delta"])
        elif kind in TERMINAL:
            response = _dict(payload.get("response"))
            status = _response_status(payload)
            status = None if status is MISSING else status
            self._finish = str(status) if status is not None else kind.rpartition(".")[2]
            if isinstance(response.get("usage"), dict):
                self._usage = response["usage"]
            if kind == FAILED:
                self._fail(response.get("error") or "response.failed")
            else:
                self._calls.settle(response.get("output"), open_final=kind != INCOMPLETE)
                self._servers.settle(response.get("output"))
                self._state = State.COMPLETE
        elif kind == ERROR:
            self._fail(payload.get("error") or payload)

    def _reasoning(self, kind: str, payload: Mapping[str, Any]) -> None:
        """A reasoning item: its id and summary; its `encrypted_content` from `.done` only (the
        one in `.added` may be incomplete, openai-python's `ResponseReasoningItem` says)."""
        item = _item(payload)
        key = _str(item.get("id")) or _key(payload.get("output_index"))
        self._parts.reasoning(key, id=_str(item.get("id")))
        if kind == ITEM_DONE:
            self._parts.reasoning(key, data=_str(item.get("encrypted_content")))
            if "summary" in item or "content" in item:  # the whole text, as `.done` restates it
                self._parts.replace_text(PartKind.REASONING, key, reasoning_text(item))

    def _fail(self, error: Any) -> None:
        self._state = State.ERROR
        message = error.get("message") if isinstance(error, dict) else error
        self._error = str(message if message is not None else error)

    def close(self, error: str | None = None) -> Outcome:
        state = self._state or State.CUT
        message = self._error
        if state is State.CUT:
            message = error or "stream ended before response.completed"
        final = [call for call in self._calls.calls if call.final]
        servers = self._servers
        return Outcome(
            tool_calls=tuple(call.tool_call() for call in final),
            text="".join(self._text.values()),
            finish_reason=self._finish,
            state=state,
            error=message,
            usage=self._usage,
            server_calls=servers.calls(),
            parts=self._parts.close(set(final), servers.final & servers.items.keys()),
        )


# ---------------------------------------------------------------------------------------------
# Invariants and numbering of output items

RESPONSE_STATUSES = frozenset({"completed", "failed", "in_progress", "cancelled", "queued", "incomplete"})
ITEM_STATUSES = frozenset({"in_progress", "completed", "incomplete"})
_TERMINAL_STATUS = {COMPLETED: "completed", INCOMPLETE: "incomplete", FAILED: "failed"}
_DELTAS = frozenset(
    {
        ARGS_DELTA,
        TEXT_DELTA,
        CUSTOM_DELTA,
        MCP_ARGS_DELTA,
        "response.reasoning_summary_text.delta",
        "response.refusal.delta",
    }
)
_CODES = {
    "output-index-invalid": "an output_index is a non-negative integer",
    "output-index-reused": "an output_index is never used again by another item",
    "output-index-out-of-order": "items are numbered by position: the n-th item added has output_index n",
    "item-overlap": "an item is added only after the previous one is done (OpenAI serialises items)",
    "item-id-missing": "every output item has an id",
    "item-id-reused": "no two items share an id",
    "item-unknown": "an item event names an item that was added",
    "item-index-changed": "an item keeps the output_index it was added with",
    "delta-after-done": "no delta follows its item's `.done`",
    "item-not-done": "every item is done before the response completes",
    "status-unknown": "a status is one of the documented values",
    "status-contradicts-event": "a terminal event's response has that event's status",
    "event-after-terminal": "nothing follows response.completed, response.incomplete or response.failed",
    "sequence-not-increasing": "every event's sequence_number is greater than the previous event's",
    "sequence-skipped": "sequence_number counts the events: each is one more than the previous event's",
    "output-disagrees-with-items": (
        "the terminal response's `output` holds the items streamed, in order, each as its"
        " `output_item.done` gave it (id, call_id, name, arguments)"
    ),
}
_SUMMARISED = frozenset({COMPLETED, INCOMPLETE})  # terminal events whose `response.output` repeats the items


def _as_streamed(item: dict[str, Any], deltas: list[str] | None) -> dict[str, Any]:
    """An item never done, as the response lists it: a function call's arguments are those its
    deltas streamed."""
    if deltas is None or item.get("type") not in (FUNCTION_CALL, CUSTOM_CALL):
        return item
    return {**item, _args_key(item): "".join(deltas)}


class _Items:
    """Output items in the order they were added, found by item id (else output_index)."""

    def __init__(self) -> None:
        self.by_id: dict[str, int] = {}
        self.by_index: dict[Hashable, int] = {}
        self.indexes: list[Any] = []  # each item's output_index as added
        self.open: set[int] = set()
        self.done: set[int] = set()  # items whose arguments or whole item are done
        self.added_items: list[dict[str, Any]] = []  # each item as `output_item.added` gave it
        self.done_items: dict[int, dict[str, Any]] = {}  # each item as its `output_item.done` gave it

    def find(self, payload: dict[str, Any]) -> int | None:
        item_id = _str(payload.get("item_id")) or _str(_item(payload).get("id"))
        if item_id is not None and item_id in self.by_id:
            return self.by_id[item_id]
        index = _key(payload.get("output_index"))
        return None if index is None else self.by_index.get(index)

    def add(self, payload: dict[str, Any]) -> int:
        number = len(self.indexes)
        index = payload.get("output_index")
        self.indexes.append(index)
        self.added_items.append(_item(payload))
        item_id = _str(_item(payload).get("id"))
        if item_id is not None:
            self.by_id.setdefault(item_id, number)
        key = _key(index)
        if key is not None:
            self.by_index[key] = number
        self.open.add(number)
        return number

    def check(self, events: Sequence[Event]) -> list[Violation]:
        out: list[Violation] = []

        def flag(code: str, pos: int, message: str) -> None:
            out.append(Violation(f"openai-responses.{code}", pos, message))

        ended = False
        previous: int | None = None
        for pos, event in enumerate(events):
            if event.wire.is_comment:
                continue
            kind, payload = event_type(event), _dict(event.payload)
            seq = payload.get("sequence_number")
            if isinstance(seq, int) and _is_position(seq):
                if previous is not None and seq <= previous:
                    flag("sequence-not-increasing", pos, f"sequence_number {seq} after {previous}")
                elif previous is not None and seq != previous + 1:
                    flag("sequence-skipped", pos, f"sequence_number {seq} after {previous}")
                previous = seq
            if ended:
                flag("event-after-terminal", pos, f"{kind} after the terminal event")
            status = _response_status(payload)
            if status is not MISSING:
                if status not in RESPONSE_STATUSES:
                    flag("status-unknown", pos, f"response status {status!r}")
                elif kind in _TERMINAL_STATUS and status != _TERMINAL_STATUS[kind]:
                    flag("status-contradicts-event", pos, f"{kind} with status {status!r}")
            item = _item(payload)
            item_status = field_of(payload, "item.status", str)
            if item_status is not MISSING and item_status not in ITEM_STATUSES:
                flag("status-unknown", pos, f"item status {item_status!r}")
            if kind == ADDED:
                index = payload.get("output_index")
                item_id = _str(item.get("id"))
                if not _is_position(index):
                    flag("output-index-invalid", pos, f"output_index {index!r}")
                elif index in [i for i in self.indexes if _is_position(i)]:
                    flag("output-index-reused", pos, f"output_index {index} used by an earlier item")
                elif index != len(self.indexes):
                    flag(
                        "output-index-out-of-order", pos, f"item {len(self.indexes)} at output_index {index}"
                    )
                if item_id is None:
                    flag("item-id-missing", pos, f"a {item.get('type')} item without an id")
                elif item_id in self.by_id:
                    flag("item-id-reused", pos, f"item id {item_id!r} used by an earlier item")
                if self.open:
                    flag("item-overlap", pos, "an item added while another is not done")
                self.add(payload)
            elif "item_id" in payload or "output_index" in payload:
                number = self.find(payload)
                if number is None:
                    flag("item-unknown", pos, f"{kind} for an item never added")
                    continue
                # `output_item.done` names it in `item`; a shell call's streamed commands are keyed
                # by `output_index` and `command_index` alone (the OpenAPI document 2.3.0).
                command = (kind or "").startswith(SHELL_COMMAND)
                if "item_id" not in payload and kind != ITEM_DONE and not command:
                    flag("item-id-missing", pos, f"{kind} without an item_id")
                if "output_index" in payload and payload["output_index"] != self.indexes[number]:
                    flag(
                        "item-index-changed",
                        pos,
                        f"{kind} at {payload['output_index']!r}, item added at {self.indexes[number]!r}",
                    )
                if kind in _DELTAS and number in self.done:
                    flag("delta-after-done", pos, f"{kind} after its item's .done")
                if kind in (ITEM_DONE, ARGS_DONE, CUSTOM_DONE, MCP_ARGS_DONE):
                    self.done.add(number)
                if kind == ITEM_DONE:
                    self.open.discard(number)
                    self.done_items[number] = item
            if kind in _SUMMARISED and isinstance(_dict(payload.get("response")).get("output"), list):
                disagreement = self.disagreement(payload["response"]["output"])
                if disagreement:
                    flag("output-disagrees-with-items", pos, disagreement)
            if kind in TERMINAL:
                if self.open and kind != FAILED:
                    flag("item-not-done", pos, f"{len(self.open)} item(s) not done")
                ended = True
        return out

    def disagreement(self, output: list[Any]) -> str | None:
        """What in a terminal response's `output` differs from the items streamed, else None."""
        if len(output) != len(self.added_items):
            return f"output holds {len(output)} item(s), {len(self.added_items)} streamed"
        for number, (listed, added) in enumerate(zip(output, self.added_items, strict=True)):
            streamed = self.done_items.get(number)
            listed = _dict(listed)
            if streamed is None:  # not done (item-not-done says so): only its id can be compared
                if listed.get("id") != added.get("id"):
                    return f"output item {number} has id {listed.get('id')!r}, streamed {added.get('id')!r}"
            elif listed != streamed:
                keys = sorted(k for k in {*listed, *streamed} if listed.get(k) != streamed.get(k))
                return (
                    f"output item {number} differs from its output_item.done in {', '.join(keys) or 'type'}"
                )
        return None

    def restate(self, events: Sequence[Event]) -> list[Event]:
        """The events with each terminal response's `output` rebuilt from the items streamed before
        it: an item done as its `output_item.done` gave it; one not done as the old output listed it
        (else its `output_item.added` form), a function call with the arguments its deltas streamed
        (what the server that sent them had generated, whatever a step did to them)."""
        out: list[Event] = []
        streamed: dict[int, list[str]] = {}  # a function call's argument deltas, by item
        for event in events:
            kind, payload = event_type(event), _dict(event.payload)
            if kind == ADDED:
                self.add(payload)
            elif kind == ITEM_DONE:
                number = self.find(payload)
                if number is not None:
                    self.done_items[number] = _item(payload)
            elif kind in (ARGS_DELTA, CUSTOM_DELTA) and isinstance(payload.get("delta"), str):
                number = self.find(payload)
                if number is not None:
                    streamed.setdefault(number, []).append(payload["delta"])
            old = _dict(payload.get("response")).get("output")
            if kind in _SUMMARISED and isinstance(old, list):
                output = self._output(old, streamed)
                if output is not old and output != old:
                    response = {**payload["response"], "output": output}
                    event = event.with_payload({**payload, "response": response})
            out.append(event)
        return out

    def _output(self, old: list[Any], streamed: dict[int, list[str]]) -> list[Any]:
        """A terminal response's `output` as the items streamed so far make it (`restate`)."""
        # The common case: every item listed as streamed, and none streamed arguments without a `.done`.
        if self.disagreement(old) is None and all(n in self.done_items for n in streamed):
            return old
        by_id = {entry.get("id"): entry for entry in old if isinstance(entry, dict) and entry.get("id")}
        output = []
        for n, added in enumerate(self.added_items):
            listed = by_id.get(added.get("id")) or added
            output.append(copy_json(self.done_items.get(n) or _as_streamed(listed, streamed.get(n))))
        return output

    def renumber(self, events: Sequence[Event]) -> list[Event]:
        out: list[Event] = []
        for event in events:
            payload = _dict(event.payload)
            number: int | None = None
            if event_type(event) == ADDED:
                number = self.add(payload)
                # Later events find this item by its old output_index only while it is the latest.
            elif "item_id" in payload or "output_index" in payload:
                number = self.find(payload)
            if number is not None and "output_index" in payload and payload["output_index"] != number:
                payload = copy_json(payload)
                payload["output_index"] = number
                event = event.with_payload(payload)
            out.append(event)
        return out


def _is_position(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


# ---------------------------------------------------------------------------------------------
# Shapes only this dialect shows (its rows of `shape_codes`)


def _added_with_arguments(d: Dialect, events: Sequence[Event], fragments: Sequence[Fragment]) -> int | None:
    """B5: `output_item.added` already carries the call's arguments (the docs add it with `""`)."""
    for fragment in fragments:
        args = d.get(events[fragment.event], fragment.slot, Field.ARGS)
        if fragment.role is Role.START and isinstance(args, str) and args:
            return fragment.event
    return None


def _created_repeated(d: Dialect, events: Sequence[Event], fragments: Sequence[Fragment]) -> int | None:
    """D10: a second `response.created`."""
    created = [n for n, event in enumerate(events) if event_type(event) == "response.created"]
    return created[1] if len(created) > 1 else None


def _arguments_only_in_done(d: Dialect, events: Sequence[Event], fragments: Sequence[Fragment]) -> int | None:
    """E1: a call whose arguments come in no delta, only whole in its `.done`."""
    with_deltas = {f.call for f in fragments if f.role is Role.ARGS}
    for fragment in fragments:
        if fragment.role is not Role.END or fragment.call in with_deltas:
            continue
        if event_type(events[fragment.event]) == "response.function_call_arguments.done":
            args = d.get(events[fragment.event], fragment.slot, Field.ARGS)
            if isinstance(args, str) and args:
                return fragment.event
    return None


# ---------------------------------------------------------------------------------------------
# The dialect


class OpenAIResponses(Dialect, Requesting):
    """Every event holds one fragment at most (slot 0): `output_item.added` (START), argument
    deltas (ARGS), `function_call_arguments.done` and `output_item.done` (END)."""

    name = "openai-responses"
    codec_name = "sse"

    names_events_by_type = True
    default_url = "https://api.openai.com/v1/responses"
    id_styles = {"responses": IdStyle("call_", 24)}

    def claims(self, event: Event) -> bool:
        kind = payload_type(event.payload)
        return kind is not None and kind.startswith("response.")

    def matches(self, request: Request) -> bool:
        path = urlparse(request.url).path.rstrip("/")
        return _RESPONSE_PATH.search(path) is not None

    def kinds(self, event: Event) -> frozenset[Kind]:
        if event.wire.is_comment:
            return frozenset({Kind.COMMENT})
        kind = event_type(event)
        if kind in (ADDED, ITEM_DONE):
            if not _is_call_item(event):
                return frozenset({Kind.META})
            return frozenset({Kind.TOOL_START} if kind == ADDED else {Kind.TOOL_END})
        if kind in (COMPLETED, INCOMPLETE):
            usage = _dict(_dict(event.payload).get("response")).get("usage")
            return frozenset(
                {Kind.SENTINEL, Kind.FINISH, Kind.USAGE} if usage else {Kind.SENTINEL, Kind.FINISH}
            )
        return frozenset({_KINDS.get(kind or "", Kind.OTHER)})

    def accumulator(self) -> ReferenceAccumulator:
        return OpenAIResponsesAccumulator()

    def announces(self, event: Event) -> bool:
        return event_type(event) in ("response.created", "response.in_progress", "response.queued")

    def is_terminal(self, events: Sequence[Event]) -> bool:
        # completed, incomplete or failed ends a response; a bare `error` event need not be the last.
        said = [event for event in events if not event.wire.is_comment]
        return bool(said) and event_type(said[-1]) in TERMINAL

    # -- fragments ------------------------------------------------------------------------------

    def fragments(self, events: Sequence[Event]) -> list[Fragment]:
        calls = _Calls()
        out: list[Fragment] = []
        for pos, event in enumerate(events):
            routed = calls.feed(event)
            if routed is not None and routed[0].kind not in ACTION_ITEM_TYPES:  # no streamed arguments
                out.append(Fragment(pos, 0, calls.calls.index(routed[0]), routed[1]))
        return out

    def get(self, event: Event, slot: int, field: Field) -> Any:
        target, key = self._place(event, slot, field)
        return MISSING if target is None or key is None else target.get(key, MISSING)

    def set(self, event: Event, slot: int, field: Field, value: Any) -> Event:
        target, key = self._place(event, slot, field)
        if key is None:
            raise DialectError(f"openai-responses: a {event_type(event)} event has no {field} field")
        payload = copy_json(event.payload)
        target = payload.setdefault("item", {}) if field in _ITEM_FIELDS and _is_call_item(event) else payload
        if value is MISSING:
            target.pop(key, None)
        else:
            target[key] = value
        return event.with_payload(payload)

    def continuation(self, event: Event, slot: int, args: str) -> Event:
        """An argument delta for the fragment's item; its `sequence_number` repeats the source's."""
        _check_slot(slot)
        payload = _dict(event.payload)
        item_id = payload.get("item_id", _item(payload).get("id"))
        custom = event_type(event) in (CUSTOM_DELTA, CUSTOM_DONE) or _item_type(payload) == CUSTOM_CALL
        delta: dict[str, Any] = {"type": CUSTOM_DELTA if custom else ARGS_DELTA, "delta": args}
        if item_id is not None:
            delta["item_id"] = item_id
        if "output_index" in payload:
            delta["output_index"] = payload["output_index"]
        delta["sequence_number"] = payload.get("sequence_number", 0)
        return _make(delta)

    def remove(self, event: Event, slot: int) -> Event | None:
        _check_slot(slot)
        return None  # every event carries one fragment at most

    def finish_reason(self, event: Event) -> Any:
        """The terminal response's `status`, else MISSING."""
        if event_type(event) not in TERMINAL:
            return MISSING
        return _response_status(event.payload)

    def with_finish_reason(self, event: Event, reason: Any) -> Event:
        if event_type(event) not in TERMINAL or not isinstance(event.payload, dict):
            raise DialectError(
                f"openai-responses: only a terminal response has a status, not {event_type(event)}"
            )
        payload = copy_json(event.payload)
        response = payload.setdefault("response", {})
        if reason is MISSING:
            response.pop("status", None)
        else:
            response["status"] = reason
        return event.with_payload(payload)

    # -- validation and numbering -------------------------------------------------------------

    shape_codes = {
        "A1": Shape(
            "a function call added at an `output_index` an earlier one took",
            False,
            shapes.calls_share_an_index,
        ),
        "B5": Shape("a function call added with its whole arguments", False, _added_with_arguments),
        "C3": Shape("several function calls, one after another", True, shapes.calls_one_after_another),
        "C4": Shape("a reasoning item before the function call", True, shapes.reasoning_before_call),
        "D6": Shape(
            "no `response.completed` (or other terminal event) at the end", False, shapes.no_terminal_event
        ),
        "D8": Shape("an in-band `error` event", True, shapes.error_event),
        "D10": Shape("`response.created` repeated", False, _created_repeated),
        "E1": Shape(
            "arguments only in `function_call_arguments.done`, no delta", False, _arguments_only_in_done
        ),
        "E7": Shape(
            "a call's deltas or done after the next item was added (items interleaved)",
            False,
            shapes.interleaved_calls,
        ),
    }

    invariant_codes = {f"openai-responses.{code}": rule for code, rule in _CODES.items()}
    # `status` says how the response ended, not why the turn stopped: no word for tool calls.
    # `incomplete` is the output limit's (`incomplete_details.reason`: `max_output_tokens`, or a
    # content filter's): either way it ends the response inside the open items.
    finish_reasons = {Finish.STOP: "completed", Finish.LENGTH: "incomplete"}
    finish_vocabulary = RESPONSE_STATUSES

    def invariants(self, events: Sequence[Event]) -> list[Violation]:
        """Responses rules: items numbered by position in `output` (`output_index`), one item at a
        time from `output_item.added` to `output_item.done`, every event of an item naming its
        item id and keeping its output_index, no delta after the item's `.done`; statuses from the
        documented values and the terminal event's own; nothing after the terminal event."""
        return _Items().check(events)

    def renumber(self, events: Sequence[Event]) -> list[Event]:
        return _Items().renumber(events)

    def restate(self, events: Sequence[Event]) -> list[Event]:
        """`response.completed` / `response.incomplete` list the streamed items again in
        `response.output` (and openai-python's final response reads them there): rebuilt from the
        items' `output_item.done` so a mutated stream never contradicts itself."""
        return _Items().restate(events)

    def resequence(self, events: Sequence[Event]) -> list[Event]:
        """Every `sequence_number` counted up from the first one's, so inserted, dropped or moved
        events keep it strictly increasing (events already right are left as they are)."""
        out: list[Event] = []
        n: int | None = None
        for event in events:
            payload = event.payload
            if isinstance(payload, dict) and _is_position(payload.get("sequence_number")):
                n = payload["sequence_number"] if n is None else n + 1
                if payload["sequence_number"] != n:
                    event = event.with_payload({**payload, "sequence_number": n})
            out.append(event)
        return out

    tool_paths = (("tools", "*", "name"),)  # function and custom tools

    # -- builders -------------------------------------------------------------------------------

    def build(self, kind: Kind, **params: Any) -> list[Event]:
        """Responses-shaped events. Item events take `index` (output_index, default 0), `item_id`
        (default `fc_harness`), `id` (call_id), `name`, `args`; TEXT/REASONING `text`; FINISH
        `reason` (`completed`, or `incomplete` / `failed` for those events); ERROR `message`, `code`;
        every event `sequence_number` (default 0). No PING or USAGE event on this wire."""
        seq = params.get("sequence_number", 0)
        index = params.get("index", 0)
        item_id = params.get("item_id", "fc_harness")
        if kind is Kind.META:
            return [
                _make(
                    {"type": "response.created", "response": _response("in_progress"), "sequence_number": seq}
                )
            ]
        if kind in (Kind.SENTINEL, Kind.FINISH):
            status = params.get("reason", "completed") if kind is Kind.FINISH else "completed"
            name = {"incomplete": INCOMPLETE, "failed": FAILED}.get(status, COMPLETED)
            return [_make({"type": name, "response": _response(status), "sequence_number": seq})]
        if kind is Kind.ERROR:
            error = {"type": ERROR, "code": params.get("code", "server_error")}
            error.update(
                message=params.get("message", "The server had an error"), param=None, sequence_number=seq
            )
            return [_make(error)]
        if kind in (Kind.TEXT, Kind.REASONING):
            return _text_item(kind, params.get("text", ""), index, seq, params.get("item_id"))
        call = {
            "id": item_id,
            "type": FUNCTION_CALL,
            "status": "in_progress",
            "arguments": "",
            "call_id": params.get("id", "call_harness0000000000000000"),
            "name": params.get("name", "get_weather"),
        }
        args = params.get("args", "{}" if kind is Kind.TOOL_CALL else "")
        start = _make({"type": ADDED, "item": call, "output_index": index, "sequence_number": seq})
        piece = _make(
            {
                "type": ARGS_DELTA,
                "delta": args,
                "item_id": item_id,
                "output_index": index,
                "sequence_number": seq,
            }
        )
        done = {
            "type": ARGS_DONE,
            "arguments": args,
            "item_id": item_id,
            "output_index": index,
            "sequence_number": seq,
        }
        whole = {**call, "status": "completed", "arguments": args}
        end = [
            _make(done),
            _make({"type": ITEM_DONE, "item": whole, "output_index": index, "sequence_number": seq}),
        ]
        builders = {
            Kind.TOOL_START: [start],
            Kind.TOOL_ARGS: [piece],
            Kind.TOOL_END: end,
            Kind.TOOL_CALL: [start, piece, *end],
        }
        return builders.get(kind, [])

    # -- helpers --------------------------------------------------------------------------------

    @staticmethod
    def _place(event: Event, slot: int, field: Field) -> tuple[dict[str, Any] | None, str | None]:
        """The dict holding a field in this event, and its key (None when the event has no such field)."""
        _check_slot(slot)
        kind, payload = event_type(event), _dict(event.payload)
        if _is_call_item(event):
            if field is Field.INDEX:
                return payload, "output_index"
            if field is Field.ARGS:
                return _item(payload), _args_key(_item(payload))
            return _item(payload), _ITEM_FIELDS.get(field)
        if kind in (ARGS_DELTA, CUSTOM_DELTA):
            return payload, _DELTA_FIELDS.get(field)
        if kind == ARGS_DONE:
            return payload, _ARGS_DONE_FIELDS.get(field)
        if kind == CUSTOM_DONE:
            return payload, _CUSTOM_DONE_FIELDS.get(field)
        return None, None

    # -- asking the provider (Requesting: `toolstream record`) ----------------------------------

    provider = "openai-responses"
    api_root = "https://api.openai.com/v1"
    default_model = "gpt-5-mini"
    key_env = ("OPENAI_API_KEY",)
    base_url_env = ("OPENAI_BASE_URL",)
    streams_reasoning = True
    takes_freeform_tools = True
    searches_web = True

    def request_body(self, recipe: Recipe, model: str) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": model,
            "input": recipe.prompt,
            "tools": [
                {"type": "custom", "name": t.name, "description": t.description, "format": {"type": "text"}}
                if t.freeform
                else {
                    "type": "function",
                    "name": t.name,
                    "description": t.description,
                    "parameters": dict(t.parameters),
                }
                for t in recipe.tools
            ],
            "stream": True,
        }
        if recipe.thinking:
            body["reasoning"] = {"effort": "medium", "summary": "auto"}
        if recipe.web_search:
            body["tools"].append({"type": "web_search"})
        return body

    def request_path(self, model: str) -> str:
        return "/responses"

    def recipe_of(self, body: Mapping[str, Any]) -> Recipe | None:
        given = body.get("input")
        prompt = given if isinstance(given, str) else last_user_text(given)
        return recipe_from(prompt, body.get("tools"), ())

    # -- standing in for the provider (Requesting: `toolstream serve`) ------------------------------

    # The WebSocket mode (`wss://api.openai.com/v1/responses`, developers.openai.com/api/docs/guides/
    # websocket-mode; the openai SDK's `client.responses.connect()`): each response follows a
    # client message `{"type": "response.create", ...}`, the create body minus `stream` and
    # `background`; the server events are the SSE events' JSON objects, one per message, with no
    # `event:` line; a continuation sends only the new items (its tool outputs) and
    # `previous_response_id`.
    websocket_session = "on-create"

    def websocket_messages(self, events: Iterable[WireEvent]) -> list[WireEvent]:
        return [WireEvent(data=event.data) for event in events if not event.is_comment]

    def websocket_events(self, messages: Iterable[WireEvent]) -> list[WireEvent]:
        # The SSE form names each event by its payload's type, as the HTTP endpoint sends it.
        out = []
        for message in messages:
            try:
                payload = json.loads(message.data)
            except ValueError:
                payload = None
            out.append(WireEvent(data=message.data, name=self.event_name(payload)))
        return out

    def websocket_followup(self, messages: Sequence[Mapping[str, Any]]) -> Turn | None:
        return self.read_followup(messages[-1]) if messages else None

    def read_followup(self, body: Mapping[str, Any]) -> Turn | None:
        items = body.get("input")
        if not isinstance(items, list):
            return None
        # The assistant turn is the run of output items (messages, reasoning, calls) before the outputs.
        outputs_at = [i for i, item in enumerate(items) if as_dict(item).get("type") in _OUTPUT_TYPES]
        if not outputs_at:
            return None
        end = outputs_at[0]
        start = end
        while start > 0 and as_dict(items[start - 1]).get("type") in (
            *CLIENT_ITEM_TYPES,
            *SERVER_ITEM_TYPES,
            "mcp_list_tools",
            "reasoning",
            "message",
        ):
            if (
                as_dict(items[start - 1]).get("type") == "message"
                and as_dict(items[start - 1]).get("role") != "assistant"
            ):
                break
            start -= 1
        turn = [as_dict(item) for item in items[start:end]]
        calls = tuple(_echoed(item) for item in turn if item.get("type") in CLIENT_ITEM_TYPES)
        text = "".join(text_of(item.get("content")) for item in turn if item.get("type") == "message")
        results = tuple(
            ToolResult(as_str(as_dict(item).get("call_id")), None, as_dict(item).get("output"))
            for item in items[end:]
            if as_dict(item).get("type") in _OUTPUT_TYPES
        )
        by_reference = not calls and body.get("previous_response_id") is not None
        return Turn(calls, results, text, by_reference, sent_parts(turn))

    def final_stream(self) -> bytes:
        part = {"type": "output_text", "text": "", "annotations": []}
        where = {"item_id": "msg_final", "output_index": 0, "content_index": 0}
        events: list[tuple[str, dict[str, Any]]] = [
            ("response.created", {"response": _replay_response("in_progress", [])}),
            ("response.output_item.added", {"output_index": 0, "item": _replay_message("", "in_progress")}),
            ("response.content_part.added", {**where, "part": part}),
            ("response.output_text.delta", {**where, "delta": FINAL_TEXT}),
            ("response.output_text.done", {**where, "text": FINAL_TEXT}),
            ("response.content_part.done", {**where, "part": {**part, "text": FINAL_TEXT}}),
            ("response.output_item.done", {"output_index": 0, "item": _replay_message(FINAL_TEXT)}),
            (
                "response.completed",
                {"response": _replay_response("completed", [_replay_message(FINAL_TEXT)])},
            ),
        ]
        return sse(
            (name, {"type": name, **payload, "sequence_number": n})
            for n, (name, payload) in enumerate(events)
        )

    def whole_response(self, outcome: Outcome) -> dict[str, Any]:
        output: list[Any] = [_replay_message(outcome.text)] if outcome.text else []
        for n, c in enumerate(outcome.tool_calls):
            identifier = call_id(c, n, "call_")
            if c.kind != FUNCTION:
                output.append(_whole_item(c, identifier))
                continue
            output.append(
                {
                    "id": f"fc_{identifier}",
                    "type": "function_call",
                    "status": "completed",
                    "call_id": identifier,
                    "name": c.name or "",
                    "arguments": args_text(c),
                }
            )
        return _replay_response("completed", output)

    def error_body(self, message: str) -> Mapping[str, Any]:
        return {"error": {"message": message, "type": "server_error", "code": None, "param": None}}


# What a client answers each client item with (custom calls: `custom_tool_call_output` ...).
_OUTPUT_TYPES = frozenset(f"{kind}_output" for kind in CLIENT_ITEM_TYPES)


def _echoed(item: Mapping[str, Any]) -> ToolCall:
    """A client item a follow-up sends back, as the call it is: a custom call's raw input is
    never parsed; an action item is its action."""
    kind = item.get("type")
    if kind == CUSTOM_CALL:
        raw = item.get("input")
        return ToolCall.freeform(
            as_str(item.get("name")), raw if isinstance(raw, str) else "", as_str(item.get("call_id"))
        )
    if kind in ACTION_ITEM_TYPES:
        action = {k: v for k, v in item.items() if k not in _ACTION_SKIPPED}
        return ToolCall(None, action, id=as_str(item.get("call_id")), kind=str(kind))
    return call_from(item.get("name"), item.get("arguments"), item.get("call_id"))


def _whole_item(call: ToolCall, identifier: str) -> dict[str, Any]:
    """A custom call or an action item as a whole response lists it."""
    if call.kind == CUSTOM:
        return {
            "id": f"ctc_{identifier}",
            "type": CUSTOM_CALL,
            "status": "completed",
            "call_id": identifier,
            "name": call.name or "",
            "input": args_text(call),
        }
    action = call.arguments if isinstance(call.arguments, dict) else {}
    return {
        "id": f"item_{identifier}",
        "type": call.kind,
        "status": "completed",
        "call_id": identifier,
        **action,
    }


def _check_slot(slot: int) -> None:
    if slot != 0:
        raise DialectError(f"openai-responses: events hold one fragment (slot 0), not slot {slot}")


def _response(status: str) -> dict[str, Any]:
    return {
        "id": "resp_harness",
        "object": "response",
        "created_at": 0,
        "status": status,
        "model": "harness",
        "output": [],
    }


def _make(payload: dict[str, Any]) -> Event:
    return Event(WireEvent(data=DIALECT.dumps(payload), name=payload["type"]), payload)


def _text_item(kind: Kind, text: str, index: int, seq: int, item_id: str | None) -> list[Event]:
    """A whole message (TEXT) or reasoning (REASONING) output item: added, its one part, the text
    as one delta, the part and the item done. Its id is drawn from the text, so two inserted items
    never share one."""
    reasoning = kind is Kind.REASONING
    prefix = "rs_" if reasoning else "msg_"
    item_id = item_id or prefix + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:40]
    where = {"item_id": item_id, "output_index": index}
    part: dict[str, Any]
    item: dict[str, Any]
    if reasoning:
        part_key, part = "summary_index", {"type": "summary_text", "text": text}
        names = ("response.reasoning_summary_part", "response.reasoning_summary_text")
        item = {"id": item_id, "type": "reasoning", "summary": []}
        done_item = {**item, "summary": [part]}
    else:
        part_key, part = "content_index", {"type": "output_text", "annotations": [], "text": text}
        names = ("response.content_part", "response.output_text")
        item = {"id": item_id, "type": "message", "status": "in_progress", "content": [], "role": "assistant"}
        done_item = {**item, "status": "completed", "content": [part]}
    empty = {**part, "text": ""}
    payloads = [
        {"type": ADDED, "item": item, "output_index": index},
        {"type": f"{names[0]}.added", **where, part_key: 0, "part": empty},
        {"type": f"{names[1]}.delta", **where, part_key: 0, "delta": text},
        {"type": f"{names[1]}.done", **where, part_key: 0, "text": text},
        {"type": f"{names[0]}.done", **where, part_key: 0, "part": part},
        {"type": ITEM_DONE, "item": done_item, "output_index": index},
    ]
    return [_make({**payload, "sequence_number": seq}) for payload in payloads]


def _replay_response(status: str, output: list[Any]) -> dict[str, Any]:
    """A whole response object of the replay server's own (its final answer, an outcome served whole)."""
    return {
        "id": "resp_final",
        "object": "response",
        "created_at": 0,
        "status": status,
        "model": REPLAY_MODEL,
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": 1,
            "output_tokens": 1,
            "total_tokens": 2,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    }


def _replay_message(text: str, status: str = "completed") -> dict[str, Any]:
    content = [{"type": "output_text", "text": text, "annotations": []}] if status == "completed" else []
    return {"id": "msg_final", "type": "message", "role": "assistant", "status": status, "content": content}


DIALECT = OpenAIResponses()
