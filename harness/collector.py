"""The cyclic garbage collector paused while plain data is made or read back in bulk."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """No cyclic garbage collection while plain data is read back or built: it makes tens of
    thousands of containers at once, none in a cycle, and the collector's passes over them (the
    older generations included) cost more than the work itself, it showed."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
