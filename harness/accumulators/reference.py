"""`reference`: each dialect's own reference accumulator, at event level (the oracle itself)."""

from __future__ import annotations

from .. import dialects
from ..dialects import ReferenceAccumulator
from .event_level import EventLevel

__all__ = ["accumulator"]


def _make(dialect: str) -> ReferenceAccumulator:
    return dialects.get(dialect).accumulator()


def accumulator() -> EventLevel:
    """The reference accumulators as one event-level accumulator named `reference`."""
    return EventLevel(_make, "reference")
