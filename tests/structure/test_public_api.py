"""The curated public API: every name in `harness.__all__` resolves, lazily, to the object of its home."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import harness


@pytest.mark.parametrize("name", harness.__all__)
def test_every_public_name_resolves(name: str) -> None:
    module, attribute = harness._EXPORTS[name]
    assert getattr(harness, name) is getattr(importlib.import_module(module), attribute)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'load'"):
        harness.load  # noqa: B018  (the old ambiguous name is gone)


def test_httpx_names_are_not_shadowed() -> None:
    assert "Request" not in harness.__all__ and "Response" not in harness.__all__


def test_import_harness_loads_no_stage_package() -> None:
    code = "import sys, harness; print(sorted(m for m in sys.modules if m.startswith('harness.')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['harness._version']"  # the version, a module of one line


def test_reference_accumulator_is_event_level() -> None:
    case = harness.build_case("openai-chat/parallel-2::original::s0")
    acc = harness.reference_accumulator("openai-chat")
    for event in case.events:
        acc.feed(event)
    outcome = acc.close(None)
    assert harness.diff(case.expected, outcome) == [] and len(outcome.tool_calls) == 2
