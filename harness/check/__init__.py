"""Checking: accumulators under test, the outcome they report, the runner that gives each case a verdict."""
