"""The replay server and the recording proxy take every request, and every cassette value, from a
stranger: real sockets on 127.0.0.1, malformed HTTP written raw. Each refusal is an HTTP answer
with one line saying why, never a closed socket and a traceback."""

from __future__ import annotations

import dataclasses
import json
import logging
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.cassettes.format import Response, load
from harness.errors import CassetteError
from harness.matrix.selection import Selection
from harness.matrix.selection import cases as selected_cases
from harness.mutate.scenario import Case
from harness.record.fake_provider import FakeProvider, Script
from harness.serve import ReplayServer
from harness.serve.http1 import MAX_CHUNK_LINE, BadRequest
from harness.serve.routes import case_prefix
from harness.serve.upstream import Recorder

SINGLE = "openai-chat/single-call::original::s0"
PATH = case_prefix(SINGLE) + "/v1/chat/completions"
SECRET = "sk-live-must-stay-with-the-upstream"


@pytest.fixture(scope="module")
def case() -> Case:
    (found,) = selected_cases(Selection(cases=(SINGLE,)))
    return found


@pytest.fixture
def server(case: Case) -> Iterator[ReplayServer]:
    with ReplayServer([case]).running() as running:
        yield running


def exchange(port: int, request: bytes, *, timeout: float = 10) -> bytes:
    """Send raw bytes, read until the server closes (or resets) the connection."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(request)
        out = b""
        try:
            while chunk := sock.recv(65536):
                out += chunk
        except ConnectionResetError:
            pass
    return out


def status_of(reply: bytes) -> int:
    assert reply.startswith(b"HTTP/1.1 "), reply[:200]
    return int(reply[9:12])


def reason_of(reply: bytes) -> str:
    body = reply.partition(b"\r\n\r\n")[2]
    message: str = json.loads(body)["error"]["message"]
    assert "\n" not in message
    return message


def json_post(path: str, body: bytes) -> bytes:
    head = f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    return head.encode() + body


@pytest.fixture
def no_traceback(caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]) -> Iterator[None]:
    """Nothing escapes a connection: asyncio logs no unhandled exception, stderr holds no traceback."""
    with caplog.at_level(logging.ERROR, logger="asyncio"):
        yield
    assert not [r for r in caplog.records if r.name == "asyncio"], caplog.text
    assert "Traceback" not in capfd.readouterr().err


# ---------------------------------------------------------------------------------------------
# The recording proxy talks to its upstream and nowhere else


@pytest.fixture
def upstream() -> Iterator[FakeProvider]:
    with FakeProvider() as fake:
        fake.route("POST", "/v1/chat/completions", Script.of([b"data: [DONE]\n\n"]))
        yield fake


@pytest.fixture
def evil() -> Iterator[FakeProvider]:
    with FakeProvider() as fake:
        fake.route("POST", "/v1/chat/completions", Script.of([b"data: [DONE]\n\n"]))
        yield fake


def proxied(server: ReplayServer, method: str, target: str) -> bytes:
    body = b'{"model":"m","messages":[],"stream":true}'
    head = (
        f"{method} {target} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {SECRET}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    return exchange(server.port, head.encode() + body)


def test_the_recording_proxy_forwards_a_path_to_its_upstream(
    upstream: FakeProvider, evil: FakeProvider, tmp_path: Path
) -> None:
    server = ReplayServer((), recorder=Recorder(upstream.url, tmp_path))
    with server.running():
        reply = proxied(server, "POST", "/v1/chat/completions")
    assert status_of(reply) == 200 and b"data: [DONE]" in reply
    (received,) = upstream.requests
    assert received.header("authorization") == f"Bearer {SECRET}"
    assert evil.requests == []


@pytest.mark.parametrize(
    ("method", "target"),
    [
        ("POST", "@{evil}/v1/chat/completions"),  # U + target: the upstream's host becomes userinfo
        ("POST", "http://{evil}/v1/chat/completions"),
        ("POST", "//{evil}/v1/chat/completions"),
        ("CONNECT", "{evil}"),
        ("POST", "{evil}/v1/chat/completions"),
        ("POST", "*"),
    ],
    ids=["at-host", "absolute-url", "double-slash", "connect", "authority", "asterisk"],
)
def test_the_recording_proxy_refuses_a_target_that_is_not_a_path(
    upstream: FakeProvider, evil: FakeProvider, tmp_path: Path, method: str, target: str, no_traceback: None
) -> None:
    server = ReplayServer((), recorder=Recorder(upstream.url, tmp_path / "recorded"))
    with server.running():
        reply = proxied(server, method, target.format(evil=evil.url.removeprefix("http://")))
    assert status_of(reply) == 400
    assert "target" in reason_of(reply) or "CONNECT" in reason_of(reply)
    assert evil.requests == [], "the client's key went to another host"
    assert upstream.requests == []
    assert not (tmp_path / "recorded").exists()


def test_a_path_holding_at_stays_on_the_upstream(upstream: FakeProvider, tmp_path: Path) -> None:
    """`@` inside a path is no authority (Vertex model versions are `claude@20240620`); the
    recorder checks a target itself too, for callers of `Recorder.forward` without the server."""
    recorder = Recorder(upstream.url + "/base", tmp_path)
    assert recorder.url_for("/v1/models/m@001:x?y=1") == upstream.url + "/base/v1/models/m@001:x?y=1"
    for target in ("@evil:1/v1", "http://evil/v1", "//evil/v1", "evil:443", "/v1#x", "/v1 x"):
        with pytest.raises(BadRequest):
            recorder.url_for(target)


# ---------------------------------------------------------------------------------------------
# Malformed HTTP: an answer with one line, never a traceback


def chunked(*lines: bytes) -> bytes:
    head = f"POST {PATH} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n".encode()
    return head + b"".join(lines)


MALFORMED = {
    "negative-chunk-size": (chunked(b"-5\r\nabc\r\n"), 400, "chunk size"),
    "non-hex-chunk-size": (chunked(b"zz\r\n"), 400, "chunk size"),
    "prefixed-chunk-size": (chunked(b"0x5\r\nabcde\r\n0\r\n\r\n"), 400, "chunk size"),
    "underscored-chunk-size": (chunked(b"1_0\r\n"), 400, "chunk size"),
    "chunk-size-line-over-64k": (chunked(b"1" * 70_000 + b"\r\n"), 400, "chunk-size line"),
    "chunk-extension-over-limit": (chunked(b"5;" + b"x" * MAX_CHUNK_LINE + b"\r\n"), 400, "chunk-size line"),
    "chunk-without-crlf": (chunked(b"3\r\nabcXY0\r\n\r\n"), 400, "CRLF"),
    "bracket-authority": (b"GET //[x/ HTTP/1.1\r\nHost: x\r\n\r\n", 400, "target"),
    "absolute-url": (b"GET http://evil/ HTTP/1.1\r\nHost: x\r\n\r\n", 400, "target"),
    "control-in-target": (b"GET /a\x01b HTTP/1.1\r\nHost: x\r\n\r\n", 400, "target"),
    "http-2-line": (b"GET / HTTP/2.0\r\nHost: x\r\n\r\n", 400, "request line"),
    "no-version": (b"GET /\r\nHost: x\r\n\r\n", 400, "request line"),
    "header-without-colon": (b"GET / HTTP/1.1\r\nHost x\r\n\r\n", 400, "header line"),
    "space-before-colon": (b"GET / HTTP/1.1\r\nHost : x\r\n\r\n", 400, "header line"),
    "bare-lf-in-header": (b"GET / HTTP/1.1\r\nHost: x\nX-Evil: 1\r\n\r\n", 400, "control"),
    "signed-content-length": (b"POST / HTTP/1.1\r\nContent-Length: +5\r\n\r\nabcde", 400, "Content-Length"),
    "two-content-lengths": (
        b"POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
        400,
        "Content-Length",
    ),
    "length-and-chunked": (
        b"POST / HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        400,
        "both",
    ),
    "gzip-encoding": (b"POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", 400, "chunked"),
    "headers-over-64k": (b"GET / HTTP/1.1\r\nX-Big: " + b"a" * 70_000 + b"\r\n\r\n", 431, "headers"),
    "declared-body-too-large": (b"POST / HTTP/1.1\r\nContent-Length: 99999999999\r\n\r\n", 413, "limit"),
    "chunked-body-too-large": (chunked(b"fffffffffff\r\n"), 413, "limit"),
    "json-nested-100000-deep": (json_post(PATH, b"[" * 100_000 + b"]" * 100_000), 400, "nested deeper"),
    "json-of-many-small-values": (json_post(PATH, b"[" + b"[]," * 1_000_000 + b"[]]"), 413, "values"),
    "json-object-nested-deep": (json_post(PATH, b'{"a":' * 99 + b"1" + b"}" * 99), 400, "nested deeper"),
}


@pytest.mark.parametrize(("request_bytes", "status", "why"), MALFORMED.values(), ids=MALFORMED.keys())
def test_malformed_http_gets_a_status_and_one_line(
    server: ReplayServer, request_bytes: bytes, status: int, why: str, no_traceback: None
) -> None:
    reply = exchange(server.port, request_bytes)
    assert status_of(reply) == status
    assert why in reason_of(reply)


def test_a_request_after_a_refused_body_on_another_connection_is_served(server: ReplayServer) -> None:
    exchange(server.port, MALFORMED["json-nested-100000-deep"][0])
    body = json.dumps({"model": "m", "messages": [], "stream": True}).encode()
    reply = exchange(server.port, json_post(PATH, body))
    assert status_of(reply) == 200 and b"data: [DONE]" in reply
    assert server.budget.held == 0


def test_a_handlers_own_error_is_a_500_and_one_stderr_line(
    server: ReplayServer, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    def broken(request: object) -> None:
        raise KeyError("a harness bug")

    monkeypatch.setattr(server, "_answer", broken)
    reply = exchange(server.port, json_post(PATH, b"{}"))
    assert status_of(reply) == 500 and "KeyError" in reason_of(reply)
    err = capfd.readouterr().err
    assert "Traceback" not in err and err.count("\n") == 1 and "KeyError: 'a harness bug'" in err


# ---------------------------------------------------------------------------------------------
# Memory: one budget for every body in flight, not only a cap per connection


def slow_upload(port: int, size: int, replies: list[bytes], *, piece: int = 32 * 1024) -> None:
    """POST a valid JSON body of `size` bytes (spaces after the object) a piece at a time."""
    body = json.dumps({"model": "m", "messages": [], "stream": False}).encode()
    body += b" " * (size - len(body))
    head = f"POST {PATH} HTTP/1.1\r\nHost: x\r\nContent-Length: {size}\r\nConnection: close\r\n\r\n"
    with socket.create_connection(("127.0.0.1", port), timeout=20) as sock:
        try:
            sock.sendall(head.encode())
            for start in range(0, size, piece):
                sock.sendall(body[start : start + piece])
                time.sleep(0.01)
        except OSError:
            pass  # refused mid-upload: the answer is waiting to be read
        out = b""
        try:
            while chunk := sock.recv(65536):
                out += chunk
        except OSError:
            pass
    replies.append(out)


def test_concurrent_slow_uploads_are_refused_past_the_shared_budget(case: Case, no_traceback: None) -> None:
    budget, size, clients = 1024 * 1024, 600 * 1024, 6
    replies: list[bytes] = []
    with ReplayServer([case], max_body=size, body_budget=budget).running() as server:
        threads = [
            threading.Thread(target=slow_upload, args=(server.port, size, replies)) for _ in range(clients)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert server.budget.peak <= budget  # never more held at once than the budget
        deadline = time.monotonic() + 5
        while server.budget.held and time.monotonic() < deadline:  # the last answers' connections closing
            time.sleep(0.01)
        assert server.budget.held == 0  # every body given back
    statuses = sorted(status_of(reply) for reply in replies)
    assert len(statuses) == clients  # every client got an answer, none a reset
    assert 200 in statuses and 503 in statuses and set(statuses) <= {200, 503}
    refused = next(reply for reply in replies if status_of(reply) == 503)
    assert b"\r\nretry-after: 1\r\n" in refused and "limit" in reason_of(refused)


def test_a_body_larger_than_the_budget_is_refused_before_it_is_sent(case: Case) -> None:
    with ReplayServer([case], max_body=1024 * 1024, body_budget=512 * 1024).running() as server:
        head = f"POST {PATH} HTTP/1.1\r\nContent-Length: {600 * 1024}\r\nExpect: 100-continue\r\n\r\n"
        reply = exchange(server.port, head.encode())
    assert status_of(reply) == 503 and b"100 Continue" not in reply


def test_connections_past_the_cap_are_refused(case: Case) -> None:
    with ReplayServer([case], max_connections=2).running() as server:
        idle = [socket.create_connection(("127.0.0.1", server.port), timeout=10) for _ in range(2)]
        try:
            time.sleep(0.2)  # both accepted
            reply = exchange(server.port, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        finally:
            for sock in idle:
                sock.close()
    assert status_of(reply) == 503 and b"retry-after: 1" in reply


# ---------------------------------------------------------------------------------------------
# A cassette's headers never reach the wire raw


def cassette_with(tmp_path: Path, headers: str, status: int = 200) -> Path:
    path = tmp_path / "evil.yaml"
    path.write_text(
        "version: 1\nname: evil\ndialect: openai-chat\n"
        "source: {kind: synthesized, provenance: a test}\n"
        "interactions:\n"
        "- request: {method: POST, url: 'http://127.0.0.1/v1/chat/completions'}\n"
        f"  response:\n    status: {status}\n    headers: {headers}\n"
        "    chunks: [{text: \"data: [DONE]\\n\\n\"}]\n"
    )
    return path


@pytest.mark.parametrize(
    ("headers", "field"),
    [
        ('{x-ok: "a\\r\\nSet-Cookie: pwned=1"}', "interactions[0].response.headers.x-ok"),
        ('{x-ok: "a\\nb"}', "interactions[0].response.headers.x-ok"),
        ('{x-ok: "a\\0b"}', "interactions[0].response.headers.x-ok"),
        ('{"x-evil\\r\\nset-cookie": a}', "interactions[0].response.headers.'x-evil\\r\\nset-cookie'"),
        ('{"x evil": a}', "interactions[0].response.headers.'x evil'"),
    ],
    ids=["crlf-value", "lf-value", "nul-value", "crlf-name", "space-name"],
)
def test_a_cassette_header_with_control_characters_is_refused_at_load(
    tmp_path: Path, headers: str, field: str
) -> None:
    path = cassette_with(tmp_path, headers)
    with pytest.raises(CassetteError) as raised:
        load(path)
    assert str(path) in str(raised.value) and field in str(raised.value)
    assert "\n" not in str(raised.value) and "\r" not in str(raised.value)


def test_a_cassette_status_outside_http_is_refused_at_load(tmp_path: Path) -> None:
    with pytest.raises(CassetteError, match=r"response\.status: must be from 100 to 599"):
        load(cassette_with(tmp_path, "{}", status=1000))


def test_the_cli_exits_2_for_a_cassette_that_would_inject_headers(tmp_path: Path) -> None:
    from harness.cli import main

    path = cassette_with(tmp_path, '{x-ok: "a\\r\\nSet-Cookie: pwned=1"}')
    assert main(["serve", "--cassettes", str(path), "--port", "0", "--client", "true"]) == 2


def test_a_response_built_in_code_never_writes_a_header_that_injects(case: Case, no_traceback: None) -> None:
    response = case.response
    hostile = Response(
        status=response.status,
        headers={"x-ok": "a\r\nSet-Cookie: pwned=1", "x-evil\r\nset-cookie": "b", "x-fine": "kept"},
        chunks=response.chunks,
        complete=response.complete,
    )
    with ReplayServer([dataclasses.replace(case, response=hostile)]).running() as server:
        body = json.dumps({"model": "m", "messages": [], "stream": True}).encode()
        reply = exchange(server.port, json_post(PATH, body))
    head = reply.partition(b"\r\n\r\n")[0].lower()
    assert status_of(reply) == 200 and b"x-fine: kept" in head
    assert b"set-cookie" not in head and b"x-ok" not in head
