"""Each `toolstream` subcommand imports what it uses: `--version` and `serve-accumulator` children
start without hypothesis or the other subcommands' modules (checked in a fresh interpreter)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from harness.cli import COMMANDS, wanted

PROBE = """
import contextlib, io, json, sys
from harness.cli import main
sys.stdin = io.StringIO("")
with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
    main({argv!r})
print(json.dumps(sorted(sys.modules)), file=sys.stderr)
"""


def modules_after(argv: list[str]) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(argv=argv)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return set(json.loads(done.stderr.strip().splitlines()[-1]))


def command_modules(modules: set[str]) -> set[str]:
    return {name for name in modules if name.startswith("harness.cli.")}


def test_version_imports_no_subcommand_and_no_hypothesis() -> None:
    modules = modules_after(["--version"])
    assert "hypothesis" not in modules
    assert command_modules(modules) == set()
    assert "yaml" not in modules


def test_serve_accumulator_imports_only_its_own_subcommand() -> None:
    modules = modules_after(["serve-accumulator", "reference"])
    assert "hypothesis" not in modules
    assert command_modules(modules) == {"harness.cli.serve_accumulator"}


@pytest.mark.parametrize(
    ("argv", "names"),
    [
        (["--version"], ()),
        (["check", "--accumulator", "reference"], ("check",)),
        (["serve-accumulator", "reference"], ("serve-accumulator",)),
        (["--help"], None),
        ([], None),
        (["no-such-command"], None),
    ],
)
def test_only_the_named_subcommand_is_wanted(argv: list[str], names: tuple[str, ...] | None) -> None:
    assert wanted(argv) == names
    assert names is None or set(names) <= set(COMMANDS)
