"""Dialects registered by another package under `toolstream.dialects`: the example plugin of
docs/dialects.md, installed as a tiny distribution (a dist-info folder on sys.path), reaches every
place that asks the registry: names, lookup, detection, guessing, recording providers, id styles."""

from __future__ import annotations

import random
import re
import sys
import tomllib
from collections.abc import Iterator
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest

from harness import registry
from harness.cassettes.format import Request
from harness.errors import DialectError, MutationError
from harness.mutate import build
from harness.record import providers
from harness.wire import dialects
from harness.wire.codecs import WireEvent

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "dialects.md").read_text(encoding="utf-8")


def _block(language: str) -> str:
    """The docs' example plugin: its code, and the entry point its pyproject declares."""
    return DOC.split(f"```{language}\n", 1)[1].split("```", 1)[0]


def _reset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dialects.REGISTERED, "_entries", None)  # the registry is read once per process
    monkeypatch.setattr(dialects, "_loaded", {})


@pytest.fixture
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """`fake_dialect_plugin` installed as a distribution registering the dialect `fake-chat`."""
    (tmp_path / "fake_dialect_plugin.py").write_text(_block("python"))
    info = tmp_path / "fake_dialect_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fake-dialect-plugin\nVersion: 0.1\n")
    declared = tomllib.loads(_block("toml"))["project"]["entry-points"]
    (info / "entry_points.txt").write_text(
        "".join(
            f"[{group}]\n" + "".join(f"{name} = {value}\n" for name, value in entries.items())
            for group, entries in declared.items()
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    _reset(monkeypatch)
    yield "fake-chat"
    sys.modules.pop("fake_dialect_plugin", None)  # the next test installs it afresh


def test_an_installed_entry_point_adds_a_dialect(installed: str) -> None:
    assert installed in dialects.names() and "openai-chat" in dialects.names()
    d = dialects.get(installed)
    assert d.name == installed and d.codec_name == "sse"


def test_a_registered_dialect_is_detected_before_the_generic_openai_chat(installed: str) -> None:
    # Its URL also ends in /chat/completions: only the order makes it the plugin's.
    request = Request(method="POST", url="https://fake.example/v9/chat/completions")
    assert dialects.detect(request) == installed
    assert dialects.detect(Request(method="POST", url="https://api.openai.com/v1/chat/completions")) == (
        "openai-chat"
    )
    events = [WireEvent(data='{"object":"fake.chunk"}')] * 2
    assert dialects.guess(events) == installed


def test_a_registered_dialect_that_asks_is_a_recording_provider(installed: str) -> None:
    assert providers.provider("fake").dialect == installed
    request = providers.build_request("fake", env={"FAKE_API_KEY": "k"})
    assert request.url == "https://fake.example/v9/chat/completions"
    assert request.headers["Authorization"] == "Bearer k" and request.json["model"] == "fake-1"


def test_restyle_ids_asks_the_registry_for_a_style(installed: str) -> None:
    assert dialects.id_style("fake").fresh(random.Random(0)).startswith("fk-")
    assert build("restyle-ids", {"style": "fake"}).style == "fake"  # type: ignore[attr-defined]


def test_an_unknown_style_fails_when_the_mutation_is_built() -> None:
    with pytest.raises(MutationError, match=r"unknown style 'nope' \(styles: anthropic, bedrock"):
        build("restyle-ids", {"style": "nope"})


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("openai-chat", "fake_dialect_plugin:DIALECT", "reuse built-in dialect names: ['openai-chat']"),
        ("fake", "fake_dialect_plugin:urlsplit", "is not a Dialect"),
        ("fake", "fake_dialect_plugin:DIALECT", "calls itself 'fake-chat'"),
        ("fake", "no_such_module_q:DIALECT", "failed to load"),
    ],
)
def test_a_broken_registration_is_a_dialect_error(
    installed: str, monkeypatch: pytest.MonkeyPatch, name: str, value: str, message: str
) -> None:
    found = [EntryPoint(name, value, dialects.ENTRY_POINT_GROUP)]
    monkeypatch.setattr(registry, "entry_points", lambda group: found)
    _reset(monkeypatch)
    with pytest.raises(DialectError, match=re.escape(message)) as info:
        dialects.names()
        dialects.get(name)
    assert "\n" not in str(info.value)


def test_a_dialect_class_is_instantiated(installed: str, monkeypatch: pytest.MonkeyPatch) -> None:
    found = [EntryPoint("fake-chat", "fake_dialect_plugin:FakeChat", dialects.ENTRY_POINT_GROUP)]
    monkeypatch.setattr(registry, "entry_points", lambda group: found)
    _reset(monkeypatch)
    assert type(dialects.get("fake-chat")).__name__ == "FakeChat"
