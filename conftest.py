"""Repository-level pytest configuration: the suite never reaches the internet, and never writes
the user's case cache: a session (its xdist workers included) shares one built-case store in a
temporary folder (`harness.check.casecache`), so tests see both built and stored cases."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile

import pytest


def pytest_configure(config: pytest.Config) -> None:
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return  # a worker: the controller chose the folder, and the environment carries it
    folder = tempfile.mkdtemp(prefix="toolstream-cases-")
    os.environ["TOOLSTREAM_CACHE"] = folder  # harness.cache: the case store goes in its cases/
    # At exit, not at unconfigure: a matrix still alive writes what it built when the
    # interpreter ends (its finalizer, registered later, runs first).
    atexit.register(shutil.rmtree, folder, True)
