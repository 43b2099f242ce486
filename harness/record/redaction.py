"""Moved to `harness.transports.redaction`; this path goes in the next release."""

from harness._moved import moved

moved(__name__, "harness.transports.redaction")
