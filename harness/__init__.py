"""toolstream-harness: record, mutate and replay streamed LLM tool calls; check any accumulator.

The names below are the public API, grouped by task. The stage packages behind them, bottom
to top (`harness.cassettes`, `harness.text`, `harness.wire`, `harness.mutate`,
`harness.transports`, `harness.record`, `harness.oracle`, `harness.serve`, `harness.accumulators`,
`harness.matrix`, `harness.search`, `harness.report`, `harness.card`, `harness.plugin`,
`harness.cli`; docs/layout.md) are internal: their layout shows the pipeline, and may change
between releases. Errors live in `harness.errors`, all of them
re-exported here.

Names are imported on first use (PEP 562), so `import harness` stays cheap for `cmd:` children and
`serve-accumulator` processes.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from harness._version import __version__

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
    "Redaction": ("harness.transports.redaction", "Redaction"),
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
    "Outcome": ("harness.cassettes.outcome", "Outcome"),
    "ToolCall": ("harness.cassettes.outcome", "ToolCall"),
    "ServerCall": ("harness.cassettes.outcome", "ServerCall"),
    "Part": ("harness.cassettes.outcome", "Part"),
    "PartKind": ("harness.cassettes.outcome", "PartKind"),
    "State": ("harness.cassettes.outcome", "State"),
    "diff": ("harness.cassettes.outcome", "diff"),
    "EventAccumulator": ("harness.accumulators.base", "EventAccumulator"),
    "ClientRunner": ("harness.accumulators.base", "ClientRunner"),
    "Accumulator": ("harness.accumulators.base", "Accumulator"),
    "client_level": ("harness.accumulators.base", "client_level"),
    "resolve_accumulator": ("harness.accumulators", "resolve"),
    "Selection": ("harness.matrix.selection", "Selection"),
    "run_matrix": ("harness.matrix.runner", "run_matrix"),
    "Report": ("harness.oracle.verdict", "Report"),
    "Result": ("harness.oracle.verdict", "Result"),
    "Verdict": ("harness.oracle.verdict", "Verdict"),
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
    from harness.accumulators import resolve as resolve_accumulator
    from harness.accumulators.base import Accumulator, ClientRunner, EventAccumulator, client_level
    from harness.cassettes.format import Cassette, Chunk, Interaction
    from harness.cassettes.format import load as load_cassette
    from harness.cassettes.format import save as save_cassette
    from harness.cassettes.outcome import Outcome, Part, PartKind, ServerCall, State, ToolCall, diff
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
    from harness.matrix.runner import run_matrix
    from harness.matrix.selection import Selection
    from harness.mutate import Meaning, Mutation, Stream, mutation
    from harness.mutate.scenario import Scenario, load_scenarios
    from harness.oracle.verdict import Report, Result, Verdict
    from harness.record.fake_provider import FakeProvider, Script
    from harness.transports.modes import RecordMode
    from harness.transports.recording import RecordingTransport
    from harness.transports.redaction import Redaction
    from harness.transports.replay import ReplayTransport
    from harness.wire.dialects import reference_accumulator
    from harness.wire.dialects.base import Event
