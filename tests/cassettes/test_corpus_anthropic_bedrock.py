"""The bundled Anthropic and Bedrock cassettes: each one's expected outcome, checked by hand here,
its lossless decode -> encode round trip, and a cross-check against the providers' own SDKs."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from harness.cassettes.format import Cassette, dumps, load
from harness.cassettes.outcome import Outcome, ServerCall, State, ToolCall, diff
from harness.wire import dialects
from harness.wire.dialects.bedrock_converse import is_exception

ROOT = Path(__file__).resolve().parents[2]
ANTHROPIC = ROOT / "cassettes" / "anthropic"
BEDROCK = ROOT / "cassettes" / "bedrock-converse"


def calls(*items: tuple[str, str, Any]) -> tuple[ToolCall, ...]:
    return tuple(ToolCall(name=name, arguments=arguments, id=call_id) for call_id, name, arguments in items)


def outcome(
    tool_calls: tuple[ToolCall, ...],
    text: str = "",
    finish: str | None = "tool_use",
    state: State = State.COMPLETE,
    servers: tuple[ServerCall, ...] = (),
) -> Outcome:
    return Outcome(tool_calls=tool_calls, text=text, finish_reason=finish, state=state, server_calls=servers)


READ_SEARCH_TEXT = 'I\'ll read the file and search for "bar"'

# What each cassette must yield, written from the streams' content, not from the accumulator.
KNOWN: dict[Path, Outcome] = {
    ANTHROPIC / "single-call.yaml": outcome(
        calls(
            (
                "toolu_01gmDpFOOi1sK5Nq5QmTN8sZ",
                "get_weather",
                {"location": "San Francisco, CA", "unit": "fahrenheit"},
            )
        )
    ),
    ANTHROPIC / "parallel-calls.yaml": outcome(
        calls(
            (
                "toolu_01wdZpSUp7noEZ0PeEDAcIyw",
                "get_weather",
                {"location": "Paris, France", "unit": "celsius"},
            ),
            ("toolu_01RfgW3gZG76s4q3WAYJUnMt", "get_weather", {"location": "London, UK", "unit": "celsius"}),
            ("toolu_01jwd7hYJolnJ1op05w7RAnk", "get_time", {"timezone": "Europe/Paris"}),
        ),
        "I'll check the weather in both cities and the time in Paris at once.",
    ),
    ANTHROPIC / "text-before-call.yaml": outcome(
        calls(("toolu_01pXBxvfSQsj6SEXUdulPuP3", "search_text", {"query": "def parse_config"})),
        "Let me look that up in the repository for you.",
    ),
    ANTHROPIC / "no-arguments.yaml": outcome(
        calls(("toolu_01JCEXrgUo0MF693SlaEiUZN", "list_open_tabs", {})),
        "I'll list the open tabs for you.",
    ),
    ANTHROPIC / "thinking-then-call.yaml": outcome(
        calls(
            ("toolu_01grloCocASBLApKxff5SJis", "get_weather", {"location": "Tokyo, Japan", "unit": "celsius"})
        ),
        "I'll get the current weather in Tokyo.",
    ),
    ANTHROPIC / "interleaved-thinking.yaml": outcome(
        calls(
            ("toolu_01d0cl5LY5WlR7I3qCuHoMuU", "list_issues", {"repo": "acme/widgets", "state": "open"}),
            (
                "toolu_01pzuGt0ksLhdPwZzz4fiii0",
                "get_file_contents",
                {"repo": "acme/widgets", "path": "README.md"},
            ),
        )
    ),
    ANTHROPIC / "seed004-interleaved-input-json.yaml": outcome(
        calls(
            ("toolu_01AfrVV4DgKVhOUEiT9Rheid", "list_issues", {"repo": "acme/widgets", "state": "open"}),
            (
                "toolu_01NzeOA6z2b06cDmDI5JGqeF",
                "get_file_contents",
                {"repo": "acme/widgets", "path": "docs/triage.md"},
            ),
        ),
        "Fetching both in parallel.",
    ),
    ANTHROPIC / "seed000-parallel-read-search.yaml": outcome(
        calls(
            ("toolu_01mSGCeopKVvCpeYhXW3F1BQ", "read_file", {"path": "foo.txt"}),
            ("toolu_01YJJy4389BS553I2dy28zZ2", "search_text", {"query": "bar"}),
        ),
        f"{READ_SEARCH_TEXT} at the same time.",
    ),
    ANTHROPIC / "overloaded-mid-call.yaml": outcome(
        calls(("toolu_01XSIcR2cRWPM6xo6vi5RFCO", "read_file", {"path": "src/app.py"})),
        finish=None,
        state=State.ERROR,
    ),
    ANTHROPIC / "cut-mid-args.yaml": outcome(
        calls(("toolu_01tP1h0inGMN4eHj1RkXvb0v", "read_file", {"path": "a.txt"})),
        "Reading both files.",
        finish=None,
        state=State.CUT,
    ),
    # Server tools run on Anthropic's side: reported apart, never as a call the client must run.
    ANTHROPIC / "tool-search-then-call.yaml": outcome(
        calls(
            (
                "toolu_01EPnMJFlAeOVzXcIcZyLXk8",
                "get_weather",
                {"location": "Lisbon, Portugal", "unit": "celsius"},
            )
        ),
        "I found a weather tool. Let me check Lisbon.",
        servers=(
            ServerCall(
                "tool_search_tool_regex",
                {"pattern": "weather"},
                "srvtoolu_0137sLPTLKuemWnp0GJQscwL",
                "tool_search_tool_result",
            ),
        ),
    ),
    ANTHROPIC / "web-search.yaml": outcome(
        (),
        "I'll search for the latest release. Python 3.14.0 was released on 7 October 2025.",
        "end_turn",
        servers=(
            ServerCall(
                "web_search",
                {"query": "Python 3.14 release date"},
                "srvtoolu_01XOxJ2DcepqLb48x0gxoemQ",
                "web_search_tool_result",
            ),
        ),
    ),
    # Eager (fine-grained) input streaming: two long chunks, cut mid-string; valid JSON here.
    ANTHROPIC / "eager-input-streaming.yaml": outcome(
        calls(
            (
                "toolu_01pKq93mjsXbNPBhK1r3B6dT",
                "write_file",
                {
                    "path": "notes/todo.md",
                    "content": "# TODO\n\n- rotate the staging keys\n- drop the v1 endpoints before March\n",
                },
            )
        )
    ),
    ANTHROPIC / "redacted-thinking-then-call.yaml": outcome(
        calls(
            (
                "toolu_017RhKEX2ZO7zPgltsdnMS2c",
                "get_weather",
                {"location": "Paris, France", "unit": "celsius"},
            )
        )
    ),
    ANTHROPIC / "thinking-parallel.yaml": outcome(
        calls(
            (
                "toolu_01Pr6Ye8dB4wd6mERUNsn2uc",
                "get_weather",
                {"location": "Paris, France", "unit": "celsius"},
            ),
            (
                "toolu_012q70cb6nilIPvGbixCjrof",
                "get_weather",
                {"location": "Oslo, Norway", "unit": "celsius"},
            ),
        ),
        "Checking both cities at once.",
    ),
    ANTHROPIC / "server-tool-then-call.yaml": outcome(
        calls(
            (
                "toolu_01rVi1YZaGi4uJg5XH8eIzJt",
                "get_weather",
                {"location": "Long Beach, CA", "unit": "fahrenheit"},
            )
        ),
        "Let me look up the venue first. It is in Long Beach. Now the weather there.",
        servers=(
            ServerCall(
                "web_search",
                {"query": "PyCon US 2026 venue city"},
                "srvtoolu_01HLOkHWjwdgQ8FhpmBjmRhk",
                "web_search_tool_result",
            ),
        ),
    ),
    ANTHROPIC / "code-execution-error.yaml": outcome(
        (),
        "20! is 2432902008176640000; the second computation timed out.",
        "end_turn",
        servers=(
            ServerCall(
                "code_execution",
                {"code": "import math\nprint(math.factorial(20))"},
                "srvtoolu_01mfFlYFlVb6qEkzzGahoHCM",
                "code_execution_tool_result",
            ),
            ServerCall(
                "code_execution",
                {"code": "print(math.factorial(10**6) % 7)"},
                "srvtoolu_01VMCjRRJfmyvxJe6ECBRsL9",
                "code_execution_tool_result: execution_time_exceeded",
            ),
        ),
    ),
    BEDROCK / "single-call.yaml": outcome(
        calls(
            (
                "tooluse_avINW4rHdxs_otGdWHM1Ff",
                "get_weather",
                {"location": "Seattle, WA", "unit": "fahrenheit"},
            )
        )
    ),
    BEDROCK / "text-then-call.yaml": outcome(
        calls(
            (
                "tooluse_zbILPR_W1Yb6HWiMZ4mA8F",
                "run_sql",
                {"sql": "SELECT count(*) FROM signups WHERE day >= current_date - 7", "limit": 1},
            )
        ),
        "I'll query the warehouse for last week's signups.",
    ),
    BEDROCK / "seed000-parallel-read-search.yaml": outcome(
        calls(
            ("tooluse_tkRTM7xCVYXYzuu7i5Xnbw", "read_file", {"path": "foo.txt"}),
            ("tooluse_Ur1oeS3udiYeagw6eHaJje", "search_text", {"query": "bar"}),
        ),
        f"{READ_SEARCH_TEXT} in parallel.",
    ),
    BEDROCK / "reasoning-then-call.yaml": outcome(
        calls(
            ("tooluse_v_zE42T5JYPfGAJ5ANgYoy", "get_weather", {"location": "Oslo, Norway", "unit": "celsius"})
        ),
        "Let me check Oslo's weather.",
    ),
    BEDROCK / "exception-mid-call.yaml": outcome(
        calls(("tooluse_E5CMisNJDN3J5UrwXaSU8x", "read_file", {"path": "README.md"})),
        finish=None,
        state=State.ERROR,
    ),
}
PATHS = sorted(KNOWN)


def ids(paths: list[Path]) -> list[str]:
    return [f"{p.parent.name}/{p.stem}" for p in paths]


def test_every_cassette_file_is_checked() -> None:
    on_disk = sorted([*ANTHROPIC.glob("*.yaml"), *BEDROCK.glob("*.yaml")])
    assert on_disk == PATHS


@pytest.mark.parametrize("path", PATHS, ids=ids(PATHS))
def test_expected_outcome_is_the_known_one(path: Path) -> None:
    cassette = load(path)
    (interaction,) = cassette.interactions
    assert cassette.dialect == path.parent.name
    assert dialects.get(cassette.dialect).matches(interaction.request)
    known, stored = KNOWN[path], interaction.expected
    assert stored is not None
    assert diff(known, stored) == []
    assert [c.id for c in stored.tool_calls] == [c.id for c in known.tool_calls]  # diff skips no id here
    assert [c.id for c in stored.server_calls] == [c.id for c in known.server_calls]
    assert diff(stored, dialects.reference_outcome(interaction.response, cassette.dialect)) == []


@pytest.mark.parametrize("path", PATHS, ids=ids(PATHS))
def test_decode_then_encode_gives_the_original_bytes(path: Path) -> None:
    cassette = load(path)
    response = cassette.interactions[0].response
    assert cassette.dialect is not None
    events = dialects.events_of(response, cassette.dialect)
    assert dialects.body_of(events, cassette.dialect, like=response.body) == response.body


@pytest.mark.parametrize("path", PATHS, ids=ids(PATHS))
def test_cassette_looks_like_a_recording(path: Path) -> None:
    cassette = load(path)
    (interaction,) = cassette.interactions
    request, response = interaction.request, interaction.response
    assert isinstance(request.body, dict)
    assert request.body.get("tools") or request.body["toolConfig"]["tools"]
    assert len(response.chunks) > 2 and all(c.offset_ms is not None for c in response.chunks)
    assert not any("authorization" in k.lower() or "api-key" in k.lower() for k in request.headers)
    for call in interaction.expected.tool_calls if interaction.expected else ():
        prefix, size = ("toolu_01", 30) if cassette.dialect == "anthropic" else ("tooluse_", 30)
        assert call.id is not None and call.id.startswith(prefix) and len(call.id) == size
    if cassette.dialect == "anthropic":
        assert request.headers["anthropic-version"] == "2023-06-01"
        events = dialects.events_of(response, "anthropic")
        start = events[0].payload["message"]
        assert start["id"].startswith("msg_01") and len(start["id"]) == 28 and start["model"]
        assert any(e.name == "ping" for e in events)
    else:
        assert "x-amzn-requestid" in response.headers
        events = dialects.events_of(response, "bedrock-converse")
        assert all("p" in e.payload for e in events if not is_exception(e))


# -- the providers' SDKs read the same calls ---------------------------------------------------


@pytest.mark.filterwarnings("ignore:The model .* is deprecated:DeprecationWarning")
def test_anthropic_sdk_reads_the_same_calls() -> None:
    anthropic = pytest.importorskip("anthropic")
    httpx2 = pytest.importorskip("httpx2")
    for path in PATHS:
        cassette = load(path)
        interaction = cassette.interactions[0]
        if cassette.dialect != "anthropic" or KNOWN[path].state is not State.COMPLETE:
            continue
        response = interaction.response

        def reply(request: Any, response: Any = response) -> Any:
            return httpx2.Response(200, headers=response.headers, content=response.body)

        client = anthropic.Anthropic(
            api_key="test",
            base_url="http://127.0.0.1:9",
            max_retries=0,
            http_client=httpx2.Client(transport=httpx2.MockTransport(reply)),
        )
        body = interaction.request.body
        with client.messages.stream(
            model=body["model"], max_tokens=body["max_tokens"], messages=body["messages"], tools=body["tools"]
        ) as stream:
            message = stream.get_final_message()
        got = [(b.id, b.name, b.input) for b in message.content if b.type == "tool_use"]
        assert got == [(c.id, c.name, c.arguments) for c in KNOWN[path].tool_calls], path.name
        servers = [(b.id, b.name, b.input) for b in message.content if b.type == "server_tool_use"]
        assert servers == [(c.id, c.name, c.arguments) for c in KNOWN[path].server_calls], path.name
        assert message.stop_reason == KNOWN[path].finish_reason


def test_botocore_parses_every_bedrock_frame() -> None:
    botocore_session = pytest.importorskip("botocore.session")
    from botocore.eventstream import EventStreamBuffer
    from botocore.parsers import EventStreamJSONParser

    model = botocore_session.get_session().get_service_model("bedrock-runtime")
    shape = model.operation_model("ConverseStream").output_shape.members["stream"]
    parser = EventStreamJSONParser()
    for path in PATHS:
        if path.parent != BEDROCK:
            continue
        buffer = EventStreamBuffer()
        buffer.add_data(load(path).interactions[0].response.body)
        parsed = [parser.parse(message.to_response_dict(), shape) for message in buffer]
        names = [next(iter(event)) for event in parsed]
        assert names[0] == "messageStart"
        if KNOWN[path].state is State.COMPLETE:
            assert names[-2:] == ["messageStop", "metadata"]
        else:
            assert parsed[-1]["Error"]["Code"] == "modelStreamErrorException"
        starts = [e["contentBlockStart"]["start"]["toolUse"] for e in parsed if "contentBlockStart" in e]
        known = [c.id for c in KNOWN[path].tool_calls]
        assert [s["toolUseId"] for s in starts][: len(known)] == known


# -- the scripts rebuild the files ---------------------------------------------------------------


def script(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        f"synthesize_{name}", ROOT / "cassettes" / "synthesize" / f"{name}.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(("name", "folder"), [("anthropic", ANTHROPIC), ("bedrock_converse", BEDROCK)])
def test_synthesize_scripts_are_deterministic(name: str, folder: Path) -> None:
    built: list[Cassette] = script(name).cassettes()
    assert len(built) == len(list(folder.glob("*.yaml")))
    for cassette in built:
        stem = cassette.name.removeprefix(f"{folder.name}-")
        assert dumps(cassette) == (folder / f"{stem}.yaml").read_text(encoding="utf-8"), cassette.name
