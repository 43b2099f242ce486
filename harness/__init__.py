"""toolstream-harness: record, mutate and replay streamed LLM tool calls; check any accumulator.

The names below are the public API, grouped by task. The stage packages behind them, bottom
to top (`harness.cassettes`, `harness.text`, `harness.wire`, `harness.mutate`,
`harness.transports`, `harness.record`, `harness.oracle`, `harness.serve`, `harness.accumulators`,
`harness.matrix`, `harness.gateway`, `harness.search`, `harness.report`, `harness.card`, `harness.plugin`,
`harness.cli`; docs/layout.md) are internal: their layout shows the pipeline, and may change
between releases. Errors live in `harness.errors`, all of them
re-exported here. One module is public besides: `harness.strategies`, the matrix as hypothesis
strategies (hypothesis is an optional extra, so `import harness` never imports it).

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
    "bundled": ("harness.cassettes.corpus", "bundled"),
    # Dialects: each provider's wire, read as events; a dialect of your own (docs/dialects.md).
    "Dialect": ("harness.wire.dialects.base", "Dialect"),
    "IdStyle": ("harness.wire.dialects.base", "IdStyle"),
    "OpenAIChat": ("harness.wire.dialects.openai_chat", "OpenAIChat"),
    "get_dialect": ("harness.wire.dialects", "get"),
    "events_of": ("harness.wire.dialects", "events_of"),
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
    "FINISH_NOT_SURFACED": ("harness.cassettes.outcome", "FINISH_NOT_SURFACED"),
    "EventAccumulator": ("harness.accumulators.base", "EventAccumulator"),
    "ClientRunner": ("harness.accumulators.base", "ClientRunner"),
    "Accumulator": ("harness.accumulators.base", "Accumulator"),
    "client_level": ("harness.accumulators.base", "client_level"),
    # What a client-level adapter needs: a raise read as the state its user sees, its text, the
    # recorded request as keyword arguments, the case's stream on a transport.
    "raised": ("harness.accumulators.client", "raised"),
    "raised_error": ("harness.accumulators.client", "raised_error"),
    "request_body": ("harness.accumulators.client", "request_body"),
    "replay_transport": ("harness.accumulators.client", "replay_transport"),
    "resolve_accumulator": ("harness.accumulators", "resolve"),
    "Case": ("harness.mutate.case", "Case"),
    "Selection": ("harness.matrix.selection", "Selection"),
    "cases": ("harness.matrix.selection", "cases"),
    "build_case": ("harness.matrix.selection", "build_case"),
    "judge": ("harness.matrix.judging", "judge"),
    "run_matrix": ("harness.matrix.runner", "run_matrix"),
    "Report": ("harness.oracle.verdict", "Report"),
    "Result": ("harness.oracle.verdict", "Result"),
    "Verdict": ("harness.oracle.verdict", "Verdict"),
    "signature": ("harness.oracle.verdict", "signature"),
    # Gateways: a translating gateway judged on the cases served as its upstream (docs/gateways.md).
    "run_gateway": ("harness.gateway.runner", "run_gateway"),
    # The report card's client programs (shipped with the package): where each runs, how to run it.
    "client_catalogue": ("harness.card.catalogue", "catalogue"),
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
    from harness.accumulators.client import raised, raised_error, replay_transport, request_body
    from harness.card.catalogue import catalogue as client_catalogue
    from harness.cassettes.corpus import bundled
    from harness.cassettes.format import Cassette, Chunk, Interaction
    from harness.cassettes.format import load as load_cassette
    from harness.cassettes.format import save as save_cassette
    from harness.cassettes.outcome import (
        FINISH_NOT_SURFACED,
        Outcome,
        Part,
        PartKind,
        ServerCall,
        State,
        ToolCall,
        diff,
    )
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
    from harness.gateway.runner import run_gateway
    from harness.matrix.judging import judge
    from harness.matrix.runner import run_matrix
    from harness.matrix.selection import Selection, build_case, cases
    from harness.mutate import Meaning, Mutation, Stream, mutation
    from harness.mutate.case import Case
    from harness.mutate.scenario import Scenario, load_scenarios
    from harness.oracle.verdict import Report, Result, Verdict, signature
    from harness.record.fake_provider import FakeProvider, Script
    from harness.transports.modes import RecordMode
    from harness.transports.recording import RecordingTransport
    from harness.transports.redaction import Redaction
    from harness.transports.replay import ReplayTransport
    from harness.wire.dialects import events_of, reference_accumulator
    from harness.wire.dialects import get as get_dialect
    from harness.wire.dialects.base import Dialect, Event, IdStyle
    from harness.wire.dialects.openai_chat import OpenAIChat
