"""Retry and reconnection cases: the first attempt of a request is cut, the retried request gets
the whole stream (or a different one), and the follow-up shows whether every call ran exactly once
and nothing from the cut attempt ran.

A retry case is an ordinary case (`scenarios/retry/*.yaml`): its stream is what the *retried*
request gets, its expectation the calls a correct program runs, once each. Its scenario name picks
a `Plan` here, which says how the server cuts the *first* attempt of each distinct request:

- `retry-cut-mid-call`: cut inside the first call's arguments, no call final; the retry gets
  the whole stream with the same ids.
- `retry-cut-after-finished-call`: cut after one call is final and before the last one is.
- `retry-cut-after-finish`: cut after the finish, before the terminal event: every call final.
- `retry-cut-after-finish-new-ids`: as above, with other call ids in the cut attempt; the retry
  gets a new generation.
- `retry-429-before-stream`, `retry-503-before-stream`: an HTTP fault before any byte of the stream
  (a 429 with `Retry-After`, a 503), the provider's error body; the retry gets the whole stream.
  An SDK that retries these statuses does so itself (openai-python, anthropic-sdk-python).
- `retry-200-error-body`: a 200 whose body is an error object, not a stream (a gateway that sends
  a pre-stream failure as a 200: majiayu000/litellm-rs#170); only the program can retry it.

The faults before the stream are served by the replay transport too (`replay_transport` in
`harness.accumulators.client`): there the first request gets the fault and the next the stream.

A program that runs calls as they finish and then retries runs them twice: its follow-up carries
two results for one id (same ids), or a result for an id only the cut attempt had (new ids); both
are `unsafe` (`harness.oracle.evidence.compare_turn`).
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Literal

from harness.cassettes.format import Chunk, Response
from harness.cassettes.outcome import Outcome, State
from harness.errors import NotApplicable
from harness.mutate import Stream
from harness.mutate.calls import terminal_index
from harness.mutate.case import Case
from harness.mutate.identity import RestyleIds
from harness.mutate.termination import CutMidArgs, cut_after
from harness.wire import dialects
from harness.wire.dialects.requesting import Requesting

__all__ = ["PLANS", "FirstAttempt", "Plan", "first_attempt"]

Where = Literal["mid-call", "after-finished-call", "after-finish", "before-stream"]
Fault = Literal["429", "503", "error-body"]


@dataclass(frozen=True, slots=True)
class Plan:
    """How the first attempt of a retry case is cut, and whether its call ids differ."""

    where: Where
    new_ids: bool = False
    fault: Fault | None = None  # before-stream: what the first attempt gets instead of the stream


PLANS: dict[str, Plan] = {
    "retry-cut-mid-call": Plan("mid-call"),
    "retry-cut-after-finished-call": Plan("after-finished-call"),
    "retry-cut-after-finish": Plan("after-finish"),
    "retry-cut-after-finish-new-ids": Plan("after-finish", new_ids=True),
    "retry-429-before-stream": Plan("before-stream", fault="429"),
    "retry-503-before-stream": Plan("before-stream", fault="503"),
    "retry-200-error-body": Plan("before-stream", fault="error-body"),
}
# How long a 429 asks the client to wait: `retry-after` in seconds, and `retry-after-ms`, which
# openai-python and anthropic-sdk-python read first (a short wait keeps a run short).
RETRY_AFTER = {"retry-after": "1", "retry-after-ms": "20"}


@dataclass(frozen=True, slots=True)
class FirstAttempt:
    """What the first attempt of a request to a retry case gets: a cut stream, and what a correct
    program makes of it (the calls final before the cut)."""

    response: Response
    expected: Outcome
    fault: bool = False  # a fault before the stream: one body, served as it is to any request


def first_attempt(case: Case) -> FirstAttempt | None:
    """The cut first attempt of a retry case; None for any other case, or where the plan's cut
    cannot happen in this stream (then every attempt gets the whole stream)."""
    plan = PLANS.get(case.scenario)
    if plan is None or case.expected.state is not State.COMPLETE:
        return None  # not a retry case, or its stream is itself cut or errored: served as it is
    if plan.fault is not None:
        return _fault(case, plan.fault) if case.expected.tool_calls else None
    dialect = dialects.get(case.dialect)
    stream = Stream.of(case.response, dialect, case.expected)
    rng = random.Random(f"toolstream/retry/{case.id}")
    try:
        if plan.new_ids:
            stream = RestyleIds(style="same").apply(stream, rng)
        cut = _cut(stream, plan.where, rng)
    except NotApplicable:
        return None
    if cut.expected.state is State.COMPLETE:
        return None  # the cut fell after the terminal event: nothing was lost
    return FirstAttempt(cut.response(case.response), cut.expected)


def _fault(case: Case, fault: Fault) -> FirstAttempt:
    """A first attempt that fails before any byte of the stream: the provider's error body under
    the fault's status (a 200 for `error-body`); a correct program runs nothing from it."""
    status, message, extra = {
        "429": (429, "Rate limit reached: retry after the time given", RETRY_AFTER),
        "503": (503, "The server is overloaded: try again later", {}),
        "error-body": (200, "The upstream failed before the stream started", {}),
    }[fault]
    dialect = dialects.get(case.dialect)
    body = json.dumps(dialect.error_body(message) if isinstance(dialect, Requesting) else {"error": message})
    headers = {"content-type": "application/json", **extra}
    response = Response(status=status, headers=headers, chunks=[Chunk(body.encode(), 0.0)], complete=True)
    return FirstAttempt(response, Outcome(state=State.ERROR, error=message), fault=True)


def _cut(stream: Stream, where: Where, rng: random.Random) -> Stream:
    whole = len(stream.expected.tool_calls)
    if whole == 0:
        raise NotApplicable("no calls to run twice")
    if where == "mid-call":
        return CutMidArgs(call=0, error=True).apply(stream, rng)
    end = terminal_index(stream)
    if where == "after-finish":
        cut = cut_after(stream, end, True)
        if len(cut.expected.tool_calls) != whole:
            raise NotApplicable("the calls are not all final before the terminal event")
        return cut
    for n in range(end + 1):
        cut = cut_after(stream, n, True)
        if 0 < len(cut.expected.tool_calls) < whole:
            return cut
    raise NotApplicable("no point where some but not all calls are final")
