"""A conversation recorded by the `toolstream` fixture, then served by `toolstream_served_case`: the
application developer's whole path. The example agent (examples/agent_tests/agent.py, on the
openai SDK) is recorded talking to a provider (a `FakeProvider` on 127.0.0.1 stands in for it):
turn 1 streams two tool calls, the agent runs them and sends the results, turn 2 answers. That
cassette is then the matrix source of the agent's own tests: each case mutates turn 1, the agent's
follow-up is judged, and the server answers it with the recorded turn 2, which the agent returns."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import openai  # imported here, not first inside a pytester run (which drops what it imported)
import pytest

from harness.cassettes.format import load
from tests._pytester_support import ROOT, plugin_args, prepare

pytest_plugins = ["pytester"]

EXAMPLE = ROOT / "examples" / "agent_tests"
SHARED_INDEX = "parallel-calls-share-index-0"
SCENARIOS = ("original", SHARED_INDEX, "A5-id-on-every-chunk", "B2-name-split-across-fragments")
ANSWER = "Sunny in Paris, and it is noon."
RECORDED = "cassettes/test_record/test_agent_answers.toolstream.yaml"
NAME = "test_record/test_agent_answers.toolstream"  # how its case ids name it
assert openai


def _chunk(delta: dict, finish: str | None = None) -> str:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    chunk = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o"}
    return "data: " + json.dumps({**chunk, "choices": [choice]}) + "\n\n"


def _call(index: int, call_id: str | None, name: str | None, arguments: str) -> dict:
    head = {"id": call_id, "type": "function"} if call_id else {}
    function = {"name": name, "arguments": arguments} if name else {"arguments": arguments}
    return {"tool_calls": [{"index": index, **head, "function": function}]}


# Turn 1: two parallel calls, each at its own index, arguments in two pieces; turn 2: the answer.
TURNS = [
    [
        _chunk({"role": "assistant", "content": None}),
        _chunk(_call(0, "call_weather", "get_weather", "")),
        _chunk(_call(0, None, None, '{"city": ')),
        _chunk(_call(0, None, None, '"Paris"}')),
        _chunk(_call(1, "call_time", "get_time", "")),
        _chunk(_call(1, None, None, '{"timezone": "Europe/Paris"}')),
        _chunk({}, "tool_calls"),
        "data: [DONE]\n\n",
    ],
    [
        _chunk({"role": "assistant", "content": ANSWER[:14]}),
        _chunk({"content": ANSWER[14:]}),
        _chunk({}, "stop"),
        "data: [DONE]\n\n",
    ],
]

# The developer's project. conftest.py: the provider (here a FakeProvider playing TURNS).
CONFTEST = """
import json
import os

import pytest

from harness.record.fake_provider import FakeProvider, Script


@pytest.fixture
def provider_url():
    with FakeProvider() as fake:
        for turn in json.loads(os.environ.get("TURNS", "[]")):
            fake.route("POST", "/v1/chat/completions", Script.of([part.encode() for part in turn]))
        yield fake.url + "/v1"
"""

# test_record.py: the agent's test, recorded once with `--toolstream-record-mode once`.
TEST_RECORD = f"""
from agent import run_agent

ANSWER = {ANSWER!r}


def test_agent_answers(toolstream, provider_url):
    client = toolstream.openai_client(base_url=provider_url, api_key="test", max_retries=0)
    assert run_agent(client, "Weather and time in Paris?") == ANSWER
"""

# test_served.py: the same agent over the recording's cases, keyed by index and correctly.
TEST_SERVED = f"""
import os

import openai
import pytest
from agent import calls_by_index, calls_correctly, run_agent

ANSWER = {ANSWER!r}

SOURCE = os.environ.get("SOURCE")  # the recording by path or name; none: --toolstream-cassette-dir
pytestmark = pytest.mark.toolstream_matrix(
    cassettes=[SOURCE] if SOURCE else None, scenarios={list(SCENARIOS)!r}, seeds=1
)


def ask(case, reassemble):
    client = openai.OpenAI(base_url=case.base_url, api_key="test", max_retries=0)
    return run_agent(client, "Weather and time in Paris?", reassemble=reassemble)


def test_agent_keyed_by_index(toolstream_served_case):
    assert ask(toolstream_served_case, calls_by_index) == ANSWER


def test_agent_keyed_correctly(toolstream_served_case):
    assert ask(toolstream_served_case, calls_correctly) == ANSWER
"""


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    prepare(pytester, monkeypatch)
    shutil.copy(EXAMPLE / "agent.py", pytester.path / "agent.py")
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_record=TEST_RECORD, test_served=TEST_SERVED)
    return pytester


def record(project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Record the conversation through the `toolstream` fixture; the provider gone afterwards."""
    monkeypatch.setenv("TURNS", json.dumps(TURNS))
    run = project.runpytest(*plugin_args(), "test_record.py", "--toolstream-record-mode", "once")
    run.assert_outcomes(passed=1)
    monkeypatch.setenv("TURNS", "[]")  # nothing answers now: the cases are served from the cassette
    return project.path / RECORDED


def serve(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, source: str, *extra: str
) -> pytest.RunResult:
    """The served tests over `source`: the marker's `cassettes=`, or a `--toolstream-*` option."""
    options = [source] if source.startswith("--") else []
    monkeypatch.setenv("SOURCE", "" if options else source)
    args = [*plugin_args(), "test_served.py", "--toolstream-json=r.json", "-p", "no:randomly"]
    return project.runpytest(*args, *options, *extra)


def test_a_recorded_conversation_serves_the_agents_own_tests(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorded = record(project, monkeypatch)
    interactions = load(recorded).interactions
    assert len(interactions) == 2  # the turn streaming the calls, the follow-up and its answer
    sent = [m.get("tool_call_id") for m in interactions[1].request.body["messages"]]
    assert sent[-2:] == ["call_weather", "call_time"]  # the agent sent the results back
    # By path, by the name its ids use (the path without its suffix), and in its cassette folder
    # (whose name the ids then start with, as a folder's cases do).
    sources = {
        RECORDED: NAME,
        RECORDED.removesuffix(".yaml"): NAME,
        "--toolstream-cassette-dir=cassettes": f"cassettes/{NAME}",
    }
    for source, name in sources.items():
        judged_as_expected(serve(project, monkeypatch, source), project, name)


@pytest.mark.slow
def test_the_recorded_conversation_serves_the_same_under_xdist(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    record(project, monkeypatch)
    judged_as_expected(serve(project, monkeypatch, RECORDED, "-n", "2"), project, NAME)


def judged_as_expected(run: pytest.RunResult, project: pytest.Pytester, name: str) -> None:
    """The index-keyed agent fails the shared-index case by its follow-up, every other test
    passes, each returning the recorded answer; every verdict was read from the follow-up."""
    shared = f"{name}::{SHARED_INDEX}::s0"
    run.assert_outcomes(passed=2 * len(SCENARIOS) - 1, failed=1)
    run.stdout.fnmatch_lines(
        [
            f"FAIL {shared} (test test_served.py::test_agent_keyed_by_index) [unsafe, *",
            "  unsafe    tool_calls: 2 expected, got 1",
            "  unsafe    call 1: name 'get_weather' expected, got 'get_weatherget_time'",
        ]
    )
    # The tests assert the answer is the recorded turn 2 (the provider is gone, and the server's
    # own answer past a recording is "Done."): none failed on it, the merged calls' one neither.
    assert "AssertionError" not in run.stdout.str()
    reports = json.loads((project.path / "r.json").read_text())["reports"]
    cases = [case for report in reports for case in report["cases"]]
    assert len(cases) == 2 * len(SCENARIOS)
    for case in cases:
        assert case["cassette"] == name
        assert any("read from the follow-up request" in note for note in case["actual"]["notes"])
        wrong = case["id"] == shared and case["accumulator"].endswith("test_agent_keyed_by_index")
        assert case["verdict"] == ("fail" if wrong else "pass"), case


def test_the_matrix_marker_takes_a_bundled_cassette_by_its_case_id_name(pytester: pytest.Pytester) -> None:
    """`cassettes=["openai-chat/parallel-2"]` was made absolute against the working directory:
    `no such cassette file or folder`."""
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.toolstream_matrix(cassettes=["openai-chat/parallel-2"], scenarios=["original"])
        def test_reference(toolstream_case):
            toolstream_case.check("reference")
        """
    )
    run = pytester.runpytest(*plugin_args(), "-p", "no:randomly", "-v")
    run.assert_outcomes(passed=1)
    run.stdout.fnmatch_lines(["*test_reference?openai-chat/parallel-2::original::s0?*"])


def test_the_docs_show_the_conversation_as_tested() -> None:
    page = (ROOT / "docs" / "pytest.md").read_text(encoding="utf-8")
    section = page[page.index("**Your own conversation as the source.**") :]
    for shown in (RECORDED, f"{NAME}::{SHARED_INDEX}::s0", ANSWER, "--toolstream-record-mode once"):
        assert shown in section, shown
