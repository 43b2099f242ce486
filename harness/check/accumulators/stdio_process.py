"""Moved to `harness.accumulators.stdio_process`; this path goes in the next release."""

from harness._moved import moved

moved(__name__, "harness.accumulators.stdio_process")
