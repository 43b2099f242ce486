"""Anthropic Messages streaming (`POST /v1/messages`, `stream: true`): SSE events whose payload
`type` names the event (`message_start`, `content_block_start|delta|stop`, `message_delta`,
`message_stop`, `ping`, `error`).

Reference accumulator, keying rules:

- Blocks are keyed by their `index` in a map of open blocks, never by "the current block":
  deltas of parallel tool_use blocks may interleave (C1, seed 004) and go where their index says.
- Indices may have gaps (0, 2) and may be reused once their block stopped (C4): a start at a
  stopped index opens a new block.
- A start at an index whose block is still open, with the same type and id, is a duplicate (D10)
  and is ignored; with another id it ends the open block (which is final) and opens a new one.
  A tool_use start repeating the id of a call already final is a duplicate too: its block is
  tracked (so its deltas go nowhere) and never reported.
- `message_start` is taken once; a repeated one is ignored (D10).
- Arguments are the concatenated `partial_json` strings, parsed once the block is final; only
  empty fragments mean no arguments, `{}` (B7). A block that got no `input_json_delta` at all
  keeps the `input` of its start (the SDK does the same).
- A tool block is final at its `content_block_stop`; `message_stop` completes the stream and
  makes any block still open final (not after a `max_tokens` stop: the limit cut it); so does a
  clean end of the stream after a `message_delta` with
  a `stop_reason` (the finish came, only the terminal event is missing: complete, as OpenAI chat
  without `[DONE]`). An `error` event ends the stream in the error state, and a stream without
  `message_stop` is otherwise cut: either way only the blocks stopped before are reported (D7, D8).
  Nothing after `message_stop` counts, an `error` event included. Deltas for an index with no
  open block (stray, after its stop) are dropped (E3); deltas for an index no block ever had,
  while exactly one block is open, are that block's (A11: a gateway numbering a block's deltas
  one past its start, Wei-Shaw/sub2api PR #4294; vercel/ai PR #11771 routes them by the start).
- Calls are reported in the order their blocks started; text is every `text_delta` in arrival
  order; `ping`, thinking blocks and unknown events are skipped wherever they come.
- Server tool blocks (`server_tool_use`, `mcp_tool_use`: web search, web fetch, code execution,
  tool search, an MCP connector tool) are calls the provider runs itself: they are final the same
  way and reported apart, as `server_calls`, never as calls the client must run. A result block
  (`web_search_tool_result`, `code_execution_tool_result`, `tool_search_tool_result`,
  `mcp_tool_result` ..., any `*_tool_result` with a `tool_use_id`) gives the call it answers its
  result, its type (plus `: error_code` for an error result), once the result block is final.
- Usage starts from `message_start.message.usage`; each `message_delta.usage` is cumulative and
  replaces the fields it carries. The finish reason is the last non-null
  `message_delta.delta.stop_reason`.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Any
from urllib.parse import urlparse

from harness.cassettes.model import Request, header
from harness.cassettes.outcome import Outcome, Part, PartKind, State
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
    request_body,
)
from harness.wire.dialects.blocks import (
    BlockAccumulator,
    BlockStep,
    block_codes,
    block_invariants,
    renumber_blocks,
)
from harness.wire.dialects.requesting import (
    FINAL_TEXT,
    REPLAY_MODEL,
    THINKING_BUDGET,
    Entry,
    Followup,
    Recipe,
    Requesting,
    call_id,
    last_user_text,
    recipe_from,
    sse,
    user_message,
)

TOOL_BLOCK_TYPES = frozenset({"tool_use"})  # client calls: server tool blocks are no fragment to edit
# Blocks of calls the provider runs itself (the oracle keeps them apart from client calls).
SERVER_BLOCK_TYPES = frozenset({"server_tool_use", "mcp_tool_use"})

# Payload path of each fragment field, by event type.
_START_FIELDS = {Field.ID: "id", Field.NAME: "name", Field.TYPE: "type"}


def event_type(event: Event) -> str | None:
    """The payload `type` (what the SDK dispatches on), else the SSE event name."""
    payload = event.payload
    if isinstance(payload, dict) and isinstance(payload.get("type"), str):
        return str(payload["type"])
    return event.name


def _key(value: Any) -> Hashable:
    # An index a mutation made unhashable (a list, an object) still keys consistently.
    if isinstance(value, Hashable):
        return value
    return repr(value)


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _block(event: Event) -> dict[str, Any]:
    return _dict(field_of(event.payload, "content_block", dict))


def _block_type(event: Event) -> Any:
    return field_of(event.payload, "content_block.type", str)


def _delta(event: Event) -> dict[str, Any]:
    return _dict(field_of(event.payload, "delta", dict))


def _delta_type(event: Event) -> Any:
    return field_of(event.payload, "delta.type", str)


def _stop_reason(event: Event) -> Any:
    return field_of(event.payload, "delta.stop_reason", (str, type(None)))


def _index(event: Event) -> Hashable:
    return _key(_dict(event.payload).get("index"))


def _is_tool_start(event: Event) -> bool:
    return event_type(event) == "content_block_start" and _block_type(event) in TOOL_BLOCK_TYPES


def _is_args(event: Event) -> bool:
    return event_type(event) == "content_block_delta" and _delta_type(event) == "input_json_delta"


# ---------------------------------------------------------------------------------------------
# Reference accumulator


class AnthropicAccumulator(BlockAccumulator):
    """The oracle for Anthropic Messages streams; see the module docstring for its rules."""

    stop_event = "message_stop"

    def __init__(self) -> None:
        super().__init__()
        self._started = False

    def feed(self, event: Event) -> None:
        if self.state is not None:
            return
        kind = event_type(event)
        payload = _dict(event.payload)
        if kind == "message_start":
            if not self._started:
                self._started = True
                usage = _dict(payload.get("message")).get("usage")
                if isinstance(usage, dict):
                    self.usage = dict(usage)
        elif kind == "content_block_start":
            block = _block(event)
            block_type = _block_type(event)
            answers = block.get("tool_use_id")
            is_result = isinstance(block_type, str) and block_type.endswith("_tool_result")
            self.blocks.start(
                _index(event),
                block_type,
                tool=block_type == "tool_use",
                id=block.get("id"),
                name=block.get("name"),
                start_input=block.get("input"),
                server=block_type in SERVER_BLOCK_TYPES,
                answers=answers if is_result and isinstance(answers, str) else None,
                result=_result(block_type, block.get("content")) if is_result else None,
            )
            self._part(_index(event), block_type, block)
        elif kind == "content_block_delta":
            self._delta(_index(event), _delta(event))
        elif kind == "content_block_stop":
            self.blocks.stop(_index(event))
        elif kind == "message_delta":
            reason = _stop_reason(event)
            if isinstance(reason, str):
                self.finish = reason
            usage = payload.get("usage")
            if isinstance(usage, dict):
                self.usage = {**(self.usage or {}), **usage}
        elif kind == "message_stop":
            self.end_turn()
            self.state = State.COMPLETE
        elif kind == "error":
            error = _dict(payload.get("error"))
            self.state = State.ERROR
            self.error = f"{error.get('type', 'error')}: {error.get('message', '')}".strip()

    def _part(self, index: Hashable, block_type: Any, block: dict[str, Any]) -> None:
        """The part a block begins: a call, a server call, thinking (with the signature or redacted
        payload it may start with) or text (its start's text counts for nothing: deltas carry it)."""
        opened = self.blocks.get(index)
        if opened is None:
            return
        order = opened.order
        if block_type == "tool_use":
            self.parts.open(PartKind.CALL, order)
        elif block_type in SERVER_BLOCK_TYPES:
            self.parts.open(PartKind.SERVER_CALL, order)
        elif block_type == "thinking":
            text, signature = block.get("thinking"), block.get("signature")
            self.parts.reasoning(
                order,
                text if isinstance(text, str) else "",
                signature=signature if isinstance(signature, str) else None,
            )
        elif block_type == "redacted_thinking":
            data = block.get("data")
            self.parts.reasoning(order, data=data if isinstance(data, str) else "")

    def _delta(self, index: Hashable, delta: dict[str, Any]) -> None:
        kind = delta.get("type")
        block = self.blocks.route(index)
        if kind == "text_delta" and isinstance(delta.get("text"), str):
            self.text.append(delta["text"])
            self.parts.text(delta["text"], None if block is None else block.order)
            return
        if kind in ("thinking_delta", "signature_delta") and block is not None and block.kind == "thinking":
            piece, signature = delta.get("thinking"), delta.get("signature")
            self.parts.reasoning(
                block.order,
                piece if isinstance(piece, str) else "",
                signature=signature if isinstance(signature, str) else None,
            )
            return
        if kind == "input_json_delta" and block is not None and block.takes_args:
            block.add_args(delta.get("partial_json"))


def sent_parts(content: Any) -> tuple[Part, ...]:
    """The thinking and tool_use blocks of an assistant message a client sent back, as parts:
    each `thinking` block with its signature, each `redacted_thinking` block with its data."""
    out: list[Part] = []
    for block in content if isinstance(content, list) else []:
        kind = block.get("type") if isinstance(block, Mapping) else None
        if kind == "tool_use":
            out.append(Part(PartKind.CALL))
        elif kind == "thinking":
            text, signature = block.get("thinking"), block.get("signature")
            sign = signature if isinstance(signature, str) and signature else None
            out.append(Part(PartKind.REASONING, text if isinstance(text, str) else "", sign))
        elif kind == "redacted_thinking":
            data = block.get("data")
            out.append(Part(PartKind.REASONING, data=data if isinstance(data, str) else ""))
    return tuple(out)


INTERLEAVED = (
    "a thinking block follows a tool_use block only where the request enables interleaved thinking "
    "(the interleaved-thinking beta header, or adaptive thinking)"
)


def interleaves_thinking(request: Request, body: Mapping[str, Any]) -> bool:
    """Whether a request lets thinking come between tool calls: the `interleaved-thinking-*` beta
    header (Claude 4 models, manual thinking), or `thinking.type: adaptive`, which interleaves by
    itself (docs.anthropic.com extended-thinking; platform.claude.com adaptive-thinking)."""
    beta = header(request.headers, "anthropic-beta") or ""
    thinking = body.get("thinking")
    adaptive = isinstance(thinking, Mapping) and thinking.get("type") == "adaptive"
    return adaptive or "interleaved-thinking" in beta


def _thinking_after_calls(events: Sequence[Event]) -> list[Violation]:
    out: list[Violation] = []
    called = False
    for pos, event in enumerate(events):
        if event_type(event) != "content_block_start":
            continue
        kind = _block_type(event)
        if kind == "tool_use":
            called = True
        elif called and kind in ("thinking", "redacted_thinking"):
            said = f"a {kind} block after a tool_use"
            out.append(Violation("anthropic.thinking-not-interleaved", pos, said))
    return out


def _result(block_type: Any, content: Any) -> str:
    """What a `*_tool_result` block says: its type, and the error code of an error result."""
    code = content.get("error_code") if isinstance(content, dict) else None
    return f"{block_type}: {code}" if isinstance(code, str) else str(block_type)


# ---------------------------------------------------------------------------------------------
# Shapes only this dialect shows (its rows of `shape_codes`)


def _whole_input_at_start(d: Dialect, events: Sequence[Event], fragments: Sequence[Fragment]) -> int | None:
    """B5: a tool_use block's start carries a non-empty `input` (the docs start it at `{}`)."""
    for fragment in fragments:
        block = _block(events[fragment.event])
        if fragment.role is Role.START and isinstance(block.get("input"), dict) and block["input"]:
            return fragment.event
    return None


def _message_start_repeated(d: Dialect, events: Sequence[Event], fragments: Sequence[Fragment]) -> int | None:
    """D10: a second `message_start`."""
    starts = [n for n, event in enumerate(events) if event_type(event) == "message_start"]
    return starts[1] if len(starts) > 1 else None


# ---------------------------------------------------------------------------------------------
# The dialect


# Event types only the Messages API sends (`ping` and `error` are too generic to tell by).
_CLAIMED_TYPES = frozenset(
    {
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    }
)


# The documented `stop_reason` values.
STOP_REASONS = frozenset(
    {
        "end_turn",
        "max_tokens",
        "stop_sequence",
        "tool_use",
        "pause_turn",
        "refusal",
        "model_context_window_exceeded",
    }
)


class AnthropicMessages(Dialect, Requesting):
    name = "anthropic"
    codec_name = "sse"

    names_events_by_type = True
    default_url = "https://api.anthropic.com/v1/messages"
    claimed_types = _CLAIMED_TYPES
    id_styles = {"anthropic": IdStyle("toolu_01", 22)}

    def matches(self, request: Request) -> bool:
        path = urlparse(request.url).path.rstrip("/")
        return path.endswith("/v1/messages") or header(request.headers, "anthropic-version") is not None

    def kinds(self, event: Event) -> frozenset[Kind]:
        if event.wire.is_comment:
            return frozenset({Kind.COMMENT})
        kind = event_type(event)
        payload = _dict(event.payload)
        if kind == "message_start":
            usage = _dict(payload.get("message")).get("usage")
            return frozenset({Kind.META, Kind.USAGE} if usage else {Kind.META})
        if kind == "content_block_start":
            block_type = _block_type(event)
            if block_type in TOOL_BLOCK_TYPES:
                return frozenset({Kind.TOOL_START})
            if block_type in ("thinking", "redacted_thinking"):
                return frozenset({Kind.REASONING})
            return frozenset({Kind.TEXT} if block_type == "text" else {Kind.OTHER})
        if kind == "content_block_delta":
            return frozenset({_DELTA_KINDS.get(_delta_type(event), Kind.OTHER)})
        if kind == "content_block_stop":
            return frozenset({Kind.TOOL_END})  # any block's stop; `fragments` tells the tool ones
        if kind == "message_delta":
            out = set()
            if _stop_reason(event) not in (None, MISSING):
                out.add(Kind.FINISH)
            if payload.get("usage") is not None:
                out.add(Kind.USAGE)
            return frozenset(out or {Kind.META})
        return frozenset({_EVENT_KINDS.get(kind, Kind.OTHER)})

    def accumulator(self) -> ReferenceAccumulator:
        return AnthropicAccumulator()

    # -- fragments ------------------------------------------------------------------------------

    def fragments(self, events: Sequence[Event]) -> list[Fragment]:
        out: list[Fragment] = []
        open_calls: dict[Hashable, tuple[int, Any]] = {}  # index -> (call number, id)
        calls = 0
        for pos, event in enumerate(events):
            kind = event_type(event)
            if kind == "content_block_start":
                index, block = _index(event), _block(event)
                current = open_calls.get(index)
                if _block_type(event) not in TOOL_BLOCK_TYPES:
                    open_calls.pop(index, None)
                elif current is not None and current[1] == block.get("id"):
                    out.append(Fragment(pos, 0, current[0], Role.START))
                else:
                    open_calls[index] = (calls, block.get("id"))
                    out.append(Fragment(pos, 0, calls, Role.START))
                    calls += 1
            elif _is_args(event) and _index(event) in open_calls:
                out.append(Fragment(pos, 0, open_calls[_index(event)][0], Role.ARGS))
            elif kind == "content_block_stop" and _index(event) in open_calls:
                out.append(Fragment(pos, 0, open_calls.pop(_index(event))[0], Role.END))
        return out

    def sign_late(self, events: Sequence[Event]) -> list[Event] | None:
        """Each thinking block's `signature_delta` and `content_block_stop` moved after the first
        delta of the next block: the blocks then overlap, each delta still at its own index
        (OpenRouter relaying Anthropic, rikkahub/rikkahub#1075 / PR #1076)."""
        out = list(events)
        moved = False
        pos = 0
        while pos < len(out):
            event = out[pos]
            if not (event_type(event) == "content_block_delta" and _delta_type(event) == "signature_delta"):
                pos += 1
                continue
            index = _index(event)
            stop = next(
                (k for k in range(pos + 1, len(out)) if event_type(out[k]) == "content_block_stop"
                 and _index(out[k]) == index),
                None,
            )  # fmt: skip
            if stop is None:
                return None
            later = next(
                (k for k in range(stop + 1, len(out)) if event_type(out[k]) == "content_block_delta"
                 and _index(out[k]) != index),
                None,
            )  # fmt: skip
            if later is None:
                pos += 1
                continue
            between = [e for k, e in enumerate(out[pos : later + 1], pos) if k not in (pos, stop)]
            out[pos : later + 1] = [*between, out[pos], out[stop]]
            moved = True
            pos = later + 1
        return out if moved else None

    def get(self, event: Event, slot: int, field: Field) -> Any:
        _check_slot(slot)
        payload = _dict(event.payload)
        if field is Field.INDEX:
            return payload.get("index", MISSING)
        if field in _START_FIELDS:
            if event_type(event) != "content_block_start":
                return MISSING
            return _block(event).get(_START_FIELDS[field], MISSING)
        if field is Field.ARGS:
            return _delta(event).get("partial_json", MISSING) if _is_args(event) else MISSING
        return MISSING

    def set(self, event: Event, slot: int, field: Field, value: Any) -> Event:
        _check_slot(slot)
        payload = copy_json(event.payload)
        if not isinstance(payload, dict):
            raise DialectError(f"anthropic: event {event.name!r} has no JSON object to set {field} in")
        if field is Field.INDEX:
            target, key = payload, "index"
        elif field in _START_FIELDS and event_type(event) == "content_block_start":
            target, key = payload.setdefault("content_block", {}), _START_FIELDS[field]
        elif field is Field.ARGS and _is_args(event):
            target, key = payload["delta"], "partial_json"
        else:
            raise DialectError(f"anthropic: a {event_type(event)} event has no {field} field")
        _assign(target, key, value)
        return event.with_payload(payload)

    def continuation(self, event: Event, slot: int, args: str) -> Event:
        _check_slot(slot)
        # A continuation carries what its source carries: no invented index when the source has none.
        index = _dict(event.payload).get("index", MISSING)
        return _make("content_block_delta", _args_delta(index, args))

    def remove(self, event: Event, slot: int) -> Event | None:
        _check_slot(slot)
        return None  # every Anthropic event carries one fragment at most

    def finish_reason(self, event: Event) -> Any:
        if event_type(event) != "message_delta":
            return MISSING
        return _stop_reason(event)

    def with_finish_reason(self, event: Event, reason: Any) -> Event:
        if event_type(event) != "message_delta" or not isinstance(event.payload, dict):
            raise DialectError(f"anthropic: only message_delta has a stop_reason, not {event_type(event)}")
        payload = copy_json(event.payload)
        delta = payload.get("delta")
        if not isinstance(delta, dict):
            delta = payload["delta"] = {}
        _assign(delta, "stop_reason", reason)
        return event.with_payload(payload)

    # -- validation and numbering -------------------------------------------------------------

    shape_codes = {
        "A1": Shape(
            "a block starts at an index an earlier block started at", False, shapes.calls_share_an_index
        ),
        "B5": Shape("a tool_use block's start carries its whole input", False, _whole_input_at_start),
        "B7": Shape("an empty `partial_json` fragment", True, shapes.empty_args_fragment),
        "C1": Shape(
            "a block's deltas or stop after the next block started (blocks overlap)",
            False,
            shapes.interleaved_calls,
        ),
        "C3": Shape("several tool_use blocks, one after another", True, shapes.calls_one_after_another),
        "C4": Shape("a thinking block before the tool_use block", True, shapes.reasoning_before_call),
        "D1": Shape("stop reason `end_turn` after tool_use blocks", False, shapes.stop_after_calls),
        "D6": Shape("no `message_stop` at the end", False, shapes.no_terminal_event),
        "D8": Shape("an in-band `error` event", True, shapes.error_event),
        "D9": Shape(
            "stop reason `tool_use` without a tool_use block", False, shapes.tool_finish_without_calls
        ),
        "D10": Shape("`message_start` repeated", False, _message_start_repeated),
    }

    invariant_codes = {f"anthropic.{code}": rule for code, rule in block_codes("message_stop").items()}
    finish_reasons = {
        Finish.STOP: "end_turn",
        Finish.TOOL_CALLS: "tool_use",
        Finish.LENGTH: "max_tokens",
        Finish.CONTENT_FILTER: "refusal",
    }
    finish_vocabulary = STOP_REASONS

    def invariants(self, events: Sequence[Event]) -> list[Violation]:
        """Messages API rules: one message_start; blocks numbered by position, each start ->
        deltas -> stop before the next starts, no index reused; every block stopped before
        message_stop, nothing after it; a documented stop_reason, `tool_use` exactly when a
        `tool_use` block was sent."""
        return block_invariants(
            "anthropic",
            [_step(event) for event in events],
            known_reasons=STOP_REASONS,
            tool_reason="tool_use",
            stop_reason="end_turn",
        )

    def renumber(self, events: Sequence[Event]) -> list[Event]:
        return renumber_blocks(events, [_step(event) for event in events], _with_index)

    tool_paths = (("tools", "*", "name"),)  # client and server tools
    own_request_codes = {"anthropic.thinking-not-interleaved": INTERLEAVED}

    def request_rules(self, request: Request | None, events: Sequence[Event]) -> list[Violation]:
        """The tool rule of every dialect; a thinking block after a tool_use block where the request
        did not enable interleaved thinking."""
        out = super().request_rules(request, events)
        body = request_body(request)
        if body is not None and request is not None and not interleaves_thinking(request, body):
            out += _thinking_after_calls(events)
        return out

    def streams_unvalidated_args(self, request: Request | None) -> bool:
        """Fine-grained tool streaming: a tool with `eager_input_streaming: true` (GA), or the beta
        header `fine-grained-tool-streaming-2025-05-14`; the streamed `partial_json` is then "not
        guaranteed" to be valid JSON (platform.claude.com/docs/en/agents-and-tools/tool-use/
        fine-grained-tool-streaming)."""
        if request is None:
            return False
        if "fine-grained-tool-streaming" in (header(request.headers, "anthropic-beta") or ""):
            return True
        body = request_body(request)
        tools = body.get("tools") if body is not None else None
        return any(isinstance(t, dict) and t.get("eager_input_streaming") is True for t in tools or [])

    # -- builders -------------------------------------------------------------------------------

    def build(self, kind: Kind, **params: Any) -> list[Event]:
        """Anthropic-shaped events. Block builders take `index` (default 0); TOOL_START `id`, `name`;
        TOOL_ARGS `args`; TOOL_CALL `id`, `name`, `args`; META `id`, `model`; USAGE and FINISH
        `output_tokens`; ERROR `message` and `type` (default `overloaded_error`)."""
        index = params.get("index", 0)
        if kind is Kind.META:
            message = {
                "id": params.get("id", "msg_01XFDUDYJgAACzvnptvVoYEL"),
                "type": "message",
                "role": "assistant",
                "model": params.get("model", "claude-sonnet-4-5-20250929"),
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": params.get("input_tokens", 10), "output_tokens": 1},
            }
            return [_make("message_start", {"type": "message_start", "message": message})]
        if kind is Kind.TEXT:
            delta = {"type": "text_delta", "text": params.get("text", "")}
            return _whole_block(index, {"type": "text", "text": ""}, [delta])
        if kind is Kind.REASONING:
            deltas = [{"type": "thinking_delta", "thinking": params.get("text", "")}]
            deltas.append({"type": "signature_delta", "signature": params.get("signature", "EqQBCgIYAhIM")})
            return _whole_block(index, {"type": "thinking", "thinking": "", "signature": ""}, deltas)
        if kind is Kind.PING:
            return [Event(WireEvent(data='{"type": "ping"}', name="ping"), {"type": "ping"})]
        if kind in (Kind.USAGE, Kind.FINISH):
            reason = params.get("reason", "end_turn") if kind is Kind.FINISH else None
            payload = {
                "type": "message_delta",
                "delta": {"stop_reason": reason, "stop_sequence": None},
                "usage": {"output_tokens": params.get("output_tokens", 1)},
            }
            return [_make("message_delta", payload)]
        if kind is Kind.SENTINEL:
            return [_make("message_stop", {"type": "message_stop"})]
        if kind is Kind.ERROR:
            error = {
                "type": params.get("type", "overloaded_error"),
                "message": params.get("message", "Overloaded"),
            }
            return [_make("error", {"type": "error", "error": error})]
        if kind is Kind.TOOL_START:
            return [_make("content_block_start", _tool_start(index, params))]
        if kind is Kind.TOOL_ARGS:
            return [_make("content_block_delta", _args_delta(index, params.get("args", "")))]
        if kind is Kind.TOOL_END:
            return [_make("content_block_stop", {"type": "content_block_stop", "index": index})]
        if kind is Kind.TOOL_CALL:
            return [
                _make("content_block_start", _tool_start(index, params)),
                _make("content_block_delta", _args_delta(index, params.get("args", ""))),
                _make("content_block_stop", {"type": "content_block_stop", "index": index}),
            ]
        return []

    # -- asking the provider (Requesting: `toolstream record`) ----------------------------------

    provider = "anthropic"
    api_root = "https://api.anthropic.com"
    default_model = "claude-sonnet-4-5"
    key_env = ("ANTHROPIC_API_KEY",)
    base_url_env = ("ANTHROPIC_BASE_URL",)
    streams_reasoning = True
    searches_web = True

    def request_body(self, recipe: Recipe, model: str) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": model,
            "max_tokens": 1024,
            "messages": user_message(recipe),
            "tools": [
                {"name": t.name, "description": t.description, "input_schema": dict(t.parameters)}
                for t in recipe.tools
            ],
            "stream": True,
        }
        if recipe.thinking:
            # max_tokens must exceed the thinking budget.
            body["max_tokens"] = THINKING_BUDGET * 4
            body["thinking"] = {"type": "enabled", "budget_tokens": THINKING_BUDGET}
        if recipe.web_search:
            body["tools"].append({"type": "web_search_20250305", "name": "web_search", "max_uses": 2})
        return body

    def request_path(self, model: str) -> str:
        return "/v1/messages"

    def recipe_of(self, body: Mapping[str, Any]) -> Recipe | None:
        return recipe_from(last_user_text(body.get("messages")), body.get("tools"), (), "input_schema")

    def auth_headers(self, key: str) -> dict[str, str]:
        return {"x-api-key": key, "anthropic-version": "2023-06-01"}

    # -- standing in for the provider (Requesting: `toolstream serve`) ------------------------------

    followup = Followup(
        call=Entry(("id",), ("input",), (("name",),), kind="type", kinds=("tool_use",)),
        result=Entry(("tool_use_id",), ("content",), kind="type", kinds=("tool_result",)),
        calls_in="content",
        results_in="content",
        text_kind=("type", "text"),
        parts=lambda turn: sent_parts(turn.get("content")),
    )

    def final_stream(self) -> bytes:
        message: dict[str, Any] = {
            "id": "msg_final",
            "type": "message",
            "role": "assistant",
            "model": REPLAY_MODEL,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1},
        }
        text_delta = {"type": "text_delta", "text": FINAL_TEXT}
        return sse(
            [
                ("message_start", {"type": "message_start", "message": message}),
                (
                    "content_block_start",
                    {
                        "type": "content_block_start",
                        "index": 0,
                        "content_block": {"type": "text", "text": ""},
                    },
                ),
                ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": text_delta}),
                ("content_block_stop", {"type": "content_block_stop", "index": 0}),
                (
                    "message_delta",
                    {
                        "type": "message_delta",
                        "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                        "usage": {"output_tokens": 2},
                    },
                ),
                ("message_stop", {"type": "message_stop"}),
            ]
        )

    def whole_response(self, outcome: Outcome) -> dict[str, Any]:
        content: list[Any] = [{"type": "text", "text": outcome.text}] if outcome.text else []
        content += [
            {"type": "tool_use", "id": call_id(c, n, "toolu_"), "name": c.name or "", "input": c.arguments}
            for n, c in enumerate(outcome.tool_calls)
        ]
        stop = outcome.finish_reason or ("tool_use" if outcome.tool_calls else "end_turn")
        return {
            "id": "msg_replay",
            "type": "message",
            "role": "assistant",
            "model": REPLAY_MODEL,
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1},
        }

    def error_body(self, message: str) -> Mapping[str, Any]:
        return {"type": "error", "error": {"type": "api_error", "message": message}}


_DELTA_KINDS: dict[Any, Kind] = {
    "text_delta": Kind.TEXT,
    "citations_delta": Kind.TEXT,
    "input_json_delta": Kind.TOOL_ARGS,
    "thinking_delta": Kind.REASONING,
    "signature_delta": Kind.REASONING,
}
_EVENT_KINDS: dict[Any, Kind] = {"message_stop": Kind.SENTINEL, "ping": Kind.PING, "error": Kind.ERROR}


def _step(event: Event) -> BlockStep:
    """What an event does to the message's blocks (see `blocks.block_invariants`)."""
    if event.wire.is_comment:
        return BlockStep("ignore")
    kind = event_type(event)
    index = _dict(event.payload).get("index")
    if kind == "message_start":
        return BlockStep("message-start")
    if kind == "content_block_start":
        return BlockStep("start", index, tool=_block_type(event) == "tool_use")
    if kind == "content_block_delta":
        return BlockStep("delta", index)
    if kind == "content_block_stop":
        return BlockStep("stop", index)
    if kind == "message_delta":
        reason = _stop_reason(event)
        return BlockStep("finish", reason=None if reason is MISSING else reason)
    if kind == "message_stop":
        return BlockStep("message-stop")
    return BlockStep("other")


def _with_index(event: Event, index: int) -> Event:
    payload = copy_json(event.payload)
    payload["index"] = index
    return event.with_payload(payload)


def _check_slot(slot: int) -> None:
    if slot != 0:
        raise DialectError(f"anthropic: events hold one fragment (slot 0), not slot {slot}")


def _assign(target: dict[str, Any], key: str, value: Any) -> None:
    if value is MISSING:
        target.pop(key, None)
    else:
        target[key] = value


def _make(name: str, payload: dict[str, Any]) -> Event:
    return Event(WireEvent(data=DIALECT.dumps(payload), name=name), payload)


def _args_delta(index: Any, args: str) -> dict[str, Any]:
    delta = {"type": "input_json_delta", "partial_json": args}
    if index is MISSING:
        return {"type": "content_block_delta", "delta": delta}
    return {"type": "content_block_delta", "index": index, "delta": delta}


def _tool_start(index: Any, params: dict[str, Any]) -> dict[str, Any]:
    block: dict[str, Any] = {
        "type": "tool_use",
        "id": params.get("id"),
        "name": params.get("name"),
        "input": {},
    }
    return {"type": "content_block_start", "index": index, "content_block": block}


def _whole_block(index: Any, block: dict[str, Any], deltas: list[dict[str, Any]]) -> list[Event]:
    start = {"type": "content_block_start", "index": index, "content_block": block}
    out = [_make("content_block_start", start)]
    for delta in deltas:
        payload = {"type": "content_block_delta", "index": index, "delta": delta}
        out.append(_make("content_block_delta", payload))
    out.append(_make("content_block_stop", {"type": "content_block_stop", "index": index}))
    return out


DIALECT = AnthropicMessages()
