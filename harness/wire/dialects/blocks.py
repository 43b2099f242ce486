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
`BlockAccumulator` is the state and the ending both reference accumulators share.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from harness.check.outcome import Outcome, ServerCall, State, ToolCall
from harness.wire.dialects.base import ReferenceAccumulator


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

    def get(self, index: Hashable) -> Block | None:
        return self._open.get(index)

    def open_without_start(self, index: Hashable, kind: Any) -> None:
        """A block whose first delta opens it (Bedrock text and reasoning blocks have no start)."""
        if index not in self._open:
            self._open[index] = Block(kind, False, self._order)
            self._order += 1

    def stop(self, index: Hashable) -> None:
        block = self._open.pop(index, None)
        if block is not None:
            self._finalize(block)

    def stop_all(self) -> None:
        for block in self._open.values():
            self._finalize(block)
        self._open.clear()

    def calls(self) -> tuple[ToolCall, ...]:
        return tuple(call for _, call in sorted(self._final, key=lambda item: item[0]))

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

    def __init__(self) -> None:
        self.blocks = Blocks()
        self.text: list[str] = []
        self.usage: dict[str, Any] | None = None
        self.finish: str | None = None
        self.state: State | None = None
        self.error: str | None = None

    def close(self, error: str | None = None) -> Outcome:
        if self.state is None and error is None and self.finish is not None:
            # The finish said the turn is over and the stream then ended cleanly: only the terminal
            # event, which carries nothing, is missing (docs/oracle.md, "finish without terminal").
            self.blocks.stop_all()
            self.state = State.COMPLETE
        state = self.state or State.CUT
        message = (error or f"stream ended before {self.stop_event}") if state is State.CUT else self.error
        return Outcome(
            tool_calls=self.blocks.calls(),
            text="".join(self.text),
            finish_reason=self.finish,
            state=state,
            error=message,
            usage=self.usage,
            server_calls=self.blocks.server_calls(),
        )
