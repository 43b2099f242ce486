from __future__ import annotations

import functools
from dataclasses import replace
from pathlib import Path

import pytest

from harness.cassettes.corpus import cassette_paths
from harness.cassettes.outcome import diff
from harness.errors import ScenarioError
from harness.matrix.selection import Matrix, Selection
from harness.mutate import Meaning
from harness.mutate.scenario import (
    Scenario,
    find_scenario,
    is_scenario_path,
    load_scenario,
    load_scenarios,
    scenario_from_data,
)
from harness.wire import dialects
from harness.wire.codecs import decode_all


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "text,message",
    [
        ("name: x\nsteps: [{nope: {}}]\n", "s.yaml: steps[0]: unknown mutation 'nope'"),
        (
            "name: x\nsteps: [{split-args: {size: a}}]\n",
            "s.yaml: steps[0]: split-args: parameter 'size' must be int",
        ),
        (
            "name: x\nsteps: [{split-args: {sise: 1}}]\n",
            "s.yaml: steps[0]: split-args: unknown parameter 'sise'",
        ),
        ("name: x\ndialects: [klingon]\nsteps: [cut]\n", "s.yaml: dialects: unknown dialect 'klingon'"),
        ("name: x\nsteps: [cut]\nseeds: -1\n", "s.yaml: seeds: must be"),
        (
            "name: x\nsteps: [cut]\nmeaning: preserving\n",
            "s.yaml: meaning: declared preserving, but step 'cut'",
        ),
        ("name: x\nsteps: [cut]\ncolour: red\n", "s.yaml: colour: unknown field"),
        ("steps: [cut]\n", "s.yaml: name: must be"),
        ("name: [x\n", "s.yaml:2: broken YAML"),
    ],
)
def test_bad_scenarios_fail_in_one_line_naming_file_and_field(
    tmp_path: Path, text: str, message: str
) -> None:
    with pytest.raises(ScenarioError) as info:
        load_scenario(_write(tmp_path, text))
    assert message in str(info.value) and "\n" not in str(info.value)


def test_library_loads_and_round_trips() -> None:
    library = load_scenarios()
    assert len(library) >= 60
    for found in library:
        again = scenario_from_data(found.to_data())
        assert again.steps == found.steps and again.dialects == found.dialects


def test_library_names_the_seeds_and_every_stream_class() -> None:
    names = {s.name for s in load_scenarios()}
    for seed_shape in (
        "parallel-calls-share-index-0",
        "same-index-fragments-in-one-delta",
        "idless-continuation-after-empty-args",
        "later-call-has-shorter-id",
        "interleaved-tool-blocks",
        "truncated-mid-args",
        "cut-at-every-event",
    ):
        assert seed_shape in names
    classes = {name.split("-")[0] for name in names}
    expected = set(
        [
            "A1",
            "A2",
            "A3",
            "A4",
            "A5",
            "A6",
            "A7",
            "A10",
            "A11",
            "B1",
            "B2",
            "B3",
            "B5",
            "B6",
            "B7",
            "B8",
            "B9",
            "B10",
            "C1",
            "C2",
            "C3",
            "C4",
            "C5",
            "C6",
            "C7",
            "D1",
            "D2",
            "D4",
            "D5",
            "D6",
            "D7",
            "D8",
            "D9",
            "D10",
            "E1",
            "E2",
            "E3",
            "E5",
            "E6",
            "E7",
            "F1",
            "F2",
            "F3",
            "F4",
            "F5",
            "F6",
            "F8",
            "F9",
        ]
    )
    assert expected <= classes


def test_a_scenario_argument_is_a_path_by_its_suffix_or_an_existing_folder(tmp_path: Path) -> None:
    assert is_scenario_path("mine.yaml") and is_scenario_path("x/mine.yml") and is_scenario_path(tmp_path)
    assert not is_scenario_path("parallel-calls-share-index-0")
    with pytest.raises(ScenarioError, match="no such scenario file"):
        find_scenario(str(tmp_path / "typo.yaml"))
    path = _write(tmp_path, "name: mine\nsteps: [interleave]\n")
    assert find_scenario(str(path)).name == "mine"


def test_meaning_is_derived_from_steps() -> None:
    preserving = scenario_from_data({"name": "p", "steps": ["interleave"]})
    changing = scenario_from_data({"name": "c", "steps": ["interleave", "cut"]})
    assert (preserving.meaning, changing.meaning) == (Meaning.PRESERVING, Meaning.CHANGING)
    assert isinstance(preserving, Scenario)


# One test per scenario (not one loop over the library) so xdist spreads the work.
LIBRARY = {scenario.name: scenario for scenario in load_scenarios()}
LIBRARY_NAMES = list(LIBRARY)
# Scenarios that answer what no bundled request asks for: they apply to none of the corpus (their
# cases over requests that ask: tests/mutate/test_mutations_valid_for_request.py).
UNASKED = {"C7-n-greater-than-1-choices": "no bundled request asks for n>1 choices"}


@functools.cache
def _library_matrix() -> Matrix:
    """The whole library, two seeds each, over every bundled cassette: one matrix per process, so
    the cassettes are read once, not once per scenario. No case store: every case is built here,
    through the pipeline, bytes included."""
    scenarios = [replace(scenario, seeds=scenario.seeds[:2]) for scenario in LIBRARY.values()]
    return Matrix(Selection(), scenarios, store=None)


@pytest.mark.slow
@pytest.mark.parametrize("name", LIBRARY_NAMES)
def test_every_scenario_meets_the_reference_on_every_cassette(name: str) -> None:
    """Done-when: the whole library x corpus, two seeds each, meets the stated expectation."""
    matrix = _library_matrix()
    applied = 0
    failures = []
    cases = (case for unit in matrix.units() if unit.scenario == name for case in matrix.cases(unit))
    for case in cases:
        applied += 1
        d = dialects.get(case.dialect)
        acc = d.accumulator()
        for wire in decode_all(d.codec(), (c.data for c in case.response.chunks)):
            acc.feed(d.parse(wire))
        got = acc.close(None if case.response.complete else case.response.error)
        problems = diff(case.expected, got)
        if problems:
            failures.append(f"{case.id}: {problems[0]}")
    assert failures == []
    if name in UNASKED:
        assert not applied, f"{name} applies now: {UNASKED[name]} was true"
    else:
        assert applied, "the scenario applies to no cassette"


def test_the_library_and_the_corpus_are_the_ones_the_matrix_covers() -> None:
    assert len(LIBRARY_NAMES) == len(set(LIBRARY_NAMES)) > 40
    assert len(cassette_paths()) > 40


@pytest.mark.parametrize("seed,position", [(0, 0), (3, 1), (2**63 - 1, 7)])
def test_a_step_rng_draws_what_a_random_seeded_with_its_text_draws(seed: int, position: int) -> None:
    import pickle
    import random

    from harness.mutate import build
    from harness.mutate.scenario import step_rng

    step = build("rechunk")
    text = f"toolstream/{seed}/{position}/{step.name}"

    def draws(rng: random.Random) -> list[object]:
        items = list(range(30))
        rng.shuffle(items)
        return [
            *(rng.randint(1, 64), rng.choice("abcdef"), rng.sample(range(100), 5), items, rng.random()),
            *(rng.getrandbits(70), rng.gauss(0, 1), rng.uniform(0, 1), rng.randbytes(5), rng.getstate()),
        ]

    assert draws(step_rng(seed, position, step)) == draws(random.Random(text))
    held = step_rng(seed, position, step).getrandbits  # held before the first draw, as loops do
    plain = random.Random(text)
    assert [held(9) for _ in range(20)] == [plain.getrandbits(9) for _ in range(20)]
    copied = pickle.loads(pickle.dumps(step_rng(seed, position, step)))
    assert copied.random() == random.Random(text).random()


@pytest.mark.slow
def test_a_matrix_shares_first_steps_and_builds_what_each_pipeline_builds_alone() -> None:
    """`known`: what steps that drew nothing made of a recording is reused by later scenarios and
    seeds; every case, its events, expectation and bytes, is the one a lone pipeline builds."""
    from harness.mutate.scenario import cases_for

    matrix = Matrix(Selection(cassettes=[str(Path("cassettes/openai-chat").resolve())]), store=None)
    shared = 0
    for unit in matrix.units():
        assert unit.cassette is not None and unit.scenario is not None and unit.seed is not None
        built = matrix.cases(unit)
        alone = [
            case
            for source in matrix.sources(unit.cassette)
            for case in cases_for(source, matrix.by_name[unit.scenario], unit.seed)
        ]
        assert [c.id for c in built] == [c.id for c in alone]
        for a, b in zip(built, alone, strict=True):
            assert (a.events, a.expected) == (b.events, b.expected)
            assert [c.data for c in a.response.chunks] == [c.data for c in b.response.chunks], a.id
        shared = max(shared, sum(len(known) for _, known in matrix._known.values()))
    assert shared > 0, "some first steps must have been kept for this to mean anything"


def test_first_steps_are_kept_while_a_later_scenario_begins_with_them_and_made_again_out_of_order() -> None:
    """`Matrix._known` holds what first steps made only while a scenario still to come in matrix
    order begins with them (a big recording's streams kept for none took most of a run's
    memory); units in another order are built the same, their first steps made again."""
    selection = Selection(cassettes=[str(Path("cassettes/openai-chat/parallel-2.yaml").resolve())])
    matrix = Matrix(selection, store=None)
    place = {s.name: n for n, s in enumerate(matrix.scenarios)}
    first: dict[object, int] = {}  # first steps -> the first and the last scenario they begin
    last: dict[object, int] = {}
    for n, scenario in enumerate(matrix.scenarios):
        for end in range(1, len(scenario.steps) + 1):
            first.setdefault(tuple(scenario.steps[:end]), n)
            last[tuple(scenario.steps[:end])] = n
    reused = 0
    units = matrix.units()
    built = {}
    for unit in units:
        assert unit.scenario is not None
        before = {k for _, known in matrix._known.values() for k in known}
        built[unit] = [(c.id, c.events, c.expected) for c in matrix.cases(unit)]
        held = {k for _, known in matrix._known.values() for k in known}
        assert all(last[k] >= place[unit.scenario] for k in held), unit
        reused += sum(1 for k in before & held if first[k] < place[unit.scenario])
    assert reused, "some first steps must have served a later scenario for this to mean anything"
    again = Matrix(selection, store=None)
    for unit in reversed(units):
        assert [(c.id, c.events, c.expected) for c in again.cases(unit)] == built[unit], unit
