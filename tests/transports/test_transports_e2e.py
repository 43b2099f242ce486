"""Record through the real network transports against a local server, then replay.

The fake provider streams an OpenAI chat completion with two parallel tool calls in deliberately
odd writes (mid-line, mid-JSON, inside multi-byte UTF-8 characters, with small delays). Recording
must hand the client exactly what arrived, and replay must give it the same bytes in the same
reads. Also covered: the real `openai` SDK on both sides, secrets kept out of the cassette while
the server still received them, and a stream cut by the server recorded and replayed as cut.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import httpx2
import openai
import pytest

from harness.cassettes.corpus import bundled
from harness.cassettes.format import load
from harness.record.fake_provider import FakeProvider, Script, Write
from harness.transports.recording import RecordingTransport
from harness.transports.redaction import Redaction
from harness.transports.replay import ReplayTransport

LIBS = [pytest.param(httpx, id="httpx"), pytest.param(httpx2, id="httpx2")]
ROUTE = "/v1/chat/completions"
SSE = "text/event-stream; charset=utf-8"
MESSAGES: list[Any] = [{"role": "user", "content": "weather and time?"}]
REQUEST = {"model": "gpt-4o", "stream": True, "messages": MESSAGES}
CANARY = "sk-canary-9f1c2e7d4b"
EXPECTED_CALLS = [
    ("call_weather", "get_weather", '{"city": "Zürich"}'),
    ("call_time", "get_time", '{"tz": "Europe/Zürich", "note": "🌧"}'),
]
TOOLS: list[Any] = [
    {"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}
    for name in ("get_weather", "get_time")
]


def chat_sse() -> bytes:
    """An OpenAI chat completion stream: two tool calls, one after the other, then [DONE]."""

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return {"id": "chatcmpl-e2e", "object": "chat.completion.chunk", "created": 1700000000,
                "model": "gpt-4o", "choices": [choice]}  # fmt: skip

    def call(index: int, arguments: str, id: str | None = None, name: str | None = None) -> dict[str, Any]:
        function: dict[str, str] = {"arguments": arguments}
        entry: dict[str, Any] = {"index": index, "function": function}
        if id is not None:
            entry.update(id=id, type="function")
            function["name"] = name or ""
        return chunk({"tool_calls": [entry]})

    events = [
        chunk({"role": "assistant", "content": None}),
        call(0, "", "call_weather", "get_weather"),
        call(0, '{"city": "Zü'),
        call(0, 'rich"}'),
        call(1, "", "call_time", "get_time"),
        call(1, '{"tz": '),
        call(1, '"Europe/Zürich", "note": "🌧"}'),
        chunk({}, "tool_calls"),
    ]
    lines = [b"data: " + json.dumps(e, ensure_ascii=False, separators=(",", ":")).encode() for e in events]
    return b"\n\n".join([*lines, b"data: [DONE]"]) + b"\n\n"


BODY = chat_sse()


def odd_writes(body: bytes, delay: float = 0.012) -> list[Write]:
    """`body` split mid-line, mid-JSON, between the two newlines and inside multi-byte characters."""
    cuts = {
        3,  # inside the first "data: "
        body.index(b'"call_weather"') + 5,  # inside a JSON string
        body.index("ü".encode()) + 1,  # between the two bytes of ü
        body.index(b"\n\n", body.index(b"call_time")) + 1,  # between the two newlines of one event
        body.index("🌧".encode()) + 2,  # inside a 4-byte character
        body.index(b"[DONE]") + 2,
    }
    edges = [0, *sorted(cuts), len(body)]
    # The writes right after a split character wait longer, so that split survives any scheduling.
    slow = {body.index("ü".encode()) + 1, body.index("🌧".encode()) + 2}
    return [
        Write(body[start:end], delay=0 if start == 0 else delay * (3 if start in slow else 1))
        for start, end in itertools.pairwise(edges)
    ]


WRITES = odd_writes(BODY)


@pytest.fixture
def fake() -> Iterator[FakeProvider]:
    with FakeProvider() as server:
        server.route("POST", ROUTE, Script(WRITES, headers={"content-type": SSE}))
        server.route("POST", "/cut", Script(WRITES, cut_after=4))
        yield server


def recorded_chunks(path: Path) -> list[bytes]:
    (interaction,) = load(path).interactions
    return [chunk.data for chunk in interaction.response.chunks]


# ---------------------------------------------------------------------------------------------
# Plain httpx / httpx2 clients


def read_sync(lib: ModuleType, transport: Any, url: str) -> tuple[list[bytes], Exception | None]:
    """The raw reads the client sees, and the transport error that ended them, if any."""
    seen: list[bytes] = []
    with lib.Client(transport=transport) as client:
        try:
            with client.stream("POST", url, json=REQUEST) as response:
                assert response.status_code == 200
                seen.extend(response.iter_raw())
        except lib.TransportError as exc:
            return seen, exc
    return seen, None


def read_async(lib: ModuleType, transport: Any, url: str) -> tuple[list[bytes], Exception | None]:
    async def run() -> tuple[list[bytes], Exception | None]:
        seen: list[bytes] = []
        async with lib.AsyncClient(transport=transport) as client:
            try:
                async with client.stream("POST", url, json=REQUEST) as response:
                    assert response.status_code == 200
                    async for part in response.aiter_raw():  # one by one: keep what came before a cut
                        seen.append(part)
            except lib.TransportError as exc:
                return seen, exc
        return seen, None

    return asyncio.run(run())


def assert_odd_reads(chunks: list[bytes]) -> None:
    """The recording kept the odd boundaries: some reads are not valid UTF-8 on their own."""
    assert b"".join(chunks) == BODY
    assert len(chunks) > 1

    def broken(data: bytes) -> bool:
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            return True
        return False

    assert any(broken(data) for data in chunks)


@pytest.mark.parametrize("lib", LIBS)
def test_sync_record_then_replay_same_bytes_same_reads(
    lib: ModuleType, fake: FakeProvider, tmp_path: Path
) -> None:
    path = tmp_path / "chat.yaml"
    live, error = read_sync(lib, RecordingTransport(lib.HTTPTransport(), path=path), fake.url + ROUTE)
    assert error is None
    assert_odd_reads(live)
    assert recorded_chunks(path) == live  # the recording passed every read through untouched

    offsets = [chunk.offset_ms for chunk in load(path).interactions[0].response.chunks]
    assert all(o is not None for o in offsets)
    assert offsets == sorted(offsets)  # type: ignore[type-var]

    replay = ReplayTransport(path)
    replayed, error = read_sync(lib, replay, fake.url + ROUTE)
    assert error is None
    assert replayed == live
    assert replay.unused() == []
    assert len(fake.requests) == 1  # the replay never reached the server


@pytest.mark.parametrize("flavour", ["sync", "async"])
def test_recording_hands_each_read_over_as_it_arrives(
    flavour: str, fake: FakeProvider, tmp_path: Path
) -> None:
    """Not buffered until the end: the client's reads are spread over the server's delays."""
    arrivals: list[float] = []
    url, path = fake.url + ROUTE, tmp_path / "c.yaml"
    if flavour == "sync":
        client = httpx2.Client(transport=RecordingTransport(httpx2.HTTPTransport(), path=path))
        with client, client.stream("POST", url, json=REQUEST) as response:
            for _ in response.iter_raw():
                arrivals.append(time.monotonic())
    else:

        async def run() -> None:
            aclient = httpx2.AsyncClient(transport=RecordingTransport(httpx2.AsyncHTTPTransport(), path=path))
            async with aclient, aclient.stream("POST", url, json=REQUEST) as response:
                async for _ in response.aiter_raw():
                    arrivals.append(time.monotonic())

        asyncio.run(run())
    delays = sum(write.delay for write in WRITES)
    assert arrivals[-1] - arrivals[0] >= delays * 0.6


@pytest.mark.parametrize("lib", LIBS)
def test_async_record_then_replay_same_bytes_same_reads(
    lib: ModuleType, fake: FakeProvider, tmp_path: Path
) -> None:
    path = tmp_path / "chat.yaml"
    live, error = read_async(lib, RecordingTransport(lib.AsyncHTTPTransport(), path=path), fake.url + ROUTE)
    assert error is None
    assert_odd_reads(live)
    assert recorded_chunks(path) == live

    replayed, error = read_async(lib, ReplayTransport(path), fake.url + ROUTE)
    assert error is None
    assert replayed == live
    assert len(fake.requests) == 1


def test_recorded_with_httpx_sync_replays_with_httpx2_async(fake: FakeProvider, tmp_path: Path) -> None:
    path = tmp_path / "chat.yaml"
    live, _ = read_sync(httpx, RecordingTransport(httpx.HTTPTransport(), path=path), fake.url + ROUTE)
    replayed, _ = read_async(httpx2, ReplayTransport(path), fake.url + ROUTE)
    assert replayed == live == recorded_chunks(path)


def test_default_inner_transport_reaches_the_network(fake: FakeProvider, tmp_path: Path) -> None:
    path = tmp_path / "chat.yaml"
    live, error = read_sync(httpx2, RecordingTransport(path=path), fake.url + ROUTE)
    assert error is None
    assert b"".join(live) == BODY
    assert recorded_chunks(path) == live


# ---------------------------------------------------------------------------------------------
# A stream cut by the server


@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize("flavour", ["sync", "async"])
def test_cut_stream_is_recorded_and_replayed_as_cut(
    lib: ModuleType, flavour: str, fake: FakeProvider, tmp_path: Path
) -> None:
    path = tmp_path / "cut.yaml"
    read = read_sync if flavour == "sync" else read_async
    inner = lib.HTTPTransport() if flavour == "sync" else lib.AsyncHTTPTransport()
    live, live_error = read(lib, RecordingTransport(inner, path=path), fake.url + "/cut")
    assert isinstance(live_error, lib.RemoteProtocolError)  # re-raised to the client while recording
    assert b"".join(live) == b"".join(w.data for w in WRITES[:4])

    response = load(path).interactions[0].response
    assert response.complete is False
    assert response.error  # the text the client saw
    assert response.error_type == type(live_error).__name__
    assert [chunk.data for chunk in response.chunks] == live

    replayed, replay_error = read(lib, ReplayTransport(path), fake.url + "/cut")
    assert replayed == live
    assert type(replay_error) is type(live_error)


# ---------------------------------------------------------------------------------------------
# Secrets: redacted in the cassette, received by the server


SECRET_HEADERS = [
    "Authorization",
    "x-api-key",
    "api-key",
    "x-goog-api-key",
    "OpenAI-Organization",
    "OpenAI-Project",
    "Cookie",
    "X-Amz-Security-Token",
    "X-Amz-Date",
    "X-Tenant-Token",  # user-configured
]
SECRET_PARAMS = ["key", "X-Amz-Signature", "X-Amz-Credential", "tenant"]  # `tenant`: user-configured
USER_REDACTION = Redaction.DEFAULT.plus(
    headers=("x-tenant-token",), query_params=("tenant",), body_paths=("metadata.secret",)
)


def secret_request(canary: str) -> tuple[str, dict[str, str], dict[str, Any]]:
    """A query, headers and body carrying `canary` in every place redaction covers."""
    headers = {name: f"{canary}-{name.lower()}" for name in SECRET_HEADERS}
    headers["Authorization"] = f"Bearer {canary}-authorization"
    headers["Cookie"] = f"session={canary}-cookie"
    query = "&".join(f"{name}={canary}-{name.lower()}" for name in SECRET_PARAMS)
    body = {**REQUEST, "metadata": {"secret": f"{canary}-body", "public": "kept"}}
    return query, headers, body


def test_canary_secrets_never_reach_the_cassette(tmp_path: Path) -> None:
    path = tmp_path / "secret.yaml"
    query, headers, body = secret_request(CANARY)
    # The server echoes nothing secret in its body, but it does set a cookie.
    cookie = {"set-cookie": f"sid={CANARY}-set-cookie"}
    script = Script.of([b"data: {}\n\n", b"data: [DONE]\n\n"], headers={"content-type": SSE, **cookie})
    with FakeProvider() as fake:
        fake.route("POST", ROUTE, script)
        url = f"{fake.url}{ROUTE}?{query}&alt=sse"
        transport = RecordingTransport(httpx2.HTTPTransport(), path=path, redact=USER_REDACTION)
        with httpx2.Client(transport=transport) as client:
            live = client.post(url, json=body, headers=headers)
            assert live.headers["set-cookie"] == f"sid={CANARY}-set-cookie"  # the client still gets it

        (received,) = fake.requests
        for name in SECRET_HEADERS:
            assert CANARY in (received.header(name) or ""), name
        for name in SECRET_PARAMS:
            assert received.params[name] == f"{CANARY}-{name.lower()}"
        assert received.json()["metadata"]["secret"] == f"{CANARY}-body"

        text = path.read_text(encoding="utf-8")
        assert CANARY not in text
        assert "canary" not in text.lower()
        interaction = load(path).interactions[0]
        assert interaction.request.body["metadata"]["public"] == "kept"
        assert "alt=sse" in interaction.request.url

        # The same code, secrets and all, replays from the redacted cassette.
        with httpx2.Client(transport=ReplayTransport(path)) as client:
            replayed = client.post(url, json=body, headers=headers)
        assert replayed.content == live.content
        assert len(fake.requests) == 1


@pytest.mark.parametrize("place", [*SECRET_HEADERS, *(f"?{name}" for name in SECRET_PARAMS), "body"])
def test_each_redacted_place_alone(place: str, tmp_path: Path) -> None:
    """One secret at a time, so a leak names its place."""
    path = tmp_path / "one.yaml"
    canary = f"{CANARY}-{place.strip('?').lower()}"
    url_query, headers, body = "", {}, dict(REQUEST)
    if place.startswith("?"):
        url_query = f"?{place[1:]}={canary}"
    elif place == "body":
        body["metadata"] = {"secret": canary}
    else:
        headers[place] = f"Bearer {canary}" if place == "Authorization" else canary
    with FakeProvider() as fake:
        fake.route("POST", ROUTE, Script.of([b"data: [DONE]\n\n"]))
        transport = RecordingTransport(httpx2.HTTPTransport(), path=path, redact=USER_REDACTION)
        with httpx2.Client(transport=transport) as client:
            client.post(fake.url + ROUTE + url_query, json=body, headers=headers)
        raw = fake.requests[0]
        assert canary in raw.query + json.dumps(raw.headers) + raw.body.decode()
    assert canary not in path.read_text(encoding="utf-8")


# ---------------------------------------------------------------------------------------------
# The real openai SDK


def sdk_calls(chunks: Iterable[Any]) -> list[tuple[str, str, str]]:
    """Reassemble tool calls from the SDK's typed chunks: by index, id and name once, arguments joined."""
    calls: dict[int, list[str]] = {}
    for chunk in chunks:
        for choice in chunk.choices:
            for part in choice.delta.tool_calls or []:
                slot = calls.setdefault(part.index, ["", "", ""])
                if part.id:
                    slot[0] = part.id
                if part.function and part.function.name:
                    slot[1] = part.function.name
                if part.function and part.function.arguments:
                    slot[2] += part.function.arguments
    return [(s[0], s[1], s[2]) for _, s in sorted(calls.items())]


def openai_client(fake: FakeProvider, transport: Any) -> openai.OpenAI:
    return openai.OpenAI(
        base_url=fake.url + "/v1",
        api_key=CANARY,
        max_retries=0,
        http_client=httpx2.Client(transport=transport),
    )


def test_openai_sdk_stream_replays_to_the_same_tool_calls(fake: FakeProvider, tmp_path: Path) -> None:
    path = tmp_path / "openai.yaml"

    def run(client: openai.OpenAI) -> list[tuple[str, str, str]]:
        with client, client.chat.completions.create(
            model="gpt-4o", messages=MESSAGES, tools=TOOLS, stream=True
        ) as stream:
            return sdk_calls(stream)

    live = run(openai_client(fake, RecordingTransport(httpx2.HTTPTransport(), path=path)))
    assert live == EXPECTED_CALLS
    assert fake.requests[0].header("authorization") == f"Bearer {CANARY}"  # the real key reached the server
    assert CANARY not in path.read_text(encoding="utf-8")

    replayed = run(openai_client(fake, ReplayTransport(path)))
    assert replayed == live
    assert len(fake.requests) == 1


def test_openai_sdk_stream_helper_accumulates_the_same_from_replay(
    fake: FakeProvider, tmp_path: Path
) -> None:
    path = tmp_path / "openai.yaml"

    def run(client: openai.OpenAI) -> list[tuple[str, str, str]]:
        with client, client.chat.completions.stream(model="gpt-4o", messages=MESSAGES, tools=TOOLS) as stream:
            for _ in stream:
                pass
            message = stream.get_final_completion().choices[0].message
        return [(c.id, c.function.name, c.function.arguments) for c in message.tool_calls or []]

    live = run(openai_client(fake, RecordingTransport(httpx2.HTTPTransport(), path=path)))
    assert live == EXPECTED_CALLS
    replayed = run(openai_client(fake, ReplayTransport(path)))
    assert replayed == live
    assert len(fake.requests) == 1


def test_openai_async_sdk_stream_replays_to_the_same_tool_calls(fake: FakeProvider, tmp_path: Path) -> None:
    path = tmp_path / "openai.yaml"

    async def run(transport: Any) -> list[tuple[str, str, str]]:
        client = openai.AsyncOpenAI(
            base_url=fake.url + "/v1", api_key=CANARY, max_retries=0,
            http_client=httpx2.AsyncClient(transport=transport),
        )  # fmt: skip
        async with client:
            stream = await client.chat.completions.create(
                model="gpt-4o", messages=MESSAGES, tools=TOOLS, stream=True
            )
            async with stream:
                return sdk_calls([chunk async for chunk in stream])

    live = asyncio.run(run(RecordingTransport(httpx2.AsyncHTTPTransport(), path=path)))
    assert live == EXPECTED_CALLS
    assert asyncio.run(run(ReplayTransport(path))) == live
    assert len(fake.requests) == 1


# ---------------------------------------------------------------------------------------------
# A recording served again by the fake provider


@pytest.mark.parametrize("route", [ROUTE, "/cut"])
def test_a_recording_served_by_the_fake_provider_records_the_same(
    route: str, fake: FakeProvider, tmp_path: Path
) -> None:
    first, second = tmp_path / "first.yaml", tmp_path / "second.yaml"
    recording = RecordingTransport(httpx2.HTTPTransport(), path=first)
    live, live_error = read_sync(httpx2, recording, fake.url + route)
    with FakeProvider.from_cassette(load(first), speed=1.0) as again:
        served, served_error = read_sync(
            httpx2, RecordingTransport(httpx2.HTTPTransport(), path=second), again.url + route
        )
    assert b"".join(served) == b"".join(live)
    assert type(served_error) is type(live_error)
    original, copy = load(first).interactions[0].response, load(second).interactions[0].response
    assert copy.status == original.status
    assert (copy.complete, copy.error_type) == (original.complete, original.error_type)
    assert copy.content_type == original.content_type
    assert len(copy.chunks) > 1  # paced from the recorded offsets, the reads stay apart


# ---------------------------------------------------------------------------------------------
# A client that stops reading at the terminal event


def test_the_readme_record_example_saves_a_stream_read_to_done_as_complete(tmp_path: Path) -> None:
    """The record example of docs/recording.md, against a loopback provider: the SDK stops reading at `[DONE]`
    and closes the response before its body ends; nothing was lost, so the recording is complete."""
    path = tmp_path / "recordings/weather.yaml"
    with FakeProvider.from_cassette(load(bundled("cassettes") / "openai-chat/parallel-2.yaml")) as fake:
        transport = RecordingTransport(path=path, mode="once")
        client = openai.OpenAI(
            api_key="sk-x", base_url=fake.url + "/v1", http_client=httpx2.Client(transport=transport)
        )
        stream = client.chat.completions.create(
            model="gpt-4.1-mini",
            messages=[{"role": "user", "content": "Weather and time in Paris?"}],
            tools=[{"type": "function", "function": {"name": "get_weather", "parameters": {}}}],
            stream=True,
        )
        for _chunk in stream:
            pass
    saved = load(path)
    assert saved.dialect == "openai-chat"
    response = saved.interactions[0].response
    assert (response.complete, response.error) == (True, None)
    assert response.body.endswith(b"data: [DONE]\n\n")


def test_an_sdk_client_that_stops_before_the_terminal_event_is_saved_as_cut(
    fake: FakeProvider, tmp_path: Path
) -> None:
    path = tmp_path / "early.yaml"
    client = openai_client(fake, RecordingTransport(httpx2.HTTPTransport(), path=path))
    with client, client.chat.completions.create(model="gpt-4o", messages=MESSAGES, stream=True) as stream:
        next(iter(stream))
    response = load(path).interactions[0].response
    assert response.complete is False and response.error is not None
    assert b"[DONE]" not in response.body
