"""The openai-realtime dialect: its cassettes, and a client written the way the reported bugs
were (calls read from `response.done`'s final state, whose `output` may be null) failing with a
clear diff where a correct one passes."""

from __future__ import annotations

from typing import Any

import pytest

from harness.accumulators import EventLevel
from harness.cassettes.outcome import Outcome, State, ToolCall, diff
from harness.matrix.selection import build_case
from harness.mutate.scenario import Case


def outcome_of(make: type, case: Case) -> Outcome:
    return EventLevel(lambda dialect: make(), make.__name__).run(case)


class StreamedCalls:
    """Calls from the streamed events: added, argument deltas, `.done`'s arguments."""

    def __init__(self) -> None:
        self.calls: dict[str, dict[str, Any]] = {}
        self.status: str | None = None
        self.text = ""

    def feed(self, event: Any) -> None:
        p = event.payload
        kind = p.get("type") if isinstance(p, dict) else None
        if kind == "response.output_item.added" and p["item"]["type"] == "function_call":
            item = p["item"]
            self.calls[item["id"]] = {"id": item["call_id"], "name": item["name"], "args": "", "done": False}
        elif kind == "response.function_call_arguments.delta" and p["item_id"] in self.calls:
            self.calls[p["item_id"]]["args"] += p["delta"]
        elif kind == "response.function_call_arguments.done" and p["item_id"] in self.calls:
            self.calls[p["item_id"]].update(args=p["arguments"], done=True)
        elif kind == "response.output_text.delta":
            self.text += p["delta"]
        elif kind == "response.done":
            self.status = p["response"]["status"]

    def close(self, error: str | None = None) -> Outcome:
        calls = tuple(
            ToolCall.from_text(c["name"], c["args"], c["id"]) for c in self.calls.values() if c["done"]
        )
        state = State.COMPLETE if self.status else State.CUT
        return Outcome(calls, self.text, self.status, state, None if self.status else error)


class FinalStateOnly(StreamedCalls):
    """Bug: the calls are read from `response.done`'s `response.output` only; null there, none."""

    def feed(self, event: Any) -> None:
        super().feed(event)
        p = event.payload
        if isinstance(p, dict) and p.get("type") == "response.done":
            output = p["response"].get("output") or []
            self.final = [i for i in output if i.get("type") == "function_call"]

    def close(self, error: str | None = None) -> Outcome:
        outcome = super().close(error)
        calls = tuple(
            ToolCall.from_text(i["name"], i["arguments"], i["call_id"]) for i in getattr(self, "final", [])
        )
        return Outcome(calls, outcome.text, outcome.finish_reason, outcome.state, outcome.error)


def test_calls_read_from_the_final_state_are_lost_when_its_output_is_null() -> None:
    case = build_case("openai-realtime/done-output-null::original::s0")
    differences = diff(case.expected, outcome_of(FinalStateOnly, case))
    assert differences[:2] == [
        "tool_calls: 1 expected, got 0",
        'call 1: \'get_weather\' {"city":"Lyon"} expected, missing',
    ]
    assert not diff(case.expected, outcome_of(StreamedCalls, case))
    # Where the output is there, the final state is enough: the bug shows only on null.
    single = build_case("openai-realtime/single-call::original::s0")
    assert not diff(single.expected, outcome_of(FinalStateOnly, single))


@pytest.mark.parametrize(
    "case_id",
    ["openai-realtime/parallel-calls::original::s0", "openai-realtime/text-then-call::original::s0",
     "openai-realtime/parallel-calls::websocket-fragmented-messages::s0",
     "openai-realtime/parallel-calls::C1-interleaved-fragments::s0",
     "openai-realtime/single-call::D7-truncated-mid-args::s0"],
)  # fmt: skip
def test_the_streamed_reading_passes(case_id: str) -> None:
    case = build_case(case_id)
    assert not diff(case.expected, outcome_of(StreamedCalls, case))
