"""`reference`: each dialect's own reference accumulator, at event level (the oracle itself)."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from harness.accumulators.base import EventAccumulator
from harness.accumulators.event_level import EventLevel
from harness.wire import dialects

if TYPE_CHECKING:
    from harness.mutate.case import Case

__all__ = ["accumulator"]


def _make(dialect: str) -> EventAccumulator:
    # The oracle has no `view`: the protocol's default, it reports nothing early.
    return cast(EventAccumulator, dialects.get(dialect).accumulator())


class _Reference(EventLevel):
    def prepare(self, timeout: float | None = None) -> None:
        """Load each dialect's accumulator, which is all there is to warm up: no stream is run,
        so a `serve-accumulator reference` child is ready without loading a cassette."""
        import harness.mutate.scenario  # noqa: F401  (what running a case imports; any server has it)

        for name in self.dialects or dialects.names():
            _make(name)

    def prints_nothing(self, case: Case) -> bool:
        """The built-in dialects' oracles never print; a registered dialect's might."""
        return case.dialect not in dialects.registered()


def accumulator() -> EventLevel:
    """The reference accumulators as one event-level accumulator named `reference`."""
    return _Reference(_make, "reference")
