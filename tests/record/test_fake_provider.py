"""FakeProvider: scripted chunked responses over a real socket, cuts, cassettes, shutdown."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator

import httpx
import httpx2
import pytest

from harness.cassettes.format import Cassette, Chunk, Interaction, Request, Response, Source
from harness.record.fake_provider import FakeProvider, Script, Write


@pytest.fixture
def fake() -> Iterator[FakeProvider]:
    with FakeProvider() as server:
        yield server


def raw_exchange(url: str, request: bytes) -> bytes:
    """Send `request` on a fresh socket and read until the server closes or the body ends."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(request)
        received = b""
        while not received.endswith(b"0\r\n\r\n"):
            data = sock.recv(65536)
            if not data:
                break
            received += data
    return received


def read_raw(
    client: httpx.Client | httpx2.Client, method: str, url: str
) -> tuple[list[bytes], Exception | None]:
    """The raw reads of a streamed response, and the transport error that ended it, if any."""
    seen: list[bytes] = []
    try:
        with client.stream(method, url) as response:
            seen.extend(response.iter_raw())
    except (httpx.TransportError, httpx2.TransportError) as exc:
        return seen, exc
    return seen, None


def test_each_write_is_one_http_chunk_on_the_wire(fake: FakeProvider) -> None:
    writes = [Write(b"data: a"), Write(b"bc\n\n"), Write(b"\xc3")]
    fake.route("GET", "/s", Script(writes, headers={"x-a": "1"}))
    wire = raw_exchange(fake.url, b"GET /s HTTP/1.1\r\nHost: x\r\n\r\n")
    head, _, body = wire.partition(b"\r\n\r\n")
    assert head.split(b"\r\n")[0] == b"HTTP/1.1 200 OK"
    assert b"x-a: 1" in head.split(b"\r\n")
    assert b"Transfer-Encoding: chunked" in head.split(b"\r\n")
    assert body == b"7\r\ndata: a\r\n4\r\nbc\n\n\r\n1\r\n\xc3\r\n0\r\n\r\n"


def test_delays_keep_read_boundaries_and_bytes(fake: FakeProvider) -> None:
    euro = "€".encode()
    writes = [b"data: {\"a", euro[:1], euro[1:] + b"\"}\n", b"\n"]
    script = Script.of(writes, delay=0.02, status=201, headers={"content-type": "text/plain"})
    fake.route("POST", "/v1/x", script)
    with httpx.Client() as client, client.stream("POST", fake.url + "/v1/x", content=b"hi") as response:
        assert response.status_code == 201
        assert response.headers["content-type"] == "text/plain"
        assert list(response.iter_raw()) == writes


def test_cut_after_n_writes_breaks_the_stream(fake: FakeProvider) -> None:
    fake.route("GET", "/cut", Script.of([b"one", b"two", b"three"], delay=0.02, cut_after=2))
    with httpx2.Client() as client:
        seen, error = read_raw(client, "GET", fake.url + "/cut")
    assert seen == [b"one", b"two"]
    assert isinstance(error, httpx2.RemoteProtocolError)


@pytest.mark.parametrize("cut_after", [0, 5])
def test_cut_before_any_write_or_past_the_last(fake: FakeProvider, cut_after: int) -> None:
    fake.route("GET", "/cut", Script.of([b"a", b"b"], delay=0.02, cut_after=cut_after))
    with httpx.Client() as client:
        seen, error = read_raw(client, "GET", fake.url + "/cut")
    assert seen == ([] if cut_after == 0 else [b"a", b"b"])
    assert isinstance(error, httpx.RemoteProtocolError)


def test_requests_are_recorded(fake: FakeProvider) -> None:
    fake.route("POST", "/v1/chat", Script.of([b"ok"]))
    with httpx.Client() as client:
        auth = {"Authorization": "Bearer s"}
        client.post(fake.url + "/v1/chat?key=k1&alt=sse", json={"model": "m"}, headers=auth)
        client.post(fake.url + "/v1/chat", content=iter([b"chunked ", b"body"]))  # Transfer-Encoding: chunked
    first, second = fake.requests
    assert (first.method, first.path, first.query) == ("POST", "/v1/chat", "key=k1&alt=sse")
    assert first.params == {"key": "k1", "alt": "sse"}
    assert first.header("authorization") == "Bearer s"
    assert first.json() == {"model": "m"}
    assert second.body == b"chunked body"


def test_unknown_route_is_404_and_still_recorded(fake: FakeProvider) -> None:
    response = httpx.get(fake.url + "/nowhere")
    assert response.status_code == 404
    assert "GET /nowhere" in response.json()["error"]["message"]
    assert [r.path for r in fake.requests] == ["/nowhere"]


def test_route_serves_scripts_in_order_then_repeats_the_last(fake: FakeProvider) -> None:
    fake.route("GET", "/r", Script.of([b"first"])).route("GET", "/r", Script.of([b"second"]))
    with httpx.Client() as client:
        bodies = [client.get(fake.url + "/r").content for _ in range(3)]
    assert bodies == [b"first", b"second", b"second"]


def test_async_client(fake: FakeProvider) -> None:
    fake.route("GET", "/a", Script.of([b"x", b"y"], delay=0.02))

    async def read() -> list[bytes]:
        async with httpx2.AsyncClient() as client, client.stream("GET", fake.url + "/a") as response:
            return [part async for part in response.aiter_raw()]

    assert asyncio.run(read()) == [b"x", b"y"]


def make_cassette(*, complete: bool = True) -> Cassette:
    response = Response(
        status=200,
        headers={"content-type": "text/event-stream", "content-length": "999", "x-request-id": "r1"},
        chunks=[Chunk(b"data: 1\n\n", 0.0), Chunk(b"data: 2\n\n", 60.0), Chunk(b"data: 3\n\n", 120.0)],
        complete=complete,
        error=None if complete else "peer closed connection",
    )
    request = Request("POST", "https://api.example.com/v1/chat/completions?x=1", {}, {"stream": True})
    return Cassette("c", Source("recorded", "test"), [Interaction(request, response)])


def test_serves_a_cassette_with_its_chunks_and_headers() -> None:
    cassette = make_cassette()
    with FakeProvider.from_cassette(cassette) as fake:
        response = httpx.post(fake.url + "/v1/chat/completions", json={})
        body, headers = response.content, response.headers
    assert body == cassette.interactions[0].response.body
    assert headers["x-request-id"] == "r1"
    assert "content-length" not in headers  # framing is the server's: chunked
    assert headers["transfer-encoding"] == "chunked"


def test_cassette_pacing_follows_offsets() -> None:
    with FakeProvider.from_cassette(make_cassette(), speed=2.0) as fake:
        started = time.monotonic()
        httpx.post(fake.url + "/v1/chat/completions", json={})
        elapsed = time.monotonic() - started
    assert elapsed >= 0.055  # 120 ms recorded, at twice the speed


def test_cut_cassette_is_cut_again() -> None:
    with FakeProvider.from_cassette(make_cassette(complete=False)) as fake, httpx.Client() as client:
        seen, error = read_raw(client, "POST", fake.url + "/v1/chat/completions")
    assert b"".join(seen) == make_cassette().interactions[0].response.body
    assert isinstance(error, httpx.RemoteProtocolError)


def test_stop_closes_idle_connections_and_interrupts_delays() -> None:
    before = set(threading.enumerate())
    fake = FakeProvider().start()
    fake.route("GET", "/idle", Script.of([b"ok"]))
    fake.route("GET", "/slow", Script([Write(b"a"), Write(b"b", 30.0)]))
    client = httpx.Client()
    assert client.get(fake.url + "/idle").content == b"ok"  # leaves a keep-alive connection open
    errors: list[BaseException] = []

    def slow() -> None:
        try:
            httpx.get(fake.url + "/slow", timeout=10)
        except httpx.HTTPError as exc:
            errors.append(exc)

    reader = threading.Thread(target=slow)
    reader.start()
    deadline = time.monotonic() + 5
    while len(fake.requests) < 2 and time.monotonic() < deadline:  # until /slow is being served
        time.sleep(0.01)
    started = time.monotonic()
    fake.stop()
    assert time.monotonic() - started < 3
    reader.join(timeout=5)
    client.close()
    assert [type(e) for e in errors] == [httpx.RemoteProtocolError]
    assert set(threading.enumerate()) <= before
    fake.stop()  # a second stop is harmless


def test_url_before_start_raises() -> None:
    with pytest.raises(RuntimeError, match="not running"):
        _ = FakeProvider().url


def test_bad_content_length_is_refused_and_the_server_keeps_serving(fake: FakeProvider) -> None:
    fake.route("GET", "/ok", Script.of([b"fine"]))
    wire = raw_exchange(fake.url, b"POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: nope\r\n\r\n")
    assert wire.startswith(b"HTTP/1.1 413")
    assert httpx.get(fake.url + "/ok").content == b"fine"


def test_chunked_request_body_with_a_negative_size_is_refused(fake: FakeProvider) -> None:
    request = b"POST /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n-5\r\nhello\r\n0\r\n\r\n"
    assert raw_exchange(fake.url, request).startswith(b"HTTP/1.1 400")
    assert fake.requests == []
