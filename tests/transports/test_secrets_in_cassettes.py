"""No secret reaches a saved cassette: whatever redacted place it was sent in, however the provider
echoes it (raw, JSON-escaped, URL-encoded, split across reads or across events), and whichever
saved field carries it (chunks, errors, the derived `expected`)."""

from __future__ import annotations

import json
from base64 import b64encode
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus

import httpx
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.cassettes import format as cassettes
from harness.cli import main
from harness.record.fake_provider import FakeProvider, Script, Write
from harness.record.importer import import_file
from harness.transports.recording import RecordingTransport
from harness.transports.redaction import REDACTED, Redaction
from harness.wire import dialects

URL = "https://api.example.test/v1/chat/completions"
REDACT = Redaction.DEFAULT.plus(body_paths=("secret",))
MULTIPART = "multipart/form-data; boundary=b0undary"

# Where a secret can be sent: each returns the request's url, headers and body text (+ content type).
PLACES = {
    "authorization": lambda c: (URL, {"authorization": f"Bearer {c}"}, None),
    "basic auth": lambda c: (
        URL,
        {"authorization": "Basic " + b64encode(f"someuser:{c}".encode()).decode()},
        None,
    ),
    "proxy-authorization": lambda c: (URL, {"proxy-authorization": f"Basic {c}"}, None),
    "x-api-key": lambda c: (URL, {"x-api-key": c}, None),
    "x-auth-token": lambda c: (URL, {"X-Auth-Token": c}, None),
    "api_key param": lambda c: (f"{URL}?api_key={quote(c, safe='')}", {}, None),
    "access_token param": lambda c: (f"{URL}?a=1&access_token={quote(c, safe='')}", {}, None),
    "client_secret param": lambda c: (f"{URL}?client_secret={quote(c, safe='')}", {}, None),
    "password param": lambda c: (f"{URL}?password={quote(c, safe='')}", {}, None),
    "token param": lambda c: (f"{URL}?token={quote(c, safe='')}", {}, None),
    "userinfo": lambda c: (URL.replace("https://", f"https://me:{quote(c, safe='')}@"), {}, None),
    "json body path": lambda c: (URL, {"content-type": "application/json"}, json.dumps({"secret": c})),
    "form body path": lambda c: (
        URL,
        {"content-type": "application/x-www-form-urlencoded"},
        f"a=1&secret={quote_plus(c)}",
    ),
    "multipart body path": lambda c: (
        URL,
        {"content-type": MULTIPART},
        f'--b0undary\r\nContent-Disposition: form-data; name="secret"\r\n\r\n{c}\r\n--b0undary--\r\n',
    ),
}

# How the provider echoes it back.
ECHOES = {
    "raw": lambda c: c,
    "json-escaped": lambda c: json.dumps(c)[1:-1].replace("/", "\\/"),
    "url-encoded": lambda c: quote(c, safe=""),
    "url-encoded plus": lambda c: quote_plus(c),
}

# A fixed rare prefix: an arbitrary short text such as `content-` also occurs in every cassette's
# headers, and a key is never that; the rest varies freely (alphabet of keys and tokens).
canaries = st.text(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/+-_.=", min_size=5, max_size=21
).map(lambda rest: "Qz7" + rest)


def forms(canary: str) -> set[str]:
    return {canary, *(echo(canary) for echo in ECHOES.values())}


def record(path: Path, canary: str, place: str, reads: list[bytes], error: str | None) -> None:
    url, headers, body = PLACES[place](canary)

    def stream() -> Iterator[bytes]:
        yield from reads
        if error is not None:
            raise httpx.ReadError(error)

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=stream())

    transport = RecordingTransport(httpx.MockTransport(handler), path=path, redact=REDACT)
    with (
        httpx.Client(transport=transport) as client,
        client.stream("POST", url, headers=headers, content=body) as r,
    ):
        try:
            for _ in r.iter_raw():
                pass
        except httpx.ReadError:
            pass
    # What `toolstream record` derives and saves afterwards.
    saved = cassettes.load(path)
    for item in saved.interactions:
        item.expected = dialects.reference_outcome(item.response, "openai-chat")
    cassettes.save(transport.scrub(saved), path)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    canary=canaries,
    place=st.sampled_from(sorted(PLACES)),
    echo=st.sampled_from(sorted(ECHOES)),
    cuts=st.lists(st.integers(0, 10_000), max_size=6),
    in_error=st.booleans(),
    split_event=st.integers(1, 23),
)
def test_a_canary_in_any_redacted_place_appears_nowhere_in_the_saved_file(
    tmp_path_factory: pytest.TempPathFactory,
    canary: str,
    place: str,
    echo: str,
    cuts: list[int],
    in_error: bool,
    split_event: int,
) -> None:
    echoed = ECHOES[echo](canary)
    head, tail = canary[: split_event % len(canary)], canary[split_event % len(canary) :]

    def delta(text: str) -> str:
        return f'data: {{"choices":[{{"index":0,"delta":{{"content":{json.dumps(text)}}}}}]}}\n\n'

    # The echo whole in one event, then split across two events (only `expected` joins those).
    body = (delta(f"you sent {echoed}.") + delta(head) + delta(tail) + "data: [DONE]\n\n").encode()
    points = sorted({cut % (len(body) + 1) for cut in cuts})
    reads = [body[a:b] for a, b in zip([0, *points], [*points, len(body)], strict=True) if b > a]
    path = tmp_path_factory.mktemp("rec") / "c.yaml"
    record(path, canary, place, reads, f"connection lost after {echoed}" if in_error else None)
    text = path.read_text()
    leaked = [form for form in forms(canary) if form in text]
    assert not leaked, (leaked, text)
    assert REDACTED in text


# ---------------------------------------------------------------------------------------------
# `toolstream record` and `toolstream import`, the way a user runs them

KEY = "sk-proj-canary/7f3a9c1e5b"


def _delta(text: str) -> bytes:
    return f'data: {{"choices":[{{"index":0,"delta":{{"content":{json.dumps(text)}}}}}]}}\n\n'.encode()


def _record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, writes: list[bytes]) -> str:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    out = tmp_path / "rec.yaml"
    with FakeProvider() as fake:
        script = Script([Write(data, delay=0.05) for data in [*writes, b"data: [DONE]\n\n"]])
        fake.route("POST", "/v1/chat/completions", script)
        assert main(["record", "openai", "--base-url", fake.url + "/v1", "-o", str(out)]) == 0
    return out.read_text()


def test_record_a_key_echoed_across_two_network_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    event = _delta(f"your key is {KEY}")
    cut = event.index(b"canary")
    text = _record(tmp_path, monkeypatch, [event[:cut], event[cut:]])
    assert KEY not in text and "canary" not in text
    assert "your key is REDACTED" in text


def test_record_a_key_echoed_across_two_events_is_not_in_expected(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = _record(tmp_path, monkeypatch, [_delta(KEY[:12]), _delta(KEY[12:])])
    assert KEY not in text
    assert "text: REDACTED" in text


def test_record_a_json_escaped_echo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    event = _delta(f"your key is {KEY}")
    assert b"canary/7f3a" in event  # json.dumps writes `/` raw: escape it as some providers do
    text = _record(tmp_path, monkeypatch, [event.replace(b"canary/", b"canary\\/")])
    assert "canary" not in text


@pytest.mark.parametrize(
    ("url", "headers"),
    [
        (f"{URL}?api_key={KEY}", {}),
        (f"{URL}?access_token={KEY}", {}),
        (URL.replace("https://", f"https://user:{quote(KEY, safe='')}@"), {}),
        (URL, {"proxy-authorization": f"Bearer {KEY}"}),
    ],
)
def test_defaults_cover_proxy_auth_key_params_and_userinfo(url: str, headers: dict[str, str]) -> None:
    out, secrets = Redaction.DEFAULT.request(cassettes.Request("POST", url, headers))
    assert "canary" not in repr(out)
    assert secrets


def test_import_of_a_vcr_cassette_redacts_api_key_params(tmp_path: Path) -> None:
    body = _delta(f"echo {KEY}").decode() + _delta("!").decode() + "data: [DONE]\n\n"
    request: dict[str, Any] = {
        "method": "POST",
        "uri": f"https://api.openai.com/v1/chat/completions?api_key={KEY}",
        "body": json.dumps({"model": "m", "stream": True}),
        "headers": {"Proxy-Authorization": [f"Bearer {KEY}2"]},
    }
    response = {
        "status": {"code": 200},
        "headers": {"content-type": ["text/event-stream"]},
        "body": {"string": body},
    }
    path = tmp_path / "vcr.yaml"
    path.write_text(
        yaml.safe_dump({"interactions": [{"request": request, "response": response}], "version": 1})
    )
    saved = tmp_path / "out.yaml"
    cassettes.save(import_file(path), saved)
    text = saved.read_text()
    assert "canary" not in text
    assert "api_key=REDACTED" in text
