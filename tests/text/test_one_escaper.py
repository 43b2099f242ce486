"""One escaper per output language (`harness.text.escape`): no other module of `harness/` calls
`html.escape` itself, so every page escapes a stranger's value alike (control characters shown,
markup as text)."""

from __future__ import annotations

import ast
from pathlib import Path

HARNESS = Path(__file__).resolve().parents[2] / "harness"
ESCAPER = HARNESS / "text" / "escape.py"


def direct_escapes(code: str) -> list[int]:
    """The lines of `code` that import the `html` module or a name of it."""
    lines = []
    for node in ast.walk(ast.parse(code)):
        named = [a.name for a in node.names] if isinstance(node, ast.Import) else []
        if "html" in named or (isinstance(node, ast.ImportFrom) and node.module == "html"):
            lines.append(node.lineno)
    return lines


def test_only_the_escaper_uses_the_html_module() -> None:
    found = [
        f"{path.relative_to(HARNESS)}:{line}"
        for path in sorted(HARNESS.rglob("*.py"))
        if path != ESCAPER
        for line in direct_escapes(path.read_text(encoding="utf-8"))
    ]
    assert found == []


def test_the_check_sees_both_imports() -> None:
    assert direct_escapes("import html\nfrom html import escape\nimport json\n") == [1, 2]
