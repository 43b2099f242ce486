"""Moved to `harness.text.escape`; this path goes in the next release."""

from harness._moved import moved

moved(__name__, "harness.text.escape")
