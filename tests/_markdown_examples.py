"""The fenced blocks of a Markdown page, and a scratch folder to run them in the way a user would.

Shared by the tests of the README (`test_readme.py`) and of the pages under docs/
(`test_docs_examples.py`): a block is found by its fence, runs in a folder holding the bundled
cassettes, scenarios and examples, and `toolstream` is this checkout's CLI. A recording example
(`toolstream record`, `RecordingTransport`) talks to a local fake provider through the SDKs' own
endpoint variable (`OPENAI_BASE_URL`), never to the real one, and must leave its key out of
every file it writes.

Every command run must exit with exactly the code its line declares and print no traceback: a
`$ ` line that exits other than 0 says so at its end, as a shell comment the reader sees and a
copy-paste ignores (`$ toolstream check ... # exits 1: the merged calls fail`). A crash exits 3
and prints a traceback only on request, so it can never pass for a verdict.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness import load_cassette
from harness.record.fake_provider import FakeProvider

ROOT = Path(__file__).resolve().parents[1]
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```\n?", re.MULTILINE | re.DOTALL)
# `  # exits 1` (and any words after it) at the end of a `$ ` line: the code it exits with.
_EXITS = re.compile(r"\s+#\s*exits\s+(\d+)\b.*$")
TRACEBACK = "Traceback (most recent call last)"


@dataclass(frozen=True)
class Block:
    """One fenced block: its language tag, its text, and the block right after it when nothing
    but blank lines separates them (a python block's expected `output`)."""

    page: str
    line: int
    kind: str
    text: str
    follower: Block | None = None

    @property
    def id(self) -> str:
        first = next(line for line in self.text.splitlines() if line.strip() and not line.startswith("#"))
        return f"{self.kind}: {first.removeprefix('$ ')[:60]}"


def blocks(page: Path, kinds: tuple[str, ...]) -> list[Block]:
    """The page's blocks of these kinds, in order, each with the block that follows it."""
    text = page.read_text(encoding="utf-8")
    found = list(_FENCE.finditer(text))
    if not found:
        return []
    out: list[Block] = []
    following: Block | None = None
    for match, after in reversed(list(zip(found, [*found[1:], None], strict=True))):
        adjacent = after is not None and text[match.end() : after.start()].strip() == ""
        block = Block(
            page=page.name,
            line=text.count("\n", 0, match.start()) + 1,
            kind=match.group(1),
            text=match.group(2),
            follower=following if adjacent else None,
        )
        following = block
        out.append(block)
    return [block for block in reversed(out) if block.kind in kinds]


def scratch(tmp_path: Path) -> dict[str, str]:
    """Link the bundled folders into `tmp_path` and return an environment that imports this checkout."""
    for name in ("cassettes", "scenarios", "examples"):
        (tmp_path / name).symlink_to(ROOT / name)
    # A project of the reader's own: a bare `pytest` collects its tests, not the example agent's
    # (examples/agent_tests), which a line names when it means them.
    (tmp_path / "pytest.ini").write_text("[pytest]\nnorecursedirs = examples cassettes scenarios\n")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), str(tmp_path), env.get("PYTHONPATH")]))
    return env


# Examples that run a matrix, a search, a Node or client process, or a Python script importing an
# SDK take seconds each: the full suite runs them, the fast lane (`-m "not slow"`) the quick ones.
SLOW_EXAMPLES = (
    "toolstream check",
    "toolstream compare",
    "toolstream explore",
    "cmd:node",
    "--client",
    "--toolstream-accumulator",
    "examples/agent_tests",
    "import openai",
    "import anthropic",
)
RECORDING_EXAMPLES = ("toolstream record", "RecordingTransport")
CANARY = "sk-docs-canary"


def is_slow(block: Block) -> bool:
    return any(command in block.text for command in SLOW_EXAMPLES)


@contextmanager
def provider_for(block: Block, env: dict[str, str]) -> Iterator[None]:
    """A recording example's provider: a loopback one serving a bundled stream, its key a canary
    that must reach no file the example writes. Other examples get none."""
    if not any(marker in block.text for marker in RECORDING_EXAMPLES):
        yield
        return
    with FakeProvider.from_cassette(load_cassette(ROOT / "cassettes/openai-chat/parallel-2.yaml")) as fake:
        env.update(OPENAI_API_KEY=CANARY, OPENAI_BASE_URL=fake.url + "/v1")
        yield


def leaked_key(folder: Path) -> list[Path]:
    """The YAML files under `folder` (cassettes, recordings) holding the canary key."""
    return [p for p in folder.rglob("*.yaml") if CANARY in p.read_text(errors="replace")]


def run_python(text: str, cwd: Path, env: dict[str, str]) -> str:
    """Run a block as a script; its stdout, or the test fails with its stderr (exit 0, no traceback)."""
    run = subprocess.run(
        [sys.executable, "-c", text], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0 and TRACEBACK not in run.stderr, run.stderr
    return run.stdout


def declared(line: str) -> tuple[str, int]:
    """A `$ ` line's command without its `# exits N` comment, and N (0 when it has none)."""
    found = _EXITS.search(line)
    if found is None:
        return line, 0
    return line[: found.start()], int(found.group(1))


def run_command(line: str, cwd: Path, env: dict[str, str]) -> str:
    """Run one `$ toolstream ...` (or `$ python ...`, `$ pytest ...`) line of a console block; its
    stdout. It must exit with the code the line declares and print no traceback."""
    command, expected = declared(line)
    if "node " in command and shutil.which("node") is None:
        pytest.skip("node is not installed")
    if command.startswith("python "):
        argv = f"{sys.executable} {command.removeprefix('python ')}"
    elif command.startswith("pytest "):
        argv = f"{sys.executable} -m {command}"
    else:
        assert command.startswith("toolstream "), command
        argv = f"{sys.executable} -m harness.cli {command.removeprefix('toolstream ')}"
    run = subprocess.run(argv, shell=True, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    said = f"{command}\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
    assert TRACEBACK not in run.stderr, f"a traceback: {said}"
    assert run.returncode == expected, (
        f"exited {run.returncode}, the line declares {expected} (a line that exits other than 0 ends "
        f"with `# exits N`): {said}"
    )
    return run.stdout


def run_block(block: Block, cwd: Path, env: dict[str, str]) -> None:
    """Run one block the way its reader would: a `python` block as a script (printing exactly the
    `output` block right after it, if any), each `$ ` line of a `console` block, a `yaml` block as
    a scenario applied to the bundled corpus."""
    if block.kind == "python":
        printed = run_python(block.text, cwd, env)
        if block.follower is not None and block.follower.kind == "output":
            assert printed == block.follower.text, f"{block.page}:{block.line} printed:\n{printed}"
    elif block.kind == "yaml":
        import yaml

        from harness.matrix.selection import Matrix, Selection
        from harness.mutate.scenario import scenario_from_data

        scenario = scenario_from_data(yaml.safe_load(block.text), where=f"{block.page}:{block.line}")
        cases = list(Matrix(Selection(seeds=1), [scenario]).all())
        assert cases and all(case.expected is not None for case in cases)
    else:
        for line in block.text.splitlines():
            if line.startswith("$ "):
                run_command(line[2:], cwd, env)
