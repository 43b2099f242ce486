"""The Dialect contract split by role: every dialect plays each role, and the shared defaults
(SSE event names from the payload type, claims by type, the block oracles' ending) hold."""

from __future__ import annotations

import random

import pytest

from harness.cassettes.format import Request
from harness.check.outcome import State
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
    Validation,
    Wire,
)
from harness.wire.dialects.blocks import BlockAccumulator

NAMES = dialects.names()


@pytest.mark.parametrize("name", NAMES)
def test_every_dialect_plays_every_role(name: str) -> None:
    d = dialects.get(name)
    assert all(isinstance(d, role) for role in (Wire, Detection, Oracle, Editing, Requesting))


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
