"""Mutation costs: `python benchmarks/bench_mutations.py [--quick]` from the repo root.

(a) The whole scenario library applied to one OpenAI chat stream of 10,000 events, per event,
    against the same on 1,000 events: 1x is linear.
(b) The same for every dialect whose bundled recordings stream arguments as text: the first
    such recording, one of its argument fragments (letters inside a JSON string) sent over and
    over until the stream holds 4,000 events, against 1,000 (a long call's arguments, as every
    dialect streams them: what its reference accumulator and fragment routing must take in
    linear time).
(c) Rechunking 1 MB into 1-byte reads, per byte, against 64 KB.

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

from harness.cassettes.outcome import Outcome
from harness.errors import NotApplicable
from harness.matrix.casecache import collector_paused
from harness.mutate import Stream, build
from harness.mutate.scenario import load_scenarios, run_pipeline
from harness.wire import dialects
from harness.wire.synthesis import synthesize

NAME = "mutations"
# Per scale: the two stream lengths (events) and the two bodies to rechunk (bytes).
SIZES: dict[Scale, tuple[tuple[int, int], tuple[int, int]]] = {
    "full": ((1_000, 10_000), (64 * 1024, 1024 * 1024)),
    "quick": ((250, 1_000), (16 * 1024, 256 * 1024)),
    "smoke": ((40, 80), (1024, 4096)),
}
# Per scale: the stretched recordings' two lengths (events); each the best of two runs (seconds).
STRETCHED: dict[Scale, tuple[int, int]] = {"full": (1_000, 4_000), "quick": (250, 1_000), "smoke": (60, 120)}
STRETCHED_RUNS = 2
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


def stretched(dialect: str, events: int) -> Stream | None:
    """The first bundled recording of `dialect` with an argument fragment of letters only (inside
    a JSON string, so the arguments stay valid however often it comes), that fragment's event
    repeated until the stream holds `events` events; None when the dialect has none."""
    import re

    from harness.cassettes.corpus import bundled
    from harness.mutate.scenario import recorded_streams
    from harness.wire.dialects import Field, Role

    d = dialects.get(dialect)
    for path in sorted(bundled("cassettes").joinpath(dialect).glob("*.yaml")):
        source = recorded_streams(path, [path])[0]
        found = source.stream.events
        for fragment in d.fragments(found):
            piece = d.get(found[fragment.event], fragment.slot, Field.ARGS)
            if fragment.role is Role.ARGS and isinstance(piece, str) and re.fullmatch("[A-Za-z ]+", piece):
                at, extra = fragment.event, events - len(found)
                if extra < 0:
                    return None
                wire = [event.wire for event in found]
                wire[at:at] = [wire[at]] * extra
                url = source.interaction.request.url
                cassette = synthesize("stretched", dialect, url=url, body={}, events=wire, provenance="bench")
                interaction = cassette.interactions[0]
                return Stream.of(interaction.response, d, interaction.expected or Outcome())
    return None


def library_per_event(events: int, repeat: int, stream: Stream | None = None) -> tuple[float, int]:
    """Microseconds per event, best of `repeat` runs, and how many scenarios applied. The cyclic
    collector is paused while the pipelines run, as a matrix pauses it while it builds a unit
    (`collector_paused`): its passes over a long stream's objects are noise here, not cost."""
    stream = stream or chat_stream(events)
    library = [s for s in load_scenarios() if s.applies_to(stream.dialect.name)]
    best, applied = float("inf"), 0
    for _ in range(repeat):
        with collector_paused():
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
    figures = [
        cost(NAME, f"whole scenario library ({applied} scenarios) on {long:,} events, per event",
             per_long / 1000, per_short / 1000, f"the same on {short:,} events", "ms", goal=1.2),
    ]  # fmt: skip
    few, many = STRETCHED[scale]
    for dialect in dialects.names():
        shorter, longer = stretched(dialect, few), stretched(dialect, many)
        if shorter is None or longer is None:
            continue  # its recordings send arguments whole (objects), or none is short enough
        per_few, _ = library_per_event(few, STRETCHED_RUNS, shorter)
        per_many, used = library_per_event(many, STRETCHED_RUNS, longer)
        what = f"{dialect}: scenario library ({used}) on a call streamed in {many:,} events, per event"
        figures.append(cost(NAME, what, per_many / 1000, per_few / 1000, f"the same in {few:,} events", "ms",
                            goal=1.2))  # fmt: skip
    return [
        *figures,
        cost(NAME, f"rechunk {large // 1024:,} KB into 1-byte reads, per byte", per_byte_large,
             per_byte_small, f"the same for {small // 1024:,} KB", "ns", goal=3.0),
    ]  # fmt: skip


def main() -> None:
    scale = parse_scale((__doc__ or "").splitlines()[0])
    print_figures(measure(scale), scale)


if __name__ == "__main__":
    main()
