"""AWS Bedrock ConverseStream (`POST /model/{modelId}/converse-stream`): AWS eventstream frames
whose `:event-type` names the event (`messageStart`, `contentBlockStart`, `contentBlockDelta`,
`contentBlockStop`, `messageStop`, `metadata`) and whose payload is the inner JSON object, e.g.
`{"contentBlockIndex":0,"delta":{"toolUse":{"input":"..."}},"p":"abcd"}` (`p` is random-length
padding and means nothing). Exception frames (`:message-type` `exception`, `:exception-type`
e.g. `throttlingException`, payload `{"message": ...}`) are in-band errors.

Reference accumulator, keying rules:

- Blocks are keyed by `contentBlockIndex` in a map of open blocks, never by arrival order: text
  and reasoning blocks get no `contentBlockStart` and begin with their first delta (C5), tool
  blocks begin at `contentBlockStart` with `toolUse{toolUseId,name}`. Deltas of parallel blocks
  may interleave (C1); indices may have gaps and may be reused once their block stopped (C4).
- A `contentBlockStart` at an index whose tool block is open with the same `toolUseId` is a
  duplicate (D10) and is ignored; with another id it ends the open block (which is final) and
  opens a new one. A start repeating the id of a call already final is a duplicate and never
  reported. A repeated `messageStart` is ignored.
- Arguments are the concatenated `toolUse.input` strings, parsed once the block is final; no
  input, or only empty strings, means `{}` (B7). A `toolUse` delta for an index with no open
  tool block (no start, or after its stop) is dropped: no name or id could be given to it.
- A tool block is final at its `contentBlockStop`; `messageStop` completes the stream (and makes
  any block still open final, but not at a `max_tokens` stop: the limit cut it); `metadata` after
  it still gives the usage. An exception frame
  ends the stream in the error state, and a stream without `messageStop` is cut: either way only
  the blocks stopped before are reported (D7, D8).
- Calls come in the order their blocks started; text is every `text` delta in arrival order;
  reasoning content is skipped. The finish reason is `messageStop.stopReason`; usage is
  `metadata.usage`.
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Mapping, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlparse, urlsplit

from harness.cassettes.model import Request
from harness.cassettes.outcome import Outcome, Part, PartKind, State
from harness.errors import DialectError, UsageError
from harness.wire.codecs import EventHeader, WireEvent
from harness.wire.codecs.eventstream import encode_frame
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
from harness.wire.dialects.blocks import (
    BlockAccumulator,
    BlockStep,
    block_codes,
    block_invariants,
    renumber_blocks,
)
from harness.wire.dialects.requesting import THINKING_BUDGET, Recipe
from harness.wire.dialects.sigv4 import sign_sigv4

if TYPE_CHECKING:
    import datetime as dt

    from harness.wire.dialects.providers import PreparedRequest
from harness.wire.dialects.requesting import (
    FINAL_TEXT,
    Entry,
    Followup,
    Requesting,
    call_id,
    dumps,
    required_variable,
)

_PATH = re.compile(r"/model/[^/]+/converse-stream$")
_START_FIELDS = {Field.ID: "toolUseId", Field.NAME: "name", Field.TYPE: "type"}
# Bedrock pads every payload with a prefix of this alphabet so sizes leak nothing.
PADDING_ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
_STRING = 7  # eventstream header value type: string


def _region_of(url: str) -> str:
    match = re.match(r"bedrock-runtime[.-]([a-z0-9-]+)\.", urlsplit(url).hostname or "")
    if not match:
        raise UsageError("set AWS_REGION in the environment (the Bedrock region)")
    return match.group(1)


def padding(length: int) -> str:
    """A `p` value of the given length, the way Bedrock writes it."""
    return (PADDING_ALPHABET * (length // len(PADDING_ALPHABET) + 1))[:length]


def is_exception(event: Event) -> bool:
    """An exception frame: `:message-type` is `exception` (or, without headers, a `...Exception` name)."""
    for name, _, value in event.wire.headers:
        if name == ":message-type":
            return value == "exception"
    return (event.name or "").endswith("Exception")


def exception_event(exception_type: str, message: str) -> Event:
    """An exception frame as Bedrock sends it mid-stream."""
    payload = {"message": message}
    headers: tuple[EventHeader, ...] = (
        (":exception-type", _STRING, exception_type),
        (":content-type", _STRING, "application/json"),
        (":message-type", _STRING, "exception"),
    )
    return Event(WireEvent(data=DIALECT.dumps(payload), name=exception_type, headers=headers), payload)


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _stop_reason(event: Event) -> Any:
    return field_of(event.payload, "stopReason", (str, type(None)))


def _key(value: Any) -> Hashable:
    if isinstance(value, Hashable):
        return value
    return repr(value)


def _index(event: Event) -> Hashable:
    return _key(_dict(event.payload).get("contentBlockIndex"))


def _tool_start(event: Event) -> dict[str, Any] | None:
    if event.name != "contentBlockStart":
        return None
    start = _dict(_dict(event.payload).get("start")).get("toolUse")
    return start if isinstance(start, dict) else None


def _tool_delta(event: Event) -> dict[str, Any] | None:
    if event.name != "contentBlockDelta":
        return None
    delta = _dict(_dict(event.payload).get("delta")).get("toolUse")
    return delta if isinstance(delta, dict) else None


# ---------------------------------------------------------------------------------------------
# Reference accumulator


def sent_parts(content: Any) -> tuple[Part, ...]:
    """The reasoning and tool blocks of an assistant message a client sent back, as parts: each
    `reasoningContent` block with its `reasoningText` signature or its `redactedContent`."""
    out: list[Part] = []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        if "toolUse" in block:
            out.append(Part(PartKind.CALL))
        elif isinstance(block.get("reasoningContent"), dict):
            reasoning = block["reasoningContent"]
            said = _dict(reasoning.get("reasoningText"))
            text, signature = said.get("text"), said.get("signature")
            redacted = reasoning.get("redactedContent")
            out.append(
                Part(
                    PartKind.REASONING,
                    text if isinstance(text, str) else "",
                    signature if isinstance(signature, str) and signature else None,
                    redacted if isinstance(redacted, str) else None,
                )
            )
    return tuple(out)


class BedrockConverseAccumulator(BlockAccumulator):
    """The oracle for Bedrock ConverseStream; see the module docstring for its rules."""

    stop_event = "messageStop"

    def feed(self, event: Event) -> None:
        if self.state is State.ERROR:
            return
        if event.name == "metadata":
            usage = _dict(event.payload).get("usage")
            if isinstance(usage, dict):
                self.usage = dict(usage)
            return
        if self.state is State.COMPLETE:
            return
        if is_exception(event):
            self.state = State.ERROR
            self.error = f"{event.name}: {_dict(event.payload).get('message', '')}".strip()
        elif event.name == "contentBlockStart":
            tool = _tool_start(event)
            if tool is not None:  # an image or toolResult start: nothing a tool-call client needs
                self.blocks.start(
                    _index(event), "toolUse", tool=True, id=tool.get("toolUseId"), name=tool.get("name")
                )
                started = self.blocks.get(_index(event))
                if started is not None:
                    self.parts.open(PartKind.CALL, started.order)
        elif event.name == "contentBlockDelta":
            self._delta(_index(event), _dict(_dict(event.payload).get("delta")))
        elif event.name == "contentBlockStop":
            self.blocks.stop(_index(event))
        elif event.name == "messageStop":
            reason = _stop_reason(event)
            self.finish = reason if isinstance(reason, str) else None
            self.end_turn()
            self.state = State.COMPLETE

    def _delta(self, index: Hashable, delta: dict[str, Any]) -> None:
        block = self.blocks.get(index)
        if "toolUse" in delta:
            if isinstance(delta.get("text"), str):
                self.text.append(delta["text"])
            if block is not None and block.tool:
                block.add_args(_dict(delta["toolUse"]).get("input"))
            return
        kind = next(iter(delta), None)
        if block is None and kind is not None:
            self.blocks.open_without_start(index, kind)  # text and reasoning blocks have no start (C5)
            block = self.blocks.get(index)
        order = None if block is None else block.order
        if isinstance(delta.get("text"), str):
            self.text.append(delta["text"])
            self.parts.text(delta["text"], order)
        reasoning = delta.get("reasoningContent")
        if isinstance(reasoning, dict) and order is not None:
            # `text` pieces, one `signature`, or `redactedContent` (base64 on the wire), per block.
            text, signature, redacted = (reasoning.get(k) for k in ("text", "signature", "redactedContent"))
            self.parts.reasoning(
                order,
                text if isinstance(text, str) else "",
                signature=signature if isinstance(signature, str) else None,
                data=redacted if isinstance(redacted, str) else None,
            )


# ---------------------------------------------------------------------------------------------
# The dialect


# The `:event-type`s of a ConverseStream (also the keys of boto3's `{eventType: payload}` dicts).
EVENT_TYPES = frozenset(
    {"messageStart", "contentBlockStart", "contentBlockDelta", "contentBlockStop", "messageStop", "metadata"}
)


# The documented `stopReason` values.
STOP_REASONS = frozenset(
    {
        "end_turn",
        "tool_use",
        "max_tokens",
        "stop_sequence",
        "guardrail_intervened",
        "content_filtered",
        "model_context_window_exceeded",
    }
)


class BedrockConverse(Dialect, Requesting):
    name = "bedrock-converse"
    codec_name = "eventstream"

    default_url = "https://bedrock-runtime.us-east-1.amazonaws.com/model/imported/converse-stream"
    id_styles = {"bedrock": IdStyle("tooluse_", 22)}

    def render(self, event: Event) -> WireEvent:
        wire = super().render(event)
        if wire.headers or not is_exception(event) or event.name is None:
            return wire
        # An exception known by its name only (rebuilt from the stdio protocol's name and payload)
        # is written as Bedrock frames it, not as an `event` frame an SDK would pass over.
        return wire._replace(headers=exception_event(event.name, "").wire.headers)

    def claims(self, event: Event) -> bool:
        payload = event.payload
        if event.name in EVENT_TYPES:
            return True
        return isinstance(payload, dict) and ("contentBlockIndex" in payload or "stopReason" in payload)

    def matches(self, request: Request) -> bool:
        return bool(_PATH.search(urlparse(request.url).path.rstrip("/")))

    def kinds(self, event: Event) -> frozenset[Kind]:
        if is_exception(event):
            return frozenset({Kind.ERROR})
        name = event.name
        if name == "messageStart":
            return frozenset({Kind.META})
        if name == "contentBlockStart":
            return frozenset({Kind.TOOL_START} if _tool_start(event) is not None else {Kind.OTHER})
        if name == "contentBlockDelta":
            delta = _dict(_dict(event.payload).get("delta"))
            return frozenset(_DELTA_KINDS.get(key, Kind.OTHER) for key in delta) or frozenset({Kind.OTHER})
        if name == "contentBlockStop":
            return frozenset({Kind.TOOL_END})  # any block's stop; `fragments` tells the tool ones
        if name == "messageStop":
            return frozenset({Kind.FINISH, Kind.SENTINEL})
        if name == "metadata":
            return frozenset({Kind.USAGE})
        return frozenset({Kind.OTHER})

    def accumulator(self) -> ReferenceAccumulator:
        return BedrockConverseAccumulator()

    def is_terminal(self, events: Sequence[Event]) -> bool:
        # `metadata` (usage, metrics) follows `messageStop`: a response ends with it, or with an exception.
        if not events:
            return False
        last = events[-1]
        stopped = any(event.name == "messageStop" for event in events)
        return is_exception(last) or (last.name == "metadata" and stopped)

    # -- fragments ------------------------------------------------------------------------------

    def fragments(self, events: Sequence[Event]) -> list[Fragment]:
        out: list[Fragment] = []
        open_calls: dict[Hashable, tuple[int, Any]] = {}  # index -> (call number, toolUseId)
        calls = 0
        for pos, event in enumerate(events):
            index = _index(event)
            start = _tool_start(event)
            if start is not None:
                current = open_calls.get(index)
                if current is not None and current[1] == start.get("toolUseId"):
                    out.append(Fragment(pos, 0, current[0], Role.START))
                else:
                    open_calls[index] = (calls, start.get("toolUseId"))
                    out.append(Fragment(pos, 0, calls, Role.START))
                    calls += 1
            elif _tool_delta(event) is not None and index in open_calls:
                out.append(Fragment(pos, 0, open_calls[index][0], Role.ARGS))
            elif event.name == "contentBlockStop" and index in open_calls:
                out.append(Fragment(pos, 0, open_calls.pop(index)[0], Role.END))
        return out

    def get(self, event: Event, slot: int, field: Field) -> Any:
        _check_slot(slot)
        if field is Field.INDEX:
            return _dict(event.payload).get("contentBlockIndex", MISSING)
        if field in _START_FIELDS:
            start = _tool_start(event)
            return MISSING if start is None else start.get(_START_FIELDS[field], MISSING)
        if field is Field.ARGS:
            delta = _tool_delta(event)
            return MISSING if delta is None else delta.get("input", MISSING)
        return MISSING

    def set(self, event: Event, slot: int, field: Field, value: Any) -> Event:
        _check_slot(slot)
        payload = copy_json(event.payload)
        if not isinstance(payload, dict):
            raise DialectError(f"bedrock-converse: event {event.name!r} has no JSON object to set {field} in")
        if field is Field.INDEX:
            target, key = payload, "contentBlockIndex"
        elif field in _START_FIELDS and _tool_start(event) is not None:
            target, key = payload["start"]["toolUse"], _START_FIELDS[field]
        elif field is Field.ARGS and _tool_delta(event) is not None:
            target, key = payload["delta"]["toolUse"], "input"
        else:
            raise DialectError(f"bedrock-converse: a {event.name} event has no {field} field")
        if value is MISSING:
            target.pop(key, None)
        else:
            target[key] = value
        return event.with_payload(payload)

    def continuation(self, event: Event, slot: int, args: str) -> Event:
        _check_slot(slot)
        source = _dict(event.payload)
        payload: dict[str, Any] = {
            "contentBlockIndex": source.get("contentBlockIndex", 0),
            "delta": {"toolUse": {"input": args}},
        }
        if "p" in source:
            payload["p"] = source["p"]
        return _make("contentBlockDelta", payload)

    def remove(self, event: Event, slot: int) -> Event | None:
        _check_slot(slot)
        return None  # every ConverseStream event carries one fragment at most

    def finish_reason(self, event: Event) -> Any:
        if event.name != "messageStop":
            return MISSING
        return _stop_reason(event)

    def with_finish_reason(self, event: Event, reason: Any) -> Event:
        if event.name != "messageStop" or not isinstance(event.payload, dict):
            raise DialectError(f"bedrock-converse: only messageStop has a stopReason, not {event.name}")
        payload = copy_json(event.payload)
        if reason is MISSING:
            payload.pop("stopReason", None)
        else:
            payload["stopReason"] = reason
        return event.with_payload(payload)

    # -- validation and numbering -------------------------------------------------------------

    shape_codes = {
        "A1": Shape(
            "a tool block starts at a `contentBlockIndex` an earlier block started at",
            False,
            shapes.calls_share_an_index,
        ),
        "B7": Shape("an empty `toolUse.input` fragment", True, shapes.empty_args_fragment),
        "C1": Shape(
            "a block's deltas or stop after the next block started (blocks overlap)",
            False,
            shapes.interleaved_calls,
        ),
        "C3": Shape("several toolUse blocks, one after another", True, shapes.calls_one_after_another),
        "C4": Shape("reasoning content before the toolUse block", True, shapes.reasoning_before_call),
        "D1": Shape("stop reason `end_turn` after toolUse blocks", False, shapes.stop_after_calls),
        "D6": Shape("no `messageStop` at the end", False, shapes.no_terminal_event),
        "D8": Shape("an in-band exception event", True, shapes.error_event),
        "D9": Shape(
            "stop reason `tool_use` without a toolUse block", False, shapes.tool_finish_without_calls
        ),
    }

    invariant_codes = {f"bedrock-converse.{code}": rule for code, rule in block_codes("messageStop").items()}
    finish_reasons = {
        Finish.STOP: "end_turn",
        Finish.TOOL_CALLS: "tool_use",
        Finish.LENGTH: "max_tokens",
        Finish.CONTENT_FILTER: "content_filtered",
    }
    finish_vocabulary = STOP_REASONS

    def invariants(self, events: Sequence[Event]) -> list[Violation]:
        """ConverseStream rules: one messageStart; blocks numbered by position (a text or reasoning
        block begins at its first delta, a tool block at its contentBlockStart), each stopped
        before the next begins, no index reused; every block stopped before messageStop, only
        `metadata` after it; a documented stopReason, `tool_use` exactly when a tool block was sent."""
        return block_invariants(
            "bedrock-converse",
            [_step(event) for event in events],
            known_reasons=STOP_REASONS,
            tool_reason="tool_use",
            stop_reason="end_turn",
        )

    def renumber(self, events: Sequence[Event]) -> list[Event]:
        return renumber_blocks(events, [_step(event) for event in events], _with_index)

    tool_paths = (("toolConfig", "tools", "*", "toolSpec", "name"),)

    # -- builders -------------------------------------------------------------------------------

    def build(self, kind: Kind, **params: Any) -> list[Event]:
        """ConverseStream-shaped events, each padded with `p`. Block builders take `index` (default
        0); TOOL_START `id`, `name`; TOOL_ARGS `args`; TOOL_CALL `id`, `name`, `args`; FINISH and
        SENTINEL `reason` (both are `messageStop`); USAGE `input_tokens`, `output_tokens`; ERROR
        `message` and `type` (default `modelStreamErrorException`). No PING: the wire has none."""
        index = params.get("index", 0)
        if kind is Kind.META:
            return [_make("messageStart", {"p": padding(24), "role": "assistant"})]
        if kind is Kind.TEXT:
            return [_block_delta(index, {"text": params.get("text", "")}), _block_stop(index)]
        if kind is Kind.REASONING:
            text = {"reasoningContent": {"text": params.get("text", "")}}
            signature = {"reasoningContent": {"signature": params.get("signature", "EqoBCkgIARABGAIiQL")}}
            return [_block_delta(index, text), _block_delta(index, signature), _block_stop(index)]
        if kind in (Kind.FINISH, Kind.SENTINEL):
            return [_make("messageStop", {"p": padding(12), "stopReason": params.get("reason", "end_turn")})]
        if kind is Kind.USAGE:
            tokens_in, tokens_out = params.get("input_tokens", 10), params.get("output_tokens", 1)
            usage = {
                "inputTokens": tokens_in,
                "outputTokens": tokens_out,
                "totalTokens": tokens_in + tokens_out,
            }
            return [_make("metadata", {"metrics": {"latencyMs": 1}, "p": padding(8), "usage": usage})]
        if kind is Kind.ERROR:
            return [
                exception_event(params.get("type", "modelStreamErrorException"), params.get("message", ""))
            ]
        if kind is Kind.TOOL_START:
            return [_start(index, params)]
        if kind is Kind.TOOL_ARGS:
            return [_block_delta(index, {"toolUse": {"input": params.get("args", "")}})]
        if kind is Kind.TOOL_END:
            return [_block_stop(index)]
        if kind is Kind.TOOL_CALL:
            args = _block_delta(index, {"toolUse": {"input": params.get("args", "")}})
            return [_start(index, params), args, _block_stop(index)]
        return []

    # -- asking the provider (Requesting: `toolstream record`) ----------------------------------

    provider = "bedrock"
    default_model = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
    streams_reasoning = True

    def request_body(self, recipe: Recipe, model: str) -> dict[str, Any]:
        body: dict[str, Any] = {
            "messages": [{"role": "user", "content": [{"text": recipe.prompt}]}],
            "toolConfig": {
                "tools": [
                    {
                        "toolSpec": {
                            "name": t.name,
                            "description": t.description,
                            "inputSchema": {"json": dict(t.parameters)},
                        }
                    }
                    for t in recipe.tools
                ]
            },
            "inferenceConfig": {"maxTokens": 1024},
        }
        if recipe.thinking:
            if "anthropic" not in model:
                raise UsageError(
                    f"recipe thinking-then-tool on bedrock needs an Anthropic model, not {model!r}"
                )
            body["inferenceConfig"] = {"maxTokens": THINKING_BUDGET * 4}
            body["additionalModelRequestFields"] = {
                "thinking": {"type": "enabled", "budget_tokens": THINKING_BUDGET}
            }
        return body

    def request_path(self, model: str) -> str:
        return f"/model/{quote(model, safe='')}/converse-stream"

    def root_in(self, env: Mapping[str, str]) -> str | None:
        region = required_variable(env, ("AWS_REGION", "AWS_DEFAULT_REGION"))
        return f"https://bedrock-runtime.{region}.amazonaws.com"

    def credentials(
        self, request: PreparedRequest, key: str, env: Mapping[str, str], now: dt.datetime | None
    ) -> dict[str, str]:
        """SigV4 over the whole request, with the AWS keys from the environment (`key` is unused)."""
        access = required_variable(env, ("AWS_ACCESS_KEY_ID",))
        secret = required_variable(env, ("AWS_SECRET_ACCESS_KEY",))
        region = env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or _region_of(request.url)
        return sign_sigv4(
            request.method,
            request.url,
            request.headers,
            request.body,
            access_key=access,
            secret_key=secret,
            session_token=env.get("AWS_SESSION_TOKEN") or None,
            region=region,
            service="bedrock",
            now=now,
        )

    # -- standing in for the provider (Requesting: `toolstream serve`) ------------------------------

    media_type = "application/vnd.amazon.eventstream"

    followup = Followup(
        call=Entry(("toolUse", "toolUseId"), ("toolUse", "input"), (("toolUse", "name"),), under="toolUse"),
        result=Entry(("toolResult", "toolUseId"), ("toolResult", "content"), under="toolResult"),
        calls_in="content",
        results_in="content",
        plain_text=False,
        parts=lambda message: sent_parts(message.get("content")),
    )

    def final_stream(self) -> bytes:
        frames = [
            ("messageStart", {"role": "assistant"}),
            ("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": FINAL_TEXT}}),
            ("contentBlockStop", {"contentBlockIndex": 0}),
            ("messageStop", {"stopReason": "end_turn"}),
            (
                "metadata",
                {
                    "usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2},
                    "metrics": {"latencyMs": 1},
                },
            ),
        ]
        return b"".join(encode_frame(WireEvent(data=dumps(payload), name=name)) for name, payload in frames)

    def whole_response(self, outcome: Outcome) -> dict[str, Any]:
        content: list[Any] = [{"text": outcome.text}] if outcome.text else []
        content += [
            {"toolUse": {"toolUseId": call_id(c, n, "tooluse_"), "name": c.name or "", "input": c.arguments}}
            for n, c in enumerate(outcome.tool_calls)
        ]
        stop = outcome.finish_reason or ("tool_use" if outcome.tool_calls else "end_turn")
        return {
            "output": {"message": {"role": "assistant", "content": content}},
            "stopReason": stop,
            "usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2},
            "metrics": {"latencyMs": 1},
        }


_DELTA_KINDS = {
    "text": Kind.TEXT,
    "citation": Kind.TEXT,
    "toolUse": Kind.TOOL_ARGS,
    "reasoningContent": Kind.REASONING,
}


def _step(event: Event) -> BlockStep:
    """What an event does to the message's blocks (see `blocks.block_invariants`)."""
    if is_exception(event):
        return BlockStep("other")
    index = _dict(event.payload).get("contentBlockIndex")
    name = event.name
    if name == "messageStart":
        return BlockStep("message-start")
    if name == "contentBlockStart":
        return BlockStep("start", index, tool=_tool_start(event) is not None)
    if name == "contentBlockDelta":
        return BlockStep("delta", index, opens=_tool_delta(event) is None)
    if name == "contentBlockStop":
        return BlockStep("stop", index)
    if name == "messageStop":
        reason = _stop_reason(event)
        return BlockStep("message-stop", reason=None if reason is MISSING else reason)
    if name == "metadata":
        return BlockStep("trailer")
    return BlockStep("other")


def _with_index(event: Event, index: int) -> Event:
    payload = copy_json(event.payload)
    payload["contentBlockIndex"] = index
    return event.with_payload(payload)


def _check_slot(slot: int) -> None:
    if slot != 0:
        raise DialectError(f"bedrock-converse: events hold one fragment (slot 0), not slot {slot}")


def _make(name: str, payload: dict[str, Any]) -> Event:
    return Event(WireEvent(data=DIALECT.dumps(payload), name=name), payload)


def _start(index: Any, params: dict[str, Any]) -> Event:
    tool = {"name": params.get("name"), "toolUseId": params.get("id")}
    return _make(
        "contentBlockStart", {"contentBlockIndex": index, "p": padding(16), "start": {"toolUse": tool}}
    )


def _block_delta(index: Any, delta: dict[str, Any]) -> Event:
    return _make("contentBlockDelta", {"contentBlockIndex": index, "delta": delta, "p": padding(20)})


def _block_stop(index: Any) -> Event:
    return _make("contentBlockStop", {"contentBlockIndex": index, "p": padding(6)})


DIALECT = BedrockConverse()
