"""Spec strings: every form `resolve` accepts, the rule for Python objects, and the errors for the rest."""

from __future__ import annotations

import sys
from importlib.metadata import EntryPoint
from typing import Any

import pytest
from test_accumulators_event_level import CASSETTES, recorded_case

import harness.accumulators as accumulators
from harness import registry
from harness.accumulators import (
    ClientLevel,
    EventAccumulator,
    EventLevel,
    Stdio,
    builtin_names,
    client_level,
    resolve,
)
from harness.cassettes.outcome import Outcome
from harness.errors import UsageError
from harness.wire.dialects import Event


class MyAccumulator:
    def __init__(self, dialect: str) -> None:
        self.dialect = dialect

    def feed(self, event: Event) -> None:
        pass

    def close(self, error: str | None) -> Outcome:
        return Outcome()


class Subclassed(EventAccumulator):
    def __init__(self, dialect: str) -> None:
        self.dialect = dialect

    def feed(self, event: Event) -> None:
        pass

    def close(self, error: str | None) -> Outcome:
        return Outcome(text=self.dialect)


def two_parameters(dialect: str, extra: str = "") -> MyAccumulator:
    """Unmarked: an event-level factory, whatever its parameters."""
    return MyAccumulator(dialect)


@client_level
def run_client(transport: Any, case: Any) -> Outcome:
    return Outcome(text="client")


def unmarked_pair(transport: Any, case: Any) -> Outcome:
    """Two required parameters and no mark: an event-level factory, so it cannot resolve."""
    return Outcome()


def make_events() -> MyAccumulator:
    return MyAccumulator("any")


class NoDialect:
    def __init__(self) -> None:
        pass


@client_level
def client_of_one(case: Any) -> Outcome:
    return Outcome()


def old_factory_level() -> MyAccumulator:
    return MyAccumulator("any")


old_factory_level.toolstream_level = "factory"  # type: ignore[attr-defined]


class Ready:
    def run(self, case: Any) -> Outcome:
        return Outcome()

    def shutdown(self) -> None:
        pass


READY = Ready()


def test_builtin_names() -> None:
    assert builtin_names() == [
        "reference",
        "openai-sdk",
        "anthropic-sdk",
        "langchain-core",
        "langchain-openai",
        "langchain-anthropic",
        "pydantic-ai",
        "litellm",
        "google-adk",
        "strands-agents",
        "smolagents",
        "agno",
    ]


@pytest.mark.slow
def test_reference_and_builtins_resolve() -> None:
    assert isinstance(resolve("reference"), EventLevel)
    assert resolve("reference").name == "reference"
    for name in ("openai-sdk", "anthropic-sdk"):
        assert isinstance(resolve(name), ClientLevel) and resolve(name).name == name


@pytest.mark.parametrize(
    ("attr", "kind"),
    [
        ("MyAccumulator", EventLevel),  # a class: event level
        ("Subclassed", EventLevel),  # a subclass of the protocol: event level
        ("two_parameters", EventLevel),  # an unmarked function: event level
        ("run_client", ClientLevel),  # @client_level
    ],
)
def test_module_attr_specs_follow_the_rule(attr: str, kind: type) -> None:
    acc = resolve(f"{__name__}:{attr}")
    assert isinstance(acc, kind) and acc.name == f"{__name__}:{attr}"


def test_client_level_is_the_one_marker() -> None:
    assert getattr(run_client, "toolstream_level", None) == "client"
    assert getattr(unmarked_pair, "toolstream_level", None) is None


def test_a_class_taking_the_dialect_runs_through_resolve() -> None:
    case = recorded_case(CASSETTES / "anthropic" / "single-call.yaml")
    assert resolve(f"{__name__}:Subclassed").run(case).text == "anthropic"
    assert resolve(Subclassed).run(case).text == "anthropic"


def test_an_unmarked_transport_case_function_is_read_as_an_event_level_factory() -> None:
    # Never guessed client level from its signature: called as factory(dialect), it cannot be.
    with pytest.raises(UsageError, match=r"the dialect name.*mark a \(transport, case\) function"):
        resolve(unmarked_pair)

    def same_but_marked(transport: Any, case: Any) -> Outcome:
        return unmarked_pair(transport, case)

    assert isinstance(resolve(client_level(same_but_marked)), ClientLevel)


def test_an_accumulator_object_is_used_as_it_is() -> None:
    acc = resolve(f"{__name__}:READY")
    assert acc is READY and acc.name == f"{__name__}:READY"
    assert resolve(READY) is READY


@pytest.mark.parametrize(
    ("spec", "feed"), [("cmd:sh acc.sh --x 'a b'", "events"), ("cmd-bytes:sh ./acc", "bytes")]
)
def test_command_specs_are_stdio(spec: str, feed: str) -> None:
    # A program that exists (a missing one is a usage error at resolve time, issue 13).
    acc = resolve(spec)
    assert isinstance(acc, Stdio) and acc.feed == feed and acc.name == spec
    assert acc.started == 0  # nothing runs until the first case
    if feed == "events":
        assert acc.argv == ["sh", "acc.sh", "--x", "a b"]


def test_a_command_spec_whose_program_is_missing_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="program 'no-such-toolstream-program': not found on PATH"):
        resolve("cmd:no-such-toolstream-program --x")


def test_entry_points_register_names(monkeypatch: pytest.MonkeyPatch) -> None:
    found = [EntryPoint("mine", f"{__name__}:MyAccumulator", accumulators.ENTRY_POINT_GROUP)]

    def fake(group: str) -> list[EntryPoint]:
        return found if group == accumulators.ENTRY_POINT_GROUP else []

    monkeypatch.setattr(registry, "entry_points", fake)
    monkeypatch.setattr(accumulators.REGISTERED, "_entries", None)  # read again, through `fake`
    acc = resolve("mine")
    assert isinstance(acc, EventLevel) and acc.name == "mine"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("nonsense", "unknown accumulator 'nonsense'; use reference, a built-in name (openai-sdk, "),
        ("cmd:", "cmd: needs a command"),
        ("no_such_module_x:thing", "cannot import no_such_module_x"),
        (f"{__name__}:missing", "has no attribute missing"),
        (f"{__name__}:builtin_names.nothing", "has no attribute"),
        (f"{__name__}:NoDialect", "an event-level factory is called with the dialect name"),
        (f"{__name__}:make_events", "an event-level factory is called with the dialect name"),
        (f"{__name__}:client_of_one", "a client-level function takes (transport, case)"),
        (f"{__name__}:old_factory_level", "toolstream_level = 'factory' is not a level"),
    ],
)
def test_bad_specs_are_one_line_usage_errors(spec: str, message: str) -> None:
    with pytest.raises(UsageError) as info:
        resolve(spec)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_unknown_lists_every_form() -> None:
    forms = r"module\.path:attr, cmd:COMMAND, cmd-bytes:COMMAND or client:COMMAND"
    with pytest.raises(UsageError, match=forms):
        resolve("nonsense")


def test_a_missing_library_names_its_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "langchain_anthropic", None)  # import now raises ImportError
    with pytest.raises(UsageError, match=r"pip install 'toolstream-harness\[langchain-anthropic\]'"):
        resolve("langchain-anthropic")
