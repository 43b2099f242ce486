"""`toolstream report-card` grading its rows at once (`harness.card.schedule`) and keeping their
verdicts from one run to the next (`harness.card.verdicts`).

The scheduler is driven with rows that sleep and record what runs when; the whole command runs
with each library row's adapter swapped for the reference accumulator (in this process: fast), so
serial and parallel cards can be compared and the cache hit, missed and invalidated in seconds.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness.card import verdicts
from harness.card.environments import SideEnvironment
from harness.card.schedule import RowJob, RowSlots, Slots, order, run_rows
from harness.card.verdicts import VerdictCache
from harness.cli import main

ROOT = Path(__file__).resolve().parents[2]

# Two libraries over a few bundled cases each: their rows finish in about a second.
SELECTION = [
    "--cassettes", str(ROOT / "cassettes" / "openai-chat" / "parallel-2.yaml"),
    str(ROOT / "cassettes" / "anthropic" / "single-call.yaml"),
    "--scenarios", "original", "A5-id-on-every-chunk", "D7-truncated-mid-args",
]  # fmt: skip


# ---------------------------------------------------------------------------------------------
# The scheduler


def _sleeper(
    name: str, seconds: float, log: list[str], *, cost: float = 1.0, divisible: bool = False
) -> RowJob[str]:
    def run(slots: RowSlots) -> str:
        with slots.held():
            log.append(f"start {name}")
            time.sleep(seconds)
            log.append(f"end {name}")
        return name

    return RowJob(name, cost, run, divisible)


def test_results_come_back_in_the_given_order_whatever_finishes_first() -> None:
    log: list[str] = []
    # The first given finishes last: the results are still in the order given.
    jobs = [_sleeper("slow", 0.3, log), _sleeper("fast", 0.0, log), _sleeper("middle", 0.1, log)]
    assert run_rows(jobs, slots=3) == ["slow", "fast", "middle"]
    assert log.index("end fast") < log.index("end slow")  # they did run at once


def test_no_more_rows_work_at_once_than_there_are_slots() -> None:
    busy, most = [0], [0]
    lock = threading.Lock()

    def run(slots: RowSlots) -> int:
        with slots.held():
            with lock:
                busy[0] += 1
                most[0] = max(most[0], busy[0])
            time.sleep(0.05)
            with lock:
                busy[0] -= 1
        return 1

    assert sum(run_rows([RowJob(str(n), 1.0, run) for n in range(6)], slots=2)) == 6
    assert most[0] == 2


def test_indivisible_rows_start_first_and_the_costliest_first() -> None:
    log: list[str] = []
    jobs = [
        _sleeper("client-small", 0.0, log, cost=5, divisible=True),
        _sleeper("library-cheap", 0.0, log, cost=1),
        _sleeper("client-big", 0.0, log, cost=50, divisible=True),
        _sleeper("library-dear", 0.0, log, cost=9),
    ]
    assert [jobs[n].name for n in order(jobs)] == [
        "library-dear",
        "library-cheap",
        "client-big",
        "client-small",
    ]


def test_rows_start_in_priority_order_whatever_each_does_before_it_asks() -> None:
    """The costliest row gets the first slot even when it reads its environment for longer than
    a cheaper one before asking (a row's cache lookup runs before it takes a slot)."""
    log: list[str] = []

    def row(name: str, before: float) -> Callable[[RowSlots], str]:
        def run(slots: RowSlots) -> str:
            time.sleep(before)
            with slots.held():
                log.append(name)
            return name

        return run

    jobs = [RowJob("cheap", 1.0, row("cheap", 0.0)), RowJob("dear", 9.0, row("dear", 0.2))]
    assert run_rows(jobs, slots=1) == ["cheap", "dear"]
    assert log == ["dear", "cheap"]


def test_a_row_that_never_asks_holds_up_nobody() -> None:
    log: list[str] = []
    jobs = [RowJob("stored", 9.0, lambda slots: "stored"), _sleeper("graded", 0.0, log)]
    assert run_rows(jobs, slots=1) == ["stored", "graded"]


def test_a_freed_slot_goes_to_the_best_priority_waiting() -> None:
    slots = Slots(1)
    slots.acquire((0,))
    served: list[str] = []

    def wait(name: str, priority: tuple[int, ...]) -> None:
        with slots.held(priority):
            served.append(name)

    threads = [threading.Thread(target=wait, args=(n, p)) for n, p in (("late", (1, 0)), ("first", (0, 5)))]
    for thread in threads:
        thread.start()
        time.sleep(0.05)  # "late" asks first: it still waits for the better priority
    slots.release()
    for thread in threads:
        thread.join()
    assert served == ["first", "late"]


def test_a_row_that_raises_is_raised_after_every_row_ended() -> None:
    log: list[str] = []

    def broken(slots: RowSlots) -> str:
        raise RuntimeError("row broke")

    with pytest.raises(RuntimeError, match="row broke"):
        run_rows([RowJob("broken", 9.0, broken), _sleeper("fine", 0.1, log)], slots=2)
    assert log == ["start fine", "end fine"]


# ---------------------------------------------------------------------------------------------
# The verdict cache


KEY = {"version": 1, "row": "library openai 1.0", "versions": {"python": "3.11"}, "harness": "h1",
       "selection": {"cases": []}, "timeout": None}  # fmt: skip
REPORT = {"version": 1, "summary": {}, "cases": [{"id": "a::original::s0", "verdict": "pass"}]}


def test_a_stored_report_is_read_back_by_its_key_only(tmp_path: Path) -> None:
    cache = VerdictCache(tmp_path)
    assert cache.get(KEY) is None  # a miss
    cache.put(KEY, REPORT)
    assert cache.get(KEY) == REPORT  # a hit
    assert cache.get({**KEY, "harness": "h2"}) is None  # another harness: a miss
    assert cache.get({**KEY, "versions": {"python": "3.12"}}) is None
    assert [p.name for p in tmp_path.iterdir()] == [cache.path(KEY).name]  # no temporary file left


@pytest.mark.parametrize(
    "text",
    [
        "{",  # cut short
        "\xff\xfe not text",
        "[]",
        json.dumps({"key": KEY, "report": {"cases": "all passed"}}),
        json.dumps({"key": KEY, "report": {"cases": [{"verdict": "pass"}]}}),  # a case without id
        json.dumps({"key": {**KEY, "row": "library anthropic 1.0"}, "report": REPORT}),  # another key's
    ],
)
def test_a_corrupt_or_foreign_entry_is_ignored_and_written_again(tmp_path: Path, text: str) -> None:
    cache = VerdictCache(tmp_path)
    cache.path(KEY).write_text(text, encoding="utf-8", errors="surrogateescape")
    assert cache.get(KEY) is None
    cache.put(KEY, REPORT)
    assert cache.get(KEY) == REPORT


def test_the_fingerprint_changes_with_the_code_the_cassettes_and_the_scenarios(tmp_path: Path) -> None:
    package = tmp_path / "harness"
    (package / "sub").mkdir(parents=True)
    (package / "sub" / "a.py").write_text("x = 1\n")
    (package / "notes.yaml").write_text("not code\n")
    (tmp_path / "cassettes").mkdir()
    (tmp_path / "cassettes" / "one.yaml").write_text("a: 1\n")
    (tmp_path / "scenarios").mkdir()

    def now() -> str:
        verdicts._FINGERPRINTS.clear()
        return verdicts.fingerprint(package)

    first = now()
    (package / "notes.yaml").write_text("edited, but not code\n")
    assert now() == first
    (package / "sub" / "a.py").write_text("x = 2\n")
    second = now()
    (tmp_path / "cassettes" / "one.yaml").write_text("a: 2\n")
    third = now()
    (tmp_path / "scenarios" / "new.yaml").write_text("name: new\n")
    assert len({first, second, third, now()}) == 4


# ---------------------------------------------------------------------------------------------
# The whole command, with fast rows


@pytest.fixture
def fast_rows(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[str]:
    """Each library's row runs the reference accumulator in this process (same verdicts whatever
    the library): the card's own machinery, without a library's start-up. The list gets the
    spec of every row actually graded (not read from the cache)."""
    graded: list[str] = []
    monkeypatch.setenv("TOOLSTREAM_CACHE", str(tmp_path / "cache"))

    def spec(self: SideEnvironment) -> str:
        graded.append(self.library.name)
        return "reference"

    monkeypatch.setattr(SideEnvironment, "spec", spec)
    return graded


def _run(out: Path, *extra: str) -> int:
    argv = ["report-card", "--libraries", "openai,anthropic,langchain-core", "--use-current-env"]
    return main([*argv, "--timeout", "0", *SELECTION, *extra, "--out", str(out)])


def _reports(out: Path) -> dict[str, Any]:
    """Each row's report without its timings (which differ from run to run)."""

    def timeless(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: timeless(v) for k, v in value.items() if k not in ("seconds", "accumulator_seconds")}
        if isinstance(value, list):
            return [timeless(v) for v in value]
        return value

    return {p.name: timeless(json.loads(p.read_text())) for p in sorted((out / "reports").glob("*.json"))}


@pytest.mark.slow  # three card runs of a few seconds each
def test_rows_at_once_give_the_card_one_at_a_time_gives(tmp_path: Path, fast_rows: list[str]) -> None:
    assert _run(tmp_path / "serial", "-j", "1", "--no-cache") == 0
    assert _run(tmp_path / "parallel", "-j", "3", "--no-cache") == 0
    serial, parallel = (
        json.loads((tmp_path / d / "report-card.json").read_text()) for d in ("serial", "parallel")
    )
    assert len(serial["rows"]) >= 2 and all(r["problem"] is None for r in serial["rows"])
    assert parallel == serial
    assert _reports(tmp_path / "parallel") == _reports(tmp_path / "serial")
    assert (tmp_path / "serial" / "report-card.md").read_text() == (
        tmp_path / "parallel" / "report-card.md"
    ).read_text()


@pytest.mark.slow  # three card runs of a few seconds each
def test_an_unchanged_row_reuses_its_verdicts_and_says_so(
    tmp_path: Path, fast_rows: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert _run(tmp_path / "first") == 0
    rows = len(fast_rows)
    assert rows >= 2
    capsys.readouterr()
    assert _run(tmp_path / "again") == 0
    assert len(fast_rows) == rows  # nothing graded again
    err = capsys.readouterr().err
    assert err.count("from stored verdicts (unchanged)") == rows
    assert f"{rows} of {rows} rows from stored verdicts" in err
    assert _reports(tmp_path / "again") == _reports(tmp_path / "first")
    first, again = (json.loads((tmp_path / d / "report-card.json").read_text()) for d in ("first", "again"))
    assert again == first

    assert _run(tmp_path / "fresh", "--no-cache") == 0  # forced: every row graded again
    assert len(fast_rows) == 2 * rows
    assert "from stored verdicts" not in capsys.readouterr().err
    # What each row took is kept, by row, to start the costliest first next time.
    durations = VerdictCache(tmp_path / "cache" / "report-card" / "verdicts").durations()
    assert len(durations) == rows and all(name.startswith("library ") for name in durations)


@pytest.mark.slow  # two card runs of a few seconds each
def test_no_cache_writes_the_verdicts_anew(tmp_path: Path, fast_rows: list[str]) -> None:
    assert _run(tmp_path / "fresh", "--fresh") == 0
    rows = len(fast_rows)
    assert _run(tmp_path / "again") == 0
    assert len(fast_rows) == rows  # the forced run's verdicts were stored


def test_unreadable_durations_are_none(tmp_path: Path) -> None:
    cache = VerdictCache(tmp_path)
    assert cache.durations() == {}
    (tmp_path / "durations.json").write_text('{"library a 1": 3.5, "library b 1": "soon", "c": -1}')
    assert cache.durations() == {"library a 1": 3.5}
    (tmp_path / "durations.json").write_text("[")
    assert cache.durations() == {}


@pytest.mark.slow  # three card runs of a few seconds each
def test_a_harness_change_or_a_corrupt_entry_grades_the_row_again(
    tmp_path: Path, fast_rows: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _run(tmp_path / "first") == 0
    rows = len(fast_rows)
    folder = tmp_path / "cache" / "report-card" / "verdicts"
    stored = sorted(p for p in folder.glob("*.json") if p.name != "durations.json")
    assert len(stored) == rows
    stored[0].write_text('{"key": ', encoding="utf-8")  # cut short
    assert _run(tmp_path / "corrupt") == 0
    assert len(fast_rows) == rows + 1  # that row alone, and its entry is whole again
    assert json.loads(stored[0].read_text())["report"]["cases"]
    monkeypatch.setattr(verdicts, "fingerprint", lambda package=None: "another harness")
    assert _run(tmp_path / "changed") == 0
    assert len(fast_rows) == 2 * rows + 1  # every row again
    assert _reports(tmp_path / "changed") == _reports(tmp_path / "first")


# ---------------------------------------------------------------------------------------------
# The Agents SDK's loop, a client row


def test_the_agents_sdk_is_a_client_row_naming_its_install_when_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness.card import catalogue, clients

    monkeypatch.setattr(catalogue, "AGENTS_VENV", ".venv-not-here")
    monkeypatch.setenv("TOOLSTREAM_CACHE", str(tmp_path / "cache"))
    argv = ["report-card", "--libraries", "openai-agents", "--case", "openai-chat/parallel-2::original::s0"]
    assert main([*argv, "--out", str(tmp_path / "out")]) == 0
    (row,) = json.loads((tmp_path / "out" / "report-card.json").read_text())["rows"]
    assert (row["library"], row["version"], row["adapter"]) == (
        "openai-agents (PyPI)",
        "-",
        "client:openai-agents",
    )
    assert "python3 -m venv .venv-not-here" in row["problem"]
    assert clients.CLIENTS["openai-agents"].package == "openai-agents"
