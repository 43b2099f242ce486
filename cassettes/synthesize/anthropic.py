"""Synthesize the bundled Anthropic Messages cassettes into `cassettes/anthropic/`.

Run from the repo root: `python cassettes/synthesize/anthropic.py`. Output is deterministic (ids and
timings come from a generator seeded with the cassette name), so a rerun rewrites the same files.
The streams follow real `/v1/messages` recordings: `msg_01`/`toolu_01` ids, a `message_start`
with model and usage, an empty first `input_json_delta`, `ping` after the first block start,
a `message_delta` with cumulative usage, then `message_stop`. Each expected outcome is the
reference accumulator's, checked by hand in `tests/cassettes/test_corpus_anthropic_bedrock.py`.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if __name__ == "__main__":
    # Run as a script, this folder is sys.path[0] and this file would shadow the `anthropic` SDK.
    sys.path[0] = str(ROOT)

from harness.cassettes.corpus import declare  # noqa: E402
from harness.cassettes.format import Cassette, save  # noqa: E402
from harness.wire.synthesis import synthesize  # noqa: E402

URL = "https://api.anthropic.com/v1/messages"
OUT = ROOT / "cassettes" / "anthropic"
BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
PING = ("ping", '{"type": "ping"}')  # the API writes this one with a space, unlike every other event

Item = tuple[str, Any]


class Stream:
    """Builds one response's `(event_name, payload)` pairs the way the API orders them."""

    def __init__(self, name: str, model: str, input_tokens: int) -> None:
        self.rng = random.Random(name)
        self.model = model
        self.input_tokens = input_tokens
        self.items: list[Item] = []
        self.pinged = False

    def ident(self, prefix: str, length: int = 22) -> str:
        return prefix + "".join(self.rng.choice(BASE62) for _ in range(length))

    def add(self, kind: str, **payload: Any) -> None:
        self.items.append((kind, {"type": kind, **payload}))

    def start(self, *, cache: bool = True) -> Stream:
        usage: dict[str, Any] = {"input_tokens": self.input_tokens}
        if cache:
            usage["cache_creation_input_tokens"] = 0
            usage["cache_read_input_tokens"] = 0
            usage["cache_creation"] = {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0}
        usage["output_tokens"] = self.rng.choice((1, 2, 4, 8))
        if cache:
            usage["service_tier"] = "standard"
        message: dict[str, Any] = {
            "model": self.model,
            "id": self.ident("msg_01"),
            "type": "message",
            "role": "assistant",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": usage,
        }
        self.add("message_start", message=message)
        return self

    def block_start(self, index: int, block: dict[str, Any]) -> None:
        self.add("content_block_start", index=index, content_block=block)
        if not self.pinged:  # the API sends one ping right after the first block starts
            self.items.append(PING)
            self.pinged = True

    def delta(self, index: int, **delta: Any) -> None:
        self.add("content_block_delta", index=index, delta=delta)

    def stop(self, index: int) -> None:
        self.add("content_block_stop", index=index)

    def text(self, index: int, *pieces: str) -> Stream:
        self.block_start(index, {"type": "text", "text": ""})
        for piece in pieces:
            self.delta(index, type="text_delta", text=piece)
        self.stop(index)
        return self

    def thinking(self, index: int, *pieces: str) -> Stream:
        self.block_start(index, {"type": "thinking", "thinking": "", "signature": ""})
        for piece in pieces:
            self.delta(index, type="thinking_delta", thinking=piece)
        self.delta(index, type="thinking_delta", thinking="")
        self.delta(index, type="signature_delta", signature=self.signature())
        self.stop(index)
        return self

    def redacted(self, index: int) -> Stream:
        """A `redacted_thinking` block: its encrypted `data` whole in the start, no deltas."""
        data = "EmwKAhgBEgy" + "".join(self.rng.choice(BASE62) for _ in range(180)) + "=="
        self.block_start(index, {"type": "redacted_thinking", "data": data})
        self.stop(index)
        return self

    def signed_only(self, index: int) -> Stream:
        """A thinking block whose text is omitted (`display: "omitted"`): only its signature."""
        self.block_start(index, {"type": "thinking", "thinking": "", "signature": ""})
        self.delta(index, type="signature_delta", signature=self.signature())
        self.stop(index)
        return self

    def signature(self) -> str:
        alphabet = BASE62 + "+/"
        return "Eq" + "".join(self.rng.choice(alphabet) for _ in range(338)) + "GAE="

    def tool_start(self, index: int, call_id: str, name: str) -> None:
        self.block_start(index, {"type": "tool_use", "id": call_id, "name": name, "input": {}})
        self.delta(index, type="input_json_delta", partial_json="")

    def args(self, index: int, piece: str) -> None:
        self.delta(index, type="input_json_delta", partial_json=piece)

    def tool(self, index: int, call_id: str, name: str, arguments: dict[str, Any] | None) -> Stream:
        self.tool_start(index, call_id, name)
        for piece in self.pieces(arguments):
            self.args(index, piece)
        self.stop(index)
        return self

    def server_tool(self, index: int, call_id: str, name: str, arguments: dict[str, Any]) -> Stream:
        """A `server_tool_use` block: a tool the API runs itself, its input streamed like a call's."""
        self.block_start(index, {"type": "server_tool_use", "id": call_id, "name": name, "input": {}})
        for piece in self.pieces(arguments):
            self.args(index, piece)
        self.stop(index)
        return self

    def server_result(self, index: int, kind: str, call_id: str, content: Any) -> Stream:
        """A `*_tool_result` block: its content arrives whole in the start, with no deltas."""
        self.block_start(index, {"type": kind, "tool_use_id": call_id, "content": content})
        self.stop(index)
        return self

    def pieces(self, arguments: dict[str, Any] | None) -> list[str]:
        """The API's JSON (with spaces after separators) cut into a few token-sized pieces."""
        if not arguments:
            return []
        text = json.dumps(arguments, ensure_ascii=False)
        out, pos = [], 0
        while pos < len(text):
            size = self.rng.randint(3, 14)
            out.append(text[pos : pos + size])
            pos += size
        return out

    def finish(self, reason: str, output_tokens: int, *, cumulative_input: bool = True) -> list[Item]:
        usage: dict[str, Any] = {"output_tokens": output_tokens}
        if cumulative_input:
            usage = {
                "input_tokens": self.input_tokens,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
                "output_tokens": output_tokens,
            }
        self.add("message_delta", delta={"stop_reason": reason, "stop_sequence": None}, usage=usage)
        self.add("message_stop")
        return self.items


def tool(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    schema = {"type": "object", "properties": properties, "required": required}
    return {"name": name, "description": description, "input_schema": schema}


WEATHER = tool(
    "get_weather",
    "Get the current weather in a given location",
    {
        "location": {"type": "string", "description": "The city and state, e.g. San Francisco, CA"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
    },
    ["location"],
)
TIME = tool(
    "get_time",
    "Get the current time in a given IANA time zone",
    {"timezone": {"type": "string", "description": "e.g. Europe/Paris"}},
    ["timezone"],
)
READ_FILE = tool("read_file", "Read a text file from the workspace", {"path": {"type": "string"}}, ["path"])
SEARCH_TEXT = tool(
    "search_text", "Search the workspace for a string", {"query": {"type": "string"}}, ["query"]
)
LIST_TABS = tool("list_open_tabs", "List the tabs open in the editor", {}, [])
ISSUES = tool(
    "list_issues",
    "List issues of a GitHub repository",
    {"repo": {"type": "string"}, "state": {"type": "string", "enum": ["open", "closed", "all"]}},
    ["repo"],
)
FILE_CONTENTS = tool(
    "get_file_contents",
    "Read a file from a GitHub repository",
    {"repo": {"type": "string"}, "path": {"type": "string"}},
    ["repo", "path"],
)


def request(model: str, prompt: str, tools: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"max_tokens": 1024, "messages": [{"role": "user", "content": prompt}]}
    body["model"] = model
    body["tools"] = tools
    body.update(extra)
    body["stream"] = True
    return body


def request_headers(beta: str | None = None) -> dict[str, str]:
    headers = {
        "accept": "application/json",
        "anthropic-version": "2023-06-01",
        "content-type": "application/json",
        "user-agent": "Anthropic/Python 2.10.0",
        "x-stainless-helper-method": "stream",
        "x-stainless-lang": "python",
        "x-stainless-stream-helper": "messages",
    }
    if beta:
        headers["anthropic-beta"] = beta
    return headers


def response_headers(stream: Stream) -> dict[str, str]:
    ray = "".join(stream.rng.choice("0123456789abcdef") for _ in range(16))
    return {
        "cache-control": "no-cache",
        "request-id": stream.ident("req_011C", 20),
        "server": "cloudflare",
        "cf-ray": f"{ray}-SJC",
        "x-robots-tag": "none",
    }


def make(
    name: str,
    stream: Stream,
    items: list[Item],
    body: dict[str, Any],
    provenance: str,
    *,
    reads: list[int] | None = None,
    offsets_ms: float = 25.0,
    beta: str | None = None,
    complete: bool = True,
    error: str | None = None,
) -> Cassette:
    return synthesize(
        name,
        "anthropic",
        url=URL,
        body=body,
        events=items,
        provenance=provenance,
        reads=reads,
        request_headers=request_headers(beta),
        response_headers=response_headers(stream),
        offsets_ms=offsets_ms,
        complete=complete,
        error=error,
    )


SONNET_45 = "claude-sonnet-4-5-20250929"
SONNET_4 = "claude-sonnet-4-20250514"
SONNET_37 = "claude-3-7-sonnet-20250219"
OPUS_41 = "claude-opus-4-1-20250805"


def single_call() -> Cassette:
    s = Stream("anthropic-single-call", SONNET_45, 612).start()
    call_id = s.ident("toolu_01")
    s.tool(0, call_id, "get_weather", {"location": "San Francisco, CA", "unit": "fahrenheit"})
    body = request(
        SONNET_45, "What's the weather like in San Francisco?", [WEATHER], tool_choice={"type": "any"}
    )
    return make(
        "anthropic-single-call",
        s,
        s.finish("tool_use", 71),
        body,
        "Anthropic Messages: one tool_use block at index 0 (tool_choice any), "
        "the shape of the API docs' streaming example",
        offsets_ms=31.5,
    )


def parallel_calls() -> Cassette:
    s = Stream("anthropic-parallel-calls", SONNET_4, 829).start(cache=False)
    s.text(0, "I'll check the weather", " in both cities and the time in Paris at once.")
    s.tool(1, s.ident("toolu_01"), "get_weather", {"location": "Paris, France", "unit": "celsius"})
    s.tool(2, s.ident("toolu_01"), "get_weather", {"location": "London, UK", "unit": "celsius"})
    s.tool(3, s.ident("toolu_01"), "get_time", {"timezone": "Europe/Paris"})
    body = request(SONNET_4, "Weather in Paris and London, and the time in Paris?", [WEATHER, TIME])
    return make(
        "anthropic-parallel-calls",
        s,
        s.finish("tool_use", 187, cumulative_input=False),
        body,
        "Anthropic Messages: text then three parallel tool_use blocks, two of them to the same function",
        reads=[412, 96, 233, 150, 777, 61],
        offsets_ms=18.0,
    )


def text_before_call() -> Cassette:
    s = Stream("anthropic-text-before-call", SONNET_45, 1044).start()
    s.text(0, "Let me look", " that up in the", " repository", " for you.")
    s.tool(1, s.ident("toolu_01"), "search_text", {"query": "def parse_config"})
    body = request(SONNET_45, "Where is parse_config defined?", [SEARCH_TEXT, READ_FILE])
    return make(
        "anthropic-text-before-call",
        s,
        s.finish("tool_use", 64),
        body,
        "Anthropic Messages: a text block at index 0, then one tool_use block at index 1",
        reads=[180, 57, 1024],
        offsets_ms=42.0,
    )


def no_arguments() -> Cassette:
    s = Stream("anthropic-no-arguments", SONNET_37, 565).start(cache=False)
    s.text(0, "I'll list the open tabs for", " you.")
    s.tool(1, s.ident("toolu_01"), "list_open_tabs", None)
    body = request(SONNET_37, "Which tabs do I have open?", [LIST_TABS])
    return make(
        "anthropic-no-arguments",
        s,
        s.finish("tool_use", 48, cumulative_input=False),
        body,
        'Anthropic Messages: a tool with no arguments streams only partial_json "" (B7: the call is {})',
        offsets_ms=12.25,
    )


def thinking_then_call() -> Cassette:
    s = Stream("anthropic-thinking-then-call", SONNET_45, 1402).start()
    s.thinking(
        0,
        "The user wants the weather in Tokyo.",
        " I have a get_weather tool; Tokyo is in Japan,",
        " so celsius is the natural unit.",
    )
    s.text(1, "I'll get the current weather in Tokyo.")
    s.tool(2, s.ident("toolu_01"), "get_weather", {"location": "Tokyo, Japan", "unit": "celsius"})
    body = request(
        SONNET_45,
        "How warm is it in Tokyo right now?",
        [WEATHER],
        thinking={"type": "enabled", "budget_tokens": 2048},
    )
    body["max_tokens"] = 4096
    return make(
        "anthropic-thinking-then-call",
        s,
        s.finish("tool_use", 212),
        body,
        "Anthropic Messages, extended thinking: thinking_delta pieces, an empty thinking_delta and one "
        "signature_delta at index 0, then text and tool_use",
        reads=[300, 128, 515, 77],
        offsets_ms=27.0,
    )


def interleaved_thinking() -> Cassette:
    s = Stream("anthropic-interleaved-thinking", OPUS_41, 2210).start()
    s.thinking(0, "First I need the list of open issues.")
    s.tool(1, s.ident("toolu_01"), "list_issues", {"repo": "acme/widgets", "state": "open"})
    s.thinking(2, "I also want the README to see the", " contributing rules.")
    s.tool(3, s.ident("toolu_01"), "get_file_contents", {"repo": "acme/widgets", "path": "README.md"})
    body = request(
        OPUS_41,
        "Triage the open issues of acme/widgets against the README.",
        [ISSUES, FILE_CONTENTS],
        thinking={"type": "enabled", "budget_tokens": 4000},
    )
    body["max_tokens"] = 8192
    return make(
        "anthropic-interleaved-thinking",
        s,
        s.finish("tool_use", 318),
        body,
        "Anthropic Messages with interleaved thinking (beta): thinking blocks between tool_use blocks",
        beta="interleaved-thinking-2025-05-14",
        reads=[256, 1400, 90, 640],
        offsets_ms=35.0,
    )


def seed_004_interleaved_deltas() -> Cassette:
    name = "anthropic-seed004-interleaved-input-json"
    s = Stream(name, OPUS_41, 5120).start()
    s.text(0, "Fetching both in parallel.")
    first, second = s.ident("toolu_01"), s.ident("toolu_01")
    s.tool_start(1, first, "list_issues")
    s.args(1, '{"repo": "ac')
    s.tool_start(2, second, "get_file_contents")  # block 1's deltas keep coming after this start
    s.args(1, 'me/widgets", "st')
    s.args(2, '{"repo": "acme/widg')
    s.args(1, 'ate": "open"}')
    s.args(2, 'ets", "path": "docs/')
    s.stop(1)
    s.args(2, 'triage.md"}')
    s.stop(2)
    body = request(OPUS_41, "List the open issues and fetch docs/triage.md.", [ISSUES, FILE_CONTENTS])
    made = make(
        name,
        s,
        s.finish("tool_use", 133),
        body,
        "Seed 004 (docker-agent PR #3009): parallel tool_use blocks whose input_json_deltas interleave, "
        "block 1's arriving after block 2's content_block_start (C1)",
        reads=[190, 73, 211, 88, 1000],
        offsets_ms=9.5,
    )
    # Itself a documented deviation: its cases are quirks (docs/oracle.md).
    return declare(made, "quirk", "C1 tool blocks interleaved (docker-agent PR #3009)")


def seed_000_parallel() -> Cassette:
    name = "anthropic-seed000-parallel-read-search"
    s = Stream(name, SONNET_4, 738).start(cache=False)
    s.text(0, "I'll read the file and search for", ' "bar" at the same time.')
    s.tool(1, s.ident("toolu_01"), "read_file", {"path": "foo.txt"})
    s.tool(2, s.ident("toolu_01"), "search_text", {"query": "bar"})
    body = request(SONNET_4, 'Read foo.txt and search the workspace for "bar".', [READ_FILE, SEARCH_TEXT])
    return make(
        name,
        s,
        s.finish("tool_use", 121, cumulative_input=False),
        body,
        "Seed 000 (langchain#34807): Claude calls read_file and search_text in parallel, "
        "two tool_use blocks with distinct ids",
        offsets_ms=21.0,
    )


def overloaded_mid_call() -> Cassette:
    name = "anthropic-overloaded-mid-call"
    s = Stream(name, SONNET_45, 903).start()
    s.tool(0, s.ident("toolu_01"), "read_file", {"path": "src/app.py"})
    s.tool_start(1, s.ident("toolu_01"), "search_text")
    s.args(1, '{"query": "TO')
    s.items.append(
        ("error", {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
    )
    body = request(SONNET_45, "Open src/app.py and find the TODOs.", [READ_FILE, SEARCH_TEXT])
    return make(
        name,
        s,
        s.items,
        body,
        "Anthropic Messages: HTTP 200, then an in-band overloaded_error after a partial second call "
        "and no message_stop (D8); only the first, stopped call is real",
        reads=[333, 120],
        offsets_ms=40.0,
    )


def cut_mid_args() -> Cassette:
    name = "anthropic-cut-mid-args"
    s = Stream(name, SONNET_4, 455).start(cache=False)
    s.text(0, "Reading both files.")
    s.tool(1, s.ident("toolu_01"), "read_file", {"path": "a.txt"})
    s.tool_start(2, s.ident("toolu_01"), "read_file")
    s.args(2, '{"path": "b.t')
    body = request(SONNET_4, "Read a.txt and b.txt.", [READ_FILE])
    return make(
        name,
        s,
        s.items,
        body,
        "Anthropic Messages cut by the network mid-arguments of the second call (D7)",
        reads=[260, 145, 3000],
        complete=False,
        error="peer closed connection without sending complete message body (incomplete chunked read)",
    )


WEB_SEARCH = {"type": "web_search_20250305", "name": "web_search", "max_uses": 3}
CODE_EXECUTION = {"type": "code_execution_20250522", "name": "code_execution"}
TOOL_SEARCH = {"type": "tool_search_tool_regex_20251119", "name": "tool_search_tool_regex"}


def tool_search_then_call() -> Cassette:
    name = "anthropic-tool-search-then-call"
    s = Stream(name, SONNET_45, 1893).start()
    search_id = s.ident("srvtoolu_01")
    s.server_tool(0, search_id, "tool_search_tool_regex", {"pattern": "weather"})
    references = [{"type": "tool_reference", "tool_name": "get_weather"}]
    content = {"type": "tool_search_tool_search_result", "tool_references": references}
    s.server_result(1, "tool_search_tool_result", search_id, content)
    s.text(2, "I found a weather tool.", " Let me check Lisbon.")
    s.tool(3, s.ident("toolu_01"), "get_weather", {"location": "Lisbon, Portugal", "unit": "celsius"})
    deferred = [{**tool, "defer_loading": True} for tool in (WEATHER, TIME, ISSUES)]
    body = request(SONNET_45, "Is it warm in Lisbon today?", [TOOL_SEARCH, *deferred])
    return make(
        name,
        s,
        s.finish("tool_use", 156),
        body,
        "Anthropic Messages with the tool search tool (beta): a server_tool_use block the API runs, "
        "its tool_search_tool_result, then the one tool_use block the client must run",
        beta="advanced-tool-use-2025-11-20",
        reads=[420, 96, 1200, 64],
        offsets_ms=22.0,
    )


def web_search() -> Cassette:
    name = "anthropic-web-search"
    s = Stream(name, SONNET_45, 2315).start()
    s.text(0, "I'll search for the latest", " release. ")
    search_id = s.ident("srvtoolu_01")
    s.server_tool(1, search_id, "web_search", {"query": "Python 3.14 release date"})
    result = {
        "type": "web_search_result",
        "title": "Python 3.14 release schedule",
        "url": "https://peps.python.org/pep-0745/",
        "encrypted_content": "Ev0DCioIBxgCIiQ" + "".join(s.rng.choice(BASE62) for _ in range(120)),
        "page_age": "October 7, 2025",
    }
    s.server_result(2, "web_search_tool_result", search_id, [result])
    s.text(3, "Python 3.14.0 was released", " on 7 October 2025.")
    body = request(SONNET_45, "When was Python 3.14 released?", [WEB_SEARCH])
    return make(
        name,
        s,
        s.finish("end_turn", 97),
        body,
        "Anthropic Messages with the web search tool: text, a server_tool_use web_search block, its "
        "web_search_tool_result, then the answer; no call for the client",
        reads=[310, 77, 905, 140],
        offsets_ms=48.0,
    )


def code_execution_error() -> Cassette:
    name = "anthropic-code-execution-error"
    s = Stream(name, OPUS_41, 977).start()
    first, second = s.ident("srvtoolu_01"), s.ident("srvtoolu_01")
    s.server_tool(0, first, "code_execution", {"code": "import math\nprint(math.factorial(20))"})
    output = {"type": "code_execution_result", "stdout": "2432902008176640000\n", "stderr": ""}
    s.server_result(1, "code_execution_tool_result", first, {**output, "return_code": 0, "content": []})
    s.server_tool(2, second, "code_execution", {"code": "print(math.factorial(10**6) % 7)"})
    failure = {"type": "code_execution_tool_result_error", "error_code": "execution_time_exceeded"}
    s.server_result(3, "code_execution_tool_result", second, failure)
    s.text(4, "20! is 2432902008176640000;", " the second computation timed out.")
    body = request(OPUS_41, "Compute 20! and (10^6)! mod 7 with code.", [CODE_EXECUTION])
    return make(
        name,
        s,
        s.finish("end_turn", 204),
        body,
        "Anthropic Messages with the code execution tool (beta): two server_tool_use blocks, one result "
        "with stdout and one code_execution_tool_result_error, then text; no call for the client",
        beta="code-execution-2025-05-22",
        reads=[512, 33, 700],
        offsets_ms=61.0,
    )


WRITE_FILE = {
    **tool(
        "write_file",
        "Write a text file in the workspace.",
        {"path": {"type": "string"}, "content": {"type": "string"}},
        ["path", "content"],
    ),
    "eager_input_streaming": True,
}


def eager_input_streaming() -> Cassette:
    """Fine-grained (eager) tool streaming, GA: the tool asks for `eager_input_streaming`, and the
    input streams unbuffered and unvalidated, in longer chunks (platform.claude.com/docs/en/
    agents-and-tools/tool-use/fine-grained-tool-streaming)."""
    s = Stream("anthropic-eager-input-streaming", SONNET_45, 704).start()
    call_id = s.ident("toolu_01")
    s.tool_start(0, call_id, "write_file")
    pieces = (
        '{"path": "notes/todo.md", "content": "# TODO\\n\\n- rotate the staging keys',
        '\\n- drop the v1 endpoints before March\\n"}',
    )
    for piece in pieces:  # longer chunks than buffered streaming's, cut mid-string
        s.args(0, piece)
    s.stop(0)
    body = request(SONNET_45, "Start a notes/todo.md listing the two chores we agreed on.", [WRITE_FILE])
    return make(
        "anthropic-eager-input-streaming",
        s,
        s.finish("tool_use", 58),
        body,
        "synthesized: Anthropic Messages with eager_input_streaming on the tool (fine-grained tool "
        "streaming, GA): one tool_use whose input streams in two long, unvalidated input_json_delta "
        "chunks (platform.claude.com/docs/en/agents-and-tools/tool-use/fine-grained-tool-streaming)",
        offsets_ms=40.0,
    )


THINKING_DOCS = (
    "docs.anthropic.com/en/docs/build-with-claude/extended-thinking (streaming thinking, "
    "signature_delta before content_block_stop; preserving thinking blocks with tool use)"
)


def redacted_thinking_then_call() -> Cassette:
    name = "anthropic-redacted-thinking-then-call"
    s = Stream(name, SONNET_37, 1290).start()
    s.thinking(0, "The user wants the forecast;", " I'll call the tool.")
    s.redacted(1)
    s.tool(2, s.ident("toolu_01"), "get_weather", {"location": "Paris, France", "unit": "celsius"})
    body = request(
        SONNET_37,
        "What's the weather in Paris?",
        [WEATHER],
        thinking={"type": "enabled", "budget_tokens": 2048},
    )
    return make(
        name,
        s,
        s.finish("tool_use", 118),
        body,
        "synthesized from the documented wire format: a thinking block (thinking_delta pieces, one "
        "signature_delta), a redacted_thinking block whose data arrives whole in content_block_start "
        "and no deltas, then a tool_use block; both thinking blocks go back verbatim before the "
        f"tool_use. Sources: {THINKING_DOCS}; anthropic-sdk-python types/redacted_thinking_block.py",
        reads=[380, 1400, 96],
        offsets_ms=35.0,
    )


def thinking_parallel() -> Cassette:
    name = "anthropic-thinking-parallel"
    s = Stream(name, SONNET_45, 1577).start()
    s.signed_only(0)
    s.text(1, "Checking both cities at once.")
    s.tool(2, s.ident("toolu_01"), "get_weather", {"location": "Paris, France", "unit": "celsius"})
    s.tool(3, s.ident("toolu_01"), "get_weather", {"location": "Oslo, Norway", "unit": "celsius"})
    body = request(
        SONNET_45,
        "Weather in Paris and Oslo?",
        [WEATHER],
        thinking={"type": "adaptive", "display": "omitted"},
    )
    return make(
        name,
        s,
        s.finish("tool_use", 164),
        body,
        "synthesized from the documented wire format (recipe thinking-parallel): adaptive thinking "
        "with display omitted, a thinking block with no thinking_delta and only its signature_delta, "
        "text, then two parallel tool_use blocks. Sources: platform.claude.com/docs/en/build-with-claude/"
        "adaptive-thinking; anthropic-sdk-python types/thinking_config_adaptive_param.py (display "
        f"omitted: thinking empty, signature kept); {THINKING_DOCS}",
        reads=[512, 220, 900],
        offsets_ms=27.0,
    )


def server_tool_then_call() -> Cassette:
    name = "anthropic-server-tool-then-call"
    s = Stream(name, SONNET_45, 2480).start()
    s.text(0, "Let me look up", " the venue first. ")
    search_id = s.ident("srvtoolu_01")
    s.server_tool(1, search_id, "web_search", {"query": "PyCon US 2026 venue city"})
    result = {
        "type": "web_search_result",
        "title": "PyCon US 2026",
        "url": "https://us.pycon.org/2026/",
        "encrypted_content": "Ev0DCioIBxgCIiQ" + "".join(s.rng.choice(BASE62) for _ in range(96)),
        "page_age": None,
    }
    s.server_result(2, "web_search_tool_result", search_id, [result])
    s.text(3, "It is in Long Beach.", " Now the weather there.")
    s.tool(4, s.ident("toolu_01"), "get_weather", {"location": "Long Beach, CA", "unit": "fahrenheit"})
    body = request(SONNET_45, "What's the weather where PyCon US 2026 is held?", [WEB_SEARCH, WEATHER])
    return make(
        name,
        s,
        s.finish("tool_use", 142),
        body,
        "synthesized from the documented wire format (recipe server-tool-then-call): text, a "
        "server_tool_use web_search block and its web_search_tool_result, more text, then a tool_use "
        "block for the client; the turn ends tool_use. Sources: platform.claude.com/docs/en/"
        "agents-and-tools/tool-use/server-tools (mixed server and client tools); "
        "docs.anthropic.com/en/docs/agents-and-tools/tool-use/web-search-tool (streaming)",
        reads=[300, 88, 1100, 256],
        offsets_ms=44.0,
    )


BUILDERS = (
    single_call,
    parallel_calls,
    text_before_call,
    no_arguments,
    thinking_then_call,
    interleaved_thinking,
    seed_004_interleaved_deltas,
    seed_000_parallel,
    overloaded_mid_call,
    cut_mid_args,
    tool_search_then_call,
    web_search,
    code_execution_error,
    eager_input_streaming,
    redacted_thinking_then_call,
    thinking_parallel,
    server_tool_then_call,
)


def cassettes() -> list[Cassette]:
    return [build() for build in BUILDERS]


def main() -> None:
    for cassette in cassettes():
        path = save(cassette, OUT / f"{cassette.name.removeprefix('anthropic-')}.yaml")
        print(path.relative_to(ROOT))


if __name__ == "__main__":
    main()
