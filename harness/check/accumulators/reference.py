"""`reference`: each dialect's own reference accumulator, at event level (the oracle itself)."""

from __future__ import annotations

from harness.check.accumulators.event_level import EventLevel
from harness.wire import dialects
from harness.wire.dialects import ReferenceAccumulator

__all__ = ["accumulator"]


def _make(dialect: str) -> ReferenceAccumulator:
    return dialects.get(dialect).accumulator()


def accumulator() -> EventLevel:
    """The reference accumulators as one event-level accumulator named `reference`."""
    return EventLevel(_make, "reference")
