"""Repository-level pytest configuration: the suite never reaches the internet, and never writes
the user's case cache: a session (its xdist workers included) shares one built-case store in a
temporary folder (`harness.check.casecache`), so tests see both built and stored cases."""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest

_CREATED = pytest.StashKey[str]()


def pytest_configure(config: pytest.Config) -> None:
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return  # a worker: the controller chose the folder, and the environment carries it
    folder = tempfile.mkdtemp(prefix="toolstream-cases-")
    os.environ["TOOLSTREAM_CACHE_DIR"] = folder
    config.stash[_CREATED] = folder


def pytest_unconfigure(config: pytest.Config) -> None:
    folder = config.stash.get(_CREATED, None)
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)
