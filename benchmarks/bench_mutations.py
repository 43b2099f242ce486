"""Mutation costs: the whole scenario library on a 10,000-event stream (time per event, and the
same at 2,500 events to show it is linear), and rechunking 1 MB into 1-byte reads against 64 KB.

    PYTHONPATH=. python benchmarks/bench_mutations.py
"""

from __future__ import annotations

import time

from harness.cassettes.corpus import synthesize
from harness.check.outcome import Outcome
from harness.errors import NotApplicable
from harness.mutate import Stream, build
from harness.mutate.scenario import load_scenarios, run_pipeline
from harness.wire import dialects


def chat_stream(events: int) -> Stream:
    """An OpenAI chat stream of two calls whose arguments take `events` one-character pieces."""

    def chunk(delta: dict[str, object], finish: str | None = None) -> dict[str, object]:
        return {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}  # fmt: skip

    half = events // 2
    body: list[object] = []
    for index, name in ((0, "read_file"), (1, "search_text")):
        text = '{"q":"' + "x" * (half - 8) + '"}'
        header = {"index": index, "id": f"call_{index}abcdefghijklmnopqrstu", "type": "function",
                  "function": {"name": name, "arguments": ""}}  # fmt: skip
        body.append(chunk({"tool_calls": [header]}))
        body.extend(chunk({"tool_calls": [{"index": index, "function": {"arguments": c}}]}) for c in text)
    body += [chunk({}, "tool_calls"), "[DONE]"]
    cassette = synthesize("bench", "openai-chat", url="https://x/v1/chat/completions", body={},
                          events=body, provenance="bench")  # fmt: skip
    interaction = cassette.interactions[0]
    return Stream.of(interaction.response, dialects.get("openai-chat"), interaction.expected or Outcome())


def library_per_event(events: int, repeat: int = 3) -> tuple[float, int]:
    """Best of `repeat` runs (the machine is shared: the minimum is the least disturbed)."""
    stream = chat_stream(events)
    library = [s for s in load_scenarios() if s.applies_to("openai-chat")]
    best, applied = float("inf"), 0
    for _ in range(repeat):
        started = time.perf_counter()
        applied = 0
        for scenario in library:
            try:
                results = run_pipeline(scenario.steps, stream, scenario.seeds[0], point=None)
            except NotApplicable:
                continue
            applied += 1
            for _, mutated in results[:1]:
                mutated.current_reads()
        best = min(best, time.perf_counter() - started)
    return best / len(stream.events) * 1e6, applied


def rechunk_per_byte(size: int) -> float:
    base = chat_stream(64)
    body = b"".join(base.current_reads())
    big = body * (size // len(body) + 1)
    stream = base.with_reads([big[:size]], same_events=True)
    started = time.perf_counter()
    out = build("rechunk", {"how": "byte"}).apply(stream, __import__("random").Random(0))
    elapsed = time.perf_counter() - started
    assert len(out.current_reads()) == size
    return elapsed / size * 1e9


def main() -> None:
    costs = []
    for events in (2_500, 10_000):
        per_event, applied = library_per_event(events)
        costs.append(per_event)
        print(f"scenario library ({applied} scenarios) on {events:>6} events: {per_event:8.1f} us per event")
    print(f"per-event cost at 10,000 / at 2,500 events: {costs[1] / costs[0]:.2f}x (1.00x is linear)")
    small, large = rechunk_per_byte(64 * 1024), rechunk_per_byte(1024 * 1024)
    print(f"rechunk 64 KB into 1-byte reads: {small:6.1f} ns per byte")
    print(f"rechunk  1 MB into 1-byte reads: {large:6.1f} ns per byte ({large / small:.2f}x the 64 KB cost)")


if __name__ == "__main__":
    main()
