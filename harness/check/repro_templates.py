"""Moved to `harness.search.repro_templates`; this path goes in the next release."""

from harness._moved import moved

moved(__name__, "harness.search.repro_templates")
