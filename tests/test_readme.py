"""Every example in the README runs as written.

`console` blocks: each `$ ` line runs in a scratch folder holding the bundled cassettes, scenarios
and examples; `toolstream` is this checkout's CLI. `toolstream record` and the recording Python
example talk to a local fake provider through the SDKs' own endpoint variables (`OPENAI_BASE_URL`),
never to the real one. `python` blocks run as scripts there; `yaml` blocks are scenarios and are
applied to the corpus.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from _markdown_examples import ROOT, Block, blocks, run_command, run_python, scratch

from harness import load_cassette as load
from harness.matrix.selection import Matrix, Selection
from harness.mutate.scenario import scenario_from_data
from harness.record.fake_provider import FakeProvider

README_BLOCKS = blocks(ROOT / "README.md", ("console", "python", "yaml"))


@pytest.fixture
def readme_scratch(tmp_path: Path) -> Iterator[tuple[Path, dict[str, str]]]:
    env = scratch(tmp_path)
    with FakeProvider.from_cassette(load(ROOT / "cassettes/openai-chat/parallel-2.yaml")) as fake:
        env.update(OPENAI_API_KEY="sk-readme-canary", OPENAI_BASE_URL=fake.url + "/v1")
        yield tmp_path, env


# Examples that run a matrix, a search, a Node or client process, or a Python script importing an
# SDK take seconds each: the full suite runs them, the fast lane (`-m "not slow"`) the quick ones.
SLOW_EXAMPLES = ("toolstream check", "toolstream compare", "toolstream explore", "cmd:node", "--client")


def _param(block: Block) -> object:
    slow = block.kind == "python" or any(command in block.text for command in SLOW_EXAMPLES)
    return pytest.param(block, id=block.id, marks=[pytest.mark.slow] if slow else [])


@pytest.mark.parametrize("block", [_param(block) for block in README_BLOCKS])
def test_readme_example(block: Block, readme_scratch: tuple[Path, dict[str, str]]) -> None:
    kind, text = block.kind, block.text
    cwd, env = readme_scratch
    if "toolstream record" not in text and "RecordingTransport" not in text:
        del env["OPENAI_BASE_URL"]  # only recording examples talk to the (fake) provider
    if kind == "python" and "import pytest" in text:
        pytest.skip("a pytest example: tests/test_pytest_plugin_docs.py runs it as a test file")
    if kind == "python":
        run_python(text, cwd, env)
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
