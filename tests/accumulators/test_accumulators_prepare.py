"""`prepare()`: loading and warming an accumulator happens before any case is timed."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import time
from dataclasses import replace
from typing import Any

import pytest
from test_accumulators_stdio import CASSETTES, recorded_case

from harness.accumulators import ClientLevel, EventLevel, builtin_names, client_level, resolve
from harness.accumulators.stdio import WARMUP_CASE
from harness.accumulators.stdio_process import Stdio
from harness.accumulators.warmup import warmup_cases
from harness.cassettes.outcome import Outcome
from harness.errors import AccumulatorCrashed, AccumulatorTimeout
from harness.mutate.scenario import Case
from harness.wire import dialects

# Takes argv[1] seconds to start (an import), then answers every case with its id as text, and
# writes the start messages it got to stderr.
SLOW_START = """
import json, sys, time
time.sleep(float(sys.argv[1]))
for line in sys.stdin:
    message = json.loads(line)
    if message["op"] == "start":
        case = message["case"]
        print(json.dumps(message), file=sys.stderr, flush=True)
    elif message["op"] == "end":
        print(json.dumps({"case": case, "text": case}), flush=True)
"""


def slow_start(seconds: float) -> str:
    return shlex.join([sys.executable, "-c", SLOW_START, str(seconds)])


@pytest.fixture
def case() -> Case:
    return recorded_case(CASSETTES / "openai-chat" / "single-call.yaml", "good-1")


def test_a_slow_starting_process_is_started_and_warmed_up_before_the_first_case(case: Case) -> None:
    with Stdio(slow_start(1), "events") as cold, pytest.raises(AccumulatorTimeout):
        cold.run(case, timeout=0.5)  # without prepare the start counts in the case's time
    with Stdio(slow_start(1), "events") as acc:
        acc.prepare(timeout=30)
        assert acc.run(case, timeout=1).text == "good-1"
        acc.prepare()  # running already: nothing to do
        assert acc.run(replace(case, id="good-2"), timeout=1).text == "good-2"
        assert acc.started == 1
        assert acc._child is not None
        child = acc._child
        deadline = time.monotonic() + 10  # stderr is read by a thread of its own: wait for the last line
        while len(child.stderr_tail().split(" | ")) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        starts = [json.loads(line) for line in child.stderr_tail().split(" | ")]
    assert starts[0]["case"] == WARMUP_CASE and starts[0]["warmup"] is True and starts[0]["protocol"] == 2
    assert [s["case"] for s in starts[1:]] == ["good-1", "good-2"] and "warmup" not in starts[1]


def test_a_start_up_longer_than_a_case_s_timeout_is_waited_for(case: Case) -> None:
    # litellm 1.110.2 took 36 s to import on the card's loaded machine, past its 30 s case limit:
    # every case of its row timed out unrun. The start-up is no case's cost.
    with Stdio(slow_start(2), "events", timeout=1) as acc:
        acc.prepare()  # what the runner calls: no limit of its own
        assert acc.run(case).text == "good-1" and acc.started == 1


def test_prepare_never_raises_and_a_process_never_ready_times_out_each_case_at_once(case: Case) -> None:
    with Stdio(slow_start(600), "events") as acc:
        started = time.monotonic()
        acc.prepare(timeout=0.5)  # the warm-up gets no answer: the process is killed, no error
        assert time.monotonic() - started < 10 and acc._child is None
        started = time.monotonic()
        with pytest.raises(AccumulatorTimeout, match=r"did not answer the warm-up case within 0\.5 s"):
            acc.run(case, timeout=5)
        # No second process waits out its start-up again: a case costs no more than the timeout.
        assert acc.started == 1 and time.monotonic() - started < 1
    with Stdio("/nonexistent/accumulator", "events") as missing:
        missing.prepare()  # not even for a command that cannot start: its cases say so
        with pytest.raises(AccumulatorCrashed, match="cannot start"):
            missing.run(case)


def test_serve_accumulator_answers_the_warm_up() -> None:
    command = shlex.join([sys.executable, "-m", "harness", "serve-accumulator", "reference"])
    with Stdio(command, "events", timeout=60) as acc:
        acc.prepare()
        assert acc._child is not None and acc._child.names_cases  # it answered, naming the case
        case = recorded_case(CASSETTES / "anthropic" / "single-call.yaml")
        assert acc.run(case) == case.expected and acc.started == 1


def test_in_process_prepare_runs_one_stream_per_dialect_it_reads_and_swallows_errors() -> None:
    seen: list[str] = []

    @client_level
    def client(transport: Any, case: Case) -> Outcome:
        seen.append(case.dialect)
        raise RuntimeError("a warm-up failure is the cases' to report")

    ClientLevel(client, "mine", dialects=("anthropic", "openai-responses")).prepare()
    assert seen == ["anthropic", "openai-responses"]
    seen.clear()
    resolve(client).prepare()  # a user's function: every dialect
    assert seen == [c.dialect for c in warmup_cases(dialects.names())] and len(seen) >= 6


def test_in_process_prepare_is_bounded() -> None:
    def hangs(dialect: str) -> Any:
        time.sleep(600)

    started = time.monotonic()
    EventLevel(hangs, "hangs").prepare(timeout=0.5)
    assert time.monotonic() - started < 5


def test_an_accumulator_object_without_prepare_gets_one_that_does_nothing() -> None:
    class Ready:
        def run(self, case: Case) -> Outcome:
            return Outcome()

        def shutdown(self) -> None:
            pass

    ready = Ready()
    assert resolve(ready) is ready
    resolve(ready).prepare()
    resolve(ready).prepare(timeout=1)


# In a fresh interpreter: after prepare(), the first case imports nothing more.
FIRST_CASE = """
import sys
from harness.accumulators import resolve
from harness.accumulators.warmup import warmup_cases
from harness.errors import UsageError
for name, dialect in [a.split("=") for a in sys.argv[1:]]:
    try:
        acc = resolve(name)
    except UsageError:
        continue  # the library is not installed
    acc.prepare()
    case = warmup_cases([dialect])[0]  # reading the cassette is the harness's work, not the case's
    before = set(sys.modules)
    acc.run(case)
    print(name, sorted(set(sys.modules) - before))
"""


# A builtin and a dialect it reads. The framework adapters live in side environments:
# test_accumulators_{pydantic_ai,litellm,google_adk,strands_agents,smolagents,agno}.py run this same
# check there.
FIRST_CASE_DIALECT = {
    "reference": "gemini",
    "openai-sdk": "openai-responses",
    "anthropic-sdk": "anthropic",
    "langchain-core": "anthropic",
    "langchain-openai": "openai-chat",
    "langchain-anthropic": "anthropic",
}


def test_the_first_case_check_covers_every_builtin_of_this_environment() -> None:
    side = {"pydantic-ai", "litellm", "google-adk", "strands-agents", "smolagents", "agno"}
    assert set(FIRST_CASE_DIALECT) == set(builtin_names()) - side


@pytest.mark.slow
@pytest.mark.parametrize("name", list(FIRST_CASE_DIALECT))  # a process each: xdist spreads them
def test_after_prepare_the_first_case_of_each_builtin_loads_no_module(name: str) -> None:
    out = subprocess.run(
        [sys.executable, "-c", FIRST_CASE, f"{name}={FIRST_CASE_DIALECT[name]}"],
        capture_output=True, text=True, timeout=300, check=True,
    ).stdout  # fmt: skip
    for line in out.splitlines():
        _, _, loaded = line.partition(" ")
        assert loaded == "[]", line
