"""Every example in the README runs as written.

`console` blocks: each `$ ` line runs in a scratch folder holding the bundled cassettes, scenarios
and examples; `toolstream` is this checkout's CLI. `toolstream record` and the recording Python
example talk to a local fake provider through the SDKs' own endpoint variables (`OPENAI_BASE_URL`),
never to the real one. `python` blocks run as scripts there; `yaml` blocks are scenarios and are
applied to the corpus.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness import load_cassette as load
from harness.check.selection import Matrix, Selection
from harness.mutate.scenario import scenario_from_data
from harness.record.fake_provider import FakeProvider

ROOT = Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"^```(console|python|yaml)\n(.*?)^```", re.MULTILINE | re.DOTALL)
VERDICT_COMMANDS = ("check", "compare", "explore")  # exit 1 means "found failures": a result, not an error


def blocks() -> list[tuple[str, str]]:
    return [(m.group(1), m.group(2)) for m in BLOCK.finditer((ROOT / "README.md").read_text())]


def block_id(block: tuple[str, str]) -> str:
    kind, text = block
    first = next(line for line in text.splitlines() if line.strip() and not line.startswith("#"))
    return f"{kind}: {first.removeprefix('$ ')[:60]}"


@pytest.fixture
def scratch(tmp_path: Path) -> Iterator[tuple[Path, dict[str, str]]]:
    for name in ("cassettes", "scenarios", "examples"):
        (tmp_path / name).symlink_to(ROOT / name)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), str(tmp_path), env.get("PYTHONPATH")]))
    with FakeProvider.from_cassette(load(ROOT / "cassettes/openai-chat/parallel-2.yaml")) as fake:
        env.update(OPENAI_API_KEY="sk-readme-canary", OPENAI_BASE_URL=fake.url + "/v1")
        yield tmp_path, env


@pytest.mark.parametrize("block", blocks(), ids=block_id)
def test_readme_example(block: tuple[str, str], scratch: tuple[Path, dict[str, str]]) -> None:
    kind, text = block
    cwd, env = scratch
    if "toolstream record" not in text and "RecordingTransport" not in text:
        del env["OPENAI_BASE_URL"]  # only recording examples talk to the (fake) provider
    if kind == "python" and "import pytest" in text:
        pytest.skip("a pytest example: tests/test_pytest_plugin_docs.py runs it as a test file")
    if kind == "python":
        run = subprocess.run(
            [sys.executable, "-c", text], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
        )
        assert run.returncode == 0, run.stderr
    elif kind == "yaml":
        import yaml

        scenario = scenario_from_data(yaml.safe_load(text), where="README.md")
        cases = list(Matrix(Selection(seeds=1), [scenario]).all())
        assert cases and all(case.expected is not None for case in cases)
    else:
        for line in text.splitlines():
            if line.startswith("$ "):
                run_command(line[2:], cwd, env)
    if kind != "yaml":
        assert not any("sk-readme-canary" in p.read_text(errors="replace") for p in cwd.rglob("*.yaml"))


def run_command(command: str, cwd: Path, env: dict[str, str]) -> None:
    if "node " in command and shutil.which("node") is None:
        pytest.skip("node is not installed")
    assert command.startswith("toolstream "), command
    argv = f"{sys.executable} -m harness.cli {command.removeprefix('toolstream ')}"
    run = subprocess.run(argv, shell=True, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    allowed = (0, 1) if command.split()[1] in VERDICT_COMMANDS else (0,)
    assert run.returncode in allowed, f"{command}\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
