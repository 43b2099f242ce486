"""`harness.strategies`: the matrix's cases as hypothesis strategies, shrinking towards the
recording itself (the `original` scenario, the smallest recording, seed 0, the earliest cut)."""

from __future__ import annotations

import functools
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from harness.cassettes.outcome import diff
from harness.errors import HarnessError, UsageError
from harness.matrix.selection import Selection
from harness.matrix.selection import cases as matrix_cases
from harness.mutate.scenario import Case
from harness.oracle.verdict import Verdict
from harness.strategies import _corpus, cases, check, events, reads
from harness.wire import dialects

ROOT = Path(__file__).resolve().parents[2]
OPENAI = ROOT / "cassettes" / "openai-chat"
# Deterministic: the same examples, the same shrink, every run and machine.
REPLAYABLE = settings(
    derandomize=True,
    database=None,
    deadline=None,
    max_examples=200,
    suppress_health_check=[HealthCheck.too_slow],
)


class IndexKeyed:
    """Deliberately wrong: fragments keyed by `index` alone, strings concatenated, and any stream
    that names a finish reason taken as complete. Wrong on parallel calls a gateway puts at index 0
    (their names merge) and on a cut stream it reports complete."""

    def __init__(self, dialect: str) -> None:
        self.calls: dict[Any, dict[str, str]] = {}
        self.finish: str | None = None

    def feed(self, event: Any) -> None:
        payload = event.payload
        for choice in (payload.get("choices") or []) if isinstance(payload, dict) else []:
            for fragment in (choice.get("delta") or {}).get("tool_calls") or []:
                call = self.calls.setdefault(fragment.get("index"), {"id": "", "name": "", "args": ""})
                function = fragment.get("function") or {}
                call["id"] += fragment.get("id") or ""
                call["name"] += function.get("name") or ""
                call["args"] += function.get("arguments") or ""
            self.finish = choice.get("finish_reason") or self.finish

    def close(self, error: str | None) -> Any:
        from harness import Outcome, State, ToolCall

        calls = tuple(ToolCall.from_text(c["name"], c["args"], c["id"] or None) for c in self.calls.values())
        return Outcome(calls, "", self.finish, State.COMPLETE if self.finish else State.CUT, error)


def falsified(test: Callable[[], None], seen: list[str]) -> tuple[str, str]:
    """Run a `@given` test that fails; the case its final (shrunk) run got, and hypothesis' notes."""
    with pytest.raises(AssertionError) as failure:
        test()
    return seen[-1], "\n".join(getattr(failure.value, "__notes__", []))


def test_index_keyed_accumulator_shrinks_to_the_smallest_parallel_recording_at_seed_0() -> None:
    # Recordings that pass unmutated, so only the scenario that puts parallel calls at index 0 fails.
    names = ("single-call", "parallel-2", "parallel-3-same-function")
    recordings = [OPENAI / f"{name}.yaml" for name in names]
    scenarios = ["original", "F3-one-byte-reads", "parallel-calls-share-index-0"]
    seen: list[str] = []

    @REPLAYABLE
    @given(cases(dialect="openai-chat", scenarios=scenarios, cassettes=recordings))
    def test(case: Case) -> None:
        seen.append(case.id)
        check(IndexKeyed, case)

    found, notes = falsified(test, seen)
    assert found == "openai-chat/parallel-2::parallel-calls-share-index-0::s0"
    assert f"<Case {found!r}>" in notes  # printed by its id, not as every event it holds
    assert len(set(seen)) > 1  # drawn over the selection, not given this case


def test_over_the_whole_dialect_a_failure_shrinks_to_a_failing_recording_unmutated() -> None:
    seen: list[str] = []

    @REPLAYABLE
    @given(cases(dialect="openai-chat"))
    def test(case: Case) -> None:
        seen.append(case.id)
        check(IndexKeyed, case)

    found, _ = falsified(test, seen)
    # IndexKeyed fails some recordings unmutated (a cut one it takes as complete): the shrunk
    # case is one of them, not a mutated stream.
    corpus = _corpus(Selection(dialects=("openai-chat",)))
    failing = []
    for recording in corpus.recordings:
        (case,) = corpus.unit(recording, "original", 0)
        try:
            check(IndexKeyed, case)
        except AssertionError:
            failing.append(case.id)
    assert failing, "the corpus no longer has a recording IndexKeyed fails unmutated"
    # The shrink ends on a recording IndexKeyed fails unmutated, its `original` case, seed 0: not on a
    # mutated stream. Which of those recordings it reaches is hypothesis's search (it does not try
    # every smaller index: with 2026-11's corpus it stops at the 8th recording, the 5th also fails).
    recording, scenario, seed = found.split("::")
    assert (scenario, seed) == ("original", "s0") and found in failing, found


def test_a_sweep_shrinks_to_its_earliest_cut_of_the_smallest_recording() -> None:
    seen: list[str] = []

    @REPLAYABLE
    @given(cases(dialect="openai-chat", scenarios=["cut-at-every-event"]))
    def test(case: Case) -> None:
        seen.append(case.id)
        assert case.point is None, "every cut fails"

    found, _ = falsified(test, seen)
    smallest = _corpus(Selection(scenarios=("cut-at-every-event",), dialects=("openai-chat",)))
    assert found == f"{smallest.recordings[0]}::cut-at-every-event::s0::e0"


def test_seeds_are_drawn_as_integers_and_shrink_to_0() -> None:
    seen: list[int] = []

    @REPLAYABLE
    @given(cases(dialect="openai-chat", scenarios=["D7-truncated-mid-args"], seeds=1000))
    def test(case: Case) -> None:
        seen.append(case.seed)
        assert case.seed < 3, "a seed the scenario does not list"

    with pytest.raises(AssertionError):
        test()
    assert max(seen) >= 3  # drawn beyond the scenario's own seeds
    # The shrunk example is the smallest failing seed: one above the bound the test sets.
    assert seen[-1] == 3


@settings(REPLAYABLE, max_examples=20)
@given(events(dialect="openai-chat", scenarios=["original", "F3-one-byte-reads"]))
def test_events_are_what_an_event_level_accumulator_is_fed(drawn: tuple[Any, ...]) -> None:
    # Exactly a case's events (the original's and its one-byte reads' are the same): fed to the
    # reference with the case's transport error, they give its expectation.
    matching = [c for c in _openai_cases() if tuple(c.events) == drawn]
    assert matching
    for case in matching:
        accumulator = dialects.reference_accumulator("openai-chat")
        for event in drawn:
            accumulator.feed(event)
        assert diff(case.expected, accumulator.close(case.error)) == []


@functools.cache
def _openai_cases() -> tuple[Case, ...]:
    selection = Selection(dialects=("openai-chat",), scenarios=("original", "F3-one-byte-reads"))
    return tuple(matrix_cases(selection))


@settings(REPLAYABLE, max_examples=20)
@given(reads(dialect="openai-chat", scenarios=["F3-one-byte-reads"]))
def test_reads_are_the_network_reads(drawn: tuple[bytes, ...]) -> None:
    assert drawn and all(isinstance(read, bytes) for read in drawn)
    assert max(len(read) for read in drawn) == 1  # one byte a read


def test_check_passes_the_reference_and_fails_a_wrong_accumulator_with_its_replay_command() -> None:
    from harness.matrix.selection import build_case

    case = build_case("openai-chat/parallel-2::parallel-calls-share-index-0::s0")
    assert check("reference", case).verdict is Verdict.PASS
    with pytest.raises(AssertionError) as failure:
        check(IndexKeyed, case)
    text = str(failure.value)
    assert text.startswith(f"FAIL {case.id}")
    assert f"--accumulator test_strategies:IndexKeyed --case {case.id}" in text


def test_a_bad_option_is_an_error_when_the_strategy_is_made() -> None:
    with pytest.raises(HarnessError, match="unknown dialect 'no-such-dialect'"):
        cases(dialect="no-such-dialect")
    with pytest.raises(UsageError):
        cases(dialect="openai-chat", seeds=0)


def run_python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60, check=False
    )


def test_without_hypothesis_the_import_says_how_to_install_it() -> None:
    done = run_python(
        "import sys; sys.modules['hypothesis'] = None\n"  # an import of it now raises ImportError
        "try:\n    import harness.strategies\n"
        "except ImportError as exc:\n    print(exc)\n"
    )
    assert done.stdout == "harness.strategies needs hypothesis: pip install toolstream-harness[hypothesis]\n"


def test_import_harness_and_its_public_names_do_not_import_hypothesis() -> None:
    done = run_python(
        "import sys, harness\n"
        "[getattr(harness, name) for name in harness.__all__]\n"
        "print('hypothesis' in sys.modules)\n"
    )
    assert done.stdout == "False\n", done.stderr
