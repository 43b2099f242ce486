"""docs/testing-your-agent.md runs as written: its files (a `python` block whose first line is
`# <file>.py`) written into a project, its `$ pytest ...` lines run in order, each with exactly
the exit code it declares (`# exits N`, else 0), the way a user pastes them (pytester; real
loopback HTTP)."""

from __future__ import annotations

import re
import shlex

import openai
import pytest

from tests._pytester_support import ROOT, plugin_args, prepare

pytest_plugins = ["pytester"]
assert openai

PAGE = ROOT / "docs" / "testing-your-agent.md"
_BLOCK = re.compile(r"^```(\w+)\n(.*?)^```", re.M | re.S)
_EXITS = re.compile(r"\s+#\s*exits\s+(\d+)\b.*$")


def steps() -> list[tuple[str, str]]:
    """The page's files and commands, in order: ("file", text) and ("run", line)."""
    out: list[tuple[str, str]] = []
    for kind, body in _BLOCK.findall(PAGE.read_text(encoding="utf-8")):
        if kind == "python":
            name = body.splitlines()[0].removeprefix("# ").strip()
            out.append(("file", f"{name}\n{body}"))
        elif kind == "console":
            out.extend(("run", line[2:]) for line in body.splitlines() if line.startswith("$ "))
    return out


def test_the_page_starts_with_recording_then_the_matrix_then_the_baseline() -> None:
    text = PAGE.read_text(encoding="utf-8")
    headings = re.findall(r"^## (.*)$", text, re.M)
    assert headings[:3] == [
        "1. Record your own conversation",
        "2. The bundled matrix, retargeted onto your tools",
        "3. A baseline: CI green on known bugs",
    ]
    files = [body.split("\n", 1)[0] for kind, body in steps() if kind == "file"]
    assert files == ["agent.py", "test_record.py", "test_served.py", "test_matrix.py"]


@pytest.mark.slow
def test_every_example_runs_with_the_exit_code_it_declares(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    prepare(pytester, monkeypatch)
    for kind, step in steps():
        if kind == "file":
            name, body = step.split("\n", 1)
            (pytester.path / name).write_text(body, encoding="utf-8")
            continue
        declared = _EXITS.search(step)
        code = int(declared[1]) if declared else 0
        argv = shlex.split(_EXITS.sub("", step))
        assert argv[0] == "pytest", step
        run = pytester.runpytest(*plugin_args(), "-p", "no:randomly", *argv[1:])
        assert run.ret == code, (step, run.outlines[-30:])
    said = "\n".join(run.outlines)
    assert "baseline: 32 same" in said  # the last line: the baseline holds the ten known failures (32 cases)
