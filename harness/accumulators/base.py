"""The three ways an accumulator plugs in, and the one interface the runner sees.

- Event level (Python): a factory called as `factory(dialect)` for every case, returning an
  `EventAccumulator`, fed the case's decoded wire events, then closed. The default for a Python object.
- Client level (Python): a `ClientRunner` given a transport that runs a real client over it,
  only when marked with `@client_level`.
- Any language: the stdio protocol v2 (see `harness.accumulators.stdio`).

Whatever the level, the runner only calls `prepare()` once before the first case's clock starts,
`Accumulator.run(case) -> Outcome` per case and, at the end, `shutdown()`;
`harness.accumulators.resolve` is what turns a spec into one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeVar

from harness.cassettes.outcome import Outcome, ToolCall
from harness.wire.dialects import Event

if TYPE_CHECKING:
    from harness.mutate.case import Case

__all__ = [
    "LEVEL_ATTRIBUTE",
    "Accumulator",
    "ClientRunner",
    "EventAccumulator",
    "EventFactory",
    "client_level",
    "not_for",
]

# The one marker of a client-level callable, set by `@client_level`.
LEVEL_ATTRIBUTE: Final = "toolstream_level"


class EventAccumulator(Protocol):
    """What a user writes for event-level checking; a fresh one is made for every case by
    `factory(dialect)` (the dialect name, e.g. `"openai-chat"`).

    `feed(event)` gets each decoded wire event (SSE comments are not fed). `close(error)` ends the
    stream and returns the outcome: `error` is the transport error text when the stream was cut,
    None when it ended cleanly. `view()` is asked after every event for the calls the accumulator
    would report as ready now (a list of `ToolCall`s or an `Outcome`); a call reported that differs
    from what the stream finally makes is noted on the outcome (`Outcome.notes`). Its default,
    returning None, means "reports nothing early": subclass this class to inherit it, and an object
    without `view` is treated the same.
    """

    def feed(self, event: Event) -> None: ...

    def close(self, error: str | None) -> Outcome: ...

    def view(self) -> Sequence[ToolCall] | Outcome | None:
        """The calls ready now; None: this accumulator reports nothing before `close`."""
        return None


# A class or function that `EventLevel` calls with the dialect name, once per case.
EventFactory = Callable[[str], EventAccumulator]


class ClientRunner(Protocol):
    """What a user writes for client-level checking, marked with `@client_level`: run a real client
    over `transport` (an httpx or httpx2 transport replaying the case) for the recorded request,
    return its outcome."""

    def __call__(self, transport: Any, case: Case) -> Outcome: ...


_Runner = TypeVar("_Runner", bound=Callable[..., Outcome])


def client_level(fn: _Runner) -> _Runner:
    """Mark `fn(transport, case) -> Outcome` as client level; an unmarked callable is an
    event-level factory, whatever its parameters."""
    setattr(fn, LEVEL_ATTRIBUTE, "client")
    return fn


class Accumulator(Protocol):
    """The runner's view of any accumulator, whatever its level."""

    name: str

    def prepare(self, timeout: float | None = None) -> None:
        """Load and warm up what the accumulator needs (imports, clients, a process and its
        handshake), for at most `timeout` seconds, so none of it counts in a case's time. Never
        raises for the accumulator's own misbehaviour: the cases report that."""
        ...

    def run(self, case: Case) -> Outcome:
        """The accumulator's outcome for one case, its notes included. Raises whatever the
        accumulator raised; containment (timeouts, dead processes) is the runner's and the stdio
        client's job."""
        ...

    def shutdown(self) -> None:
        """Release processes or clients held across cases."""
        ...


def not_for(accumulator: object, name: str, dialect: str) -> str | None:
    """Why a case of `dialect` is not for `accumulator`: it declares the dialects it reads (its
    `dialects`) and this is not one of them. None: the case is for it. The runner, a
    `serve-accumulator` child and explore skip such a case without running it."""
    declared = getattr(accumulator, "dialects", None)
    if declared is None:
        return None
    if isinstance(declared, str):
        declared = (declared,)
    if dialect in declared:
        return None
    return f"{name} reads {' and '.join(declared)} streams, not {dialect}"
