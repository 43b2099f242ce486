"""Event-level accumulators: factories, comments, cuts, `view()` notes on the outcome, and `reference`."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from harness.accumulators import EventAccumulator, resolve
from harness.accumulators.event_level import EventLevel
from harness.cassettes import format as cassette
from harness.cassettes.outcome import Outcome, State, ToolCall, meets
from harness.errors import AccumulatorProtocolError
from harness.matrix.runner import judge
from harness.mutate.scenario import Case, with_parts
from harness.wire import dialects
from harness.wire.codecs import WireEvent
from harness.wire.dialects import Event

CASSETTES = Path(__file__).resolve().parents[2] / "cassettes"


def recorded_case(path: Path) -> Case:
    """An unmutated case of a corpus cassette's first interaction."""
    item = cassette.load(path).interactions[0]
    dialect = cassette.load(path).dialect or dialects.detect(item.request)
    assert dialect is not None
    expected = with_parts(item.expected, item.response, dialects.get(dialect))  # as the matrix has it
    events = tuple(dialects.events_of(item.response, dialect))
    return Case(
        path.stem, dialect, item.response, events, expected, path.stem, "none", 0, request=item.request
    )


class Recorder:
    """Remembers what it was given; its outcome names the dialect it was built with."""

    def __init__(self, dialect: str) -> None:
        self.dialect = dialect
        self.fed: list[Event] = []

    def feed(self, event: Event) -> None:
        self.fed.append(event)

    def close(self, error: str | None) -> Outcome:
        return Outcome(
            text=f"{self.dialect}:{len(self.fed)}", state=State.CUT if error else State.COMPLETE, error=error
        )


def test_factory_gets_the_dialect() -> None:
    case = recorded_case(CASSETTES / "openai-chat" / "single-call.yaml")
    outcome = EventLevel(Recorder, "rec").run(case)
    assert outcome.text == f"openai-chat:{len(case.events)}"


def test_a_factory_function_is_always_called_with_the_dialect() -> None:
    made: list[str] = []

    def factory(*args: str) -> Recorder:
        made.append(*args)
        return Recorder(args[0])

    EventLevel(factory, "fn").run(recorded_case(CASSETTES / "anthropic" / "single-call.yaml"))
    assert made == ["anthropic"]


def test_the_protocol_default_view_reports_nothing_early() -> None:
    class Subclassed(Recorder, EventAccumulator):
        pass

    assert Subclassed("anthropic").view() is None
    outcome = EventLevel(Subclassed, "sub").run(recorded_case(CASSETTES / "openai-chat" / "parallel-2.yaml"))
    assert outcome.notes == ()


def test_comments_are_not_fed_and_a_cut_closes_with_its_error() -> None:
    case = recorded_case(CASSETTES / "openai-chat" / "single-call.yaml")
    comment = Event(WireEvent(comment=" keepalive"), None)
    cut = replace(case.response, complete=False, error="peer closed connection")
    mutated = replace(case, events=(comment, *case.events, comment), response=cut)
    acc = EventLevel(Recorder, "rec")
    outcome = acc.run(mutated)
    assert outcome.text == f"openai-chat:{len(case.events)}"
    assert outcome.state is State.CUT and outcome.error == "peer closed connection"
    no_text = replace(mutated, response=replace(cut, error=None))
    assert acc.run(no_text).error == "stream cut"


def test_close_must_return_an_outcome() -> None:
    class Broken(Recorder):
        def close(self, error: str | None) -> Outcome:
            return {"tool_calls": []}  # type: ignore[return-value]

    with pytest.raises(AccumulatorProtocolError, match=r"not a harness\.Outcome"):
        EventLevel(Broken, "broken").run(recorded_case(CASSETTES / "openai-chat" / "single-call.yaml"))


def test_view_notes_a_call_reported_before_it_was_final() -> None:
    class Eager:
        """Reports the call on every view, with whatever arguments arrived so far."""

        def __init__(self, dialect: str) -> None:
            self.reference = dialects.get(dialect).accumulator()
            self.args = ""

        def feed(self, event: Event) -> None:
            self.reference.feed(event)
            choices = event.payload.get("choices") if isinstance(event.payload, dict) else None
            for entry in (choices[0].get("delta") or {}).get("tool_calls") or [] if choices else []:
                self.args += (entry.get("function") or {}).get("arguments") or ""

        def view(self) -> list[ToolCall]:
            return [ToolCall.from_text("get_weather", self.args)] if self.args else []

        def close(self, error: str | None) -> Outcome:
            return self.reference.close(error)

    case = recorded_case(CASSETTES / "openai-chat" / "single-call.yaml")
    acc = EventLevel(Eager, "eager")
    outcome = acc.run(case)
    assert meets(case.expected, outcome)  # notes are not compared (nor parts it does not declare)
    notes = outcome.notes
    assert len(notes) == 1 and "call 1 reported ready before it was final" in notes[0]
    assert not hasattr(acc, "last_notes")  # no side channel: the notes are the outcome's

    # They reach the verdict the same way, and survive its JSON (the worker processes' format).
    result = judge(acc, "eager", case)
    assert result.verdict == "pass" and result.actual is not None and result.actual.notes == notes
    assert result.to_dict()["actual"]["notes"] == list(notes)
    assert type(result).from_dict(result.to_dict()).actual.notes == notes  # type: ignore[union-attr]


def test_notes_of_close_are_kept_with_those_of_view() -> None:
    class Both(Recorder):
        def view(self) -> list[ToolCall]:
            return [ToolCall("nothing_like_it", {})]

        def close(self, error: str | None) -> Outcome:
            return replace(super().close(error), notes=("mine",))

    outcome = EventLevel(Both, "both").run(recorded_case(CASSETTES / "openai-chat" / "single-call.yaml"))
    assert outcome.notes[0] == "mine" and "reported ready" in outcome.notes[1] and len(outcome.notes) == 2


def test_a_patient_view_leaves_no_notes() -> None:
    class Patient(Recorder):
        def view(self) -> list[ToolCall]:
            return []

    acc = EventLevel(Patient, "patient")
    assert acc.run(recorded_case(CASSETTES / "openai-chat" / "parallel-2.yaml")).notes == ()


@pytest.mark.parametrize(
    "path", sorted(CASSETTES.glob("*/*.yaml"))[::3], ids=lambda p: f"{p.parent.name}/{p.stem}"
)
def test_reference_meets_every_expectation(path: Path) -> None:
    case = recorded_case(path)
    assert resolve("reference").run(case) == case.expected


# Steps that edit payloads in place, one per kind of edit (a field set, dropped or repeated; an
# argument piece changed; a finish reason changed), over one recording of each SSE-JSON dialect.
EDITING_SCENARIOS = (
    "B10-truncated-args",
    "A5-id-on-every-chunk",
    "A3-index-missing",
    "D1-wrong-finish-reason",
)


@pytest.mark.parametrize("dialect", ["openai-chat", "anthropic", "openai-responses", "cohere"])
def test_an_event_a_step_edited_carries_the_bytes_the_case_sends(dialect: str) -> None:
    # An edited event's `wire` kept the bytes it was received with: an event-level accumulator
    # reading `event.wire.data` parsed the unmutated stream while `payload` held the mutated one.
    from harness.matrix.selection import Selection, cases

    d = dialects.get(dialect)
    selection = Selection(dialects=(dialect,), scenarios=EDITING_SCENARIOS, seeds=1)
    edited = 0
    for case in cases(selection):
        for event in case.events:
            if event.edited and not event.wire.is_comment:
                edited += 1
                assert d.parse(event.wire).payload == event.payload, case.id
    assert edited
