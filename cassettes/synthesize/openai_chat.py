"""Synthesize the bundled OpenAI Chat Completions cassettes into `cassettes/openai-chat/`.

Run from the repo root: `python cassettes/synthesize/openai_chat.py`. Output is deterministic (ids,
padding and timings come from a generator seeded with the cassette name), so a rerun rewrites the
same files. The streams follow real recordings: OpenAI's `chatcmpl-` + 29 characters and `call_`
+ 24 characters ids, `service_tier`, `system_fingerprint`, the random-length `obfuscation`
padding, a first chunk with the role, `"arguments":""` headers then token-sized pieces, an
empty-delta finish chunk, then the `stream_options.include_usage` chunk and `[DONE]`; and the
shapes of OpenAI-compatible servers (DeepSeek, OpenRouter, vLLM, Azure, Groq, a LiteLLM bridge)
including the seed documents' chunks. Each expected outcome is the reference accumulator's,
checked by hand in `tests/cassettes/test_corpus_openai.py`.
"""

from __future__ import annotations

import json
import random
import re
import sys
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if __name__ == "__main__":
    sys.path[0] = str(ROOT)  # run as a script: import the harness from this checkout

from harness.cassettes.corpus import declare  # noqa: E402
from harness.cassettes.format import Cassette, save  # noqa: E402
from harness.wire.codecs import WireEvent  # noqa: E402
from harness.wire.synthesis import synthesize  # noqa: E402

DIALECT = "openai-chat"
OPENAI_URL = "https://api.openai.com/v1/chat/completions"
OUT = ROOT / "cassettes" / DIALECT
ALNUM = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
DONE = "[DONE]"

# -- tools the requests offer -------------------------------------------------------------------


def tool(
    name: str, description: str, properties: dict[str, Any], required: list[str] | None = None
) -> dict[str, Any]:
    parameters: dict[str, Any] = {"type": "object", "properties": properties}
    if properties:
        parameters["required"] = required if required is not None else list(properties)
    parameters["additionalProperties"] = False
    return {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": parameters},
    }


GET_WEATHER = tool(
    "get_weather",
    "Get the current weather for a city.",
    {
        "city": {"type": "string", "description": "City name, e.g. Paris"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
    },
    ["city"],
)
GET_TIME = tool(
    "get_time",
    "Current local time in an IANA time zone.",
    {"timezone": {"type": "string", "description": "e.g. Europe/Paris"}},
)
GET_CURRENT_TIME = tool("get_current_time", "The current UTC time. Takes no arguments.", {})
READ_FILE = tool("read_file", "Read a text file from the workspace.", {"path": {"type": "string"}})
SEARCH_TEXT = tool("search_text", "Search the workspace for a string.", {"query": {"type": "string"}})
WEB_SEARCH = tool(
    "web_search",
    "Search the web and return the top results.",
    {"query": {"type": "string"}, "max_results": {"type": "integer", "default": 5}},
    ["query"],
)
BOCHA_SEARCH = tool(
    "bocha_websearch_tool",
    "Search the web with Bocha and return summaries.",
    {"query": {"type": "string"}, "count": {"type": "integer"}},
    ["query"],
)


def request(model: str, user: str, tools: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": model,
        "messages": [
            {"role": "system", "content": "You are a helpful assistant. Use the tools when they help."},
            {"role": "user", "content": user},
        ],
        "tools": tools,
        "tool_choice": "auto",
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    body.update(extra)
    return body


SDK_HEADERS = {
    "user-agent": "OpenAI/Python 1.99.9",
    "x-stainless-lang": "python",
    "x-stainless-package-version": "1.99.9",
    "x-stainless-runtime": "CPython",
    "x-stainless-runtime-version": "3.12.8",
    "x-stainless-async": "false",
}


def openai_headers(rng: random.Random, ms: int) -> dict[str, str]:
    """What api.openai.com answers a stream with (no secrets: no cookies, no organization id)."""
    return {
        "date": "Tue, 12 Aug 2025 09:41:27 GMT",
        "transfer-encoding": "chunked",
        "connection": "keep-alive",
        "access-control-expose-headers": "X-Request-ID",
        "openai-processing-ms": str(ms),
        "openai-version": "2020-10-01",
        "x-envoy-upstream-service-time": str(ms + rng.randint(3, 30)),
        "x-ratelimit-limit-requests": "10000",
        "x-ratelimit-limit-tokens": "30000000",
        "x-ratelimit-remaining-requests": "9999",
        "x-ratelimit-remaining-tokens": str(30000000 - rng.randint(100, 900)),
        "x-ratelimit-reset-requests": "6ms",
        "x-ratelimit-reset-tokens": "0s",
        "x-request-id": "req_" + "".join(rng.choice("0123456789abcdef") for _ in range(32)),
        "strict-transport-security": "max-age=31536000; includeSubDomains; preload",
        "cf-cache-status": "DYNAMIC",
        "x-content-type-options": "nosniff",
        "server": "cloudflare",
        "cf-ray": "".join(rng.choice("0123456789abcdef") for _ in range(16)) + "-CDG",
        "alt-svc": 'h3=":443"; ma=86400',
    }


# -- how servers cut text and arguments into pieces ---------------------------------------------

_TOKEN = re.compile(r'\{"|":\s?"|":\s?|",\s?"|"\}|,\s?"|\s?[A-Za-z]{1,6}|\d{1,3}|[^A-Za-z\d]')


def tokens(text: str) -> list[str]:
    """Token-sized pieces, about as a BPE tokenizer streams them."""
    return _TOKEN.findall(text)


def words(text: str) -> list[str]:
    return re.findall(r"\s*\S+", text)


class Ids:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def alnum(self, length: int) -> str:
        return "".join(self.rng.choice(ALNUM) for _ in range(length))

    def hex(self, length: int) -> str:
        return "".join(self.rng.choice("0123456789abcdef") for _ in range(length))

    def call(self) -> str:
        return "call_" + self.alnum(24)


class OpenAIStream:
    """The chunks of one api.openai.com completion: shared envelope, obfuscation on each."""

    def __init__(self, name: str, model: str, fingerprint: str) -> None:
        self.rng = random.Random(name)
        self.ids = Ids(self.rng)
        self.id = "chatcmpl-" + self.ids.alnum(29)
        self.created = 1754991687 + self.rng.randint(0, 400000)
        self.model = model
        self.fingerprint = fingerprint
        self.items: list[Any] = []

    def chunk(self, delta: dict[str, Any], finish: str | None = None) -> None:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        self.items.append(
            {**self._envelope(), "choices": [choice], "usage": None, "obfuscation": self._pad()}
        )

    def role(self, **delta: Any) -> None:
        self.chunk({"role": "assistant", "content": delta.pop("content", ""), **delta, "refusal": None})

    def text(self, text: str) -> None:
        for word in words(text):
            self.chunk({"content": word})

    def call(self, index: int, name: str, args: str, *, first: bool = False) -> str:
        call_id = self.ids.call()
        entry = {
            "index": index,
            "id": call_id,
            "type": "function",
            "function": {"name": name, "arguments": ""},
        }
        if first:
            self.role(content=None, tool_calls=[entry])
        else:
            self.chunk({"tool_calls": [entry]})
        for piece in tokens(args):
            self.chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
        return call_id

    def finish(self, reason: str, prompt: int, completion: int) -> None:
        self.chunk({}, reason)
        usage = {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
            "completion_tokens_details": {
                "reasoning_tokens": 0,
                "audio_tokens": 0,
                "accepted_prediction_tokens": 0,
                "rejected_prediction_tokens": 0,
            },
        }
        self.items.append({**self._envelope(), "choices": [], "usage": usage, "obfuscation": self._pad()})
        self.items.append(DONE)

    def _envelope(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "service_tier": "default",
            "system_fingerprint": self.fingerprint,
        }

    def _pad(self) -> str:
        return self.ids.alnum(self.rng.randint(1, 15))


def openai_cassette(
    name: str, stream: OpenAIStream, body: dict[str, Any], provenance: str, **options: Any
) -> Cassette:
    return synthesize(
        name,
        DIALECT,
        url=OPENAI_URL,
        body=body,
        events=stream.items,
        provenance=provenance,
        request_headers=SDK_HEADERS,
        response_headers=openai_headers(stream.rng, stream.rng.randint(180, 900)),
        **options,
    )


# -- the cassettes ------------------------------------------------------------------------------


def single_call() -> Cassette:
    s = OpenAIStream("single-call", "gpt-4.1-2025-04-14", "fp_b3f1157249")
    s.call(0, "get_weather", '{"city":"Paris","unit":"celsius"}', first=True)
    s.finish("tool_calls", 87, 19)
    body = request("gpt-4.1", "What's the weather in Paris right now?", [GET_WEATHER])
    return openai_cassette(
        "single-call", s, body, "synthesized: api.openai.com gpt-4.1, one call", offsets_ms=21.5
    )


def parallel_2() -> Cassette:
    s = OpenAIStream("parallel-2", "gpt-4o-2024-08-06", "fp_07871e2ad8")
    s.call(0, "get_weather", '{"city":"Paris"}', first=True)
    s.call(1, "get_time", '{"timezone":"Europe/Paris"}')
    s.finish("tool_calls", 142, 52)
    body = request(
        "gpt-4o", "Weather and local time in Paris?", [GET_WEATHER, GET_TIME], parallel_tool_calls=True
    )
    provenance = "synthesized: api.openai.com gpt-4o, two parallel calls (index 0 then 1)"
    return openai_cassette("parallel-2", s, body, provenance, reads=[301, 1024, 77, 512], offsets_ms=33)


def parallel_3_same_function() -> Cassette:
    s = OpenAIStream("parallel-3-same-function", "gpt-4.1-mini-2025-04-14", "fp_6f2eabb9a5")
    s.call(0, "get_weather", '{"city":"Paris"}', first=True)
    s.call(1, "get_weather", '{"city":"Tokyo"}')
    s.call(2, "get_weather", '{"city":"New York"}')
    s.finish("tool_calls", 98, 67)
    body = request("gpt-4.1-mini", "Compare the weather in Paris, Tokyo and New York.", [GET_WEATHER])
    provenance = "synthesized: api.openai.com gpt-4.1-mini, three parallel calls to one function"
    return openai_cassette(
        "parallel-3-same-function", s, body, provenance, reads=[4096, 1500], offsets_ms=120
    )


def no_arguments() -> Cassette:
    s = OpenAIStream("no-arguments", "gpt-4.1-2025-04-14", "fp_b3f1157249")
    s.call(0, "get_current_time", "{}", first=True)
    s.finish("tool_calls", 61, 12)
    body = request("gpt-4.1", "What time is it (UTC)?", [GET_CURRENT_TIME])
    return openai_cassette("no-arguments", s, body, "synthesized: api.openai.com, a tool without parameters")


def text_then_call() -> Cassette:
    s = OpenAIStream("text-then-call", "gpt-4o-2024-08-06", "fp_07871e2ad8")
    s.role()
    s.text("Let me look that file up for you.")
    s.call(0, "read_file", '{"path":"docs/install.md"}')
    s.finish("tool_calls", 120, 31)
    body = request("gpt-4o", "How do I install this project?", [READ_FILE, SEARCH_TEXT])
    provenance = "synthesized: api.openai.com gpt-4o, text before the call"
    return openai_cassette("text-then-call", s, body, provenance, reads=[97, 350, 1200], offsets_ms=15)


def cut_mid_arguments() -> Cassette:
    s = OpenAIStream("cut-mid-arguments", "gpt-4.1-2025-04-14", "fp_b3f1157249")
    s.call(0, "web_search", '{"query":"rust async runtime comparison","max_results":5}', first=True)
    del s.items[7:]  # the connection drops in the middle of the arguments
    body = request("gpt-4.1", "Compare Rust async runtimes.", [WEB_SEARCH])
    cassette = openai_cassette(
        "cut-mid-arguments",
        s,
        body,
        "synthesized: api.openai.com, connection lost mid-arguments",
        complete=False,
        error="peer closed connection without sending complete message body (incomplete chunked read)",
        offsets_ms=40,
    )
    cassette.interactions[0].response.error_type = "RemoteProtocolError"
    return cassette


def openrouter_text_between_calls() -> Cassette:
    """Claude through OpenRouter: text, a call, more text, a second call; keepalive comments."""
    rng = random.Random("openrouter-text-between-calls")
    ids = Ids(rng)
    gen, created = f"gen-1755000{rng.randint(100, 999)}-{ids.alnum(20)}", 1755000412
    envelope = {
        "id": gen,
        "provider": "Anthropic",
        "model": "anthropic/claude-sonnet-4",
        "object": "chat.completion.chunk",
    }

    def chunk(delta: dict[str, Any], finish: str | None = None, native: str | None = None) -> dict[str, Any]:
        choice = {
            "index": 0,
            "delta": delta,
            "finish_reason": finish,
            "native_finish_reason": native,
            "logprobs": None,
        }
        return {**envelope, "created": created, "choices": [choice]}

    keepalive = WireEvent(comment=" OPENROUTER PROCESSING")
    items: list[Any] = [keepalive, keepalive]
    turns = (
        ("I'll check the weather in Paris first.", "get_weather", '{"city": "Paris"}'),
        (" Now the local time there.", "get_time", '{"timezone": "Europe/Paris"}'),
    )
    for index, (text, name, args) in enumerate(turns):
        for word in words(text):
            first = len(items) == 2
            items.append(chunk({"role": "assistant", "content": word} if first else {"content": word}))
        call_id = "toolu_vrtx_01" + ids.alnum(22)
        header = {
            "index": index,
            "id": call_id,
            "type": "function",
            "function": {"name": name, "arguments": ""},
        }
        items.append(chunk({"content": "", "tool_calls": [header]}))
        for piece in tokens(args):
            items.append(chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}))
        items.append(keepalive)
    items.append(chunk({"content": ""}, "tool_calls", "tool_use"))
    usage = {
        "prompt_tokens": 512,
        "completion_tokens": 96,
        "total_tokens": 608,
        "cost": 0.002976,
        "is_byok": False,
        "prompt_tokens_details": {"cached_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0},
    }
    items.append({**envelope, "created": created, "choices": [], "usage": usage})
    items.append(DONE)
    body = request("anthropic/claude-sonnet-4", "Weather and time in Paris?", [GET_WEATHER, GET_TIME])
    return synthesize(
        "openrouter-text-between-calls",
        DIALECT,
        url="https://openrouter.ai/api/v1/chat/completions",
        body=body,
        events=items,
        provenance="synthesized: OpenRouter relaying Claude, text before and between two calls",
        request_headers={"http-referer": "https://example.org", "x-title": "toolstream-harness"},
        response_headers=OPENROUTER_HEADERS,
        reads=[180, 64, 900, 33],
        offsets_ms=48,
    )


OPENROUTER_HEADERS = {
    "date": "Tue, 12 Aug 2025 10:02:11 GMT",
    "cache-control": "no-cache",
    "access-control-allow-origin": "*",
    "vary": "Accept-Encoding",
    "x-clerk-auth-status": "signed-out",
    "server": "cloudflare",
    "cf-ray": "96de4c7a9f2b1e0d-FRA",
}


def deepseek_reasoning_content() -> Cassette:
    """DeepSeek thinking mode: `reasoning_content` deltas, then the call; usage on the finish chunk."""
    rng = random.Random("deepseek-reasoning-content")
    ids = Ids(rng)
    envelope = {
        "id": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
        "object": "chat.completion.chunk",
        "created": 1755003321,
        "model": "deepseek-reasoner",
        "system_fingerprint": "fp_feb633d1f5_prod0820_fp8_kvcache",
    }

    def chunk(delta: dict[str, Any], finish: str | None = None, usage: Any = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        out = {**envelope, "choices": [choice]}
        if usage is not None:
            out["usage"] = usage
        return out

    items: list[Any] = [chunk({"role": "assistant", "content": None, "reasoning_content": ""})]
    thought = "The user wants the weather in Hangzhou. I should call get_weather with the city name."
    items += [chunk({"content": None, "reasoning_content": w}) for w in words(thought)]
    items.insert(6, WireEvent(comment=" keep-alive"))
    call_id = "call_00_" + ids.alnum(24)
    header = {
        "index": 0,
        "id": call_id,
        "type": "function",
        "function": {"name": "get_weather", "arguments": ""},
    }
    items.append(chunk({"content": None, "reasoning_content": None, "tool_calls": [header]}))
    for piece in tokens('{"city": "Hangzhou", "unit": "celsius"}'):
        items.append(chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}))
    usage = {
        "prompt_tokens": 301,
        "completion_tokens": 58,
        "total_tokens": 359,
        "prompt_tokens_details": {"cached_tokens": 256},
        "completion_tokens_details": {"reasoning_tokens": 21},
        "prompt_cache_hit_tokens": 256,
        "prompt_cache_miss_tokens": 45,
    }
    items.append(chunk({"content": ""}, "tool_calls", usage))
    items.append(DONE)
    body = request("deepseek-reasoner", "What's the weather in Hangzhou?", [GET_WEATHER])
    return synthesize(
        "deepseek-reasoning-content",
        DIALECT,
        url="https://api.deepseek.com/chat/completions",
        body=body,
        events=items,
        provenance="synthesized: DeepSeek-compatible server, reasoning_content before the call",
        request_headers=SDK_HEADERS,
        response_headers={
            "date": "Tue, 12 Aug 2025 10:15:21 GMT",
            "cache-control": "no-cache",
            "vary": "origin, access-control-request-method, access-control-request-headers",
            "x-ds-trace-id": ids.hex(32),
            "server": "CW",
        },
        reads=[256, 1024, 48, 700],
        offsets_ms=26,
    )


def glm5_openrouter_idless_continuation() -> Cassette:
    """Seed 002 (aichat#1495): GLM-5 via OpenRouter; chunks 1-4 exactly as the issue logs them."""
    seed_chunks = [
        '{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"call_95df1cc8dabc4b959bbbc431","type":"function",'
        '"function":{"name":"web_search","arguments":""}}]}}],"model":"z-ai/glm-5-20260211","provider":"AtlasCloud"}',
        '{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":""}}]}}]}',
        '{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\\"max_results\\": 10, '
        '\\"query\\": \\"ESP32 command line development best practices\\""}}]}}]}',
        '{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"}"}}]}}]}',
    ]
    keepalive = WireEvent(comment=" OPENROUTER PROCESSING")
    items: list[Any] = [keepalive, keepalive, *[WireEvent(data=c) for c in seed_chunks]]
    items.insert(4, keepalive)
    items.append('{"choices":[{"delta":{"content":""},"finish_reason":"tool_calls"}]}')
    items.append(
        '{"choices":[],"usage":{"prompt_tokens":1864,"completion_tokens":41,"total_tokens":1905,"cost":0.00201}}'
    )
    items.append(DONE)
    body = request(
        "z-ai/glm-5",
        "What are the best practices for ESP32 command line development?",
        [WEB_SEARCH],
    )
    made = synthesize(
        "glm5-openrouter-idless-continuation",
        DIALECT,
        url="https://openrouter.ai/api/v1/chat/completions",
        body=body,
        events=items,
        provenance=(
            'seed 002 (sigoden/aichat#1495): GLM-5 via OpenRouter, header with arguments:"", an id-less '
            "empty-args chunk, then id-less argument chunks; chunks 1-4 verbatim from the issue log"
        ),
        response_headers=OPENROUTER_HEADERS,
        reads=[40, 200, 13, 1000],
        offsets_ms=310,
    )
    # Itself a documented deviation: its cases are quirks (docs/oracle.md).
    return declare(
        made,
        "quirk",
        "B7 choices without their index, an empty-arguments continuation (GLM-5 via OpenRouter, aichat#1495)",
    )


def vllm_same_index_fragments_first_delta() -> Cassette:
    """Seed 001 (langchain#36627): two same-index entries in the first tool delta (vLLM with
    speculative decoding sends several tokens' worth of fragments at once)."""
    rng = random.Random("vllm-same-index-fragments-first-delta")
    ids = Ids(rng)
    envelope = {"id": "chatcmpl-" + ids.hex(32), "object": "chat.completion.chunk", "created": 1755010200}
    envelope["model"] = "Qwen/Qwen3-32B"

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            **envelope,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }

    call_id = ids.call()
    first = [
        {
            "index": 0,
            "id": call_id,
            "type": "function",
            "function": {"name": "bocha_websearch_tool", "arguments": ""},
        },
        {"index": 0, "function": {"arguments": "{"}},
    ]
    items: list[Any] = [chunk({"role": "assistant", "content": ""}), chunk({"tool_calls": first})]
    for piece in ['"query', '": "', "latest", " ESP", "-IDF", " release", '", "', "count", '": ', "5", "}"]:
        items.append(chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}))
    items.append(chunk({"content": ""}, "tool_calls"))
    usage = {
        "prompt_tokens": 412,
        "total_tokens": 447,
        "completion_tokens": 35,
        "prompt_tokens_details": None,
    }
    items.append({**envelope, "choices": [], "usage": usage})
    items.append(DONE)
    body = request("Qwen/Qwen3-32B", "What is the latest ESP-IDF release?", [BOCHA_SEARCH])
    return synthesize(
        "vllm-same-index-fragments-first-delta",
        DIALECT,
        url="http://127.0.0.1:8000/v1/chat/completions",
        body=body,
        events=items,
        provenance=(
            "seed 001 (langchain-ai/langchain#36627): the first tool delta holds two index-0 entries, "
            'the header with arguments:"" and {"arguments":"{"}'
        ),
        response_headers={"date": "Tue, 12 Aug 2025 11:30:00 GMT", "server": "uvicorn"},
        offsets_ms=9,
    )


def gemini_compat_thought_signature() -> Cassette:
    """Gemini's OpenAI-compatible endpoint, two parallel calls: each sent whole in one chunk, the
    first with its thought signature under `extra_content.google.thought_signature`."""
    rng = random.Random("gemini-compat-thought-signature")
    envelope = {"id": "".join(rng.choice("abcdefghijklmnopqrstuvwxyzABCDEFGHIJ") for _ in range(22))}
    envelope |= {"object": "chat.completion.chunk", "created": 1763634753, "model": "gemini-3-pro-preview"}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        choice: dict[str, Any] = {"delta": delta, "index": 0}
        if finish is not None:
            choice["finish_reason"] = finish
        return {**envelope, "choices": [choice]}

    signature = "CpYBAY89a1" + "".join(
        rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/") for _ in range(140)
    )
    first = {
        "extra_content": {"google": {"thought_signature": signature}},
        "function": {"arguments": '{"city":"Paris"}', "name": "get_weather"},
        "id": "function-call-" + str(rng.getrandbits(60)),
        "index": 0,
        "type": "function",
    }
    second = {
        "function": {"arguments": '{"city":"Oslo"}', "name": "get_weather"},
        "id": "function-call-" + str(rng.getrandbits(60)),
        "index": 1,
        "type": "function",
    }
    items: list[Any] = [
        chunk({"role": "assistant", "tool_calls": [first]}),
        chunk({"role": "assistant", "tool_calls": [second]}),
        chunk({"role": "assistant"}, "tool_calls"),
        DONE,
    ]
    body = request("gemini-3-pro-preview", "Weather in Paris and Oslo?", [GET_WEATHER])
    body["reasoning_effort"] = "low"
    return synthesize(
        "gemini-compat-thought-signature",
        DIALECT,
        url="https://generativelanguage.googleapis.com/v1beta/openai/chat/completions",
        body=body,
        events=items,
        provenance=(
            "synthesized from the documented wire format (recipe thinking-parallel): Gemini's "
            "OpenAI-compatible endpoint puts a call's thought signature in its tool_calls entry under "
            "extra_content.google.thought_signature, only on the first of parallel calls, and needs it "
            "back on the same entry. Sources: ai.google.dev/gemini-api/docs/openai and "
            "ai.google.dev/gemini-api/docs/thought-signatures; openai/codex PR #7586; crmne/ruby_llm "
            "PR #588; continuedev/continue PR #8865"
        ),
        response_headers={"content-type": "text/event-stream", "server": "scaffolding on HTTPServer2"},
        offsets_ms=140,
    )


def vllm_reasoning_field() -> Cassette:
    """vLLM since 0.11 with a reasoning parser: the reasoning in `delta.reasoning` (not
    `reasoning_content`), then a call."""
    rng = random.Random("vllm-reasoning-field")
    ids = Ids(rng)
    envelope = {"id": "chatcmpl-" + ids.hex(32), "object": "chat.completion.chunk", "created": 1763640000}
    envelope["model"] = "Qwen/Qwen3-8B"

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            **envelope,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }

    items: list[Any] = [chunk({"role": "assistant", "content": ""})]
    items += [
        chunk({"reasoning": w}) for w in words("The user asks for Lyon's weather, so I call get_weather.")
    ]
    header = {
        "id": ids.call(),
        "type": "function",
        "index": 0,
        "function": {"name": "get_weather", "arguments": ""},
    }
    items.append(chunk({"tool_calls": [header]}))
    for piece in tokens('{"city": "Lyon"}'):
        items.append(chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}))
    items.append(chunk({"content": ""}, "tool_calls"))
    items.append(DONE)
    body = request("Qwen/Qwen3-8B", "What's the weather in Lyon?", [GET_WEATHER])
    return synthesize(
        "vllm-reasoning-field",
        DIALECT,
        url="http://127.0.0.1:8000/v1/chat/completions",
        body=body,
        events=items,
        provenance=(
            "synthesized from the documented wire format: vLLM (--reasoning-parser) streams the "
            "reasoning as delta.reasoning since about v0.11, reasoning_content before. Sources: "
            "docs.vllm.ai/en/v0.11.2/features/reasoning_outputs; docs.vllm.ai/en/v0.17.1/features/"
            "interleaved_thinking; vercel/ai openai-compatible chat model (reads reasoning_content, "
            "else reasoning)"
        ),
        response_headers={"date": "Thu, 20 Nov 2025 12:00:00 GMT", "server": "uvicorn"},
        offsets_ms=11,
    )


def litellm_bridge_parallel_index0() -> Cassette:
    """Seed 000 (langchain#34807) on the chat wire: a Responses->Chat bridge (LiteLLM#21331) puts
    both parallel calls at index 0, with different ids."""
    rng = random.Random("litellm-bridge-parallel-index0")
    ids = Ids(rng)
    envelope = {
        "id": "chatcmpl-" + str(uuid.UUID(int=rng.getrandbits(128), version=4)),
        "created": 1755012345,
        "model": "gpt-5-mini",
        "object": "chat.completion.chunk",
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**envelope, "choices": [{"finish_reason": finish, "index": 0, "delta": delta}]}

    items: list[Any] = []
    for name, args in (("read_file", '{"path":"foo.txt"}'), ("search_text", '{"query":"bar"}')):
        header = {
            "id": ids.call(),
            "function": {"arguments": "", "name": name},
            "type": "function",
            "index": 0,
        }
        delta: dict[str, Any] = {"content": None, "role": "assistant", "tool_calls": [header]}
        items.append(chunk(delta))
        for piece in tokens(args):
            piece_entry = {"function": {"arguments": piece}, "type": "function", "index": 0}
            items.append(chunk({"content": None, "role": "assistant", "tool_calls": [piece_entry]}))
    items.append(chunk({}, "tool_calls"))
    usage = {"completion_tokens": 54, "prompt_tokens": 203, "total_tokens": 257}
    items.append({**envelope, "choices": [{"index": 0, "delta": {}}], "usage": usage})
    items.append(DONE)
    body = request("gpt-5-mini", "Read foo.txt and search the workspace for bar.", [READ_FILE, SEARCH_TEXT])
    made = synthesize(
        "litellm-bridge-parallel-index0",
        DIALECT,
        url="http://localhost:4000/v1/chat/completions",
        body=body,
        events=items,
        provenance=(
            "seed 000 (langchain-ai/langchain#34807, BerriAI/litellm#21331): a Responses->Chat bridge sends "
            'two parallel calls at index 0 with different ids, read_file {"path":"foo.txt"} and '
            'search_text {"query":"bar"}'
        ),
        response_headers={
            "date": "Tue, 12 Aug 2025 12:05:45 GMT",
            "server": "uvicorn",
            "x-litellm-version": "1.74.9",
        },
        reads=[333, 90, 2048],
        offsets_ms=52,
    )
    # Itself a documented deviation: its cases are quirks (docs/oracle.md).
    return declare(made, "quirk", "A1 two parallel calls at index 0 (langchain#34807, litellm#21331)")


def azure_prompt_filter() -> Cassette:
    """Azure OpenAI: the `prompt_filter_results` chunk first, `content_filter_results` on choices."""
    s = OpenAIStream("azure-prompt-filter", "gpt-4o-2024-11-20", "fp_ee1d74bde0")
    safe = {
        "hate": {"filtered": False, "severity": "safe"},
        "self_harm": {"filtered": False, "severity": "safe"},
        "sexual": {"filtered": False, "severity": "safe"},
        "violence": {"filtered": False, "severity": "safe"},
    }
    s.call(0, "get_weather", '{"city":"Seattle","unit":"fahrenheit"}', first=True)
    s.finish("tool_calls", 90, 22)
    items: list[Any] = []
    for item in s.items:
        if isinstance(item, dict):
            item = {k: v for k, v in item.items() if k not in ("service_tier", "obfuscation")}
            for choice in item["choices"]:
                choice["content_filter_results"] = {}
        items.append(item)
    prompt_filter = {
        "choices": [],
        "created": 0,
        "id": "",
        "model": "",
        "object": "",
        "prompt_filter_results": [
            {
                "prompt_index": 0,
                "content_filter_results": {**safe, "jailbreak": {"filtered": False, "detected": False}},
            }
        ],
    }
    items.insert(0, prompt_filter)
    body = request("gpt-4o", "Weather in Seattle?", [GET_WEATHER])
    del body["model"]  # Azure takes the deployment from the URL
    return synthesize(
        "azure-prompt-filter",
        DIALECT,
        url="https://contoso-eastus2.openai.azure.com/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21",
        body=body,
        events=items,
        provenance="synthesized: Azure OpenAI deployment, prompt_filter_results chunk first",
        request_headers=SDK_HEADERS,
        response_headers={
            "date": "Tue, 12 Aug 2025 12:40:02 GMT",
            "apim-request-id": str(uuid.UUID(int=s.rng.getrandbits(128), version=4)),
            "x-ms-region": "East US 2",
            "x-ms-deployment-name": "gpt-4o",
            "azureml-model-session": "d215-20250801084519",
        },
        reads=[700, 129],
        offsets_ms=30,
    )


def groq_whole_calls() -> Cassette:
    """Groq: each parallel call whole in one chunk, every one at its own index; usage in `x_groq`."""
    rng = random.Random("groq-whole-calls")
    ids = Ids(rng)
    envelope = {
        "id": "chatcmpl-" + str(uuid.UUID(int=rng.getrandbits(128), version=4)),
        "object": "chat.completion.chunk",
        "created": 1755015000,
        "model": "llama-3.3-70b-versatile",
        "system_fingerprint": "fp_3f3b593e33",
    }
    x_groq = {"id": "req_01k2" + ids.alnum(22).lower()}

    def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return {**envelope, "choices": [choice], **extra}

    items: list[Any] = [chunk({"role": "assistant", "content": None}, x_groq=x_groq)]
    for index, city in enumerate(("Paris", "Lyon")):
        call = {"id": "call_" + ids.alnum(4).lower(), "type": "function", "index": index}
        call["function"] = {"name": "get_weather", "arguments": json.dumps({"city": city})}
        items.append(chunk({"tool_calls": [call]}))
    usage = {"queue_time": 0.05, "prompt_tokens": 301, "prompt_time": 0.021, "completion_tokens": 40}
    usage.update(completion_time=0.09, total_tokens=341, total_time=0.111)
    items.append(chunk({}, "tool_calls", x_groq={"id": x_groq["id"], "usage": usage}))
    items.append(DONE)
    body = request("llama-3.3-70b-versatile", "Weather in Paris and Lyon?", [GET_WEATHER])
    del body["stream_options"]
    return synthesize(
        "groq-whole-calls",
        DIALECT,
        url="https://api.groq.com/openai/v1/chat/completions",
        body=body,
        events=items,
        provenance="synthesized: Groq, each parallel call whole in one chunk",
        request_headers=SDK_HEADERS,
        response_headers={
            "date": "Tue, 12 Aug 2025 13:00:00 GMT",
            "server": "cloudflare",
            "x-groq-region": "dls",
        },
        offsets_ms=12,
    )


# -- custom (freeform) tools --------------------------------------------------------------------

RUN_SHELL = {
    "type": "custom",
    "custom": {
        "name": "run_shell",
        "description": "Run one POSIX shell command line in the workspace; the input is the command itself.",
        "format": {"type": "text"},
    },
}
# Freeform input: not JSON, with quotes, a backslash and a newline, so its JSON string on the wire
# holds escapes a split can fall inside.
SHELL_INPUT = 'grep -rn "TODO\\|FIXME" src/ | wc -l\necho "done: $?"'


def custom_tool() -> Cassette:
    """A custom (freeform) tool call: `type: custom`, its raw input in `custom.input` pieces, the
    other members present as `null` (openai/openai-python#2530, openai/openai-openapi#576)."""
    s = OpenAIStream("custom-tool", "gpt-5-2025-08-07", "fp_6d1bd9a6a5")
    call_id = s.ids.call()
    header = {
        "index": 0,
        "id": call_id,
        "type": "custom",
        "function": None,
        "custom": {"name": "run_shell", "input": ""},
    }
    s.role(content=None, tool_calls=[header])
    for piece in tokens(SHELL_INPUT):
        entry = {"index": 0, "id": None, "type": None, "function": None, "custom": {"input": piece}}
        s.chunk({"tool_calls": [entry]})
    s.finish("tool_calls", 142, 31)
    body = request("gpt-5", "How many TODO or FIXME markers are left under src/?", [RUN_SHELL])
    provenance = (
        "synthesized: api.openai.com gpt-5, one custom (freeform) tool call whose input is a shell "
        "line, not JSON; the streamed shape is reported in openai/openai-python#2530 and "
        "openai/openai-openapi#576 (not in the chunk schema), the call's shape is "
        "platform.openai.com/docs/guides/function-calling#custom-tools"
    )
    return openai_cassette("custom-tool", s, body, provenance, offsets_ms=24.0)


CASSETTES = {
    "single-call": single_call,
    "parallel-2": parallel_2,
    "parallel-3-same-function": parallel_3_same_function,
    "no-arguments": no_arguments,
    "text-then-call": text_then_call,
    "cut-mid-arguments": cut_mid_arguments,
    "openrouter-text-between-calls": openrouter_text_between_calls,
    "deepseek-reasoning-content": deepseek_reasoning_content,
    "glm5-openrouter-idless-continuation": glm5_openrouter_idless_continuation,
    "vllm-same-index-fragments-first-delta": vllm_same_index_fragments_first_delta,
    "litellm-bridge-parallel-index0": litellm_bridge_parallel_index0,
    "azure-prompt-filter": azure_prompt_filter,
    "groq-whole-calls": groq_whole_calls,
    "custom-tool": custom_tool,
    "gemini-compat-thought-signature": gemini_compat_thought_signature,
    "vllm-reasoning-field": vllm_reasoning_field,
}


def main(out: Path = OUT) -> list[Path]:
    """Write every cassette of this dialect into `out`; the paths written."""
    return [save(build(), out / f"{name}.yaml") for name, build in CASSETTES.items()]


if __name__ == "__main__":
    for path in main():
        print(path.relative_to(ROOT))
