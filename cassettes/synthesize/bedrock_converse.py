"""Synthesize the bundled Bedrock ConverseStream cassettes into `cassettes/bedrock-converse/`.

Run from the repo root: `python cassettes/synthesize/bedrock_converse.py`. Output is deterministic
(ids, padding and timings come from a generator seeded with the cassette name). The streams follow
real ConverseStream recordings of Claude on Bedrock: eventstream frames with `:event-type`,
`:content-type`, `:message-type` headers; compact payloads with keys in alphabetical order and
the random-length `p` padding; `tooluse_` ids; text and reasoning blocks without a
`contentBlockStart`; an empty first `toolUse.input`; `messageStop`, then `metadata` with usage.
Each expected outcome is the reference accumulator's, checked by hand in
`tests/cassettes/test_corpus_anthropic_bedrock.py`.
"""

from __future__ import annotations

import json
import random
import sys
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if __name__ == "__main__":
    sys.path[0] = str(ROOT)  # run as a script: import the harness from this checkout

from harness.cassettes.format import Cassette, save  # noqa: E402
from harness.wire.dialects.bedrock_converse import exception_event, padding  # noqa: E402
from harness.wire.synthesis import synthesize  # noqa: E402

REGION = "us-east-1"
OUT = ROOT / "cassettes" / "bedrock-converse"
ID_ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-_"

Item = Any  # an (event_name, payload) pair, or a WireEvent for an exception frame


def url(model_id: str) -> str:
    # botocore percent-encodes the model id in the path, so `:0` goes out as `%3A0`.
    return (
        f"https://bedrock-runtime.{REGION}.amazonaws.com/model/{model_id.replace(':', '%3A')}/converse-stream"
    )


class Stream:
    """Builds one ConverseStream response's `(event_type, payload)` pairs."""

    def __init__(self, name: str) -> None:
        self.rng = random.Random(name)
        self.items: list[Item] = []

    def pad(self) -> str:
        return padding(self.rng.randint(1, 62))

    def ident(self) -> str:
        return "tooluse_" + "".join(self.rng.choice(ID_ALPHABET) for _ in range(22))

    def add(self, name: str, payload: dict[str, Any]) -> None:
        # Bedrock writes payload keys in alphabetical order, the padding `p` among them.
        payload["p"] = self.pad()
        self.items.append((name, dict(sorted(payload.items()))))

    def start(self) -> Stream:
        self.add("messageStart", {"role": "assistant"})
        return self

    def delta(self, index: int, delta: dict[str, Any]) -> None:
        self.add("contentBlockDelta", {"contentBlockIndex": index, "delta": delta})

    def stop(self, index: int) -> None:
        self.add("contentBlockStop", {"contentBlockIndex": index})

    def text(self, index: int, *pieces: str) -> Stream:
        for piece in pieces:
            self.delta(index, {"text": piece})
        self.stop(index)
        return self

    def reasoning(self, index: int, *pieces: str) -> Stream:
        for piece in pieces:
            self.delta(index, {"reasoningContent": {"text": piece}})
        signature = "".join(self.rng.choice(ID_ALPHABET[:62] + "+/") for _ in range(300))
        self.delta(index, {"reasoningContent": {"signature": "Eq" + signature + "GAE="}})
        self.stop(index)
        return self

    def tool_start(self, index: int, call_id: str, name: str) -> None:
        start = {"toolUse": {"name": name, "toolUseId": call_id}}
        self.add("contentBlockStart", {"contentBlockIndex": index, "start": start})
        self.args(index, "")

    def args(self, index: int, piece: str) -> None:
        self.delta(index, {"toolUse": {"input": piece}})

    def tool(self, index: int, call_id: str, name: str, arguments: dict[str, Any]) -> Stream:
        self.tool_start(index, call_id, name)
        text, pos = json.dumps(arguments, ensure_ascii=False), 0
        while pos < len(text):
            size = self.rng.randint(3, 14)
            self.args(index, text[pos : pos + size])
            pos += size
        self.stop(index)
        return self

    def finish(self, reason: str, input_tokens: int, output_tokens: int) -> list[Item]:
        self.add("messageStop", {"stopReason": reason})
        usage = {"inputTokens": input_tokens, "outputTokens": output_tokens}
        usage["totalTokens"] = input_tokens + output_tokens
        self.add("metadata", {"metrics": {"latencyMs": self.rng.randint(900, 4200)}, "usage": usage})
        return self.items


def tool(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    schema = {"type": "object", "properties": properties, "required": required}
    return {"toolSpec": {"name": name, "description": description, "inputSchema": {"json": schema}}}


WEATHER = tool(
    "get_weather",
    "Get the current weather in a given location",
    {
        "location": {"type": "string", "description": "The city and state, e.g. Seattle, WA"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
    },
    ["location"],
)
READ_FILE = tool("read_file", "Read a text file from the workspace", {"path": {"type": "string"}}, ["path"])
SEARCH_TEXT = tool(
    "search_text", "Search the workspace for a string", {"query": {"type": "string"}}, ["query"]
)
RUN_SQL = tool(
    "run_sql",
    "Run a read-only SQL query against the analytics warehouse",
    {"sql": {"type": "string"}, "limit": {"type": "integer"}},
    ["sql"],
)


def request(prompt: str, tools: list[dict[str, Any]], max_tokens: int = 1024, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"messages": [{"role": "user", "content": [{"text": prompt}]}]}
    body["inferenceConfig"] = {"maxTokens": max_tokens}
    body["toolConfig"] = {"tools": tools}
    body.update(extra)
    return body


def request_headers(stream: Stream) -> dict[str, str]:
    return {
        "user-agent": "Boto3/1.40.5 md/Botocore#1.44.5 ua/2.1 os/linux lang/python#3.11.9",
        "x-amz-date": "20250911T101530Z",
        "amz-sdk-invocation-id": str(uuid.UUID(int=stream.rng.getrandbits(128), version=4)),
        "amz-sdk-request": "attempt=1; max=5",
    }


def response_headers(stream: Stream) -> dict[str, str]:
    return {
        "date": "Thu, 11 Sep 2025 10:15:31 GMT",
        "transfer-encoding": "chunked",
        "connection": "keep-alive",
        "x-amzn-requestid": str(uuid.UUID(int=stream.rng.getrandbits(128), version=4)),
    }


def make(
    name: str,
    model_id: str,
    stream: Stream,
    items: list[Item],
    body: dict[str, Any],
    provenance: str,
    *,
    reads: list[int] | None = None,
    offsets_ms: float = 30.0,
) -> Cassette:
    return synthesize(
        name,
        "bedrock-converse",
        url=url(model_id),
        body=body,
        events=items,
        provenance=provenance,
        reads=reads,
        request_headers=request_headers(stream),
        response_headers=response_headers(stream),
        offsets_ms=offsets_ms,
    )


SONNET_4 = "us.anthropic.claude-sonnet-4-20250514-v1:0"
SONNET_37 = "us.anthropic.claude-3-7-sonnet-20250219-v1:0"
HAIKU_35 = "anthropic.claude-3-5-haiku-20241022-v1:0"


def single_call() -> Cassette:
    name = "bedrock-converse-single-call"
    s = Stream(name).start()
    s.tool(0, s.ident(), "get_weather", {"location": "Seattle, WA", "unit": "fahrenheit"})
    body = request("What's the weather in Seattle?", [WEATHER])
    body["toolConfig"]["toolChoice"] = {"any": {}}
    return make(
        name,
        HAIKU_35,
        s,
        s.finish("tool_use", 389, 57),
        body,
        "Bedrock ConverseStream, Claude 3.5 Haiku: one toolUse block at index 0 (toolChoice any)",
        reads=[150, 96, 310],
        offsets_ms=22.0,
    )


def text_then_call() -> Cassette:
    name = "bedrock-converse-text-then-call"
    s = Stream(name).start()
    s.text(0, "I'll query", " the warehouse for last", " week's signups.")
    s.tool(
        1,
        s.ident(),
        "run_sql",
        {"sql": "SELECT count(*) FROM signups WHERE day >= current_date - 7", "limit": 1},
    )
    body = request("How many signups did we get last week?", [RUN_SQL])
    return make(
        name,
        SONNET_4,
        s,
        s.finish("tool_use", 512, 98),
        body,
        "Bedrock ConverseStream, Claude Sonnet 4: text deltas at index 0 with no contentBlockStart (C5), "
        "then a toolUse block at index 1",
        offsets_ms=35.0,
    )


def seed_000_parallel() -> Cassette:
    name = "bedrock-converse-seed000-parallel-read-search"
    s = Stream(name).start()
    s.text(0, "I'll read the file and search for", ' "bar" in parallel.')
    s.tool(1, s.ident(), "read_file", {"path": "foo.txt"})
    s.tool(2, s.ident(), "search_text", {"query": "bar"})
    body = request('Read foo.txt and search the workspace for "bar".', [READ_FILE, SEARCH_TEXT])
    return make(
        name,
        SONNET_37,
        s,
        s.finish("tool_use", 655, 112),
        body,
        "Seed 000 (langchain#34807): Claude on Bedrock calls read_file and search_text in parallel, "
        "two toolUse blocks with distinct tooluse_ ids",
        reads=[512, 64, 200, 1024],
        offsets_ms=15.0,
    )


def reasoning_then_call() -> Cassette:
    name = "bedrock-converse-reasoning-then-call"
    s = Stream(name).start()
    s.reasoning(
        0,
        "The user asks for the weather in Oslo.",
        " get_weather takes a location and a unit;",
        " Norway uses celsius.",
    )
    s.text(1, "Let me check Oslo's weather.")
    s.tool(2, s.ident(), "get_weather", {"location": "Oslo, Norway", "unit": "celsius"})
    body = request(
        "Is it cold in Oslo right now?",
        [WEATHER],
        max_tokens=4096,
        additionalModelRequestFields={"thinking": {"type": "enabled", "budget_tokens": 2048}},
    )
    return make(
        name,
        SONNET_37,
        s,
        s.finish("tool_use", 720, 241),
        body,
        "Bedrock ConverseStream, Claude 3.7 Sonnet with thinking: reasoningContent text deltas and a "
        "signature at index 0 (no contentBlockStart), text at 1, toolUse at 2",
        reads=[333, 777, 128],
        offsets_ms=28.0,
    )


def exception_mid_call() -> Cassette:
    name = "bedrock-converse-exception-mid-call"
    s = Stream(name).start()
    s.tool(0, s.ident(), "read_file", {"path": "README.md"})
    s.tool_start(1, s.ident(), "search_text")
    s.args(1, '{"query": "inst')
    s.items.append(
        exception_event(
            "modelStreamErrorException",
            "Model stream error: the model produced an invalid stream, please retry your request",
        ).wire
    )
    body = request("Open the README and search for install steps.", [READ_FILE, SEARCH_TEXT])
    return make(
        name,
        SONNET_4,
        s,
        s.items,
        body,
        "Bedrock ConverseStream: a modelStreamErrorException frame after a partial second call, no "
        "messageStop (D8); only the first, stopped call is real",
        reads=[260, 90],
    )


BUILDERS = (single_call, text_then_call, seed_000_parallel, reasoning_then_call, exception_mid_call)


def cassettes() -> list[Cassette]:
    return [build() for build in BUILDERS]


def main() -> None:
    for cassette in cassettes():
        path = save(cassette, OUT / f"{cassette.name.removeprefix('bedrock-converse-')}.yaml")
        print(path.relative_to(ROOT))


if __name__ == "__main__":
    main()
