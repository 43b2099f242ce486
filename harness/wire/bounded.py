"""Moved to `harness.bounded`; this path goes in the next release."""

from harness._moved import moved

moved(__name__, "harness.bounded")
