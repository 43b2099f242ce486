"""Content blocks keyed by their index, for the block-based wires (Anthropic, Bedrock Converse).

Both providers stream a message as blocks, each with an index, started, fed deltas and stopped.
A correct client routes every delta by index, never to "the current block" (seed 004, C1); a
block with no start opens on its first delta (Bedrock text, C5); a start repeating the open block
at its index with the same id is a duplicate (D10), and one with another id ends the old block; a
tool block whose id was already final is a duplicate too; a call is final at its block's stop, or
at the message's stop for blocks still open. Calls are reported in the order their blocks began.
A server block (a tool the provider runs: Anthropic `server_tool_use`) is final the same way but is
reported apart, as a `ServerCall`; a result block names the call it answers and gives it its
result once that block is final.
`BlockAccumulator` is the state and the ending both reference accumulators share;
`block_invariants` and `renumber_blocks` are the protocol rules and the numbering both share.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from harness.cassettes.outcome import Outcome, ServerCall, State, ToolCall
from harness.wire.dialects.base import Event, ReferenceAccumulator, Violation
from harness.wire.dialects.parts import PartLog


@dataclass(slots=True)
class Block:
    kind: Any  # the provider's block type: "tool_use", "text", "toolUse", "reasoningContent" ...
    tool: bool  # a block that carries a tool call
    order: int
    id: Any = None
    name: Any = None
    start_input: Any = None  # arguments given whole in the start (Anthropic's `input`)
    parts: list[str] = field(default_factory=list)
    got_args: bool = False
    duplicate: bool = False
    server: bool = False  # a call the provider runs itself
    answers: str | None = None  # a result block: the id of the server call it answers
    result: str | None = None  # a result block: what it says (its type, and error code if any)

    @property
    def takes_args(self) -> bool:
        return self.tool or self.server

    def add_args(self, piece: Any) -> None:
        self.got_args = True
        if isinstance(piece, str):
            self.parts.append(piece)

    def call(self) -> ToolCall:
        name = self.name if isinstance(self.name, str) else None
        call_id = self.id if isinstance(self.id, str) else None
        if not self.got_args and isinstance(self.start_input, dict):
            return ToolCall(name=name, arguments=self.start_input, id=call_id)
        return ToolCall.from_text(name, "".join(self.parts), call_id)

    def server_call(self, result: str | None) -> ServerCall:
        call = self.call()
        return ServerCall(name=call.name, arguments=call.arguments, id=call.id, result=result)


class Blocks:
    """The open blocks of one message by index, and the calls made final so far."""

    def __init__(self) -> None:
        self._open: dict[Hashable, Block] = {}
        self._final: list[tuple[int, ToolCall]] = []
        self._final_ids: set[str] = set()
        self._server: list[Block] = []
        self._results: dict[str, str] = {}
        self._order = 0
        self._used: set[Hashable] = set()  # every index a block was opened at

    def start(
        self,
        index: Hashable,
        kind: Any,
        *,
        tool: bool,
        id: Any = None,
        name: Any = None,
        start_input: Any = None,
        server: bool = False,
        answers: str | None = None,
        result: str | None = None,
    ) -> None:
        current = self._open.get(index)
        if current is not None:
            if current.kind == kind and current.id == id:
                return  # a duplicate start of the open block (D10)
            self._finalize(current)
        block = Block(kind, tool, self._order, id, name, start_input)
        block.server, block.answers, block.result = server, answers, result
        # A tool call id is unique in a message: a start repeating a final call's id is a duplicate.
        block.duplicate = isinstance(id, str) and id in self._final_ids
        self._order += 1
        self._open[index] = block
        self._used.add(index)

    def get(self, index: Hashable) -> Block | None:
        return self._open.get(index)

    def route(self, index: Hashable) -> Block | None:
        """The block a delta at `index` goes to: the one open there; for an index no block ever
        had while exactly one block is open, that block (A11: a gateway sends a block's deltas
        under the next index, Wei-Shaw/sub2api PR #4294; vercel/ai PR #11771 follows the start).
        A delta for a stopped block's index goes nowhere (E3)."""
        block = self._open.get(index)
        if block is None and index not in self._used and len(self._open) == 1:
            return next(iter(self._open.values()))
        return block

    def open_without_start(self, index: Hashable, kind: Any) -> None:
        """A block whose first delta opens it (Bedrock text and reasoning blocks have no start)."""
        if index not in self._open:
            self._open[index] = Block(kind, False, self._order)
            self._order += 1
            self._used.add(index)

    def stop(self, index: Hashable) -> None:
        block = self._open.pop(index, None)
        if block is not None:
            self._finalize(block)

    def stop_all(self) -> None:
        for block in self._open.values():
            self._finalize(block)
        self._open.clear()

    def drop_open(self) -> None:
        """Forget the blocks still open: the output limit cut them (docs/oracle.md, length-with-open-call)."""
        self._open.clear()

    def calls(self) -> tuple[ToolCall, ...]:
        return tuple(call for _, call in sorted(self._final, key=lambda item: item[0]))

    def reported(self) -> tuple[set[int], set[int]]:
        """The orders of the blocks reported as calls and as server calls (their parts stand)."""
        return {order for order, _ in self._final}, {block.order for block in self._server}

    def server_calls(self) -> tuple[ServerCall, ...]:
        blocks = sorted(self._server, key=lambda block: block.order)
        return tuple(
            block.server_call(self._results.get(block.id) if isinstance(block.id, str) else None)
            for block in blocks
        )

    def _finalize(self, block: Block) -> None:
        if block.answers is not None and block.result is not None:
            self._results.setdefault(block.answers, block.result)
        if block.server and not block.duplicate:
            self._server.append(block)
            if isinstance(block.id, str):
                self._final_ids.add(block.id)
        if block.tool and not block.duplicate:
            self._final.append((block.order, block.call()))
            if isinstance(block.id, str):
                self._final_ids.add(block.id)


class BlockAccumulator(ReferenceAccumulator):
    """What the block-based oracles keep and how they end: the open blocks, the text, the usage,
    the finish reason, and the end state (None until the message stops or an error event comes).
    A stream that ends cleanly after the finish reason is complete, as if its stop had come."""

    stop_event: ClassVar[str]  # the event that completes a message, named when a stream is cut
    length_reason: ClassVar[str] = "max_tokens"  # the stop reason of a turn the output limit ended

    def __init__(self) -> None:
        self.blocks = Blocks()
        self.parts = PartLog()  # keyed by block order
        self.text: list[str] = []
        self.usage: dict[str, Any] | None = None
        self.finish: str | None = None
        self.state: State | None = None
        self.error: str | None = None

    def end_turn(self) -> None:
        """The message ended: the blocks still open are final, unless the output limit ended it
        inside them (a `max_tokens` stop), when they are not (docs/oracle.md, length-with-open-call)."""
        if self.finish == self.length_reason:
            self.blocks.drop_open()
        else:
            self.blocks.stop_all()

    def close(self, error: str | None = None) -> Outcome:
        if self.state is None and error is None and self.finish is not None:
            # The finish said the turn is over and the stream then ended cleanly: only the terminal
            # event, which carries nothing, is missing (docs/oracle.md, "finish without terminal").
            self.end_turn()
            self.state = State.COMPLETE
        state = self.state or State.CUT
        message = (error or f"stream ended before {self.stop_event}") if state is State.CUT else self.error
        calls, servers = self.blocks.reported()
        return Outcome(
            tool_calls=self.blocks.calls(),
            text="".join(self.text),
            finish_reason=self.finish,
            state=state,
            error=message,
            usage=self.usage,
            server_calls=self.blocks.server_calls(),
            parts=self.parts.close(calls, servers),
        )


# ---------------------------------------------------------------------------------------------
# Invariants and numbering of block streams: what each event does to the blocks (a `BlockStep`),
# then one set of rules for both providers.

Op = Literal[
    "message-start", "start", "delta", "stop", "finish", "message-stop", "trailer", "other", "ignore"
]


@dataclass(frozen=True, slots=True)
class BlockStep:
    """What one event does to a message's blocks. `opens`: a delta that begins a block when none is
    open at its index (Bedrock text and reasoning blocks have no start); `tool`: a client tool
    block; `reason`: the stop reason an event carries (a `finish` or `message-stop`)."""

    op: Op
    index: Any = None
    tool: bool = False
    opens: bool = False
    reason: Any = None


def block_codes(stop_event: str) -> dict[str, str]:
    """The block invariants' codes (without the dialect prefix) and the rule each stands for."""
    return {
        "message-start-repeated": "the message starts once",
        "block-index-invalid": "a block index is a non-negative integer",
        "block-index-reused": "a block index is never used again after its block stopped",
        "block-index-out-of-order": "blocks are numbered by position: the n-th block has index n",
        "block-start-repeated": "a block starts once",
        "block-overlap": "a block starts only after the previous one stopped (the API never interleaves)",
        "delta-outside-block": "a delta goes to a block that is open at its index",
        "stop-outside-block": "a block stop closes a block that is open at its index",
        "block-not-stopped": f"every block stopped before {stop_event}",
        "event-after-stop": f"nothing follows {stop_event} (but the usage trailer where there is one)",
        "stop-reason-unknown": "the stop reason is one of the documented values",
        "finish-contradicts-calls": "the stop reason says tool use exactly when a client tool block was sent",
    }


def block_invariants(
    prefix: str,
    steps: Sequence[BlockStep],
    *,
    known_reasons: frozenset[str],
    tool_reason: str,
    stop_reason: str,
) -> list[Violation]:
    """The violations of the block rules (`block_codes`) in a stream of steps, one per event."""
    out: list[Violation] = []

    def flag(code: str, pos: int, message: str) -> None:
        out.append(Violation(f"{prefix}.{code}", pos, message))

    used: set[Hashable] = set()
    open_blocks: set[Hashable] = set()
    count = tools = 0
    started = stopped = False
    last_reason: tuple[int, Any] | None = None
    for pos, step in enumerate(steps):
        if step.op == "ignore":
            continue
        if stopped and step.op != "trailer":
            flag("event-after-stop", pos, "an event after the message stopped")
        if step.op == "message-start":
            if started:
                flag("message-start-repeated", pos, "a second message start")
            started = True
        elif step.op in ("start", "delta", "stop"):
            key = _hashable(step.index)
            if not _is_position(step.index):
                flag("block-index-invalid", pos, f"block index {step.index!r}")
            opening = step.op == "start" or (step.op == "delta" and step.opens and key not in open_blocks)
            if step.op == "start" and key in open_blocks:
                flag("block-start-repeated", pos, f"block {step.index!r} started again while open")
            elif opening:
                if key in used:
                    flag("block-index-reused", pos, f"block index {step.index!r} used by an earlier block")
                elif step.index != count:
                    flag("block-index-out-of-order", pos, f"block {count} has index {step.index!r}")
                if open_blocks:
                    names = sorted(map(repr, open_blocks))
                    flag("block-overlap", pos, f"block {step.index!r} starts while {names} open")
                used.add(key)
                open_blocks.add(key)
                count += 1
                tools += step.tool
            elif step.op == "delta" and key not in open_blocks:
                flag("delta-outside-block", pos, f"a delta for block {step.index!r}, which is not open")
            if step.op == "stop":
                if key in open_blocks:
                    open_blocks.discard(key)
                else:
                    flag("stop-outside-block", pos, f"a stop for block {step.index!r}, which is not open")
        if step.op in ("finish", "message-stop") and step.reason is not None:
            if step.reason not in known_reasons:
                flag("stop-reason-unknown", pos, f"stop reason {step.reason!r}")
            last_reason = (pos, step.reason)
        if step.op == "message-stop":
            if open_blocks:
                flag("block-not-stopped", pos, f"blocks {sorted(map(repr, open_blocks))} still open")
            stopped = True
    if last_reason is not None:
        pos, reason = last_reason
        if reason == tool_reason and not tools:
            flag("finish-contradicts-calls", pos, f"stop reason {reason!r} without a tool block")
        elif reason == stop_reason and tools:
            flag("finish-contradicts-calls", pos, f"stop reason {reason!r} after {tools} tool block(s)")
    return out


def renumber_blocks(
    events: Sequence[Event], steps: Sequence[BlockStep], with_index: Callable[[Event, int], Event]
) -> list[Event]:
    """The events with each block's index set to its position among the blocks (a block is keyed
    by its old index while it is open, so interleaved blocks keep their own deltas)."""
    open_blocks: dict[Hashable, int] = {}
    count = 0
    out: list[Event] = []
    for event, step in zip(events, steps, strict=True):
        if step.op in ("start", "delta", "stop"):
            key = _hashable(step.index)
            if key not in open_blocks and (step.op == "start" or (step.op == "delta" and step.opens)):
                open_blocks[key] = count
                count += 1
            new = open_blocks.get(key)
            if step.op == "stop":
                open_blocks.pop(key, None)
            if new is not None and not (_is_position(step.index) and step.index == new):
                event = with_index(event, new)
        out.append(event)
    return out


def _hashable(value: Any) -> Hashable:
    return value if isinstance(value, Hashable) else repr(value)


def _is_position(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0
