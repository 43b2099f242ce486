"""Cassette loading and saving: `python benchmarks/bench_cassettes.py [--quick]` from the repo root.

One OpenAI chat response of 100,000 network reads (each an SSE event with its time offset, ~35 MB),
saved and loaded by us and, for the same request and response, by vcrpy (its YAML persister and
serializer; a vcrpy cassette keeps the body joined, without read boundaries). Ours is measured in
both forms: as saved by default (over `JOINED_ABOVE` reads, one joined body plus each read's size
and offset) and as a mapping per read (`joined_above=None`, what smaller cassettes use).

Time is the best of N runs in CPU time, the contenders taking turns. Peak memory is measured in a
child process per contender: its peak resident size while loading, less its size just before.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_codecs import openai_stream
from figures import Figure, Scale, cost, number, parse_scale, print_figures

from harness.cassettes import format as cassettes
from harness.cassettes.format import Cassette, Chunk, Interaction, Request, Response, Source

NAME = "cassettes"
# Per scale: reads in the response, best of how many runs (the per-read form: one run fewer).
SIZES: dict[Scale, tuple[int, int]] = {"full": (100_000, 3), "quick": (20_000, 2), "smoke": (2_000, 1)}
URL = "https://api.openai.com/v1/chat/completions"
BODY = {"model": "gpt-4o", "stream": True, "messages": [{"role": "user", "content": "Weather in Paris?"}]}


def big_cassette(reads: int) -> Cassette:
    """One streamed response of `reads` SSE events, one event a read, 40 ms apart."""
    events = openai_stream(reads * 400).split(b"\n\n")[:reads]
    if len(events) < reads:
        raise SystemExit(f"the stream holds {len(events)} events, not {reads}")
    chunks = [Chunk(event + b"\n\n", i * 40.0) for i, event in enumerate(events)]
    request = Request("POST", URL, {"content-type": "application/json"}, BODY)
    response = Response(200, {"content-type": "text/event-stream"}, chunks)
    return Cassette(
        "big", Source("synthesized", "bench_cassettes"), [Interaction(request, response)], "openai-chat"
    )


def vcr_data(cassette: Cassette) -> dict[str, list[object]]:
    """The same interactions as vcrpy's persister takes them (`requests`, `responses`)."""
    from vcr.request import Request as VcrRequest

    requests, responses = [], []
    for item in cassette.interactions:
        req, resp = item.request, item.response
        requests.append(VcrRequest(req.method, req.url, json.dumps(req.body), dict(req.headers)))
        responses.append({
            "status": {"code": resp.status, "message": "OK"},
            "headers": {name: [value] for name, value in resp.headers.items()},
            "body": {"string": resp.body},
        })  # fmt: skip
    return {"requests": requests, "responses": responses}


def best_of(runs: int, works: dict[str, Callable[[], object]]) -> dict[str, float]:
    best = dict.fromkeys(works, float("inf"))
    for _ in range(runs):
        for label, work in works.items():
            start = time.process_time()
            work()
            best[label] = min(best[label], time.process_time() - start)
    return best


# VmHWM, not ru_maxrss: a child's ru_maxrss starts at its parent's size when it was forked.
PEAK = """
import sys
sys.path[:0] = {paths!r}
{imports}
def hwm():
    return int(next(l for l in open("/proc/self/status") if l.startswith("VmHWM")).split()[1])
before = hwm()
kept = {call}
print(hwm() - before)
"""
LOADERS = """
from harness.cassettes import format as cassettes
from vcr.persisters.filesystem import FilesystemPersister
from vcr.serializers import yamlserializer
"""


def peak_kib(call: str, imports: str = LOADERS) -> int:
    """Peak resident growth (KiB) of a fresh interpreter running `call`, its `imports` done first
    (it inherits this process's environment)."""
    code = PEAK.format(paths=sys.path[:2], imports=imports, call=call)
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=600
    )
    return max(1, int(done.stdout.split()[-1]))


def measure(scale: Scale) -> list[Figure]:
    from vcr.persisters.filesystem import FilesystemPersister
    from vcr.serializers import yamlserializer

    reads, runs = SIZES[scale]
    cassette = big_cassette(reads)
    vcr_cassette = vcr_data(cassette)
    with tempfile.TemporaryDirectory(prefix="bench-cassettes-") as folder:
        ours, per_read, theirs = (
            Path(folder, "ours.yaml"),
            Path(folder, "per-read.yaml"),
            Path(folder, "vcr.yaml"),
        )
        saved = best_of(runs, {
            # The joined form, as saved by default over `JOINED_ABOVE` reads (forced at smaller scales).
            "ours": lambda: cassettes.save(cassette, ours, joined_above=0),
            "vcrpy": lambda: FilesystemPersister.save_cassette(theirs, vcr_cassette, yamlserializer),
        })  # fmt: skip
        saved |= best_of(
            max(1, runs - 1), {"per read": lambda: cassettes.save(cassette, per_read, joined_above=None)}
        )
        loaded_cassettes: dict[str, Cassette] = {}
        loaded = best_of(runs, {
            "ours": lambda: loaded_cassettes.__setitem__("ours", cassettes.load(ours)),
            "vcrpy": lambda: FilesystemPersister.load_cassette(theirs, yamlserializer),
        })  # fmt: skip
        loaded |= best_of(max(1, runs - 1), {"per read": lambda: loaded_cassettes.__setitem__(
            "per read", cassettes.load(per_read))})  # fmt: skip
        for label, got in loaded_cassettes.items():
            if got.interactions[0].response.chunks != cassette.interactions[0].response.chunks:
                raise SystemExit(f"{label}: the loaded reads differ from the saved ones")
        peak = {
            "ours": peak_kib(f"cassettes.load({str(ours)!r})"),
            "per read": peak_kib(f"cassettes.load({str(per_read)!r})"),
            "vcrpy": peak_kib(f"FilesystemPersister.load_cassette({str(theirs)!r}, yamlserializer)"),
        }
        size = f"{number(ours.stat().st_size / 1024 / 1024)} MB"
    what = f"{reads:,}-read cassette ({size})"
    peer = "vcrpy, the same interactions"
    return [
        cost(NAME, f"load a {what}", loaded["ours"], loaded["vcrpy"], peer, "s", goal=1.5),
        cost(NAME, f"load a {what}, peak memory", peak["ours"] / 1024, peak["vcrpy"] / 1024, peer, "MB",
             goal=1.5),
        cost(NAME, f"save a {what}", saved["ours"], saved["vcrpy"], peer, "s"),
        cost(NAME, f"load a {what} saved as a mapping per read", loaded["per read"], loaded["vcrpy"], peer,
             "s"),
        cost(NAME, f"load a {what} saved as a mapping per read, peak memory", peak["per read"] / 1024,
             peak["vcrpy"] / 1024, peer, "MB"),
        cost(NAME, f"save a {what} as a mapping per read", saved["per read"], saved["vcrpy"], peer, "s"),
    ]  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    scale = parse_scale(__doc__ or "", argv)
    print_figures(measure(scale), scale)
    return 0


if __name__ == "__main__":
    sys.exit(main())
