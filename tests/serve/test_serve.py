"""The replay server over real sockets on 127.0.0.1: real SDKs and programs pointed at a case by
their base URL, judged by the follow-up request they send."""

from __future__ import annotations

import http.client
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import textwrap
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.accumulators.program import run_clients
from harness.card.known import raise_key
from harness.cassettes.format import Chunk, Response
from harness.cassettes.outcome import State, ToolCall
from harness.cli import main
from harness.matrix.runner import run_matrix
from harness.matrix.selection import Selection
from harness.matrix.selection import cases as selected_cases
from harness.mutate.scenario import Case
from harness.oracle.evidence import Evidence, judge_client
from harness.oracle.severity import Severity
from harness.oracle.verdict import Verdict, signature
from harness.serve import ReplayServer, Turn, base_urls, client_environment, read_followup
from harness.serve.answers import final_answer
from harness.serve.followup import ToolResult
from harness.serve.routes import case_prefix
from harness.wire import dialects

ROOT = Path(__file__).resolve().parents[2]

SINGLE = "openai-chat/single-call::original::s0"
PARALLEL = "openai-chat/parallel-2::original::s0"
SHARED_INDEX = "openai-chat/parallel-2::parallel-calls-share-index-0::s0"
CUT = "openai-chat/cut-mid-arguments::original::s0"
ANTHROPIC = "anthropic/parallel-calls::original::s0"
ANTHROPIC_CUT = "anthropic/cut-mid-args::original::s0"
ANTHROPIC_ERROR = "anthropic/overloaded-mid-call::original::s0"
BEDROCK = "bedrock-converse/single-call::original::s0"
OLLAMA = "ollama/parallel.yaml"
ALL = (SINGLE, PARALLEL, SHARED_INDEX, CUT, ANTHROPIC, ANTHROPIC_CUT, ANTHROPIC_ERROR, BEDROCK)


@pytest.fixture(scope="module")
def cases() -> dict[str, Case]:
    return {case.id: case for case in selected_cases(Selection(cases=ALL))}


@pytest.fixture(scope="module")
def server(cases: dict[str, Case]) -> Iterator[ReplayServer]:
    with ReplayServer(cases.values()).running() as running:
        yield running


def post(url: str, body: Any) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(url, json.dumps(body).encode(), {"content-type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


def chat_followup(calls: list[dict[str, Any]]) -> dict[str, Any]:
    """An OpenAI chat follow-up: the assistant turn with `calls` and a result for each."""
    return {
        "model": "m",
        "stream": True,
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": None, "tool_calls": calls},
            *({"role": "tool", "tool_call_id": c["id"], "content": "ok"} for c in calls),
        ],
    }


def chat_call(call: ToolCall) -> dict[str, Any]:
    return {
        "id": call.id,
        "type": "function",
        "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
    }


# ---------------------------------------------------------------------------------------------
# Real SDKs through base_url


def test_openai_sdk_streams_a_case_and_its_followup_is_judged(
    server: ReplayServer, cases: dict[str, Case]
) -> None:
    openai = pytest.importorskip("openai")
    client = openai.OpenAI(
        base_url=base_urls(server.url, PARALLEL)["openai-chat"], api_key="sk-x", max_retries=0
    )
    server.log(PARALLEL).clear()
    with client.chat.completions.stream(model="m", messages=[{"role": "user", "content": "hi"}]) as stream:
        message = stream.get_final_completion().choices[0].message
    assert [c.function.name for c in message.tool_calls or []] == ["get_weather", "get_time"]
    followup = {
        "model": "m",
        "messages": [
            {"role": "user", "content": "hi"},
            message.model_dump(exclude_none=True),
            *({"role": "tool", "tool_call_id": c.id, "content": "ok"} for c in message.tool_calls or []),
        ],
    }
    final = client.chat.completions.create(**followup, stream=True)
    assert "".join(chunk.choices[0].delta.content or "" for chunk in final if chunk.choices) == "Done."
    log = server.log(PARALLEL)
    assert log.attempts == 1 and len(log.followups) == 1
    result = judge_client(cases[PARALLEL], "openai-sdk", Evidence(followup=log.followups[0]))
    assert result.verdict is Verdict.PASS, result.diff
    assert result.actual is not None and result.actual.tool_calls == cases[PARALLEL].expected.tool_calls


def test_openai_sdk_without_streaming_gets_the_outcome_whole(
    server: ReplayServer, cases: dict[str, Case]
) -> None:
    openai = pytest.importorskip("openai")
    client = openai.OpenAI(
        base_url=base_urls(server.url, PARALLEL)["openai-chat"], api_key="sk-x", max_retries=0
    )
    message = (
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        .choices[0]
        .message
    )
    got = [(c.id, c.function.name, json.loads(c.function.arguments)) for c in message.tool_calls or []]
    assert got == [(c.id, c.name, c.arguments) for c in cases[PARALLEL].expected.tool_calls]


def test_openai_sdk_sees_a_cut_case_as_a_broken_connection(server: ReplayServer) -> None:
    openai = pytest.importorskip("openai")
    client = openai.OpenAI(base_url=base_urls(server.url, CUT)["openai-chat"], api_key="sk-x", max_retries=0)
    stream = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "hi"}], stream=True
    )
    with pytest.raises(openai.APIConnectionError) as raised:
        for _ in stream:
            pass
    assert re.search("incomplete chunked read|peer closed", str(raised.value.__cause__))


@pytest.mark.slow
def test_anthropic_sdk_streams_a_case_and_its_followup_is_judged(
    server: ReplayServer, cases: dict[str, Case]
) -> None:
    anthropic = pytest.importorskip("anthropic")
    client = anthropic.Anthropic(
        base_url=base_urls(server.url, ANTHROPIC)["anthropic"], api_key="k", max_retries=0
    )
    server.log(ANTHROPIC).clear()
    ask = {"model": "m", "max_tokens": 100, "messages": [{"role": "user", "content": "hi"}]}
    with client.messages.stream(**ask) as stream:
        message = stream.get_final_message()
    uses = [block for block in message.content if block.type == "tool_use"]
    assert len(uses) == len(cases[ANTHROPIC].expected.tool_calls) > 1
    results = [{"type": "tool_result", "tool_use_id": use.id, "content": "ok"} for use in uses]
    turn = [block.model_dump(exclude_none=True) for block in message.content]
    ask["messages"] = [
        *ask["messages"],
        {"role": "assistant", "content": turn},
        {"role": "user", "content": results},
    ]
    with client.messages.stream(**ask) as stream:
        assert stream.get_final_text() == "Done."
    log = server.log(ANTHROPIC)
    result = judge_client(cases[ANTHROPIC], "anthropic-sdk", Evidence(followup=log.followups[0]))
    assert result.verdict is Verdict.PASS, result.diff


def test_anthropic_sdk_surfaces_an_error_case_and_passes_without_a_followup(
    server: ReplayServer, cases: dict[str, Case]
) -> None:
    anthropic = pytest.importorskip("anthropic")
    client = anthropic.Anthropic(
        base_url=base_urls(server.url, ANTHROPIC_ERROR)["anthropic"], api_key="k", max_retries=0
    )
    with (
        pytest.raises(anthropic.APIStatusError, match="Overloaded"),
        client.messages.stream(model="m", max_tokens=10, messages=[{"role": "user", "content": "hi"}]) as s,
    ):
        s.get_final_message()
    asked = server.log(ANTHROPIC_ERROR).attempts
    assert asked == 1  # the server counted the SDK's request for the case's stream
    result = judge_client(cases[ANTHROPIC_ERROR], "anthropic-sdk", Evidence(exit_code=1, requests=asked))
    assert result.verdict is Verdict.PASS


def test_botocore_streams_a_bedrock_case_as_eventstream_and_follows_up(
    server: ReplayServer, cases: dict[str, Case], monkeypatch: pytest.MonkeyPatch
) -> None:
    botocore_session = pytest.importorskip("botocore.session")
    for name, value in client_environment(server.url, BEDROCK).items():
        monkeypatch.setenv(name, value)
    client = botocore_session.get_session().create_client("bedrock-runtime")
    messages: list[dict[str, Any]] = [{"role": "user", "content": [{"text": "hi"}]}]
    events = list(client.converse_stream(modelId="m", messages=messages)["stream"])
    assert events[-2] == {"messageStop": {"stopReason": "tool_use"}}
    use = client.converse(modelId="m", messages=messages)["output"]["message"]["content"][0]["toolUse"]
    messages += [
        {"role": "assistant", "content": [{"toolUse": use}]},
        {
            "role": "user",
            "content": [{"toolResult": {"toolUseId": use["toolUseId"], "content": [{"text": "9C"}]}}],
        },
    ]
    final = client.converse_stream(modelId="m", messages=messages)["stream"]
    assert {"contentBlockDelta": {"delta": {"text": "Done."}, "contentBlockIndex": 0}} in list(final)
    result = judge_client(cases[BEDROCK], "botocore", Evidence(followup=server.log(BEDROCK).followups[-1]))
    assert result.verdict is Verdict.PASS, result.diff


# ---------------------------------------------------------------------------------------------
# Raw HTTP, the way curl talks


def raw(server: ReplayServer, request: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(request)
        out = b""
        while chunk := sock.recv(65536):
            out += chunk
    return out


def raw_post(path: str, body: dict[str, Any], *, close: bool = True) -> bytes:
    data = json.dumps(body).encode()
    head = f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    head += f"Content-Length: {len(data)}\r\n"
    return (head + ("Connection: close\r\n" if close else "") + "\r\n").encode() + data


def dechunk(body: bytes) -> tuple[list[bytes], bool]:
    """The chunks of a chunked body, and whether it ended with the terminating chunk."""
    chunks = []
    while body:
        size_line, _, rest = body.partition(b"\r\n")
        size = int(size_line, 16)
        if size == 0:
            return chunks, True
        chunks.append(rest[:size])
        body = rest[size + 2 :]
    return chunks, False


def test_a_raw_request_gets_the_case_read_by_read_in_chunks(
    server: ReplayServer, cases: dict[str, Case]
) -> None:
    ask = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}
    reply = raw(server, raw_post(case_prefix(SINGLE) + "/v1/chat/completions", ask))
    head, _, body = reply.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 OK") and b"transfer-encoding: chunked" in head
    assert b"content-type: text/event-stream" in head.lower()
    chunks, terminated = dechunk(body)
    assert chunks == [chunk.data for chunk in cases[SINGLE].response.chunks] and terminated


def test_a_cut_case_closes_the_connection_mid_body(server: ReplayServer, cases: dict[str, Case]) -> None:
    ask = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}
    # Keep-alive asked for, yet the connection closes: the cut is how the recording ended.
    reply = raw(server, raw_post(case_prefix(CUT) + "/v1/chat/completions", ask, close=False))
    chunks, terminated = dechunk(reply.partition(b"\r\n\r\n")[2])
    assert not terminated and chunks == [chunk.data for chunk in cases[CUT].response.chunks]


def test_one_connection_carries_the_request_and_its_followup(
    server: ReplayServer, cases: dict[str, Case]
) -> None:
    server.log(SINGLE).clear()
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    path = case_prefix(SINGLE) + "/v1/chat/completions"
    connection.request("POST", path, json.dumps({"model": "m", "messages": [], "stream": True}))
    first = connection.getresponse()
    assert b"data: [DONE]" in first.read()
    calls = [chat_call(c) for c in cases[SINGLE].expected.tool_calls]
    connection.request("POST", path, json.dumps(chat_followup(calls)))
    second = connection.getresponse()
    assert b'"content":"Done."' in second.read()
    connection.close()
    assert server.log(SINGLE).attempts == 1 and len(server.log(SINGLE).followups) == 1


def test_the_wrong_provider_path_says_which_base_url_to_use(server: ReplayServer) -> None:
    status, _, body = post(server.url + case_prefix(SINGLE) + "/v1/messages", {"model": "m"})
    assert status == 404 and "speaks openai-chat" in body.decode()
    status, _, _ = post(server.url + "/case/nope/v1/chat/completions", {})
    assert status == 404


def test_the_index_lists_every_case_and_a_case_page_shows_its_verdict(
    server: ReplayServer, cases: dict[str, Case]
) -> None:
    page = urllib.request.urlopen(server.url + "/", timeout=10).read().decode()
    assert all(case_id in page for case_id in cases)
    listing = json.loads(urllib.request.urlopen(server.url + "/cases.json", timeout=10).read())
    assert [item["id"] for item in listing] == list(cases)
    server.log(SINGLE).clear()
    post(
        server.url + case_prefix(SINGLE) + "/v1/chat/completions",
        chat_followup([chat_call(ToolCall("x", {}, "c"))]),
    )
    about = json.loads(urllib.request.urlopen(server.url + case_prefix(SINGLE) + "/", timeout=10).read())
    assert about["received"]["followups"] == 1 and about["verdict"]["verdict"] == "fail"


def test_a_reported_outcome_is_judged_like_an_accumulator(
    server: ReplayServer, cases: dict[str, Case]
) -> None:
    server.log(SINGLE).clear()
    expected = cases[SINGLE].expected.to_dict()
    assert post(server.url + case_prefix(SINGLE) + "/report", expected)[0] == 200
    assert post(server.url + case_prefix(SINGLE) + "/report", {"tool_calls": 3})[0] == 400
    report = server.log(SINGLE).reports[0]
    assert judge_client(cases[SINGLE], "x", Evidence(report=report)).verdict is Verdict.PASS


# ---------------------------------------------------------------------------------------------
# The follow-up readers, one per dialect


def test_each_dialect_reads_the_assistant_turn_and_results_of_a_followup() -> None:
    args = {"city": "Paris"}
    bodies = {
        "openai-chat": {
            "messages": [
                {"role": "user", "content": "q"},
                {
                    "role": "assistant",
                    "content": "t",
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "f", "arguments": '{"city":"Paris"}'},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": "c1", "content": "r"},
            ]
        },
        "openai-responses": {
            "input": [
                {"role": "user", "content": "q"},
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "t"}]},
                {"type": "function_call", "call_id": "c1", "name": "f", "arguments": '{"city":"Paris"}'},
                {"type": "function_call_output", "call_id": "c1", "output": "r"},
            ]
        },
        "anthropic": {
            "messages": [
                {"role": "user", "content": "q"},
                {
                    "role": "assistant",
                    "content": [
                        {"type": "text", "text": "t"},
                        {"type": "tool_use", "id": "c1", "name": "f", "input": args},
                    ],
                },
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1", "content": "r"}]},
            ]
        },
        "gemini": {
            "contents": [
                {"role": "user", "parts": [{"text": "q"}]},
                {
                    "role": "model",
                    "parts": [{"text": "t"}, {"functionCall": {"id": "c1", "name": "f", "args": args}}],
                },
                {
                    "role": "user",
                    "parts": [{"functionResponse": {"id": "c1", "name": "f", "response": {"r": 1}}}],
                },
            ]
        },
        "bedrock-converse": {
            "messages": [
                {"role": "user", "content": [{"text": "q"}]},
                {
                    "role": "assistant",
                    "content": [{"text": "t"}, {"toolUse": {"toolUseId": "c1", "name": "f", "input": args}}],
                },
                {
                    "role": "user",
                    "content": [{"toolResult": {"toolUseId": "c1", "content": [{"text": "r"}]}}],
                },
            ]
        },
        "ollama": {
            "messages": [
                {"role": "user", "content": "q"},
                {
                    "role": "assistant",
                    "content": "t",
                    "tool_calls": [{"id": "c1", "function": {"name": "f", "arguments": args}}],
                },
                {"role": "tool", "tool_call_id": "c1", "tool_name": "f", "content": "r"},
            ]
        },
        "cohere": {
            "messages": [
                {"role": "user", "content": "q"},
                {
                    "role": "assistant",
                    "content": [{"type": "text", "text": "t"}],
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "f", "arguments": '{"city":"Paris"}'},
                        }
                    ],
                },
                {
                    "role": "tool",
                    "tool_call_id": "c1",
                    "content": [{"type": "document", "document": {"data": "r"}}],
                },
            ]
        },
    }
    for dialect, body in bodies.items():
        turn = read_followup(dialect, json.dumps(body))
        assert turn is not None, dialect
        assert turn.calls == (ToolCall("f", args, "c1"),), dialect
        assert turn.text == "t", dialect
        assert [r.call_id for r in turn.results] == ["c1"], dialect
        first = {k: [v[0]] for k, v in body.items()}  # the user's question alone: no follow-up
        assert read_followup(dialect, first) is None, dialect


@pytest.mark.parametrize("dialect", dialects.names())
def test_each_dialect_answers_a_followup_with_a_stream_its_reference_reads_as_complete(dialect: str) -> None:
    media, data = final_answer(dialect, stream=True)
    outcome = dialects.reference_outcome(Response(200, {"content-type": media}, [Chunk(data)]), dialect)
    assert (outcome.text, outcome.state, outcome.tool_calls) == ("Done.", State.COMPLETE, ())


def test_a_responses_followup_by_previous_response_id_is_judged_on_call_ids() -> None:
    turn = read_followup(
        "openai-responses",
        {
            "previous_response_id": "resp_1",
            "input": [{"type": "function_call_output", "call_id": "c2", "output": "r"}],
        },
    )
    assert turn is not None and turn.by_reference and turn.calls == ()
    from harness.oracle.evidence import compare_turn

    lines = compare_turn([ToolCall("f", {}, "c1")], turn)
    # The result for c2 is something run under an id never finished (unsafe); c1's result is lost.
    assert lines == [
        ("call 1: name 'f' expected, got '<unknown>'", Severity.UNSAFE),
        ("call 1: id 'c1' expected, got 'c2'", Severity.LOST),
    ]


# ---------------------------------------------------------------------------------------------
# The oracle


def test_a_followup_carrying_a_call_the_cut_stream_never_finished_is_unsafe(cases: dict[str, Case]) -> None:
    case = cases[CUT]
    assert case.expected.state is State.CUT
    unfinished = Turn(
        (ToolCall("web_search", {"query": "rust"}, "call_x"),), (ToolResult("call_x", None, "r"),)
    )
    result = judge_client(case, "x", Evidence(followup=unfinished))
    assert result.verdict is Verdict.FAIL and result.severities[0] is Severity.UNSAFE
    assert judge_client(case, "x", Evidence(exit_code=1, requests=1)).verdict is Verdict.PASS
    assert judge_client(case, "x", Evidence(timed_out=True)).verdict is Verdict.TIMEOUT


def test_a_program_that_drops_finished_calls_loses_them(cases: dict[str, Case]) -> None:
    case = cases[PARALLEL]
    first = case.expected.tool_calls[0]
    half = Turn((first,), (ToolResult(first.id, None, "r"),))
    result = judge_client(case, "x", Evidence(followup=half))
    assert result.verdict is Verdict.FAIL and result.severities == (Severity.LOST, Severity.LOST)
    silent = judge_client(case, "x", Evidence(exit_code=0, requests=1))
    assert silent.verdict is Verdict.FAIL and silent.severities == (Severity.LOST,) * 3
    assert "no follow-up" in (silent.error or "")
    # A raise after asking for the stream is what the program's user gets: judged, like a library's.
    raised = judge_client(
        case, "x", Evidence(exit_code=3, stderr="Traceback\nValueError: boom\n", requests=1)
    )
    assert (
        raised.verdict is Verdict.FAIL
        and "state: complete expected, got error (ValueError: boom)" in raised.diff
    )
    # Exiting without ever asking for it says nothing of the stream: the harness could not judge.
    unstarted = judge_client(case, "x", Evidence(exit_code=3, stderr="Traceback\nValueError: boom\n"))
    assert unstarted.verdict is Verdict.ERROR and "without asking for the stream" in (unstarted.error or "")
    assert "ValueError: boom" in (unstarted.error or "")


# ---------------------------------------------------------------------------------------------
# Programs run per case


AGENT = textwrap.dedent(
    '''
    """A tiny agent loop on the standard library: stream, keep calls by their index, run, follow up."""
    import http.client, json, os, sys, urllib.parse

    base = urllib.parse.urlsplit(os.environ["OPENAI_BASE_URL"])

    def chat(body):
        connection = http.client.HTTPConnection(base.hostname, base.port, timeout=10)
        key = os.environ["OPENAI_API_KEY"]
        headers = {"content-type": "application/json", "authorization": "Bearer " + key}
        connection.request("POST", base.path + "/chat/completions", json.dumps(body), headers)
        return connection.getresponse()

    messages = [{"role": "user", "content": "hi"}]
    calls = {}
    for line in chat({"model": "m", "messages": messages, "stream": True}):
        line = line.strip()
        if not line.startswith(b"data:") or line == b"data: [DONE]":
            continue
        for choice in json.loads(line[5:]).get("choices") or []:
            for part in (choice.get("delta") or {}).get("tool_calls") or []:
                call = calls.setdefault(part.get("index"), {"id": None, "name": "", "arguments": ""})
                call["id"] = call["id"] or part.get("id")
                call["name"] += (part.get("function") or {}).get("name") or ""
                call["arguments"] += (part.get("function") or {}).get("arguments") or ""
    if not calls:
        sys.exit(0)
    turn = [{"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
            for c in calls.values()]
    messages += [{"role": "assistant", "content": None, "tool_calls": turn}]
    messages += [{"role": "tool", "tool_call_id": c["id"], "content": "ok"} for c in calls.values()]
    print(chat({"model": "m", "messages": messages, "stream": True}).read().decode()[:40])
    '''
)


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    path = tmp_path_factory.mktemp("agent") / "agent.py"
    path.write_text(AGENT)
    return [sys.executable, str(path)]


@pytest.fixture(scope="module")
def openai_chat_cases() -> list[Case]:
    selection = Selection(dialects=("openai-chat",), scenarios=("original", "parallel-calls-share-index-0"))
    return list(selected_cases(selection))


def test_an_agent_loop_merges_parallel_calls_that_share_index_0(
    agent: list[str], openai_chat_cases: list[Case]
) -> None:
    report = run_clients(openai_chat_cases, agent, jobs=4, timeout=20)
    by_id = {r.id: r for r in report.results}
    shared = [r for r in report.results if r.scenario == "parallel-calls-share-index-0"]
    assert shared and all(r.verdict is Verdict.FAIL for r in shared)
    # Both calls under the first one's id: the merged call is unsafe, the second call is lost.
    merged = dict(zip(by_id[SHARED_INDEX].diff, by_id[SHARED_INDEX].severities, strict=True))
    assert merged["call 1: name 'get_weather' expected, got 'get_weatherget_time'"] is Severity.UNSAFE
    assert merged['call 2: \'get_time\' {"timezone":"Europe/Paris"} expected, missing'] is Severity.LOST
    originals = {r.id: r.verdict for r in report.results if r.scenario == "original"}
    assert originals[PARALLEL] is Verdict.PASS and originals[SINGLE] is Verdict.PASS
    # Iterating an http.client response by lines ends quietly where the connection was cut: this
    # loop runs the half-streamed call, and its follow-up shows it.
    assert originals[CUT] is Verdict.FAIL
    assert by_id[CUT].severity is Severity.UNSAFE and by_id[CUT].diff[0].startswith(
        "tool_calls: 0 expected, got 1"
    )
    # Served as recorded, the litellm bridge's shared index fools this loop too.
    assert originals["openai-chat/litellm-bridge-parallel-index0::original::s0"] is Verdict.FAIL


@pytest.mark.slow
def test_eight_clients_in_parallel_give_the_same_report_as_one(
    agent: list[str], openai_chat_cases: list[Case]
) -> None:
    chosen = openai_chat_cases[:16]
    serial = run_clients(chosen, agent, jobs=1, timeout=20)
    parallel = run_clients(chosen, agent, jobs=8, timeout=20)

    def plain(report: Any) -> list[tuple[str, str, tuple[str, ...]]]:
        return [(r.id, str(r.verdict), r.diff) for r in report.results]

    assert plain(parallel) == plain(serial)  # (speed is the benchmarks' business, not a test's)


RAISER = textwrap.dedent(
    """
    import json, os, urllib.request
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True})
    url = os.environ["OPENAI_BASE_URL"] + "/chat/completions"
    request = urllib.request.Request(url, body.encode(), {"content-type": "application/json"})
    urllib.request.urlopen(request, timeout=10).read()
    raise json.JSONDecodeError("the stream is not what I expected", "doc", 3)
    """
)


def test_a_program_that_raises_after_its_stream_fails_with_the_raise(tmp_path: Path) -> None:
    """The raise rule of the in-process libraries: on a complete case, what the program raised is
    its user's outcome (state error, no calls), judged and signed like a library's raise; on a cut
    case it ended, which is right. One that never asks for its stream (it cannot start) is an
    error: nothing it did says anything of the case."""
    program = tmp_path / "raiser.py"
    program.write_text(RAISER)
    args = ["check", "--case", SINGLE, "--case", CUT, "--timeout", "20", "-j", "2"]
    code = main([*args, "--client", f"{sys.executable} {program}", "--json", str(tmp_path / "r.json")])
    by_id = {c["id"]: c for c in json.loads((tmp_path / "r.json").read_text())["cases"]}
    assert code == 1 and by_id[CUT]["verdict"] == "pass"
    raised = by_id[SINGLE]
    assert raised["verdict"] == "fail" and raised["severity"] == "lost"
    error = "JSONDecodeError: the stream is not what I expected: line 1 column 4 (char 3)"
    assert f"state: complete expected, got error ({error})" in raised["diff"]
    # Signed like an in-process raise: `known.yaml`'s `raises <error>` entries cover it.
    assert raise_key(signature(raised)) == (
        "raises JSONDecodeError: the stream is not what I expected: line … column … (char …)"
    )
    missing = tmp_path / "missing.py"
    missing.write_text("import toolstream_no_such_module\n")
    for command in (f"{sys.executable} {missing}", f"exec {tmp_path / 'no-such-program'}"):
        code = main([*args, "--client", command, "--json", str(tmp_path / "n.json")])
        by_id = {c["id"]: c for c in json.loads((tmp_path / "n.json").read_text())["cases"]}
        assert code == 1 and by_id[SINGLE]["verdict"] == "error", command
        assert "without asking for the stream" in by_id[SINGLE]["error"]


def test_a_program_that_hangs_is_killed_with_everything_it_started(
    tmp_path: Path, cases: dict[str, Case]
) -> None:
    pids = tmp_path / "pids"
    program = f"sleep 60 & echo $! > {pids}; wait"
    start = time.monotonic()
    report = run_clients([cases[SINGLE]], program, timeout=1)
    assert report.results[0].verdict is Verdict.TIMEOUT and time.monotonic() - start < 10
    child = Path(f"/proc/{int(pids.read_text())}/stat")
    time.sleep(0.1)
    # Gone, or a zombie its new parent has yet to reap: either way no longer running.
    assert not child.exists() or child.read_text().rsplit(")", 1)[1].split()[0] == "Z"


def test_a_program_may_report_its_outcome_on_stdout_or_by_post(cases: dict[str, Case]) -> None:
    line = json.dumps(cases[SINGLE].expected.to_dict())
    printed = run_clients([cases[SINGLE]], [sys.executable, "-c", f"print({line!r})"], timeout=10)
    assert printed.results[0].verdict is Verdict.PASS
    poster = (
        "import json, os, urllib.request as u;"
        "url = os.environ['TOOLSTREAM_BASE_URL'] + '/report';"
        "u.urlopen(u.Request(url, json.dumps({'tool_calls': []}).encode()))"
    )
    posted = run_clients([cases[SINGLE]], [sys.executable, "-c", poster], timeout=10)
    assert posted.results[0].verdict is Verdict.FAIL and posted.results[0].diff[0].startswith(
        "tool_calls: 1 expected"
    )


def test_the_cli_runs_a_client_per_case_and_exits_1_on_failures(
    agent: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    command = " ".join(agent)
    code = main(
        [
            "serve",
            "--case",
            SINGLE,
            "--case",
            SHARED_INDEX,
            "--client",
            command,
            "--json",
            str(tmp_path / "r.json"),
        ]
    )
    out = capsys.readouterr().out
    assert code == 1 and f"FAIL {SHARED_INDEX}" in out and "1 pass, 1 fail" in out
    report = json.loads((tmp_path / "r.json").read_text())
    assert [c["verdict"] for c in report["cases"]] == ["pass", "fail"]


def test_serving_by_hand_prints_the_base_url_a_sdk_takes() -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "harness.cli", "serve", "--case", SINGLE],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert process.stdout is not None
        first, second = process.stdout.readline(), process.stdout.readline()
        assert "1 cases on http://127.0.0.1:" in first
        variable, url = second.strip().split("=", 1)
        assert variable == "OPENAI_BASE_URL" and url.endswith(case_prefix(SINGLE) + "/v1")
        status, _, body = post(url + "/chat/completions", {"model": "m", "messages": []})
        assert status == 200 and json.loads(body)["choices"][0]["finish_reason"] == "tool_calls"
    finally:
        process.terminate()
        process.wait(10)


# ---------------------------------------------------------------------------------------------
# The curl recipe of docs/commands.md


def readme_recipe() -> str:
    text = (ROOT / "docs" / "commands.md").read_text()
    section = text.split("## Replay server", 1)[1].split("\n## ", 1)[0]
    found = re.search(r"```sh\n(.*?)```", section, re.DOTALL)
    assert found, "the Replay server section has a sh block"
    return found.group(1)


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
def test_the_readme_curl_recipe_serves_a_case_by_hand(tmp_path: Path) -> None:
    recipe = readme_recipe()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    script = recipe.replace("8765", str(port))
    script = script.replace("toolstream serve", f"{sys.executable} -m harness.cli serve")
    # The recipe's server runs in the background; the script waits for it and stops it after.
    wrapped = "set -e\n" + script.replace("&\n", "& SERVER=$!\nsleep 0.2\n", 1) + "\nkill $SERVER\n"
    wrapped = wrapped.replace("curl ", "curl --retry 30 --retry-connrefused --retry-delay 1 ", 1)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = subprocess.run(
        ["bash", "-c", wrapped], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr
    assert '"finish_reason":"tool_calls"' in run.stdout and "data: [DONE]" in run.stdout
    assert '"verdict": "pass"' in run.stdout


OFFERS_GET_WEATHER = textwrap.dedent(
    """
    import json, os, urllib.request
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "tools": tools, "stream": True}
    url = os.environ["OPENAI_BASE_URL"] + "/chat/completions"
    request = urllib.request.Request(url, json.dumps(body).encode(), {"content-type": "application/json"})
    urllib.request.urlopen(request, timeout=10).read()
    """
)


def test_a_call_to_a_tool_the_program_did_not_offer_is_skipped_not_failed(tmp_path: Path) -> None:
    """A stream calling a custom (freeform) tool the program's request does not offer (retargeting
    cannot move freeform input onto a function) is one no provider sends for that request: the
    case is skipped with the reason, not failed as the program's fault (the Agents SDK's card row
    lost 58 such verdicts). A case whose calls it offers is judged as before: no follow-up."""
    program = tmp_path / "offers.py"
    program.write_text(OFFERS_GET_WEATHER)
    custom = "openai-chat/custom-tool::original::s0"
    chosen = list(selected_cases(Selection(cases=(custom, SINGLE))))
    report = run_clients(chosen, [sys.executable, str(program)], timeout=20)
    by_id = {r.id: r for r in report.results}
    skipped = by_id[custom]
    assert skipped.verdict is Verdict.SKIPPED
    assert skipped.error == "the stream calls 'run_shell', a tool the program's request does not offer"
    assert by_id[SINGLE].verdict is Verdict.FAIL and "no follow-up" in (by_id[SINGLE].error or "")
    # The same under the runner (`client:CMD`, a server per worker process).
    matrix = run_matrix(f"client:{sys.executable} {program}", Selection(cases=(custom,)), timeout=30)
    assert [(r.verdict, r.error) for r in matrix.results] == [(Verdict.SKIPPED, skipped.error)]
