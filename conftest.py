"""Repository-level pytest configuration: the suite never reaches the internet."""

from __future__ import annotations

from pathlib import Path

import pytest

# The bundled corpus's generator scripts (`cassettes/synthesize/<dialect>.py`) are in the wheel's
# file list; an editable install lists no `harness/__init__.py`, so pytest, looking for the
# toolstream plugin's modules to assertion-rewrite, takes those scripts' names instead: `anthropic`
# among them, the real SDK, rewritten and compiled from source on every import (seconds of CPU in
# each process that imports it). None of them is a module of the plugin.
_SYNTHESIZE = Path(__file__).parent / "cassettes" / "synthesize"
_NOT_THE_PLUGIN = frozenset(path.stem for path in _SYNTHESIZE.glob("*.py"))


def pytest_configure(config: pytest.Config) -> None:
    hook = config.pluginmanager.rewrite_hook
    marked = getattr(hook, "_must_rewrite", None)
    if isinstance(marked, set):
        marked -= _NOT_THE_PLUGIN
