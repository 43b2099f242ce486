"""Case selection: one rule for scenario paths, each case once, ids that rebuild their case; the
CLI's runner and the plugin's catalogue see the same cases."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from harness.cassettes.corpus import bundled
from harness.errors import ScenarioError, UsageError
from harness.matrix.catalog import file_key
from harness.matrix.keys import scenario_key
from harness.matrix.runner import run_matrix
from harness.matrix.selection import ORIGINAL, Matrix, Selection, build_case, cases
from harness.mutate.scenario import load_scenarios, scenario_from_data
from harness.plugin.items import CaseCatalog
from tests._runner_accumulators import PARALLEL, SINGLE

SCENARIOS = bundled("scenarios")


def test_original_comes_first_when_no_scenario_is_named() -> None:
    assert Matrix(Selection()).scenarios[0] is ORIGINAL


def test_paths_and_lists_are_normalised_to_plain_strings() -> None:
    selection = Selection(cassettes=[Path(SINGLE)], scenarios=["original"], scenarios_dir=SCENARIOS)  # type: ignore[arg-type]
    assert selection.cassettes == (SINGLE,) and selection.scenarios == ("original",)
    assert selection.scenarios_dir == str(SCENARIOS)
    assert hash(selection) == hash(
        Selection(cassettes=(SINGLE,), scenarios=("original",), scenarios_dir=str(SCENARIOS))
    )


def test_one_rule_for_scenario_paths(tmp_path: Path) -> None:
    file = SCENARIOS / "parallel-calls-share-index-0.yaml"
    by_file = Matrix(Selection(cassettes=(PARALLEL,), scenarios=(str(file),))).scenarios
    by_name = Matrix(Selection(cassettes=(PARALLEL,), scenarios=("parallel-calls-share-index-0",))).scenarios
    assert [s.name for s in by_file] == [s.name for s in by_name] == ["parallel-calls-share-index-0"]
    folder = tmp_path / "mine"
    folder.mkdir()
    shutil.copy(file, folder / "a.yaml")
    assert [s.name for s in Matrix(Selection(scenarios=(str(folder),))).scenarios] == [by_file[0].name]
    # A `.yaml` item is a file even when it is missing: the error says so, in the CLI and the plugin.
    missing = Selection(cassettes=(PARALLEL,), scenarios=(str(tmp_path / "typo.yaml"),))
    with pytest.raises(ScenarioError, match="no such scenario file"):
        run_matrix("reference", missing)
    with pytest.raises(ScenarioError, match="no such scenario file"):
        CaseCatalog().cases(missing)


def test_each_scenario_cassette_and_case_once(tmp_path: Path) -> None:
    file = str(SCENARIOS / "parallel-calls-share-index-0.yaml")
    folder = str(Path(PARALLEL).parent)
    twice = Selection(
        cassettes=(folder, PARALLEL), scenarios=("parallel-calls-share-index-0", file, "original")
    )
    once = Selection(cassettes=(folder,), scenarios=("parallel-calls-share-index-0", "original"))
    ids = [c.id for c in cases(twice)]
    assert ids == [c.id for c in cases(once)] and len(ids) == len(set(ids))
    assert [s.name for s in Matrix(twice).scenarios] == ["parallel-calls-share-index-0", "original"]
    other = tmp_path / "other.yaml"
    other.write_text("name: parallel-calls-share-index-0\nsteps: [interleave]\n", encoding="utf-8")
    with pytest.raises(ScenarioError, match="also the name of another"):
        Matrix(Selection(scenarios=(file, str(other))))


def test_the_runner_and_the_plugin_see_the_same_cases() -> None:
    selection = Selection(
        cassettes=(PARALLEL, SINGLE), scenarios=("original", "cut-at-every-event", "F3-single-read"), seeds=2
    )
    ran = [r.id for r in run_matrix("reference", selection).results]
    assert ran == list(CaseCatalog().cases(selection)) == [c.id for c in cases(selection)]


def test_case_ids_replay_identical_streams() -> None:
    case_id = "openai-chat/parallel-2::profile-gateway-index-0-rechunked::s2"
    first, again = build_case(case_id), build_case(case_id)
    assert first.id == case_id
    assert [c.data for c in first.response.chunks] == [c.data for c in again.response.chunks]
    other = build_case("openai-chat/parallel-2::profile-gateway-index-0-rechunked::s1")
    assert [c.data for c in other.response.chunks] != [c.data for c in first.response.chunks]


def test_sweep_expands_into_one_case_per_cut_point() -> None:
    cut = next(s for s in load_scenarios() if s.name == "cut-at-every-event")
    found = list(Matrix(Selection(cassettes=(PARALLEL,), seeds=1), [cut]).all())
    assert [c.id.rsplit("::", 1)[1] for c in found] == [f"e{n}" for n in range(len(found))]
    one = build_case(found[7].id)
    assert one.id.endswith("::s0::e7") and one.expected == found[7].expected


def test_scenarios_skip_cassettes_they_do_not_apply_to() -> None:
    scenario = scenario_from_data({"name": "x", "dialects": ["openai-chat"], "steps": ["interleave"]})
    anthropic = Selection(cassettes=(str(bundled("cassettes") / "anthropic"),))
    assert list(Matrix(anthropic, [scenario]).all()) == []
    assert (
        list(Matrix(Selection(cassettes=(SINGLE,)), [scenario]).all()) == []
    )  # one call: nothing to interleave
    with pytest.raises(ScenarioError, match="does not apply"):
        build_case("openai-chat/single-call::interleaved-tool-blocks::s0")


def test_bad_case_ids() -> None:
    with pytest.raises(ScenarioError, match="expected cassette::scenario::s<seed>"):
        build_case("openai-chat/parallel-2::cut")
    with pytest.raises(ScenarioError, match="no cassette"):
        build_case("openai-chat/nope::cut-at-every-event::s0")
    with pytest.raises(ScenarioError, match="unknown scenario"):
        build_case("openai-chat/parallel-2::nope::s0")


def test_an_original_case_id_rebuilds_whatever_scenarios_are_selected() -> None:
    selection = Selection(cassettes=(SINGLE,), scenarios=("F3-single-read",))
    case = build_case("openai-chat/single-call::original::s0", selection)
    assert case.id == "openai-chat/single-call::original::s0" and case.scenario == "original"


class _Cache:
    """pytest's `config.cache` as the catalog uses it: JSON values by key, kept between sessions."""

    def __init__(self) -> None:
        self.values: dict[str, object] = {}

    def get(self, key: str, default: object) -> object:
        return self.values.get(key, default)

    def set(self, key: str, value: object) -> None:
        self.values[key] = value


def test_ids_alone_are_the_built_cases_ids_and_each_case_is_built_when_asked(tmp_path: Path) -> None:
    selection = Selection(
        cassettes=(PARALLEL, SINGLE, str(bundled("cassettes") / "anthropic")),
        scenarios=("original", "cut-at-every-event", "F3-single-read", "parallel-calls-share-index-0"),
        seeds=2,
    )
    built = cases(selection)
    expected = {case.id: case for case in built}
    cache = _Cache()
    first = CaseCatalog(cache)
    files = Matrix(selection).cassette_files()
    # Listed by building (seeds=2 is not what the shipped ids hold), one entry per cassette file.
    assert list(first.ids(selection)) == list(expected) and len(cache.values) == len(files) > 1
    later = CaseCatalog(cache)  # another session or xdist worker: the ids without any pipeline
    assert list(later.ids(selection)) == list(expected) and not later._built[selection]
    assert later.ids(selection) == {i: c.dialect for i, c in expected.items()}  # each id with its dialect
    for case_id in list(expected)[::7]:
        assert later.case(selection, case_id) == expected[case_id]  # same events, reads, expectation
    with pytest.raises(UsageError, match="not in the selected matrix"):
        later.case(selection, "openai-chat/single-call::F3-single-read::s9")
    # Other seeds, another dialect filter or another cassette byte give another key: a stale
    # list is never used.
    scenario = Matrix(selection).scenarios[0]
    assert scenario_key(scenario, range(2)) != scenario_key(scenario, range(1))
    matrix = Matrix(selection)
    only_anthropic = Matrix(replace(selection, dialects=("anthropic",)))
    assert file_key(matrix, files[0]) != file_key(only_anthropic, files[0])
    copy = tmp_path / "openai-chat" / files[0].name
    copy.parent.mkdir()
    copy.write_bytes(files[0].read_bytes())
    same = file_key(Matrix(Selection(cassettes=(str(copy.parent),))), copy)
    assert same == file_key(matrix, files[0])  # the same bytes and name anywhere: the same key
    copy.write_bytes(files[0].read_bytes() + b"\n")
    assert file_key(Matrix(Selection(cassettes=(str(copy.parent),))), copy) != same

