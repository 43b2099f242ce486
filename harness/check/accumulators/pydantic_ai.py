"""Moved to `harness.accumulators.pydantic_ai`; this path goes in the next release."""

from harness._moved import moved

moved(__name__, "harness.accumulators.pydantic_ai")
