"""Redaction: default headers and query parameters, user body paths, echoes of a secret, JSON paths."""

from __future__ import annotations

import base64
import json
from typing import Any
from urllib.parse import quote

import pytest

from harness.cassettes.format import Chunk, Interaction, Request, Response
from harness.cassettes.outcome import Outcome, ToolCall
from harness.errors import UsageError
from harness.transports.redaction import (
    DEFAULT_HEADERS,
    DEFAULT_QUERY_PARAMS,
    DROP,
    EVERY,
    REDACTED,
    Redaction,
    parse_path,
    rewrite_path,
    scrub_chunks,
    scrub_interaction,
)

CANARY = "canary-51d0e8b4"


@pytest.mark.parametrize("name", [*DEFAULT_HEADERS, "Authorization", "X-API-Key", "OpenAI-Organization"])
def test_every_default_header_is_redacted(name: str) -> None:
    out, secrets = Redaction.DEFAULT.request(Request("GET", "http://h/", {name: CANARY, "accept": "*/*"}))
    assert out.headers == {name: REDACTED, "accept": "*/*"}
    assert secrets == [CANARY]


@pytest.mark.parametrize(
    "name",
    ["key", "X-Amz-Signature", "X-Amz-Credential", "X-Amz-Security-Token", "KEY", *DEFAULT_QUERY_PARAMS],
)
def test_every_default_query_param_is_redacted(name: str) -> None:
    out, _ = Redaction.DEFAULT.request(Request("GET", f"http://h/p?a=1&{name}={CANARY}&b=2"))
    assert out.url == f"http://h/p?a=1&{name}={REDACTED}&b=2"


def test_a_url_without_secrets_keeps_its_spelling() -> None:
    url = "http://h/p?b=%7E&a=x+y"
    assert Redaction.DEFAULT.request(Request("GET", url))[0].url == url


def test_user_body_paths_and_headers() -> None:
    redaction = Redaction.DEFAULT.plus(
        headers=("X-Tenant",), query_params=("sig",), body_paths=("a.b", "list[*].pw")
    )
    request = Request(
        "POST",
        f"http://h/?sig={CANARY}1",
        {"x-tenant": f"{CANARY}2"},
        {"a": {"b": f"{CANARY}3", "c": 1}, "list": [{"pw": f"{CANARY}4"}, {"pw": f"{CANARY}5"}, {}]},
    )
    out, secrets = redaction.request(request)
    assert CANARY not in repr(out)
    assert out.body == {"a": {"b": REDACTED, "c": 1}, "list": [{"pw": REDACTED}, {"pw": REDACTED}, {}]}
    assert len(secrets) == 5
    assert request.body["a"]["b"] == f"{CANARY}3"  # the original is left alone


def test_a_redacted_secret_is_hunted_everywhere_else() -> None:
    token = f"sk-{CANARY}"
    request = Request(
        "POST", f"http://h/{token}/x", {"authorization": f"Bearer {token}"}, {"echo": f"k={token}"}
    )
    out, secrets = Redaction.DEFAULT.request(request)
    assert token not in repr(out)
    assert out.url == f"http://h/{REDACTED}/x"
    headers = Redaction.DEFAULT.response_headers({"x-echo": token, "set-cookie": "s=1"}, secrets)
    assert headers == {"x-echo": REDACTED, "set-cookie": REDACTED}
    assert Redaction.DEFAULT.chunk(Chunk(f"data: {token}\n".encode(), 5.0), secrets) == Chunk(
        b"data: REDACTED\n", 5.0
    )


def test_short_secrets_are_not_hunted() -> None:
    out, secrets = Redaction.DEFAULT.request(Request("GET", "http://h/abc", {"api-key": "abc"}))
    assert out.url == "http://h/abc" and secrets == ["abc"]


def test_off_redacts_nothing() -> None:
    request = Request("GET", f"http://h/?key={CANARY}", {"authorization": CANARY})
    assert Redaction.OFF.request(request)[0] == request


@pytest.mark.parametrize(
    ("text", "steps"),
    [
        ("a", ("a",)),
        ("a.b", ("a", "b")),
        ("a[*].b", ("a", EVERY, "b")),
        ("a[2]", ("a", 2)),
        ("[*].x", (EVERY, "x")),
        ("a[0][1]", ("a", 0, 1)),
    ],
)
def test_parse_path(text: str, steps: tuple[object, ...]) -> None:
    assert parse_path(text) == steps


@pytest.mark.parametrize("text", ["", ".a", "a.", "a..b", "a[x]", "a[0]b", "a[*"])
def test_bad_paths_are_usage_errors(text: str) -> None:
    with pytest.raises(UsageError, match="bad JSON path"):
        parse_path(text)


def test_bad_body_path_fails_when_the_redaction_is_built() -> None:
    with pytest.raises(UsageError):
        Redaction(body_paths=("a..b",))


def test_rewrite_path_changes_and_drops() -> None:
    value = {"a": [{"b": 1}, {"b": 2}], "c": 3}
    assert rewrite_path(value, parse_path("a[*].b"), lambda v: v * 10) == {
        "a": [{"b": 10}, {"b": 20}],
        "c": 3,
    }
    assert rewrite_path(value, parse_path("a[1]"), lambda _: DROP) == {"a": [{"b": 1}], "c": 3}
    assert rewrite_path(value, parse_path("c"), lambda _: DROP) == {"a": [{"b": 1}, {"b": 2}]}
    assert rewrite_path(value, parse_path("x.y[3]"), lambda _: DROP) == value  # absent: unchanged
    assert value == {"a": [{"b": 1}, {"b": 2}], "c": 3}


def test_url_userinfo_is_redacted_and_hunted() -> None:
    out, secrets = Redaction.DEFAULT.request(Request("GET", f"http://me:{CANARY}@h:8080/p?a=1"))
    assert out.url == "http://REDACTED:REDACTED@h:8080/p?a=1"
    assert CANARY in secrets


def test_form_and_multipart_body_paths_are_field_names() -> None:
    redaction = Redaction.DEFAULT.plus(body_paths=("password",))
    form = Request(
        "POST", "http://h/", {"Content-Type": "application/x-www-form-urlencoded"}, f"a=%7E&password={CANARY}"
    )
    assert redaction.request(form)[0].body == "a=%7E&password=REDACTED"
    multipart = (
        f'--xx\r\nContent-Disposition: form-data; name="password"\r\n\r\n{CANARY}\r\n'
        '--xx\r\nContent-Disposition: form-data; name="a"\r\n\r\nkeep\r\n--xx--\r\n'
    )
    out, secrets = redaction.request(
        Request("POST", "http://h/", {"content-type": "multipart/form-data; boundary=xx"}, multipart)
    )
    assert out.body == multipart.replace(CANARY, REDACTED) and secrets == [CANARY]


def test_a_basic_credential_is_hunted_as_user_and_password() -> None:
    header = "Basic " + base64.b64encode(f"someone:{CANARY}".encode()).decode()
    _, secrets = Redaction.DEFAULT.request(Request("GET", "http://h/", {"authorization": header}))
    [chunk] = scrub_chunks([Chunk(f"pw={CANARY}".encode())], secrets)
    assert chunk.data == b"pw=REDACTED"


@pytest.mark.parametrize("cut", range(1, len(f"<{CANARY}>")))
def test_an_echo_split_across_reads_is_caught_and_reads_keep_their_boundaries(cut: int) -> None:
    body = f"<{CANARY}>".encode()
    chunks = [Chunk(b"start", 0.0), Chunk(body[:cut], 1.0), Chunk(body[cut:], 2.0), Chunk(b"end", 3.0)]
    out = scrub_chunks(chunks, [CANARY])
    assert b"".join(c.data for c in out) == b"start<REDACTED>end"
    assert out[0] == chunks[0] and out[-1] == chunks[-1]
    assert all(c.data for c in out)  # a read emptied by the cut is dropped, not kept empty


@pytest.mark.parametrize(
    "echo", [CANARY.replace("-", "/"), json.dumps(CANARY.replace("-", "/"))[1:-1].replace("/", "\\/"), "%2F"]
)
def test_escaped_and_encoded_echoes_are_caught(echo: str) -> None:
    secret = CANARY.replace("-", "/")
    if echo == "%2F":
        echo = quote(secret, safe="")
    [chunk] = scrub_chunks([Chunk(f"x {echo} y".encode())], [secret])
    assert chunk.data == b"x REDACTED y"


def test_derived_fields_are_scrubbed() -> None:
    response = Response(200, {}, [Chunk(b"data: x\n\n")], complete=False, error=f"cut at {CANARY}")
    expected = Outcome((ToolCall("f", {"key": f"is {CANARY}"}, "c1"),), text=CANARY, error=CANARY)
    item = scrub_interaction(Interaction(Request("GET", "http://h/"), response, expected), [CANARY])
    assert CANARY not in repr(item)
    assert item.expected is not None and item.expected.tool_calls[0].arguments == {"key": "is REDACTED"}


@pytest.mark.parametrize("name", ["api_key", "apiKey", "API-Key", "api.key", "Api Key"])
def test_names_compare_case_and_separator_insensitively(name: str) -> None:
    assert Redaction.DEFAULT.is_secret_field(name) and Redaction.DEFAULT.is_secret_param(name)


@pytest.mark.parametrize("before", ["", "u", "us", "use", "user:", "a longer prefix"])
@pytest.mark.parametrize("after", ["", "!", ":more"])
def test_a_key_inside_a_longer_base64_text_is_caught_at_every_alignment(before: str, after: str) -> None:
    encoded = base64.b64encode(f"{before}{CANARY}{after}".encode()).decode()
    [chunk] = scrub_chunks([Chunk(f"x {encoded} y".encode())], [CANARY])
    assert b"REDACTED" in chunk.data
    for shift in range(3):  # no run of characters encoding the canary alone is left
        core = base64.b64encode(b"\0" * shift + CANARY.encode()).decode()[2 + shift : -3]
        assert core.encode() not in chunk.data


def test_json_text_is_scanned_in_linear_time() -> None:
    """A body kept as text (too deep, or a lone surrogate) is scanned token by token: escaped
    quotes or an unterminated string cannot make the scan quadratic."""
    import time

    hostile = '{"a": "' + '\\"' * 200_000 + '", "api_key": "' + CANARY + '", "b": "' + "x" * 200_000
    started = time.perf_counter()
    out, secrets = Redaction.DEFAULT.request(Request("POST", "http://h/", {}, hostile))
    assert time.perf_counter() - started < 2.0
    assert secrets == [CANARY] and CANARY not in out.body


def test_json_text_keeps_its_spelling_and_numbers_are_secrets_too() -> None:
    text = '[ {"x" : "\\ud800", "Password":12345678, "nested": {"apiKey" :"k-' + CANARY + '"}} ]'
    out, secrets = Redaction.DEFAULT.request(Request("POST", "http://h/", {}, text))
    assert out.body == '[ {"x" : "\\ud800", "Password":"REDACTED", "nested": {"apiKey" :"REDACTED"}} ]'
    assert secrets == ["12345678", f"k-{CANARY}"]


def test_values_must_be_text() -> None:
    with pytest.raises(UsageError):
        Redaction(values=("",))
    with pytest.raises(UsageError):
        Redaction(headers="authorization")  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------
# Credentials found by their place in OAuth, Realtime and SigV4 exchanges (each missed before)

JWT = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJjbGllbnQtMTIzNDUifQ.c2lnbmF0dXJlLWJ5dGVzLTAxMjM0NTY3ODk"
EPHEMERAL = "ek_68af2b0c9d1e4f5a6b7c8d9e0f1a2b3c"


def saved(interaction: Interaction, redaction: Redaction = Redaction.DEFAULT) -> str:
    """Everything `interaction` would save once redacted, as one text."""
    request, secrets = redaction.request(interaction.request)
    response = interaction.response
    secrets += redaction.response_secrets(response.headers, response.chunks)
    done = scrub_interaction(Interaction(request, response), secrets)
    chunks = b"".join(chunk.data for chunk in done.response.chunks).decode()
    return "\n".join(
        [done.request.url, json.dumps(done.request.headers), json.dumps(done.request.body), chunks]
    )


def token_exchange(
    body: Any, url: str = "https://oauth.example.com/token", response: bytes = b"{}"
) -> Interaction:
    request = Request("POST", url, {"content-type": "application/json"}, body)
    return Interaction(request, Response(200, {"content-type": "application/json"}, [Chunk(response)]))


@pytest.mark.parametrize("field", ["client_assertion", "jwt", "assertion", "subject_token"])
def test_a_jwt_in_a_body_field_is_redacted(field: str) -> None:
    assert JWT not in saved(token_exchange({field: JWT, "grant_type": "client_credentials"}))


def test_a_jwt_in_an_assertion_query_parameter_is_redacted() -> None:
    url = f"https://oauth.example.com/token?grant_type=jwt-bearer&assertion={JWT}"
    assert JWT not in saved(token_exchange({}, url=url))


def test_a_key_shaped_value_is_redacted_whatever_its_field_is_named() -> None:
    text = saved(token_exchange({"grant": {"credential": JWT}, "items": [EPHEMERAL]}))
    assert JWT not in text and EPHEMERAL not in text


@pytest.mark.parametrize("field", ["access_token", "refresh_token", "id_token"])
def test_an_oauth_token_response_is_redacted(field: str) -> None:
    token = f"{field}-0123456789abcdefghijklmnop"
    body = json.dumps({field: token, "token_type": "Bearer", "expires_in": 3600}).encode()
    text = saved(token_exchange({"grant_type": "client_credentials"}, response=body))
    assert token not in text and '"token_type": "Bearer"' in text and '"expires_in": 3600' in text


def test_an_oauth_token_response_split_across_reads_is_redacted() -> None:
    token = "ya29.a0AfH6SMBx0123456789abcdefghijkl"
    body = json.dumps({"access_token": token}).encode()
    interaction = token_exchange({})
    interaction.response.chunks = [Chunk(body[:20]), Chunk(body[20:])]
    assert token not in saved(interaction) and "ya29" not in saved(interaction)


def test_a_realtime_client_secret_is_redacted_in_request_and_response() -> None:
    request = {"session": {"model": "gpt-realtime"}, "client_secret": {"value": EPHEMERAL, "expires_at": 1}}
    response = json.dumps({"client_secret": {"value": EPHEMERAL, "expires_at": 1}, "id": "sess_1"}).encode()
    text = saved(token_exchange(request, "https://api.openai.com/v1/realtime/sessions", response))
    assert EPHEMERAL not in text and '"expires_at": 1' in text
    top = json.dumps({"value": EPHEMERAL, "expires_at": 1}).encode()  # /v1/realtime/client_secrets
    assert EPHEMERAL not in saved(
        token_exchange({}, "https://api.openai.com/v1/realtime/client_secrets", top)
    )


def test_an_event_stream_keeps_a_secret_named_tool_argument() -> None:
    """A streamed response's `token` field is a tool call's argument, not a credential."""
    call = {"function": {"arguments": json.dumps({"token": "abcdefgh12"})}}
    data = f"data: {json.dumps({'choices': [{'delta': {'tool_calls': [call]}}]})}\n\n".encode()
    response = Response(200, {"content-type": "text/event-stream"}, [Chunk(data)])
    assert Redaction.DEFAULT.response_secrets(response.headers, response.chunks) == []


def test_a_sigv4_credential_echoed_without_its_scheme_word_is_redacted() -> None:
    key_id, signature = (
        "AKIAIOSFODNN7EXAMPLE",
        "fe5f80f77d5fa3beca038a248ff027d0445342fe2855ddc963176630326f1024",
    )
    credential = f"{key_id}/20250101/us-east-1/bedrock/aws4_request"
    value = f"AWS4-HMAC-SHA256 Credential={credential}, SignedHeaders=host;x-amz-date, Signature={signature}"
    echo = (
        f'{{"message": "The request signature we calculated does not match. Credential={credential}, '
        f'SignedHeaders=host;x-amz-date, Signature={signature}; key {key_id}"}}'
    ).encode()
    request = Request(
        "POST", "https://bedrock-runtime.us-east-1.amazonaws.com/model/m/converse", {"authorization": value}
    )
    text = saved(Interaction(request, Response(403, {"content-type": "application/json"}, [Chunk(echo)])))
    assert key_id not in text and signature not in text and credential not in text
    assert "The request signature we calculated does not match" in text


def test_an_echo_in_websocket_frames_is_replaced_and_each_frame_keeps_a_true_length() -> None:
    from harness.transports.redaction import scrub_frames
    from harness.wire.codecs import decode_all
    from harness.wire.codecs.websocket import WebSocketCodec, frame

    key = "sk-proj-echo0do0not0save0123456789abcdef"
    codec = WebSocketCodec()
    body = (
        frame(0x1, b'{"type":"session.created"}')
        + frame(0x1, f'{{"echo":"{key}"}}'.encode())
        + frame(0x1, b"{}")
    )
    reads = [Chunk(body[:40], 1.0), Chunk(body[40:], 2.0)]  # the echo's frame split across reads
    scrubbed = scrub_frames(reads, [key])
    assert [e.data for e in decode_all(codec, [c.data for c in scrubbed])] == [
        '{"type":"session.created"}', '{"echo":"REDACTED"}', "{}"
    ]  # fmt: skip
    # Each read holds the frames it completed: the first none whole past the first frame.
    assert [c.offset_ms for c in scrubbed] == [1.0, 2.0]
    assert scrub_frames(reads, ["not-in-there-0123456789"]) == reads
