"""`harness.processes.command`: the one reading of `[VAR=v] [exec] PROGRAM ARGS` that Python's and
Node's warm starts share."""

from __future__ import annotations

from pathlib import Path

from harness.processes.command import Command, parse
from harness.processes.node_warm import node_program
from harness.processes.python_warm import python_program


def test_words_assignments_and_exec_are_taken_apart_as_the_shell_would() -> None:
    assert parse("A=1 B='two words' exec python agent.py 'an arg'") == Command(
        (("A", "1"), ("B", "two words")), ("python", "agent.py", "an arg")
    )
    assert parse(["A=1", "exec", "node"]) == Command((), ("A=1", "exec", "node"))  # a list is the argv


def test_anything_more_than_words_is_the_shells() -> None:
    for command in ("node a.mjs | cat", "python $HOME/a.py", "python a.py > out", "A=1", "", "'unclosed"):
        assert parse(command) is None, command


def test_python_and_node_read_the_same_words(tmp_path: Path) -> None:
    """A quoted path with a space: both parse it (the Node parser refused quotes before)."""
    folder = tmp_path / "with space"
    folder.mkdir()
    (folder / "agent.py").write_text("")
    (folder / "agent.mjs").write_text("")
    python = python_program(f"X=1 exec python3 '{folder / 'agent.py'}' a")
    assert python is not None and python.assignments == {"X": "1"} and python.argv[1:] == ("a",)
    node = node_program(f"X=1 exec node '{folder / 'agent.mjs'}' a")
    if node is not None:  # node is installed
        assert node.assignments == (("X", "1"),) and node.args == ("a",)
