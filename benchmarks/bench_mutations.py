"""Mutation costs: `python benchmarks/bench_mutations.py [--quick]` from the repo root.

(a) The whole scenario library applied to one OpenAI chat stream of 10,000 events, per event,
    against the same on 1,000 events: 1x is linear.
(b) Rechunking 1 MB into 1-byte reads, per byte, against 64 KB.

Each time is the best of N runs of `time.perf_counter`.
"""

from __future__ import annotations

import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from figures import Figure, Scale, cost, parse_scale, print_figures

from harness.cassettes.corpus import synthesize
from harness.check.outcome import Outcome
from harness.errors import NotApplicable
from harness.mutate import Stream, build
from harness.mutate.scenario import load_scenarios, run_pipeline
from harness.wire import dialects

NAME = "mutations"
# Per scale: the two stream lengths (events) and the two bodies to rechunk (bytes).
SIZES: dict[Scale, tuple[tuple[int, int], tuple[int, int]]] = {
    "full": ((1_000, 10_000), (64 * 1024, 1024 * 1024)),
    "quick": ((250, 1_000), (16 * 1024, 256 * 1024)),
    "smoke": ((40, 80), (1024, 4096)),
}
# The library takes minutes on 10,000 events, long enough to even out; rechunking takes milliseconds.
LIBRARY_RUNS, RECHUNK_RUNS = 1, 3


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


def library_per_event(events: int, repeat: int) -> tuple[float, int]:
    """Microseconds per event, best of `repeat` runs, and how many scenarios applied."""
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
    out = build("rechunk", {"how": "byte"}).apply(stream, random.Random(0))
    reads = out.current_reads()  # the reads are cut when first asked for (`Stream.with_split`)
    elapsed = time.perf_counter() - started
    assert len(reads) == size
    return elapsed / size * 1e9


def measure(scale: Scale) -> list[Figure]:
    (short, long), (small, large) = SIZES[scale]
    (per_short, applied), (per_long, _) = (library_per_event(n, LIBRARY_RUNS) for n in (short, long))
    per_byte_small, per_byte_large = (
        min(rechunk_per_byte(n) for _ in range(RECHUNK_RUNS)) for n in (small, large)
    )
    return [
        cost(NAME, f"whole scenario library ({applied} scenarios) on {long:,} events, per event",
             per_long / 1000, per_short / 1000, f"the same on {short:,} events", "ms", goal=1.2),
        cost(NAME, f"rechunk {large // 1024:,} KB into 1-byte reads, per byte", per_byte_large,
             per_byte_small, f"the same for {small // 1024:,} KB", "ns", goal=3.0),
    ]  # fmt: skip


def main() -> None:
    scale = parse_scale((__doc__ or "").splitlines()[0])
    print_figures(measure(scale), scale)


if __name__ == "__main__":
    main()
