"""One registry of entry points for the three groups (`harness.registry`): read once per process,
an entry may not take a built-in name, a failing one is one line of the asking stage's error, and
mutations load every entry so each registers itself."""

from __future__ import annotations

import json
from importlib.metadata import EntryPoint

import pytest

from harness import registry
from harness.errors import DialectError, UsageError
from harness.registry import Registry

GROUP = "toolstream.example"


def _offering(monkeypatch: pytest.MonkeyPatch, *entries: EntryPoint) -> list[str]:
    asked: list[str] = []

    def read(group: str) -> list[EntryPoint]:
        asked.append(group)
        return list(entries)

    monkeypatch.setattr(registry, "entry_points", read)
    return asked


def test_the_group_is_read_once_and_loads_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    asked = _offering(monkeypatch, EntryPoint("dumps", "json:dumps", GROUP))
    found = Registry(GROUP, what="thing", error=UsageError)
    assert not found.read
    assert list(found.entries()) == ["dumps"] and found.read
    assert found.load("dumps") is json.dumps and asked == [GROUP]  # read once
    found.forget()
    found.entries()
    assert asked == [GROUP, GROUP]


def test_a_built_in_name_or_a_broken_entry_is_one_line_of_the_callers_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _offering(monkeypatch, EntryPoint("mine", "no_such_module_q:x", GROUP))
    reused = r"^entry points of toolstream\.example reuse built-in thing names: \['mine'\]$"
    with pytest.raises(DialectError, match=reused):
        Registry(GROUP, what="thing", error=DialectError, builtins=("mine",)).entries()
    broken = Registry(GROUP, what="thing", error=UsageError)
    failed = r"^thing 'mine': its entry point no_such_module_q:x failed to load: "
    with pytest.raises(UsageError, match=failed) as info:
        broken.load_all()
    assert "\n" not in str(info.value)
