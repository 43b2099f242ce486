"""Synthesize the bundled OpenAI Responses cassettes into `cassettes/openai-responses/`.

Run from the repo root: `python cassettes/synthesize/openai_responses.py`. Output is deterministic (ids,
padding and timings come from a generator seeded with the cassette name). The streams follow real
`/v1/responses` recordings: `event:` names repeated in `type`, keys after `type` in alphabetical
order, a `sequence_number` from 0, `resp_`/`msg_`/`rs_`/`fc_` + hex item ids and `call_` + 24
characters call ids, `obfuscation` on deltas, `response.created` and `response.in_progress` with the
whole response object, `output_item.added` / argument deltas / `function_call_arguments.done` /
`output_item.done`, then `response.completed` with the output and usage; plus servers that send
the arguments only in `.done` (E1) or interleave parallel calls (E7). Each expected outcome is the
reference accumulator's, checked by hand in `tests/cassettes/test_corpus_openai.py`.
"""

from __future__ import annotations

import copy
import random
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if __name__ == "__main__":
    sys.path[0] = str(ROOT)  # run as a script: import the harness from this checkout

from harness.cassettes.corpus import declare  # noqa: E402
from harness.cassettes.format import Cassette, save  # noqa: E402
from harness.wire.synthesis import synthesize  # noqa: E402

DIALECT = "openai-responses"
OPENAI_URL = "https://api.openai.com/v1/responses"
OUT = ROOT / "cassettes" / DIALECT
ALNUM = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
HEX = "0123456789abcdef"

# Reused from the chat script's vocabulary, in the Responses tool shape (flat, `strict`).


def tool(name: str, description: str, properties: dict[str, Any]) -> dict[str, Any]:
    parameters = {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }
    return {
        "type": "function",
        "name": name,
        "description": description,
        "parameters": parameters,
        "strict": True,
    }


GET_WEATHER = tool("get_weather", "Get the current weather for a city.", {"city": {"type": "string"}})
GET_TIME = tool("get_time", "Current local time in an IANA time zone.", {"timezone": {"type": "string"}})
GET_CURRENT_TIME = tool("get_current_time", "The current UTC time. Takes no arguments.", {})
READ_FILE = tool("read_file", "Read a text file from the workspace.", {"path": {"type": "string"}})
SEARCH_TEXT = tool("search_text", "Search the workspace for a string.", {"query": {"type": "string"}})

SDK_HEADERS = {
    "user-agent": "OpenAI/Python 1.99.9",
    "x-stainless-lang": "python",
    "x-stainless-package-version": "1.99.9",
    "x-stainless-runtime": "CPython",
    "x-stainless-async": "false",
}


def request(model: str, user: str, tools: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {
        "model": model,
        "input": [{"role": "user", "content": user}],
        "tools": tools,
        "stream": True,
        **extra,
    }


def openai_headers(rng: random.Random) -> dict[str, str]:
    """What api.openai.com answers a stream with (no cookies, no organization or project id)."""
    ms = rng.randint(150, 700)
    return {
        "date": "Wed, 13 Aug 2025 08:12:40 GMT",
        "transfer-encoding": "chunked",
        "connection": "keep-alive",
        "openai-processing-ms": str(ms),
        "openai-version": "2020-10-01",
        "x-envoy-upstream-service-time": str(ms + rng.randint(2, 20)),
        "x-request-id": "req_" + "".join(rng.choice(HEX) for _ in range(32)),
        "strict-transport-security": "max-age=31536000; includeSubDomains; preload",
        "cf-cache-status": "DYNAMIC",
        "x-content-type-options": "nosniff",
        "server": "cloudflare",
        "cf-ray": "".join(rng.choice(HEX) for _ in range(16)) + "-AMS",
        "alt-svc": 'h3=":443"; ma=86400',
    }


def pieces(text: str, rng: random.Random) -> list[str]:
    """Cut text in token-sized pieces of 1 to 6 characters."""
    out, pos = [], 0
    while pos < len(text):
        size = rng.randint(1, 6)
        out.append(text[pos : pos + size])
        pos += size
    return out


class ResponseStream:
    """The `(event, payload)` pairs of one streamed response, numbered as the API numbers them."""

    def __init__(self, name: str, model: str, tools: list[dict[str, Any]], *, obfuscate: bool = True) -> None:
        self.rng = random.Random(name)
        self.obfuscate = obfuscate
        self.items: list[tuple[str, dict[str, Any]]] = []
        self.output: list[dict[str, Any]] = []
        self.response: dict[str, Any] = {
            "id": "resp_" + self.hex(50),
            "object": "response",
            "created_at": 1755072760 + self.rng.randint(0, 90000),
            "status": "in_progress",
            "background": False,
            "error": None,
            "incomplete_details": None,
            "instructions": None,
            "max_output_tokens": None,
            "max_tool_calls": None,
            "model": model,
            "output": [],
            "parallel_tool_calls": True,
            "previous_response_id": None,
            "prompt_cache_key": None,
            "reasoning": {"effort": None, "summary": None},
            "safety_identifier": None,
            "service_tier": "auto",
            "store": True,
            "temperature": 1.0,
            "text": {"format": {"type": "text"}, "verbosity": "medium"},
            "tool_choice": "auto",
            "tools": tools,
            "top_logprobs": 0,
            "top_p": 1.0,
            "truncation": "disabled",
            "usage": None,
            "user": None,
            "metadata": {},
        }

    def hex(self, length: int) -> str:
        return "".join(self.rng.choice(HEX) for _ in range(length))

    def emit(self, kind: str, **fields: Any) -> None:
        if self.obfuscate and kind.endswith(".delta"):
            fields["obfuscation"] = "".join(self.rng.choice(ALNUM) for _ in range(self.rng.randint(2, 14)))
        fields["sequence_number"] = len(self.items)
        self.items.append((kind, {"type": kind, **dict(sorted(fields.items()))}))

    def start(self) -> ResponseStream:
        self.emit("response.created", response=copy.deepcopy(self.response))
        self.emit("response.in_progress", response=copy.deepcopy(self.response))
        return self

    def reasoning(self, summary: str, encrypted: str | None = None) -> None:
        index, item_id = len(self.output), "rs_" + self.hex(50)
        item: dict[str, Any] = {"id": item_id, "type": "reasoning", "summary": []}
        added = copy.deepcopy(item)
        if encrypted is not None:  # `.added` may carry it incomplete; `.done` has the whole
            added["encrypted_content"] = encrypted[: len(encrypted) // 3]
            item["encrypted_content"] = encrypted
        self.emit("response.output_item.added", item=added, output_index=index)
        part = {"type": "summary_text", "text": ""}
        self.emit(
            "response.reasoning_summary_part.added",
            item_id=item_id,
            output_index=index,
            part=part,
            summary_index=0,
        )
        for piece in pieces(summary, self.rng):
            self.emit(
                "response.reasoning_summary_text.delta",
                delta=piece,
                item_id=item_id,
                output_index=index,
                summary_index=0,
            )
        self.emit(
            "response.reasoning_summary_text.done",
            item_id=item_id,
            output_index=index,
            summary_index=0,
            text=summary,
        )
        done_part = {"type": "summary_text", "text": summary}
        self.emit(
            "response.reasoning_summary_part.done",
            item_id=item_id,
            output_index=index,
            part=done_part,
            summary_index=0,
        )
        item["summary"] = [done_part]
        self.emit("response.output_item.done", item=item, output_index=index)
        self.output.append(item)

    def message(self, text: str) -> None:
        index, item_id = len(self.output), "msg_" + self.hex(50)
        item: dict[str, Any] = {
            "id": item_id,
            "type": "message",
            "status": "in_progress",
            "content": [],
            "role": "assistant",
        }
        self.emit("response.output_item.added", item=copy.deepcopy(item), output_index=index)
        part: dict[str, Any] = {"type": "output_text", "annotations": [], "logprobs": [], "text": ""}
        self.emit(
            "response.content_part.added", content_index=0, item_id=item_id, output_index=index, part=part
        )
        for piece in pieces(text, self.rng):
            self.emit(
                "response.output_text.delta",
                content_index=0,
                delta=piece,
                item_id=item_id,
                logprobs=[],
                output_index=index,
            )
        self.emit(
            "response.output_text.done",
            content_index=0,
            item_id=item_id,
            logprobs=[],
            output_index=index,
            text=text,
        )
        part = {**part, "text": text}
        self.emit(
            "response.content_part.done", content_index=0, item_id=item_id, output_index=index, part=part
        )
        item = {**item, "status": "completed", "content": [part]}
        self.emit("response.output_item.done", item=item, output_index=index)
        self.output.append(item)

    def add_call(self, name: str) -> tuple[int, dict[str, Any]]:
        """`output_item.added` for a function call; its output index and item."""
        index = len(self.output)
        call_id = "call_" + "".join(self.rng.choice(ALNUM) for _ in range(24))
        item = {"id": "fc_" + self.hex(50), "type": "function_call", "status": "in_progress", "arguments": ""}
        item.update(call_id=call_id, name=name)
        self.emit("response.output_item.added", item=copy.deepcopy(item), output_index=index)
        self.output.append(item)
        return index, item

    def deltas(self, index: int, item: dict[str, Any], args: str) -> None:
        for piece in pieces(args, self.rng):
            self.emit(
                "response.function_call_arguments.delta", delta=piece, item_id=item["id"], output_index=index
            )

    def end_call(self, index: int, item: dict[str, Any], args: str) -> None:
        self.emit(
            "response.function_call_arguments.done", arguments=args, item_id=item["id"], output_index=index
        )
        item.update(status="completed", arguments=args)
        self.emit("response.output_item.done", item=copy.deepcopy(item), output_index=index)

    def call(self, name: str, args: str) -> None:
        index, item = self.add_call(name)
        self.deltas(index, item, args)
        self.end_call(index, item, args)

    def server_item(self, kind: str, prefix: str, steps: list[str], done: dict[str, Any]) -> None:
        """An item of a tool the API runs itself: `output_item.added`, its progress events
        (`response.<kind>.<step>`, or a `(event, fields)` pair), then `output_item.done` with `done`."""
        index, item_id = len(self.output), prefix + self.hex(50)
        item: dict[str, Any] = {"id": item_id, "type": kind, "status": "in_progress"}
        self.emit("response.output_item.added", item=copy.deepcopy(item), output_index=index)
        for step in steps:
            self.emit(f"response.{kind}.{step}", item_id=item_id, output_index=index)
        item = {**item, **done, "status": done.get("status", "completed")}
        self.emit("response.output_item.done", item=copy.deepcopy(item), output_index=index)
        self.output.append(item)

    # -- custom tools, MCP and client items beyond function calls ---------------------------------

    def custom_call(self, name: str, text: str) -> None:
        """A `custom_tool_call` item: its raw input in `custom_tool_call_input.delta` pieces, then
        `.done` with the whole input (openai-python `types/responses/response_custom_tool_call*.py`)."""
        index = len(self.output)
        call_id = "call_" + "".join(self.rng.choice(ALNUM) for _ in range(24))
        item = {"id": "ctc_" + self.hex(50), "type": "custom_tool_call", "status": "in_progress"}
        item.update(call_id=call_id, input="", name=name)
        self.emit("response.output_item.added", item=copy.deepcopy(item), output_index=index)
        for piece in pieces(text, self.rng):
            self.emit(
                "response.custom_tool_call_input.delta", delta=piece, item_id=item["id"], output_index=index
            )
        self.emit("response.custom_tool_call_input.done", input=text, item_id=item["id"], output_index=index)
        item.update(status="completed", input=text)
        self.emit("response.output_item.done", item=copy.deepcopy(item), output_index=index)
        self.output.append(item)

    def mcp_list_tools(self, server: str, tools: list[dict[str, Any]]) -> None:
        """An `mcp_list_tools` item: the tools the hosted MCP server offers (no call)."""
        index, item_id = len(self.output), "mcpl_" + self.hex(48)
        item: dict[str, Any] = {"id": item_id, "type": "mcp_list_tools", "server_label": server, "tools": []}
        self.emit("response.output_item.added", item=copy.deepcopy(item), output_index=index)
        self.emit("response.mcp_list_tools.in_progress", item_id=item_id, output_index=index)
        self.emit("response.mcp_list_tools.completed", item_id=item_id, output_index=index)
        item = {**item, "tools": tools, "error": None}
        self.emit("response.output_item.done", item=copy.deepcopy(item), output_index=index)
        self.output.append(item)

    def mcp_call(self, server: str, name: str, arguments: str, output: str) -> None:
        """An `mcp_call` item (run by OpenAI) whose arguments stream through
        `response.mcp_call_arguments.delta` (openai-python `response_mcp_call_arguments_*_event.py`)."""
        index, item_id = len(self.output), "mcp_" + self.hex(50)
        item: dict[str, Any] = {"id": item_id, "type": "mcp_call", "status": "in_progress"}
        item.update(server_label=server, name=name, arguments="")
        self.emit("response.output_item.added", item=copy.deepcopy(item), output_index=index)
        self.emit("response.mcp_call.in_progress", item_id=item_id, output_index=index)
        for piece in pieces(arguments, self.rng):
            self.emit("response.mcp_call_arguments.delta", delta=piece, item_id=item_id, output_index=index)
        self.emit(
            "response.mcp_call_arguments.done", arguments=arguments, item_id=item_id, output_index=index
        )
        self.emit("response.mcp_call.completed", item_id=item_id, output_index=index)
        item.update(
            status="completed", arguments=arguments, output=output, error=None, approval_request_id=None
        )
        self.emit("response.output_item.done", item=copy.deepcopy(item), output_index=index)
        self.output.append(item)

    def shell_call(self, commands: list[str], timeout_ms: int) -> None:
        """A `shell_call` item whose commands stream: per command `response.shell_call_command.added`,
        `.delta` pieces and `.done` (keyed by `output_index` and `command_index`, no item id), then
        `output_item.done` with the whole action (the OpenAI OpenAPI document 2.3.0's
        ResponseShellCallCommandAddedStreamingEvent, *DeltaStreamingEvent, *Done)."""
        index = len(self.output)
        call_id = "call_" + "".join(self.rng.choice(ALNUM) for _ in range(24))
        item: dict[str, Any] = {"id": "sh_" + self.hex(50), "type": "shell_call", "status": "in_progress"}
        action: dict[str, Any] = {"commands": [], "timeout_ms": timeout_ms}
        item.update(call_id=call_id, action=action)
        self.emit("response.output_item.added", item=copy.deepcopy(item), output_index=index)
        for number, command in enumerate(commands):
            at = {"command_index": number, "output_index": index}
            self.emit("response.shell_call_command.added", command="", **at)
            for piece in pieces(command, self.rng):
                self.emit("response.shell_call_command.delta", delta=piece, **at)
            self.emit("response.shell_call_command.done", command=command, **at)
        item.update(status="completed", action={**action, "commands": list(commands)})
        self.emit("response.output_item.done", item=copy.deepcopy(item), output_index=index)
        self.output.append(item)

    def whole_item(self, kind: str, prefix: str, fields: dict[str, Any]) -> None:
        """An item that arrives whole: `output_item.added`, then `output_item.done` (an
        `mcp_approval_request`; an `apply_patch_call`, which has no intermediate events)."""
        index = len(self.output)
        item: dict[str, Any] = {"id": prefix + self.hex(50), "type": kind, **fields}
        added = {**item, "status": "in_progress"} if "status" in item else item
        self.emit("response.output_item.added", item=copy.deepcopy(added), output_index=index)
        self.emit("response.output_item.done", item=copy.deepcopy(item), output_index=index)
        self.output.append(item)

    def complete(self, input_tokens: int, output_tokens: int, reasoning_tokens: int = 0) -> None:
        response = {
            **copy.deepcopy(self.response),
            "status": "completed",
            "output": copy.deepcopy(self.output),
        }
        response["usage"] = {
            "input_tokens": input_tokens,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": output_tokens,
            "output_tokens_details": {"reasoning_tokens": reasoning_tokens},
            "total_tokens": input_tokens + output_tokens,
        }
        self.emit("response.completed", response=response)


def cassette(name: str, s: ResponseStream, body: dict[str, Any], provenance: str, **options: Any) -> Cassette:
    options.setdefault("url", OPENAI_URL)
    options.setdefault("request_headers", SDK_HEADERS)
    options.setdefault("response_headers", openai_headers(s.rng))
    return synthesize(name, DIALECT, body=body, events=s.items, provenance=provenance, **options)


# -- the cassettes ------------------------------------------------------------------------------


def single_call() -> Cassette:
    s = ResponseStream("single-call", "gpt-4.1-2025-04-14", [GET_WEATHER]).start()
    s.call("get_weather", '{"city":"Paris"}')
    s.complete(64, 17)
    body = request("gpt-4.1", "What's the weather in Paris?", [GET_WEATHER])
    return cassette(
        "single-call", s, body, "synthesized: api.openai.com /v1/responses gpt-4.1, one call", offsets_ms=19
    )


def parallel_2() -> Cassette:
    tools = [GET_WEATHER, GET_TIME]
    s = ResponseStream("parallel-2", "gpt-4.1-2025-04-14", tools).start()
    s.call("get_weather", '{"city":"Paris"}')
    s.call("get_weather", '{"city":"Tokyo"}')
    s.complete(88, 46)
    body = request("gpt-4.1", "Weather in Paris and in Tokyo?", tools, parallel_tool_calls=True)
    provenance = "synthesized: api.openai.com /v1/responses, two parallel calls to the same function"
    return cassette("parallel-2", s, body, provenance, reads=[610, 1400, 95], offsets_ms=35)


def text_then_call() -> Cassette:
    tools = [READ_FILE, SEARCH_TEXT]
    s = ResponseStream("text-then-call", "gpt-4.1-2025-04-14", tools).start()
    s.message("Let me open the install guide first.")
    s.call("read_file", '{"path":"docs/install.md"}')
    s.complete(140, 38)
    body = request("gpt-4.1", "How do I install this project?", tools)
    provenance = "synthesized: api.openai.com /v1/responses, a message item before the call"
    return cassette("text-then-call", s, body, provenance, reads=[2048, 333, 77], offsets_ms=22)


def no_arguments() -> Cassette:
    s = ResponseStream("no-arguments", "gpt-4.1-mini-2025-04-14", [GET_CURRENT_TIME]).start()
    s.call("get_current_time", "{}")
    s.complete(52, 11)
    body = request("gpt-4.1-mini", "What time is it in UTC?", [GET_CURRENT_TIME])
    return cassette(
        "no-arguments", s, body, "synthesized: api.openai.com /v1/responses, a tool without parameters"
    )


def reasoning_then_call() -> Cassette:
    s = ResponseStream("reasoning-then-call", "gpt-5-2025-08-07", [GET_WEATHER])
    s.response["reasoning"] = {"effort": "medium", "summary": "detailed"}
    s.start()
    s.reasoning(
        "**Checking the weather**\n\nThe user wants current conditions in Oslo, so I'll call get_weather."
    )
    s.call("get_weather", '{"city":"Oslo"}')
    s.complete(96, 210, reasoning_tokens=192)
    body = request(
        "gpt-5",
        "Is it raining in Oslo?",
        [GET_WEATHER],
        reasoning={"effort": "medium", "summary": "detailed"},
    )
    provenance = (
        "synthesized: api.openai.com /v1/responses gpt-5, a reasoning item with a summary before the call"
    )
    return cassette("reasoning-then-call", s, body, provenance, reads=[1024, 64, 4096], offsets_ms=41)


def reasoning_encrypted_parallel() -> Cassette:
    s = ResponseStream("reasoning-encrypted-parallel", "gpt-5-2025-08-07", [GET_WEATHER])
    s.response["reasoning"] = {"effort": "low", "summary": "auto"}
    s.response["store"] = False
    s.start()
    encrypted = "gAAAAABpH" + "".join(s.rng.choice(ALNUM + "-_") for _ in range(300)) + "=="
    s.reasoning("**Two cities**\n\nI'll look up Paris and Oslo in parallel.", encrypted)
    s.call("get_weather", '{"city":"Paris"}')
    s.call("get_weather", '{"city":"Oslo"}')
    s.complete(104, 236, reasoning_tokens=172)
    body = request(
        "gpt-5",
        "Weather in Paris and Oslo?",
        [GET_WEATHER],
        reasoning={"effort": "low", "summary": "auto"},
        store=False,
        include=["reasoning.encrypted_content"],
        parallel_tool_calls=True,
    )
    provenance = (
        "synthesized from the documented wire format (recipe thinking-parallel): store false, a "
        "reasoning item with summary deltas whose encrypted_content is cut short in "
        "output_item.added and whole in output_item.done, then two parallel function calls; the item "
        "goes back with its id and encrypted_content before the calls. Sources: openai-python "
        "types/responses/response_reasoning_item.py (use the encrypted_content of output_item.done; "
        "the one in output_item.added may be incomplete); developers.openai.com/api/docs/guides/"
        "reasoning (encrypted reasoning items, store false)"
    )
    return cassette(
        "reasoning-encrypted-parallel", s, body, provenance, reads=[900, 128, 4096], offsets_ms=38
    )


def llamacpp_interleaved_parallel() -> Cassette:
    """E7: a llama.cpp-style `/v1/responses` interleaving the argument deltas of two calls."""
    tools = [READ_FILE, SEARCH_TEXT]
    s = ResponseStream("llamacpp-interleaved-parallel", "qwen3-coder-30b-a3b", tools, obfuscate=False).start()
    calls = [
        (*s.add_call("read_file"), '{"path":"foo.txt"}'),
        (*s.add_call("search_text"), '{"query":"bar"}'),
    ]
    split = [pieces(args, s.rng) for _, _, args in calls]
    for step in range(max(len(p) for p in split)):
        for (index, item, _), parts in zip(calls, split, strict=True):
            if step < len(parts):
                s.emit(
                    "response.function_call_arguments.delta",
                    delta=parts[step],
                    item_id=item["id"],
                    output_index=index,
                )
    for index, item, args in calls:
        s.end_call(index, item, args)
    s.complete(230, 44)
    body = request("qwen3-coder", "Read foo.txt and search the workspace for bar.", tools)
    made = cassette(
        "llamacpp-interleaved-parallel",
        s,
        body,
        "synthesized: a llama.cpp-style server, argument deltas of two calls interleaved by output_index",
        url="http://127.0.0.1:8080/v1/responses",
        request_headers={},
        response_headers={"server": "llama.cpp", "keep-alive": "timeout=5, max=100"},
        reads=[128, 512],
        offsets_ms=7,
    )
    # Itself a documented deviation: its cases are quirks (docs/oracle.md).
    return declare(made, "quirk", "E7 items interleaved (llama.cpp)")


def args_only_in_done() -> Cassette:
    """E1: a gateway that sends no argument deltas, only `function_call_arguments.done`."""
    s = ResponseStream("args-only-in-done", "gpt-4.1-2025-04-14", [GET_TIME], obfuscate=False).start()
    index, item = s.add_call("get_time")
    s.end_call(index, item, '{"timezone":"America/New_York"}')
    s.complete(70, 15)
    body = request("gpt-4.1", "What time is it in New York?", [GET_TIME])
    made = cassette(
        "args-only-in-done",
        s,
        body,
        "synthesized: a Responses gateway relaying whole calls, arguments only in the .done events (E1)",
        url="http://localhost:3000/v1/responses",
        response_headers={"date": "Wed, 13 Aug 2025 09:00:00 GMT", "x-accel-buffering": "no"},
        offsets_ms=60,
    )
    # Itself a documented deviation: its cases are quirks (docs/oracle.md).
    return declare(made, "quirk", "E1 arguments only in the .done events (sub2api, docker-agent)")


def cut_mid_arguments() -> Cassette:
    s = ResponseStream("cut-mid-arguments", "gpt-4.1-2025-04-14", [READ_FILE, SEARCH_TEXT]).start()
    s.call("read_file", '{"path":"README.md"}')
    index, item = s.add_call("search_text")
    s.deltas(index, item, '{"query":"install')  # the connection drops mid-arguments
    body = request("gpt-4.1", "Read the README and search for install notes.", [READ_FILE, SEARCH_TEXT])
    out = cassette(
        "cut-mid-arguments",
        s,
        body,
        "synthesized: api.openai.com /v1/responses, cut during the second call's arguments",
        complete=False,
        error="peer closed connection without sending complete message body (incomplete chunked read)",
        reads=[700, 300],
        offsets_ms=30,
    )
    out.interactions[0].response.error_type = "RemoteProtocolError"
    return out


WEB_SEARCH = {"type": "web_search", "search_context_size": "medium", "user_location": None}
FILE_SEARCH = {"type": "file_search", "vector_store_ids": ["vs_68a1c0ffee"], "max_num_results": 5}
CODE_INTERPRETER = {"type": "code_interpreter", "container": {"type": "auto"}}
MCP_TOOL = {
    "type": "mcp",
    "server_label": "deepwiki",
    "server_url": "https://mcp.deepwiki.com/mcp",
    "require_approval": "never",
}


def web_search_then_call() -> Cassette:
    tools = [WEB_SEARCH, GET_TIME]
    s = ResponseStream("web-search-then-call", "gpt-4.1-2025-04-14", tools).start()
    action = {"type": "search", "query": "2028 Summer Olympics host city"}
    s.server_item("web_search_call", "ws_", ["in_progress", "searching", "completed"], {"action": action})
    s.message("The 2028 Summer Olympics are in Los Angeles. Let me get the local time there.")
    s.call("get_time", '{"timezone":"America/Los_Angeles"}')
    s.complete(1320, 71)
    body = request("gpt-4.1", "What time is it now in the next Summer Olympics' host city?", tools)
    provenance = (
        "synthesized: api.openai.com /v1/responses, a hosted web_search_call item (run by OpenAI), "
        "a message, then the one function call the client must run"
    )
    return cassette("web-search-then-call", s, body, provenance, reads=[900, 2400, 160], offsets_ms=55)


def hosted_tools() -> Cassette:
    tools = [FILE_SEARCH, CODE_INTERPRETER, MCP_TOOL]
    s = ResponseStream("hosted-tools", "gpt-4.1-2025-04-14", tools).start()
    queries = {"queries": ["quarterly revenue table", "Q3 revenue"], "results": None}
    s.server_item("file_search_call", "fs_", ["in_progress", "searching", "completed"], queries)
    code = "revenue = [4.1, 4.6, 5.3]\nprint(round(sum(revenue) / 3, 2))"
    container = "cntr_" + s.hex(48)
    steps = ["in_progress", "interpreting", "completed"]
    done = {"code": code, "container_id": container, "outputs": None}
    s.server_item("code_interpreter_call", "ci_", steps, done)
    mcp = {
        "server_label": "deepwiki",
        "name": "ask_question",
        "arguments": '{"repoName":"acme/ledger","question":"How is revenue rounded?"}',
        "output": "Revenue is rounded half-even to two decimals.",
        "error": None,
        "approval_request_id": None,
    }
    s.server_item("mcp_call", "mcp_", ["in_progress", "completed"], mcp)
    s.message("Average quarterly revenue is 4.67M, rounded half-even as the ledger does.")
    s.complete(2875, 164)
    body = request("gpt-4.1", "What is our average quarterly revenue, rounded the ledger's way?", tools)
    provenance = (
        "synthesized: api.openai.com /v1/responses, hosted tools only (file_search_call, "
        "code_interpreter_call, mcp_call items, all run by OpenAI) then a message; no client call"
    )
    return cassette("hosted-tools", s, body, provenance, reads=[1500, 700, 3000], offsets_ms=80)


# -- custom tools, MCP and client items beyond function calls ---------------------------------------

GREP_TOOL = {
    "type": "custom",
    "name": "run_shell",
    "description": "Run one POSIX shell command line in the workspace; the input is the command itself.",
    "format": {"type": "text"},
}
SHELL_INPUT = 'grep -rn "TODO\\|FIXME" src/ | wc -l\necho "done: $?"'


def custom_tool() -> Cassette:
    s = ResponseStream("custom-tool", "gpt-5-2025-08-07", [GREP_TOOL]).start()
    s.reasoning("Count the markers with grep, then report.")
    s.custom_call("run_shell", SHELL_INPUT)
    s.complete(231, 58, reasoning_tokens=24)
    body = request("gpt-5", "How many TODO or FIXME markers are left under src/?", [GREP_TOOL])
    provenance = (
        "synthesized: api.openai.com /v1/responses, a reasoning item then one custom_tool_call item "
        "whose raw input (a shell line, not JSON) streams through response.custom_tool_call_input.delta "
        "(openai-python types/responses/response_custom_tool_call_input_delta_event.py; a live capture "
        "of the shape in Oaklight/llm-rosetta#182)"
    )
    return cassette("custom-tool", s, body, provenance, reads=[700, 1600, 300], offsets_ms=40)


WIKI_TOOLS = [
    {
        "name": "ask_question",
        "input_schema": {
            "type": "object",
            "properties": {"repoName": {"type": "string"}, "question": {"type": "string"}},
            "required": ["repoName", "question"],
        },
        "description": "Ask a question about a GitHub repository.",
        "annotations": None,
    }
]


def mcp_streamed_arguments() -> Cassette:
    tools = [MCP_TOOL, GET_TIME]
    s = ResponseStream("mcp-streamed-arguments", "gpt-4.1-2025-04-14", tools).start()
    s.mcp_list_tools("deepwiki", WIKI_TOOLS)
    arguments = '{"repoName":"acme/ledger","question":"Which time zone stamps the ledger?"}'
    s.mcp_call("deepwiki", "ask_question", arguments, "Entries are stamped in Europe/Paris time.")
    s.message("The ledger is stamped in Paris time; checking the time there.")
    s.call("get_time", '{"timezone":"Europe/Paris"}')
    s.complete(1904, 96)
    body = request("gpt-4.1", "What time is it where our ledger is stamped?", tools)
    provenance = (
        "synthesized: api.openai.com /v1/responses, a hosted MCP server: mcp_list_tools, an mcp_call "
        "(run by OpenAI) whose arguments stream through response.mcp_call_arguments.delta, a message, "
        "then the one function call the client runs (openai-python types/responses/"
        "response_mcp_call_arguments_delta_event.py, response_output_item.py)"
    )
    return cassette("mcp-streamed-arguments", s, body, provenance, reads=[1100, 2600, 240], offsets_ms=50)


def mcp_approval_request() -> Cassette:
    tool = {**MCP_TOOL, "require_approval": "always"}
    s = ResponseStream("mcp-approval-request", "gpt-4.1-2025-04-14", [tool]).start()
    s.mcp_list_tools("deepwiki", WIKI_TOOLS)
    arguments = '{"repoName":"acme/ledger","question":"How is revenue rounded?"}'
    fields = {"server_label": "deepwiki", "name": "ask_question", "arguments": arguments}
    s.whole_item("mcp_approval_request", "mcpr_", fields)
    s.complete(1210, 41)
    body = request("gpt-4.1", "How does our ledger round revenue?", [tool])
    provenance = (
        "synthesized: api.openai.com /v1/responses, a hosted MCP server that requires approval: "
        "mcp_list_tools then an mcp_approval_request item; nothing runs until the client answers "
        "with mcp_approval_response (openai-python types/responses/response_output_item.py, "
        "response_input_item_param.py)"
    )
    return cassette("mcp-approval-request", s, body, provenance, reads=[900, 1800], offsets_ms=45)


APPLY_PATCH = {"type": "apply_patch"}


def apply_patch() -> Cassette:
    s = ResponseStream("apply-patch", "gpt-5.1-2025-11-13", [APPLY_PATCH]).start()
    call_id = "call_" + "".join(s.rng.choice(ALNUM) for _ in range(24))
    diff = "@@ def greet(name):\n-    print('hi ' + name)\n+    print(f\"Hello, {name}!\")\n"
    operation = {"type": "update_file", "path": "src/greet.py", "diff": diff}
    s.whole_item(
        "apply_patch_call", "apc_", {"status": "completed", "call_id": call_id, "operation": operation}
    )
    s.complete(512, 77)
    body = request("gpt-5.1", "Make greet() say Hello with an f-string.", [APPLY_PATCH])
    provenance = (
        "synthesized: api.openai.com /v1/responses, one apply_patch_call item the client applies and "
        "answers by call_id; it has no intermediate events, only output_item.added and .done "
        "(openai-python types/responses/response_apply_patch_tool_call.py; learn.microsoft.com "
        "Azure.AI.AgentServer.Responses ResponseEventStream.OutputItemApplyPatchCall)"
    )
    return cassette("apply-patch", s, body, provenance, reads=[800, 900], offsets_ms=60)


SHELL = {"type": "shell"}


def shell_call_streamed_commands() -> Cassette:
    s = ResponseStream("shell-call-streamed-commands", "gpt-5.1-2025-11-13", [SHELL]).start()
    s.message("Let me look at the failing test first.")
    s.shell_call(["cd repo && git status --short", "python -m pytest -q tests/test_ledger.py -x"], 120000)
    s.complete(734, 58)
    body = request("gpt-5.1", "Why does the ledger test fail?", [SHELL])
    provenance = (
        "synthesized: api.openai.com /v1/responses, a message, then one shell_call item the client "
        "runs and answers by call_id; its commands stream through response.shell_call_command.added, "
        ".delta and .done, keyed by output_index and command_index (the OpenAI OpenAPI document "
        "2.3.0: ResponseShellCallCommandAddedStreamingEvent, BetaResponseShellCallCommandDelta"
        "StreamingEvent, as docs.rs openai-client-base 0.16.0 and the openai Ruby gem's "
        "ResponseShellCallCommandDeltaEvent carry it); final at output_item.done, whose action holds "
        "every command (openai-python types/responses/response_function_shell_tool_call.py)"
    )
    reads = [700, 1600, 900]
    return cassette("shell-call-streamed-commands", s, body, provenance, reads=reads, offsets_ms=55)


CASSETTES = {
    "single-call": single_call,
    "parallel-2": parallel_2,
    "text-then-call": text_then_call,
    "no-arguments": no_arguments,
    "reasoning-then-call": reasoning_then_call,
    "reasoning-encrypted-parallel": reasoning_encrypted_parallel,
    "llamacpp-interleaved-parallel": llamacpp_interleaved_parallel,
    "args-only-in-done": args_only_in_done,
    "cut-mid-arguments": cut_mid_arguments,
    "web-search-then-call": web_search_then_call,
    "hosted-tools": hosted_tools,
    "custom-tool": custom_tool,
    "mcp-streamed-arguments": mcp_streamed_arguments,
    "mcp-approval-request": mcp_approval_request,
    "apply-patch": apply_patch,
    "shell-call-streamed-commands": shell_call_streamed_commands,
}


def main(out: Path = OUT) -> list[Path]:
    """Write every cassette of this dialect into `out`; the paths written."""
    return [save(build(), out / f"{name}.yaml") for name, build in CASSETTES.items()]


if __name__ == "__main__":
    for path in main():
        print(path.relative_to(ROOT))
