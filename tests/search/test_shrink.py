"""The shrinker's invariants: a subsequence that still fails, a budget, a reason, cached runs."""

from __future__ import annotations

from collections import Counter

from hypothesis import given
from hypothesis import strategies as st

from harness.search.shrink import ExitReason, shrink


def test_finds_the_items_the_failure_needs() -> None:
    shrunk = shrink(list(range(40)), lambda kept: {3, 11, 30} <= set(kept))
    assert shrunk.items == (3, 11, 30) and shrunk.reason is ExitReason.FINISHED


def test_a_case_that_does_not_fail_comes_back_as_is() -> None:
    shrunk = shrink([1, 2, 3], lambda kept: False)
    assert shrunk.items == (1, 2, 3) and shrunk.reason is ExitReason.UNREPRODUCIBLE and shrunk.runs == 1
    assert shrink([], lambda kept: True).reason is ExitReason.UNREPRODUCIBLE


def test_the_budget_bounds_the_runs_and_the_result_still_fails() -> None:
    calls: list[tuple[int, ...]] = []

    def fails(kept: tuple[int, ...]) -> bool:
        calls.append(kept)
        return sum(kept) >= 100

    shrunk = shrink(list(range(60)), fails, budget=5)
    assert shrunk.reason is ExitReason.BUDGET and len(calls) == shrunk.runs == 5
    assert sum(shrunk.items) >= 100 and len(shrunk.items) < 60


@given(
    st.lists(st.integers(0, 40), min_size=1, max_size=30, unique=True),
    st.sets(st.integers(0, 40), max_size=3),
)
def test_invariants(items: list[int], needed: set[int]) -> None:
    seen: Counter[tuple[int, ...]] = Counter()

    def fails(kept: tuple[int, ...]) -> bool:
        seen[kept] += 1
        return needed <= set(kept)

    shrunk = shrink(items, fails)
    assert max(seen.values()) == 1  # each candidate runs once
    it = iter(items)
    assert all(x in it for x in shrunk.items)  # a subsequence, in order
    if shrunk.reason is ExitReason.FINISHED:
        assert shrunk.items and needed <= set(shrunk.items)
        for k in range(len(shrunk.items)):  # 1-minimal
            rest = shrunk.items[:k] + shrunk.items[k + 1 :]
            assert not rest or not needed <= set(rest)
    else:
        assert shrunk.reason is ExitReason.UNREPRODUCIBLE and shrunk.items == tuple(items)
