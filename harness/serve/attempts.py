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

A program that runs calls as they finish and then retries runs them twice: its follow-up carries
two results for one id (same ids), or a result for an id only the cut attempt had (new ids); both
are `unsafe` (`harness.oracle.evidence.compare_turn`).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Literal

from harness.cassettes.format import Response
from harness.cassettes.outcome import Outcome, State
from harness.errors import NotApplicable
from harness.mutate import Stream
from harness.mutate.calls import terminal_index
from harness.mutate.case import Case
from harness.mutate.identity import RestyleIds
from harness.mutate.termination import CutMidArgs, cut_after
from harness.wire import dialects

__all__ = ["PLANS", "FirstAttempt", "Plan", "first_attempt"]

Where = Literal["mid-call", "after-finished-call", "after-finish"]


@dataclass(frozen=True, slots=True)
class Plan:
    """How the first attempt of a retry case is cut, and whether its call ids differ."""

    where: Where
    new_ids: bool = False


PLANS: dict[str, Plan] = {
    "retry-cut-mid-call": Plan("mid-call"),
    "retry-cut-after-finished-call": Plan("after-finished-call"),
    "retry-cut-after-finish": Plan("after-finish"),
    "retry-cut-after-finish-new-ids": Plan("after-finish", new_ids=True),
}


@dataclass(frozen=True, slots=True)
class FirstAttempt:
    """What the first attempt of a request to a retry case gets: a cut stream, and what a correct
    program makes of it (the calls final before the cut)."""

    response: Response
    expected: Outcome


def first_attempt(case: Case) -> FirstAttempt | None:
    """The cut first attempt of a retry case; None for any other case, or where the plan's cut
    cannot happen in this stream (then every attempt gets the whole stream)."""
    plan = PLANS.get(case.scenario)
    if plan is None or case.expected.state is not State.COMPLETE:
        return None  # not a retry case, or its stream is itself cut or errored: served as it is
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
