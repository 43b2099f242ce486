"""Moved to `harness.mutate.case`; this path goes in the next release."""

from harness._moved import moved

moved(__name__, "harness.mutate.case")
