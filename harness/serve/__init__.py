"""The replay server: any client program, in any language, pointed at a case by its provider
base URL, judged by the follow-up request it sends (see docs/serve.md). Running a program against
it, case by case, is an accumulator like any other: `harness.accumulators.program`."""

from __future__ import annotations

from typing import Any

from harness.serve.followup import ToolResult, Turn, read_followup
from harness.serve.oracle import Evidence, compare_turn, judge_client
from harness.serve.routes import base_urls, client_environment
from harness.serve.server import CaseLog, ReplayServer

__all__ = [
    "CaseLog",
    "Evidence",
    "ReplayServer",
    "ToolResult",
    "Turn",
    "base_urls",
    "client_environment",
    "compare_turn",
    "judge_client",
    "read_followup",
]

_MOVED = {"run_client", "run_clients"}  # to harness.accumulators.program, a stage above this one


def __getattr__(name: str) -> Any:
    if name in _MOVED:  # kept for one release, named as a string: the server does not run programs
        import importlib
        import warnings

        from harness._moved import REMOVED_IN

        warnings.warn(
            f"harness.serve.{name} has moved to harness.accumulators.program.{name} "
            f"(the old name goes in toolstream-harness {REMOVED_IN})",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(importlib.import_module("harness.accumulators.program"), name)
    raise AttributeError(f"module 'harness.serve' has no attribute {name!r}")
