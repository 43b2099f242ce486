"""The card's stored verdicts are keyed on everything a verdict depends on (`harness.card.verdicts`,
`CardRun.key`, `clients.contents`): each input edited grades its row again. A scenario file given
with `--scenarios FILE` was not hashed ("from stored verdicts (unchanged)" after an edit), nor
were warm or cold starts of a client program."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from harness import bounded
from harness.card import clients
from harness.card.catalogue import Catalogue
from harness.card.run import CardRun, Wanted, grade
from harness.card.verdicts import VerdictCache, files_digest
from harness.matrix.selection import Selection

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = """\
name: my-scenario
description: every call's id dropped on {on} fragments
steps:
- drop-field:
    field: id
    'on': {on}
"""


def graded_from_store(selection: Selection, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> bool:
    """Grade the `openai` row of this interpreter over `selection`; whether it came from the store."""
    capsys.readouterr()
    wanted = Wanted(names=("openai",), clients=False, pythons=(sys.executable,))
    card = grade(wanted, selection, timeout=None, reports=tmp_path / "reports", slots=1)
    assert [row.get("problem") for row in card["rows"]] == [None]
    return "from stored verdicts (unchanged)" in capsys.readouterr().err


@pytest.fixture
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("openai")
    monkeypatch.setenv("TOOLSTREAM_CACHE", str(tmp_path / "cache"))


@pytest.mark.slow  # three gradings of a row
@pytest.mark.usefixtures("own_cache")
def test_editing_a_scenario_file_grades_the_row_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = tmp_path / "mine.scenario.yaml"
    scenario.write_text(SCENARIO.format(on="all"))
    selection = Selection(cassettes=("openai-chat/single-call",), scenarios=(str(scenario),))
    assert not graded_from_store(selection, tmp_path, capsys)
    assert graded_from_store(selection, tmp_path, capsys)  # unchanged: stored
    scenario.write_text(SCENARIO.format(on="headers"))
    assert not graded_from_store(selection, tmp_path, capsys)  # was "from stored verdicts" before


@pytest.mark.slow  # three gradings of a row
@pytest.mark.usefixtures("own_cache")
def test_editing_a_cassette_file_grades_the_row_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cassette = tmp_path / "mine.yaml"
    original = (ROOT / "cassettes" / "openai-chat" / "single-call.yaml").read_text()
    cassette.write_text(original)
    selection = Selection(cassettes=(str(cassette),), scenarios=("original",))
    assert not graded_from_store(selection, tmp_path, capsys)
    assert graded_from_store(selection, tmp_path, capsys)
    cassette.write_text(original.replace("Paris", "Lyon"))
    assert not graded_from_store(selection, tmp_path, capsys)


@pytest.mark.parametrize(
    "given", ["--scenarios FILE", "--scenarios-dir", "--cassettes FILE", "--cassettes DIR"]
)
def test_a_row_is_keyed_on_the_contents_of_every_input_given_by_path(given: str, tmp_path: Path) -> None:
    scenario = tmp_path / "scenarios" / "mine.scenario.yaml"
    cassette = tmp_path / "cassettes" / "mine.yaml"
    for path, text in ((scenario, SCENARIO.format(on="all")), (cassette, "name: one\n")):
        path.parent.mkdir()
        path.write_text(text)
    edited, selection = {
        "--scenarios FILE": (scenario, Selection(scenarios=(str(scenario),))),
        "--scenarios-dir": (scenario, Selection(scenarios_dir=str(scenario.parent))),
        "--cassettes FILE": (cassette, Selection(cassettes=(str(cassette),))),
        "--cassettes DIR": (cassette, Selection(cassettes=(str(cassette.parent),))),
    }[given]

    def key() -> dict[str, object]:  # a new run each time: a run hashes its inputs once
        return CardRun(selection, None, tmp_path / "reports", None, 1).key("library openai 1", {}, selection)

    before = key()
    assert key() == before
    edited.write_text(edited.read_text() + "# edited\n")
    assert key() != before  # `--scenarios FILE` was the same before: its verdicts were reused


def test_a_client_row_is_keyed_on_warm_or_cold_starts_and_its_programs_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = Catalogue(tmp_path / "programs", tmp_path / "venvs")
    (client,) = [c for c in clients.CLIENTS.values() if c.name == "node-openai"]
    program = table.folder(client.name) / "agent.mjs"
    program.parent.mkdir(parents=True)
    program.write_text("console.log('one')\n")
    monkeypatch.delenv("TOOLSTREAM_WARM", raising=False)
    warm = clients.contents(table, client)
    monkeypatch.setenv("TOOLSTREAM_WARM", "0")
    cold = clients.contents(table, client)
    assert warm != cold  # the same before: a cold run's verdicts were taken for a warm one's
    program.write_text("console.log('two')\n")
    assert clients.contents(table, client) != cold


def test_an_input_hashed_into_a_key_is_read_within_bounds(tmp_path: Path) -> None:
    """A FIFO given as a cassette is hashed as unreadable, not waited on for ever."""
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    old, bounded.WAIT = bounded.WAIT, 0.2
    try:
        assert files_digest([fifo], tmp_path) == files_digest([fifo], tmp_path)
    finally:
        bounded.WAIT = old


def test_a_huge_number_in_durations_is_left_out(tmp_path: Path) -> None:
    """A forged 400-digit duration made `float()` overflow: the card exited 3."""
    (tmp_path / "durations.json").write_text('{"library a 1": ' + "9" * 400 + ', "library b 1": 2.5}')
    assert VerdictCache(tmp_path).durations() == {"library b 1": 2.5}
    (tmp_path / "durations.json").write_text('{"library a 1": Infinity, "library b 1": NaN}')
    assert VerdictCache(tmp_path).durations() == {}
