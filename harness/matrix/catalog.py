"""Case ids without building cases: what a pytest session collects its matrix items from.

Whether a scenario applies to a recording, and which points a sweep makes, is only known by
running the pipeline, so ids are stored once computed: per cassette file, under a key of all
they depend on (the id-making code's bytes, the file's bytes and name in ids, the dialect filter),
then per scenario (its steps and seeds). Two stores are read: `case-ids.json.gz` next to this module,
shipped with the package for the bundled corpus x the shipped scenarios (so a fresh clone or CI
machine lists the whole matrix without running a pipeline; `python -m harness.matrix.catalog`
rewrites it, and a test fails when it is stale), and a session cache (pytest's `config.cache`)
for anything else. A missing entry is computed by building its cases, which the caller keeps.
"""

from __future__ import annotations

import functools
import gzip
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

from harness import files
from harness.matrix import keys
from harness.matrix.keys import code_digest, scenario_key
from harness.matrix.selection import Matrix, Selection, Unit
from harness.mutate.scenario import Case

__all__ = ["SHIPPED", "code_digest", "file_key", "list_ids", "scenario_key", "write_shipped"]

SHIPPED: Final = Path(__file__).with_name("case-ids.json.gz")  # generated: gzip keeps the wheel small
# The code case ids depend on: loading cassettes, decoding wire events, running pipelines, the
# units of a matrix. Anything else (judging, reporting, the CLI) leaves ids alone.
_CACHE_PREFIX: Final = "toolstream/case-ids/"

Pairs = list[list[str]]  # [[case id, dialect], ...] in matrix order


def file_key(matrix: Matrix, path: Path) -> str:
    """The key of one cassette file's ids in `matrix` (`harness.matrix.keys.file_key`)."""
    return keys.file_key(matrix.cassette_name(path), matrix.selection.dialects, path)


@functools.cache
def _shipped() -> dict[str, dict[str, Pairs]]:
    try:
        data = json.loads(gzip.decompress(SHIPPED.read_bytes()))
    except (OSError, ValueError):
        return {}
    files = data.get("files") if isinstance(data, dict) else None
    return files if isinstance(files, dict) else {}


def _valid(entry: Any) -> bool:
    return isinstance(entry, dict) and all(
        isinstance(pairs, list)
        and all(isinstance(p, list) and len(p) == 2 and all(isinstance(x, str) for x in p) for p in pairs)
        for pairs in entry.values()
    )


def list_ids(
    matrix: Matrix, cache: Any = None, built: dict[str, Case] | None = None, *, shipped: bool = True
) -> dict[str, str]:
    """Case id -> dialect, in matrix order, each id once: what `matrix.all()` gives, read from the
    stores where they hold it; cases built to list the rest go into `built` (by id)."""
    if matrix.selection.cases:  # exactly these ids: each is built to know its dialect
        found = {c.id: c for c in matrix.all()}
        if built is not None:
            built.update(found)
        return {i: c.dialect for i, c in found.items()}
    out: dict[str, str] = {}
    for path in matrix.cassette_files():
        for case_id, dialect in _file_ids(matrix, path, cache, built, shipped):
            out.setdefault(case_id, dialect)
    matrix.flush()
    return out


def _file_ids(
    matrix: Matrix, path: Path, cache: Any, built: dict[str, Case] | None, use_shipped: bool
) -> Iterator[list[str]]:
    key = file_key(matrix, path)
    shipped = _shipped().get(key, {}) if use_shipped else {}
    found = cache.get(_CACHE_PREFIX + key, None) if cache is not None else None
    stored: dict[str, Pairs] = dict(found) if found is not None and _valid(found) else {}
    changed = False
    for scenario in matrix.scenarios:
        seeds = range(matrix.selection.seeds) if matrix.selection.seeds is not None else scenario.seeds
        skey = scenario_key(scenario, seeds)
        pairs = shipped[skey] if skey in shipped else stored.get(skey)  # [] is an answer: no cases
        if pairs is None:
            pairs = []
            for seed in seeds:
                for case in matrix.cases(Unit(str(path), scenario.name, seed)):
                    pairs.append([case.id, case.dialect])
                    if built is not None:
                        built.setdefault(case.id, case)
            stored[skey], changed = pairs, True
        yield from pairs
    if changed and cache is not None:
        cache.set(_CACHE_PREFIX + key, stored)


def write_shipped(path: Path = SHIPPED) -> int:
    """Compute the ids of the bundled corpus x the shipped scenarios (ignoring the shipped
    store) and write them to `path`; returns how many cases."""
    store = _Store()
    count = len(list_ids(Matrix(Selection()), store, shipped=False))
    data = {
        "about": "case ids of the bundled cassettes x the shipped scenarios; "
        "rewrite with `python -m harness.matrix.catalog`",
        "files": {k[len(_CACHE_PREFIX) :]: v for k, v in sorted(store.values.items())},
    }
    text = json.dumps(data, sort_keys=True, separators=(",", ":")) + "\n"
    files.write(path, gzip.compress(text.encode("utf-8"), mtime=0))  # mtime 0: same ids, same bytes
    _shipped.cache_clear()
    return count


class _Store:
    """A session cache in memory (pytest's `config.cache` interface: JSON values by key)."""

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}

    def get(self, key: str, default: Any) -> Any:
        return self.values.get(key, default)

    def set(self, key: str, value: Any) -> None:
        self.values[key] = value


if __name__ == "__main__":
    print(f"{SHIPPED}: {write_shipped()} case ids")
