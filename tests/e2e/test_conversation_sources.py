"""A recorded conversation (turn 1 streams tool calls, turn 2 answers the results) as a matrix
source: `show`, `mutate`, `check --cassettes`, `serve` and `check --client` take it by path and
by the name its case ids use; its cases mutate the turn that streams tool calls; the replay
server answers the follow-up with the recorded next turn; bundled cassettes by their case-id
name (`openai-chat/parallel-2`) wherever `--cassettes` is taken."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import httpx
import pytest

from harness.cassettes.format import load
from harness.cli import main
from harness.matrix.selection import Matrix, Selection, cases
from harness.record.fake_provider import FakeProvider, Script
from harness.serve import ReplayServer
from harness.serve.routes import base_urls
from harness.transports.recording import RecordingTransport
from tests._pytester_support import plugin_args, prepare

pytest_plugins = ["pytester"]

SHARED_INDEX = "parallel-calls-share-index-0"
ANSWER = "Sunny in Paris, it is noon."
CALLS = [
    ("call_a", "get_weather", '{"city": "Paris"}'),
    ("call_b", "get_time", '{"tz": "CET"}'),
]


def _sse(payload: object) -> bytes:
    return b"data: " + json.dumps(payload).encode() + b"\n\n"


def _calls_turn(calls: list[tuple[str, str, str]]) -> list[bytes]:
    """A turn streaming `calls` (id, name, arguments), each at its own index, in two reads each."""
    out = []
    for index, (call_id, name, arguments) in enumerate(calls):
        start = {
            "index": index,
            "id": call_id,
            "type": "function",
            "function": {"name": name, "arguments": ""},
        }
        rest = {"index": index, "function": {"arguments": arguments}}
        out.append(_sse({"id": "c1", "choices": [{"index": 0, "delta": {"tool_calls": [start]}}]}))
        last = index == len(calls) - 1
        choice = {
            "index": 0,
            "delta": {"tool_calls": [rest]},
            "finish_reason": "tool_calls" if last else None,
        }
        out.append(_sse({"id": "c1", "choices": [choice]}))
    return [*out, b"data: [DONE]\n\n"]


ANSWER_TURN = [
    _sse({"id": "c2", "choices": [{"index": 0, "delta": {"role": "assistant", "content": ANSWER[:16]}}]}),
    _sse({"id": "c2", "choices": [{"index": 0, "delta": {"content": ANSWER[16:]}, "finish_reason": "stop"}]}),
    b"data: [DONE]\n\n",
]


def _followup(messages: list[dict], calls: list[tuple[str, str, str]]) -> list[dict]:
    turn = [{"id": i, "type": "function", "function": {"name": n, "arguments": a}} for i, n, a in calls]
    results = [{"role": "tool", "tool_call_id": i, "content": f"{n}: ok"} for i, n, _ in calls]
    return [*messages, {"role": "assistant", "content": None, "tool_calls": turn}, *results]


def record_conversation(
    path: Path, turns: list[list[bytes]], calls: list[list[tuple[str, str, str]]]
) -> Path:
    """Record a conversation through the real recording transport against a local provider:
    turn k streams `turns[k]`; each request after the first sends back the calls of the turn before."""
    with FakeProvider() as fake:
        for turn in turns:
            fake.route("POST", "/v1/chat/completions", Script.of(turn))
        transport = RecordingTransport(path=path, mode="rewrite", timing=False)
        with httpx.Client(transport=transport, base_url=fake.url + "/v1") as client:
            messages: list[dict] = [{"role": "user", "content": "weather and time in Paris?"}]
            for k in range(len(turns)):
                if k:
                    messages = _followup(messages, calls[k - 1])
                body = {"model": "m", "stream": True, "messages": messages}
                with client.stream("POST", "/chat/completions", json=body) as response:
                    response.read()
        transport.close()
    return path


@pytest.fixture(scope="module")
def conversation(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`tests/cassettes/test_agent/test_agent_answers.toolstream.yaml`: two calls, then the answer."""
    folder = tmp_path_factory.mktemp("project") / "tests" / "cassettes" / "test_agent"
    folder.mkdir(parents=True)
    path = folder / "test_agent_answers.toolstream.yaml"
    return record_conversation(path, [_calls_turn(CALLS), ANSWER_TURN], [CALLS])


@pytest.fixture
def project(conversation: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The project folder the conversation was recorded in, as the working directory."""
    root = conversation.parents[3]
    monkeypatch.chdir(root)
    return root


RECORDED = "tests/cassettes/test_agent/test_agent_answers.toolstream.yaml"


# ---------------------------------------------------------------------------------------------
# Sources and ids


def test_a_conversations_source_is_its_tool_call_turn_named_as_the_file(conversation: Path) -> None:
    matrix = Matrix(Selection(cassettes=(str(conversation),), scenarios=("original",)), store=None)
    [source] = matrix.sources(conversation)
    assert source.id == "test_agent/test_agent_answers.toolstream"  # no `#0`: one turn streams calls
    assert source.number == 0 and source.conversation is not None
    assert source.conversation.turn == 1 and len(source.conversation.after) == 1
    assert [c.name for c in source.expected.tool_calls] == ["get_weather", "get_time"]


def test_several_tool_call_turns_are_sources_numbered_as_show_and_replay_number_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    second = [("call_c", "get_news", '{"topic": "weather"}')]
    path = record_conversation(
        tmp_path / "convos" / "talk.yaml",
        [_calls_turn(CALLS), _calls_turn(second), ANSWER_TURN],
        [CALLS, second],
    )
    matrix = Matrix(Selection(cassettes=(str(path),), scenarios=("original",)), store=None)
    sources = matrix.sources(path)
    assert [s.id for s in sources] == [
        "convos/talk#1",
        "convos/talk#2",
    ]  # turns 1 and 2 of 3, from 1 as `show` says
    assert [s.expected.tool_calls[0].id for s in sources] == ["call_a", "call_c"]
    assert main(["show", str(path), "--no-events"]) == 0
    shown = capsys.readouterr().out
    assert "#1 POST" in shown and "#2 POST" in shown and "#0" not in shown
    # A case id names the turn `show` numbers the same: `#2` is the turn streaming call_c.
    case = matrix.case("convos/talk#2::original::s0")
    assert case.expected.tool_calls[0].id == "call_c"
    assert case.conversation is not None and case.conversation.turn == 2
    assert main(["mutate", str(path), "--scenario", "original", "-o", str(tmp_path / "x.yaml")]) == 2
    said = capsys.readouterr().err.strip()
    assert said.count("\n") == 0 and "2 turns stream tool calls (#1, #2)" in said
    assert main(["mutate", f"{path}#2", "--scenario", "original", "-o", str(tmp_path / "x.yaml")]) == 0
    assert main(["mutate", f"{path}#3", "--scenario", "original", "-o", str(tmp_path / "x.yaml")]) == 2
    said = capsys.readouterr().err.strip()
    assert "turn 3 is not one to mutate" in said and "#1, #2" in said
    with pytest.raises(
        Exception, match=r"no recorded stream 'talk'; that file's are convos/talk#1, convos/talk#2"
    ):
        matrix.case("talk::original::s0")


# ---------------------------------------------------------------------------------------------
# mutate, show, check --cassettes


def test_mutate_takes_the_conversation_by_path_and_writes_every_turn(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The friction: `no cassette 'test_agent_answers.toolstream' in the selection` (exit 2)."""
    code = main(["mutate", RECORDED, "--scenario", SHARED_INDEX, "--seed", "0", "-o", "x.yaml"])
    assert code == 0, capsys.readouterr().err
    assert (
        "test_agent/test_agent_answers.toolstream::parallel-calls-share-index-0::s0"
        in capsys.readouterr().out
    )
    written = load(project / "x.yaml")
    recorded = load(project / RECORDED)
    assert len(written.interactions) == 2  # the mutated turn, then the recorded answer
    first, second = written.interactions
    assert first.expected is not None and [c.id for c in first.expected.tool_calls] == ["call_a", "call_b"]
    assert first.response.body != recorded.interactions[0].response.body  # mutated
    assert second.response.body == recorded.interactions[1].response.body and second.expected is None
    assert "(turn #1 of 2)" in written.source.provenance
    # By the name its case ids use (the path without its suffix), and its own written file again.
    assert main(["mutate", RECORDED.removesuffix(".yaml"), "--scenario", "original", "-o", "y.yaml"]) == 0
    assert main(["mutate", "x.yaml", "--scenario", "original", "-o", "z.yaml"]) == 0
    assert len(load(project / "z.yaml").interactions) == 2


def test_show_and_check_take_the_conversation_by_path_and_by_name(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    name = RECORDED.removesuffix(".yaml")
    case_id = f"{name}::{SHARED_INDEX}::s0"
    assert main(["show", case_id, "--no-events"]) == 0
    shown = capsys.readouterr().out
    assert "#1 POST" in shown and "#2 POST" in shown and ANSWER[:16] in shown
    assert "test_agent_answers.toolstream (turn #1 of 2) mutated by scenario" in shown
    assert main(["show", name, "--no-events"]) == 0
    assert "test_agent_answers.toolstream" in capsys.readouterr().out
    for given in (RECORDED, name):
        code = main(
            ["check", "--accumulator", "reference", "--cassettes", given, "--scenarios", SHARED_INDEX]
        )
        out = capsys.readouterr().out
        assert code == 0, out
        assert "2 cases: 2 pass" in out
    printed = f"test_agent/test_agent_answers.toolstream::{SHARED_INDEX}::s0"  # as check names it
    code = main(
        [
            "check",
            "--accumulator",
            "reference",
            "--cassettes",
            "tests/cassettes/test_agent",
            "--case",
            printed,
        ]
    )
    assert code == 0 and "1 cases: 1 pass" in capsys.readouterr().out


def test_bundled_cassettes_go_by_their_case_id_name_wherever_cassettes_are_taken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The friction: `--cassettes openai-chat/parallel-2` was `no such cassette file or folder`."""
    monkeypatch.chdir(tmp_path)
    args = ["--cassettes", "openai-chat/parallel-2", "--scenarios", "original"]
    assert main(["check", "--accumulator", "reference", *args]) == 0
    assert "openai-chat/parallel-2::original::s0" not in capsys.readouterr().err
    assert main(["compare", "reference", "reference", *args]) == 0
    assert main(["mutate", "openai-chat/parallel-2", "--scenario", "original", "-o", "p.yaml"]) == 0
    assert main(["show", "openai-chat/parallel-2::original::s0", "--cassettes", "openai-chat"]) == 0
    capsys.readouterr()
    for hostile in ("../cassettes/openai-chat/parallel-2", "/etc/passwd-not-a-cassette", "openai-chat/nope"):
        assert main(["check", "--accumulator", "reference", "--cassettes", hostile]) == 2
        said = capsys.readouterr().err.strip()
        assert said.count("\n") == 0 and f"{hostile}: no such cassette file or folder" in said


# ---------------------------------------------------------------------------------------------
# The replay server and `check --client`


def test_the_server_answers_the_follow_up_with_the_recorded_next_turn(
    conversation: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLSTREAM_CACHE", str(tmp_path / "cache"))  # built, then read back from the store
    selection = Selection(cassettes=(str(conversation),), scenarios=(SHARED_INDEX,))
    built = list(cases(selection))
    stored = list(cases(selection))
    assert [c.conversation for c in stored] == [c.conversation for c in built]
    case = stored[0]
    recorded = load(conversation).interactions[1].response
    server = ReplayServer([case])
    with server.running():
        url = base_urls(server.url, case.id)["openai-chat"] + "/chat/completions"
        messages = [{"role": "user", "content": "weather and time in Paris?"}]
        first = httpx.post(url, json={"model": "m", "stream": True, "messages": messages})
        assert first.content == case.response.body  # the mutated stream
        # A correct program's follow-up, not the recorded one (another tool result text): answered anyway.
        followup = _followup(messages, CALLS)
        followup[-1]["content"] = "not what was recorded"
        answer = httpx.post(url, json={"model": "m", "stream": True, "messages": followup})
        assert answer.content == recorded.body  # the recorded next turn, read for read
        again = httpx.post(url, json={"model": "m", "stream": True, "messages": followup})
        assert again.content == recorded.body  # the same follow-up again (a retry): the same turn
        whole = httpx.post(url, json={"model": "m", "messages": followup}).json()  # not streamed
        assert whole["choices"][0]["message"]["content"] == "Done."  # past the recording
        described = httpx.get(base_urls(server.url, case.id)["anthropic"] + "/").json()
    assert described["conversation"] == {"turn": 1, "recorded_turns_after": 1}
    assert described["verdict"]["verdict"] == "pass"  # the follow-up judged: both calls ran


def test_a_non_streamed_follow_up_gets_the_recorded_turns_outcome_whole(conversation: Path) -> None:
    [case] = cases(Selection(cassettes=(str(conversation),), scenarios=("original",)))
    server = ReplayServer([case])
    with server.running():
        url = base_urls(server.url, case.id)["openai-chat"] + "/chat/completions"
        followup = _followup([{"role": "user", "content": "weather?"}], CALLS)
        whole = httpx.post(url, json={"model": "m", "messages": followup}).json()
    assert whole["choices"][0]["message"]["content"] == ANSWER


# An agent loop on the standard library: stream, gather the calls, send the results back, write
# what the model answered to $AGENT_LOG. KEY picks how fragments become calls: by `index` alone
# (merges calls sharing an index) or by id, a fragment without one going to the last call begun.
AGENT = """
import http.client, json, os, sys, urllib.parse

BASE = urllib.parse.urlsplit(os.environ["OPENAI_BASE_URL"])
BY_ID = KEY == "id"


def chat(messages):
    connection = http.client.HTTPConnection(BASE.hostname, BASE.port, timeout=20)
    body = {"model": "m", "messages": messages, "stream": True}
    headers = {"content-type": "application/json"}
    connection.request("POST", BASE.path + "/chat/completions", json.dumps(body), headers)
    return connection.getresponse()


messages = [{"role": "user", "content": "weather and time in Paris?"}]
text = ""
for _ in range(3):
    calls, last, text = {}, None, ""
    for line in chat(messages):
        line = line.strip()
        if not line.startswith(b"data:") or line == b"data: [DONE]":
            continue
        for choice in json.loads(line[5:]).get("choices") or []:
            delta = choice.get("delta") or {}
            text += delta.get("content") or ""
            for part in delta.get("tool_calls") or []:
                key = (part.get("id") or last) if BY_ID else part.get("index", 0)
                call = calls.setdefault(key, {"id": None, "name": "", "arguments": ""})
                last = key
                call["id"] = call["id"] or part.get("id")
                call["name"] += (part.get("function") or {}).get("name") or ""
                call["arguments"] += (part.get("function") or {}).get("arguments") or ""
    if not calls:
        break
    turn = [{"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
            for c in calls.values()]
    messages.append({"role": "assistant", "content": None, "tool_calls": turn})
    messages += [{"role": "tool", "tool_call_id": c["id"], "content": "ok"} for c in calls.values()]
with open(os.environ["AGENT_LOG"], "a") as log:
    log.write(json.dumps([os.environ["TOOLSTREAM_CASE"], text]) + "\\n")
"""


def _agent(folder: Path, key: str) -> str:
    script = folder / f"agent_by_{key}.py"
    script.write_text(f"KEY = {key!r}\n" + AGENT)
    return f"{sys.executable} {script}"


@pytest.mark.slow
def test_check_client_judges_agents_over_the_conversation(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "answers.jsonl"
    monkeypatch.setenv("AGENT_LOG", str(log))
    name = RECORDED.removesuffix(".yaml")
    args = ["--cassettes", name, "--scenarios", "original", SHARED_INDEX, "--timeout", "20", "-j", "2"]
    correct = main(["check", "--client", _agent(tmp_path, "id"), "--json", str(tmp_path / "ok.json"), *args])
    assert correct == 0, capsys.readouterr().out
    answered = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(answered) == 3 and {text for _, text in answered} == {ANSWER}  # the recorded next turn
    log.unlink()
    wrong = main(["check", "--client", _agent(tmp_path, "index"), "--json", str(tmp_path / "no.json"), *args])
    assert wrong == 1
    report = {c["id"]: c for c in json.loads((tmp_path / "no.json").read_text())["cases"]}
    original = "test_agent/test_agent_answers.toolstream::original::s0"
    assert report[original]["verdict"] == "pass"
    merged = report[f"test_agent/test_agent_answers.toolstream::{SHARED_INDEX}::s0"]
    assert merged["verdict"] == "fail" and merged["diff"]  # judged by its follow-up: the calls merged
    # `serve --client` over the file by path: the same server, the same follow-up answering.
    capsys.readouterr()
    log.unlink()
    served = main(
        ["serve", "--cassettes", RECORDED, "--scenarios", "original", "--client", _agent(tmp_path, "id")]
    )
    assert served == 0, capsys.readouterr().out
    assert [text for _, text in map(json.loads, log.read_text().splitlines())] == [ANSWER]


# ---------------------------------------------------------------------------------------------
# The `toolstream` fixture records it; a mutated conversation replays in it


AGENT_TEST = """
import json
import os

import httpx
import pytest

from harness.record.fake_provider import FakeProvider, Script

TURNS = json.loads(os.environ["TURNS"])


@pytest.fixture
def base_url():
    with FakeProvider() as fake:
        for turn in TURNS:
            fake.route("POST", "/v1/chat/completions", Script.of([c.encode() for c in turn]))
        yield fake.url


def ask(client, messages):
    calls, last, text = {}, None, ""
    body = {"model": "m", "stream": True, "messages": messages}
    with client.stream("POST", "/v1/chat/completions", json=body) as response:
        for line in response.iter_lines():
            if not line.startswith("data:") or line == "data: [DONE]":
                continue
            for choice in json.loads(line[5:])["choices"]:
                delta = choice.get("delta") or {}
                text += delta.get("content") or ""
                for part in delta.get("tool_calls") or []:
                    key = last = part.get("id") or last
                    call = calls.setdefault(key, {"id": key, "name": "", "arguments": ""})
                    call["name"] += part.get("function", {}).get("name") or ""
                    call["arguments"] += part.get("function", {}).get("arguments") or ""
    return list(calls.values()), text


def test_agent_answers(toolstream, base_url):
    client = toolstream.httpx_client(base_url=base_url)
    messages = [{"role": "user", "content": "weather and time in Paris?"}]
    calls, _ = ask(client, messages)
    turn = [{"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
            for c in calls]
    messages += [{"role": "assistant", "content": None, "tool_calls": turn}]
    messages += [{"role": "tool", "tool_call_id": c["id"], "content": c["name"] + ": ok"} for c in calls]
    _, text = ask(client, messages)
    assert text == os.environ["ANSWER"]
"""


@pytest.mark.slow
def test_the_fixtures_recording_mutates_and_the_mutated_conversation_replays(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The user's path: record with the fixture, `toolstream mutate` the cassette, replay the mutated
    conversation in the fixture: the fixed agent's follow-up meets the recorded next turn (it met a
    `NoMatchError` when only the first turn was written)."""
    prepare(pytester, monkeypatch)
    turns = [[c.decode() for c in _calls_turn(CALLS)], [c.decode() for c in ANSWER_TURN]]
    monkeypatch.setenv("TURNS", json.dumps(turns))
    monkeypatch.setenv("ANSWER", ANSWER)
    # A plain folder, not a package: a package named `tests` could meet another of that name
    # already imported in this process (the run is in-process).
    folder = pytester.mkdir("tests")
    (folder / "test_agent.py").write_text(AGENT_TEST)
    pytester.runpytest(*plugin_args(), "tests", "--toolstream-record-mode", "once").assert_outcomes(passed=1)
    recorded = pytester.path / "tests" / "cassettes" / "test_agent" / "test_agent_answers.toolstream.yaml"
    assert len(load(recorded).interactions) == 2
    kept = pytester.path / "recorded.yaml"
    shutil.copy(recorded, kept)
    monkeypatch.chdir(pytester.path)
    code = main(["mutate", str(recorded), "--scenario", SHARED_INDEX, "--seed", "0", "-o", str(recorded)])
    assert code == 0, capsys.readouterr().err
    assert load(recorded).interactions[0].response.body != load(kept).interactions[0].response.body
    monkeypatch.setenv("TURNS", "[]")  # nothing to forward to: every request is replayed
    replayed = pytester.runpytest(*plugin_args(), "tests")
    replayed.assert_outcomes(passed=1)
