"""What the pool's forkserver imports before it forks any worker: the modules every worker
imports before its first case (the built-in mutations and dialects, the reference, and
`importlib.metadata`, which the registries read entry points with). Imported once in the server
instead of once per worker and per replacement of a killed one. Only modules: the registries
themselves are still read in each worker, so a plugin installed after the server started is seen.
A module that fails to import here is left for the worker to meet and report as its own error."""

from __future__ import annotations

import contextlib
import importlib

from harness.mutate import _BUILTIN_MODULES
from harness.wire.dialects import _BUILTINS

MODULES = (
    "importlib.metadata",
    "harness.check.accumulators.reference",
    *(f"harness.mutate.{name}" for name in _BUILTIN_MODULES),
    *(f"harness.wire.dialects.{name}" for name in _BUILTINS.values()),
)

for _module in MODULES:
    with contextlib.suppress(Exception):
        importlib.import_module(_module)
