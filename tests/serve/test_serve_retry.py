"""Retry and reconnection cases over real sockets: the first attempt of a request is cut, the
retried request gets the whole stream; the follow-up shows whether every call ran exactly once
and nothing from the cut attempt ran."""

from __future__ import annotations

import http.client
import json
import sys
import textwrap
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.accumulators.program import run_clients
from harness.cassettes.outcome import State
from harness.cli import main
from harness.matrix.selection import Selection
from harness.matrix.selection import cases as selected_cases
from harness.mutate.scenario import Case
from harness.oracle.severity import Severity
from harness.oracle.verdict import Verdict
from harness.serve import ReplayServer, base_urls
from harness.serve.attempts import PLANS, first_attempt

ROOT = Path(__file__).resolve().parents[2]
RETRIES = RETRIES_DIR = ROOT / "scenarios" / "retry"
AFTER_FINISH = "openai-chat/parallel-2::retry-cut-after-finish::s0"
NEW_IDS = "openai-chat/parallel-2::retry-cut-after-finish-new-ids::s0"
MID_CALL = "openai-chat/parallel-2::retry-cut-mid-call::s0"
FINISHED_CALL = "anthropic/parallel-calls::retry-cut-after-finished-call::s0"
BODY = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}], "stream": True}


@pytest.fixture(scope="module")
def retry_cases() -> dict[str, Case]:
    return {case.id: case for case in selected_cases(Selection(scenarios_dir=str(RETRIES)))}


@pytest.fixture
def server(retry_cases: dict[str, Case]) -> Iterator[ReplayServer]:
    with ReplayServer(retry_cases.values()).running() as running:
        yield running


def raw_stream(url: str, body: dict[str, Any]) -> tuple[bytes, bool]:
    """POST and read the streamed body; whether it ended with the terminating chunk."""
    parts = urllib.parse.urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    connection.request("POST", parts.path, json.dumps(body), {"content-type": "application/json"})
    response = connection.getresponse()
    try:
        return response.read(), True
    except http.client.IncompleteRead as exc:
        return exc.partial, False
    finally:
        connection.close()


def test_every_retry_scenario_has_a_plan_and_cuts_its_first_attempt(retry_cases: dict[str, Case]) -> None:
    scenarios = {case.scenario for case in retry_cases.values()} - {"original"}
    assert scenarios == set(PLANS)
    checked, skipped = 0, []
    for case in retry_cases.values():
        first = first_attempt(case)
        if case.scenario == "original":
            assert first is None
            continue
        whole = {call.id for call in case.expected.tool_calls}
        if case.expected.state is not State.COMPLETE or not whole:
            assert first is None  # served as it is: nothing to run twice
            continue
        if first is None:
            assert PLANS[case.scenario].where != "mid-call", case.id  # a cut mid-call is always possible
            skipped.append(case.id)
            continue
        checked += 1
        plan = PLANS[case.scenario]
        if plan.fault is not None:  # a fault before any byte: one whole error body, nothing ran
            assert first.fault and first.expected.state is State.ERROR and not first.expected.tool_calls
            assert first.response.status == {"429": 429, "503": 503, "error-body": 200}[plan.fault]
            # The provider's own error body (Bedrock and Cohere: `{"message": ...}`).
            assert isinstance(json.loads(first.response.body), dict)
            assert first.response.content_type == "application/json"
            continue
        assert first.expected.state is State.CUT and not first.response.complete
        ran = {call.id for call in first.expected.tool_calls}
        if plan.where == "mid-call":
            assert not ran
        elif plan.where == "after-finished-call":
            assert ran and ran < whole
        elif plan.new_ids:
            assert len(ran) == len(whole) and not ran & whole  # the same calls under other ids
        else:
            assert ran == whole
    # Where no call ends before the finish (openai-chat, one call), no cut falls after a finished call.
    assert checked >= 80 and len(skipped) < checked / 4


def test_a_retry_case_is_classed_by_the_retry_rule_and_what_the_retried_attempt_gets(
    retry_cases: dict[str, Case],
) -> None:
    from dataclasses import replace

    from harness.mutate import registry
    from harness.mutate.scenario import Scenario
    from harness.oracle.expectation import RETRIES, CaseClass, classify

    assert set(RETRIES) == set(PLANS) == {path.stem for path in RETRIES_DIR.glob("*.yaml")}
    # Found by name alone (the bundled retry folder), with the retry rule's reason.
    for name in PLANS:
        case = retry_cases.get(f"openai-chat/parallel-2::{name}::s0") or retry_cases[FINISHED_CALL]
        found = classify(case)
        # A 200 whose body is an error object is a gateway's deviation (litellm-rs#170): quirk.
        want = CaseClass.QUIRK if name == "retry-200-error-body" else CaseClass.SPEC
        assert found.case_class is want and found.reason.startswith("a retry:"), case.id
    # A first attempt cut after the finish is still spec: the program gave that attempt up itself
    # (a plain cut there, without a retry, is policy).
    after = classify(retry_cases[AFTER_FINISH])
    assert after.case_class is CaseClass.SPEC and "after the finish, same ids" in after.reason
    # The retried attempt decides the rest: the recorded stream is spec, a recording that imitates
    # a real deviation (A1) quirk, and so is a retried stream mutated into one.
    recorded = Scenario("retry-cut-mid-call", "", ())
    # A copy (`replace` drops the class a case read back from the session's case store carries;
    # built or read back depends on what ran before in this worker): that class would answer for
    # these stand-in scenarios of the same name.
    case = replace(retry_cases[MID_CALL])
    assert classify(case, recorded).case_class is CaseClass.SPEC
    quirky = Scenario("retry-cut-mid-call", "", (registry()["set-field"](),))
    assert classify(case, quirky).case_class is CaseClass.QUIRK
    gateway = retry_cases["openai-chat/litellm-bridge-parallel-index0::retry-cut-mid-call::s0"]
    assert classify(gateway).case_class is CaseClass.QUIRK
    # Not a retry: the same empty scenario under another name is the plain recorded stream.
    assert (
        classify(replace(case, scenario="plain"), Scenario("plain", "", ())).reason == "the recorded stream"
    )


def test_the_first_attempt_is_cut_and_the_same_request_again_gets_the_whole_stream(
    server: ReplayServer, retry_cases: dict[str, Case]
) -> None:
    url = base_urls(server.url, AFTER_FINISH)["openai-chat"] + "/chat/completions"
    first, ended = raw_stream(url, BODY)
    assert not ended and b"finish_reason" in first and b"[DONE]" not in first
    second, ended = raw_stream(url, BODY)
    assert ended and second == retry_cases[AFTER_FINISH].response.body
    # Another request (another body) to the same case is a first attempt of its own.
    third, ended = raw_stream(url, {**BODY, "temperature": 0})
    assert not ended and third == first
    received = server.describe(AFTER_FINISH)["received"]
    assert received["requests"] == 3 and received["retried"] == 1


def test_a_case_added_to_a_running_server_cuts_its_first_attempt_too(retry_cases: dict[str, Case]) -> None:
    """Cases added one by one (`add`: `client:CMD` under the matrix runner, the pytest plugin's
    served cases) get their retry cut as cases given at the start do."""
    with ReplayServer([]).running() as running:
        running.add(retry_cases[AFTER_FINISH])
        url = base_urls(running.url, AFTER_FINISH)["openai-chat"] + "/chat/completions"
        assert raw_stream(url, BODY)[1] is False
        assert raw_stream(url, BODY) == (retry_cases[AFTER_FINISH].response.body, True)


def test_openai_sdk_does_not_retry_a_stream_cut_mid_body(server: ReplayServer) -> None:
    """openai-python's retry loop (`max_retries`, default 2) wraps sending the request and reading
    the status and headers; a streamed body is read after it, so a cut mid-body reaches the caller
    as `APIConnectionError` and nothing is retried."""
    openai = pytest.importorskip("openai")
    client = openai.OpenAI(base_url=base_urls(server.url, MID_CALL)["openai-chat"], api_key="sk-x")
    assert client.max_retries == 2
    with pytest.raises(openai.APIConnectionError):
        for _ in client.chat.completions.create(
            model="gpt-4o", messages=[{"role": "user", "content": "hi"}], stream=True
        ):
            pass
    assert server.log(MID_CALL).attempts == 1


def test_openai_sdk_retries_a_whole_body_cut_and_gets_the_whole_answer(
    server: ReplayServer, retry_cases: dict[str, Case]
) -> None:
    """Without streaming the SDK reads the body inside its retry loop: a cut body is a transport
    error, retried with the same request, and the caller sees only the whole second answer."""
    openai = pytest.importorskip("openai")
    client = openai.OpenAI(base_url=base_urls(server.url, NEW_IDS)["openai-chat"], api_key="sk-x")
    completion = client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
    ids = {call.id for call in completion.choices[0].message.tool_calls}
    assert ids == {call.id for call in retry_cases[NEW_IDS].expected.tool_calls}
    assert server.log(NEW_IDS).attempts == 2


# A stdlib agent loop that retries by itself when the stream is cut (no `[DONE]`). `eager` runs
# each call as soon as the finish reason arrives and keeps what it ran across attempts; `careful`
# runs calls only once a response is whole and forgets a cut attempt.
LOOP = textwrap.dedent(
    """
    import http.client, json, os, sys, urllib.parse

    eager = sys.argv[1] == "eager"
    base = urllib.parse.urlsplit(os.environ["OPENAI_BASE_URL"])

    def chat(body):
        connection = http.client.HTTPConnection(base.hostname, base.port, timeout=10)
        key = os.environ["OPENAI_API_KEY"]
        headers = {"content-type": "application/json", "authorization": "Bearer " + key}
        connection.request("POST", base.path + "/chat/completions", json.dumps(body), headers)
        return connection.getresponse()

    def run(calls):
        return [{"role": "tool", "tool_call_id": c["id"], "content": "ok"} for c in calls.values()]

    messages = [{"role": "user", "content": "hi"}]
    results = []
    for attempt in range(3):
        calls, done, finished, reasoning = {}, False, False, {}
        try:
            for line in chat({"model": "m", "messages": messages, "stream": True}):
                line = line.strip()
                if line == b"data: [DONE]":
                    done = True
                    break
                if not line.startswith(b"data:"):
                    continue
                for choice in json.loads(line[5:]).get("choices") or []:
                    delta = choice.get("delta") or {}
                    for key in ("reasoning_content", "reasoning"):
                        if isinstance(delta.get(key), str):
                            reasoning[key] = reasoning.get(key, "") + delta[key]
                    for part in delta.get("tool_calls") or []:
                        call = calls.setdefault(part.get("index"), {"id": None, "name": "", "arguments": ""})
                        call["id"] = call["id"] or part.get("id")
                        if part.get("extra_content") and "extra_content" not in call:
                            call["extra_content"] = part["extra_content"]
                        call["name"] += (part.get("function") or {}).get("name") or ""
                        call["arguments"] += (part.get("function") or {}).get("arguments") or ""
                    if choice.get("finish_reason") and eager:
                        results += run(calls)
                        finished = True
        except (OSError, http.client.HTTPException):
            pass
        if done:
            break
    if not done or not calls:
        sys.exit(0)
    if not eager:
        results = run(calls)
    elif not finished:
        results += run(calls)
    # What goes back besides the calls (docs/oracle.md, State that goes back): each call's
    # `extra_content` (a Gemini-compatible thought signature) and the turn's reasoning.
    turn = [{"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]},
             **({"extra_content": c["extra_content"]} if "extra_content" in c else {})}
            for c in calls.values()]
    messages += [{"role": "assistant", "content": None, "tool_calls": turn, **reasoning}, *results]
    chat({"model": "m", "messages": messages, "stream": True}).read()
    """
)


@pytest.fixture(scope="module")
def loop(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("loop") / "loop.py"
    path.write_text(LOOP)
    return path


@pytest.fixture(scope="module")
def openai_retry_cases(retry_cases: dict[str, Case]) -> list[Case]:
    return [
        case
        for case in retry_cases.values()
        if case.dialect == "openai-chat" and case.scenario != "original" and first_attempt(case) is not None
    ]


@pytest.mark.slow
def test_a_loop_that_runs_calls_before_the_stream_ends_and_retries_runs_them_twice(
    loop: Path, openai_retry_cases: list[Case]
) -> None:
    report = run_clients(openai_retry_cases, [sys.executable, str(loop), "eager"], jobs=2, timeout=20)
    by_id = {r.id: r for r in report.results}
    assert by_id[MID_CALL].verdict is Verdict.PASS  # nothing was final in the cut attempt
    same = by_id[AFTER_FINISH]
    assert same.verdict is Verdict.FAIL
    # Each tool result is a run: the two calls answered twice are two unsafe extra calls.
    calls = retry_cases_calls(openai_retry_cases, AFTER_FINISH)
    assert same.diff[0] == f"tool_calls: {len(calls)} expected, got {2 * len(calls)}"
    assert [line.split(" ", 3)[3].split(" ")[0] for line in same.diff[1:]] == [repr(c.name) for c in calls]
    assert set(same.severities) == {Severity.UNSAFE}
    other = by_id[NEW_IDS]
    assert other.verdict is Verdict.FAIL
    # The cut attempt's calls ran under ids the retried stream never gave: unknown unsafe calls.
    new_ids = retry_cases_calls(openai_retry_cases, NEW_IDS)
    assert other.diff[0] == f"tool_calls: {len(new_ids)} expected, got {2 * len(new_ids)}"
    assert len(other.diff) == 1 + len(new_ids)
    assert all("unexpected '<unknown>'" in line for line in other.diff[1:])
    assert set(other.severities) == {Severity.UNSAFE}


def retry_cases_calls(cases: list[Case], case_id: str) -> list[Any]:
    return [c for case in cases if case.id == case_id for c in case.expected.tool_calls]


@pytest.mark.slow
def test_a_loop_that_runs_calls_only_from_a_whole_response_passes_every_retry_case(
    loop: Path, openai_retry_cases: list[Case]
) -> None:
    report = run_clients(openai_retry_cases, [sys.executable, str(loop), "careful"], jobs=2, timeout=20)
    failed = {r.id: (r.verdict, r.diff, r.error) for r in report.results if r.verdict is not Verdict.PASS}
    # Only the recording whose two calls share index 0 (A1): this loop keys calls by index, as the
    # same loop fails the `original` case in tests/serve/test_serve.py; and the custom tool call, which
    # it reads as a function call (it knows no `custom` entries). Nothing of it is about retries.
    assert {case_id.split("::")[0] for case_id in failed} <= {
        "openai-chat/litellm-bridge-parallel-index0",
        "openai-chat/custom-tool",
    }
    assert len(report.results) == len(openai_retry_cases) >= 30


def test_a_case_page_shows_the_cut_first_attempt(server: ReplayServer, retry_cases: dict[str, Case]) -> None:
    page = server.describe(FINISHED_CALL)
    first = page["first_attempt"]
    assert first["cut"] and first["expected"]["state"] == "cut"
    assert 0 < len(first["expected"]["tool_calls"]) < len(retry_cases[FINISHED_CALL].expected.tool_calls)


def test_serve_selects_retry_cases_like_any_and_judges_a_program_by_them(
    loop: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "report.json"
    argv = ["serve", "--scenarios-dir", str(RETRIES), "--case", AFTER_FINISH, "--case", MID_CALL]
    argv += ["--timeout", "20", "--json", str(out), "--client"]
    assert main([*argv, f"{sys.executable} {loop} careful"]) == 0
    assert main([*argv, f"{sys.executable} {loop} eager"]) == 1
    report = json.loads(out.read_text())
    text = json.dumps(report)
    assert AFTER_FINISH in text and "unexpected" in text and '"unsafe"' in text
    capsys.readouterr()


# -- HTTP faults before the stream, then the retry ----------------------------------------------

RATE_LIMITED = "openai-chat/parallel-2::retry-429-before-stream::s0"
OVERLOADED = "anthropic/parallel-calls::retry-503-before-stream::s0"
ERROR_BODY = "openai-chat/parallel-2::retry-200-error-body::s0"


def test_a_fault_before_the_stream_is_one_error_body_then_the_whole_stream(
    server: ReplayServer, retry_cases: dict[str, Case]
) -> None:
    for case_id, status in ((RATE_LIMITED, 429), (ERROR_BODY, 200)):
        url = base_urls(server.url, case_id)["openai-chat"] + "/chat/completions"
        parts = urllib.parse.urlsplit(url)
        connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
        connection.request("POST", parts.path, json.dumps(BODY), {"content-type": "application/json"})
        response = connection.getresponse()
        body = json.loads(response.read())
        connection.close()
        assert response.status == status and body["error"]["message"]
        assert (response.getheader("retry-after"), response.getheader("retry-after-ms")) == (
            ("1", "20") if status == 429 else (None, None)
        )
        assert raw_stream(url, BODY) == (retry_cases[case_id].response.body, True)
        assert server.describe(case_id)["first_attempt"]["status"] == status


def test_openai_sdk_retries_a_429_by_itself_and_streams_each_call_once(
    server: ReplayServer, retry_cases: dict[str, Case]
) -> None:
    openai = pytest.importorskip("openai")
    client = openai.OpenAI(base_url=base_urls(server.url, RATE_LIMITED)["openai-chat"], api_key="sk-x")
    ids = [
        call.id
        for chunk in client.chat.completions.create(
            model="gpt-4o", messages=[{"role": "user", "content": "hi"}], stream=True
        )
        for call in (chunk.choices[0].delta.tool_calls or [] if chunk.choices else [])
        if call.id
    ]
    assert ids == [call.id for call in retry_cases[RATE_LIMITED].expected.tool_calls]
    assert server.log(RATE_LIMITED).attempts == 2


def test_anthropic_sdk_retries_a_503_by_itself(server: ReplayServer, retry_cases: dict[str, Case]) -> None:
    anthropic = pytest.importorskip("anthropic")
    client = anthropic.Anthropic(base_url=base_urls(server.url, OVERLOADED)["anthropic"], api_key="sk-x")
    with client.messages.stream(model="m", max_tokens=10, messages=[{"role": "user", "content": "hi"}]) as s:
        message = s.get_final_message()
    ids = [block.id for block in message.content if block.type == "tool_use"]
    assert ids == [call.id for call in retry_cases[OVERLOADED].expected.tool_calls]
    assert server.log(OVERLOADED).attempts == 2


def test_the_replay_transport_serves_the_fault_then_the_stream(retry_cases: dict[str, Case]) -> None:
    """The same first attempt through `replay_transport`: an SDK that retries gets the stream on
    its second request; one that does not retry sees the fault."""
    openai = pytest.importorskip("openai")
    httpx = pytest.importorskip("httpx")
    from harness.accumulators.client import replay_transport

    case = retry_cases[RATE_LIMITED]

    def client(retries: int) -> Any:
        http = httpx.Client(transport=replay_transport(case))
        return openai.OpenAI(
            base_url="https://api.openai.com/v1", api_key="sk-x", http_client=http, max_retries=retries
        )

    request = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}], "stream": True}
    chunks = list(client(2).chat.completions.create(**request))
    ids = [c.id for chunk in chunks if chunk.choices for c in chunk.choices[0].delta.tool_calls or [] if c.id]
    assert ids == [call.id for call in case.expected.tool_calls]
    with pytest.raises(openai.RateLimitError):
        client(0).chat.completions.create(**request)
    # A case without a fault plan is served as before: one interaction, the stream.
    plain = retry_cases["openai-chat/parallel-2::original::s0"]
    assert len(replay_transport(plain).unused()) == 1
