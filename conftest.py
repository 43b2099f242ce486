"""Repository-level pytest configuration: the suite never writes the user's case cache: a session
(its xdist workers included) shares one built-case store in a temporary folder
(`harness.matrix.casecache`), so tests see both built and stored cases. The pytest sessions tests
start (pytester, the benchmarks' smoke runs) leave out langsmith's plugin, as pyproject's addopts
do for this one: ~0.7 s of CPU per process, for nothing this suite uses, and ~1 s per in-process
pytester session, which imports it afresh each time (pytester puts `sys.modules` back after each).

Where PYTHONDONTWRITEBYTECODE is set (many container images set it), every process the suite starts
(xdist workers, CLI children, `serve-accumulator`, pytester sessions) would compile the harness
and rewrite the test modules' asserts again, seconds of CPU per worker: the suite lifts it for its
own processes, so bytecode goes where Python puts it by default, the `__pycache__` folders beside
the sources (git ignores them; the installed libraries' were written by pip). Not a shared folder
(PYTHONPYCACHEPREFIX): Python would look for every library's bytecode there too and compile them
all again, 50 s of a fresh clone's first session and 400 MB of a temporary folder."""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile

import pytest

# Registered here, before this file's `pytester` fixture below is read, so that it wraps pytester's
# own: a plugin registered later (a test module's `pytest_plugins`) would shadow it at this level.
pytest_plugins = ["pytester"]


def pytest_configure(config: pytest.Config) -> None:
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return  # a worker: the controller chose the folder, and the environment carries it
    os.environ["PYTEST_ADDOPTS"] = f"{os.environ.get('PYTEST_ADDOPTS', '')} -p no:langsmith_plugin".strip()
    folder = tempfile.mkdtemp(prefix="toolstream-cases-")
    os.environ["TOOLSTREAM_CACHE"] = folder  # harness.cache: the case store goes in its cases/
    if os.environ.pop("PYTHONDONTWRITEBYTECODE", None) is not None:
        sys.dont_write_bytecode = False  # this process's later imports too
    # At exit, not at unconfigure: a matrix still alive writes what it built when the
    # interpreter ends (its finalizer, registered later, runs first).
    atexit.register(shutil.rmtree, folder, True)


@pytest.fixture
def pytester(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """pytester, whose sessions (in process, in a subprocess and their xdist workers) also leave out
    langsmith's plugin: pytester drops PYTEST_ADDOPTS, which carries that for other children."""
    monkeypatch.setenv("PYTEST_ADDOPTS", "-p no:langsmith_plugin")
    return pytester
