"""Shared by the pytester tests of the pytest plugin: load it and make the repo importable."""

from __future__ import annotations

import os
import shutil
from importlib.metadata import entry_points
from pathlib import Path

import pytest

# Imported here, before any in-process run: pytester drops modules first imported inside a run,
# and re-importing yaml's C extension afterwards breaks YAML loading for the next run.
import harness.pytest_plugin  # noqa: F401
import harness.snapshot  # noqa: F401

ROOT = Path(__file__).resolve().parent.parent
CASSETTES = ROOT / "cassettes"


def plugin_args() -> list[str]:
    """`-p harness.pytest_plugin` unless the installed entry point already loads it (CI)."""
    installed = any(ep.name == "toolstream" for ep in entry_points(group="pytest11"))
    return [] if installed else ["-p", "harness.pytest_plugin"]


def prepare(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """The repo importable in-process and in subprocesses (xdist workers); no CI leaking in."""
    pytester.syspathinsert(str(ROOT))
    pytester.syspathinsert()  # the test folder: accumulators written there import as `module:attr`
    monkeypatch.setenv("PYTHONPATH", f"{ROOT}{os.pathsep}{pytester.path}")
    monkeypatch.delenv("CI", raising=False)


def copy_cassettes(pytester: pytest.Pytester, *names: str, folder: str = "corpus") -> Path:
    """Bundled cassettes (`openai-chat/parallel-2`) copied into the test folder, same layout."""
    target = pytester.path / folder
    for name in names:
        destination = target / f"{name}.yaml"
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(CASSETTES / f"{name}.yaml", destination)
    return target
