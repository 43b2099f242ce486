"""Moved to `harness.text.shared`; this path goes in the next release."""

from harness._moved import moved

moved(__name__, "harness.text.shared")
