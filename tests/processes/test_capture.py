"""What a Python accumulator prints stays in its case (issue 11, point 4): file descriptors 1 and 2
captured per case, in process and in workers, bounded, shown escaped under the failure; long
values cut with their length in terminal, JSON and HTML output."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from harness.matrix.runner import run_matrix
from harness.matrix.selection import Selection
from harness.oracle.verdict import Result
from harness.processes.capture import KEPT, captured_output
from harness.text.terminal import clip, clip_values, printable, shorten

ROOT = Path(__file__).resolve().parents[2]
SINGLE = str(ROOT / "cassettes/openai-chat/single-call.yaml")
ONE_CASE = ["--cassettes", SINGLE, "--scenarios", "original"]

NOISY = textwrap.dedent(
    '''
    import os
    import sys

    from harness.cassettes.outcome import Outcome, ToolCall
    from harness.wire import dialects


    class Reference:
        def __init__(self, dialect):
            self.inner = dialects.get(dialect).accumulator()

        def feed(self, event):
            self.inner.feed(event)

        def close(self, error):
            return self.inner.close(error)


    class Loud(Reference):
        """Passes, printing every way there is."""

        def close(self, error):
            print("\\x1b[31mprint\\x1b[0m\\rover")
            os.write(1, b"fd1\\n")
            os.write(2, b"fd2\\n")
            os.system("echo child-out; echo child-err >&2")
            return super().close(error)


    class Flood(Loud):
        """Fails after printing far more than anyone reads."""

        def close(self, error):
            super().close(error)
            os.system("head -c 50000000 /dev/zero | tr '\\\\0' a; echo")
            sys.stdout.write("LAST LINE\\n")
            return Outcome()


    class Long(Reference):
        """Answers with 3 MB values."""

        def close(self, error):
            return Outcome(
                tool_calls=(ToolCall(name="n" * 3_000_000, arguments={"a": "v" * 3_000_000}),),
                text="t" * 3_000_000,
                error="e" * 3_000_000,
            )


    class Raises(Reference):
        def close(self, error):
            raise ValueError("x" * 3_000_000)
    '''
)


@pytest.fixture
def noisy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "accumulators"
    folder.mkdir()
    (folder / "noisy_accumulators.py").write_text(NOISY, encoding="utf-8")
    monkeypatch.syspath_prepend(str(folder))
    sys.modules.pop("noisy_accumulators", None)
    return folder


def run_cli(folder: Path, *argv: str) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(folder), str(ROOT)])}
    command = [sys.executable, "-m", "harness", *argv]
    return subprocess.run(command, capture_output=True, env=env, cwd=folder, timeout=300)


# ---------------------------------------------------------------------------------------------
# The capture itself


def test_every_way_of_writing_is_captured_and_the_descriptors_come_back(
    capfd: pytest.CaptureFixture[str],
) -> None:
    before = [os.fstat(fd).st_ino for fd in (1, 2)]
    with captured_output() as output:
        print("print")
        sys.stderr.write("sys.stderr\n")
        os.write(1, b"fd1\n")
        os.write(2, b"fd2\n")
        subprocess.run("echo child-out; echo child-err >&2", shell=True, check=True)
    assert [os.fstat(fd).st_ino for fd in (1, 2)] == before
    assert output.text.split() == ["print", "sys.stderr", "fd1", "fd2", "child-out", "child-err"]
    print("after")
    assert capfd.readouterr().out == "after\n"


def test_a_flood_keeps_its_head_and_tail_and_says_what_was_dropped() -> None:
    with captured_output() as output:
        os.write(1, b"HEAD")
        for _ in range(100):
            os.write(1, b"m" * 100_000)
        os.write(2, b"TAIL")
    assert output.total == 10_000_008
    assert len(output.text) < KEPT + 100
    assert output.text.startswith("HEAD") and output.text.endswith("TAIL")
    assert f"[... {10_000_008 - KEPT:,} bytes of output dropped ...]" in output.text


def test_a_child_that_outlives_its_case_does_not_hold_it() -> None:
    start = time.monotonic()
    with captured_output() as output:
        child = subprocess.Popen("echo early; sleep 5; echo late", shell=True)
        time.sleep(0.3)
    assert time.monotonic() - start < 3
    assert "early" in output.text and "late" not in output.text
    child.kill()
    child.wait()


# ---------------------------------------------------------------------------------------------
# In the runner: in process and in workers


@pytest.mark.parametrize(("timeout", "jobs"), [(None, 1), (30.0, 1), (30.0, 2)])
def test_output_is_the_cases_not_the_terminals(
    noisy: Path, timeout: float | None, jobs: int, capfd: pytest.CaptureFixture[str]
) -> None:
    selection = Selection(cassettes=(SINGLE,), scenarios=("original", "F3-single-read"))
    report = run_matrix("noisy_accumulators:Loud", selection, timeout=timeout, jobs=jobs)
    leaked = capfd.readouterr()
    assert report.ok and len(report.results) == 2
    for result in report.results:
        assert result.output.split("\n") == [
            "\x1b[31mprint\x1b[0m\rover", "fd1", "fd2", "child-out", "child-err", ""
        ]  # fmt: skip
    assert "fd1" not in leaked.out + leaked.err and "child" not in leaked.out + leaked.err


def test_output_round_trips_through_the_result_document() -> None:
    result = run_matrix("reference", Selection(cassettes=(SINGLE,), scenarios=("original",))).results[0]
    assert result.output == "" and "output" not in result.to_dict()
    loud = Result.from_dict({**result.to_dict(), "output": "said\n"})
    assert loud.output == "said\n" and loud.to_dict()["output"] == "said\n"


# ---------------------------------------------------------------------------------------------
# What the user sees


@pytest.mark.slow
def test_a_flood_is_kept_out_of_the_terminal_and_the_report(noisy: Path) -> None:
    report = noisy / "report.json"
    done = run_cli(
        noisy, "check", "--accumulator", "noisy_accumulators:Flood", *ONE_CASE, "--json", str(report)
    )
    assert done.returncode == 1, done.stderr
    assert len(done.stdout) < 20_000 and done.stderr == b""
    assert b"\x1b" not in done.stdout and b"\r" not in done.stdout
    assert b"  output:\n  | \\x1b[31mprint\\x1b[0m\\x0dover\n" in done.stdout
    assert b"bytes of output dropped" in done.stdout and b"  | LAST LINE\n" in done.stdout
    assert report.stat().st_size < 30_000
    [case] = json.loads(report.read_text(encoding="utf-8"))["cases"]
    assert case["output"].endswith("LAST LINE\n") and "bytes of output dropped" in case["output"]


@pytest.mark.slow
def test_long_values_are_cut_with_their_length_in_terminal_json_and_html(noisy: Path) -> None:
    report, page = noisy / "report.json", noisy / "report.html"
    for name in ("Long", "Raises"):
        argv = ["--accumulator", f"noisy_accumulators:{name}", *ONE_CASE, "--json", str(report)]
        done = run_cli(noisy, "check", *argv, "--html", str(page))
        assert done.returncode == 1, done.stderr
        assert (
            len(done.stdout) < 20_000 and b"3,000,0" in done.stdout and b"characters in all]" in done.stdout
        )
        assert report.stat().st_size < 100_000 and page.stat().st_size < 100_000
        assert "characters in all]" in report.read_text(encoding="utf-8")
        assert "characters in all]" in page.read_text(encoding="utf-8")


def test_clip_and_printable() -> None:
    assert clip("short") == "short"
    assert clip("x" * 30, 10) == "x" * 10 + "… [cut: 30 characters in all]"
    assert clip_values({"a": ["y" * 30, 3, None], "b": ("z" * 5,)}, 10) == {
        "a": ["y" * 10 + "… [cut: 30 characters in all]", 3, None],
        "b": ["zzzzz"],
    }
    assert printable("\x1b[2J\a\rok\n\tnext\x9b") == "\\x1b[2J\\x07\\x0dok\n\tnext\\x9b"
    assert shorten("\x1b[31m" + "a" * 3_000_000, 12) == "\\x1b[31maaa…"


def test_only_an_accumulator_that_cannot_print_runs_without_the_capture(
    capfd: pytest.CaptureFixture[str],
) -> None:
    """The built-in reference says it prints nothing (a capture cost about what its case does);
    a user's accumulator, which may print, is captured; one that says it cannot is taken at its word."""
    from harness.accumulators import resolve
    from harness.accumulators.event_level import EventLevel
    from harness.matrix.judging import judge
    from harness.matrix.selection import build_case
    from harness.wire import dialects

    case = build_case("openai-chat/parallel-2::original::s0")
    reference = resolve("reference")
    assert reference.prints_nothing(case)  # type: ignore[attr-defined]

    def noisy(dialect: str) -> Any:
        print("from the accumulator")
        return dialects.get(dialect).accumulator()

    captured = EventLevel(noisy, "noisy")
    assert not captured.prints_nothing(case)
    assert judge(captured, "noisy", case).output == "from the accumulator\n"
    assert capfd.readouterr().out == ""

    class Trusted(EventLevel):
        def prints_nothing(self, case: Any) -> bool:
            return True

    assert judge(Trusted(noisy, "trusted"), "trusted", case).output == ""
    assert capfd.readouterr().out == "from the accumulator\n"
