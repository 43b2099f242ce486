"""`toolstream_served_case`: matrix cases served to code a test runs in its own process, judged by
the follow-up request it sends, as `check --client` judges a program. Real SDKs (openai and
anthropic, sync and async), httpx and urllib, over real loopback HTTP; the example of
examples/agent_tests as its developer runs it, serially, with xdist and sharded."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import anthropic  # imported here, not first inside a pytester run (which drops what it imported)
import openai
import pytest

from tests._matrix_shards import scenario_shards
from tests._pytester_support import ROOT, copy_cassettes, plugin_args, prepare

pytest_plugins = ["pytester"]

EXAMPLE = ROOT / "examples" / "agent_tests"
CASSETTES = (
    "openai-chat/parallel-2",
    "openai-chat/single-call",
    "openai-chat/cut-mid-arguments",
    "anthropic/parallel-calls",
    "anthropic/cut-mid-args",
)
SELECT = ["--toolstream-cassette-dir=corpus", "--toolstream-seeds", "1", "-p", "no:randomly"]
SHARED_INDEX_0 = "corpus/openai-chat/parallel-2::parallel-calls-share-index-0::s0"
assert openai and anthropic


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    prepare(pytester, monkeypatch)
    copy_cassettes(pytester, *CASSETTES)
    return pytester


def example(project: pytest.Pytester) -> pytest.Pytester:
    """The example agent and its tests, copied as shipped."""
    for name in ("agent.py", "test_agent.py"):
        shutil.copy(EXAMPLE / name, project.path / name)
    return project


def outcomes(junit: Path) -> dict[str, set[str]]:
    """Test names by outcome, read from the JUnit XML a run wrote."""
    found: dict[str, set[str]] = {"passed": set(), "failed": set(), "skipped": set()}
    for case in ET.parse(junit).iter("testcase"):
        kind = "failed" if case.find("failure") is not None or case.find("error") is not None else None
        kind = kind or ("skipped" if case.find("skipped") is not None else "passed")
        found[kind].add(case.get("name", ""))
    return found


def run_example(project: pytest.Pytester, *extra: str) -> dict[str, set[str]]:
    scenarios = ["--toolstream-scenarios", "original,parallel-calls-share-index-0"]
    project.runpytest(*plugin_args(), *SELECT, *scenarios, "--junitxml=junit.xml", *extra)
    return outcomes(project.path / "junit.xml")


def expected_example_outcomes(found: dict[str, set[str]]) -> None:
    """Only the index-keyed agent fails, and only where parallel calls share index 0."""
    assert found["failed"] == {f"test_agent_keyed_by_index[{SHARED_INDEX_0}]"}, found["failed"]
    assert not found["skipped"]
    tests = (
        "test_agent_keyed_by_index",
        "test_agent_keyed_correctly",
        "test_async_agent_from_the_environment",
    )
    for test in tests:
        ran = {name for names in found.values() for name in names if name.startswith(test + "[")}
        assert len(ran) == 4, ran  # parallel-2 x 2 scenarios, single-call and the cut one x original


def test_the_example_fails_the_index_keyed_agent_on_shared_index_0_only(project: pytest.Pytester) -> None:
    found = run_example(example(project))
    expected_example_outcomes(found)


@pytest.mark.slow
def test_the_example_under_xdist_gives_the_same_outcomes(project: pytest.Pytester) -> None:
    found = run_example(example(project), "-n", "2")
    expected_example_outcomes(found)


# What servers send that an agent keying calls by id got wrong (issue 32): ids on every chunk, names
# repeated in full, placeholder and re-sent arguments, arguments as an object, index-null and
# incremented continuations, rotating ids, a truncated call, a split surrogate pair.
SHAPES = (
    "A5-id-on-every-chunk,B3-name-repeated-in-full,B6-placeholder-args-in-header,B8-args-as-object,"
    "B9-full-args-re-emitted-at-end,A3-index-null-on-continuations,A11-index-incremented-on-continuation,"
    "A7-id-rotates-per-fragment,D7-truncated-mid-args,F2-surrogate-pair-split"
)


def test_the_correct_agent_passes_what_servers_really_send(project: pytest.Pytester) -> None:
    """calls_by_id (the example's second agent until issue 32's fix) failed 16 of these 22 cases."""
    args = [*plugin_args(), *SELECT, "--toolstream-scenarios", SHAPES, "-k", "keyed_correctly and openai"]
    example(project).runpytest(*args, "--junitxml=junit.xml").assert_outcomes(passed=22)


# The whole openai-chat matrix in shards of its scenarios, about as many cases each, so that xdist
# spreads them over its workers (one run of it all took minutes on a loaded machine, the longest
# test of the suite, which bounds `-n 2`); each shard is a run of its own, as a developer splits one
# across CI machines, and together they are every case once (`scenario_shards`).
MATRIX_SHARDS = 6


@pytest.mark.slow
@pytest.mark.parametrize("shard", range(MATRIX_SHARDS))
def test_the_correct_agent_passes_the_whole_openai_chat_matrix(shard: int) -> None:
    """Every openai-chat case (2026, some 200 s in all): the correct agent passes them all, the
    policy warnings of `[DONE]` without a finish_reason aside (the SDK hides `[DONE]`)."""
    shards = scenario_shards("openai-chat", MATRIX_SHARDS)
    assert sum(sum(group.values()) for group in shards) > 1000  # the whole matrix, not a slice of it
    scenarios = shards[shard]
    chosen = ["--toolstream-scenarios", ",".join(scenarios)]
    args = ["-p", "no:cacheprovider", "-p", "no:randomly", *plugin_args(), *chosen, "-k", "keyed_correctly"]
    command = [sys.executable, "-m", "pytest", "-q", str(EXAMPLE), *args]
    found = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    assert found.returncode == 0, found.stdout[-3000:]
    summary = re.search(r"test_agent_keyed_correctly: (\d+) cases: (.*)\n", found.stdout)
    assert summary and re.fullmatch(r"\d+ pass(, \d+ warn)?", summary[2]), found.stdout[-3000:]
    assert int(summary[1]) == sum(scenarios.values())  # every case of its scenarios


def test_the_failure_says_the_verdict_and_the_pytest_line_that_replays_it(project: pytest.Pytester) -> None:
    scenarios = ["--toolstream-scenarios", "parallel-calls-share-index-0"]
    args = [*plugin_args(), *SELECT, *scenarios, "-k", "by_index", "--toolstream-json=r.json"]
    run = example(project).runpytest(*args)
    run.assert_outcomes(failed=1)
    run.stdout.fnmatch_lines(
        [
            f"FAIL {SHARED_INDEX_0} (test test_agent.py::test_agent_keyed_by_index) [unsafe, quirk: *",
            "  unsafe    tool_calls: 2 expected, got 1",
            "  unsafe    call 1: name 'get_weather' expected, got 'get_weatherget_time'",
            "replay just this case:",
            "  pytest test_agent.py --toolstream-cassette-dir */corpus --toolstream-scenarios * -k *",
            "*toolstream*",
            "test_agent.py::test_agent_keyed_by_index: 1 cases: 1 fail",
        ]
    )
    assert f"-k 'test_agent_keyed_by_index[{SHARED_INDEX_0}]'" in run.stdout.str()
    assert "toolstream check" not in run.stdout.str()  # no command runs a test's code but pytest
    (case,) = json.loads((project.path / "r.json").read_text())["cases"]
    assert (case["id"], case["verdict"], case["class"]) == (SHARED_INDEX_0, "fail", "quirk")


def test_a_case_is_selected_with_k_and_split_by_pytest_shard(project: pytest.Pytester) -> None:
    pytest.importorskip("pytest_shard")
    example(project)
    chosen = run_example(project, "-k", "by_index and parallel-2")
    assert chosen["failed"] == {f"test_agent_keyed_by_index[{SHARED_INDEX_0}]"}
    assert len(chosen["passed"]) == 1
    whole = run_example(project)
    shards = [run_example(project, "--shard-id", str(i), "--num-shards", "2") for i in (0, 1)]
    for kind in ("passed", "failed"):
        assert shards[0][kind].isdisjoint(shards[1][kind])
        assert shards[0][kind] | shards[1][kind] == whole[kind]


CLIENTS = '''
import asyncio
import http.client
import json
import os
import urllib.parse

import anthropic
import httpx
import openai
import pytest

TOOLS = [{"name": n, "input_schema": {"type": "object"}} for n in ("get_weather", "get_time")]
QUESTION = [{"role": "user", "content": "Weather in Paris?"}]
ASK = {"model": "claude-sonnet-4-5", "max_tokens": 256, "tools": TOOLS}


def follow_up(message):
    uses = [block for block in message.content if block.type == "tool_use"]
    content = [block.model_dump(exclude_none=True) for block in message.content]
    turn = {"role": "assistant", "content": content}
    results = [{"type": "tool_result", "tool_use_id": block.id, "content": "ok"} for block in uses]
    return [*QUESTION, turn, {"role": "user", "content": results}] if uses else None


@pytest.mark.toolstream_matrix(dialects=["anthropic"])
def test_anthropic_sync(toolstream_served_case):
    client = anthropic.Anthropic(base_url=toolstream_served_case.base_url, api_key="k", max_retries=0)
    with client.messages.stream(messages=QUESTION, **ASK) as stream:
        messages = follow_up(stream.get_final_message())
    if messages:
        client.messages.create(messages=messages, **ASK)


@pytest.mark.toolstream_matrix(dialects=["anthropic"])
def test_anthropic_async(toolstream_served_case):
    async def agent():
        async with anthropic.AsyncAnthropic(max_retries=0) as client:  # ANTHROPIC_BASE_URL
            async with client.messages.stream(messages=QUESTION, **ASK) as stream:
                messages = follow_up(await stream.get_final_message())
            if messages:
                await client.messages.create(messages=messages, **ASK)

    with toolstream_served_case.environ():
        asyncio.run(agent())
    assert os.environ.get("ANTHROPIC_BASE_URL") != toolstream_served_case.base_url  # put back


def chat_follow_up(lines):
    """The follow-up body of an openai-chat stream's SSE lines, calls keyed by id."""
    calls = {}
    last = None
    for line in lines:
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        for choice in json.loads(line[6:]).get("choices") or []:
            for part in (choice.get("delta") or {}).get("tool_calls") or []:
                last = part.get("id") or last
                empty = {"id": last, "type": "function", "function": {"name": "", "arguments": ""}}
                call = calls.setdefault(last, empty)
                for key in ("name", "arguments"):
                    call["function"][key] += (part.get("function") or {}).get(key) or ""
    results = [{"role": "tool", "tool_call_id": i, "content": "ok"} for i in calls]
    turn = {"role": "assistant", "content": None, "tool_calls": list(calls.values())}
    return {"model": "m", "messages": [{"role": "user", "content": "q"}, turn, *results]} if calls else None


@pytest.mark.toolstream_matrix(dialects=["openai-chat"])
def test_httpx(toolstream_served_case):
    url = toolstream_served_case.base_url + "/chat/completions"
    with httpx.Client() as client:
        with client.stream("POST", url, json={"model": "m", "messages": [], "stream": True}) as response:
            body = chat_follow_up(list(response.iter_lines()))
        if body:
            client.post(url, json=body)


@pytest.mark.toolstream_matrix(dialects=["openai-chat"])
def test_urllib(toolstream_served_case):
    with toolstream_served_case.environ():
        base = urllib.parse.urlsplit(os.environ["OPENAI_BASE_URL"])

    def post(body):
        connection = http.client.HTTPConnection(base.hostname, base.port, timeout=10)
        headers = {"content-type": "application/json"}
        connection.request("POST", base.path + "/chat/completions", json.dumps(body), headers)
        return connection.getresponse().read().decode()  # a cut body raises IncompleteRead

    body = chat_follow_up(post({"model": "m", "messages": [], "stream": True}).splitlines())
    if body:
        post(body)
'''


def test_sdks_sync_and_async_httpx_and_urllib_are_judged_by_their_follow_up(project: pytest.Pytester) -> None:
    project.makepyfile(test_clients=CLIENTS)
    run = project.runpytest(*plugin_args(), *SELECT, "--toolstream-scenarios", "original", "-rA")
    run.assert_outcomes(passed=10)
    run.stdout.fnmatch_lines(
        [
            "test_clients.py::test_anthropic_sync: 2 cases: 2 pass",
            "test_clients.py::test_anthropic_async: 2 cases: 2 pass",
            "test_clients.py::test_httpx: 3 cases: 3 pass",
            "test_clients.py::test_urllib: 3 cases: 3 pass",
        ]
    )


MISBEHAVING = '''
import openai
import pytest

pytestmark = pytest.mark.toolstream_matrix(dialects=["openai-chat"], scenarios=["original"])


def read(case):
    client = openai.OpenAI(base_url=case.base_url, api_key="k", max_retries=0)
    for _ in client.chat.completions.create(model="m", messages=[], stream=True):
        pass


def test_reads_and_stops(toolstream_served_case):
    read(toolstream_served_case)


def test_raises_after_reading(toolstream_served_case):
    read(toolstream_served_case)
    raise ValueError("boom")


def test_never_asks(toolstream_served_case):
    pass


def test_fails_its_own_assertion(toolstream_served_case):
    assert toolstream_served_case.id == "another"


def test_skips(toolstream_served_case):
    pytest.skip("not today")
'''

SINGLE = "corpus/openai-chat/single-call::original::s0"
CUT = "corpus/openai-chat/cut-mid-arguments::original::s0"


def misbehaving(project: pytest.Pytester, test: str) -> pytest.RunResult:
    project.makepyfile(test_misbehaving=MISBEHAVING)
    return project.runpytest(*plugin_args(), *SELECT, "-k", f"({test}) and (single-call or cut-mid)")


def test_no_follow_up_where_one_is_due_fails_saying_so(project: pytest.Pytester) -> None:
    run = misbehaving(project, "test_reads_and_stops")
    run.assert_outcomes(passed=1, failed=1)  # the cut case: it raised on the cut and ran nothing
    run.stdout.fnmatch_lines(
        [
            f"FAIL {SINGLE} (test test_misbehaving.py::test_reads_and_stops) [lost, spec: *",
            "  no follow-up request: the test returned without sending the tool results back",
            "  lost      call 1: 'get_weather' * expected, missing",
        ]
    )


def test_a_raise_is_right_on_a_cut_case_and_fails_a_complete_one_with_its_traceback(
    project: pytest.Pytester,
) -> None:
    run = misbehaving(project, "test_raises_after_reading")
    run.assert_outcomes(passed=1, failed=1)
    run.stdout.fnmatch_lines(
        [
            '>       raise ValueError("boom")',
            "E       ValueError: boom",
            f"E       FAIL {SINGLE} (test test_misbehaving.py::test_raises_after_reading) [lost, spec: *",
            "E         lost      tool_calls: 1 expected, got 0",
            "E         lost      call 1: 'get_weather' * expected, missing",
            "E         lost      state: complete expected, got error (ValueError: boom)",
            "E       replay just this case:",
        ]
    )


def test_a_test_that_never_asks_for_its_case_is_an_error_verdict(project: pytest.Pytester) -> None:
    run = misbehaving(project, "test_never_asks")
    run.assert_outcomes(failed=2)
    run.stdout.fnmatch_lines([f"ERROR {CUT} (test *::test_never_asks) *", "  the test ended without*"])


def test_the_tests_own_failure_and_skip_stay_its_own(project: pytest.Pytester) -> None:
    run = misbehaving(project, "test_fails_its_own_assertion or test_skips")
    run.assert_outcomes(failed=2, skipped=2)
    lines = ["E       AssertionError: assert *", "E       ERROR *", "E         the test ended without *"]
    run.stdout.fnmatch_lines(lines)


def test_a_test_asking_for_both_case_fixtures_is_a_usage_error(project: pytest.Pytester) -> None:
    project.makepyfile("def test_both(toolstream_case, toolstream_served_case):\n    pass\n")
    run = project.runpytest(*plugin_args(), *SELECT)
    assert run.ret == pytest.ExitCode.USAGE_ERROR
    run.stderr.fnmatch_lines(["*test_both: asks for both toolstream_case and toolstream_served_case*"])


def test_the_docs_show_the_example_as_shipped() -> None:
    page = (ROOT / "docs" / "pytest.md").read_text(encoding="utf-8")
    section = page[page.index("\n## Test your own agent: `toolstream_served_case`\n") :]
    shown = section[section.index("```python\n") + len("```python\n") :]
    shown = shown[: shown.index("```")]
    assert shown.strip() in (EXAMPLE / "test_agent.py").read_text(encoding="utf-8")
