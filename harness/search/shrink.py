"""The shrinker: the shortest run of items (a stream's events) that still fails the same way.

One shrinker serves `compare` (events of a case where A and B differ) and `explore` (events of
a recorded stream a mutation pipeline runs over). The caller's predicate says what "still fails"
means; both callers keep the bug: a candidate counts only when it fails with the signature of the
original failure and its stream ends the way the original did (a complete stream never becomes
a cut by losing its finish).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Final, Generic, TypeVar

__all__ = ["DEFAULT_BUDGET", "ExitReason", "Shrunk", "shrink"]

T = TypeVar("T")

# Predicate runs a shrink may make: enough for a few hundred events, bounded for a slow accumulator.
DEFAULT_BUDGET: Final = 400


class ExitReason(StrEnum):
    """Why the shrinker stopped (as hypothesis's `ExitReason`)."""

    FINISHED = "finished"  # no single item can be dropped: the result is 1-minimal
    BUDGET = "budget exhausted"  # `budget` predicate runs made; the result is the best so far
    UNREPRODUCIBLE = "unreproducible"  # the input itself does not fail: returned as is


@dataclass(frozen=True)
class Shrunk(Generic[T]):
    """The smallest sequence found, why the search stopped, and how many candidates ran."""

    items: tuple[T, ...]
    reason: ExitReason
    runs: int


def shrink(
    items: Sequence[T], still_fails: Callable[[tuple[T, ...]], bool], budget: int = DEFAULT_BUDGET
) -> Shrunk[T]:
    """The shortest subsequence of `items` for which `still_fails` holds (delta debugging: drop
    runs of items, halving the run length down to one).

    Invariants:
    - the result keeps the order of `items`, is never empty, and `still_fails` held on it,
      unless the reason is `UNREPRODUCIBLE`, when the result is `items` unchanged;
    - `still_fails` runs at most `budget` times (at least once), never twice on one candidate
      (runs are cached by which items they keep);
    - on `FINISHED`, dropping any one item of the result makes `still_fails` false (or the
      result empty).
    """
    cache: dict[tuple[int, ...], bool] = {}

    def fails(kept: tuple[int, ...]) -> bool:
        if kept not in cache:
            cache[kept] = still_fails(tuple(items[i] for i in kept))
        return cache[kept]

    current = tuple(range(len(items)))
    if not current or not fails(current):
        return Shrunk(tuple(items), ExitReason.UNREPRODUCIBLE, len(cache))
    size = max(len(current) // 2, 1)
    while True:
        start, dropped = 0, False
        while start < len(current):
            candidate = current[:start] + current[start + size :]
            if candidate and candidate not in cache and len(cache) >= budget:
                return Shrunk(tuple(items[i] for i in current), ExitReason.BUDGET, len(cache))
            if candidate and fails(candidate):
                current, dropped = candidate, True
            else:
                start += size
        if not dropped:
            if size == 1:
                return Shrunk(tuple(items[i] for i in current), ExitReason.FINISHED, len(cache))
            size //= 2
