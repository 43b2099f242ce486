"""Every example in the README runs as written.

`console` blocks: each `$ ` line runs in a scratch folder holding the bundled cassettes, scenarios
and examples; `toolstream` is this checkout's CLI. `toolstream record` and a recording Python
example talk to a local fake provider through the SDKs' own endpoint variables (`OPENAI_BASE_URL`),
never to the real one. `python` blocks run as scripts there; `yaml` blocks are scenarios and are
applied to the corpus. The pages under docs/ are run the same way by `test_docs_examples.py`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests._markdown_examples import (
    ROOT,
    Block,
    blocks,
    is_slow,
    leaked_key,
    provider_for,
    run_block,
    scratch,
)

README_BLOCKS = blocks(ROOT / "README.md", ("console", "python", "yaml"))


def _param(block: Block) -> object:
    return pytest.param(block, id=block.id, marks=[pytest.mark.slow] if is_slow(block) else [])


@pytest.mark.parametrize("block", [_param(block) for block in README_BLOCKS])
def test_readme_example(block: Block, tmp_path: Path) -> None:
    if block.kind == "python" and "import pytest" in block.text:
        pytest.skip("a pytest example: tests/docs/test_pytest_plugin_docs.py runs those of docs/pytest.md")
    env = scratch(tmp_path)
    with provider_for(block, env):
        run_block(block, tmp_path, env)
    assert not leaked_key(tmp_path)


def test_the_readme_links_a_page_for_every_task() -> None:
    """Each job of the ten-minute path ends by linking the page that has its reference."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    path = text.split("\n## Ten minutes\n", 1)[1].split("\n## ", 1)[0]
    for task in path.split("\n### ")[1:]:
        title = task.splitlines()[0]
        assert "](docs/" in task, f"the task {title!r} links no page under docs/"
