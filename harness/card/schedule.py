"""The card's rows graded at once, as many at a time as there are slots (cores, or `-j`).

Each row runs on a thread of its own and holds a slot while it works: a library's row for its
whole run (one `serve-accumulator` process at a time: it cannot be split), a client's row for
each case it runs (a program per case: any number at once). Slots go to the best waiting priority
first: rows that cannot be split before cases of those that can (so the long indivisible ones do
not end up alone at the end), and within each, the costlier row first. The results come back in
the order the rows were given, whatever order they finish in, so the card is the same from any
schedule.
"""

from __future__ import annotations

import heapq
import itertools
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Generic, TypeVar

__all__ = ["RowJob", "RowSlots", "Slots", "run_rows"]

T = TypeVar("T")


class Slots:
    """`n` slots, each handed to the waiting holder of the best (lowest) priority; equal
    priorities in the order they asked. `expected`: priorities that will ask (each row's, before
    its first piece of work): a free slot waits for a better one of those to ask, or to say it
    will not (`forget`), so rows start in priority order whatever each does before it asks."""

    def __init__(self, n: int, expected: Iterable[tuple[int, ...]] = ()) -> None:
        self.size = max(n, 1)
        self._free = self.size
        self._lock = threading.Lock()
        self._waiting: list[tuple[tuple[int, ...], int, threading.Event]] = []
        self._asked = itertools.count()
        self._expected = sorted(expected)

    def acquire(self, priority: tuple[int, ...]) -> None:
        ready = threading.Event()
        with self._lock:
            self._arrived(priority)
            heapq.heappush(self._waiting, (priority, next(self._asked), ready))
            self._hand_out()
        ready.wait()

    def release(self) -> None:
        with self._lock:
            self._free += 1
            self._hand_out()

    def forget(self, priority: tuple[int, ...]) -> None:
        """That a row expected to ask will not (it ended, its verdicts read from the cache)."""
        with self._lock:
            self._arrived(priority)
            self._hand_out()

    def _arrived(self, priority: tuple[int, ...]) -> None:
        if priority in self._expected:
            self._expected.remove(priority)

    def _hand_out(self) -> None:
        while self._free > 0 and self._waiting:
            if self._expected and self._expected[0] < self._waiting[0][0]:
                return  # a better row has not asked yet
            self._free -= 1
            heapq.heappop(self._waiting)[2].set()

    @contextmanager
    def held(self, priority: tuple[int, ...]) -> Iterator[None]:
        self.acquire(priority)
        try:
            yield
        finally:
            self.release()


@dataclass(frozen=True)
class RowSlots:
    """What a row is handed: the card's slots, taken at the row's own priority."""

    slots: Slots
    priority: tuple[int, ...]

    @property
    def size(self) -> int:
        """How many slots the card has: the most of a row's cases that can run at once."""
        return self.slots.size

    def held(self) -> AbstractContextManager[None]:
        return self.slots.held(self.priority)


@dataclass(frozen=True)
class RowJob(Generic[T]):
    """One row of the card: `run(slots)` grades it, holding a slot while it works."""

    name: str
    cost: float  # what it is expected to take (any unit, the same for every row): costliest first
    run: Callable[[RowSlots], T]
    divisible: bool = False  # it takes a slot per piece of work (a client's case), not one for all


def order(jobs: Sequence[RowJob[T]]) -> list[int]:
    """The rows' positions in the order they are started: indivisible first, costliest first,
    then as given."""
    return sorted(range(len(jobs)), key=lambda n: (jobs[n].divisible, -jobs[n].cost, n))


def run_rows(jobs: Sequence[RowJob[T]], slots: int) -> list[T]:
    """Every row's result, in the order given. A row that raises stops nothing else; the first
    such error (in the order given) is raised once every row has ended."""
    started = order(jobs)
    pool = Slots(slots, expected=[(int(jobs[n].divisible), rank) for rank, n in enumerate(started)])
    results: list[T | None] = [None] * len(jobs)
    errors: list[BaseException | None] = [None] * len(jobs)

    def one(n: int, rank: int) -> None:
        job = jobs[n]
        priority = (int(job.divisible), rank)
        try:
            results[n] = job.run(RowSlots(pool, priority))
        except BaseException as exc:  # handed to the caller's thread, which raises it
            errors[n] = exc
        finally:
            pool.forget(priority)  # if it never asked

    threads = [
        threading.Thread(target=one, args=(n, rank), name=f"card-row-{jobs[n].name}", daemon=True)
        for rank, n in enumerate(started)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for error in errors:
        if error is not None:
            raise error
    return results  # type: ignore[return-value]  # every row ran: none is None
