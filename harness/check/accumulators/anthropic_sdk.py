"""Moved to `harness.accumulators.anthropic_sdk`; this path goes in the next release."""

from harness._moved import moved

moved(__name__, "harness.accumulators.anthropic_sdk")
