"""`reference`: each dialect's own reference accumulator, at event level (the oracle itself)."""

from __future__ import annotations

from typing import cast

from harness.check.accumulators.base import EventAccumulator
from harness.check.accumulators.event_level import EventLevel
from harness.wire import dialects

__all__ = ["accumulator"]


def _make(dialect: str) -> EventAccumulator:
    # The oracle has no `view`: the protocol's default, it reports nothing early.
    return cast(EventAccumulator, dialects.get(dialect).accumulator())


def accumulator() -> EventLevel:
    """The reference accumulators as one event-level accumulator named `reference`."""
    return EventLevel(_make, "reference")
