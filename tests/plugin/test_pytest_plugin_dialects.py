"""The matrix for one dialect: --toolstream-dialect (option, ini key, marker), an accumulator's own
`dialects`, one usage error for a bad spec, marker, dialect or ini key, and replay lines that
reproduce when run as printed."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys

import pytest

from tests._pytester_support import FIRST_CALL_ONLY, copy_cassettes, plugin_args, prepare

pytest_plugins = ["pytester"]

# Chat-only, and it says so; keeps the first call only, so parallel streams fail.
ACCUMULATORS = FIRST_CALL_ONLY + """

class ChatFirstCall(FirstCallOnly):
    dialects = ("openai-chat",)


class Undeclared(ChatFirstCall):
    dialects = None


class Misdeclared(ChatFirstCall):
    dialects = ("opeanai-chat",)


class Loud(ChatFirstCall):
    def prepare(self, timeout=None):
        print("WARMING UP LOUDLY")
"""

CASSETTES = ("openai-chat/parallel-2", "openai-chat/single-call", "anthropic/parallel-calls")
SELECT = ["--toolstream-scenarios", "original", "-p", "no:randomly"]


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    prepare(pytester, monkeypatch)
    pytester.makepyfile(accs=ACCUMULATORS)
    copy_cassettes(pytester, *CASSETTES)
    return pytester


def args(*extra: str) -> list[str]:
    return [*plugin_args(), "--toolstream-cassette-dir", "corpus", *SELECT, *extra]


def test_dialect_option_selects_only_that_dialects_cases(project: pytest.Pytester) -> None:
    result = project.runpytest(
        *args("--toolstream-accumulator", "accs:Undeclared", "--toolstream-dialect", "openai-chat", "-v")
    )
    result.assert_outcomes(passed=1, failed=1)  # without the option anthropic/parallel-calls fails too


def test_dialect_ini_key_and_marker_argument(project: pytest.Pytester) -> None:
    project.makeini("[pytest]\ntoolstream_dialect = anthropic\n")
    project.runpytest(*args("--toolstream-accumulator", "accs:Undeclared")).assert_outcomes(failed=1)
    project.makepyfile(
        test_acc="""
        import pytest

        @pytest.mark.toolstream_matrix(scenarios=["original"], dialects=["openai-chat"])
        def test_reference(toolstream_case):
            toolstream_case.check("reference")
        """
    )
    # The marker's dialects win over the ini key's.
    project.runpytest(*plugin_args(), "--toolstream-cassette-dir", "corpus", "test_acc.py").assert_outcomes(
        passed=2
    )


def test_declared_dialects_skip_the_others_with_a_reason(project: pytest.Pytester) -> None:
    result = project.runpytest(*args("--toolstream-accumulator", "accs:ChatFirstCall", "-rs"))
    result.assert_outcomes(passed=1, failed=1, skipped=1)
    result.stdout.fnmatch_lines(
        ["*accs:ChatFirstCall declares dialects openai-chat; this case is anthropic*"]
    )


def test_declared_dialects_skip_in_written_tests_too(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_acc="""
        import accs

        def test_mine(toolstream_case):
            toolstream_case.check(accs.ChatFirstCall)
        """
    )
    result = project.runpytest(*args("test_acc.py", "-rs"))
    result.assert_outcomes(passed=1, failed=1, skipped=1)


@pytest.mark.parametrize(
    ("given", "said"),
    [
        (
            ["--toolstream-accumulator", "accs:Nope"],
            "ERROR: accumulator 'accs:Nope': accs has no attribute Nope",
        ),
        (
            ["--toolstream-accumulator", "accs:Misdeclared"],
            "ERROR: accumulator 'accs:Misdeclared': dialects names unknown dialect 'opeanai-chat'; "
            "did you mean 'openai-chat'?",
        ),
        (
            ["--toolstream-accumulator", "accs:ChatFirstCall", "--toolstream-dialect", "opeanai-chat"],
            "ERROR: --toolstream-dialect: unknown dialect 'opeanai-chat'; did you mean 'openai-chat'?",
        ),
        (
            ["--toolstream-accumulator", "referenc"],
            "ERROR: unknown accumulator 'referenc'; did you mean 'reference'?",
        ),
        (
            ["--toolstream-accumulator", "cmd:no-such-program-toolstream --x"],
            "ERROR: accumulator 'cmd:no-such-program-toolstream --x': program "
            "'no-such-program-toolstream': not found on PATH",
        ),
    ],
)
def test_a_bad_spec_or_dialect_is_one_usage_error(
    project: pytest.Pytester, given: list[str], said: str
) -> None:
    result = project.runpytest(*args(*given))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    out = result.stdout.str() + result.stderr.str()
    assert said in out
    assert "Traceback" not in out and "pluggy/" not in out and "failed" not in out
    assert out.count("ERROR") == 1 and len(out.strip().splitlines()) < 10  # one error, not one per case


def test_a_misspelt_marker_argument_is_one_usage_error_without_traceback(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_acc="""
        import pytest

        @pytest.mark.toolstream_matrix(scenaros=["original"])
        def test_reference(toolstream_case):
            pass

        @pytest.mark.toolstream_matrix(dialects=["opeanai-chat"])
        def test_other(toolstream_case):
            pass
        """
    )
    result = project.runpytest(*plugin_args())
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    out = result.stdout.str() + result.stderr.str()
    assert "unknown argument 'scenaros'; did you mean 'scenarios'?" in out
    assert "unknown dialect 'opeanai-chat'; did you mean 'openai-chat'?" in out
    assert "pluggy/" not in out and "Traceback" not in out


def test_a_misspelt_ini_key_is_a_usage_error(project: pytest.Pytester) -> None:
    project.makeini("[pytest]\ntoolstream_dialects = openai-chat\n")
    result = project.runpytest(*plugin_args())
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    out = result.stdout.str() + result.stderr.str()
    assert (
        "ini key 'toolstream_dialects' is not a toolstream setting; did you mean 'toolstream_dialect'?" in out
    )


def test_a_misspelt_option_is_a_usage_error_naming_the_closest(project: pytest.Pytester) -> None:
    result = project.runpytest(*plugin_args(), "--toolstream-dialetc", "openai-chat")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    out = result.stdout.str() + result.stderr.str()
    assert "unknown option --toolstream-dialetc; did you mean '--toolstream-dialect'?" in out


def test_warm_up_output_is_captured(project: pytest.Pytester) -> None:
    result = project.runpytest(*args("--toolstream-accumulator", "accs:Loud", "-s"))
    result.assert_outcomes(passed=1, failed=1, skipped=1)
    assert "WARMING UP LOUDLY" not in result.stdout.str()


def _printed_pytest_line(out: str) -> str:
    # A written test's failure shows as an exception, its lines behind pytest's `E` marks.
    lines = [m.group(1) for m in re.finditer(r"^(?:E\s+)?\s*(pytest .*)$", out, re.M)]
    assert lines, out
    return lines[0].strip()


@pytest.mark.slow  # runs pytest again in a subprocess per printed line
def test_the_printed_pytest_replay_line_reproduces_as_printed(project: pytest.Pytester) -> None:
    first = project.runpytest_subprocess(
        *args("--toolstream-accumulator", "accs:ChatFirstCall", "--toolstream-dialect", "openai-chat",
              "--toolstream-seeds", "1", "--toolstream-strict", "-p", "no:cacheprovider"),
    )  # fmt: skip
    first.assert_outcomes(passed=1, failed=1)
    out = first.stdout.str()
    failure = re.search(r"^(FAIL \S+ \(accumulator accs:ChatFirstCall\).*)$", out, re.M)
    assert failure is not None
    line = _printed_pytest_line(out)
    for option in ("--toolstream-accumulator accs:ChatFirstCall", "--toolstream-dialect openai-chat",
                   "--toolstream-cassette-dir", "--toolstream-scenarios original", "--toolstream-seeds 1",
                   "--toolstream-strict", "-k "):  # fmt: skip
        assert option in line, line
    argv = shlex.split(line)
    assert argv[0] == "pytest"
    # As printed, from the same folder: the plugin is what the environment loads (or -p).
    again = subprocess.run(
        [sys.executable, "-m", *argv, *plugin_args(), "-p", "no:randomly", "-p", "no:cacheprovider"],
        cwd=project.path, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert again.returncode == 1, again.stdout + again.stderr
    assert "1 failed" in again.stdout and "passed" not in again.stdout.splitlines()[-1]
    assert failure.group(1) in again.stdout


@pytest.mark.slow
def test_the_printed_check_replay_line_reproduces_as_printed(project: pytest.Pytester) -> None:
    first = project.runpytest(*args("--toolstream-accumulator", "accs:ChatFirstCall", "--toolstream-strict"))
    out = first.stdout.str()
    line = next(x.strip() for x in out.splitlines() if x.strip().startswith("toolstream check "))
    assert "--strict" in line and "--cassettes" in line
    argv = shlex.split(line)
    again = subprocess.run(
        [sys.executable, "-m", "harness.cli", *argv[1:]],
        cwd=project.path, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert again.returncode == 1, again.stdout + again.stderr
    assert "FAIL corpus/openai-chat/parallel-2::original::s0" in again.stdout


@pytest.mark.slow  # runs pytest again in a subprocess per printed line
def test_a_written_tests_replay_lines_reproduce_as_printed(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_acc="""
        import pytest

        @pytest.mark.toolstream_matrix(cassettes=["corpus/openai-chat"], scenarios=["original"])
        def test_mine(toolstream_case):
            toolstream_case.check("accs:ChatFirstCall")
        """
    )
    first = project.runpytest_subprocess(*plugin_args(), "-p", "no:randomly", "--toolstream-seeds", "1")
    first.assert_outcomes(passed=1, failed=1)
    out = first.stdout.str()
    line = _printed_pytest_line(out)
    assert line.startswith("pytest test_acc.py --toolstream-seeds 1 -k ")
    extra = [*plugin_args(), "-p", "no:randomly", "-p", "no:cacheprovider"]
    again = subprocess.run(
        [sys.executable, "-m", *shlex.split(line), *extra],
        cwd=project.path, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    summary = again.stdout.strip().splitlines()[-1]
    assert again.returncode == 1 and "1 failed" in summary and "passed" not in summary, again.stdout
    check_line = re.findall(r"(toolstream check .*)$", out, re.M)[0].strip()
    assert f"--cassettes {project.path / 'corpus' / 'openai-chat'}" in check_line  # the marker's cassettes
    checked = subprocess.run(
        [sys.executable, "-m", "harness.cli", *shlex.split(check_line)[1:]],
        cwd=project.path, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert checked.returncode == 1, checked.stdout + checked.stderr
