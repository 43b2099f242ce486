"""One progress design (`Progress`: start, advance, close): the terminal bar names cases, never
the paths of their cassettes, and the runner and the report card report through it alike."""

from __future__ import annotations

import io
import os

import pytest

from harness.text.terminal import ProgressBar, case_name


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_shows_case_names_not_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TERM", "xterm")
    stream = _Tty()
    progress = ProgressBar(2, label="check", stream=stream)
    path = os.path.join(
        "/venv/lib/site-packages/harness/_bundled/cassettes", "openai-chat", "parallel-2.yaml"
    )
    progress.advance(note=f"{path} x cut-mid-args s0")
    shown = stream.getvalue()
    assert "openai-chat/parallel-2 x cut-mid-args s0" in shown and "site-packages" not in shown
    assert case_name("openai-chat/parallel-2::original::s0") == "openai-chat/parallel-2::original::s0"


class _Recorded:
    """A `Progress` that keeps what it was told."""

    def __init__(self) -> None:
        self.told: list[tuple[str, int, str]] = []

    def start(self, total: int) -> None:
        self.told.append(("start", total, ""))

    def advance(self, n: int = 1, note: str = "") -> None:
        self.told.append(("advance", n, note))

    def close(self) -> None:
        self.told.append(("close", 0, ""))


def test_the_runner_starts_with_its_units_and_advances_once_per_unit() -> None:
    from harness.matrix.runner import run_matrix
    from harness.matrix.selection import Selection

    progress = _Recorded()
    selection = Selection(dialects=("openai-chat",), scenarios=("original",))
    report = run_matrix("reference", selection, progress=progress)
    (start, *advances) = progress.told
    assert start[0] == "start" and start[1] == len(advances) >= len(report.results) > 0
    assert all(kind == "advance" and n == 1 and " x original" in note for kind, n, note in advances)


def test_a_card_row_counts_its_cases_on_the_one_bar(monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.card.run import CardProgress, RowProgress

    monkeypatch.setenv("TERM", "xterm")
    bar = CardProgress(stream=_Tty())
    bar.start(5)
    library = RowProgress(bar, "openai 1.0", {"unit a": 3, "unit b": 0})
    library.start(2)  # the runner's units: the card's bar already counts cases
    library.advance(note="unit a")
    library.advance(note="unit b")
    client = RowProgress(bar, "client 1.0")
    client.advance(note="openai-chat/x::original::s0")
    assert (bar.total, bar.done) == (5, 4)
    client.advance(note="openai-chat/x::original::s1")  # the last case: drawn whatever the clock
    assert bar.stream.getvalue().endswith(  # type: ignore[attr-defined]
        "5/5 client 1.0: openai-chat/x::original::s1".ljust(len("5/5 ") + 60)
    )
