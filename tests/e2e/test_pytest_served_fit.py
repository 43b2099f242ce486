"""What makes the matrix fit an application's agent in its own suite: cases retargeted onto the
tools its request offers, each test served under its own token (a late request stays on the test
that sent it), a test with no dialect chosen scoped to the dialect it speaks, and
`--toolstream-only-matrix`. Real openai SDK over real loopback HTTP, run the way a user runs
pytest (pytester)."""

from __future__ import annotations

import openai
import pytest

from tests._pytester_support import copy_cassettes, plugin_args, prepare

pytest_plugins = ["pytester"]
assert openai

# An agent with tools of its own, none of them named as the recordings' calls: it runs a call
# only when its name is offered and its arguments satisfy the tool's schema (what an SDK's
# `ModelBehaviorError: Tool ... not found` stands for).
AGENT = """
import json

import openai

TOOLS = {
    "lookup_forecast": {
        "type": "object",
        "properties": {"place": {"type": "string"}, "days": {"type": "integer", "minimum": 1, "maximum": 3}},
        "required": ["place", "days"],
        "additionalProperties": False,
    },
    "clock": {
        "type": "object", "properties": {"zone": {"type": "string"}}, "required": ["zone"],
        "additionalProperties": False,
    },
}


def run_tool(name, arguments):
    schema = TOOLS.get(name)
    if schema is None:
        raise LookupError(f"tool {name} not found")
    args = json.loads(arguments or "{}")
    if set(args) != set(schema["required"]):
        raise ValueError(f"{name}: arguments {sorted(args)} do not fit its schema")
    if name == "lookup_forecast" and not 1 <= args["days"] <= 3:
        raise ValueError("days out of range")
    return "ok"


def run(base_url):
    client = openai.OpenAI(base_url=base_url, api_key="k", max_retries=0)
    tools = [{"type": "function", "function": {"name": n, "parameters": s}} for n, s in TOOLS.items()]
    messages = [{"role": "user", "content": "Forecast and time?"}]
    for _ in range(3):
        calls = {}
        stream = client.chat.completions.create(model="m", messages=messages, tools=tools, stream=True)
        for chunk in stream:
            for part in (chunk.choices[0].delta.tool_calls or []) if chunk.choices else []:
                call = calls.setdefault(part.index, {"id": None, "name": "", "arguments": ""})
                call["id"] = part.id or call["id"]
                call["name"] += (part.function.name or "") if part.function else ""
                call["arguments"] += (part.function.arguments or "") if part.function else ""
        if not calls:
            return
        turn = [
            {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
            for c in calls.values()
        ]
        results = [
            {"role": "tool", "tool_call_id": c["id"], "content": run_tool(c["name"], c["arguments"])}
            for c in calls.values()
        ]
        messages += [{"role": "assistant", "content": None, "tool_calls": turn}, *results]
"""

SELECT = ["--toolstream-cassette-dir=corpus", "--toolstream-seeds", "1", "-p", "no:randomly"]


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    prepare(pytester, monkeypatch)
    copy_cassettes(pytester, "openai-chat/parallel-2", "openai-chat/single-call")
    pytester.makepyfile(myagent=AGENT)
    return pytester


MATRIX = """
import pytest
from myagent import run

pytestmark = pytest.mark.toolstream_matrix(dialects=["openai-chat"], scenarios=SCENARIOS)


def test_agent(toolstream_served_case):
    run(toolstream_served_case.base_url)
"""


def test_cases_are_retargeted_onto_the_agents_own_tools(project: pytest.Pytester) -> None:
    scenarios = '["original", "parallel-calls-share-index-0", "F3-one-byte-reads"]'
    project.makepyfile(test_agent=MATRIX.replace("SCENARIOS", scenarios))
    project.runpytest(*plugin_args(), *SELECT, "-k", "not share").assert_outcomes(passed=4)
    off = project.runpytest(*plugin_args(), *SELECT, "-k", "not share", "--toolstream-no-retarget")
    off.assert_outcomes(failed=4)
    off.stdout.fnmatch_lines(["*LookupError: tool get_weather not found*"])
    # The shape the mutation made is kept: the index-keyed agent still merges the calls that share
    # index 0, judged against the retargeted expectation, and the failure says the mapping.
    shared = project.runpytest(*plugin_args(), *SELECT, "-k", "share and parallel")
    shared.assert_outcomes(failed=1)
    shared.stdout.fnmatch_lines(
        [
            "*FAIL corpus/openai-chat/parallel-2::parallel-calls-share-index-0::s0 (test test_agent.py::*",
            "*  (retargeted: get_weather -> lookup_forecast, get_time -> clock)",
        ]
    )


def test_a_mapping_given_by_the_marker_is_followed_and_shown(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_mapped="""
import pytest
from myagent import run


@pytest.mark.toolstream_matrix(
    dialects=["openai-chat"], scenarios=["original"],
    retarget={"get_weather": "clock", "get_time": "lookup_forecast"},
)
def test_agent(toolstream_served_case):
    run(toolstream_served_case.base_url)
    assert toolstream_served_case.retarget.mapping["get_weather"] == "clock"
    names = [c.name for c in toolstream_served_case.expected.tool_calls]
    assert names[0] == "clock", names


@pytest.mark.toolstream_matrix(dialects=["openai-chat"], scenarios=["original"], retarget=False)
def test_recording(toolstream_served_case):
    run(toolstream_served_case.base_url)
"""
    )
    run = project.runpytest(*plugin_args(), *SELECT)
    run.assert_outcomes(passed=2, failed=2)  # the recording's names are not the agent's tools
    run.stdout.fnmatch_lines(["*FAIL *::original::s0 (test test_mapped.py::test_recording)*"])


LATE = """
import threading
import time

import httpx
import openai
import pytest

pytestmark = pytest.mark.toolstream_matrix(
    cassettes=["corpus/openai-chat/single-call.yaml"], scenarios=["original"]
)
FOLLOW_UP = {
    "model": "m",
    "messages": [
        {"role": "user", "content": "?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "ok"},
    ],
}


def read(case):
    client = openai.OpenAI(base_url=case.base_url, api_key="k", max_retries=0)
    for _ in client.chat.completions.create(model="m", messages=[], stream=True):
        pass


def test_leaves_a_late_request(toolstream_served_case):
    read(toolstream_served_case)
    url = toolstream_served_case.base_url + "/chat/completions"

    def later():
        time.sleep(0.5)
        httpx.post(url, json=FOLLOW_UP)

    threading.Thread(target=later).start()


def test_sends_nothing_back(toolstream_served_case):
    read(toolstream_served_case)
    time.sleep(1.5)  # the other test's late follow-up arrives meanwhile
"""


# Serial, and under xdist: a worker's late requests, skips and baseline changes reach the summary.
XDIST = [pytest.param((), id="serial"), pytest.param(("-n", "2"), id="xdist")]


@pytest.mark.parametrize("extra", XDIST)
def test_a_late_request_is_never_judged_as_another_tests(
    project: pytest.Pytester, extra: tuple[str, ...]
) -> None:
    project.makepyfile(test_late=LATE)
    run = project.runpytest(*plugin_args(), *SELECT, "-p", "no:randomly", *extra)
    run.assert_outcomes(failed=2)  # neither sent its follow-up while it ran
    run.stdout.fnmatch_lines(
        [
            "FAIL openai-chat/single-call::original::s0 (test test_late.py::test_sends_nothing_back) *",
            "  (served as recorded: the request offers no tools)",
            "  no follow-up request: the test returned without sending the tool results back",
        ]
    )
    # Under xdist the test that leaves it may be its worker's last: the worker's server waits for
    # the thread the test left running before it stops, so the late post is heard there too.
    run.stdout.fnmatch_lines(
        [
            "late requests: 1 sent after their test ended (judged on no test):",
            "  test_late.py::test_leaves_a_late_request?openai-chat/single-call::original::s0?: "
            "POST /run/*/chat/completions",
        ]
    )


UNHEARD = """
import threading
import time

import pytest

pytestmark = pytest.mark.toolstream_matrix(
    cassettes=["corpus/openai-chat/single-call.yaml"], scenarios=["original"], dialects=["openai-chat"]
)


def test_leaves_a_thread_running(toolstream_served_case):
    threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
"""


def test_a_thread_still_running_at_the_sessions_end_is_named_on_its_test(project: pytest.Pytester) -> None:
    # The worker's server waits for it (3 s), then stops: what it may send later is not heard, so
    # the controller's summary names the test that left it.
    project.makepyfile(test_unheard=UNHEARD)
    run = project.runpytest(*plugin_args(), *SELECT, "-n", "2")
    run.stdout.fnmatch_lines(
        [
            "threads of 1 tests still ran at the session's end (later requests unheard):",
            "  test_unheard.py::test_leaves_a_thread_running?openai-chat/single-call::original::s0?",
        ]
    )


UNSCOPED = """
from myagent import run


def test_agent(toolstream_served_case):
    run(toolstream_served_case.base_url)


def test_silent(toolstream_served_case):
    pass
"""


@pytest.mark.parametrize("extra", XDIST)
def test_a_test_with_no_dialect_runs_for_the_one_it_speaks(
    project: pytest.Pytester, extra: tuple[str, ...]
) -> None:
    copy_cassettes(project, "anthropic/parallel-calls", "anthropic/cut-mid-args")
    project.makepyfile(test_unscoped=UNSCOPED)
    chosen = ("--toolstream-scenarios", "original", "-k", "test_agent", *extra)
    run = project.runpytest(*plugin_args(), *SELECT, *chosen)
    run.assert_outcomes(passed=2, skipped=2)  # its openai-chat cases; the anthropic ones skipped
    run.stdout.fnmatch_lines(
        [
            "test_unscoped.py::test_agent: 2 cases of other dialects skipped (test_unscoped.py::test_agent "
            "speaks openai-chat: add @pytest.mark.toolstream_matrix(dialects=['openai-chat']))",
        ]
    )
    silent = project.runpytest(
        *plugin_args(), *SELECT, "--toolstream-scenarios", "original", "-k", "test_silent"
    )
    silent.assert_outcomes(failed=1, skipped=3)  # fails once, saying which marker to add
    said = (
        "no request reached its case (corpus/anthropic/cut-mid-args::original::s0), so the dialect it speaks"
    )
    assert (
        said in silent.stdout.str()
        and "add @pytest.mark.toolstream_matrix(dialects=[...])" in silent.stdout.str()
    )


def test_only_matrix_runs_the_generated_items_alone(project: pytest.Pytester) -> None:
    project.makepyfile(test_own="def test_own():\n    pass\n")
    options = [
        *plugin_args(),
        *SELECT,
        "--toolstream-accumulator",
        "reference",
        "--toolstream-scenarios",
        "original",
    ]
    project.runpytest(*options).assert_outcomes(passed=3)
    only = project.runpytest(*options, "--toolstream-only-matrix")
    only.assert_outcomes(passed=2, deselected=1)
