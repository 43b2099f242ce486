"""Synthesize the Cohere cassettes: `python cassettes/synthesize/cohere.py` from the repo root.

Shapes follow Cohere's v2 chat stream: `event:` named SSE events whose data repeats the name in
`type`, a `message-start` carrying the generation id, a streamed `tool_plan`, one
`tool-call-start` / `tool-call-delta`* / `tool-call-end` run per call (ids are the tool name plus
a random suffix, arguments stream as pretty-printed JSON tokens), `message-end` with
`finish_reason` and both usage counts, then a bare `data: [DONE]`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from harness.cassettes import format as cassettes  # noqa: E402
from harness.cassettes.format import Cassette  # noqa: E402
from harness.wire.synthesis import synthesize  # noqa: E402

DIALECT = "cohere"
OUT = ROOT / "cassettes" / "cohere"
URL = "https://api.cohere.com/v2/chat"
PROVENANCE = "synthesized by cassettes/synthesize/cohere.py from the documented v2 chat stream shapes"
REQUEST_HEADERS = {
    "user-agent": "cohere/5.16.1",
    "x-fern-language": "Python",
    "x-fern-sdk-name": "cohere",
    "x-fern-sdk-version": "5.16.1",
    "x-client-name": "toolstream-harness",
}


def response_headers(date: str, trace: str, upstream_ms: int) -> dict[str, str]:
    return {
        "content-type": "text/event-stream",
        "cache-control": "no-cache",
        "x-accel-expires": "0",
        "x-debug-trace-id": trace,
        "x-endpoint-monthly-call-limit": "1000",
        "x-trial-endpoint-call-limit": "20",
        "x-trial-endpoint-call-remaining": "19",
        "x-envoy-upstream-service-time": str(upstream_ms),
        "vary": "Origin",
        "date": date,
        "server": "envoy",
        "via": "1.1 google",
        "alt-svc": 'h3=":443"; ma=2592000,h3-29=":443"; ma=2592000',
        "transfer-encoding": "chunked",
    }


WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Gets the weather for a given location",
        "parameters": {
            "type": "object",
            "properties": {
                "location": {"type": "string", "description": "The city and country, e.g. Paris, France"}
            },
            "required": ["location"],
        },
    },
}
DOCS = {
    "type": "function",
    "function": {
        "name": "search_docs",
        "description": "Searches the internal knowledge base",
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string"}, "top_k": {"type": "integer"}},
            "required": ["query"],
        },
    },
}
INVENTORY = {
    "type": "function",
    "function": {
        "name": "list_open_tickets",
        "description": "Lists the user's open support tickets",
        "parameters": {"type": "object", "properties": {}},
    },
}


def request(model: str, prompt: str, tools: list[dict[str, Any]]) -> dict[str, Any]:
    return {"model": model, "messages": [{"role": "user", "content": prompt}], "tools": tools, "stream": True}


def ev(payload: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return payload["type"], payload


def message_start(generation: str) -> tuple[str, dict[str, Any]]:
    msg = {"role": "assistant", "content": [], "tool_plan": "", "tool_calls": [], "citations": []}
    return ev({"id": generation, "type": "message-start", "delta": {"message": msg}})


def plan(*pieces: str) -> list[tuple[str, dict[str, Any]]]:
    return [ev({"type": "tool-plan-delta", "delta": {"message": {"tool_plan": p}}}) for p in pieces]


def tool_call(index: int, call_id: str, name: str, pieces: list[str]) -> list[tuple[str, dict[str, Any]]]:
    head = {"id": call_id, "type": "function", "function": {"name": name, "arguments": ""}}
    out = [ev({"type": "tool-call-start", "index": index, "delta": {"message": {"tool_calls": head}}})]
    for piece in pieces:
        delta = {"message": {"tool_calls": {"function": {"arguments": piece}}}}
        out.append(ev({"type": "tool-call-delta", "index": index, "delta": delta}))
    out.append(ev({"type": "tool-call-end", "index": index}))
    return out


def json_tokens(*pairs: tuple[str, str]) -> list[str]:
    """Arguments as Command models stream them: pretty-printed JSON, a few characters a piece."""
    out = ['{\n    "']
    for n, (key, value) in enumerate(pairs):
        if n:
            out.append(',\n    "')
        out.extend([key, '": "', *_spaced(value), '"'])
    out.append("\n}")
    return out


def _spaced(value: str) -> list[str]:
    words = value.split(" ")
    return [words[0], *(" " + word for word in words[1:])]


def message_end(reason: str, billed: tuple[int, int], tokens: tuple[int, int]) -> tuple[str, dict[str, Any]]:
    usage = {
        "billed_units": {"input_tokens": billed[0], "output_tokens": billed[1]},
        "tokens": {"input_tokens": tokens[0], "output_tokens": tokens[1]},
    }
    return ev({"type": "message-end", "delta": {"finish_reason": reason, "usage": usage}})


def make(name: str, body: dict[str, Any], events: list[Any], headers: dict[str, str], **kw: Any) -> Cassette:
    return synthesize(
        name,
        DIALECT,
        url=URL,
        body=body,
        events=[*events, "[DONE]"],
        provenance=PROVENANCE,
        request_headers=REQUEST_HEADERS,
        response_headers=headers,
        **kw,
    )


def build() -> list[Cassette]:
    """Every Cohere cassette, in the order they are saved."""
    out: list[Cassette] = []

    out.append(
        make(
            "single-call",
            request("command-r-08-2024", "What's the weather in Toronto?", [WEATHER]),
            [
                message_start("0f3c8a1e-5b2d-4e7a-9c61-2d8f4b7e3a90"),
                *tool_call(
                    0, "get_weather_4pz8x1m6q2ck", "get_weather", json_tokens(("location", "Toronto, Canada"))
                ),
                message_end("TOOL_CALL", (23, 19), (835, 19)),
            ],
            response_headers("Tue, 15 Jul 2025 14:20:07 GMT", "c41d2f0a9e8b7c6d5e4f3a2b1c0d9e8f", 118),
            offsets_ms=38.5,
        )
    )

    out.append(
        make(
            "parallel",
            request("command-a-03-2025", "Compare today's weather in Paris and in Tokyo.", [WEATHER]),
            [
                message_start("8e2b6f14-3c9a-4d0e-b7a5-61f2c8d94e07"),
                *plan(
                    "I", " will", " look", " up", " the", " weather", " in", " Paris", " and", " Tokyo", "."
                ),
                *tool_call(
                    0, "get_weather_n8c2v7ks1wq9", "get_weather", json_tokens(("location", "Paris, France"))
                ),
                *tool_call(
                    1, "get_weather_b3x9j5tq0zr4", "get_weather", json_tokens(("location", "Tokyo, Japan"))
                ),
                message_end("TOOL_CALL", (31, 58), (1492, 58)),
            ],
            response_headers("Tue, 15 Jul 2025 14:22:41 GMT", "a7e3b9c1d5f2048e6a1b3c5d7e9f0a2b", 96),
            reads=[160, 64, 512],
            offsets_ms=17.75,
        )
    )

    long_plan = (
        "I",
        " will",
        " search",
        " the",
        " knowledge",
        " base",
        " for",
        " the",
        " refund",
        " policy",
        " on",
        " annual",
        " plans",
        ",",
        " then",
        " summarise",
        " what",
        " applies",
        " to",
        " the",
        " user",
        "'s",
        " case",
        ".",
    )
    out.append(
        make(
            "tool-plan-then-call",
            request(
                "command-a-03-2025",
                "Can I get a refund on my annual plan after 20 days? Check our policy.",
                [DOCS],
            ),
            [
                message_start("d19a4c72-8f3e-4b61-a0d5-7e2c9b8f1a36"),
                *plan(*long_plan),
                *tool_call(
                    0,
                    "search_docs_7hq3m0yw5ve1",
                    "search_docs",
                    [
                        '{\n    "',
                        "query",
                        '": "',
                        "refund",
                        " policy",
                        " annual",
                        " plan",
                        '",\n    "',
                        "top",
                        "_k",
                        '": ',
                        "5",
                        "\n}",
                    ],
                ),
                message_end("TOOL_CALL", (44, 61), (1137, 61)),
            ],
            response_headers("Tue, 15 Jul 2025 14:25:13 GMT", "5b8d0e2f4a6c8e0a2c4e6f8a0b2d4f6e", 131),
            reads=[97, 211],
            offsets_ms=21.4,
        )
    )

    out.append(
        make(
            "no-args",
            request("command-a-03-2025", "Which support tickets do I still have open?", [INVENTORY]),
            [
                message_start("3c7e1f95-2a4b-4d8c-9e06-b5f1a3c7d924"),
                *plan("I", " will", " list", " the", " user", "'s", " open", " tickets", "."),
                *tool_call(0, "list_open_tickets_x2d8r6n1pk0m", "list_open_tickets", ["{}"]),
                message_end("TOOL_CALL", (12, 24), (903, 24)),
            ],
            response_headers("Tue, 15 Jul 2025 14:27:55 GMT", "9e1c3a5b7d9f1b3d5f7a9c1e3a5c7e9f", 87),
            reads=[300],
            offsets_ms=44.0,
        )
    )
    return out


def main() -> None:
    for made in build():
        path = cassettes.save(made, OUT / f"{made.name}.yaml")
        print(f"wrote {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
