"""The replay server: any client program, in any language, pointed at a case by its provider
base URL, judged by the follow-up request it sends (see docs/serve.md). Running a program against
it, case by case, is an accumulator like any other: `harness.accumulators.program`."""

from __future__ import annotations

from harness.serve.followup import ToolResult, Turn, read_followup
from harness.serve.routes import base_urls, client_environment
from harness.serve.server import CaseLog, ReplayServer

__all__ = [
    "CaseLog",
    "ReplayServer",
    "ToolResult",
    "Turn",
    "base_urls",
    "client_environment",
    "read_followup",
]
