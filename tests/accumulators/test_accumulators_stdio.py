"""The stdio protocol: containment of broken processes, `serve-accumulator` round trips, the Node example."""

from __future__ import annotations

import io
import json
import re
import shlex
import shutil
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from harness.accumulators import EventAccumulator, resolve
from harness.accumulators.stdio import answer_outcome, case_messages
from harness.accumulators.stdio_process import Stdio
from harness.accumulators.stdio_serve import serve
from harness.cassettes import format as cassette
from harness.cassettes.outcome import Outcome, State, ToolCall, diff
from harness.cli import main
from harness.errors import (
    AccumulatorCrashed,
    AccumulatorProtocolError,
    AccumulatorTimeout,
    NotApplicable,
    UsageError,
)
from harness.mutate.scenario import Case, with_parts
from harness.wire import dialects
from harness.wire.dialects import Event

ROOT = Path(__file__).resolve().parents[2]
CASSETTES = ROOT / "cassettes"


def recorded_case(path: Path, case_id: str | None = None) -> Case:
    """An unmutated case of a corpus cassette's first interaction."""
    loaded = cassette.load(path)
    item = loaded.interactions[0]
    dialect = loaded.dialect or dialects.detect(item.request)
    assert dialect is not None
    # A stored expectation gets the reference's parts, as the matrix gives it (`with_parts`).
    expected = with_parts(item.expected, item.response, dialects.get(dialect))
    events = tuple(dialects.events_of(item.response, dialect))
    return Case(
        case_id or path.stem,
        dialect,
        item.response,
        events,
        expected,
        path.stem,
        "none",
        0,
        request=item.request,
    )


# A protocol speaker that misbehaves on cases whose id starts with "bad" (how: argv[1]).
SPEAKER = """
import json, sys, time
how = sys.argv[1]
case = None
for line in sys.stdin:
    message = json.loads(line)
    if message["op"] == "start":
        case = message["case"]
        if how == "exit" and case.startswith("bad"):
            print("boom: cannot go on", file=sys.stderr, flush=True)
            sys.exit(3)
    elif message["op"] == "end":
        if case.startswith("bad") and how == "garbage":
            print("this is not json", flush=True)
            continue
        if case.startswith("bad") and how == "deep":
            print("[" * 5000 + "]" * 5000, flush=True)
            continue
        if case.startswith("bad") and how == "hang":
            time.sleep(600)
        answer = {"tool_calls": [{"id": "c", "name": "f", "arguments": "{}"}], "text": case}
        print(json.dumps(answer), flush=True)
"""


def speaker(how: str) -> str:
    return shlex.join([sys.executable, "-c", SPEAKER, how])


@pytest.fixture
def case() -> Case:
    return recorded_case(CASSETTES / "openai-chat" / "single-call.yaml", "good-1")


def test_garbage_fails_its_case_and_the_next_case_gets_a_new_process(case: Case) -> None:
    with Stdio(speaker("garbage"), "events") as acc:
        assert acc.run(case).text == "good-1"
        with pytest.raises(AccumulatorProtocolError, match="not JSON: 'this is not json'"):
            acc.run(replace(case, id="bad-1"))
        assert acc.run(replace(case, id="good-2")).text == "good-2"
        assert acc.started == 2


def test_an_answer_nested_too_deep_fails_its_case_as_not_json(case: Case) -> None:
    # Parsed unguarded, it was a RecursionError: the harness's own crash, not the accumulator's.
    with Stdio(speaker("deep"), "events") as acc:
        with pytest.raises(AccumulatorProtocolError, match="not JSON"):
            acc.run(replace(case, id="bad-1"))
        assert acc.run(replace(case, id="good-2")).text == "good-2"


def test_a_process_dying_mid_case_fails_only_that_case(case: Case) -> None:
    with Stdio(speaker("exit"), "events") as acc:
        with pytest.raises(AccumulatorCrashed, match=r"exited with status 3.*boom: cannot go on"):
            acc.run(replace(case, id="bad-1"))
        assert acc.run(case).tool_calls == (ToolCall("f", {}, "c"),)
        assert acc.started == 2


def test_a_hang_times_out_kills_the_process_and_the_next_case_works(case: Case) -> None:
    acc = Stdio(speaker("hang"), "events", timeout=30)
    try:
        acc.run(case)
        hung = acc._child
        assert hung is not None
        started = time.monotonic()
        with pytest.raises(AccumulatorTimeout, match=r"no answer within 0\.5 s"):
            acc.run(replace(case, id="bad-1"), timeout=0.5)
        assert time.monotonic() - started < 10
        assert hung.proc.poll() is not None  # killed
        acc.timeout = 0.5
        with pytest.raises(AccumulatorTimeout):
            acc.run(replace(case, id="bad-2"))
        assert acc.run(replace(case, id="good-2")).text == "good-2"
        assert acc.started == 3
    finally:
        acc.shutdown()


def test_a_process_that_cannot_start_fails_every_case_without_starting_one_per_case(
    case: Case, tmp_path: Path
) -> None:
    # A bad import: each process exits before it reads a line. Two tries at the warm-up, then
    # every case fails at once with the process's own words (not one process per case: the
    # whole bundled matrix took 4.6 minutes that way).
    broken = tmp_path / "broken.py"
    broken.write_text("import no_such_module_here\n")
    with Stdio(shlex.join([sys.executable, str(broken)]), "events") as acc:
        acc.prepare()
        assert acc.started == 2
        for case_id in ("good-1", "good-2"):
            with pytest.raises(AccumulatorCrashed) as raised:
                acc.run(replace(case, id=case_id))
            said = str(raised.value)
            assert f"case {case_id}: not run: 2 processes in a row exited before answering" in said
            assert "status 1" in said and "No module named 'no_such_module_here'" in said
        assert acc.started == 2


def test_a_process_that_fails_its_first_start_only_is_started_again(case: Case, tmp_path: Path) -> None:
    marker = tmp_path / "started-once"
    flaky = tmp_path / "flaky.py"
    flaky.write_text(
        "import pathlib, sys\n"
        f"marker = pathlib.Path({str(marker)!r})\n"
        "if not marker.exists():\n"
        "    marker.touch()\n"
        "    sys.exit(4)\n"
        "sys.argv = ['speaker', 'echo']\n"
        f"exec({SPEAKER!r})\n"
    )
    with Stdio(shlex.join([sys.executable, str(flaky)]), "events") as acc:
        acc.prepare()
        assert acc.started == 2
        assert acc.run(case).text == "good-1"


def test_a_command_that_cannot_start_is_a_crash(case: Case) -> None:
    with pytest.raises(AccumulatorCrashed, match="cannot start"):
        Stdio("/nonexistent/accumulator --x", "events").run(case)


def test_messages_of_a_case(case: Case) -> None:
    events = list(case_messages(case, "events"))
    assert events[0]["op"] == "start" and events[0]["feed"] == "events" and events[0]["request"]["url"]
    assert [m["op"] for m in events[1:-1]] == ["event"] * len(case.events)
    assert events[-2]["data"] == "[DONE]" and events[-1] == {"op": "end", "error": None}
    reads = list(
        case_messages(replace(case, response=replace(case.response, complete=False, error="cut!")), "bytes")
    )
    assert len(reads) == len(case.response.chunks) + 2 and reads[-1]["error"] == "cut!"


def test_answers_parse_like_the_protocol_says() -> None:
    outcome = answer_outcome(
        {
            "tool_calls": [
                {"id": "a", "name": "f", "arguments": '{"x": 1}'},
                {"name": "g", "arguments": '{"x"'},
                {"name": "h", "arguments": {"y": 2}},
                {"name": "i", "arguments": "[1]", "invalid": True},
            ],
            "error": "reset",
        },
        cut=True,
    )
    assert outcome.tool_calls == (
        ToolCall("f", {"x": 1}, "a"),
        ToolCall("g", '{"x"', invalid=True),
        ToolCall("h", {"y": 2}),
        ToolCall("i", "[1]", invalid=True),
    )
    assert outcome.state is State.CUT and outcome.text == ""
    assert answer_outcome({"error": "overloaded"}, cut=False).state is State.ERROR
    assert answer_outcome({"state": "complete", "finish_reason": "stop"}, cut=False).finish_reason == "stop"
    with pytest.raises(AccumulatorProtocolError, match=r"tool_calls\[0\].name"):
        answer_outcome({"tool_calls": [{"name": 3}]}, cut=False)
    with pytest.raises(AccumulatorProtocolError, match="state"):
        answer_outcome({"state": "finished"}, cut=False)


SERVED = [
    "openai-chat/parallel-2.yaml",
    "openai-chat/cut-mid-arguments.yaml",
    "openai-responses/llamacpp-interleaved-parallel.yaml",
    "anthropic/overloaded-mid-call.yaml",
    "anthropic/seed004-interleaved-input-json.yaml",
    "bedrock-converse/seed000-parallel-read-search.yaml",
    "gemini/parallel-one-chunk.yaml",
    "ollama/parallel.yaml",
    "cohere/parallel.yaml",
]


@pytest.mark.parametrize("feed", ["events", "bytes"])
def test_serve_accumulator_reference_round_trip_equals_in_process(feed: str) -> None:
    command = shlex.join([sys.executable, "-m", "harness", "serve-accumulator", "reference"])
    local = resolve("reference")
    with Stdio(command, "bytes" if feed == "bytes" else "events", timeout=60) as remote:
        for name in SERVED:
            case = recorded_case(CASSETTES / name)
            assert remote.run(case) == local.run(case) == case.expected, name
        assert remote.started == 1


def test_serve_answers_failures_and_skips_in_band() -> None:
    case = recorded_case(CASSETTES / "gemini" / "single-call.yaml")
    lines = "".join(json.dumps(m) + "\n" for m in case_messages(case, "events"))
    out = io.StringIO()
    assert serve("openai-sdk", io.StringIO(lines), out) == 0
    assert "skip" in json.loads(out.getvalue())

    class Raises:
        name = "raises"

        def run(self, case: Case) -> None:
            raise ValueError("nope")

        def shutdown(self) -> None:
            pass

    out = io.StringIO()
    serve(Raises(), io.StringIO(lines), out)  # type: ignore[arg-type]
    assert json.loads(out.getvalue()) == {"case": case.id, "failure": "ValueError: nope"}


class Hasty(EventAccumulator):
    """The reference, but it reports a call no stream makes as ready after every event."""

    def __init__(self, dialect: str) -> None:
        self.reference = dialects.get(dialect).accumulator()

    def feed(self, event: Event) -> None:
        self.reference.feed(event)

    def close(self, error: str | None) -> Outcome:
        return self.reference.close(error)

    def view(self) -> list[ToolCall]:
        return [ToolCall("hasty", {})]


def test_serve_answers_the_notes_of_the_outcome() -> None:
    case = recorded_case(CASSETTES / "openai-chat" / "single-call.yaml")
    lines = "".join(json.dumps(m) + "\n" for m in case_messages(case, "events"))
    out = io.StringIO()
    assert serve(resolve(Hasty), io.StringIO(lines), out) == 0
    answer = json.loads(out.getvalue())
    assert answer["notes"] == list(resolve(Hasty).run(case).notes)
    assert len(answer["notes"]) == 1 and "call 1 reported ready before it was final" in answer["notes"][0]


def test_answered_notes_become_the_outcomes() -> None:
    answered = answer_outcome({"notes": ["event 3: early"]}, cut=False)
    assert answered.notes == ("event 3: early",) and answered == Outcome()
    with pytest.raises(AccumulatorProtocolError, match="notes"):
        answer_outcome({"notes": "early"}, cut=False)
    speaks = (
        "import sys\nfor line in sys.stdin:\n"
        '    if \'"end"\' in line: print(\'{"notes":["early"]}\', flush=True)'
    )
    with Stdio(shlex.join([sys.executable, "-c", speaks]), "events") as acc:
        assert acc.run(recorded_case(CASSETTES / "anthropic" / "single-call.yaml")).notes == ("early",)
        assert not hasattr(acc, "last_notes")


def no_dialect() -> Hasty:
    return Hasty("openai-chat")


def test_serve_accumulator_with_a_spec_that_cannot_resolve_is_a_usage_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    spec = f"{__name__}:no_dialect"
    assert main(["serve-accumulator", spec]) == 2
    assert "called with the dialect name" in capsys.readouterr().err


def test_serve_reports_a_broken_message_and_stops() -> None:
    assert serve("reference", io.StringIO('{"op":"event","event":null,"data":1}\n'), io.StringIO()) == 2


def test_failure_and_skip_answers_become_exceptions() -> None:
    spec = "harness.accumulators.langchain_core:LangchainCoreAccumulator"
    command = shlex.join([sys.executable, "-m", "harness", "serve-accumulator", spec])
    with Stdio(command, "events") as acc, pytest.raises(NotApplicable, match="not gemini"):
        acc.run(recorded_case(CASSETTES / "gemini" / "single-call.yaml"))


# An accumulator whose library kept `sys.stdout` at import (as agno's logging handler does) and
# writes a line to it during every case.
KEEPS_STDOUT = """
import sys
from harness.accumulators import reference

KEPT = sys.stdout


def factory(dialect):
    accumulator = reference.accumulator().factory(dialect)
    KEPT.write("ERROR   a library's log line\\n")
    KEPT.flush()
    return accumulator
"""


def test_what_a_library_writes_to_the_stdout_it_kept_goes_to_stderr_not_between_answers(
    tmp_path: Path,
) -> None:
    (tmp_path / "keeps_stdout.py").write_text(KEEPS_STDOUT)
    argv = ["env", f"PYTHONPATH={tmp_path}:{ROOT}", sys.executable, "-m", "harness"]
    command = shlex.join([*argv, "serve-accumulator", "keeps_stdout:factory"])
    case = recorded_case(CASSETTES / "openai-chat" / "single-call.yaml")
    with Stdio(command, "events", timeout=60) as remote:
        assert remote.run(case) == remote.run(case) == case.expected
        assert remote.started == 1


def test_unknown_feed_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="feed"):
        Stdio("node x.mjs", "lines")  # type: ignore[arg-type]


NODE = shutil.which("node")


@pytest.mark.skipif(NODE is None, reason="node is not installed")
def test_node_example_passes_the_openai_chat_and_anthropic_corpus() -> None:
    paths = sorted((CASSETTES / "openai-chat").glob("*.yaml")) + sorted(
        (CASSETTES / "anthropic").glob("*.yaml")
    )
    with Stdio(f"node {ROOT / 'examples' / 'stdio' / 'accumulator.mjs'}", "events", timeout=30) as acc:
        for path in paths:
            case = recorded_case(path)
            assert diff(case.expected, acc.run(case)) == [], path.name
        with pytest.raises(NotApplicable):
            acc.run(recorded_case(CASSETTES / "gemini" / "single-call.yaml"))
        assert acc.started == 1


# Answers every case; on cases whose id starts with "bad" it misbehaves as argv[1] says. With
# argv[2] == "echo" its answers name their case (protocol v2), else they do not (v1).
DRIFTER = """
import json, sys
how, echo = sys.argv[1], sys.argv[2] == "echo"
case = None
for line in sys.stdin:
    message = json.loads(line)
    if message["op"] == "start":
        case = message["case"]
    elif message["op"] == "event" and case.startswith("bad") and how == "before-end":
        print("debug: got an event", flush=True)
        how = "done"
    elif message["op"] == "end":
        answer = {"text": case, **({"case": case} if echo else {})}
        extra = ""
        if case.startswith("bad") and how == "extra":
            extra = "\\n" + json.dumps({"text": "one too many", **({"case": case} if echo else {})})
        sys.stdout.write(json.dumps(answer) + extra + "\\n")
        sys.stdout.flush()
"""


def drifter(how: str, echo: bool) -> str:
    return shlex.join([sys.executable, "-c", DRIFTER, how, "echo" if echo else "plain"])


def answers(acc: Stdio, case: Case, ids: list[str]) -> dict[str, str]:
    """Each case id -> the text answered for it, or the protocol error it got."""
    out = {}
    for case_id in ids:
        try:
            out[case_id] = acc.run(replace(case, id=case_id)).text
        except AccumulatorProtocolError as exc:
            out[case_id] = f"protocol error: {exc}"
    return out


IDS = ["good-1", "bad-1", *(f"good-{n}" for n in range(2, 12))]


@pytest.mark.parametrize("echo", [True, False], ids=["v2-echoes-case", "v1-no-case"])
def test_one_line_too_many_is_one_protocol_error_not_a_drift(case: Case, echo: bool) -> None:
    with Stdio(drifter("extra", echo), "events") as acc:
        got = answers(acc, case, IDS)
    errors = {k: v for k, v in got.items() if v.startswith("protocol error")}
    assert list(errors) == ["good-2"], got  # the case after the extra line, and only it
    assert "one too many" in errors["good-2"] and "after its answer to case bad-1" in errors["good-2"]
    assert all(got[k] == k for k in IDS if k != "good-2"), got  # every other answer on its own case
    assert acc.started == 2  # the case after the error starts on a fresh process


def test_a_line_before_end_fails_its_own_case_named(case: Case) -> None:
    with Stdio(drifter("before-end", True), "events") as acc:
        got = answers(acc, case, IDS)
    assert got["bad-1"].startswith("protocol error") and "'debug: got an event'" in got["bad-1"], got
    assert all(got[k] == k for k in IDS if k != "bad-1"), got


def test_an_answer_for_another_case_is_a_protocol_error_naming_it(case: Case) -> None:
    speaks = (
        "import json, sys\nfor line in sys.stdin:\n"
        "    m = json.loads(line)\n"
        "    if m['op'] == 'end': print(json.dumps({'case': 'someone-else', 'text': 'x'}), flush=True)"
    )
    shown = re.escape('case good-1: answered case \'someone-else\', not this one: \'{"case": "someone-else"')
    with (
        Stdio(shlex.join([sys.executable, "-c", speaks]), "events") as acc,
        pytest.raises(AccumulatorProtocolError, match=shown),
    ):
        acc.run(case)


def test_once_a_process_names_its_cases_an_answer_without_one_is_refused(case: Case) -> None:
    speaks = (
        "import json, sys\nn = 0\nfor line in sys.stdin:\n"
        "    m = json.loads(line)\n"
        "    if m['op'] == 'start': c = m['case']\n"
        "    if m['op'] == 'end':\n"
        "        n += 1\n"
        "        print(json.dumps({'case': c} if n == 1 else {'text': 'anonymous'}), flush=True)"
    )
    with Stdio(shlex.join([sys.executable, "-c", speaks]), "events") as acc:
        acc.run(case)
        with pytest.raises(AccumulatorProtocolError, match=r"without its case id.*anonymous"):
            acc.run(replace(case, id="good-2"))


# Answers every case with one line: an outcome whose text is argv[1] bytes long; with argv[2]
# `unended` it prints argv[1] bytes of garbage without a newline instead, and waits.
LONG_ANSWER = """
import json, sys, time
size, unended = int(sys.argv[1]), sys.argv[2:] == ["unended"]
for line in sys.stdin:
    message = json.loads(line)
    if message["op"] == "start":
        case = message["case"]
    elif message["op"] == "end":
        if unended:
            sys.stdout.write("x" * size)
            sys.stdout.flush()
            time.sleep(60)
        sys.stdout.write(json.dumps({"case": case, "tool_calls": [], "text": "x" * size}) + "\\n")
        sys.stdout.flush()
"""


def long_answer(tmp_path: Path, size: int, *, unended: bool = False) -> str:
    script = tmp_path / "long_answer.py"
    script.write_text(LONG_ANSWER)
    return shlex.join([sys.executable, str(script), str(size), *(["unended"] * unended)])


def test_a_40_mb_answer_line_is_read_in_linear_time(case: Case, tmp_path: Path) -> None:
    # Read 64 KiB at a time, a line joined by `partial + data` copied ~12 GB before its end.
    size = 40 * 1024 * 1024
    with Stdio(long_answer(tmp_path, size), "events") as acc:
        started = time.monotonic()
        outcome = acc.run(case, timeout=30)
        took = time.monotonic() - started
    assert len(outcome.text) == size
    assert took < 8, f"{took:.1f} s for one 40 MB line"


def test_a_line_longer_than_the_cap_is_a_clear_protocol_error_at_once(
    case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness.accumulators import stdio_process

    monkeypatch.setattr(stdio_process, "MAX_LINE", 1024 * 1024)
    # The line never ends: the error comes when the cap is passed, not at a newline or the timeout.
    with Stdio(long_answer(tmp_path, 3 * 1024 * 1024, unended=True), "events") as acc:
        started = time.monotonic()
        with pytest.raises(AccumulatorProtocolError, match=r"a line of more than 1048576 bytes"):
            acc.run(case, timeout=20)
        assert time.monotonic() - started < 10
        # The process was replaced: the next case is read by a new one (which also overflows).
        with pytest.raises(AccumulatorProtocolError, match="more than 1048576 bytes"):
            acc.run(case, timeout=20)
        assert acc.started == 2
