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
    with pytest.raises(UsageError, match="choose from method, scheme, host, port, path, query, url, body"):
        Matcher(match_on=("headers",))
    with pytest.raises(UsageError, match="match_on: cannot match on 'prot'; did you mean 'port'"):
        Matcher(match_on=("prot",))
    with pytest.raises(UsageError, match="cannot match on 'uri'; did you mean 'url'"):  # vcrpy's name
        Matcher(match_on=("uri",))


@pytest.mark.parametrize(
    ("match_on", "differs"),
    [
        (("scheme",), ["url.scheme"]),
        (("host",), ["url.host"]),
        (("port",), ["url.port"]),
        (("path",), ["url.path"]),
        (("query",), ["url.query.a"]),
        (("url",), ["url.scheme", "url.host", "url.port", "url.path", "url.query.a"]),
        (("method", "path"), ["url.path"]),
    ],
)
def test_each_url_part_can_be_matched_alone(match_on: tuple[str, ...], differs: list[str]) -> None:
    recorded, sent = req(url="http://h:1/p?a=1"), req(url="https://g:2/q?a=2")
    matcher = Matcher(match_on=match_on)
    assert where(recorded, sent, matcher) == differs
    assert not same(recorded, sent, matcher)
    assert same(recorded, req(url="http://h:1/p?a=1"), matcher)


def test_a_random_local_port_matches_when_port_is_not_matched_or_ignored() -> None:
    recorded, sent = req(url="http://127.0.0.1:42795/v1"), req(url="http://127.0.0.1:44691/v1")
    assert where(recorded, sent) == ["url.port"]
    assert same(recorded, sent, Matcher(match_on=("method", "scheme", "host", "path", "query", "body")))
    assert same(recorded, sent, Matcher(ignore_fields=("url.port",)))


def test_ignore_fields_take_the_names_the_miss_message_prints() -> None:
    recorded = req({"model": "m", "user": "u1"}, "http://h/p?a=1&trace=x")
    sent = req({"model": "m", "user": "u2"}, "http://h/p?a=1&trace=y")
    assert where(recorded, sent) == ["url.query.trace", "body.user"]
    assert same(recorded, sent, Matcher(ignore_fields=("url.query.trace", "body.user")))
    assert same(recorded, sent, Matcher(ignore_fields=("url.query.trace", "user")))  # bare: a body path
    assert not same(recorded, sent, Matcher(ignore_fields=("body.user",)))


def test_unknown_ignore_field_names_are_usage_errors() -> None:
    with pytest.raises(
        UsageError, match=r"ignore_fields: no such field 'url\.prot'; did you mean 'url\.port'"
    ):
        Matcher(ignore_fields=("url.prot",))
    with pytest.raises(UsageError, match="ignore_fields: 'url' is a whole part"):
        Matcher(ignore_fields=("url",))
    matcher = Matcher(ignore_fields=("body.usr",))
    with pytest.raises(
        UsageError, match=r"'body\.usr' is in no recorded request body of c\.yaml; did you mean 'body\.user'"
    ):
        matcher.check_ignored([req({"model": "m", "user": "u"})], "c.yaml")
    Matcher(ignore_fields=("body.user", "url.port")).check_ignored([req({"user": "u"})], "c.yaml")


def test_body_field_form_compares_only_those_fields() -> None:
    recorded, sent = req({"model": "m", "messages": [1]}), req({"model": "m", "messages": [2]})
    matcher = Matcher(match_on=("method", "body.model"))
    assert same(recorded, sent, matcher)
    assert where(recorded, req({"model": "n"}), matcher) == ["body.model"]


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
