"""Shared by the pytester tests of the pytest plugin: load it and make the repo importable."""

from __future__ import annotations

import contextlib
import importlib
import os
import pkgutil
import shutil
from importlib.metadata import entry_points
from pathlib import Path

import pytest

import harness


def _import_harness() -> None:
    """Import every harness module before any in-process run: pytester drops the modules first
    imported inside a run, which leaves yaml's C loader and the mutations' type hints broken. The
    HTTP cores too: httpx and httpx2 cache httpcore's exception classes on first use, and a core
    dropped and imported again raises classes that cache no longer maps (an unmapped
    `httpcore2.ConnectError` in a later test of the same worker)."""
    for name in ("httpcore", "httpcore2"):
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    for info in pkgutil.walk_packages(harness.__path__, "harness."):
        if info.name.endswith("__main__"):
            continue  # running it would start the CLI
        with contextlib.suppress(ImportError):
            importlib.import_module(info.name)


_import_harness()

ROOT = Path(__file__).resolve().parent.parent
CASSETTES = ROOT / "cassettes"

# A module of accumulators for a session's folder (`pytester.makepyfile(accs=FIRST_CALL_ONLY +
# ...)`): FirstCallOnly keeps only the first call, so it is wrong wherever a stream has parallel
# calls.
FIRST_CALL_ONLY = """
from dataclasses import replace

from harness.wire import dialects


class FirstCallOnly:
    def __init__(self, dialect):
        self.inner = dialects.get(dialect).accumulator()

    def feed(self, event):
        self.inner.feed(event)

    def close(self, error):
        outcome = self.inner.close(error)
        return replace(outcome, tool_calls=outcome.tool_calls[:1])
"""


def plugin_args() -> list[str]:
    """`-p harness.plugin.hooks` unless the installed entry point already loads it (CI)."""
    installed = any(ep.name == "toolstream" for ep in entry_points(group="pytest11"))
    return [] if installed else ["-p", "harness.plugin.hooks"]


def prepare(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """The repo importable in-process and in subprocesses (xdist workers); no CI leaking in."""
    pytester.syspathinsert(str(ROOT))
    pytester.syspathinsert()  # the test folder: accumulators written there import as `module:attr`
    monkeypatch.setenv("PYTHONPATH", f"{ROOT}{os.pathsep}{pytester.path}")
    monkeypatch.delenv("CI", raising=False)
    for name in ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID"):
        monkeypatch.delenv(name, raising=False)  # the outer run's xdist is not the inner run's


def copy_cassettes(pytester: pytest.Pytester, *names: str, folder: str = "corpus") -> Path:
    """Bundled cassettes (`openai-chat/parallel-2`) copied into the test folder, same layout."""
    target = pytester.path / folder
    for name in names:
        destination = target / f"{name}.yaml"
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(CASSETTES / f"{name}.yaml", destination)
    return target
