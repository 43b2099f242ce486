"""Moved to `harness.transports.volatile`; this path goes in the next release."""

from harness._moved import moved

moved(__name__, "harness.transports.volatile")
