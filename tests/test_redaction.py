"""Redaction: default headers and query parameters, user body paths, echoes of a secret, JSON paths."""

from __future__ import annotations

import pytest

from harness.cassettes.format import Chunk, Request
from harness.errors import UsageError
from harness.record.redaction import (
    DEFAULT_HEADERS,
    DROP,
    EVERY,
    REDACTED,
    Redaction,
    parse_path,
    rewrite_path,
)

CANARY = "canary-51d0e8b4"


@pytest.mark.parametrize("name", [*DEFAULT_HEADERS, "Authorization", "X-API-Key", "OpenAI-Organization"])
def test_every_default_header_is_redacted(name: str) -> None:
    out, secrets = Redaction.DEFAULT.request(Request("GET", "http://h/", {name: CANARY, "accept": "*/*"}))
    assert out.headers == {name: REDACTED, "accept": "*/*"}
    assert secrets == [CANARY]


@pytest.mark.parametrize(
    "name", ["key", "X-Amz-Signature", "X-Amz-Credential", "X-Amz-Security-Token", "KEY"]
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
