"""Spec strings: every form `resolve` accepts, the `wrap` rule, and the errors for the rest."""

from __future__ import annotations

import sys
from importlib.metadata import EntryPoint
from typing import Any

import pytest

import harness.check.accumulators as accumulators
from harness.check.accumulators import ClientLevel, EventLevel, Stdio, builtin_names, resolve, wrap
from harness.check.outcome import Outcome
from harness.errors import UsageError
from harness.wire.dialects import Event


class MyAccumulator:
    def __init__(self, dialect: str) -> None:
        self.dialect = dialect

    def feed(self, event: Event) -> None:
        pass

    def close(self, error: str | None) -> Outcome:
        return Outcome()


def run_client(transport: Any, case: Any) -> Outcome:
    return Outcome()


def marked(*args: Any) -> Outcome:
    return Outcome()


marked.toolstream_level = "client"  # type: ignore[attr-defined]


def make_events() -> MyAccumulator:
    return MyAccumulator("any")


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
    ]


def test_reference_and_builtins_resolve() -> None:
    assert isinstance(resolve("reference"), EventLevel)
    assert resolve("reference").name == "reference"
    for name in ("openai-sdk", "anthropic-sdk"):
        assert isinstance(resolve(name), ClientLevel) and resolve(name).name == name


@pytest.mark.parametrize(
    ("attr", "kind"),
    [
        ("MyAccumulator", EventLevel),  # a class: event level
        ("make_events", EventLevel),  # a zero-argument factory: event level
        ("run_client", ClientLevel),  # (transport, case): client level
        ("marked", ClientLevel),  # toolstream_level = "client"
    ],
)
def test_module_attr_specs_follow_the_rule(attr: str, kind: type) -> None:
    acc = resolve(f"{__name__}:{attr}")
    assert isinstance(acc, kind) and acc.name == f"{__name__}:{attr}"


def test_an_accumulator_object_is_used_as_it_is() -> None:
    acc = resolve(f"{__name__}:READY")
    assert acc is READY and acc.name == f"{__name__}:READY"
    assert resolve(READY) is READY


def test_factory_level_builds_the_accumulator() -> None:
    def build() -> Ready:
        return READY

    build.toolstream_level = "factory"  # type: ignore[attr-defined]
    assert wrap(build, "built") is READY


@pytest.mark.parametrize(
    ("spec", "feed"), [("cmd:node acc.mjs --x 'a b'", "events"), ("cmd-bytes:./acc", "bytes")]
)
def test_command_specs_are_stdio(spec: str, feed: str) -> None:
    acc = resolve(spec)
    assert isinstance(acc, Stdio) and acc.feed == feed and acc.name == spec
    assert acc.started == 0  # nothing runs until the first case
    if feed == "events":
        assert acc.argv == ["node", "acc.mjs", "--x", "a b"]


def test_entry_points_register_names(monkeypatch: pytest.MonkeyPatch) -> None:
    found = [EntryPoint("mine", f"{__name__}:MyAccumulator", accumulators.ENTRY_POINT_GROUP)]

    def fake(group: str) -> list[EntryPoint]:
        return found if group == accumulators.ENTRY_POINT_GROUP else []

    monkeypatch.setattr(accumulators, "entry_points", fake)
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
    ],
)
def test_bad_specs_are_one_line_usage_errors(spec: str, message: str) -> None:
    with pytest.raises(UsageError) as info:
        resolve(spec)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_unknown_lists_every_form() -> None:
    with pytest.raises(UsageError, match=r"module\.path:attr, cmd:COMMAND or cmd-bytes:COMMAND"):
        resolve("nonsense")


def test_a_missing_library_names_its_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "langchain_anthropic", None)  # import now raises ImportError
    with pytest.raises(UsageError, match=r"pip install 'toolstream-harness\[langchain-anthropic\]'"):
        resolve("langchain-anthropic")
