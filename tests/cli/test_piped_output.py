"""Piped output is never cut to a width: a table fits the terminal only when there is one, and
`scenarios` and `explain` piped show every description and event whole."""

from __future__ import annotations

import io

import pytest

from harness.cli import main
from harness.mutate.scenario import load_scenarios
from harness.text.terminal import output_width, table


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_piped_scenarios_keep_every_description_whole(capsys: pytest.CaptureFixture[str]) -> None:
    # capsys's stdout is no terminal: what `toolstream scenarios | less` gets.
    assert main(["scenarios"]) == 0
    out = capsys.readouterr().out
    longest = max((s.description for s in load_scenarios(None)), key=len)
    assert len(longest) > 120 and " ".join(longest.split()) in out
    assert "…" not in out


def test_a_table_fits_the_terminal_only_when_there_is_one() -> None:
    rows = [("a", "x" * 300)]
    assert output_width(io.StringIO()) is None and output_width(_Terminal()) is not None
    assert "x" * 300 in table(("name", "value"), rows)  # stdout under pytest: not a terminal
    fitted = table(("name", "value"), rows, max_width=80)
    assert max(map(len, fitted.splitlines())) <= 80 and fitted.endswith("…")


def test_piped_explain_cuts_no_event(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "openai-chat/parallel-2::A1-parallel-same-index::s0"]) == 0
    out = capsys.readouterr().out
    # The usage chunk is longer than half of any terminal: piped, both sides show it whole.
    assert out.count('"rejected_prediction_tokens":0}},"obfuscation"') == 2
