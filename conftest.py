"""Repository-level pytest configuration: the suite never writes the user's case cache: a session
(its xdist workers included) shares one built-case store in a temporary folder
(`harness.check.casecache`), so tests see both built and stored cases. The pytest sessions tests
start (pytester, the benchmarks' smoke runs) leave out langsmith's plugin, as pyproject's addopts
do for this one: ~0.7 s of CPU per process, for nothing this suite uses."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile

import pytest


def pytest_configure(config: pytest.Config) -> None:
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return  # a worker: the controller chose the folder, and the environment carries it
    os.environ["PYTEST_ADDOPTS"] = f"{os.environ.get('PYTEST_ADDOPTS', '')} -p no:langsmith_plugin".strip()
    folder = tempfile.mkdtemp(prefix="toolstream-cases-")
    os.environ["TOOLSTREAM_CACHE"] = folder  # harness.cache: the case store goes in its cases/
    # At exit, not at unconfigure: a matrix still alive writes what it built when the
    # interpreter ends (its finalizer, registered later, runs first).
    atexit.register(shutil.rmtree, folder, True)
