"""`toolstream serve --record --upstream URL`: a real SDK records through the server against a
loopback upstream (`FakeProvider`), read for read, into redacted cassettes that replay."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.cassettes.format import load
from harness.record.fake_provider import FakeProvider, Script
from harness.serve import ReplayServer
from harness.serve.upstream import Recorder
from harness.transports.replay import ReplayTransport

ROOT = Path(__file__).resolve().parents[2]
SECRET = "sk-live-do-not-save-0123456789abcdef"
PATH = "/v1/chat/completions"


def corpus_chunks(name: str) -> list[bytes]:
    return [
        chunk.data for chunk in load(ROOT / "cassettes/openai-chat" / name).interactions[0].response.chunks
    ]


@pytest.fixture
def upstream() -> Iterator[FakeProvider]:
    with FakeProvider() as fake:
        yield fake


def recording_server(upstream: FakeProvider, tmp_path: Path) -> tuple[ReplayServer, Recorder]:
    recorder = Recorder(upstream.url, tmp_path / "recorded")
    return ReplayServer((), recorder=recorder), recorder


def sdk(server: ReplayServer, **options: Any) -> Any:
    openai = pytest.importorskip("openai")
    return openai.OpenAI(base_url=server.url + "/v1", api_key=SECRET, **options)


def ask(client: Any) -> Any:
    return client.chat.completions.create(
        model="gpt-4o",
        messages=[{"role": "user", "content": "Weather and local time in Paris?"}],
        tools=[{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}],
        stream=True,
    )


def test_openai_sdk_records_through_the_server_read_for_read_and_the_cassette_replays(
    upstream: FakeProvider, tmp_path: Path
) -> None:
    chunks = corpus_chunks("parallel-2.yaml")
    upstream.route("POST", PATH, Script.of(chunks, delay=0.02))
    server, recorder = recording_server(upstream, tmp_path)
    with server.running():
        live = [event.model_dump() for event in ask(sdk(server, max_retries=0))]
        (path,) = recorder.wait(1, 10)

    # The upstream saw the client's own request, key included: the server forwards, it does not answer.
    (received,) = upstream.requests
    assert received.path == PATH and received.header("authorization") == f"Bearer {SECRET}"
    text = path.read_text()
    assert SECRET not in text and "REDACTED" in text
    cassette = load(path)
    assert cassette.dialect == "openai-chat"
    (interaction,) = cassette.interactions
    assert interaction.request.headers["authorization"] == "REDACTED"
    # A loopback upstream is written without its port (a re-record on another port changes nothing).
    assert interaction.request.url == "http://127.0.0.1" + PATH and upstream.url.startswith(
        "http://127.0.0.1:"
    )
    assert interaction.response.complete
    assert [chunk.data for chunk in interaction.response.chunks] == chunks  # each read kept as read
    calls = [c for e in live for choice in e["choices"] for c in (choice["delta"].get("tool_calls") or [])]
    assert {c["function"]["name"] for c in calls if c["function"].get("name")} == {"get_weather", "get_time"}

    httpx2 = pytest.importorskip("httpx2")
    openai = pytest.importorskip("openai")
    replayed_client = openai.OpenAI(
        base_url=upstream.url + "/v1",
        api_key="sk-other",
        max_retries=0,
        http_client=httpx2.Client(transport=ReplayTransport(path)),
    )
    replayed = [event.model_dump() for event in ask(replayed_client)]
    assert replayed == live


def test_an_upstream_cut_mid_body_cuts_the_client_and_is_saved_as_cut(
    upstream: FakeProvider, tmp_path: Path
) -> None:
    openai = pytest.importorskip("openai")
    chunks = corpus_chunks("parallel-2.yaml")
    upstream.route("POST", PATH, Script.of(chunks, delay=0.01, cut_after=4))
    server, recorder = recording_server(upstream, tmp_path)
    with server.running():
        with pytest.raises(openai.APIConnectionError):
            for _ in ask(sdk(server, max_retries=0)):
                pass
        (path,) = recorder.wait(1, 10)
    response = load(path).interactions[0].response
    assert not response.complete and response.error
    assert [chunk.data for chunk in response.chunks] == chunks[:4]


def test_each_request_gets_its_own_cassette_and_existing_files_are_kept(
    upstream: FakeProvider, tmp_path: Path
) -> None:
    upstream.route("POST", PATH, Script.of(corpus_chunks("single-call.yaml")))
    (tmp_path / "recorded").mkdir()
    (tmp_path / "recorded" / "0001-v1-chat-completions.yaml").write_text("kept\n")
    server, recorder = recording_server(upstream, tmp_path)
    with server.running():
        client = sdk(server, max_retries=0)
        for _ in range(2):
            list(ask(client))
        paths = recorder.wait(2, 10)
    assert [p.name for p in paths] == ["0002-v1-chat-completions.yaml", "0003-v1-chat-completions.yaml"]
    assert (tmp_path / "recorded" / "0001-v1-chat-completions.yaml").read_text() == "kept\n"
    assert all(load(p).dialect == "openai-chat" for p in paths)


def test_an_unreachable_upstream_is_a_502_naming_it(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    recorder = Recorder(f"http://127.0.0.1:{port}", tmp_path / "recorded")
    server = ReplayServer((), recorder=recorder)
    with server.running():
        request = urllib.request.Request(server.url + PATH, b"{}", {"content-type": "application/json"})
        with pytest.raises(urllib.error.HTTPError) as raised:
            urllib.request.urlopen(request, timeout=10)
    assert raised.value.code == 502
    assert f"127.0.0.1:{port}" in json.loads(raised.value.read())["error"]["message"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--record"], "--record and --upstream URL go together"),
        (["--record", "--upstream", "ftp://example"], "is not an http(s) URL"),
    ],
)
def test_record_options_are_checked(argv: list[str], message: str, tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli", "serve", *argv, "--cassette-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and message in done.stderr


def test_the_command_records_until_interrupted(upstream: FakeProvider, tmp_path: Path) -> None:
    upstream.route("POST", PATH, Script.of(corpus_chunks("single-call.yaml")))
    out = tmp_path / "out"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "harness.cli",
            "serve",
            "--record",
            "--upstream",
            upstream.url,
            "--cassette-dir",
            str(out),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        banner = process.stdout.readline()
        url = banner.split(" through ", 1)[1].split(" into ", 1)[0]
        openai = pytest.importorskip("openai")
        client = openai.OpenAI(base_url=url + "/v1", api_key=SECRET, max_retries=0)
        list(ask(client))
        deadline = time.monotonic() + 10
        while not list(out.glob("*.yaml")) and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        process.terminate()
        process.wait(10)
    (path,) = out.glob("*.yaml")
    assert SECRET not in path.read_text() and load(path).dialect == "openai-chat"


def test_a_key_in_a_path_segment_names_neither_the_file_nor_the_cassette(
    upstream: FakeProvider, tmp_path: Path
) -> None:
    key = "sk-proj-0123456789abcdefABCDEF"
    upstream.route("POST", f"/v1/{key}/chat/completions", Script.of(corpus_chunks("single-call.yaml")))
    server, recorder = recording_server(upstream, tmp_path)
    with server.running():
        body = json.dumps({"model": "gpt-4o", "stream": True, "messages": []}).encode()
        target = f"{server.url}/v1/{key}/chat/completions"
        request = urllib.request.Request(target, body, {"content-type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as answer:
            answer.read()
        (path,) = recorder.wait(1, 10)
    assert path.name == "0001-v1-REDACTED-chat-completions.yaml"
    assert key not in path.read_text() and "0123456789abcdef" not in path.read_text()
    assert load(path).name == path.stem


def test_the_start_up_line_and_errors_name_the_upstream_without_its_userinfo(tmp_path: Path) -> None:
    secret = "hunter2-0123456789"
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    upstream = f"http://user:{secret}@127.0.0.1:{port}"
    process = subprocess.Popen(
        [sys.executable, "-m", "harness.cli", "serve", "--record", "--upstream", upstream,
         "--cassette-dir", str(tmp_path / "out")],
        stdout=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        assert process.stdout is not None
        banner = process.stdout.readline()
        url = banner.split(" through ", 1)[1].split(" into ", 1)[0]
        request = urllib.request.Request(url + PATH, b"{}", {"content-type": "application/json"})
        with pytest.raises(urllib.error.HTTPError) as raised:
            urllib.request.urlopen(request, timeout=10)
        said = raised.value.read().decode()
    finally:
        process.terminate()
        process.wait(10)
    assert banner.startswith("toolstream serve: recording http://REDACTED:REDACTED@127.0.0.1:")
    assert secret not in banner and secret not in said and f"127.0.0.1:{port}" in said
