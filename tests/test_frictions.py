"""Issue 32's smaller frictions, each as the user met it: piped tables cut, a refused accumulator
with no way forward, a key demanded of a local server, counts that did not add up, a compare
that listed 136 differences one by one."""

from __future__ import annotations

import io
import re
import shlex
from pathlib import Path

import pytest

from harness.cli import main
from harness.mutate.scenario import load_scenarios
from harness.text.terminal import output_width, table


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


# ---------------------------------------------------------------------------------------------
# Piped output is never cut to a width


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


# ---------------------------------------------------------------------------------------------
# repro refuses a user's own accumulator with the command that does reproduce the case


def test_repro_of_an_own_accumulator_names_the_command_that_reproduces_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    case_id = "openai-chat/parallel-2::parallel-calls-share-index-0::s0"
    assert main(["repro", case_id, "--accumulator", "examples.accumulators:IndexOnly"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no script template" in err
    suggested = re.search(r"`(toolstream compare [^`]+)`", err)
    assert suggested is not None and "`toolstream explore --accumulator examples.accumulators:IndexOnly" in err
    # The command it names works as given: the case, shrunk, as a cassette in DIR.
    argv = shlex.split(suggested[1].replace("DIR", str(tmp_path / "found")))
    assert main(argv[1:]) == 1
    assert len(list((tmp_path / "found").glob("*.yaml"))) == 1
