"""Synthesize the Ollama cassettes: `python cassettes/synthesize/ollama.py` from the repo root.

Shapes follow Ollama's native `/api/chat` NDJSON stream as Go serialises it: `created_at` in
RFC 3339 with nanoseconds, `done_reason` before `done`, duration counters in nanoseconds on the
done line, HTML characters escaped. Newer servers (0.12.10 and up) send a tool-call `id` and
`function.index`; the older-server cassette has neither.
"""

from __future__ import annotations

import random
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from harness.cassettes import format as cassettes  # noqa: E402
from harness.cassettes.format import Cassette  # noqa: E402
from harness.wire.synthesis import synthesize  # noqa: E402

DIALECT = "ollama"
OUT = ROOT / "cassettes" / "ollama"
URL = "http://localhost:11434/api/chat"
PROVENANCE = "synthesized by cassettes/synthesize/ollama.py from the documented and observed /api/chat shapes"
REQUEST_HEADERS = {"user-agent": "ollama-python/0.6.0 (x86_64 linux) Python/3.11.9"}


def response_headers(date: str) -> dict[str, str]:
    return {"content-type": "application/x-ndjson", "date": date, "transfer-encoding": "chunked"}


WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather for a city",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "The city name"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            },
            "required": ["city"],
        },
    },
}
SEARCH = {
    "type": "function",
    "function": {
        "name": "search_web",
        "description": "Search the web and return the top results",
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string"}, "max_results": {"type": "integer"}},
            "required": ["query"],
        },
    },
}


def request(model: str, prompt: str, tools: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"model": model, "messages": [{"role": "user", "content": prompt}], "tools": tools}
    body.update(extra)
    body["stream"] = True
    return body


class Lines:
    """The lines of one response: one model, a clock that moves on by about `step_ms` per line."""

    def __init__(self, model: str, start: str, step_ms: float) -> None:
        self.model = model
        self.nanos = int(datetime.fromisoformat(start).timestamp()) * 1_000_000_000
        self.step = int(step_ms * 1_000_000)
        self.jitter = random.Random(model + start)  # the same jitter every run: cassettes stay stable

    def _stamp(self) -> str:
        self.nanos += self.step + self.jitter.randrange(-self.step // 4, self.step // 4)
        seconds, fraction = divmod(self.nanos, 1_000_000_000)
        stamp = datetime.fromtimestamp(seconds, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S")
        digits = f"{fraction:09d}".rstrip("0")  # Go's RFC3339Nano drops trailing zeros
        return f"{stamp}.{digits}Z" if digits else f"{stamp}Z"

    def __call__(
        self, content: str = "", *, thinking: str | None = None, calls: list[dict[str, Any]] | None = None
    ) -> dict[str, Any]:
        msg: dict[str, Any] = {"role": "assistant", "content": content}
        if thinking is not None:
            msg["thinking"] = thinking
        if calls is not None:
            msg["tool_calls"] = calls
        return {"model": self.model, "created_at": self._stamp(), "message": msg, "done": False}

    def done(self, *, prompt: int, evals: int, total_ms: float) -> dict[str, Any]:
        line = self()
        del line["done"]
        line["done_reason"] = "stop"
        line["done"] = True
        line["total_duration"] = int(total_ms * 1_000_000) + 417
        line["load_duration"] = 38_912_667
        line["prompt_eval_count"] = prompt
        line["prompt_eval_duration"] = prompt * 731_125
        line["eval_count"] = evals
        line["eval_duration"] = evals * 21_903_208
        return line


def call(
    name: str, args: dict[str, Any], *, id: str | None = None, index: int | None = None
) -> dict[str, Any]:
    fn: dict[str, Any] = {} if index is None else {"index": index}
    fn.update({"name": name, "arguments": args})
    return {"id": id, "function": fn} if id is not None else {"function": fn}


def build() -> list[Cassette]:
    """Every Ollama cassette, in the order they are saved."""
    out: list[Cassette] = []

    ln = Lines("llama3.1:8b", "2025-07-14T09:31:02.000000+00:00", 24.0)
    out.append(
        synthesize(
            "single-call",
            DIALECT,
            url=URL,
            body=request("llama3.1:8b", "What is the weather in Toronto?", [WEATHER]),
            events=[
                ln(
                    calls=[
                        call(
                            "get_weather", {"city": "Toronto", "unit": "celsius"}, id="call_v2ldp3ct", index=0
                        )
                    ]
                ),
                ln.done(prompt=187, evals=25, total_ms=1412.6),
            ],
            provenance=PROVENANCE,
            request_headers=REQUEST_HEADERS,
            response_headers=response_headers("Mon, 14 Jul 2025 09:31:02 GMT"),
            offsets_ms=603.2,
        )
    )

    ln = Lines("qwen3:8b", "2025-07-14T10:02:11.000000+00:00", 31.0)
    out.append(
        synthesize(
            "parallel",
            DIALECT,
            url=URL,
            body=request(
                "qwen3:8b",
                "Weather in Paris and in Madrid, and search for Madrid events this weekend.",
                [WEATHER, SEARCH],
                think=False,
            ),
            events=[
                ln(calls=[call("get_weather", {"city": "Paris"}, id="call_0sx8r2mh", index=0)]),
                ln(calls=[call("get_weather", {"city": "Madrid"}, id="call_9bq4ze7n", index=1)]),
                ln(
                    calls=[
                        call(
                            "search_web",
                            {"query": "Madrid events this weekend", "max_results": 5},
                            id="call_k1t6wd3u",
                            index=2,
                        )
                    ]
                ),
                ln.done(prompt=294, evals=88, total_ms=2731.9),
            ],
            provenance=PROVENANCE,
            request_headers=REQUEST_HEADERS,
            response_headers=response_headers("Mon, 14 Jul 2025 10:02:11 GMT"),
            reads=[233, 1024],
            offsets_ms=412.5,
        )
    )

    ln = Lines("qwen3:8b", "2025-07-14T10:15:40.000000+00:00", 22.0)
    thoughts = [
        "Okay",
        ",",
        " the",
        " user",
        " wants",
        " to",
        " know",
        " if",
        " they",
        " need",
        " an",
        " umbrella",
        " in",
        " Dublin",
        ".",
        " I",
        " should",
        " call",
        " get",
        "_weather",
        " with",
        " city",
        " Dublin",
        ".",
    ]
    out.append(
        synthesize(
            "thinking-then-call",
            DIALECT,
            url=URL,
            body=request("qwen3:8b", "Do I need an umbrella in Dublin today?", [WEATHER], think=True),
            events=[
                *(ln(thinking=piece) for piece in thoughts),
                ln(calls=[call("get_weather", {"city": "Dublin"}, id="call_r7d2yq0w", index=0)]),
                ln.done(prompt=201, evals=47, total_ms=1988.1),
            ],
            provenance=PROVENANCE,
            request_headers=REQUEST_HEADERS,
            response_headers=response_headers("Mon, 14 Jul 2025 10:15:40 GMT"),
            reads=[140, 140, 600],
            offsets_ms=22.0,
        )
    )

    # An older server (before 0.12.10): no ids, no function.index.
    ln = Lines("qwen2.5:7b", "2025-03-02T18:44:09.000000+00:00", 27.0)
    text = [
        "I'll",
        " look",
        " up",
        " the",
        " latest",
        " news",
        " about",
        " the",
        " <",
        "Fusion",
        ">",
        " reactor",
        " for",
        " you",
        ".",
    ]
    out.append(
        synthesize(
            "text-then-call",
            DIALECT,
            url=URL,
            body=request(
                "qwen2.5:7b", "Any news about the <Fusion> reactor? Say what you're doing first.", [SEARCH]
            ),
            events=[
                *(ln(piece) for piece in text),
                ln(
                    calls=[call("search_web", {"query": "<Fusion> reactor news & updates", "max_results": 3})]
                ),
                ln.done(prompt=176, evals=41, total_ms=1534.0),
            ],
            provenance=PROVENANCE,
            request_headers=REQUEST_HEADERS,
            response_headers=response_headers("Sun, 02 Mar 2025 18:44:09 GMT"),
            offsets_ms=27.0,
        )
    )
    return out


def main() -> None:
    for made in build():
        path = cassettes.save(made, OUT / f"{made.name}.yaml")
        print(f"wrote {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
