"""The three ways an accumulator plugs in, and the one interface the runner sees.

- Event level (Python): an object fed a case's decoded wire events, then asked for its outcome.
- Client level (Python): a callable given a transport that runs a real client over it.
- Any language: the stdio protocol v1 (see `harness.check.accumulators.stdio`).

Whatever the kind, the runner only calls `Accumulator.run(case) -> Outcome` and, at the end, `shutdown()`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from harness.check.outcome import Outcome
from harness.wire.dialects import Event

if TYPE_CHECKING:
    from harness.mutate.scenario import Case


@runtime_checkable
class EventAccumulator(Protocol):
    """What a user writes for event-level checking. A fresh one is made for every case.

    `close(error)` ends the stream: `error` is the transport error text when the stream was cut,
    None when it ended cleanly. `view()` is optional: the calls it would report as ready now,
    so the harness can flag a call reported before it was final.
    """

    def feed(self, event: Event) -> None: ...

    def close(self, error: str | None) -> Outcome: ...


class ClientRunner(Protocol):
    """What a user writes for client-level checking: run a real client over `transport` (an
    httpx or httpx2 transport replaying the case) for the recorded `request`, return its outcome."""

    def __call__(self, transport: Any, case: Case) -> Outcome: ...


class Accumulator(Protocol):
    """The runner's view of any accumulator, whatever its kind."""

    name: str

    def run(self, case: Case) -> Outcome:
        """The accumulator's outcome for one case. Raises whatever the accumulator raised;
        containment (timeouts, dead processes) is the runner's and the stdio client's job."""
        ...

    def shutdown(self) -> None:
        """Release processes or clients held across cases."""
        ...
