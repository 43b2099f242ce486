"""The stdio protocol pipelined: cases announced (`Stdio.upcoming`) are written ahead of their turn
to a process that names its cases; answers still land on their own cases, deadlines stay per case,
a process that dies mid-window costs only its case, and old clients see no difference."""

from __future__ import annotations

import shlex
import shutil
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from harness.accumulators.stdio_process import Stdio
from harness.cassettes.outcome import Outcome, diff
from harness.errors import AccumulatorCrashed, AccumulatorProtocolError, AccumulatorTimeout
from harness.matrix import pool
from harness.matrix.pool import told_ahead
from harness.mutate.case import Case
from harness.wire.codecs import WireEvent
from harness.wire.dialects import Event
from tests.accumulators.test_accumulators_stdio import CASSETTES, ROOT, drifter, recorded_case

IDS = [f"good-{n}" for n in range(12)]


@pytest.fixture
def case() -> Case:
    return recorded_case(CASSETTES / "openai-chat" / "single-call.yaml", "good-0")


def cases_of(case: Case, ids: list[str]) -> list[Case]:
    return [replace(case, id=case_id) for case_id in ids]


def run_all(acc: Stdio, cases: list[Case], **limit: float) -> dict[str, str]:
    """Each case announced, then run in order: case id -> its answer's text, or the error's class and text."""
    acc.upcoming(cases)
    out = {}
    for case in cases:
        try:
            out[case.id] = acc.run(case, **limit).text
        except (AccumulatorProtocolError, AccumulatorCrashed, AccumulatorTimeout) as exc:
            out[case.id] = f"{_kind(exc)}: {exc}"
    return out


def _kind(exc: Exception) -> str:
    kinds = (AccumulatorProtocolError, AccumulatorCrashed, AccumulatorTimeout)
    return next(kind.__name__ for kind in kinds if isinstance(exc, kind))


def python(script: str, *args: str) -> str:
    return shlex.join([sys.executable, "-c", script, *args])


# Answers a case only once the next case's `start` has arrived (or after a pause), saying which:
# pipelined, no case waits; one at a time, each would. Reads its stdin unbuffered, so "arrived"
# means written by the harness before the answer was.
LAGGING = """
import json, os, select, sys
pending, buffer, case = None, b"", None

def answer(how):
    global pending
    sys.stdout.write(json.dumps({"case": pending, "text": how}) + "\\n")
    sys.stdout.flush()
    pending = None

while True:
    if pending is not None and b"\\n" not in buffer:
        ready, _, _ = select.select([0], [], [], 0.3)
        if not ready:
            answer("waited")
            continue
    if b"\\n" not in buffer:
        data = os.read(0, 1 << 16)
        if not data:
            break
        buffer += data
        continue
    line, _, buffer = buffer.partition(b"\\n")
    message = json.loads(line)
    if message["op"] == "start":
        if pending is not None:
            answer("ahead")
        case = message["case"]
    elif message["op"] == "end":
        if message.get("error") is None and case == "toolstream:warm-up":
            sys.stdout.write(json.dumps({"case": case}) + "\\n")
            sys.stdout.flush()
        else:
            pending = case
"""


def test_announced_cases_are_written_ahead_and_answers_land_on_their_cases(case: Case) -> None:
    with Stdio(python(LAGGING), "events", timeout=10) as acc:
        acc.prepare()
        got = run_all(acc, cases_of(case, IDS))
        assert acc.started == 1
    # Every case but the last had the next one in the process's stdin before it answered.
    assert got == {**{k: "ahead" for k in IDS[:-1]}, IDS[-1]: "waited"}


def test_cases_not_announced_run_one_at_a_time_as_before(case: Case) -> None:
    with Stdio(python(LAGGING), "events", timeout=10) as acc:
        acc.prepare()
        got = {c.id: acc.run(c).text for c in cases_of(case, IDS[:3])}
    assert got == dict.fromkeys(IDS[:3], "waited")


# Answers each case after `argv[1]` seconds, naming it; on cases whose id starts with "bad" it
# misbehaves as argv[2] says: `exit` (status 3 when it reads the case's start), `hang`, `huge`
# (an answer of argv[3] bytes of text).
SPEAKER = """
import json, sys, time
pause, how = float(sys.argv[1]), sys.argv[2]
case = None
for line in sys.stdin:
    message = json.loads(line)
    if message["op"] == "start":
        case = message["case"]
        if how == "exit" and case.startswith("bad"):
            print("boom: cannot go on", file=sys.stderr, flush=True)
            sys.exit(3)
    elif message["op"] == "end":
        time.sleep(pause)
        if case.startswith("bad") and how == "hang":
            time.sleep(600)
        text = "x" * int(sys.argv[3]) if how == "huge" else case
        print(json.dumps({"case": case, "text": text}), flush=True)
"""


def speaker(pause: float, how: str = "none", size: int = 0) -> str:
    return python(SPEAKER, str(pause), how, str(size))


def test_a_slow_process_gets_its_deadline_per_case_from_its_turn_not_from_its_write(case: Case) -> None:
    # Six cases of 0.3 s each are written at once; each has 0.8 s from its own turn.
    with Stdio(speaker(0.3), "events", timeout=0.8) as acc:
        acc.prepare()
        got = run_all(acc, cases_of(case, IDS[:6]))
    assert got == {k: k for k in IDS[:6]}


def test_a_hang_mid_window_times_out_alone_and_the_cases_written_after_it_go_to_a_new_process(
    case: Case,
) -> None:
    ids = ["good-0", "good-1", "bad-2", "good-3", "good-4", "good-5"]
    with Stdio(speaker(0.0, "hang"), "events", timeout=10) as acc:
        acc.prepare()
        started = time.monotonic()
        got = run_all(acc, cases_of(case, ids), timeout=1.0)
        took = time.monotonic() - started
        assert acc.started == 2
    assert got["bad-2"].startswith("AccumulatorTimeout") and "no answer within 1 s" in got["bad-2"]
    assert {k: v for k, v in got.items() if k != "bad-2"} == {k: k for k in ids if k != "bad-2"}
    assert took < 8, f"{took:.1f} s"


def test_a_process_dying_with_cases_in_flight_fails_only_the_case_it_died_on(case: Case) -> None:
    ids = ["good-0", "good-1", "bad-2", "good-3", "good-4", "good-5", "bad-6", "good-7"]
    with Stdio(speaker(0.0, "exit"), "events", timeout=10) as acc:
        acc.prepare()
        got = run_all(acc, cases_of(case, ids))
    for bad in ("bad-2", "bad-6"):
        assert got[bad].startswith("AccumulatorCrashed") and "exited with status 3" in got[bad], got
        assert "boom: cannot go on" in got[bad]
    assert {k: v for k, v in got.items() if not k.startswith("bad")} == {
        k: k for k in ids if not k.startswith("bad")
    }


def test_the_verdicts_do_not_depend_on_the_window(case: Case) -> None:
    ids = ["good-0", "bad-1", "good-2", "bad-3", "bad-4", "good-5"]
    for how in ("exit", "hang"):
        with Stdio(speaker(0.0, how), "events", timeout=10) as one_at_a_time:
            serial = {c.id: _verdict(one_at_a_time, c) for c in cases_of(case, ids)}
        with Stdio(speaker(0.0, how), "events", timeout=10) as pipelined:
            pipelined.prepare()
            announced = cases_of(case, ids)
            pipelined.upcoming(announced)
            ahead = {c.id: _verdict(pipelined, c) for c in announced}
        assert ahead == serial, how


def _verdict(acc: Stdio, case: Case) -> str:
    try:
        return acc.run(case, timeout=1.0).text
    except (AccumulatorCrashed, AccumulatorTimeout) as exc:
        return _kind(exc)


def huge(case: Case, size: int) -> Case:
    event = Event(WireEvent(data=""), {"pad": "y" * size}, True)
    return replace(case, events=(event, *case.events))


def test_a_huge_answer_while_a_huge_case_is_written_does_not_deadlock(case: Case) -> None:
    # 8 MB answers while 8 MB cases are written: neither pipe may stay full.
    size = 8 << 20
    cases = [huge(c, size) for c in cases_of(case, ["bad-0", "bad-1", "bad-2", "bad-3"])]
    with Stdio(speaker(0.0, "huge", size), "events", timeout=60) as acc:
        acc.prepare()
        started = time.monotonic()
        got = run_all(acc, cases)
        assert time.monotonic() - started < 50
    assert [len(text) for text in got.values()] == [size] * 4, [t[:200] for t in got.values()]


@pytest.mark.parametrize("echo", [True, False], ids=["v2-echoes-case", "v1-no-case"])
def test_one_line_too_many_is_still_one_protocol_error_pipelined(case: Case, echo: bool) -> None:
    ids = ["good-1", "bad-1", *(f"good-{n}" for n in range(2, 12))]
    with Stdio(drifter("extra", echo), "events") as acc:
        acc.prepare()
        got = run_all(acc, cases_of(case, ids))
        assert acc.started == 2  # the case after the error starts on a fresh process
    errors = {k: v for k, v in got.items() if v.startswith("AccumulatorProtocolError")}
    assert list(errors) == ["good-2"], got  # the case after the extra line, and only it
    assert "one too many" in errors["good-2"] and "after its answer to case bad-1" in errors["good-2"]
    assert all(got[k] == k for k in ids if k != "good-2"), got


def test_a_line_before_end_fails_its_own_case_pipelined(case: Case) -> None:
    ids = ["good-1", "bad-1", *(f"good-{n}" for n in range(2, 12))]
    with Stdio(drifter("before-end", True), "events") as acc:
        acc.prepare()
        got = run_all(acc, cases_of(case, ids))
    assert got["bad-1"].startswith("AccumulatorProtocolError") and "'debug: got an event'" in got["bad-1"]
    assert all(got[k] == k for k in ids if k != "bad-1"), got


# Answers two cases (naming them), then exits: a process that recycles itself every few cases.
RECYCLING = """
import json, sys
answered = 0
for line in sys.stdin:
    message = json.loads(line)
    if message["op"] == "start":
        case = message["case"]
    elif message["op"] == "end":
        print(json.dumps({"case": case, "text": case}), flush=True)
        answered += case != "toolstream:warm-up"
        if answered == 2:
            sys.exit(0)
"""


def test_a_process_that_exits_after_some_cases_loses_none_written_ahead_to_it(case: Case) -> None:
    with Stdio(python(RECYCLING), "events") as acc:
        acc.prepare()
        got = run_all(acc, cases_of(case, IDS[:7]))
        assert acc.started == 4
    assert got == {k: k for k in IDS[:7]}


def test_a_case_announced_and_not_run_costs_its_process_not_another_case(case: Case) -> None:
    cases = cases_of(case, IDS[:6])
    with Stdio(speaker(0.0), "events") as acc:
        acc.prepare()
        acc.upcoming(cases)
        assert acc.run(cases[0]).text == "good-0"
        assert acc.run(cases[3]).text == "good-3"  # 1 and 2 were written: the process owes them
        assert acc.run(cases[4]).text == "good-4"
        assert acc.run(replace(case, id="never-announced")).text == "never-announced"
        assert acc.run(cases[5]).text == "good-5"


class Told:
    """Records what it is told and run, in order."""

    def __init__(self) -> None:
        self.log: list[tuple[str, str]] = []

    def upcoming(self, cases: list[Case]) -> None:
        self.log += [("told", c.id) for c in cases]

    def run(self, case: Case) -> Outcome:
        self.log.append(("run", case.id))
        return Outcome()


def test_told_ahead_announces_each_case_before_it_runs_and_skips_what_will_not_run(
    case: Case, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pool, "AHEAD", 3)
    units = [(n, cases_of(case, [f"u{n}-{k}" for k in range(n % 3)])) for n in range(8)]
    acc, plain = Told(), object()
    for _, cases in told_ahead(units, [acc, plain], skipped={(5, 1, 0)}):  # type: ignore[list-item]
        for c in cases:
            acc.run(c)
    everything = [c.id for _, cases in units for c in cases]
    assert [i for what, i in acc.log if what == "run"] == everything
    assert [i for what, i in acc.log if what == "told"] == [i for i in everything if i != "u5-1"]
    for k, (what, case_id) in enumerate(acc.log):
        if what == "run" and case_id != "u5-1":
            told = [i for w, i in acc.log[:k] if w == "told"]
            assert case_id in told  # told before it runs...
            assert len(told) - told.index(case_id) - 1 <= 3 + 2  # ...by a unit and 3 cases at most


NODE = shutil.which("node")


@pytest.mark.skipif(NODE is None, reason="node is not installed")
def test_node_example_passes_the_corpus_pipelined() -> None:
    paths = sorted((CASSETTES / "openai-chat").glob("*.yaml")) + sorted(
        (CASSETTES / "anthropic").glob("*.yaml")
    )
    cases = [recorded_case(path) for path in paths]
    with Stdio(f"node {ROOT / 'examples' / 'stdio' / 'accumulator.mjs'}", "events", timeout=30) as acc:
        acc.prepare()
        acc.upcoming(cases)
        for c in cases:
            assert diff(c.expected, acc.run(c)) == [], c.id
        assert acc.started == 1


def test_a_cmd_spec_runs_in_this_process_its_timeout_kept_per_case_by_stdio(
    case: Case, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness import Selection, run_matrix
    from harness.matrix import runner
    from harness.oracle.verdict import Verdict

    def no_pool(*args: object, **kwargs: object) -> None:
        raise AssertionError("a worker pool was started for a cmd: spec")

    monkeypatch.setattr(runner, "Pool", no_pool)
    single = str(CASSETTES / "openai-chat" / "single-call.yaml")
    selection = Selection(cassettes=(single,), scenarios=("original", "F3-single-read"))
    report = run_matrix(f"cmd:{speaker(0.0)}", selection, timeout=1.0)
    assert [r.verdict for r in report.results] == [Verdict.FAIL, Verdict.FAIL]  # answered: no calls
    hangs = python(SPEAKER.replace('case.startswith("bad")', 'case != "toolstream:warm-up"'), "0", "hang")
    started = time.monotonic()
    report = run_matrix(f"cmd:{hangs}", selection, timeout=1.0)
    assert [r.verdict for r in report.results] == [Verdict.TIMEOUT, Verdict.TIMEOUT]
    assert all("no answer within 1 s" in (r.error or "") for r in report.results)
    assert time.monotonic() - started < 15


def test_serve_refuses_a_line_that_is_not_utf8_as_a_broken_message(tmp_path: Path) -> None:
    import subprocess

    start = b'{"op":"start","case":"x","dialect":"openai-chat","feed":"events"}\n'
    done = subprocess.run(
        [sys.executable, "-m", "harness", "serve-accumulator", "reference"],
        input=start + b"\xff\xfe\n",
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert b"line 2" in done.stderr and b"Traceback" not in done.stderr


def test_a_cmd_process_starts_before_the_selection_is_read_and_ends_if_it_cannot_be(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from harness import Selection, run_matrix
    from harness.errors import UsageError
    from harness.matrix import runner

    made: list[Stdio] = []
    resolve = runner.resolve

    def resolving(spec: str) -> object:
        acc = resolve(spec)
        made.append(acc)  # type: ignore[arg-type]
        return acc

    def unreadable(selection: Selection) -> None:
        assert len(made) == 1  # resolved, its process starting, before the selection is read
        raise UsageError("cassettes: no such folder")

    monkeypatch.setattr(runner, "resolve", resolving)
    monkeypatch.setattr(runner, "Matrix", unreadable)
    with pytest.raises(UsageError, match="no such folder"):
        run_matrix(f"cmd:{speaker(0.0)}", Selection(), timeout=5.0)
    (acc,) = made
    assert acc.timeout == 5.0 and acc.started == 1
    assert acc._child is None  # shut down: its process ended with the run


def test_told_ahead_tells_no_case_of_a_dialect_the_accumulator_does_not_read(case: Case) -> None:
    acc = Told()
    acc.dialects = ("anthropic",)  # type: ignore[attr-defined]
    list(told_ahead([(0, cases_of(case, ["a", "b"]))], [acc]))  # type: ignore[list-item]
    assert acc.log == []


@pytest.mark.parametrize("feed", ["events", "bytes"])
def test_serve_accumulator_reference_pipelined_equals_in_process(feed: str) -> None:
    from harness.accumulators import resolve

    command = shlex.join([sys.executable, "-m", "harness", "serve-accumulator", "reference"])
    paths = [*(CASSETTES / "openai-chat").glob("*.yaml"), *(CASSETTES / "anthropic").glob("*.yaml")]
    cases = [recorded_case(path) for path in sorted(paths)]
    local = resolve("reference")
    with Stdio(command, "bytes" if feed == "bytes" else "events", timeout=60) as remote:
        remote.prepare()
        remote.upcoming(cases)
        for c in cases:  # the protocol's answer has no server calls
            assert remote.run(c) == replace(local.run(c), server_calls=()), c.id
        assert remote.started == 1


# Answers good-0 after good-1, every other case in order.
SWAPS = """
import json, sys
held = []
for line in sys.stdin:
    message = json.loads(line)
    if message["op"] == "start":
        case = message["case"]
    elif message["op"] == "end":
        if case == "good-0":
            held.append(case)
            continue
        for answered in [case, *held]:
            print(json.dumps({"case": answered, "text": answered}), flush=True)
        held = []
"""


def test_answers_out_of_order_fail_the_case_owed_first_naming_the_other(case: Case) -> None:
    with Stdio(python(SWAPS), "events") as acc:
        acc.prepare()
        got = run_all(acc, cases_of(case, IDS[:5]))
        assert acc.started == 2
    assert got["good-0"].startswith("AccumulatorProtocolError") and "answered case 'good-1'" in got["good-0"]
    assert {k: v for k, v in got.items() if k != "good-0"} == {k: k for k in IDS[1:5]}
