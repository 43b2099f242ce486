"""Every example of the pages under docs/ that teach writing an accumulator runs as written.

`python` blocks run as scripts in a scratch folder holding the bundled cassettes, scenarios and
examples; one followed by an `output` block must print exactly that (the event listings of
docs/events.md are made by the library from bundled cassettes, so a change to a cassette or a
decoder shows up here). `console` blocks run each `$ ` line.
"""

from __future__ import annotations

import re
from importlib.metadata import requires, version
from pathlib import Path

import pytest
from _markdown_examples import ROOT, Block, blocks, run_command, run_python, scratch

from harness.wire import dialects

PAGES = ("outcome.md", "events.md", "client-level.md", "troubleshooting.md", "redaction.md")
EXAMPLES = [block for page in PAGES for block in blocks(ROOT / "docs" / page, ("python", "console"))]


@pytest.mark.parametrize("block", EXAMPLES, ids=lambda block: f"{block.page}:{block.line}: {block.id}")
def test_docs_example(block: Block, tmp_path: Path) -> None:
    env = scratch(tmp_path)
    if block.kind == "python":
        printed = run_python(block.text, tmp_path, env)
        if block.follower is not None and block.follower.kind == "output":
            assert printed == block.follower.text, f"{block.page}:{block.line} printed:\n{printed}"
    else:
        for line in block.text.splitlines():
            if line.startswith("$ "):
                run_command(line[2:], tmp_path, env)


def test_every_python_block_that_prints_shows_its_output() -> None:
    for block in EXAMPLES:
        if block.kind == "python" and "print(" in block.text:
            assert block.follower is not None and block.follower.kind == "output", (
                f"{block.page}:{block.line}: a block that prints is followed by its output block"
            )


def test_events_page_covers_every_dialect() -> None:
    text = (ROOT / "docs" / "events.md").read_text(encoding="utf-8")
    sections = re.findall(r"^## (\S+)$", text, re.MULTILINE)
    assert sorted(sections) == dialects.names()
    for name in dialects.names():
        assert f"| `{name}` |" in text, f"{name} is missing from the field table"


@pytest.mark.parametrize("sdk", ["openai", "anthropic"])
def test_httpx_table_names_the_installed_sdks(sdk: str) -> None:
    """The table of docs/client-level.md was read off the pinned SDKs: a new pin re-checks it."""
    text = (ROOT / "docs" / "client-level.md").read_text(encoding="utf-8")
    row = next(line for line in text.splitlines() if "(pinned here)" in line and f"`{sdk}`" in line)
    assert f"{version(sdk)} (pinned here)" in row
    built_on = [req for req in requires(sdk) or [] if req.startswith("httpx")]
    assert built_on and all(req.startswith("httpx2") for req in built_on), built_on
    assert "`httpx2`" in row


def test_links_between_the_pages_resolve() -> None:
    for page in (*(ROOT / "docs" / name for name in PAGES), ROOT / "docs" / "accumulators.md"):
        text = page.read_text(encoding="utf-8")
        for target, anchor in re.findall(r"\]\(([\w./-]+\.md)(?:#([\w-]+))?\)", text):
            linked = page.parent / target
            assert linked.is_file(), f"{page.name}: {target} does not exist"
            if anchor:
                assert anchor in _anchors(linked), f"{page.name}: {target}#{anchor} names no heading"


def _anchors(page: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces as hyphens."""
    headings = re.findall(r"^#+ (.+)$", page.read_text(encoding="utf-8"), re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-") for heading in headings}
