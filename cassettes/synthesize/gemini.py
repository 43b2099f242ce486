"""Synthesize the Gemini cassettes: `python cassettes/synthesize/gemini.py` from the repo root.

Shapes follow recorded Gemini Developer API and Vertex AI streams (`alt=sse`): whole
`GenerateContentResponse` chunks with Gemini's JSON spacing, `responseId` / `modelVersion` on
every chunk, `usageMetadata` on every chunk (complete only on the last), `thoughtSignature` on the
first call part, and CRLF line ends on Vertex. Gemini 3 streamed arguments (`partialArgs`) are a
Vertex feature, so those cassettes are Vertex ones.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from harness.cassettes import format as cassettes  # noqa: E402
from harness.cassettes.format import Cassette, Chunk  # noqa: E402
from harness.wire.dialects import stored_outcome  # noqa: E402
from harness.wire.synthesis import split_reads, synthesize  # noqa: E402

DIALECT = "gemini"
OUT = ROOT / "cassettes" / "gemini"
PROVENANCE = "synthesized by cassettes/synthesize/gemini.py from the documented and observed alt=sse shapes"

DEV_URL = "https://generativelanguage.googleapis.com/v1beta/models/{model}:streamGenerateContent?alt=sse"
VERTEX_URL = (
    "https://aiplatform.googleapis.com/v1/projects/acme-weather-prod/locations/global/"
    "publishers/google/models/{model}:streamGenerateContent?alt=sse"
)
SDK_HEADERS = {
    "user-agent": "google-genai-sdk/1.29.0 gl-python/3.11.9",
    "x-goog-api-client": "google-genai-sdk/1.29.0 gl-python/3.11.9",
}
DEV_RESPONSE_HEADERS = {
    "content-type": "text/event-stream",
    "content-disposition": "attachment",
    "vary": "Origin, X-Origin, Referer",
    "transfer-encoding": "chunked",
    "date": "Mon, 14 Jul 2025 09:31:02 GMT",
    "server": "scaffolding on HTTPServer2",
    "x-xss-protection": "0",
    "x-frame-options": "SAMEORIGIN",
    "x-content-type-options": "nosniff",
    "server-timing": "gfet4t7; dur=1184",
    "alt-svc": 'h3=":443"; ma=2592000,h3-29=":443"; ma=2592000',
}
VERTEX_RESPONSE_HEADERS = {
    "content-type": "text/event-stream",
    "content-disposition": "attachment",
    "vary": "Origin, X-Origin, Referer",
    "transfer-encoding": "chunked",
    "date": "Thu, 20 Nov 2025 10:12:33 GMT",
    "server": "scaffolding on HTTPServer2",
    "x-xss-protection": "0",
    "x-frame-options": "SAMEORIGIN",
    "x-content-type-options": "nosniff",
    "alt-svc": 'h3=":443"; ma=2592000,h3-29=":443"; ma=2592000',
}

WEATHER = {
    "name": "get_weather",
    "description": "Get the current weather for a city.",
    "parameters": {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "City name, e.g. Paris"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        },
        "required": ["city"],
    },
}
TIME = {
    "name": "get_time",
    "description": "Get the local time in an IANA time zone.",
    "parameters": {
        "type": "object",
        "properties": {"timezone": {"type": "string"}},
        "required": ["timezone"],
    },
}
NOW = {"name": "get_current_time", "description": "The current UTC time."}
RECIPE = {
    "name": "save_recipe",
    "description": "Save a recipe to the user's cookbook.",
    "parameters": {
        "type": "object",
        "properties": {
            "recipe": {
                "type": "object",
                "properties": {
                    "title": {"type": "string"},
                    "servings": {"type": "integer"},
                    "vegetarian": {"type": "boolean"},
                    "ingredients": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {"name": {"type": "string"}, "amount": {"type": "string"}},
                        },
                    },
                },
            }
        },
        "required": ["recipe"],
    },
}

SIG_A = (
    "CikB0e2Kb7S6mZ3c1JrH9pQwT4vYx8nL2aFdG5kEoRuVi0sBqMtN3hYCzA1xUj2LnKpQ4rS8vW6yZ0bD3fH5jL7nP9rT1vX3zB5d"
    "F7hJ9lN1pR3tV5xZ7bD9fH1jL3nP5rT7vX9zB1dF3hJ5lN7pR9tV1xZ3bD5fH7jL9nP1rT3vX5zB7dF9hJ1lN3pR5tV7xZ9b"
)
SIG_B = "CiQB0e2Kb1qYtL8wN3vR6xZ2cF5hJ9mP4sV7yB1eH4kN8qT2wZ5cF8iL1oR4uX7aD0gJ3mP6sV9yB2eH5kN8qT1w"
SIG_C = "Cq8BAdHtim9Gxk2hL4wQ8rT1vY5zC3fJ7mP0sV4yB8eH2kN6qT9wZ3cF6iL0oR3uX6aD9gJ2mP5sV8yB1eH4kN7qT0w"


def request(model: str, prompt: str, tools: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "contents": [{"role": "user", "parts": [{"text": prompt}]}],
        "tools": [{"functionDeclarations": tools}],
    }
    body.update(extra)
    return body


class Chunks:
    """Builds the chunks of one response: same responseId and model, growing usage."""

    def __init__(self, model: str, response_id: str, prompt: int, *, vertex_time: str | None = None) -> None:
        self.model, self.response_id, self.prompt, self.vertex_time = model, response_id, prompt, vertex_time

    def __call__(
        self,
        *parts: Any,
        out: int | None = None,
        thoughts: int | None = None,
        finish: str | None = None,
        finish_message: str | None = None,
    ) -> dict[str, Any]:
        cand: dict[str, Any] = {"content": {"parts": list(parts), "role": "model"}}
        if finish is not None:
            cand["finishReason"] = finish
        cand["index"] = 0
        if finish_message is not None:
            cand["finishMessage"] = finish_message
        usage: dict[str, Any] = {"promptTokenCount": self.prompt}
        if out is not None:
            usage["candidatesTokenCount"] = out
        usage["totalTokenCount"] = self.prompt + (out or 0) + (thoughts or 0)
        if self.vertex_time is not None:
            usage["trafficType"] = "ON_DEMAND"
        usage["promptTokensDetails"] = [{"modality": "TEXT", "tokenCount": self.prompt}]
        if out is not None and self.vertex_time is not None:
            usage["candidatesTokensDetails"] = [{"modality": "TEXT", "tokenCount": out}]
        if thoughts is not None:
            usage["thoughtsTokenCount"] = thoughts
        payload: dict[str, Any] = {"candidates": [cand], "usageMetadata": usage, "modelVersion": self.model}
        if self.vertex_time is not None:
            payload["createTime"] = self.vertex_time
        payload["responseId"] = self.response_id
        return payload


def fc(
    name: str, args: dict[str, Any] | None = None, *, sig: str | None = None, **extra: Any
) -> dict[str, Any]:
    call: dict[str, Any] = {"name": name}
    if args is not None:
        call["args"] = args
    call.update(extra)
    part: dict[str, Any] = {"functionCall": call}
    if sig is not None:
        part["thoughtSignature"] = sig
    return part


def partial(*args: dict[str, Any], more: bool = True) -> dict[str, Any]:
    call: dict[str, Any] = {"partialArgs": list(args)}
    if more:
        call["willContinue"] = True
    return {"functionCall": call}


def dev(name: str, model: str, body: dict[str, Any], events: list[Any], **kw: Any) -> Cassette:
    return synthesize(
        name,
        DIALECT,
        url=DEV_URL.format(model=model),
        body=body,
        events=events,
        provenance=PROVENANCE,
        request_headers=SDK_HEADERS,
        response_headers=DEV_RESPONSE_HEADERS,
        **kw,
    )


def vertex(
    name: str, model: str, body: dict[str, Any], events: list[Any], *, reads: list[int], offsets_ms: float
) -> Cassette:
    """A Vertex cassette: the same body with CRLF line ends, cut into `reads`."""
    made = synthesize(
        name,
        DIALECT,
        url=VERTEX_URL.format(model=model),
        body=body,
        events=events,
        provenance=PROVENANCE,
        request_headers={**SDK_HEADERS, "x-goog-user-project": "acme-weather-prod"},
        response_headers=VERTEX_RESPONSE_HEADERS,
        expected=False,
    )
    interaction = made.interactions[0]
    crlf = interaction.response.body.replace(b"\n", b"\r\n")  # JSON data never holds a raw newline
    interaction.response.chunks = [
        Chunk(piece, round(i * offsets_ms, 3)) for i, piece in enumerate(split_reads(crlf, reads))
    ]
    interaction.expected = stored_outcome(interaction.response, DIALECT)
    return made


def build() -> list[Cassette]:
    """Every Gemini cassette, in the order they are saved."""
    out: list[Cassette] = []

    c = Chunks("gemini-2.5-flash", "mUxQaI2bJ6mNvdIPk_3Y2Qk", 74)
    out.append(
        dev(
            "single-call",
            "gemini-2.5-flash",
            request("gemini-2.5-flash", "What's the weather in Paris right now? Use celsius.", [WEATHER]),
            [
                c(
                    fc("get_weather", {"city": "Paris", "unit": "celsius"}, sig=SIG_A),
                    out=22,
                    thoughts=61,
                    finish="STOP",
                )
            ],
            reads=[377, 1024],
            offsets_ms=812.4,
        )
    )

    c = Chunks("gemini-2.5-flash", "3VRQaKaBOY-qvdIPwuWa-Ao", 118)
    out.append(
        dev(
            "parallel-one-chunk",
            "gemini-2.5-flash",
            request("gemini-2.5-flash", "What's the weather and the local time in Paris?", [WEATHER, TIME]),
            [
                c(
                    fc("get_weather", {"city": "Paris"}, sig=SIG_B),
                    fc("get_time", {"timezone": "Europe/Paris"}),
                    out=31,
                    thoughts=88,
                    finish="STOP",
                )
            ],
            reads=[211, 4096],
            offsets_ms=964.0,
        )
    )

    c = Chunks("gemini-2.5-pro", "l1lQaPHwF5exvdIP1-OJ-Ak", 131)
    out.append(
        dev(
            "parallel-one-per-chunk",
            "gemini-2.5-pro",
            request(
                "gemini-2.5-pro",
                "Compare the weather in Paris and Tokyo, and tell me the time in Tokyo.",
                [WEATHER, TIME],
            ),
            [
                c(fc("get_weather", {"city": "Paris"}, sig=SIG_C), out=9, thoughts=214),
                c(fc("get_weather", {"city": "Tokyo"}), out=18, thoughts=214),
                c(fc("get_time", {"timezone": "Asia/Tokyo"}), out=29, thoughts=214),
                c({"text": ""}, out=29, thoughts=214, finish="STOP"),
            ],
            offsets_ms=121.7,
        )
    )

    c = Chunks("gemini-2.5-flash", "gWFQaIzCN4e9vdIPzvKZ0Qg", 80)
    out.append(
        dev(
            "text-then-call",
            "gemini-2.5-flash",
            request(
                "gemini-2.5-flash", "Is it raining in Zürich? Tell me what you're doing first.", [WEATHER]
            ),
            [
                c({"text": "I'll check the current"}, out=5, thoughts=40),
                c({"text": " conditions in Zürich for you."}, out=12, thoughts=40),
                c(fc("get_weather", {"city": "Zürich"}), out=20, thoughts=40, finish="STOP"),
            ],
            reads=[180, 96, 333],
            offsets_ms=57.25,
        )
    )

    c = Chunks("gemini-2.5-flash", "e2NQaNm5A8ShvdIP0ZfC4Aw", 52)
    out.append(
        dev(
            "no-args",
            "gemini-2.5-flash",
            request("gemini-2.5-flash", "What time is it?", [NOW]),
            [c(fc("get_current_time", {}, sig=SIG_B), out=7, thoughts=27, finish="STOP")],
            reads=[256, 2048],
            offsets_ms=640.0,
        )
    )

    c = Chunks("gemini-2.5-flash", "jGRQaPu2KtG1vdIPhNmU6Qs", 96)
    thinking = {"thinkingConfig": {"includeThoughts": True, "thinkingBudget": 1024}}
    out.append(
        dev(
            "thinking-then-call",
            "gemini-2.5-flash",
            request(
                "gemini-2.5-flash",
                "Should I bring an umbrella in Lisbon today?",
                [WEATHER],
                generationConfig=thinking,
            ),
            [
                c(
                    {
                        "text": "**Assessing the Forecast**\n\nThe user asks about rain in Lisbon today, "
                        "so I need the current conditions there before answering.\n\n",
                        "thought": True,
                    },
                    thoughts=38,
                ),
                c(
                    {
                        "text": "**Calling the weather tool**\n\nI'll request the weather for Lisbon "
                        "in celsius.\n\n",
                        "thought": True,
                    },
                    thoughts=71,
                ),
                c(
                    fc("get_weather", {"city": "Lisbon", "unit": "celsius"}, sig=SIG_A),
                    out=24,
                    thoughts=71,
                    finish="STOP",
                ),
            ],
            reads=[64, 512],
            offsets_ms=203.5,
        )
    )

    c = Chunks("gemini-2.5-flash", "lm9QaL3cMsaovdIP9fOXsQ4", 74, vertex_time="2025-11-20T10:12:31.948722Z")
    out.append(
        vertex(
            "vertex-single-call",
            "gemini-2.5-flash",
            request("gemini-2.5-flash", "Weather in Oslo?", [WEATHER]),
            [
                c(fc("get_weather", {"city": "Oslo"}, sig=SIG_B), out=8, thoughts=45),
                c({"text": ""}, out=8, thoughts=45, finish="STOP"),
            ],
            reads=[300, 77, 900],
            offsets_ms=95.5,
        )
    )

    stream_args = {"functionCallingConfig": {"mode": "AUTO", "streamFunctionCallArguments": True}}
    c = Chunks(
        "gemini-3-pro-preview", "PXBQaLqwHPq1vdIPyoGr8Ac", 142, vertex_time="2025-11-20T10:12:33.481203Z"
    )
    out.append(
        vertex(
            "partial-args",
            "gemini-3-pro-preview",
            request(
                "gemini-3-pro-preview",
                "What's the weather in Boston and in San Francisco?",
                [WEATHER],
                toolConfig=stream_args,
            ),
            [
                c(fc("get_weather", sig=SIG_C, willContinue=True), out=3, thoughts=180),
                c(
                    partial({"jsonPath": "$.city", "stringValue": "Boston", "willContinue": True}),
                    out=5,
                    thoughts=180,
                ),
                c(partial({"jsonPath": "$.city", "stringValue": ""}), out=6, thoughts=180),
                c({"functionCall": {}}, out=6, thoughts=180),
                c(fc("get_weather", willContinue=True), out=8, thoughts=180),
                c(
                    partial({"jsonPath": "$.city", "stringValue": "San ", "willContinue": True}),
                    out=10,
                    thoughts=180,
                ),
                c(partial({"jsonPath": "$.city", "stringValue": "Francisco"}), out=12, thoughts=180),
                c({"functionCall": {}}, out=13, thoughts=180, finish="STOP"),
            ],
            reads=[420, 233, 1200],
            offsets_ms=48.0,
        )
    )

    c = Chunks(
        "gemini-3-pro-preview", "kHJQaO6SBN2vvdIPrs2JiQ0", 205, vertex_time="2025-11-20T10:14:02.117530Z"
    )
    out.append(
        vertex(
            "partial-args-nested",
            "gemini-3-pro-preview",
            request(
                "gemini-3-pro-preview",
                "Save a pancake recipe for 4 people.",
                [RECIPE],
                toolConfig=stream_args,
            ),
            [
                c(fc("save_recipe", sig=SIG_A, willContinue=True), out=4, thoughts=402),
                c(
                    partial({"jsonPath": "$.recipe.title", "stringValue": "Fluffy ", "willContinue": True}),
                    out=7,
                    thoughts=402,
                ),
                c(
                    partial(
                        {"jsonPath": "$.recipe.title", "stringValue": "Pancakes"},
                        {"jsonPath": "$.recipe.servings", "numberValue": 4},
                        {"jsonPath": "$.recipe.vegetarian", "boolValue": True},
                    ),
                    out=15,
                    thoughts=402,
                ),
                c(
                    partial(
                        {"jsonPath": "$.recipe.ingredients[0].name", "stringValue": "flour"},
                        {"jsonPath": "$.recipe.ingredients[0].amount", "stringValue": "200 g"},
                    ),
                    out=24,
                    thoughts=402,
                ),
                c(
                    partial(
                        {"jsonPath": "$.recipe.ingredients[1].name", "stringValue": "milk"},
                        {
                            "jsonPath": "$.recipe.ingredients[1].amount",
                            "stringValue": "300 ",
                            "willContinue": True,
                        },
                    ),
                    out=31,
                    thoughts=402,
                ),
                c(
                    partial({"jsonPath": "$.recipe.ingredients[1].amount", "stringValue": "ml"}),
                    out=33,
                    thoughts=402,
                ),
                c({"functionCall": {}}, out=34, thoughts=402),
                c({"text": ""}, out=34, thoughts=402, finish="STOP"),
            ],
            reads=[1500, 380],
            offsets_ms=71.3,
        )
    )

    # Code execution runs on Google's side: an executableCode part, its codeExecutionResult, then
    # text, and a function call the client must run; only that one is a client call.
    c = Chunks("gemini-2.5-flash", "z2pRaMf1Nqi6vdIPpLqT4Aw", 96)
    code = "temps = [14.2, 16.8, 19.1]\nprint(round(sum(temps) / len(temps), 1))\n"
    body = request(
        "gemini-2.5-flash", "Average of 14.2, 16.8 and 19.1 with code, then the weather in Porto.", [WEATHER]
    )
    body["tools"].append({"codeExecution": {}})
    result = {"outcome": "OUTCOME_OK", "output": "16.7\n"}
    out.append(
        dev(
            "code-execution-then-call",
            "gemini-2.5-flash",
            body,
            [
                c({"executableCode": {"language": "PYTHON", "code": code}}, out=38, thoughts=122),
                c({"codeExecutionResult": result}, out=38, thoughts=122),
                c({"text": "The average is 16.7. Now the weather in Porto."}, out=51, thoughts=122),
                c(fc("get_weather", {"city": "Porto"}), out=58, thoughts=122, finish="STOP"),
            ],
            reads=[640, 512, 2048],
            offsets_ms=233.0,
        )
    )
    # Gemini 3 thinking with parallel calls (recipe thinking-parallel): a thought summary, then two
    # calls in separate chunks, only the first carrying the thoughtSignature, then an empty text part
    # with the finish.
    c = Chunks("gemini-3-pro-preview", "m8qUaNbHKf3p1MAP2o6N8Ag", 84)
    thinking = {"thinkingConfig": {"includeThoughts": True, "thinkingLevel": "low"}}
    out.append(
        synthesize(
            "thinking-parallel",
            DIALECT,
            url=DEV_URL.format(model="gemini-3-pro-preview"),
            body=request(
                "gemini-3-pro-preview", "Weather in Paris and Oslo?", [WEATHER], generationConfig=thinking
            ),
            events=[
                c({"text": "**Two cities**\n\nCheck both at once.", "thought": True}, out=0, thoughts=58),
                c(fc("get_weather", {"city": "Paris"}, sig=SIG_A), out=9, thoughts=58),
                c(fc("get_weather", {"city": "Oslo"}), out=18, thoughts=58),
                c({"text": ""}, out=18, thoughts=58, finish="STOP"),
            ],
            provenance=(
                "synthesized from the documented wire format: a thought summary part (thought: true), "
                "two parallel functionCall parts in separate chunks, only the first with a "
                "thoughtSignature (a sibling of functionCall), then an empty text part with the "
                "finish. Sources: ai.google.dev/gemini-api/docs/thought-signatures (parallel calls: "
                "only the first functionCall part carries the signature; return it on that part); "
                "ai.google.dev/gemini-api/docs/thinking (includeThoughts); google/genai types.py "
                "Part.thought_signature"
            ),
            request_headers=SDK_HEADERS,
            response_headers=DEV_RESPONSE_HEADERS,
            reads=[700, 512, 2048],
            offsets_ms=180.0,
        )
    )
    return out


def main() -> None:
    for made in build():
        path = cassettes.save(made, OUT / f"{made.name}.yaml")
        print(f"wrote {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
