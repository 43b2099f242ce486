"""RecordingTransport and ReplayTransport over each library's MockTransport: no sockets, no waiting."""

from __future__ import annotations

import asyncio
import gzip
import itertools
import json
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import httpx2
import pytest

from harness.cassettes.corpus import bundled
from harness.cassettes.format import Cassette, Chunk, Interaction, Request, Response, Source, load, save
from harness.errors import CassetteError, NoMatchError, UsageError
from harness.transports import replay
from harness.transports._library import library_named
from harness.transports.recording import RecordingTransport
from harness.transports.redaction import Redaction
from harness.transports.replay import ReplayTransport

URL = "https://api.example.test/v1/chat/completions"
BODY = {"model": "m-1", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
PARTS = [b'data: {"n":1}\n\n', b'data: {"n":2}\n\n', b"data: [DONE]\n\n"]


@pytest.fixture(params=["httpx", "httpx2"])
def lib(request: pytest.FixtureRequest) -> ModuleType:
    return httpx if request.param == "httpx" else httpx2


@pytest.fixture(params=["sync", "async"])
def flavour(request: pytest.FixtureRequest) -> str:
    return str(request.param)


class Server:
    """A scripted inner transport: streams `parts`, optionally raising `error` after them."""

    def __init__(
        self,
        lib: ModuleType,
        flavour: str,
        parts: list[bytes] = PARTS,
        *,
        error: Exception | None = None,
        headers: dict[str, str] | None = None,
        status: int = 200,
    ) -> None:
        self.lib, self.flavour, self.parts, self.error = lib, flavour, parts, error
        self.headers = headers or {"content-type": "text/event-stream"}
        self.status = status
        self.requests: list[Any] = []
        self.yielded = 0  # how many parts the stream has handed out so far

    def content(self) -> Iterator[bytes] | AsyncIterator[bytes]:
        def sync_parts() -> Iterator[bytes]:
            for part in self.parts:
                self.yielded += 1
                yield part
            if self.error is not None:
                raise self.error

        async def async_parts() -> AsyncIterator[bytes]:
            for part in sync_parts():
                yield part

        return sync_parts() if self.flavour == "sync" else async_parts()

    def handler(self, request: Any) -> Any:
        self.requests.append(request)
        return self.lib.Response(self.status, headers=self.headers, content=self.content())

    @property
    def transport(self) -> Any:
        return self.lib.MockTransport(self.handler)


def fetch(
    lib: ModuleType,
    flavour: str,
    transport: Any,
    url: str = URL,
    body: Any = BODY,
    headers: dict[str, str] | None = None,
    each: Callable[[bytes], None] | None = None,
) -> tuple[Any, list[bytes], BaseException | None]:
    """Stream one POST through `transport`: (response, raw reads, the exception that ended it)."""
    chunks: list[bytes] = []
    error: BaseException | None = None
    kwargs: dict[str, Any] = {"headers": headers or {}}
    if isinstance(body, bytes | str):
        kwargs["content"] = body
    elif body is not None:
        kwargs["json"] = body
    if flavour == "sync":
        with lib.Client(transport=transport) as client, client.stream("POST", url, **kwargs) as response:
            try:
                for chunk in response.iter_raw():
                    chunks.append(chunk)
                    if each:
                        each(chunk)
            except Exception as exc:
                error = exc
        return response, chunks, error

    async def run() -> Any:
        nonlocal error
        async with (
            lib.AsyncClient(transport=transport) as client,
            client.stream("POST", url, **kwargs) as response,
        ):
            try:
                async for chunk in response.aiter_raw():
                    chunks.append(chunk)
                    if each:
                        each(chunk)
            except Exception as exc:
                error = exc
        return response

    return asyncio.run(run()), chunks, error


def one_interaction(path: Path, *parts: bytes, request_body: Any = BODY, complete: bool = True) -> Cassette:
    response = Response(
        200, {"content-type": "text/event-stream"}, [Chunk(p, 10.0 * i) for i, p in enumerate(parts)]
    )
    response.complete = complete
    cassette = Cassette(
        name=path.stem,
        source=Source("synthesized", "test"),
        interactions=[Interaction(Request("POST", URL, {}, request_body), response)],
    )
    save(cassette, path)
    return cassette


# ---------------------------------------------------------------------------------------------
# Recording


def test_recording_passes_the_stream_through_and_saves_every_read(
    lib: ModuleType, flavour: str, tmp_path: Path
) -> None:
    server = Server(lib, flavour)
    path = tmp_path / "rec.yaml"
    response, chunks, error = fetch(lib, flavour, RecordingTransport(server.transport, path=path))
    assert error is None and chunks == PARTS and response.status_code == 200
    saved = load(path).interactions
    assert len(saved) == 1
    assert [chunk.data for chunk in saved[0].response.chunks] == PARTS
    assert all(chunk.offset_ms is not None and chunk.offset_ms >= 0 for chunk in saved[0].response.chunks)
    assert saved[0].response.complete is True
    assert saved[0].request.body == BODY and saved[0].request.method == "POST"
    assert server.requests[0].headers["accept-encoding"] == "identity"


def test_recording_is_incremental(lib: ModuleType, flavour: str, tmp_path: Path) -> None:
    server = Server(lib, flavour)
    seen_before_next: list[int] = []

    def each(chunk: bytes) -> None:
        seen_before_next.append(server.yielded)

    _, chunks, _ = fetch(
        lib, flavour, RecordingTransport(server.transport, path=tmp_path / "r.yaml"), each=each
    )
    assert chunks == PARTS
    # When the caller holds chunk n, the inner stream has produced exactly n chunks, not more.
    assert seen_before_next == [1, 2, 3]


def test_recording_sends_the_body_unchanged(lib: ModuleType, flavour: str, tmp_path: Path) -> None:
    server = Server(lib, flavour)
    raw = b'{"b": 1,  "a": "key-in-body"}'
    redact = Redaction.DEFAULT.plus(body_paths=("a",))
    transport = RecordingTransport(server.transport, path=tmp_path / "r.yaml", redact=redact)
    fetch(lib, flavour, transport, body=raw, headers={"content-type": "application/json"})
    assert server.requests[0].content == raw
    assert load(tmp_path / "r.yaml").interactions[0].request.body == {"b": 1, "a": "REDACTED"}


def test_recording_keeps_a_text_body_as_text(lib: ModuleType, tmp_path: Path) -> None:
    server = Server(lib, "sync")
    fetch(lib, "sync", RecordingTransport(server.transport, path=tmp_path / "r.yaml"), body="a=1&b=2")
    assert load(tmp_path / "r.yaml").interactions[0].request.body == "a=1&b=2"


def test_a_cut_stream_is_saved_as_cut_and_replayed_with_the_same_error(
    lib: ModuleType, flavour: str, tmp_path: Path
) -> None:
    path = tmp_path / "cut.yaml"
    server = Server(lib, flavour, PARTS[:1], error=lib.RemoteProtocolError("peer closed connection mid-body"))
    _, chunks, error = fetch(lib, flavour, RecordingTransport(server.transport, path=path))
    assert chunks == PARTS[:1]
    assert type(error) is lib.RemoteProtocolError
    response = load(path).interactions[0].response
    assert response.complete is False
    assert response.error == "peer closed connection mid-body"
    assert response.error_type == "RemoteProtocolError"

    _, replayed, replay_error = fetch(lib, flavour, ReplayTransport(path))
    assert replayed == PARTS[:1]
    assert type(replay_error) is lib.RemoteProtocolError
    assert str(replay_error) == "peer closed connection mid-body"


def test_a_cut_with_an_unknown_error_type_replays_as_read_error(lib: ModuleType, tmp_path: Path) -> None:
    cassette = one_interaction(tmp_path / "c.yaml", PARTS[0], complete=False)
    cassette.interactions[0].response.error_type = "NotAnHttpxError"
    _, chunks, error = fetch(lib, "sync", ReplayTransport(cassette))
    assert chunks == PARTS[:1]
    assert type(error) is lib.ReadError


def read_then_close(lib: ModuleType, flavour: str, transport: Any, reads: int, url: str = URL) -> list[bytes]:
    """Stream a POST and close the response after `reads` raw reads (as an SDK stops at `[DONE]`)."""
    if flavour == "sync":
        with lib.Client(transport=transport) as client, client.stream("POST", url, json=BODY) as response:
            return list(itertools.islice(response.iter_raw(), reads))

    async def run() -> list[bytes]:
        seen: list[bytes] = []
        async with (
            lib.AsyncClient(transport=transport) as client,
            client.stream("POST", url, json=BODY) as response,
        ):
            async for chunk in response.aiter_raw():
                seen.append(bytes(chunk))
                if len(seen) == reads:
                    break
        return seen

    return asyncio.run(run())


def test_a_stream_the_client_closes_early_is_saved_as_cut(
    lib: ModuleType, flavour: str, tmp_path: Path
) -> None:
    server = Server(lib, flavour)
    path = tmp_path / "early.yaml"
    first = read_then_close(lib, flavour, RecordingTransport(server.transport, path=path), 1)
    assert first == PARTS[:1]
    saved = load(path).interactions[0].response
    assert saved.complete is False and [c.data for c in saved.chunks] == PARTS[:1]
    assert saved.error is not None and "closed by the client" in saved.error


def test_a_stream_the_client_closes_after_its_terminal_event_is_saved_complete(
    lib: ModuleType, flavour: str, tmp_path: Path
) -> None:
    server = Server(lib, flavour)
    path = tmp_path / "done.yaml"
    assert read_then_close(lib, flavour, RecordingTransport(server.transport, path=path), 3) == PARTS
    assert server.yielded == len(PARTS)  # the body had not been read to its end: the client closed it
    saved = load(path)
    assert saved.dialect == "openai-chat"
    assert (saved.interactions[0].response.complete, saved.interactions[0].response.error) == (True, None)


def anthropic_parts() -> list[bytes]:
    """A recorded Anthropic stream, one event a part."""
    body = load(bundled("cassettes") / "anthropic/single-call.yaml").interactions[0].response.body
    return [event + b"\n\n" for event in body.split(b"\n\n") if event]


@pytest.mark.parametrize(
    ("url", "anthropic", "dialect"),
    [
        ("http://127.0.0.1:8000/v1/chat/completions", False, "openai-chat"),
        ("http://localhost:4000/llm/chat/completions", False, "openai-chat"),
        ("http://127.0.0.1:8000/anthropic/v1/messages?beta=true", True, "anthropic"),
        ("http://127.0.0.1:8000/gateway/stream", True, "anthropic"),  # an unknown path: the content tells
        ("http://127.0.0.1:8000/gateway/stream", False, None),  # and bare `data:` lines tell nothing
    ],
)
def test_a_recording_names_its_dialect_from_path_and_content_not_host(
    lib: ModuleType, url: str, anthropic: bool, dialect: str | None, tmp_path: Path
) -> None:
    parts = anthropic_parts() if anthropic else PARTS
    path = tmp_path / "named.yaml"
    server = Server(lib, "sync", parts)
    # The client stops right after the terminal event, before the body's end.
    transport = RecordingTransport(server.transport, path=path)
    assert read_then_close(lib, "sync", transport, len(parts), url) == parts
    saved = load(path)
    assert saved.dialect == dialect
    assert saved.interactions[0].response.complete is (dialect is not None)


def test_a_cassette_of_two_dialects_names_none(lib: ModuleType, tmp_path: Path) -> None:
    path = tmp_path / "two.yaml"
    transport = RecordingTransport(Server(lib, "sync").transport, path=path, mode="all")
    fetch(lib, "sync", transport)
    assert load(path).dialect == "openai-chat"
    fetch(lib, "sync", transport)
    assert load(path).dialect == "openai-chat"
    anthropic = Server(lib, "sync", anthropic_parts())
    other = RecordingTransport(anthropic.transport, path=path, mode="new_episodes")
    fetch(lib, "sync", other, url="http://127.0.0.1:8000/v1/messages")
    assert load(path).dialect is None and len(load(path).interactions) == 3


@pytest.mark.parametrize("error_type", ["ReadTimeout", "RemoteProtocolError", "DecodingError"])
def test_a_cut_replays_the_recorded_error_class(lib: ModuleType, error_type: str, tmp_path: Path) -> None:
    cassette = one_interaction(tmp_path / "c.yaml", PARTS[0], complete=False)
    cassette.interactions[0].response.error, cassette.interactions[0].response.error_type = "gone", error_type
    _, chunks, error = fetch(lib, "sync", ReplayTransport(cassette))
    assert chunks == PARTS[:1]
    assert type(error) is getattr(lib, error_type) and str(error) == "gone"


def test_a_gzip_response_is_recorded_and_served_decoded(
    lib: ModuleType, flavour: str, tmp_path: Path
) -> None:
    body = b"".join(PARTS)
    packed = gzip.compress(body)
    headers = {
        "content-type": "text/event-stream",
        "content-encoding": "gzip",
        "content-length": str(len(packed)),
    }
    server = Server(lib, flavour, [packed[:10], packed[10:]], headers=headers)
    path = tmp_path / "gz.yaml"
    response, chunks, error = fetch(lib, flavour, RecordingTransport(server.transport, path=path))
    assert error is None and b"".join(chunks) == body
    assert "content-encoding" not in response.headers
    assert load(path).interactions[0].response.body == body
    response, chunks, _ = fetch(lib, flavour, ReplayTransport(path))
    assert b"".join(chunks) == body and "content-encoding" not in response.headers


def test_a_request_that_fails_before_a_response_is_not_recorded(tmp_path: Path) -> None:
    def refuse(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ConnectError("refused", request=request)

    path = tmp_path / "none.yaml"
    with pytest.raises(httpx2.ConnectError):
        fetch(httpx2, "sync", RecordingTransport(httpx2.MockTransport(refuse), path=path))
    assert not path.exists()


def test_without_inner_the_first_requests_library_transport_is_made(tmp_path: Path) -> None:
    transport = RecordingTransport(path=tmp_path / "x.yaml")
    with pytest.raises(httpx2.ConnectError), httpx2.Client(transport=transport) as client:
        client.get("http://127.0.0.1:9/unreachable")  # port 9 (discard) is closed on test machines
    made = list(transport._made.values())
    assert len(made) == 1 and type(made[0]) is httpx2.HTTPTransport


def test_recording_transport_needs_a_path() -> None:
    with pytest.raises(UsageError, match="path"):
        RecordingTransport(httpx.MockTransport(lambda r: httpx.Response(200)))


# ---------------------------------------------------------------------------------------------
# Replay


def test_replay_keeps_read_boundaries_and_drops_wire_headers(
    lib: ModuleType, flavour: str, tmp_path: Path
) -> None:
    cassette = one_interaction(tmp_path / "r.yaml", *PARTS)
    cassette.interactions[0].response.headers.update(
        {
            "content-length": "999",
            "transfer-encoding": "chunked",
            "content-encoding": "gzip",
            "x-request-id": "r1",
        }
    )
    transport = ReplayTransport(cassette)
    response, chunks, error = fetch(lib, flavour, transport)
    assert error is None and chunks == PARTS
    assert response.status_code == 200 and response.headers["x-request-id"] == "r1"
    for dropped in ("content-length", "transfer-encoding", "content-encoding"):
        assert dropped not in response.headers
    assert transport.unused() == []
    assert transport.cassette is cassette


def test_replay_matches_a_live_secret_against_its_redacted_recording(lib: ModuleType, tmp_path: Path) -> None:
    server = Server(lib, "sync")
    path = tmp_path / "k.yaml"
    fetch(lib, "sync", RecordingTransport(server.transport, path=path), url=URL + "?key=live-secret-1")
    assert "live-secret-1" not in path.read_text()
    _, chunks, error = fetch(lib, "sync", ReplayTransport(path), url=URL + "?key=another-secret-2")
    assert error is None and chunks == PARTS


def test_an_unmatched_request_names_the_closest_interaction(
    lib: ModuleType, flavour: str, tmp_path: Path
) -> None:
    path = tmp_path / "x.yaml"
    one_interaction(path, *PARTS)
    with pytest.raises(NoMatchError) as caught:
        fetch(lib, flavour, ReplayTransport(path), body={**BODY, "model": "m-2"})
    assert str(caught.value) == (
        f"no recorded interaction for POST {URL} in {path}; closest is #1 POST /v1/chat/completions, "
        "which differs in body.model: 'm-1' recorded, 'm-2' sent"
    )


def test_each_interaction_plays_once_in_order(lib: ModuleType, tmp_path: Path) -> None:
    path = tmp_path / "twice.yaml"
    cassette = one_interaction(path, b"first")
    cassette.interactions.append(
        Interaction(Request("POST", URL, {}, BODY), Response(200, {}, [Chunk(b"second")]))
    )
    transport = ReplayTransport(cassette)
    assert fetch(lib, "sync", transport)[1] == [b"first"]
    assert transport.unused() == cassette.interactions[1:]
    assert fetch(lib, "sync", transport)[1] == [b"second"]
    with pytest.raises(NoMatchError, match="already played"):
        fetch(lib, "sync", transport)


def test_not_strict_plays_a_played_interaction_again(tmp_path: Path) -> None:
    cassette = one_interaction(tmp_path / "x.yaml", b"only")
    transport = ReplayTransport(cassette, strict=False)
    assert fetch(httpx, "sync", transport)[1] == [b"only"]
    assert fetch(httpx, "sync", transport)[1] == [b"only"]


def test_match_on_and_ignore_fields_reach_the_matcher(tmp_path: Path) -> None:
    cassette = one_interaction(
        tmp_path / "x.yaml", b"ok", request_body={**BODY, "metadata": {"user_id": "u1"}}
    )
    sent = {**BODY, "metadata": {"user_id": "u2"}}
    assert fetch(httpx, "sync", ReplayTransport(cassette, ignore_fields=["metadata.user_id"]), body=sent)[
        1
    ] == [b"ok"]
    assert fetch(httpx, "sync", ReplayTransport(cassette, match_on=["method", "url"]), body=sent)[1] == [
        b"ok"
    ]
    with pytest.raises(NoMatchError, match=r"body\.metadata\.user_id"):
        fetch(httpx, "sync", ReplayTransport(cassette), body=sent)


def test_replay_of_a_missing_file_raises_cassette_error(tmp_path: Path) -> None:
    with pytest.raises(CassetteError, match="no such cassette file"):
        ReplayTransport(tmp_path / "missing.yaml")


def test_negative_speed_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="speed"):
        ReplayTransport(one_interaction(tmp_path / "x.yaml", b"a"), speed=-1)


# ---------------------------------------------------------------------------------------------
# Pacing


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(round(seconds, 6))
        self.now += seconds

    async def async_sleep(self, seconds: float) -> None:
        self.sleep(seconds)


@pytest.mark.parametrize(("speed", "expected"), [(1.0, [0.1, 0.2]), (2.0, [0.05, 0.1]), (0, [])])
def test_speed_reproduces_recorded_pacing(
    lib: ModuleType, flavour: str, speed: float, expected: list[float], monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = FakeClock()
    monkeypatch.setattr(replay, "clock", fake.clock)
    monkeypatch.setattr(replay, "sleep", fake.sleep)
    monkeypatch.setattr(replay, "async_sleep", fake.async_sleep)
    response = Response(200, {}, [Chunk(b"a", 0.0), Chunk(b"b", 100.0), Chunk(b"c", 300.0)])
    cassette = Cassette(
        "paced", Source("synthesized", "test"), [Interaction(Request("POST", URL, {}, BODY), response)]
    )
    _, chunks, _ = fetch(lib, flavour, ReplayTransport(cassette, speed=speed))
    assert chunks == [b"a", b"b", b"c"]
    assert fake.sleeps == expected


def test_pacing_really_waits(flavour: str) -> None:
    response = Response(200, {}, [Chunk(b"a", 0.0), Chunk(b"b", 30.0), Chunk(b"c", 60.0)])
    cassette = Cassette(
        "paced", Source("synthesized", "test"), [Interaction(Request("POST", URL, {}, BODY), response)]
    )
    stamps: list[float] = []
    fetch(httpx2, flavour, ReplayTransport(cassette, speed=1.0), each=lambda _: stamps.append(replay.clock()))
    assert len(stamps) == 3
    assert stamps[2] - stamps[0] >= 0.05  # 60 ms recorded, loosely


# ---------------------------------------------------------------------------------------------
# Record modes


def record_once(lib: ModuleType, path: Path, parts: list[bytes] = PARTS) -> None:
    fetch(lib, "sync", RecordingTransport(Server(lib, "sync", parts).transport, path=path))


def test_unknown_mode_lists_the_modes(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="none, once, new_episodes, all, rewrite"):
        RecordingTransport(path=tmp_path / "x.yaml", mode="sometimes")


def test_mode_none_replays_and_never_forwards(lib: ModuleType, flavour: str, tmp_path: Path) -> None:
    path = tmp_path / "n.yaml"
    record_once(lib, path)
    server = Server(lib, flavour, [b"live"])
    transport = RecordingTransport(server.transport, path=path, mode="none")
    assert fetch(lib, flavour, transport)[1] == PARTS
    with pytest.raises(NoMatchError):
        fetch(lib, flavour, transport, body={"other": 1})
    assert server.requests == []
    with pytest.raises(CassetteError):
        RecordingTransport(server.transport, path=tmp_path / "missing.yaml", mode="none")


def test_mode_once_records_a_new_file_then_replays(lib: ModuleType, flavour: str, tmp_path: Path) -> None:
    path = tmp_path / "o.yaml"
    server = Server(lib, flavour)
    first = RecordingTransport(server.transport, path=path, mode="once")
    assert fetch(lib, flavour, first)[1] == PARTS
    assert fetch(lib, flavour, first)[1] == PARTS  # still recording: a new file records everything
    assert len(server.requests) == 2 and len(load(path).interactions) == 2

    again = RecordingTransport(server.transport, path=path, mode="once")
    assert fetch(lib, flavour, again)[1] == PARTS
    with pytest.raises(NoMatchError):
        fetch(lib, flavour, again, body={"new": True})
    assert len(server.requests) == 2


def test_mode_new_episodes_replays_matches_and_appends_new(lib: ModuleType, tmp_path: Path) -> None:
    path = tmp_path / "ne.yaml"
    record_once(lib, path)
    server = Server(lib, "sync", [b"new"])
    transport = RecordingTransport(server.transport, path=path, mode="new_episodes")
    assert fetch(lib, "sync", transport)[1] == PARTS
    assert fetch(lib, "sync", transport, body={"new": True})[1] == [b"new"]
    assert len(server.requests) == 1
    saved = load(path).interactions
    assert [item.request.body for item in saved] == [BODY, {"new": True}]


def test_mode_all_forwards_everything_and_keeps_old(lib: ModuleType, tmp_path: Path) -> None:
    path = tmp_path / "all.yaml"
    record_once(lib, path)
    server = Server(lib, "sync", [b"again"])
    transport = RecordingTransport(server.transport, path=path, mode="all")
    old = list(transport.cassette.interactions)
    assert fetch(lib, "sync", transport)[1] == [b"again"]
    assert len(server.requests) == 1
    assert [item.response.body for item in load(path).interactions] == [b"".join(PARTS), b"again"]
    assert transport.unused() == old


def test_mode_rewrite_drops_old_interactions(lib: ModuleType, tmp_path: Path) -> None:
    path = tmp_path / "rw.yaml"
    record_once(lib, path)
    server = Server(lib, "sync", [b"fresh"])
    transport = RecordingTransport(server.transport, path=path, mode="rewrite")
    assert fetch(lib, "sync", transport)[1] == [b"fresh"]
    assert [item.response.body for item in load(path).interactions] == [b"fresh"]
    assert transport.unused() == []


def test_recording_transport_replays_at_speed(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    fake = FakeClock()
    monkeypatch.setattr(replay, "clock", fake.clock)
    monkeypatch.setattr(replay, "sleep", fake.sleep)
    path = tmp_path / "s.yaml"
    one_interaction(path, b"a", b"b")  # offsets 0 and 10 ms
    fetch(
        httpx, "sync", RecordingTransport(Server(httpx, "sync").transport, path=path, mode="none", speed=1.0)
    )
    assert fake.sleeps == [0.01]


# ---------------------------------------------------------------------------------------------
# Redaction end to end (through the transport, into the YAML text)

CANARY = "canary-7f3a9c2e"


def test_no_secret_reaches_the_cassette(lib: ModuleType, flavour: str, tmp_path: Path) -> None:
    secret_headers = {
        "Authorization": f"Bearer {CANARY}-auth",
        "x-api-key": f"{CANARY}-xapikey",
        "api-key": f"{CANARY}-apikey",
        "x-goog-api-key": f"{CANARY}-goog",
        "OpenAI-Organization": f"{CANARY}-org",
        "OpenAI-Project": f"{CANARY}-proj",
        "Cookie": f"session={CANARY}-cookie",
        "X-Amz-Security-Token": f"{CANARY}-amztoken",
        "X-Amz-Date": f"{CANARY}-amzdate",
        "X-Amz-Content-Sha256": f"{CANARY}-sha",
    }
    query = (
        f"?key={CANARY}-key&X-Amz-Signature={CANARY}-sig&X-Amz-Credential={CANARY}-cred"
        f"&X-Amz-Security-Token={CANARY}-qtoken&keep=visible"
    )
    body = {
        **BODY,
        "user": {"token": f"{CANARY}-body"},
        "items": [{"pin": f"{CANARY}-1"}, {"pin": f"{CANARY}-2"}],
    }
    server = Server(
        lib,
        flavour,
        [b"data: ok\n\n", f"data: echo {CANARY}-auth\n\n".encode()],
        headers={"content-type": "text/event-stream", "set-cookie": f"s={CANARY}-setcookie"},
    )
    redact = Redaction.DEFAULT.plus(body_paths=("user.token", "items[*].pin"))
    path = tmp_path / "secret.yaml"
    _, _, error = fetch(
        lib,
        flavour,
        RecordingTransport(server.transport, path=path, redact=redact),
        URL + query,
        body,
        secret_headers,
    )
    assert error is None
    text = path.read_text()
    assert CANARY not in text
    assert "keep=visible" in text
    saved = load(path).interactions[0]
    assert saved.request.body["user"] == {"token": "REDACTED"}
    assert saved.request.headers["authorization"] == "REDACTED"
    assert saved.response.headers["set-cookie"] == "REDACTED"
    # The server still saw the real values.
    assert server.requests[0].headers["x-api-key"] == f"{CANARY}-xapikey"
    assert json.loads(server.requests[0].content)["user"]["token"] == f"{CANARY}-body"


def test_aws_sigv4_authorization_is_redacted(tmp_path: Path) -> None:
    path = tmp_path / "aws.yaml"
    signature = (
        f"AWS4-HMAC-SHA256 Credential=AKIA{CANARY}/20250101/us-east-1/bedrock/aws4_request, Signature=ab12"
    )
    fetch(
        httpx,
        "sync",
        RecordingTransport(Server(httpx, "sync").transport, path=path),
        headers={"Authorization": signature},
    )
    assert CANARY not in path.read_text()


# ---------------------------------------------------------------------------------------------
# Libraries


def test_importing_the_transports_imports_neither_library() -> None:
    code = "import sys, harness.transports; print(sorted(m for m in sys.modules if m.startswith('httpx')))"
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).parents[2],
    )
    assert out.stdout.strip() == "[]"


def test_a_request_of_an_unknown_library_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="httpx-like"):
        library_named("json")


def test_a_library_imported_again_gets_transports_of_its_new_classes() -> None:
    # pytester's in-process runs drop what a run imported from sys.modules: the next run imports
    # httpx2 again, and its requests must not meet a transport of the old module's classes.
    script = """
import sys
import httpx2
from harness.transports._library import library_named
old = library_named("httpx2")
for name in [n for n in sys.modules if n == "httpx2" or n.startswith("httpx2.")]:
    del sys.modules[name]
import httpx2 as again
new = library_named("httpx2")
assert again is not old.module and new.module is again, (old.module, new.module, again)
assert isinstance(new.transport(asynchronous=False), again.HTTPTransport)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
