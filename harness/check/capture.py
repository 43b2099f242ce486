"""Moved to `harness.accumulators.capture`; this path goes in the next release."""

from harness._moved import moved

moved(__name__, "harness.accumulators.capture")
