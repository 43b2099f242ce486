"""Each redaction rule of docs/redaction.md, for each place a key travels, at record time (the real
`RecordingTransport` against a loopback server) and through `toolstream import` (a vcrpy file):
the key, and every echo of it in the response, are in no saved byte."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus

import httpx
import pytest
import yaml

from harness.bounded import yaml as safe_yaml
from harness.cassettes import format as cassettes
from harness.cli import main
from harness.record.fake_provider import FakeProvider, Script
from harness.record.importer import import_file
from harness.transports.recording import RecordingTransport
from harness.transports.redaction import REDACTED, Redaction, echo_forms, looks_like_key

# Its base64 holds `+`, `/` and `=`: standard and URL-safe, padded and not, all differ.
KEY = "Qz7Canarya7ER~~p7?gqN6u"
PATH = "/v1/chat/completions"
FORM = "application/x-www-form-urlencoded"


def unicode_escaped(text: str, upper: bool = False) -> str:
    return "".join(f"\\u{ord(c):04X}" if upper else f"\\u{ord(c):04x}" for c in text)


# How a server echoes the key back (an error message quoting it, a debug field, ...).
ECHOES: dict[str, Callable[[str], str]] = {
    "raw": lambda k: k,
    "json-escaped": lambda k: json.dumps(k)[1:-1].replace("/", "\\/"),
    "unicode-escaped": unicode_escaped,
    "unicode-escaped upper": lambda k: unicode_escaped(k, upper=True),
    "url-encoded": lambda k: quote(k, safe=""),
    "url-encoded lower": lambda k: quote(k, safe="").replace("%3F", "%3f"),
    "url-encoded plus": quote_plus,
    "base64": lambda k: base64.b64encode(k.encode()).decode(),
    "base64 unpadded": lambda k: base64.b64encode(k.encode()).decode().rstrip("="),
    "base64 urlsafe": lambda k: base64.urlsafe_b64encode(k.encode()).decode(),
    "base64 urlsafe unpadded": lambda k: base64.urlsafe_b64encode(k.encode()).decode().rstrip("="),
    "base64 inside a longer text": lambda k: base64.b64encode(f"user:{k}".encode()).decode(),
}


def leaks(text: str, key: str = KEY) -> list[str]:
    """Which spelling of `key` (or a distinctive piece of it) is in `text`."""
    found = [
        name for name, echo in ECHOES.items() if name != "base64 inside a longer text" and echo(key) in text
    ]
    return found + (["a piece"] if key[3:15] in text else [])


def sse(*texts: str) -> bytes:
    """A stream of content deltas; each text goes into its JSON string as written (so an echo's
    `\\u` escapes are the wire's own)."""
    events = [f'data: {{"choices":[{{"index":0,"delta":{{"content":"{t}"}}}}]}}\n\n' for t in texts]
    return ("".join(events) + "data: [DONE]\n\n").encode()


def echoing_body(key: str) -> bytes:
    """A stream echoing `key` in every spelling, one per event, split across two network reads."""
    return sse(*(f"{name}: {echo(key)}" for name, echo in ECHOES.items()))


# Where the key travels: (path and query, headers, body text). Each rule of docs/redaction.md.
Place = Callable[[str], tuple[str, dict[str, str], str | None]]
JSON = {"content-type": "application/json"}


def json_body(**fields: Any) -> str:
    return json.dumps({"model": "gpt-4o-mini", "stream": True, **fields})


PLACES: dict[str, Place] = {
    # JSON body fields by name, any depth, case- and separator-insensitive
    "json api_key": lambda k: (PATH, JSON, json_body(api_key=k)),
    "json apiKey": lambda k: (PATH, JSON, json_body(apiKey=k)),
    "json api-key": lambda k: (PATH, JSON, json_body(**{"API-Key": k})),
    "json password": lambda k: (PATH, JSON, json_body(password=k)),
    "json secret": lambda k: (PATH, JSON, json_body(secret=k)),
    "json token": lambda k: (PATH, JSON, json_body(token=k)),
    "json client_secret": lambda k: (PATH, JSON, json_body(client_secret=k)),
    "json access_token": lambda k: (PATH, JSON, json_body(access_token=k)),
    "json refresh_token": lambda k: (PATH, JSON, json_body(refresh_token=k)),
    "json private_key": lambda k: (PATH, JSON, json_body(private_key=k)),
    "json nested auth.token": lambda k: (PATH, JSON, json_body(auth={"token": k})),
    "json deep in a list": lambda k: (PATH, JSON, json_body(tools=[{"x": [{"githubToken": k}]}])),
    "json suffix db_password": lambda k: (PATH, JSON, json_body(metadata={"db_password": k})),
    "json text (lone surrogate)": lambda k: (PATH, JSON, json_body(x="\ud800", api_key=k)),
    # form bodies by field name
    "form client_secret": lambda k: (PATH, {"content-type": FORM}, f"grant=x&client_secret={quote_plus(k)}"),
    "form password": lambda k: (PATH, {"content-type": FORM}, f"user=me&Password={quote_plus(k)}"),
    # headers: gateways and the usual ones
    "header Ocp-Apim-Subscription-Key": lambda k: (PATH, {"Ocp-Apim-Subscription-Key": k}, None),
    "header Helicone-Auth": lambda k: (PATH, {"Helicone-Auth": f"Bearer {k}"}, None),
    "header x-portkey-api-key": lambda k: (PATH, {"x-portkey-api-key": k}, None),
    "header cf-aig-authorization": lambda k: (PATH, {"cf-aig-authorization": f"Bearer {k}"}, None),
    "header x-litellm-api-key": lambda k: (PATH, {"x-litellm-api-key": k}, None),
    "header X-Api-Token": lambda k: (PATH, {"X-Api-Token": k}, None),
    "header authorization": lambda k: (PATH, {"authorization": f"Bearer {k}"}, None),
    "header x-api-key": lambda k: (PATH, {"x-api-key": k}, None),
    "header suffix x-tenant-secret": lambda k: (PATH, {"x-tenant-secret": k}, None),
    # query parameters
    "query sig": lambda k: (f"{PATH}?sv=2024&sig={quote(k, safe='')}", {}, None),
    "query code": lambda k: (f"{PATH}?code={quote(k, safe='')}&state=1", {}, None),
    "query api-key": lambda k: (f"{PATH}?api-key={quote(k, safe='')}", {}, None),
    "query key": lambda k: (f"{PATH}?key={quote(k, safe='')}", {}, None),
    "query x-goog-api-key": lambda k: (f"{PATH}?x-goog-api-key={quote(k, safe='')}", {}, None),
    "query token": lambda k: (f"{PATH}?token={quote(k, safe='')}", {}, None),
    "query access_token": lambda k: (f"{PATH}?access_token={quote(k, safe='')}", {}, None),
}
# A key in a path segment has to look like one (see `looks_like_key`): these use their own keys.
PATH_KEYS: dict[str, str] = {
    "path sk- key": "sk-proj-Zx81Qm4Rt7Yp2Lk9Wd3Nv6",
    "path long mixed token": "aB3dE5fG7hJ9kL2mN4pQ6rS8tU0vW1xY3z",
}


SERVER: list[FakeProvider] = []  # one loopback server for the module, started once


@pytest.fixture(scope="module", autouse=True)
def _server() -> Iterator[None]:
    with FakeProvider() as fake:
        SERVER.append(fake)
        yield
        SERVER.clear()


def record(
    tmp_path: Path, path_and_query: str, headers: dict[str, str], body: str | None, reply: bytes
) -> str:
    """Send one request through `RecordingTransport` to a loopback server; the saved file's text."""
    out = tmp_path / "rec.yaml"
    fake = SERVER[0]
    half = len(reply) // 2
    fake.route("POST", path_and_query.split("?")[0], Script.of([reply[:half], reply[half:]]))
    transport = RecordingTransport(path=out, mode="all")
    with httpx.Client(transport=transport) as client:
        response = client.post(fake.url + path_and_query, headers=headers, content=body)
        assert response.status_code == 200
        assert response.content == reply  # the client gets the bytes as sent
    cassettes.load(out)  # the saved file is a valid cassette
    return out.read_text(encoding="utf-8")


def vcr_import(
    tmp_path: Path, path_and_query: str, headers: dict[str, str], body: str | None, reply: bytes
) -> str:
    """Import a vcrpy cassette of the same exchange; the saved file's text."""
    request = {
        "method": "POST",
        "uri": f"https://api.openai.com{path_and_query}",
        "body": body,
        "headers": {name: [value] for name, value in headers.items()},
    }
    response = {
        "status": {"code": 200, "message": "OK"},
        "headers": {"content-type": ["text/event-stream"]},
        "body": {"string": reply.decode()},
    }
    source = tmp_path / "vcr.yaml"
    source.write_text(
        yaml.safe_dump({"interactions": [{"request": request, "response": response}], "version": 1})
    )
    out = tmp_path / "out.yaml"
    cassettes.save(import_file(source, fmt="vcr", dialect="openai-chat"), out)
    return out.read_text(encoding="utf-8")


@pytest.mark.parametrize("how", [record, vcr_import], ids=["record", "import"])
@pytest.mark.parametrize("place", sorted(PLACES))
def test_a_key_and_its_echoes_are_removed(tmp_path: Path, place: str, how: Callable[..., str]) -> None:
    path_and_query, headers, body = PLACES[place](KEY)
    text = how(tmp_path, path_and_query, headers, body, echoing_body(KEY))
    assert not leaks(text), (leaks(text), text)
    assert REDACTED in text
    assert "gpt-4o-mini" in text or body is None or "model" not in body  # the rest is kept


@pytest.mark.parametrize("how", [record, vcr_import], ids=["record", "import"])
@pytest.mark.parametrize("place", sorted(PATH_KEYS))
def test_a_key_in_a_path_segment_and_its_echoes_are_removed(
    tmp_path: Path, place: str, how: Callable[..., str]
) -> None:
    key = PATH_KEYS[place]
    text = how(tmp_path, f"/v1/{key}/chat/completions", {}, json_body(), echoing_body(key))
    assert not leaks(text, key), (leaks(text, key), text)
    assert f"/v1/{REDACTED}/chat/completions" in text


@pytest.mark.parametrize("echo", sorted(ECHOES))
def test_each_echo_form_alone_is_caught_across_reads(tmp_path: Path, echo: str) -> None:
    reply = sse(f"you sent {ECHOES[echo](KEY)}!")
    text = record(tmp_path, PATH, {"x-api-key": KEY}, json_body(), reply)
    assert not leaks(text), text
    body = cassettes.loads(text).interactions[0].response.body
    whole = echo != "base64 inside a longer text"  # there, the characters mixing `user:` in remain
    assert (b"you sent REDACTED!" if whole else b"REDACTED") in body


@pytest.mark.parametrize(
    "name",
    [
        "gpt-4o-mini-2024-07-18",
        "claude-3-5-sonnet-20241022",
        "anthropic.claude-3-5-sonnet-20241022-v2:0",
        "us.anthropic.claude-3-7-sonnet-20250219-v1:0",
        "gemini-2.0-flash:streamGenerateContent",
        "Meta-Llama-3.1-405B-Instruct-Turbo",
        "ft:gpt-4o-mini-2024-07-18:my-org:custom-suffix:9hH3kZ2a",
        "resp_67ccd2bed1ec8190b14f964abc0542670bb6a6b452e3a4d6",
        "msg_01XFDUDYJgAACzvnptvVoYEL",
        "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT",
        "123e4567-e89b-12d3-a456-426614174000",
        "0123456789abcdef0123456789abcdef",  # a Cloudflare account id: lower-case hex
        "llama-v3p1-8b-instruct",
        "skyline-model-with-a-long-descriptive-name",
    ],
)
def test_model_names_and_ids_are_not_keys(name: str) -> None:
    assert not looks_like_key(name)
    url = f"https://h/v1/models/{name}/x?alt=sse"
    assert Redaction.DEFAULT.request(cassettes.Request("POST", url))[0].url == url


@pytest.mark.parametrize(
    "key",
    [
        "sk-proj-Zx81Qm4Rt7Yp2Lk9Wd3Nv6",
        "sk-ant-api03-Zx81Qm4Rt7Yp2Lk9Wd3Nv6",
        "AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStU",
        "hf_aB3dE5fG7hJ9kL2mN4pQ6rS8tU",
        "aB3dE5fG7hJ9kL2mN4pQ6rS8tU0vW1xY3z",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.sig_nature-x",
    ],
)
def test_key_shaped_segments_are_keys(key: str) -> None:
    assert looks_like_key(key)


def test_form_field_names_are_case_and_separator_insensitive() -> None:
    request = cassettes.Request("POST", "http://h/", {"content-type": FORM}, f"a=%7E&Client-Secret={KEY}&b=1")
    out, secrets = Redaction.DEFAULT.request(request)
    assert out.body == "a=%7E&Client-Secret=REDACTED&b=1" and secrets == [KEY]


def test_json_schemas_naming_a_secret_field_are_kept() -> None:
    """A tool's parameter schema may declare `api_key` or `password`: an object, not a secret."""
    tools = [
        {
            "type": "function",
            "function": {"name": "f", "parameters": {"properties": {"password": {"type": "string"}}}},
        }
    ]
    body = {"model": "m", "tools": tools, "max_tokens": 10, "stream": True}
    out, secrets = Redaction.DEFAULT.request(cassettes.Request("POST", "http://h/", JSON, body))
    assert out.body == body and secrets == []


# ---------------------------------------------------------------------------------------------
# A key no rule knows, named by the user


UNKNOWN = {"x-tenant": KEY}  # no rule covers `x-tenant`


def test_a_name_the_rules_miss_is_kept_unless_named(tmp_path: Path) -> None:
    assert (
        KEY in Redaction.DEFAULT.request(cassettes.Request("POST", "http://h/", UNKNOWN))[0].headers.values()
    )
    named = Redaction.DEFAULT.plus(names=["X-Tenant"])
    out, secrets = named.request(
        cassettes.Request("POST", "http://h/?tenant=1&x_tenant=v1", UNKNOWN, {"deep": [{"xTenant": "v2"}]})
    )
    assert out.headers == {"x-tenant": REDACTED}
    assert out.url == "http://h/?tenant=1&x_tenant=REDACTED"
    assert out.body == {"deep": [{"xTenant": REDACTED}]}
    assert secrets == [KEY, "v1", "v2"]


def test_a_named_header_and_its_echoes_are_removed_at_record_time(tmp_path: Path) -> None:
    out = tmp_path / "rec.yaml"
    reply = echoing_body(KEY)
    with FakeProvider() as fake:
        fake.route("POST", PATH, Script.of([reply]))
        transport = RecordingTransport(
            path=out, mode="all", redact=Redaction.DEFAULT.plus(names=["x-tenant"])
        )
        with httpx.Client(transport=transport) as client:
            client.post(fake.url + PATH, headers=UNKNOWN, content=json_body())
    text = out.read_text()
    assert not leaks(text), text


def test_a_named_value_is_removed_wherever_it_travels_at_record_time(tmp_path: Path) -> None:
    """The key in a message's content (no rule knows it) and echoed in base64: `values=` catches both."""
    out = tmp_path / "rec.yaml"
    body = json_body(messages=[{"role": "user", "content": f"my key: {KEY}"}])
    with FakeProvider() as fake:
        fake.route("POST", PATH, Script.of([echoing_body(KEY)]))
        transport = RecordingTransport(path=out, mode="all", redact=Redaction.DEFAULT.plus(values=[KEY]))
        with httpx.Client(transport=transport) as client:
            client.post(fake.url + PATH, content=body)
    text = out.read_text()
    assert not leaks(text), text
    assert "my key: REDACTED" in text


def test_a_short_named_value_is_still_hunted() -> None:
    assert "pin42" in echo_forms(Redaction(values=("pin42",)).values)
    assert "pin42" not in echo_forms(["pin42"])  # found by a rule, so short a value is not hunted


def test_import_cli_redact_and_redact_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TENANT_KEY", "tenant-value-0042")
    source = tmp_path / "vcr.yaml"
    request = {
        "method": "POST",
        "uri": f"https://api.openai.com{PATH}",
        "body": json_body(),
        "headers": {"X-Tenant": [KEY]},
    }
    reply = echoing_body(KEY) + sse("and tenant-value-0042")
    response = {
        "status": {"code": 200},
        "headers": {"content-type": ["text/event-stream"]},
        "body": {"string": reply.decode()},
    }
    source.write_text(
        yaml.safe_dump({"interactions": [{"request": request, "response": response}], "version": 1})
    )
    out = tmp_path / "out.yaml"
    assert (
        main(["import", str(source), "-o", str(out), "--redact", "x-tenant", "--redact-env", "TENANT_KEY"])
        == 0
    )
    text = out.read_text()
    assert not leaks(text) and "tenant-value-0042" not in text, text


def test_redact_env_naming_no_variable_is_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "body.sse"
    source.write_bytes(sse("hi"))
    assert main(["import", str(source), "--redact-env", "NO_SUCH_VAR_4711"]) == 2
    err = capsys.readouterr().err
    assert "--redact-env NO_SUCH_VAR_4711" in err and len(err.strip().splitlines()) == 1


def test_record_cli_redact_names_a_header(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`toolstream record --redact-env`: the named value echoed by the provider is removed."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0000")
    monkeypatch.setenv("MY_ORG_SECRET", KEY)
    out = tmp_path / "rec.yaml"
    with FakeProvider() as fake:
        fake.route("POST", PATH, Script.of([echoing_body(KEY)]))
        args = [
            "record",
            "openai",
            "--base-url",
            fake.url + "/v1",
            "-o",
            str(out),
            "--redact-env",
            "MY_ORG_SECRET",
        ]
        assert main(args) == 0
    assert not leaks(out.read_text())


# ---------------------------------------------------------------------------------------------
# Hostile input: lone surrogates and malformed URLs

SURROGATE_BODY = '{"model":"m","stream":true,"x":"\\ud800"}'


def test_a_lone_surrogate_body_is_recorded_as_sent_and_replays(tmp_path: Path) -> None:
    out = tmp_path / "rec.yaml"
    reply = sse("hi")
    with FakeProvider() as fake:
        fake.route("POST", PATH, Script.of([reply]))
        with httpx.Client(transport=RecordingTransport(path=out, mode="all")) as client:
            response = client.post(fake.url + PATH, content=SURROGATE_BODY.encode())
            assert response.content == reply
        assert fake.requests[0].body == SURROGATE_BODY.encode()
    [item] = cassettes.load(out).interactions
    assert item.request.body == SURROGATE_BODY  # the body's text exactly: no UTF-8 file holds it parsed
    with httpx.Client(transport=RecordingTransport(path=out, mode="none")) as client:
        assert client.post("http://127.0.0.1:1" + PATH, content=SURROGATE_BODY.encode()).content == reply


def test_import_of_a_json_escaped_lone_surrogate_body_is_faithful(tmp_path: Path) -> None:
    text = vcr_import(tmp_path, PATH, {}, SURROGATE_BODY, sse("hi"))
    [item] = cassettes.loads(text).interactions
    assert item.request.body == SURROGATE_BODY


def write_vcr(path: Path, uri: str, body: str) -> None:
    """A vcrpy file written by hand, so its YAML can hold what `yaml.safe_dump` would not."""
    reply = json.dumps(sse("hi").decode())
    path.write_text(
        "interactions:\n"
        f"- request: {{method: POST, uri: {json.dumps(uri)}, body: {body}, headers: {{}}}}\n"
        "  response: {status: {code: 200}, headers: {content-type: [text/event-stream]},"
        f" body: {{string: {reply}}}}}\n"
        "version: 1\n"
    )


@pytest.mark.parametrize(
    ("uri", "body", "where", "loader"),
    [
        ("http://[::1/x", '"{}"', "interactions[0].request.uri", None),
        ("http://h:80x/", '"{}"', "interactions[0].request.uri", None),
        (f"https://api.openai.com{PATH}", '"{\\"x\\": \\"\\uD800\\"}"', "bad.yaml:2", None),
        (
            f"https://api.openai.com{PATH}",
            '"{\\"x\\": \\"\\uD800\\"}"',
            "interactions[0].request.body",
            "python",
        ),
        (f"https://api.openai.com{PATH}\udc00", '"{}"', "interactions[0].request.uri", "python"),
    ],
    ids=[
        "unclosed ipv6",
        "bad port",
        "lone surrogate, libyaml",
        "lone surrogate in body",
        "lone surrogate in uri",
    ],
)
def test_import_of_a_bad_vcr_field_is_one_line_exit_2(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    uri: str,
    body: str,
    where: str,
    loader: str | None,
) -> None:
    if loader == "python":  # libyaml refuses a lone surrogate escape itself; PyYAML's own loader reads it
        monkeypatch.setattr(safe_yaml, "_Loader", yaml.SafeLoader)
    source = tmp_path / "bad.yaml"
    write_vcr(source, uri, body)
    assert main(["import", str(source), "-o", str(tmp_path / "out.yaml")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert "bad.yaml" in err and where in err and "Traceback" not in err


def test_a_malformed_url_never_makes_redaction_raise() -> None:
    for url in (
        "http://[::1/x?key=abcdefgh1234",
        "http://h:80x/?sig=abcdefgh1234",
        "no-scheme?token=abcdefgh1234",
    ):
        out, secrets = Redaction.DEFAULT.request(cassettes.Request("GET", url))
        assert "abcdefgh1234" not in out.url and secrets == ["abcdefgh1234"]
