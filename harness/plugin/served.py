"""The `toolstream_served_case` fixture's value: one matrix case served on 127.0.0.1 to code the
test runs in its own process (an application's agent, with the test's own fixtures and mocks),
judged after the test by the follow-up request that code sent, as `check --client` judges a
program (`harness.oracle.evidence.judge_client`: same verdicts, classes, severities).

Imported by the fixture when a test first asks for it, so a session that serves nothing never
imports the server. One `ReplayServer` per process (an xdist worker has its own), started on a
thread by the first test that asks and holding every case served in the session (`add`); each
test is served under a token of its own, so a request a test leaves behind (a background task
posting after the body returned) is never judged as another test's: it is kept as late, on the
test that sent it. A thread a test leaves running is waited for (`LINGER` seconds in all) before
the server stops at the session's end, so what it still sends is heard even when its test was the
session's (or its xdist worker's) last; the tests whose threads outlive that are named. The case
is moved onto the tools the test's first request offers (`harness.mutate.retarget`;
`--toolstream-no-retarget` or the marker's `retarget=False` serve the recording), and judged
against the moved expectation.

What the test body did is the evidence, read by `ServedCase.settle` once it returned or raised:
- It returned: the follow-up (or `POST <prefix>/report`) is judged; none is judged as a program
  that exited 0 (on a complete case every call is lost: the test fails saying no follow-up came).
- It raised: a raise is how an agent surfaces a cut or error stream, so on such a case, with
  nothing sent back, it is the right behaviour and the test passes. Anywhere else the raise fails
  the test with its own traceback, the verdict added as a note when it fails too (on a complete
  case, judged as a program that exited non-zero: `state: complete expected, got error (...)`).
- An `AssertionError` or `pytest.fail` is the test's own verdict, never the agent's evidence:
  it fails the test, with the case's verdict as a note when that fails too. A skip, xfail or
  interrupt passes through unjudged.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any, Final

import pytest

from harness.accumulators.client import raised_error
from harness.matrix.selection import Selection
from harness.mutate.retarget import Retarget
from harness.mutate.scenario import Case, Scenario
from harness.oracle.evidence import evidence_of, judge_client
from harness.oracle.verdict import Result
from harness.plugin.items import failure_text, node_location, result_property
from harness.serve.routes import base_urls, client_environment
from harness.serve.server import CaseLog, ReplayServer

__all__ = ["LINGER", "ServedCase", "label_of", "replay_server", "wait_for_threads_left"]

_OUTCOMES: Final = (pytest.skip.Exception, pytest.xfail.Exception, pytest.exit.Exception)
LINGER: Final = 3.0  # seconds the session's end waits, in all, for the threads tests left running


@contextlib.contextmanager
def replay_server() -> Iterator[ReplayServer]:
    """This process's server, on a thread of its own, serving cases as tests add them."""
    with ReplayServer([]).running() as running:
        yield running


@dataclass
class ServedCase:
    """One case served to the test: point a client at `base_url` (or `env`, `environ()`).

    `case` / `id` / `dialect` / `expected`: the case; `base_url`: what the dialect's SDK takes as
    its base URL (`openai.OpenAI(base_url=...)`, `anthropic.Anthropic(base_url=...)`); `env`: the
    variables `check --client` sets for a program (`OPENAI_BASE_URL`, `ANTHROPIC_BASE_URL`, keys,
    ...); `environ()` sets them in `os.environ` for a block.
    """

    case: Case = field(repr=False)  # as recorded (`served` is what the test was served)
    server: ReplayServer = field(repr=False)
    label: str  # the test (node id without its parameters): the verdict's accumulator name
    # The scenario that made the case: it classes the verdict (spec, quirk, policy) and says which
    # differences it allows; None for a case of no known scenario.
    scenario: Scenario | None = field(default=None, repr=False)
    selection: Selection | None = field(default=None, repr=False)
    replay_selection: Selection | None = field(default=None, repr=False)  # the session's options
    strict: bool = False  # warnings fail too
    node: Any = field(default=None, repr=False)
    result: Result | None = field(default=None, repr=False)  # the verdict, once the test has run
    retargeting: bool = True  # the case moves onto the tools the test's first request offers
    mapping: dict[str, str] = field(default_factory=dict, repr=False)  # recorded name -> tool
    # The test's baseline of verdicts (`harness.plugin.snapshot.Baseline`), when it keeps one; how
    # this case compared with it, once judged (`harness.oracle.baseline.Change`).
    baseline: Any = field(default=None, repr=False)
    change: Any = field(default=None, repr=False)
    # The threads started while the test ran and still running when it ended (what may post late).
    left: tuple[threading.Thread, ...] = field(default=(), init=False, repr=False)
    _log: CaseLog = field(init=False, repr=False)
    _started: float = field(init=False, repr=False)
    _token: str = field(init=False, repr=False)
    _threads: frozenset[threading.Thread] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._threads = frozenset(threading.enumerate())
        # A log of its own under a token: a late request of another test never lands here.
        self._token = uuid.uuid4().hex[:16]
        self._log = self.server.add(
            self.case, token=self._token, retarget=self.retargeting, mapping=self.mapping
        )
        self._started = time.monotonic()

    def __repr__(self) -> str:  # pytest prints a failing test's arguments
        return f"ServedCase(id={self.id!r}, base_url={self.base_url!r})"

    @property
    def id(self) -> str:
        return self.case.id

    @property
    def dialect(self) -> str:
        return self.case.dialect

    @property
    def served(self) -> Case:
        """The case as served: retargeted onto the tools the test's first request offered, once
        it came (`retarget` says how, or why not), else the recording's."""
        return self._log.case if self._log.case is not None else self.case

    @property
    def retarget(self) -> Retarget | None:
        """How the case was moved onto the test's tools (`mapping`, or `reason` it was not);
        None before the first request, or with retargeting off."""
        return self._log.retarget

    @property
    def expected(self) -> Any:
        return self.served.expected

    @property
    def base_url(self) -> str:
        return base_urls(self.server.url, self.case.id, self._token)[self.case.dialect]

    @property
    def env(self) -> dict[str, str]:
        return client_environment(self.server.url, self.case.id, self._token)

    @property
    def log(self) -> CaseLog:
        """What the server received for this test (its late requests: `log.late`)."""
        return self._log

    def close(self) -> None:
        """The test has ended: a request after this is late, said on this test (once: the
        session's end closes the last test before pytest's teardown hook does)."""
        if self._log.closed:
            return
        self._log.closed = True
        self.left = tuple(t for t in threading.enumerate() if t not in self._threads and t.is_alive())

    @contextlib.contextmanager
    def environ(self) -> Iterator[dict[str, str]]:
        """`env` set in `os.environ` for the block, the old values put back after it."""
        env = self.env
        saved = {name: os.environ.get(name) for name in env}
        os.environ.update(env)
        try:
            yield env
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value

    def settle(self, raised: BaseException | None) -> None:
        """Judge the test that just ran (`raised`: what its body raised, or None): returns when it
        passes, else raises what fails it (see the module docstring)."""
        if raised is not None and (
            isinstance(raised, _OUTCOMES) or not isinstance(raised, Exception | pytest.fail.Exception)
        ):
            raise raised  # a skip, an xfail, an exit, an interrupt: not judged
        own = isinstance(raised, AssertionError | pytest.fail.Exception)
        agent = None if own else raised
        result = self._judge(agent)
        text = self._failure(result) if result.fails(self.strict) else None
        if self.baseline is not None and not own:
            held, text = self._against_baseline(result, text)
            if held and agent is not None:
                return  # a known failure, as the baseline keeps it (or better)
        if raised is None:
            if text is not None:
                pytest.fail(text, pytrace=False)
            return
        if agent is not None and not (self._log.followups or self._log.reports) and text is None:
            return  # it surfaced a cut or error stream by raising, having run nothing: right
        if text is not None:
            raised.add_note(text)
        raise raised

    def _against_baseline(self, result: Result, text: str | None) -> tuple[bool, str | None]:
        """Whether the baseline holds the verdict (the same or better: the test passes), and the
        failure text: where it got worse, what it was and what it is, above the verdict's."""
        from harness.oracle.baseline import Change

        self.change, before, now = self.baseline.hold(result)
        if self.change is Change.NEW:
            return False, text
        if self.change is Change.WORSE:
            said = f"worse than its baseline: {before} before, {now} now"
            return False, f"{said}\n{text or self._failure(result)}"
        return True, None

    def _judge(self, raised: BaseException | None = None) -> Result:
        """The verdict on what the server received so far (and `raised`, what the agent raised),
        kept in `result` and carried to the session's summary and reports."""
        evidence = evidence_of(
            self._log,
            exit_code=0 if raised is None else 1,
            seconds=time.monotonic() - self._started,
            stderr="" if raised is None else raised_error(raised).splitlines()[0],
            in_process=True,
        )
        result = judge_client(self.served, self.label, evidence, self.scenario)
        moved = self._log.retarget
        if moved is not None and result.actual is not None:
            notes = (*result.actual.notes, moved.describe())
            result = replace(result, actual=replace(result.actual, notes=notes))
        self.result = result
        if self.node is not None:
            self.node.user_properties.append(result_property(result))
        return result

    def _failure(self, result: Result) -> str:
        test = node_location(self.node) if self.node is not None else None
        text = failure_text(
            result, self.selection, strict=self.strict, test=test, session=self.replay_selection, served=True
        )
        moved = self._log.retarget
        if moved is None or not (moved.mapping or moved.reason):
            return text
        head, _, rest = text.partition("\n")
        return f"{head}\n  ({moved.describe()})\n{rest}"


def wait_for_threads_left(served: list[ServedCase], seconds: float = LINGER) -> list[ServedCase]:
    """Wait, `seconds` in all, for the threads the `served` tests left running (so that what they
    still send reaches the server, late, on their test); the tests whose threads still run."""
    deadline = time.monotonic() + seconds
    for case in served:
        case.close()  # the session's last test: its teardown hook has not run yet
        for thread in case.left:
            thread.join(max(0.0, deadline - time.monotonic()))
    return [case for case in served if any(thread.is_alive() for thread in case.left)]


def label_of(node: Any) -> str:
    """A test's node id without its parameters (`tests/test_agent.py::test_agent`)."""
    original = getattr(node, "originalname", node.name)
    return node.nodeid[: len(node.nodeid) - len(node.name)] + original
