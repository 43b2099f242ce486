"""The shipped case ids: the bundled matrix listed without running a pipeline, byte-identical
to the ids of the built cases."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from harness.matrix import catalog
from harness.matrix.selection import Matrix, Selection
from harness.plugin.items import CaseCatalog

REWRITE = "stale: run `python -m harness.matrix.catalog` and commit harness/matrix/case-ids.json.gz"


@pytest.mark.slow  # builds every case of the bundled matrix
def test_the_shipped_ids_are_the_built_cases_ids(tmp_path: Path) -> None:
    built = {case.id: case.dialect for case in Matrix(Selection()).all()}
    fresh = tmp_path / "case-ids.json.gz"
    assert catalog.write_shipped(fresh) == len(built)
    assert gzip.decompress(fresh.read_bytes()) == gzip.decompress(catalog.SHIPPED.read_bytes()), REWRITE
    listed = CaseCatalog()  # no session cache: a fresh clone
    assert list(listed.ids(Selection())) == list(built)  # same ids, same order
    assert listed.ids(Selection()) == built
    assert not listed._built[Selection()], "a case was built only to be listed"


def test_a_subset_of_the_bundled_matrix_is_listed_without_building_and_runs_the_same() -> None:
    selection = Selection(scenarios=("original", "cut-at-every-event", "F3-one-byte-reads"), dialects=())
    listed = CaseCatalog()
    ids = listed.ids(selection)
    assert not listed._built[selection], REWRITE
    built = list(Matrix(selection).all())
    assert list(ids) == [c.id for c in built]
    for case in built[::97]:  # built by id, each with the other points of its sweep
        assert listed.case(selection, case.id) == case


def test_ids_not_shipped_are_computed_once_and_kept_in_the_session_cache(tmp_path: Path) -> None:
    (tmp_path / "openai-chat").mkdir()
    source = Matrix(Selection()).cassette_files()[0]
    copy = tmp_path / "openai-chat" / "mine.yaml"  # not a shipped name: listed by building
    copy.write_bytes(source.read_bytes())
    selection = Selection(cassettes=(str(tmp_path),), scenarios=("original", "cut-at-every-event"))
    store = catalog._Store()
    first = CaseCatalog(store)
    ids = first.ids(selection)
    assert ids and set(first._built[selection]) == set(ids)
    assert json.dumps(store.values)  # plain JSON, as pytest's cache keeps it
    later = CaseCatalog(store)
    assert later.ids(selection) == ids and not later._built[selection]


def test_a_scenario_shipped_with_no_cases_for_a_file_is_not_built_again() -> None:
    # A scenario that makes no case of a file is shipped as an empty list: an answer, not a miss
    # (read as a miss, every session ran those pipelines again and wrote them to its cache).
    selection = Selection(cassettes=(str(Matrix(Selection()).cassette_files()[0].parent),))
    matrix = Matrix(selection)
    empty = [
        key
        for path in matrix.cassette_files()
        for key, pairs in catalog._shipped()[catalog.file_key(matrix, path)].items()
        if pairs == []
    ]
    assert empty, "no shipped scenario without cases for this folder: pick another"
    store = catalog._Store()
    assert catalog.list_ids(matrix, store) and store.values == {}
