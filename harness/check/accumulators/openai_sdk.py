"""Moved to `harness.accumulators.openai_sdk`; this path goes in the next release."""

from harness._moved import moved

moved(__name__, "harness.accumulators.openai_sdk")
