"""`LongLived`: what a run keeps to its end, kept out of the cyclic garbage collector's passes (its
own module, so that the pytest plugin uses it without importing the worker pool)."""

from __future__ import annotations

import gc

__all__ = ["LongLived"]


class LongLived:
    """The cyclic garbage collector kept off what a run keeps to its end: what lived before it
    (modules, the caller's data), each unit's cases and the results so far. The collector's full
    passes over those cost more than making them (6 µs a case, warm, in process; more in a pool's
    parent, which decodes every result). `keep()` after making some; `close()` at the end of the
    run, which thaws them. Not when the caller froze some itself. Garbage in a cycle that is
    alive at a `keep()` waits for `close()`. The pytest plugin keeps a session's items and
    verdicts this way too."""

    def __init__(self) -> None:
        self.owner = gc.get_freeze_count() == 0
        self.keep()

    def keep(self) -> None:
        if self.owner:
            gc.freeze()

    def close(self) -> None:
        if self.owner:
            gc.unfreeze()
            self.owner = False
