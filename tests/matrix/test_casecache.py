"""The built-case store: cases read back are the cases built; a damaged, truncated or foreign
file is rebuilt, never an error; writes are atomic and bounded; the off switches work."""

from __future__ import annotations

import copy
import dataclasses
import gc
import hashlib
import marshal
import multiprocessing
import os
import shutil
import time
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from harness import cache
from harness.cli import main
from harness.matrix import casecache
from harness.matrix.casecache import CaseStore, Encoder, StoredUnits
from harness.matrix.selection import Matrix, Selection
from harness.mutate.scenario import Case, DeferredResponse, case_with_events
from harness.oracle.expectation import classify
from tests._pytester_support import copy_cassettes, plugin_args, prepare

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[2]
PARALLEL = ROOT / "cassettes" / "openai-chat" / "parallel-2.yaml"
SCENARIOS = ("original", "cut-at-every-event", "parallel-calls-share-index-0", "F3-one-byte-reads")


def _copy(tmp_path: Path) -> Path:
    folder = tmp_path / "corpus" / "openai-chat"
    folder.mkdir(parents=True)
    return Path(shutil.copy(PARALLEL, folder / "parallel-2.yaml"))


def _cases(cassette: Path, store: CaseStore | None) -> list[Case]:
    return list(Matrix(Selection(cassettes=(cassette,), scenarios=SCENARIOS), store=store).all())


def _same(got: list[Case], want: list[Case]) -> None:
    assert [c.id for c in got] == [c.id for c in want]
    for a, b in zip(got, want, strict=True):
        fields = ("dialect", "cassette", "scenario", "seed", "point")
        assert [getattr(a, f) for f in fields] == [getattr(b, f) for f in fields]
        assert a.events == b.events and a.request == b.request and a.declared == b.declared
        assert a.expected == b.expected and a.expected.to_dict() == b.expected.to_dict()
        assert (a.complete, a.error) == (b.complete, b.error)
        assert a.response == b.response
        assert classify(a) == classify(b)  # a read-back case carries its class (`a.expectation`)


def _files(root: Path) -> list[Path]:
    """The files of built cases (beside them: the parsed scenario files, `scenarios.bin`)."""
    return sorted(p for p in (root / "cases").glob("*/*.bin") if p.name != "scenarios.bin")


def test_cases_read_back_are_the_cases_built_and_their_bytes_are_built_again_on_read(tmp_path: Path) -> None:
    cassette = _copy(tmp_path)
    built = _cases(cassette, None)
    filled = CaseStore(tmp_path / "store")
    assert [c.id for c in _cases(cassette, filled)] == [c.id for c in built]
    assert filled.misses and not filled.hits
    assert len(_files(tmp_path / "store")) == 1  # one file per cassette file
    store = CaseStore(tmp_path / "store")
    again = _cases(cassette, store)
    assert store.hits == filled.misses and not store.misses
    assert all(type(c.__dict__["_response"]) is DeferredResponse for c in again)  # no bytes stored
    assert all(c.expectation is not None for c in again) and not any(c.expectation for c in built)
    assert [(c.complete, c.error) for c in again] == [(c.complete, c.error) for c in built]
    assert all(type(c.__dict__["_response"]) is DeferredResponse for c in again)  # read without rendering
    _same(again, built)


def test_a_cassettes_declared_class_is_stored_with_its_cases(tmp_path: Path) -> None:
    # A case read back kept its class but not its cassette's `expected_class`: a case made from it
    # again (compare's shrinker: `case_with_events`) lost the recording's quirk and was spec.
    folder = tmp_path / "corpus" / "openai-chat"
    folder.mkdir(parents=True)
    cassette = Path(shutil.copy(ROOT / "cassettes/openai-chat/litellm-bridge-parallel-index0.yaml", folder))
    built = _cases(cassette, CaseStore(tmp_path / "store"))
    again = _cases(cassette, CaseStore(tmp_path / "store"))
    assert again[0].expectation is not None  # read back
    _same(again, built)
    assert all(c.declared is not None and c.declared.case_class == "quirk" for c in again)
    remade = case_with_events(again[0], again[0].events)
    assert classify(remade) == classify(built[0]) and str(classify(remade).case_class) == "quirk"


def test_bytes_rendered_before_storing_are_stored(tmp_path: Path) -> None:
    cassette = _copy(tmp_path)
    matrix = Matrix(Selection(cassettes=(cassette,), scenarios=SCENARIOS), store=CaseStore(tmp_path))
    rendered = [c for c in matrix.all() if c.response.status]  # read, as a byte-level accumulator does
    again = _cases(cassette, CaseStore(tmp_path))
    assert not any(type(c.__dict__["_response"]) is DeferredResponse for c in again)
    _same(again, rendered)


def test_equal_events_are_written_once_and_their_copies_are_not_kept_while_writing() -> None:
    # Mutations copy payloads that end up equal: a big recording's file held a copy of each until
    # it was written (1.9 GB for 20,000 events through the bundled scenarios).
    case = _cases(PARALLEL, None)[0]

    def copied() -> Case:
        twin = copy.copy(case)
        twin.__dict__["events"] = tuple(
            dataclasses.replace(e, payload=copy.deepcopy(e.payload)) for e in case.events
        )
        return twin

    sizes = {}
    for n in (1, 50):
        twins = [copied() for _ in range(n)]
        tracemalloc.start()
        try:
            encoder = Encoder()
            records = [encoder.case(c, classify(c)) for c in twins]
            sizes[n] = tracemalloc.get_traced_memory()[0]
        finally:
            tracemalloc.stop()
        assert len({id(r[6]) for r in records}) == 1  # one record of the events for all
    assert sizes[50] < 10 * sizes[1]  # per copy, a reference to the shared record (was 24x)


def _damage(path: Path, how: str) -> None:
    data = path.read_bytes()
    if how == "flipped":
        path.write_bytes(data[:-10] + bytes([data[-10] ^ 0xFF]) + data[-9:])
    elif how == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif how == "empty":
        path.write_bytes(b"")
    elif how == "foreign":
        path.write_bytes(b"\x89PNG\r\n\x1a\n" + os.urandom(200))
    else:  # well-formed, checksum right, not shaped as our records
        body = marshal.dumps({key: ("junk", 1) for key in marshal.loads(data[51:])}, 4)
        path.write_bytes(b"toolstream-cases 1\n" + hashlib.sha256(body).digest() + body)


@pytest.mark.parametrize("how", ["flipped", "truncated", "empty", "foreign", "misshapen"])
def test_a_damaged_file_is_rebuilt_never_an_error_nor_a_wrong_case(tmp_path: Path, how: str) -> None:
    cassette = _copy(tmp_path)
    built = _cases(cassette, CaseStore(tmp_path / "store"))
    (path,) = _files(tmp_path / "store")
    _damage(path, how)
    store = CaseStore(tmp_path / "store")
    _same(_cases(cassette, store), built)
    assert store.misses and not store.hits
    healed = CaseStore(tmp_path / "store")  # rewritten whole
    _same(_cases(cassette, healed), built)
    assert healed.hits and not healed.misses


def test_a_changed_cassette_is_built_again(tmp_path: Path) -> None:
    cassette = _copy(tmp_path)
    _cases(cassette, CaseStore(tmp_path / "store"))
    text = cassette.read_text()
    assert "get_weather" in text
    cassette.write_text(text.replace("get_weather", "get_wether"))
    store = CaseStore(tmp_path / "store")
    cases = _cases(cassette, store)
    assert store.misses and not store.hits
    assert cases[0].expected.tool_calls[0].name == "get_wether"
    assert len(_files(tmp_path / "store")) == 2  # both versions kept (content-keyed), within the cap


def test_the_most_recently_used_code_folders_are_kept_and_the_size_is_capped(tmp_path: Path) -> None:
    codes = tmp_path / "store" / "cases"
    stale = []
    for n, age in enumerate((400, 300, 200)):  # other harness versions' folders, the last used most recently
        folder = codes / f"{n:024x}"
        folder.mkdir(parents=True)
        (folder / "x.bin").write_bytes(b"old")
        os.utime(folder, (time.time() - age, time.time() - age))
        stale.append(folder)
    cassette = _copy(tmp_path)
    _cases(cassette, CaseStore(tmp_path / "store"))
    assert [folder.exists() for folder in stale] == [False, True, True]  # FOLDERS_KEPT is 3
    (path,) = [p for p in _files(tmp_path / "store") if p.name != "x.bin"]
    size = path.stat().st_size
    other = Path(shutil.copy(PARALLEL, cassette.with_name("again.yaml")))  # another name: another key
    capped = CaseStore(tmp_path / "store", max_bytes=size + size // 2)
    _cases(other, capped)
    assert capped.misses and not capped.hits  # written, so the cap was applied
    assert not any((folder / "x.bin").exists() for folder in stale)  # other versions' files go first
    (kept,) = _files(tmp_path / "store")  # then the older file of ours, to make room
    assert kept != path


def _writer(root: str, key: str, n: int) -> None:
    store = CaseStore(root)
    for i in range(40):
        store.write(key, {f"{n}-{i}": (("x" * 5000, i),)})


@pytest.mark.slow
def test_two_writers_racing_leave_a_whole_file(tmp_path: Path) -> None:
    context = multiprocessing.get_context("spawn")
    writers = [context.Process(target=_writer, args=(str(tmp_path), "k" * 32, n)) for n in range(2)]
    for w in writers:
        w.start()
    for w in writers:
        w.join(60)
        assert w.exitcode == 0
    units = CaseStore(tmp_path).read("k" * 32)
    assert units and all(v[0][0] == "x" * 5000 for v in units.values())
    assert not [p for p in (tmp_path / "cases").rglob("*.tmp")]  # no temporary file left behind


def test_where_it_lives_and_how_to_turn_it_off(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(cache.ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert casecache.cache_dir() == tmp_path / "xdg" / "toolstream"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert casecache.cache_dir() == tmp_path / "home" / ".cache" / "toolstream"
    monkeypatch.setenv(cache.ENV, "")  # empty is unset, as for the report card's environments
    assert casecache.cache_dir() == tmp_path / "home" / ".cache" / "toolstream"
    monkeypatch.setenv(cache.ENV, str(tmp_path / "mine"))
    store = casecache.default_store()
    assert store is not None and store.root == tmp_path / "mine"
    monkeypatch.setenv(casecache.OFF, "1")
    assert casecache.default_store() is None
    assert Matrix(Selection(cassettes=(PARALLEL,), scenarios=("original",))).store is None


@pytest.mark.parametrize("command", ["check", "compare"])
def test_the_cli_flag_turns_it_off(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, command: str) -> None:
    monkeypatch.setenv(cache.ENV, str(tmp_path))
    monkeypatch.setenv(casecache.OFF, "")  # the flag sets it for this process: undone after the test
    who = ["--accumulator", "reference"] if command == "check" else ["reference", "reference"]
    argv = [command, *who, "--cassettes", str(PARALLEL), "--scenarios", "original", "--timeout", "0"]
    argv += ["--out", str(tmp_path / "out.json")] if command == "compare" else []
    assert main([*argv, "--no-case-cache"]) == 0
    assert not _files(tmp_path)
    assert os.environ[casecache.OFF]  # in the environment, so worker processes agree
    monkeypatch.setenv(casecache.OFF, "")
    assert main(argv) == 0
    assert _files(tmp_path)


@pytest.mark.slow  # two pytest sessions in subprocesses
def test_the_plugin_option_turns_it_off(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    prepare(pytester, monkeypatch)
    copy_cassettes(pytester, "openai-chat/parallel-2")
    store = pytester.path / "store"
    monkeypatch.setenv(cache.ENV, str(store))
    args = [*plugin_args(), "--toolstream-cassette-dir", "corpus", "--toolstream-scenarios", "original"]
    args += ["--toolstream-accumulator", "reference", "-p", "no:randomly"]
    pytester.runpytest_subprocess(*args, "--toolstream-no-case-cache").assert_outcomes(passed=1)
    assert not _files(store)
    pytester.runpytest_subprocess(*args).assert_outcomes(passed=1)
    assert _files(store)


def test_scenario_files_are_read_back_as_parsed(tmp_path: Path) -> None:
    from harness.matrix.keys import scenario_key
    from harness.mutate.scenario import load_scenarios

    parsed = load_scenarios()
    first = casecache.ScenarioFiles(CaseStore(tmp_path))
    assert load_scenarios(load=first) == parsed
    first.save()
    files = casecache.ScenarioFiles(CaseStore(tmp_path))
    assert len(files.known) == len(parsed)
    again = load_scenarios(load=files)
    assert not files.new  # every one read back
    assert again == parsed and [s.path for s in again] == [s.path for s in parsed]
    assert [scenario_key(s, s.seeds) for s in again] == [scenario_key(s, s.seeds) for s in parsed]
    assert [s.meaning for s in again] == [s.meaning for s in parsed]


def test_a_matrix_goes_when_dropped_and_what_it_built_is_written(tmp_path: Path) -> None:
    import gc
    import weakref

    cassette = _copy(tmp_path)
    matrix = Matrix(Selection(cassettes=(cassette,), scenarios=SCENARIOS), store=CaseStore(tmp_path))
    assert matrix.cases(matrix.units()[0])  # built, not yet flushed
    gone = weakref.ref(matrix)
    del matrix
    gc.collect()
    assert gone() is None  # its finalizer holds nothing of it
    assert _files(tmp_path)  # and wrote what it built


SWITCHED_OFF_BETWEEN_RUNS = """
import os, pathlib, sys
from harness import Selection, run_matrix
from harness.matrix import casecache

def files(folder):
    return len(list(pathlib.Path(folder).rglob("*.bin")))

if __name__ == "__main__":
    first, second, one, other = sys.argv[1:5]
    os.environ["TOOLSTREAM_CACHE"] = first
    run_matrix("reference", Selection(cassettes=(one,), scenarios=("original",)), jobs=1, timeout=30.0)
    before = files(first)
    casecache.turn_off()
    os.environ["TOOLSTREAM_CACHE"] = second
    run_matrix("reference", Selection(cassettes=(other,), scenarios=("original",)), jobs=1, timeout=30.0)
    print(before, files(first), files(second))
"""


def test_workers_started_after_the_store_is_turned_off_leave_it_alone(tmp_path: Path) -> None:
    # A pool's workers fork from the forkserver its first pool started, whose environment is the
    # one of that moment: they are handed the parent's environment as it is at their start.
    import subprocess
    import sys

    script = tmp_path / "twice.py"
    script.write_text(SWITCHED_OFF_BETWEEN_RUNS)
    single = ROOT / "cassettes" / "openai-chat" / "single-call.yaml"
    argv = [sys.executable, str(script), str(tmp_path / "a"), str(tmp_path / "b"), str(single), str(PARALLEL)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    before, after, second = map(int, done.stdout.split())
    assert before > 0 and after == before and second == 0


def test_built_cases_are_made_records_once_they_hold_too_many_events(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A long recording's first run kept every unit's cases, as objects, until its file was written.
    monkeypatch.setattr(casecache, "_PENDING_EVENTS", 60)
    waiting: list[int] = []
    writes: list[int] = []
    put, write = StoredUnits.put, CaseStore.write

    def putting(self: StoredUnits, file_key: str, unit_key: str, cases: list[Case]) -> None:
        put(self, file_key, unit_key, cases)
        waiting.append(self.files[file_key].held)

    def counted(self: CaseStore, key: str, units: dict[str, Any], **kwargs: Any) -> Any:
        if key != "scenarios":  # the parsed scenario files, beside the cases
            writes.append(len(units))
        return write(self, key, units, **kwargs)

    monkeypatch.setattr(StoredUnits, "put", putting)
    monkeypatch.setattr(CaseStore, "write", counted)
    cassette = _copy(tmp_path)
    matrix = Matrix(Selection(cassettes=(cassette,), scenarios=SCENARIOS), store=CaseStore(tmp_path))
    rendered = [c for c in matrix.all() if c.response.status]  # read, as a byte-level accumulator does
    matrix.flush()
    assert max(waiting) > 60 and waiting.index(max(waiting)) < len(waiting) - 1  # then fewer again
    assert len(writes) == 1  # the file once, with every unit
    store = CaseStore(tmp_path)
    again = _cases(cassette, store)
    assert store.hits >= len(SCENARIOS) and not store.misses  # every unit read back
    assert not any(type(c.__dict__["_response"]) is DeferredResponse for c in again)  # bytes kept
    _same(again, rendered)


def test_the_encoder_lets_go_of_what_only_it_holds() -> None:
    case = _cases(PARALLEL, None)[0]
    twin = copy.copy(case)
    twin.__dict__["events"] = tuple(
        dataclasses.replace(e, payload=copy.deepcopy(e.payload)) for e in case.events
    )
    encoder = Encoder()
    records = [encoder.case(c, classify(c)) for c in (case, twin)]
    assert records[0][6] is records[1][6]  # one record of equal events
    del twin
    encoder.release()
    held = {id(found[0]) for found in encoder._memo.values()}
    assert id(case.events) in held and all(id(e) in held for e in case.events)  # still used: kept
    alone = Encoder()
    alone.case(case, classify(case))
    assert len(encoder._memo) == len(alone._memo)  # the twin's events went, what the case holds stays
    assert encoder.case(case, classify(case)) == records[0]


def test_no_cyclic_collection_runs_while_a_unit_is_built(monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.matrix import selection

    seen: list[bool] = []
    cases_for = selection.cases_for

    def building(*args: Any, **kwargs: Any) -> list[Case]:
        seen.append(gc.isenabled())
        return cases_for(*args, **kwargs)

    monkeypatch.setattr(selection, "cases_for", building)
    assert gc.isenabled()
    _cases(PARALLEL, None)
    assert seen and not any(seen) and gc.isenabled()


def test_a_file_is_read_again_before_writing_only_when_another_process_wrote_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = CaseStore(tmp_path)
    first = store.write("k", {"a": ()})
    assert first is not None and store.stamp("k") == first
    reads: list[str] = []
    read = CaseStore.read
    monkeypatch.setattr(CaseStore, "read", lambda self, key: reads.append(key) or read(self, key))
    second = store.write("k", {"a": (), "b": ()}, unchanged=first)  # ours, as we left it: not read
    assert reads == [] and second != first
    CaseStore(tmp_path).write("k", {"c": ()})  # another process adds one meanwhile: merged
    store.write("k", {"a": (), "b": (), "d": ()}, unchanged=second)
    assert reads == ["k", "k"] and sorted(read(store, "k")) == ["a", "b", "c", "d"]
