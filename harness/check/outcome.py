"""Moved to `harness.cassettes.outcome`; this path goes in the next release."""

from harness._moved import moved

moved(__name__, "harness.cassettes.outcome")
