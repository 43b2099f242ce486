"""What the pool's forkserver does before it forks any worker: imports the modules every worker
imports before its first case (the built-in mutations and dialects, the reference, and
`importlib.metadata`), reads the registries of mutations and dialects, with the parameter
types of each mutation, and the digest of the code the built-case store is kept under. Done once
in the server instead of once per worker and per replacement of a killed one (~12 ms each, most
of a worker's start). The server starts with the parent's first pool, after the parent read the
same registries and code, so the workers know what the parent knows. What fails here is left for
the worker to meet and report as its own error."""

from __future__ import annotations

import contextlib
import importlib

from harness.mutate import _BUILTIN_MODULES
from harness.wire.dialects import _BUILTINS

MODULES = (
    "importlib.metadata",
    "harness.accumulators.reference",
    *(f"harness.mutate.{name}" for name in _BUILTIN_MODULES),
    *(f"harness.wire.dialects.{name}" for name in _BUILTINS.values()),
)

for _module in MODULES:
    with contextlib.suppress(Exception):
        importlib.import_module(_module)

with contextlib.suppress(Exception):
    from harness import mutate
    from harness.wire import dialects

    for _cls in mutate.registry().values():
        mutate._hints(_cls)
    dialects.registered()

with contextlib.suppress(Exception):
    from harness.matrix import casecache

    casecache._code_digest()  # the digest of the code the case store's folder is named by
