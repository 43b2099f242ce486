"""The pytest plugin costs nothing where it is not used: every pytest session of a project with the
package installed loads it, so loading it must not import the matrix, transports or server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests._pytester_support import ROOT, plugin_args

# What a session using none of the plugin's features must not import (prefixes of module names).
# Of the transports it reads only `modes` (record modes and match fields: plain names).
HEAVY = (
    "harness.oracle",
    "harness.accumulators",
    "harness.matrix",
    "harness.search",
    "harness.text",
    "harness.serve",
    "harness.transports.recording",
    "harness.transports.replay",
    "harness.transports.matching",
    "harness.transports._library",
    "harness.record",
    "harness.cassettes",
    "harness.mutate",
    "harness.wire",
    "harness.report",
    "harness.plugin.items",
    "harness.plugin.handle",
    "harness.plugin.snapshot",
    "harness.plugin.served",
)

# Writes every module imported in the session, at its very end (after the plugin's last hook).
CONFTEST = """
import json, sys

import harness


def pytest_unconfigure(config):
    with open("modules.json", "w") as out:
        json.dump({"modules": sorted(sys.modules), "harness": harness.__file__}, out)
"""


def _session(folder: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """A pytest session in its own process, as a user runs it: the plugins installed load."""
    env = {key: value for key, value in os.environ.items() if not key.startswith(("PYTEST_", "CI"))}
    env["PYTHONPATH"] = str(ROOT)  # this checkout's harness, whatever is installed
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:langsmith_plugin", "-p", "no:cacheprovider", *args],
        cwd=folder, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    seen = json.loads((folder / "modules.json").read_text()) if (folder / "modules.json").exists() else {}
    return run, seen


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_plain.py").write_text("def test_plain():\n    assert sum([1, 2]) == 3\n")
    return tmp_path


def _heavy(modules: list[str]) -> list[str]:
    return [m for m in modules if m == "httpx" or m.startswith(tuple(f"{p}." for p in HEAVY)) or m in HEAVY]


def test_a_session_using_no_feature_imports_no_heavy_module(project: Path) -> None:
    run, seen = _session(project, "-q", *plugin_args())
    assert run.returncode == 0, run.stdout + run.stderr
    assert Path(seen["harness"]).resolve().is_relative_to(ROOT)
    modules: list[str] = seen["modules"]
    assert "harness.plugin.hooks" in modules and "harness.plugin.record" in modules  # the plugin loaded
    assert "harness.plugin.client" in modules
    found = [m for m in _heavy(modules) if m != "httpx"]
    assert not found, f"a session using no toolstream feature imported {found}"
    (project / "modules.json").unlink()
    without, others = _session(project, "-q", "-p", "no:toolstream")
    assert without.returncode == 0, without.stdout + without.stderr
    if "httpx" not in others["modules"]:
        assert "httpx" not in modules, "the plugin imported httpx"  # no other plugin did


def test_the_same_session_still_runs_the_matrix(project: Path) -> None:
    """The lazily imported matrix still loads when asked for (and the check above can fail)."""
    args = ["--toolstream-accumulator", "reference", "--toolstream-dialect", "openai-chat"]
    run, seen = _session(project, "-q", *plugin_args(), *args, "--toolstream-scenarios", "original")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "passed" in run.stdout and "reference:" in run.stdout, run.stdout
    assert "harness.plugin.items" in _heavy(seen["modules"])
