"""The openai-chat and openai-responses cassettes: each file's expected outcome, checked by hand
against what the stream must mean, and its body surviving decode -> `body_of` byte for byte."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from harness.cassettes.format import load
from harness.cassettes.outcome import Outcome, State
from harness.wire.dialects import body_of, events_of, reference_outcome

ROOT = Path(__file__).resolve().parents[2]
OPENAI_CALL = r"call_[A-Za-z0-9]{24}"
SHELL_INPUT = 'grep -rn "TODO\\|FIXME" src/ | wc -l\necho "done: $?"'
SHELL_ACTION = {
    "commands": ["cd repo && git status --short", "python -m pytest -q tests/test_ledger.py -x"],
    "timeout_ms": 120000,
}
PATCH = {
    "type": "update_file",
    "path": "src/greet.py",
    "diff": "@@ def greet(name):\n-    print('hi ' + name)\n+    print(f\"Hello, {name}!\")\n",
}

# (dialect, cassette): [(name, arguments, id: exact or a regex)], state, text
Expected = tuple[list[tuple[str | None, Any, str]], State, str]
EXPECTED: dict[tuple[str, str], Expected] = {
    ("openai-chat", "single-call"): (
        [("get_weather", {"city": "Paris", "unit": "celsius"}, OPENAI_CALL)],
        State.COMPLETE,
        "",
    ),
    ("openai-chat", "parallel-2"): (
        [
            ("get_weather", {"city": "Paris"}, OPENAI_CALL),
            ("get_time", {"timezone": "Europe/Paris"}, OPENAI_CALL),
        ],
        State.COMPLETE,
        "",
    ),
    ("openai-chat", "parallel-3-same-function"): (
        [
            ("get_weather", {"city": "Paris"}, OPENAI_CALL),
            ("get_weather", {"city": "Tokyo"}, OPENAI_CALL),
            ("get_weather", {"city": "New York"}, OPENAI_CALL),
        ],
        State.COMPLETE,
        "",
    ),
    ("openai-chat", "no-arguments"): ([("get_current_time", {}, OPENAI_CALL)], State.COMPLETE, ""),
    ("openai-chat", "text-then-call"): (
        [("read_file", {"path": "docs/install.md"}, OPENAI_CALL)],
        State.COMPLETE,
        "Let me look that file up for you.",
    ),
    ("openai-chat", "cut-mid-arguments"): ([], State.CUT, ""),
    ("openai-chat", "openrouter-text-between-calls"): (
        [
            ("get_weather", {"city": "Paris"}, r"toolu_vrtx_01[A-Za-z0-9]{22}"),
            ("get_time", {"timezone": "Europe/Paris"}, r"toolu_vrtx_01[A-Za-z0-9]{22}"),
        ],
        State.COMPLETE,
        "I'll check the weather in Paris first. Now the local time there.",
    ),
    ("openai-chat", "deepseek-reasoning-content"): (
        [("get_weather", {"city": "Hangzhou", "unit": "celsius"}, r"call_00_[A-Za-z0-9]{24}")],
        State.COMPLETE,
        "",
    ),
    ("openai-chat", "gemini-compat-thought-signature"): (
        [
            ("get_weather", {"city": "Paris"}, r"function-call-\d+"),
            ("get_weather", {"city": "Oslo"}, r"function-call-\d+"),
        ],
        State.COMPLETE,
        "",
    ),
    ("openai-chat", "vllm-reasoning-field"): (
        [("get_weather", {"city": "Lyon"}, OPENAI_CALL)],
        State.COMPLETE,
        "",
    ),
    ("openai-chat", "glm5-openrouter-idless-continuation"): (
        [
            (
                "web_search",
                {"max_results": 10, "query": "ESP32 command line development best practices"},
                "call_95df1cc8dabc4b959bbbc431",
            )
        ],
        State.COMPLETE,
        "",
    ),
    ("openai-chat", "vllm-same-index-fragments-first-delta"): (
        [("bocha_websearch_tool", {"query": "latest ESP-IDF release", "count": 5}, OPENAI_CALL)],
        State.COMPLETE,
        "",
    ),
    ("openai-chat", "litellm-bridge-parallel-index0"): (
        [("read_file", {"path": "foo.txt"}, OPENAI_CALL), ("search_text", {"query": "bar"}, OPENAI_CALL)],
        State.COMPLETE,
        "",
    ),
    ("openai-chat", "azure-prompt-filter"): (
        [("get_weather", {"city": "Seattle", "unit": "fahrenheit"}, OPENAI_CALL)],
        State.COMPLETE,
        "",
    ),
    ("openai-chat", "groq-whole-calls"): (
        [
            ("get_weather", {"city": "Paris"}, r"call_[a-z0-9]{4}"),
            ("get_weather", {"city": "Lyon"}, r"call_[a-z0-9]{4}"),
        ],
        State.COMPLETE,
        "",
    ),
    ("openai-responses", "single-call"): (
        [("get_weather", {"city": "Paris"}, OPENAI_CALL)],
        State.COMPLETE,
        "",
    ),
    ("openai-responses", "parallel-2"): (
        [("get_weather", {"city": "Paris"}, OPENAI_CALL), ("get_weather", {"city": "Tokyo"}, OPENAI_CALL)],
        State.COMPLETE,
        "",
    ),
    ("openai-responses", "text-then-call"): (
        [("read_file", {"path": "docs/install.md"}, OPENAI_CALL)],
        State.COMPLETE,
        "Let me open the install guide first.",
    ),
    ("openai-responses", "no-arguments"): ([("get_current_time", {}, OPENAI_CALL)], State.COMPLETE, ""),
    ("openai-responses", "reasoning-then-call"): (
        [("get_weather", {"city": "Oslo"}, OPENAI_CALL)],
        State.COMPLETE,
        "",
    ),
    ("openai-responses", "reasoning-encrypted-parallel"): (
        [("get_weather", {"city": "Paris"}, OPENAI_CALL), ("get_weather", {"city": "Oslo"}, OPENAI_CALL)],
        State.COMPLETE,
        "",
    ),
    ("openai-responses", "llamacpp-interleaved-parallel"): (
        [("read_file", {"path": "foo.txt"}, OPENAI_CALL), ("search_text", {"query": "bar"}, OPENAI_CALL)],
        State.COMPLETE,
        "",
    ),
    ("openai-responses", "args-only-in-done"): (
        [("get_time", {"timezone": "America/New_York"}, OPENAI_CALL)],
        State.COMPLETE,
        "",
    ),
    # The first call's output_item.done arrived before the cut: it is final; the second is not.
    ("openai-responses", "cut-mid-arguments"): (
        [("read_file", {"path": "README.md"}, OPENAI_CALL)],
        State.CUT,
        "",
    ),
    ("openai-responses", "web-search-then-call"): (
        [("get_time", {"timezone": "America/Los_Angeles"}, OPENAI_CALL)],
        State.COMPLETE,
        "The 2028 Summer Olympics are in Los Angeles. Let me get the local time there.",
    ),
    ("openai-responses", "hosted-tools"): (
        [],
        State.COMPLETE,
        "Average quarterly revenue is 4.67M, rounded half-even as the ledger does.",
    ),
    # Custom (freeform) tools: the raw input, never parsed (`kind` below).
    ("openai-chat", "custom-tool"): ([("run_shell", SHELL_INPUT, OPENAI_CALL)], State.COMPLETE, ""),
    ("openai-responses", "custom-tool"): ([("run_shell", SHELL_INPUT, OPENAI_CALL)], State.COMPLETE, ""),
    ("openai-responses", "mcp-streamed-arguments"): (
        [("get_time", {"timezone": "Europe/Paris"}, OPENAI_CALL)],
        State.COMPLETE,
        "The ledger is stamped in Paris time; checking the time there.",
    ),
    ("openai-responses", "mcp-approval-request"): ([], State.COMPLETE, ""),
    # An item the client runs that is not a function call: no name, the item's operation.
    ("openai-responses", "apply-patch"): (
        [(None, {"operation": PATCH}, OPENAI_CALL)],
        State.COMPLETE,
        "",
    ),
    # Its commands streamed (shell_call_command events): the action of output_item.done.
    ("openai-responses", "shell-call-streamed-commands"): (
        [(None, {"action": SHELL_ACTION}, OPENAI_CALL)],
        State.COMPLETE,
        "Let me look at the failing test first.",
    ),
}
# Each call's kind where it is not a function call.
KINDS: dict[tuple[str, str], list[str]] = {
    ("openai-chat", "custom-tool"): ["custom"],
    ("openai-responses", "custom-tool"): ["custom"],
    ("openai-responses", "apply-patch"): ["apply_patch_call"],
    ("openai-responses", "shell-call-streamed-commands"): ["shell_call"],
}

# Calls OpenAI runs itself (hosted tools): kept apart from the calls above, which the client runs.
# (dialect, cassette): [(item type, arguments, item id pattern, result)]; every other cassette has none.
SERVER: dict[tuple[str, str], list[tuple[str, Any, str, str | None]]] = {
    ("openai-responses", "web-search-then-call"): [
        (
            "web_search_call",
            {"action": {"type": "search", "query": "2028 Summer Olympics host city"}},
            r"ws_[0-9a-f]{50}",
            "completed",
        )
    ],
    ("openai-responses", "hosted-tools"): [
        (
            "file_search_call",
            {"queries": ["quarterly revenue table", "Q3 revenue"]},
            r"fs_[0-9a-f]{50}",
            "completed",
        ),
        (
            "code_interpreter_call",
            {
                "code": "revenue = [4.1, 4.6, 5.3]\nprint(round(sum(revenue) / 3, 2))",
                "container_id": "cntr_399f77e2273f5ae00f90b2e65dd267b723450a6c35f3a11e",
            },
            r"ci_[0-9a-f]{50}",
            "completed",
        ),
        (
            "mcp_call",
            {
                "server_label": "deepwiki",
                "name": "ask_question",
                "arguments": '{"repoName":"acme/ledger","question":"How is revenue rounded?"}',
            },
            r"mcp_[0-9a-f]{50}",
            "completed",
        ),
    ],
    ("openai-responses", "mcp-streamed-arguments"): [
        (
            "mcp_call",
            {
                "server_label": "deepwiki",
                "name": "ask_question",
                "arguments": '{"repoName":"acme/ledger","question":"Which time zone stamps the ledger?"}',
            },
            r"mcp_[0-9a-f]{50}",
            "completed",
        ),
    ],
    # Nothing ran: the server call awaits the client's approval.
    ("openai-responses", "mcp-approval-request"): [
        (
            "mcp_approval_request",
            {
                "server_label": "deepwiki",
                "name": "ask_question",
                "arguments": '{"repoName":"acme/ledger","question":"How is revenue rounded?"}',
            },
            r"mcpr_[0-9a-f]{50}",
            None,
        ),
    ],
}

MINIMUM = {"openai-chat": 8, "openai-responses": 6}


def _files(dialect: str) -> list[Path]:
    return sorted((ROOT / "cassettes" / dialect).glob("*.yaml"))


@pytest.mark.parametrize("dialect", sorted(MINIMUM))
def test_every_cassette_has_a_hand_check(dialect: str) -> None:
    names = {path.stem for path in _files(dialect)}
    assert len(names) >= MINIMUM[dialect]
    assert names == {name for d, name in EXPECTED if d == dialect}


@pytest.mark.parametrize(("dialect", "name"), sorted(EXPECTED))
def test_expected_outcome(dialect: str, name: str) -> None:
    cassette = load(ROOT / "cassettes" / dialect / f"{name}.yaml")
    assert cassette.dialect == dialect and cassette.name == name
    (interaction,) = cassette.interactions
    calls, state, text = EXPECTED[dialect, name]
    stored = interaction.expected
    assert stored is not None
    _check(stored, calls, state, text)
    _check(reference_outcome(interaction.response, dialect), calls, state, text)
    servers = SERVER.get((dialect, name), [])
    for outcome in (stored, reference_outcome(interaction.response, dialect)):
        got = [(c.name, c.arguments, c.result) for c in outcome.server_calls]
        assert got == [(kind, args, result) for kind, args, _, result in servers]
        for call, (_, _, id_pattern, _) in zip(outcome.server_calls, servers, strict=True):
            assert call.id is not None and re.fullmatch(id_pattern, call.id), call.id
    for outcome in (stored, reference_outcome(interaction.response, dialect)):
        assert [c.kind for c in outcome.tool_calls] == KINDS.get((dialect, name), ["function"] * len(calls))
    ids = [call.id for call in stored.tool_calls]
    assert len(set(ids)) == len(ids)
    body = interaction.response.body.decode()
    assert all(f'"{call_id}"' in body for call_id in ids)


def _check(outcome: Outcome, calls: list[tuple[str | None, Any, str]], state: State, text: str) -> None:
    assert outcome.state is state and outcome.text == text
    assert [(c.name, c.arguments) for c in outcome.tool_calls] == [(name, args) for name, args, _ in calls]
    assert not any(c.invalid for c in outcome.tool_calls)
    for call, (_, _, id_pattern) in zip(outcome.tool_calls, calls, strict=True):
        assert call.id is not None and re.fullmatch(id_pattern, call.id), call.id
    if state is State.COMPLETE:
        assert outcome.finish_reason in ("tool_calls", "completed")


@pytest.mark.parametrize(("dialect", "name"), sorted(EXPECTED))
def test_body_round_trip(dialect: str, name: str) -> None:
    response = load(ROOT / "cassettes" / dialect / f"{name}.yaml").interactions[0].response
    assert body_of(events_of(response, dialect), dialect, like=response.body) == response.body


def _script(dialect: str) -> ModuleType:
    path = ROOT / "cassettes" / "synthesize" / f"{dialect.replace('-', '_')}.py"
    spec = importlib.util.spec_from_file_location(f"_synthesize_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("dialect", sorted(MINIMUM))
def test_synthesizer_rewrites_the_committed_files(dialect: str, tmp_path: Path) -> None:
    written = _script(dialect).main(tmp_path)
    assert sorted(p.name for p in written) == [p.name for p in _files(dialect)]
    for path in written:
        assert path.read_bytes() == (ROOT / "cassettes" / dialect / path.name).read_bytes(), path.name


def test_seed_002_chunks_are_verbatim() -> None:
    body = load(ROOT / "cassettes" / "openai-chat" / "glm5-openrouter-idless-continuation.yaml").interactions[
        0
    ]
    text = body.response.body.decode()
    assert text.startswith(": OPENROUTER PROCESSING\n\n")
    for line in (
        '{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"call_95df1cc8dabc4b959bbbc431","type":"function",'
        '"function":{"name":"web_search","arguments":""}}]}}],"model":"z-ai/glm-5-20260211","provider":"AtlasCloud"}',
        '{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":""}}]}}]}',
        '{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":'
        '"{\\"max_results\\": 10, \\"query\\": \\"ESP32 command line development best practices\\""}}]}}]}',
        '{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"}"}}]}}]}',
    ):
        assert f"data: {line}\n\n" in text


def test_seed_001_first_tool_delta_holds_two_index_0_entries() -> None:
    response = load(
        ROOT / "cassettes" / "openai-chat" / "vllm-same-index-fragments-first-delta.yaml"
    ).interactions[0]
    events = events_of(response.response, "openai-chat")
    first = next(
        e
        for e in events
        if isinstance(e.payload, dict) and e.payload["choices"][0]["delta"].get("tool_calls")
    )
    entries = first.payload["choices"][0]["delta"]["tool_calls"]
    assert [e["index"] for e in entries] == [0, 0]
    assert entries[0]["function"] == {"name": "bocha_websearch_tool", "arguments": ""}
    assert entries[1] == {"index": 0, "function": {"arguments": "{"}}


def test_seed_000_both_calls_at_index_0() -> None:
    response = load(ROOT / "cassettes" / "openai-chat" / "litellm-bridge-parallel-index0.yaml").interactions[
        0
    ]
    headers = [
        entry
        for e in events_of(response.response, "openai-chat")
        if isinstance(e.payload, dict) and e.payload["choices"]
        for entry in e.payload["choices"][0]["delta"].get("tool_calls", [])
        if "id" in entry
    ]
    assert [(h["index"], h["function"]["name"]) for h in headers] == [(0, "read_file"), (0, "search_text")]
    assert headers[0]["id"] != headers[1]["id"]
