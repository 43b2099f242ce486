"""The `toolstream_served_case` fixture's value: one matrix case served on 127.0.0.1 to code the
test runs in its own process (an application's agent, with the test's own fixtures and mocks),
judged after the test by the follow-up request that code sent, as `check --client` judges a
program (`harness.oracle.evidence.judge_client`: same verdicts, classes, severities).

Imported by the fixture when a test first asks for it, so a session that serves nothing never
imports the server. One `ReplayServer` per process (an xdist worker has its own), started on a
thread by the first test that asks and holding every case served in the session (`add`).

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
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Final

import pytest

from harness.accumulators.client import raised_error
from harness.matrix.selection import Selection
from harness.mutate.scenario import Case, Scenario
from harness.oracle.evidence import evidence_of, judge_client
from harness.oracle.verdict import Result
from harness.plugin.items import failure_text, node_location, result_property
from harness.serve.routes import base_urls, client_environment
from harness.serve.server import CaseLog, ReplayServer

__all__ = ["ServedCase", "label_of", "replay_server"]

_OUTCOMES: Final = (pytest.skip.Exception, pytest.xfail.Exception, pytest.exit.Exception)


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

    case: Case = field(repr=False)
    server: ReplayServer = field(repr=False)
    label: str  # the test (node id without its parameters): the verdict's accumulator name
    scenario: Scenario | None = field(default=None, repr=False)
    selection: Selection | None = field(default=None, repr=False)
    replay_selection: Selection | None = field(default=None, repr=False)  # the session's options
    strict: bool = False  # warnings fail too
    node: Any = field(default=None, repr=False)
    result: Result | None = field(default=None, repr=False)  # the verdict, once the test has run
    _log: CaseLog = field(init=False, repr=False)
    _started: float = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._log = self.server.add(self.case)
        self._log.clear()  # another test may have been served this case before
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
    def expected(self) -> Any:
        return self.case.expected

    @property
    def base_url(self) -> str:
        return base_urls(self.server.url, self.case.id)[self.case.dialect]

    @property
    def env(self) -> dict[str, str]:
        return client_environment(self.server.url, self.case.id)

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
        if raised is None:
            if text is not None:
                pytest.fail(text, pytrace=False)
            return
        if agent is not None and not (self._log.followups or self._log.reports) and text is None:
            return  # it surfaced a cut or error stream by raising, having run nothing: right
        if text is not None:
            raised.add_note(text)
        raise raised

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
        self.result = result = judge_client(self.case, self.label, evidence, self.scenario)
        if self.node is not None:
            self.node.user_properties.append(result_property(result))
        return result

    def _failure(self, result: Result) -> str:
        test = node_location(self.node) if self.node is not None else None
        return failure_text(
            result, self.selection, strict=self.strict, test=test, session=self.replay_selection, served=True
        )


def label_of(node: Any) -> str:
    """A test's node id without its parameters (`tests/test_agent.py::test_agent`)."""
    original = getattr(node, "originalname", node.name)
    return node.nodeid[: len(node.nodeid) - len(node.name)] + original
