"""Moved to `harness.accumulators.event_level`; this path goes in the next release."""

from harness._moved import moved

moved(__name__, "harness.accumulators.event_level")
