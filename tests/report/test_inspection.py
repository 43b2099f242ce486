"""What `toolstream show` is built on: decoded events, gists and the JSON document."""

from __future__ import annotations

from pathlib import Path

from harness import load_cassette as load
from harness.cassettes.format import Cassette, Chunk, Interaction, Request, Response, Source
from harness.report import inspection

ROOT = Path(__file__).resolve().parents[2]


def test_view_decodes_events_and_gives_the_reference_outcome() -> None:
    cassette = load(ROOT / "cassettes/openai-chat/parallel-2.yaml")
    events, outcome = inspection.view(cassette, cassette.interactions[0])
    assert events[-1].payload == "[DONE]"
    assert outcome is not None and [c.name for c in outcome.tool_calls] == ["get_weather", "get_time"]


def test_view_of_an_unknown_dialect_still_decodes_the_stream() -> None:
    response = Response(200, {"content-type": "text/event-stream"}, [Chunk(b"data: hi\n\n")])
    cassette = Cassette(
        "x", Source("synthesized", "t"), [Interaction(Request("GET", "http://h/x"), response)]
    )
    events, outcome = inspection.view(cassette, cassette.interactions[0])
    assert [e.payload for e in events] == ["hi"] and outcome is None


def test_gists_name_fragment_fields_and_drop_envelope_noise() -> None:
    cassette = load(ROOT / "cassettes/openai-chat/litellm-bridge-parallel-index0.yaml")
    events, _ = inspection.view(cassette, cassette.interactions[0])
    lines = inspection.gists("openai-chat", events)
    assert lines[0].startswith('call 1 start: index=0 id="call_') and 'name="read_file"' in lines[0]
    assert any(line.startswith("call 2 start: index=0") for line in lines)
    assert all('"model"' not in line for line in lines)  # the same in every chunk: not shown
    assert lines[-1] == "[DONE]"


def test_to_json_has_events_and_outcome() -> None:
    cassette = load(ROOT / "cassettes/anthropic/single-call.yaml")
    document = inspection.to_json(cassette)
    assert document["dialect"] == "anthropic"
    first = document["interactions"][0]
    assert first["events"][0]["event"] == "message_start"
    assert first["outcome"]["state"] == "complete" and first["outcome"]["tool_calls"]
