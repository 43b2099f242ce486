"""Moved to `harness.accumulators.langchain_core`; this path goes in the next release."""

from harness._moved import moved

moved(__name__, "harness.accumulators.langchain_core")
