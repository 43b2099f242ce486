"""The Dialect contract split by role: every dialect plays each role, and the shared defaults
(SSE event names from the payload type, claims by type, the block oracles' ending) hold."""

from __future__ import annotations

import random

import pytest

from harness.cassettes.format import Request
from harness.cassettes.outcome import State
from harness.errors import DialectError
from harness.wire import dialects
from harness.wire.codecs import WireEvent
from harness.wire.dialects import (
    Detection,
    Dialect,
    Editing,
    Event,
    IdStyle,
    Oracle,
    Requesting,
    StandingIn,
    Validation,
    Wire,
)
from harness.wire.dialects.blocks import BlockAccumulator

NAMES = dialects.names()


# Streams an app or a session sends, not a provider's HTTP API: nothing to record with a recipe.
NOT_PROVIDERS = ("ag-ui", "ai-sdk-ui", "openai-realtime")


@pytest.mark.parametrize("name", NAMES)
def test_every_dialect_plays_every_role(name: str) -> None:
    d = dialects.get(name)
    assert all(isinstance(d, role) for role in (Wire, Detection, Oracle, Editing, StandingIn))
    assert isinstance(d, Requesting) == (name not in NOT_PROVIDERS)


def test_a_dialect_is_its_roles_and_nothing_else() -> None:
    assert Dialect.__bases__ == (Wire, Detection, Oracle, Validation, Editing)
    assert Dialect.__abstractmethods__ == (
        Detection.__abstractmethods__ | Oracle.__abstractmethods__ | Editing.__abstractmethods__
    )


@pytest.mark.parametrize("name", NAMES)
def test_the_default_url_is_detected_as_its_own_dialect(name: str) -> None:
    d = dialects.get(name)
    assert dialects.detect(Request(method="POST", url=d.default_url)) == name


@pytest.mark.parametrize(
    ("name", "payload", "event_name"),
    [
        ("anthropic", {"type": "message_stop"}, "message_stop"),
        ("cohere", {"type": "message-end"}, "message-end"),
        ("openai-responses", {"type": "response.completed"}, "response.completed"),
        ("anthropic", {"type": 3}, None),
        ("anthropic", "[DONE]", None),
        ("openai-chat", {"type": "x", "choices": []}, None),
        ("gemini", {"type": "x"}, None),
    ],
)
def test_event_name_is_the_payload_type_where_the_provider_names_events_so(
    name: str, payload: object, event_name: str | None
) -> None:
    assert dialects.get(name).event_name(payload) == event_name


@pytest.mark.parametrize(
    ("name", "payload", "claimed"),
    [
        ("anthropic", {"type": "content_block_delta"}, True),
        ("anthropic", {"type": "ping"}, False),  # too generic to tell a provider by
        ("cohere", {"type": "tool-call-start"}, True),
        ("cohere", {"type": "content_block_delta"}, False),
        ("openai-responses", {"type": "response.anything.new"}, True),
        ("openai-responses", {"type": "message_start"}, False),
    ],
)
def test_claims_by_payload_type(name: str, payload: object, claimed: bool) -> None:
    d = dialects.get(name)
    assert d.claims(Event(WireEvent(data="{}"), payload)) is claimed


@pytest.mark.parametrize(
    ("name", "stop"), [("anthropic", "message_stop"), ("bedrock-converse", "messageStop")]
)
def test_block_oracles_share_their_ending(name: str, stop: str) -> None:
    acc = dialects.get(name).accumulator()
    assert isinstance(acc, BlockAccumulator)
    cut = acc.close()
    assert cut.state is State.CUT and cut.error == f"stream ended before {stop}"
    assert acc.close("connection reset").error == "connection reset"


def test_id_styles_come_from_the_dialects() -> None:
    assert dialects.id_style("bedrock") == IdStyle("tooluse_", 22)
    assert dialects.id_style("mistral") == IdStyle("", 9)  # a server of the openai-chat dialect
    assert set(dialects.id_style_names()) >= {
        "openai",
        "anthropic",
        "bedrock",
        "gemini",
        "mistral",
        "responses",
    }
    gemini = dialects.id_style("gemini").fresh(random.Random(0))
    assert gemini.startswith("function-call-") and gemini[len("function-call-") :].isdigit()
    assert len(IdStyle("call_", 24).fresh(random.Random(0), length=10)) == 10
    with pytest.raises(DialectError, match="unknown id style 'nope'"):
        dialects.id_style("nope")


# --- the terminal event: when a client closing the stream has lost nothing ----------------------


def corpus_streams() -> list[tuple[str, str, bool, list[Event]]]:
    """(cassette, dialect, complete, events) for every bundled recording."""
    from harness.cassettes.corpus import bundled
    from harness.cassettes.format import load

    out = []
    for path in sorted(bundled("cassettes").glob("*/*.yaml")):
        cassette = load(path)
        for item in cassette.interactions:
            name = cassette.dialect or dialects.detect(item.request)
            assert name is not None, path
            events = dialects.events_of(item.response, name)
            out.append((f"{path.parent.name}/{path.stem}", name, item.response.complete, events))
    return out


CORPUS = corpus_streams()


@pytest.mark.parametrize(("cassette", "name", "complete", "events"), CORPUS, ids=[c[0] for c in CORPUS])
def test_a_recorded_stream_is_terminal_exactly_when_it_was_complete(
    cassette: str, name: str, complete: bool, events: list[Event]
) -> None:
    d = dialects.get(name)
    assert d.is_terminal(events) is complete
    assert not d.is_terminal(events[:-1])  # one event short: the terminal one is missing
    assert not d.is_terminal([])


def test_every_dialect_has_a_terminal_stream_in_the_corpus() -> None:
    assert {name for _, name, complete, _ in CORPUS if complete} == set(NAMES)


def test_what_ends_a_stream_per_dialect() -> None:
    def sse(name: str, data: str, event: str | None = None) -> Event:
        return dialects.get(name).parse(WireEvent(data=data, name=event))

    chat = dialects.get("openai-chat")
    assert chat.is_terminal([sse("openai-chat", "[DONE]"), chat.parse(WireEvent(comment=""))])
    assert chat.is_terminal([sse("openai-chat", "[DONE]"), chat.parse(WireEvent(block="event: ping"))])
    responses = dialects.get("openai-responses")
    assert responses.is_terminal([sse("openai-responses", '{"type":"response.failed","response":{}}')])
    # A bare `error` event need not be the last of a Responses stream.
    assert not responses.is_terminal([sse("openai-responses", '{"type":"error","message":"x"}')])
    ollama = dialects.get("ollama")
    assert ollama.is_terminal([sse("ollama", '{"message":{"role":"assistant","content":""},"done":true}')])
    assert not ollama.is_terminal([sse("ollama", '{"message":{"role":"assistant","content":"a"}}')])
    gemini = dialects.get("gemini")
    final = '{"candidates":[{"content":{"parts":[{"text":""}]},"finishReason":"STOP"}]}'
    assert gemini.is_terminal([sse("gemini", final)])
    assert not gemini.is_terminal([sse("gemini", '{"candidates":[{"content":{"parts":[{"text":"a"}]}}]}')])


def test_every_chat_or_block_dialect_reads_its_followup_with_the_one_reader() -> None:
    """A dialect names its follow-up fields (`Followup`); the reading is written once, in
    `Requesting`. Only the Responses API, whose input is a flat list of items and not turns, reads
    its own."""
    from harness.wire.dialects.requesting import Followup, Requesting

    own = sorted(
        d.name
        for d in map(dialects.get, dialects.names())
        if isinstance(d, Requesting) and type(d).read_followup is not Requesting.read_followup
    )
    assert own == ["openai-responses"]
    declared = [
        d for d in map(dialects.get, dialects.names()) if isinstance(d, Requesting) and d.name not in own
    ]
    assert declared and all(isinstance(type(d).followup, Followup) for d in declared)


@pytest.mark.parametrize("name", NAMES)
def test_every_dialect_joins_a_names_pieces_by_one_rule(name: str) -> None:
    # The judge (`misnamed`) and retargeting read any dialect's name pieces by it.
    joined = dialects.get(name).joined_name
    assert joined([]) == ""
    assert joined(["get_weather"]) == "get_weather"
    assert joined(["get", "_weather"]) == "get_weather"  # split: appended
    assert joined(["get_weather", "get_weather"]) == "get_weather"  # repeated in full: replaces
    assert joined(["get", "get_wea", "get_weather"]) == "get_weather"  # cumulative: replaces
    assert joined(["get", "", "_weather"]) == "get_weather"  # an empty piece changes nothing


@pytest.mark.parametrize("name", NAMES)
def test_every_class_a_dialect_describes_is_told_one_way(name: str) -> None:
    # A row's detector, run by the base `shapes`; or none, where the dialect tells every class in
    # a pass of its own (OpenAI chat): never both, never a class without a description.
    d = dialects.get(name)
    own_pass = type(d).shapes is not Validation.shapes
    assert d.shape_codes
    assert {code: shape.detect is None for code, shape in d.shape_codes.items()} == dict.fromkeys(
        d.shape_codes, own_pass
    )
