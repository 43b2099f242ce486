"""Moved to `harness.accumulators.stdio` (and `Stdio` to `stdio_process`, `serve` to `stdio_serve`);
this path goes in the next release."""

from harness._moved import moved

moved(
    __name__,
    "harness.accumulators.stdio",
    "harness.accumulators.stdio_process",
    "harness.accumulators.stdio_serve",
)
