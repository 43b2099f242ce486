"""The Gemini, Ollama and Cohere cassettes: each checked against calls known by hand, and byte-exact."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from harness.cassettes import format as cassettes
from harness.cassettes.outcome import Outcome, ServerCall, State, ToolCall, diff
from harness.wire.dialects import body_of, detect, events_of, reference_outcome

ROOT = Path(__file__).resolve().parents[2]
CASSETTES = ROOT / "cassettes"


def calls(*items: tuple[str | None, str, dict[str, Any]]) -> tuple[ToolCall, ...]:
    return tuple(ToolCall(name=name, arguments=args, id=call_id) for call_id, name, args in items)


# What each cassette must decode to, worked out by reading the stream, not by running the oracle.
KNOWN: dict[str, Outcome] = {
    "gemini/single-call": Outcome(
        calls((None, "get_weather", {"city": "Paris", "unit": "celsius"})), "", "STOP"
    ),
    "gemini/parallel-one-chunk": Outcome(
        calls((None, "get_weather", {"city": "Paris"}), (None, "get_time", {"timezone": "Europe/Paris"})),
        "",
        "STOP",
    ),
    "gemini/parallel-one-per-chunk": Outcome(
        calls(
            (None, "get_weather", {"city": "Paris"}),
            (None, "get_weather", {"city": "Tokyo"}),
            (None, "get_time", {"timezone": "Asia/Tokyo"}),
        ),
        "",
        "STOP",
    ),
    "gemini/text-then-call": Outcome(
        calls((None, "get_weather", {"city": "Zürich"})),
        "I'll check the current conditions in Zürich for you.",
        "STOP",
    ),
    "gemini/no-args": Outcome(calls((None, "get_current_time", {})), "", "STOP"),
    "gemini/thinking-then-call": Outcome(
        calls((None, "get_weather", {"city": "Lisbon", "unit": "celsius"})), "", "STOP"
    ),
    "gemini/thinking-parallel": Outcome(
        calls((None, "get_weather", {"city": "Paris"}), (None, "get_weather", {"city": "Oslo"})), "", "STOP"
    ),
    "gemini/vertex-single-call": Outcome(calls((None, "get_weather", {"city": "Oslo"})), "", "STOP"),
    "gemini/partial-args": Outcome(
        calls((None, "get_weather", {"city": "Boston"}), (None, "get_weather", {"city": "San Francisco"})),
        "",
        "STOP",
    ),
    "gemini/partial-args-nested": Outcome(
        calls(
            (
                None,
                "save_recipe",
                {
                    "recipe": {
                        "title": "Fluffy Pancakes",
                        "servings": 4,
                        "vegetarian": True,
                        "ingredients": [
                            {"name": "flour", "amount": "200 g"},
                            {"name": "milk", "amount": "300 ml"},
                        ],
                    }
                },
            )
        ),
        "",
        "STOP",
    ),
    # The code runs on Google's side: a server call with its outcome, apart from the client's call.
    "gemini/code-execution-then-call": Outcome(
        calls((None, "get_weather", {"city": "Porto"})),
        "The average is 16.7. Now the weather in Porto.",
        "STOP",
        server_calls=(
            ServerCall(
                "code_execution",
                {
                    "language": "PYTHON",
                    "code": "temps = [14.2, 16.8, 19.1]\nprint(round(sum(temps) / len(temps), 1))\n",
                },
                result="OUTCOME_OK",
            ),
        ),
    ),
    "ollama/single-call": Outcome(
        calls(("call_v2ldp3ct", "get_weather", {"city": "Toronto", "unit": "celsius"})), "", "stop"
    ),
    "ollama/parallel": Outcome(
        calls(
            ("call_0sx8r2mh", "get_weather", {"city": "Paris"}),
            ("call_9bq4ze7n", "get_weather", {"city": "Madrid"}),
            ("call_k1t6wd3u", "search_web", {"query": "Madrid events this weekend", "max_results": 5}),
        ),
        "",
        "stop",
    ),
    "ollama/thinking-then-call": Outcome(
        calls(("call_r7d2yq0w", "get_weather", {"city": "Dublin"})), "", "stop"
    ),
    "ollama/text-then-call": Outcome(
        calls((None, "search_web", {"query": "<Fusion> reactor news & updates", "max_results": 3})),
        "I'll look up the latest news about the <Fusion> reactor for you.",
        "stop",
    ),
    "cohere/single-call": Outcome(
        calls(("get_weather_4pz8x1m6q2ck", "get_weather", {"location": "Toronto, Canada"})), "", "TOOL_CALL"
    ),
    "cohere/parallel": Outcome(
        calls(
            ("get_weather_n8c2v7ks1wq9", "get_weather", {"location": "Paris, France"}),
            ("get_weather_b3x9j5tq0zr4", "get_weather", {"location": "Tokyo, Japan"}),
        ),
        "",
        "TOOL_CALL",
    ),
    "cohere/tool-plan-then-call": Outcome(
        calls(
            ("search_docs_7hq3m0yw5ve1", "search_docs", {"query": "refund policy annual plan", "top_k": 5})
        ),
        "",
        "TOOL_CALL",
    ),
    "cohere/no-args": Outcome(
        calls(("list_open_tickets_x2d8r6n1pk0m", "list_open_tickets", {})), "", "TOOL_CALL"
    ),
}

MINIMUM = {"gemini": 7, "ollama": 4, "cohere": 4}


def test_every_cassette_is_known_and_each_dialect_has_enough() -> None:
    on_disk = {f"{p.parent.name}/{p.stem}" for d in MINIMUM for p in (CASSETTES / d).glob("*.yaml")}
    assert on_disk == set(KNOWN)
    for dialect, least in MINIMUM.items():
        assert sum(key.startswith(dialect + "/") for key in KNOWN) >= least


@pytest.mark.parametrize("key", sorted(KNOWN))
def test_cassette_decodes_to_the_calls_known_by_hand(key: str) -> None:
    loaded = cassettes.load(CASSETTES / f"{key}.yaml")
    dialect = key.split("/")[0]
    assert loaded.dialect == dialect and loaded.source.kind == "synthesized"
    (interaction,) = loaded.interactions
    assert detect(interaction.request) == dialect
    known = KNOWN[key]
    actual = reference_outcome(interaction.response, dialect)
    assert diff(known, actual) == []
    assert [c.id for c in actual.tool_calls] == [c.id for c in known.tool_calls]  # diff skips absent ids
    assert actual.state == State.COMPLETE
    assert interaction.expected is not None
    assert diff(known, interaction.expected) == []
    assert [c.id for c in interaction.expected.tool_calls] == [c.id for c in known.tool_calls]


@pytest.mark.parametrize("key", sorted(KNOWN))
def test_cassette_round_trips_to_the_same_bytes(key: str) -> None:
    loaded = cassettes.load(CASSETTES / f"{key}.yaml")
    response = loaded.interactions[0].response
    original = response.body
    events = events_of(response, key.split("/")[0])
    assert body_of(events, key.split("/")[0], like=original) == original
    assert len(response.chunks) > 1  # every cassette keeps its network reads


def test_vertex_cassettes_use_crlf_and_the_developer_api_lf() -> None:
    for path in (CASSETTES / "gemini").glob("*.yaml"):
        loaded = cassettes.load(path)
        body = loaded.interactions[0].response.body
        vertex = "aiplatform.googleapis.com" in loaded.interactions[0].request.url
        assert (b"\r\n\r\n" in body) == vertex, path.name
        assert body.count(b"\n\n") == (0 if vertex else body.count(b"data: "))


def _script(dialect: str) -> ModuleType:
    path = ROOT / "cassettes" / "synthesize" / f"{dialect}.py"
    spec = importlib.util.spec_from_file_location(f"synthesize_{dialect}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("dialect", sorted(MINIMUM))
def test_cassettes_are_what_their_script_makes(dialect: str) -> None:
    for made in _script(dialect).build():
        saved = (CASSETTES / dialect / f"{made.name}.yaml").read_text(encoding="utf-8")
        rerun = f"{dialect}/{made.name}: rerun cassettes/synthesize/{dialect}.py"
        assert cassettes.dumps(made) == saved, rerun
