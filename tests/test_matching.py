"""Matching: method, URL parts, query multiset, JSON body values, ignored fields, the closest request."""

from __future__ import annotations

import pytest

from harness.cassettes.format import Interaction, Request, Response
from harness.errors import UsageError
from harness.transports.matching import Matcher

URL = "http://127.0.0.1:8080/v1/chat/completions"


def req(body: object = None, url: str = URL, method: str = "POST") -> Request:
    return Request(method, url, {}, body)


def same(recorded: Request, sent: Request, matcher: Matcher | None = None) -> bool:
    matcher = matcher or Matcher()
    return matcher.same(matcher.normalize(recorded), matcher.normalize(sent))


def where(recorded: Request, sent: Request, matcher: Matcher | None = None) -> list[str]:
    matcher = matcher or Matcher()
    return [diff.where for diff in matcher.differences(matcher.normalize(recorded), matcher.normalize(sent))]


def test_identical_requests_match() -> None:
    assert same(req({"a": 1}), req({"a": 1}))


def test_method_is_compared_case_insensitively() -> None:
    assert same(req(method="post"), req(method="POST"))
    assert where(req(method="GET"), req(method="POST")) == ["method"]


@pytest.mark.parametrize(
    ("recorded", "sent"),
    [
        ("http://h/p?a=1&b=2", "http://h/p?b=2&a=1"),  # query order is free
        ("http://h/p?a=1&a=2", "http://h/p?a=2&a=1"),
        ("http://H/p", "http://h/p"),  # host case
        ("http://h:80/p", "http://h/p"),  # default port
        ("https://h:443/p", "https://h/p"),
        ("http://h", "http://h/"),
    ],
)
def test_equivalent_urls_match(recorded: str, sent: str) -> None:
    assert same(req(url=recorded), req(url=sent))


@pytest.mark.parametrize(
    ("recorded", "sent", "part"),
    [
        ("http://h/p", "https://h/p", "url.scheme"),
        ("http://h/p", "http://g/p", "url.host"),
        ("http://h:1/p", "http://h:2/p", "url.port"),
        ("http://h/p", "http://h/q", "url.path"),
        ("http://h/p?a=1", "http://h/p?a=2", "url.query.a"),
        ("http://h/p?a=1", "http://h/p?a=1&a=1", "url.query.a"),  # a multiset, not a set
        ("http://h/p", "http://h/p?x=1", "url.query.x"),
    ],
)
def test_url_differences_name_the_part(recorded: str, sent: str, part: str) -> None:
    assert not same(req(url=recorded), req(url=sent))
    assert where(req(url=recorded), req(url=sent)) == [part]


def test_json_bodies_compare_as_values() -> None:
    assert same(req({"a": 1, "b": [1, 2]}), req('{"b": [1, 2],  "a": 1}'))
    assert where(req({"a": 1, "b": [1, 2]}), req({"a": 1, "b": [1, 3]})) == ["body.b[1]"]
    assert where(req({"a": 1}), req({"a": 1, "c": 2})) == ["body.c"]
    assert where(req({"a": {"b": [{"c": 1}]}}), req({"a": {"b": [{"c": 2}]}})) == ["body.a.b[0].c"]


def test_text_bodies_compare_as_text() -> None:
    assert same(req("a=1&b=2"), req("a=1&b=2"))
    assert where(req("a=1"), req("a=2")) == ["body"]
    assert same(req(""), req(None))


@pytest.mark.parametrize(
    ("ignored", "recorded", "sent"),
    [
        ("metadata.user_id", {"m": 1, "metadata": {"user_id": "a"}}, {"m": 1, "metadata": {"user_id": "b"}}),
        ("stream_options", {"m": 1, "stream_options": {"x": 1}}, {"m": 1}),
        ("messages[*].id", {"messages": [{"id": 1, "t": "x"}]}, {"messages": [{"id": 2, "t": "x"}]}),
        ("messages[0].id", {"messages": [{"id": 1}]}, {"messages": [{"id": 2}]}),
    ],
)
def test_ignored_fields_do_not_count(ignored: str, recorded: object, sent: object) -> None:
    assert not same(req(recorded), req(sent))
    assert same(req(recorded), req(sent), Matcher(ignore_fields=(ignored,)))


def test_match_on_selects_the_fields() -> None:
    recorded, sent = req({"a": 1}, "http://h/p"), req({"a": 2}, "http://h/q", "GET")
    assert same(recorded, sent, Matcher(match_on=()))
    assert not same(recorded, sent, Matcher(match_on=("body",)))
    assert where(recorded, sent, Matcher(match_on=("method", "url"))) == ["method", "url.path"]


def test_unknown_match_field_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="choose from method, url, body"):
        Matcher(match_on=("headers",))


def test_a_recorded_redacted_value_matches_anything() -> None:
    assert same(req({"token": "REDACTED"}), req({"token": "live"}))
    assert same(req(url="http://h/p?key=REDACTED&a=1"), req(url="http://h/p?a=1&key=live"))
    assert not same(
        req({"token": "live"}), req({"token": "REDACTED"})
    )  # only the recorded side is a wildcard


def interactions(*requests: Request) -> list[Interaction]:
    return [Interaction(request, Response(200)) for request in requests]


def test_explain_names_the_closest_interaction_and_the_difference() -> None:
    recorded = interactions(
        req({"model": "x", "messages": [1, 2, 3]}, "http://127.0.0.1:8080/v1/other"),
        req({"model": "gpt-4o", "messages": [1]}),
    )
    error = Matcher().explain(req({"model": "gpt-4.1", "messages": [1]}), recorded, set(), "cassettes/x.yaml")
    assert str(error) == (
        "no recorded interaction for POST http://127.0.0.1:8080/v1/chat/completions in cassettes/x.yaml; "
        "closest is #2 POST /v1/chat/completions, "
        "which differs in body.model: 'gpt-4o' recorded, 'gpt-4.1' sent"
    )


def test_explain_shows_three_differences_and_counts_the_rest() -> None:
    recorded = interactions(req({"a": 1, "b": 1, "c": 1, "d": 1, "e": 1}))
    message = str(Matcher().explain(req({"a": 2, "b": 2, "c": 2, "d": 2, "e": 2}), recorded, set(), "x.yaml"))
    assert "body.a: 1 recorded, 2 sent; body.b" in message
    assert message.endswith("; and 2 more")
    assert "\n" not in message


def test_explain_a_missing_field_says_absent() -> None:
    message = str(Matcher().explain(req({"a": 1, "tools": []}), interactions(req({"a": 1})), set(), "x.yaml"))
    assert message.endswith("body.tools: absent recorded, [] sent")


def test_explain_a_played_match() -> None:
    message = str(Matcher().explain(req({"a": 1}), interactions(req({"a": 1})), {0}, "x.yaml"))
    assert message.endswith(
        "closest is #1 POST /v1/chat/completions, which matches but was already played (each plays once)"
    )


def test_explain_an_empty_cassette() -> None:
    assert str(Matcher().explain(req(), [], set(), "x.yaml")).endswith(
        "in x.yaml; the cassette has no interactions"
    )
