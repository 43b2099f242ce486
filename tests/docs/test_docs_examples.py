"""Every example of the pages under docs/ runs as written.

`python` blocks run as scripts in a scratch folder holding the bundled cassettes, scenarios and
examples; one followed by an `output` block must print exactly that (the event listings of
docs/events.md are made by the library from bundled cassettes, so a change to a cassette or a
decoder shows up here). `console` blocks run each `$ ` line; `yaml` blocks are scenarios applied
to the corpus. A recording example talks to a local fake provider. A page whose examples another
test runs, or whose blocks are fragments, says so in `NOT_RUN_HERE`.
"""

from __future__ import annotations

import re
from importlib.metadata import requires, version
from pathlib import Path

import pytest

from harness.wire import dialects
from tests._markdown_examples import (
    ROOT,
    Block,
    blocks,
    declared,
    is_slow,
    leaked_key,
    provider_for,
    run_block,
    run_command,
    scratch,
)

DOCS = ROOT / "docs"
PAGES = (
    "outcome.md",
    "events.md",
    "client-level.md",
    "troubleshooting.md",
    "redaction.md",
    "commands.md",
    "recording.md",
    "security.md",
)
# Every other page, and why its blocks are not run here.
NOT_RUN_HERE = {
    "pytest.md": (
        "test files: tests/docs/test_pytest_plugin_docs.py and tests/plugin/test_recording_in_a_suite.py"
    ),
    "accumulators.md": "fragments of an accumulator (`...` bodies), and the stdio protocol's lines",
    "cassettes.md": "the cassette format, field by field",
    "dialects.md": "a plugin, run by tests/wire/test_dialect_registry.py",
    "report-card.md": "generated blocks, checked by tests/card/test_report_card.py",
    "clients.md": "a generated table, checked by tests/e2e/test_clients_examples.py",
    "strictness.md": "generated blocks, checked by tests/oracle/test_strict_accumulators.py",
    "benchmarks.md": "a generated table, written by benchmarks/run.py (tests/docs/test_benchmarks.py)",
    "layout.md": "a table checked against the tree by tests/structure/test_layout.py",
    "corpus.md": "no example",
    "oracle.md": "no example",
    "serve.md": "no example",
}
KINDS = ("python", "console", "yaml")
EXAMPLES = [block for page in PAGES for block in blocks(DOCS / page, KINDS)]


def _param(block: Block) -> object:
    marks = [pytest.mark.slow] if is_slow(block) else []
    return pytest.param(block, id=f"{block.page}:{block.line}: {block.id}", marks=marks)


@pytest.mark.parametrize("block", [_param(block) for block in EXAMPLES])
def test_docs_example(block: Block, tmp_path: Path) -> None:
    env = scratch(tmp_path)
    with provider_for(block, env):
        run_block(block, tmp_path, env)
    assert not leaked_key(tmp_path)


def test_every_page_is_run_here_or_says_why_not() -> None:
    pages = sorted(page.name for page in DOCS.glob("*.md"))
    assert sorted([*PAGES, *NOT_RUN_HERE]) == pages


def test_a_line_declares_its_exit_code_in_a_shell_comment() -> None:
    assert declared("toolstream check --accumulator x") == ("toolstream check --accumulator x", 0)
    assert declared("toolstream check --accumulator x  # exits 1: cases fail") == (
        "toolstream check --accumulator x",
        1,
    )
    assert declared("toolstream show 'a # b'") == ("toolstream show 'a # b'", 0)


@pytest.mark.parametrize(
    ("line", "wrong"),
    [
        # A verdict command whose line does not say it fails.
        ("python -c 'import sys; sys.exit(1)'", "exited 1, the line declares 0"),
        # A crash that exits 1, as `check --client` did (-j unset): 1 is declared, the traceback is not.
        ("python -c 'raise TypeError(42)'  # exits 1", "a traceback"),
        ("python -c 'pass'  # exits 1", "exited 0, the line declares 1"),
    ],
)
def test_an_example_exits_with_exactly_its_code_and_no_traceback(
    line: str, wrong: str, tmp_path: Path
) -> None:
    env = scratch(tmp_path)
    with pytest.raises(AssertionError, match=wrong):
        run_command(line, tmp_path, env)
    assert run_command("python -c 'import sys; sys.exit(2)'  # exits 2", tmp_path, env) == ""


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
    """Every relative link of the README and of every page names a file that exists, and a heading
    of it when it has an anchor (`#heading` alone: one of the same page)."""
    for page in (ROOT / "README.md", *sorted(DOCS.glob("*.md"))):
        text = page.read_text(encoding="utf-8")
        for target, anchor in re.findall(r"\]\(([\w./-]*)(?:#([\w-]+))?\)", text):
            linked = (page.parent / target) if target else page
            assert linked.exists(), f"{page.name}: {target} does not exist"
            if anchor:
                assert anchor in _anchors(linked), f"{page.name}: {target}#{anchor} names no heading"


def _anchors(page: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces as hyphens."""
    headings = re.findall(r"^#+ (.+)$", page.read_text(encoding="utf-8"), re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-") for heading in headings}
