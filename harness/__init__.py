"""toolstream-harness: record, mutate and replay streamed LLM tool calls; check any accumulator.

The names below are the public API, grouped by task. The stage packages behind them
(`harness.cassettes`, `harness.wire`, `harness.mutate`, `harness.transports`, `harness.record`,
`harness.check`, `harness.report`, `harness.plugin`, `harness.cli`) are internal: their layout
shows the pipeline, and may change between releases. Errors live in `harness.errors`, all of them
re-exported here.

Names are imported on first use (PEP 562), so `import harness` stays cheap for `cmd:` children and
`serve-accumulator` processes.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# Public name -> (module, attribute). One table, so `__all__`, lazy loading and the type checker
# cannot disagree.
_EXPORTS: dict[str, tuple[str, str]] = {
    # Record and replay: cassettes and the httpx / httpx2 transports.
    "Cassette": ("harness.cassettes.format", "Cassette"),
    "Interaction": ("harness.cassettes.format", "Interaction"),
    "Chunk": ("harness.cassettes.format", "Chunk"),
    "load_cassette": ("harness.cassettes.format", "load"),
    "save_cassette": ("harness.cassettes.format", "save"),
    "RecordingTransport": ("harness.transports.recording", "RecordingTransport"),
    "ReplayTransport": ("harness.transports.replay", "ReplayTransport"),
    "RecordMode": ("harness.transports.modes", "RecordMode"),
    "Redaction": ("harness.record.redaction", "Redaction"),
    "FakeProvider": ("harness.record.fake_provider", "FakeProvider"),
    "Script": ("harness.record.fake_provider", "Script"),
    # Mutate: scenarios and custom mutations.
    "Scenario": ("harness.mutate.scenario", "Scenario"),
    "load_scenarios": ("harness.mutate.scenario", "load_scenarios"),
    "Mutation": ("harness.mutate", "Mutation"),
    "Meaning": ("harness.mutate", "Meaning"),
    "Stream": ("harness.mutate", "Stream"),
    "mutation": ("harness.mutate", "mutation"),
    # Check: what an accumulator receives and reports, how it plugs in, and the matrix.
    "Event": ("harness.wire.dialects.base", "Event"),
    "reference_accumulator": ("harness.wire.dialects", "reference_accumulator"),
    "Outcome": ("harness.check.outcome", "Outcome"),
    "ToolCall": ("harness.check.outcome", "ToolCall"),
    "ServerCall": ("harness.check.outcome", "ServerCall"),
    "State": ("harness.check.outcome", "State"),
    "diff": ("harness.check.outcome", "diff"),
    "EventAccumulator": ("harness.check.accumulators.base", "EventAccumulator"),
    "ClientRunner": ("harness.check.accumulators.base", "ClientRunner"),
    "Accumulator": ("harness.check.accumulators.base", "Accumulator"),
    "client_level": ("harness.check.accumulators.base", "client_level"),
    "resolve_accumulator": ("harness.check.accumulators", "resolve"),
    "Selection": ("harness.check.selection", "Selection"),
    "run_matrix": ("harness.check.runner", "run_matrix"),
    "Report": ("harness.check.verdict", "Report"),
    "Result": ("harness.check.verdict", "Result"),
    "Verdict": ("harness.check.verdict", "Verdict"),
    # Errors (every exception of ours, with its exit code).
    "HarnessError": ("harness.errors", "HarnessError"),
    "CassetteError": ("harness.errors", "CassetteError"),
    "CodecError": ("harness.errors", "CodecError"),
    "DialectError": ("harness.errors", "DialectError"),
    "MutationError": ("harness.errors", "MutationError"),
    "ScenarioError": ("harness.errors", "ScenarioError"),
    "OutcomeFormatError": ("harness.errors", "OutcomeFormatError"),
    "NoMatchError": ("harness.errors", "NoMatchError"),
    "UsageError": ("harness.errors", "UsageError"),
    "NotApplicable": ("harness.errors", "NotApplicable"),
    "AccumulatorFailure": ("harness.errors", "AccumulatorFailure"),
    "AccumulatorCrashed": ("harness.errors", "AccumulatorCrashed"),
    "AccumulatorProtocolError": ("harness.errors", "AccumulatorProtocolError"),
    "AccumulatorTimeout": ("harness.errors", "AccumulatorTimeout"),
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    try:
        module, attribute = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module 'harness' has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return [*__all__, "__version__"]


if TYPE_CHECKING:
    from harness.cassettes.format import Cassette, Chunk, Interaction
    from harness.cassettes.format import load as load_cassette
    from harness.cassettes.format import save as save_cassette
    from harness.check.accumulators import resolve as resolve_accumulator
    from harness.check.accumulators.base import Accumulator, ClientRunner, EventAccumulator, client_level
    from harness.check.outcome import Outcome, ServerCall, State, ToolCall, diff
    from harness.check.runner import run_matrix
    from harness.check.selection import Selection
    from harness.check.verdict import Report, Result, Verdict
    from harness.errors import (
        AccumulatorCrashed,
        AccumulatorFailure,
        AccumulatorProtocolError,
        AccumulatorTimeout,
        CassetteError,
        CodecError,
        DialectError,
        HarnessError,
        MutationError,
        NoMatchError,
        NotApplicable,
        OutcomeFormatError,
        ScenarioError,
        UsageError,
    )
    from harness.mutate import Meaning, Mutation, Stream, mutation
    from harness.mutate.scenario import Scenario, load_scenarios
    from harness.record.fake_provider import FakeProvider, Script
    from harness.record.redaction import Redaction
    from harness.transports.modes import RecordMode
    from harness.transports.recording import RecordingTransport
    from harness.transports.replay import ReplayTransport
    from harness.wire.dialects import reference_accumulator
    from harness.wire.dialects.base import Event
