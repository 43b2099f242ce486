"""`toolstream bisect`: the first release of a library where a case's verdict changed (issue 43)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.card.bisect import Graded, bisect, release_range
from harness.card.libraries import library
from harness.cli import main
from harness.errors import UsageError

ROOT = Path(__file__).resolve().parents[2]
CASE = "openai-chat/litellm-bridge-parallel-index0::original::s0"
RELEASES = [f"1.{minor}.0" for minor in range(20)]


def _graded_as(fixed_in: str, asked: list[str]):
    def grade(version: str) -> Graded:
        asked.append(version)
        fixed = tuple(map(int, version.split("."))) >= tuple(map(int, fixed_in.split(".")))
        return Graded(version, "pass", "pass") if fixed else Graded(version, "fail", "name concatenated")

    return grade


@pytest.mark.parametrize("fixed_in", ["1.1.0", "1.7.0", "1.19.0"])
def test_bisection_names_the_first_release_with_the_newest_verdict(fixed_in: str) -> None:
    asked: list[str] = []
    found = bisect(
        library("langchain-core"), CASE, RELEASES, grade=_graded_as(fixed_in, asked), say=lambda _: None
    )
    assert found.after is not None and found.after.version == fixed_in
    assert found.before is not None and found.before.verdict == "fail"
    assert len(asked) <= 7 and len(set(asked)) == len(asked)  # log2(20) + 2, each release once
    assert f"{fixed_in} changed the verdict" in found.summary()


def _not_graded_at(versions: set[str], grade):  # type: ignore[no-untyped-def]
    def graded(version: str) -> Graded:
        if version in versions:
            grade(version)
            return Graded(version, "not graded", "not graded", "pip install failed: no wheel")
        return grade(version)

    return graded


def test_a_release_that_cannot_be_graded_is_skipped_not_taken_for_the_old_verdict() -> None:
    # 1.9.0 is the first middle tried; the change (1.7.0) lies before it.
    asked: list[str] = []
    found = bisect(
        library("langchain-core"),
        CASE,
        RELEASES,
        grade=_not_graded_at({"1.9.0"}, _graded_as("1.7.0", asked)),
        say=lambda _: None,
    )
    assert found.after is not None and found.after.version == "1.7.0" and found.changed_in == "1.7.0"
    assert found.before is not None and found.before.version == "1.6.0" and found.before.error is None
    assert len(set(asked)) == len(asked) <= 8


def test_a_change_among_releases_that_cannot_be_graded_is_named_as_between_two_graded_ones() -> None:
    asked: list[str] = []
    found = bisect(
        library("langchain-core"),
        CASE,
        RELEASES,
        grade=_not_graded_at({"1.6.0", "1.7.0"}, _graded_as("1.7.0", asked)),
        say=lambda _: None,
    )
    assert found.before is not None and found.before.version == "1.5.0"
    assert found.after is not None and found.after.version == "1.8.0"
    assert found.ungraded_between == ("1.6.0", "1.7.0") and found.changed_in is None
    assert "changed in 1.6.0, 1.7.0 (not graded here) or 1.8.0" in found.summary()
    assert found.to_dict()["changed_in"] is None


def test_an_end_that_cannot_be_graded_tells_nothing() -> None:
    asked: list[str] = []
    found = bisect(
        library("langchain-core"),
        CASE,
        RELEASES,
        grade=_not_graded_at({"1.0.0"}, _graded_as("9.0.0", asked)),
        say=lambda _: None,
    )
    assert not found.told and not found.changed
    assert found.summary().startswith("langchain-core: cannot tell: 1.0.0 not graded (pip install failed")
    assert "no change" not in found.summary()


def test_an_environment_whose_adapter_does_not_start_is_not_graded_and_exits_2(tmp_path: Path) -> None:
    # An interpreter without the harness: its `serve-accumulator` exits at once. That is the
    # environment's problem, never the release's verdict (an `error` compared with the other end).
    bare = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True, timeout=120)
    argv = [sys.executable, "-m", "harness.cli", "bisect", "langchain-core", CASE]
    argv += ["--versions", "1.2.13,1.2.14"]
    argv += [f"--env=1.2.13={bare}", f"--env=1.2.14={bare}", "--json", str(tmp_path / "b.json")]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 2, run.stdout + run.stderr
    assert "cannot tell: 1.2.13 not graded (adapter langchain-core does not load" in run.stdout
    found = json.loads((tmp_path / "b.json").read_text(encoding="utf-8"))
    assert found["changed_in"] is None and found["graded"][0]["verdict"] == "not graded"


HANGS = """
import time


class Hangs:
    def __init__(self, dialect):
        pass

    def feed(self, event):
        time.sleep(3600)

    def close(self, error):
        raise AssertionError("never reached")
"""


def test_a_release_that_hangs_on_the_case_is_a_timeout_not_a_hung_bisect(tmp_path: Path) -> None:
    # Every accumulator is a stranger's: the case is bounded in each release as on the card.
    (tmp_path / "hangs.py").write_text(HANGS, encoding="utf-8")
    argv = [sys.executable, "-m", "harness.cli", "bisect", "langchain-core", CASE, "--adapter", "hangs:Hangs"]
    argv += ["--versions", "1.2.13,1.2.14"] + [f"--env={v}={sys.executable}" for v in ("1.2.13", "1.2.14")]
    argv += ["--timeout", "0.3", "--json", str(tmp_path / "b.json")]  # a start-up gets ten of them
    env = {**os.environ, "PYTHONPATH": os.pathsep.join((str(ROOT), str(tmp_path)))}
    run = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    found = json.loads((tmp_path / "b.json").read_text(encoding="utf-8"))
    assert [g["verdict"] for g in found["graded"]] == ["timeout", "timeout"]


def test_no_change_between_the_ends_grades_only_the_ends() -> None:
    asked: list[str] = []
    found = bisect(
        library("langchain-core"), CASE, RELEASES, grade=_graded_as("9.0.0", asked), say=lambda _: None
    )
    assert not found.changed and asked == ["1.0.0", "1.19.0"]
    assert "no change from 1.0.0 to 1.19.0" in found.summary()


def test_release_ranges() -> None:
    available = ["1.2.14", "1.2.13", "1.2.9", "1.3.0rc1", "1.2.10", "0.9"]
    assert release_range(available, "1.2.9..1.2.14") == ["1.2.9", "1.2.10", "1.2.13", "1.2.14"]
    assert release_range(available, "..1.2.10") == ["0.9", "1.2.9", "1.2.10"]
    assert release_range([], "1.2.14,1.2.13") == ["1.2.13", "1.2.14"]
    for bad in ("1.2.13", "1.2.9..1.2.99", "1.2.14..1.2.14"):
        with pytest.raises(UsageError):
            release_range(available, bad)


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["bisect", "nosuch", CASE, "--versions", "1,2"], "unknown library"),
        (["bisect", "langchain-core", "nope::x::s0", "--versions", "1,2"], "unknown scenario"),
        (["bisect", "langchain-core", CASE, "--versions", "1.2.13"], "at least two releases"),
        (
            ["bisect", "langchain-core", CASE, "--versions", "1.2.13,1.2.14", "--env", "1.2.13"],
            "VERSION=PATH",
        ),
    ],
)
def test_bad_input_is_one_line_exit_2(argv: list[str], said: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert said in err and err.count("\n") == 1


@pytest.mark.slow
def test_bisect_names_1_2_14_as_the_langchain_core_release_that_fixed_index_0_merging(tmp_path: Path) -> None:
    # The side environments `.ci/run` builds for these two releases (the card would build its own).
    envs = {v: ROOT / f".venv-langchain-core-{v}" for v in ("1.2.13", "1.2.14")}
    if not all((env / "bin" / "python").exists() for env in envs.values()):
        pytest.skip("no side environments (.ci/run makes them)")
    out = tmp_path / "bisect.json"
    argv = [
        sys.executable,
        "-m",
        "harness.cli",
        "bisect",
        "langchain-core",
        CASE,
        "--adapter",
        "langchain-core",
    ]
    argv += [
        "--versions",
        "1.2.13,1.2.14",
        *(f"--env={v}={env}" for v, env in envs.items()),
        "--json",
        str(out),
    ]
    run = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "langchain-core 1.2.14 changed the verdict" in run.stdout
    found = json.loads(out.read_text(encoding="utf-8"))
    assert found["changed_in"] == "1.2.14"
    # 1.2.13 merges the two calls sharing index 0; 1.2.14 keeps them apart (the second call's
    # arguments it still empties, a bug of its own that every later release has too).
    assert "name concatenated" in found["before"]["signature"]
    assert "name concatenated" not in found["after"]["signature"]
