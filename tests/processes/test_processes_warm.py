"""`harness.processes.warm`: a warm start never changes a verdict. Hostile programs, each doing
what a warm start could get wrong, run through `toolstream check --client` warm and `--cold` give
the same verdicts (every one a pass, as cold); where a warm start cannot honour a program, it is
found out, and the program runs cold, said once.

The programs are `tests/_hostile_programs.py`'s; the slow lane's fuzz harness runs them too
(tests/test_fuzz_inputs.py)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.cli import main
from harness.processes import subreaper
from tests._hostile_programs import CASES, COLD, HOSTILE_NODE, HOSTILE_PYTHON, python_site, write_program

# What a warm start cannot honour, found out (the program then runs cold, said once): its own module
# named like one the zygote imported; a value kept from the zygote's environment by ways the
# zygote does not watch. The rest a warm start now honours.
COLD_FROM_THEN_ON = {"own-sysconfig", "own-signal", "env-data", "env-posix", "env-proc", "env-proc-at-run"}


def verdicts(command: str, out: Path, *, cold: bool) -> tuple[int, list[tuple[str, str]]]:
    """`check --client` over `CASES`: its exit code and each case's verdict."""
    argv = ["check", "--client", command, *(w for c in CASES for w in ("--case", c)), "--json", str(out)]
    code = main([*argv, *(["--cold"] if cold else [])])
    cases = json.loads(out.read_text())["cases"] if out.exists() else []
    return code, [(case["id"], case["verdict"]) for case in cases]


@pytest.fixture(scope="module")
def interpreter(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return python_site(tmp_path_factory.mktemp("venv"))


@pytest.fixture(autouse=True)
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("TOOLSTREAM_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("TOOLSTREAM_WARM", raising=False)
    yield


@pytest.mark.skipif(not subreaper.CONTAINED, reason="Python warm starts need Linux")
@pytest.mark.parametrize("name", sorted(HOSTILE_PYTHON))
def test_a_hostile_python_program_gets_its_cold_verdicts_warm(
    name: str,
    interpreter: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    program = write_program(tmp_path / name, HOSTILE_PYTHON[name])
    written = tmp_path / "written.txt"
    monkeypatch.setenv("HOSTILE_FILE", str(written))
    command = f"{interpreter} {program}"
    cold = verdicts(command, tmp_path / "cold.json", cold=True)
    cold_file = written.read_text() if written.exists() else ""
    written.unlink(missing_ok=True)
    capsys.readouterr()
    warm = verdicts(command, tmp_path / "warm.json", cold=False)
    said = capsys.readouterr().err
    assert cold == (0, [(case, "pass") for case in CASES])
    assert warm == cold
    assert (written.read_text() if written.exists() else "") == cold_file
    assert said.count("runs cold from now on") == (1 if name in COLD_FROM_THEN_ON else 0), said


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
@pytest.mark.parametrize("name", sorted(HOSTILE_NODE))
def test_a_hostile_node_program_gets_its_cold_verdicts_warm(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    program = write_program(tmp_path / name, HOSTILE_NODE[name])
    command = f"node {program}"
    cold = verdicts(command, tmp_path / "cold.json", cold=True)
    capsys.readouterr()
    warm = verdicts(command, tmp_path / "warm.json", cold=False)
    said = capsys.readouterr().err
    expected = COLD.get(name, "pass")
    assert cold == (0 if expected == "pass" else 1, [(case, expected) for case in CASES])
    assert warm == cold
    assert said.count("runs cold from now on") == 1  # a worker cannot: found out, and said once


def test_runs_warm_says_which_commands_start_warm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What a verdict's cache key can say besides the program's files (`runs_warm`)."""
    from harness.processes.warm import runs_warm

    (tmp_path / "agent.py").write_text("")
    (tmp_path / "agent.mjs").write_text("")
    python = f"exec python3 {tmp_path / 'agent.py'}"
    assert runs_warm(python) is subreaper.CONTAINED
    assert runs_warm(f"node {tmp_path / 'agent.mjs'}") is (shutil.which("node") is not None)
    assert not runs_warm(f"{python} | cat") and not runs_warm(python, on=False)
    monkeypatch.setenv("TOOLSTREAM_WARM", "0")
    assert not runs_warm(python)
