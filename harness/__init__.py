"""toolstream-harness: record, mutate and replay streamed LLM tool calls.

The public surface is small: cassettes (`load`, `save`), the `Outcome` every accumulator is judged
on, and the transports in `harness.transports`. Everything else lives in one module per idea.
"""

from __future__ import annotations

from harness.cassettes.format import Cassette, Chunk, Interaction, Request, Response, Source, load, save
from harness.check.outcome import Outcome, State, ToolCall, diff
from harness.errors import HarnessError

__all__ = [
    "Cassette",
    "Chunk",
    "HarnessError",
    "Interaction",
    "Outcome",
    "Request",
    "Response",
    "Source",
    "State",
    "ToolCall",
    "diff",
    "load",
    "save",
]
__version__ = "0.1.0"
