"""Moved to `harness.search.compare`; this path goes in the next release."""

from harness._moved import moved

moved(__name__, "harness.search.compare")
