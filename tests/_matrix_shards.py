"""A dialect's whole matrix in shards of its scenarios, for a test that runs all of it (a program
per case, an agent's suite): parametrized over the shards, its run is spread by xdist over the
workers instead of bounding `-n 2` as the suite's longest test, and each shard is checked to have
run exactly its cases (together: every case once)."""

from __future__ import annotations

import functools


@functools.cache
def scenario_shards(dialect: str, shards: int) -> tuple[dict[str, int], ...]:
    """The scenarios of `dialect`'s matrix in `shards` groups, each scenario with its case count:
    the biggest first, each into the group holding fewest cases so far (ids from the catalog and
    the session's case store: no case judged). Every scenario is in exactly one group."""
    from harness.matrix.catalog import list_ids
    from harness.matrix.selection import Matrix, Selection

    matrix = Matrix(Selection(dialects=(dialect,)))
    counts = dict.fromkeys((s.name for s in matrix.scenarios), 0)
    for case_id in list_ids(matrix):
        counts[case_id.split("::")[1]] += 1
    groups: list[dict[str, int]] = [{} for _ in range(shards)]
    for name, count in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
        min(groups, key=lambda group: sum(group.values()))[name] = count
    assert sorted(n for group in groups for n in group) == sorted(counts)  # every scenario, once
    assert all(groups), f"fewer scenarios than {shards} shards"
    return tuple(groups)
