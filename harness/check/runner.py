"""Moved to `harness.matrix.runner`; this path goes in the next release."""

from harness._moved import moved

moved(__name__, "harness.matrix.runner")
