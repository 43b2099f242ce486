"""Docs are users: every python block of the README and of the pages under docs/ imports only public
names, those of `harness.__all__` and of the one public module besides, `harness.strategies`."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import harness
from tests._markdown_examples import ROOT, blocks

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
PUBLIC_MODULES = {"harness": set(harness.__all__), "harness.strategies": None}  # None: any of its names


def private_imports(code: str) -> list[str]:
    """Each import in `code` of a `harness` module or name that is not public."""
    found = []
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            named = [a.name for a in node.names]
            found += [name for name in named if name.startswith("harness.") and name not in PUBLIC_MODULES]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "harness":
            module = node.module or ""
            if module not in PUBLIC_MODULES:
                found.append(module)
                continue
            names = PUBLIC_MODULES[module]
            found += [f"{module}.{a.name}" for a in node.names if names is not None and a.name not in names]
    return found


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_every_python_block_imports_public_names_only(page: Path) -> None:
    found = [
        f"{page.name}:{block.line} {name}"
        for block in blocks(page, ("python",))
        for name in private_imports(block.text)
    ]
    assert found == []


def test_the_check_sees_a_stage_module_and_a_name_not_exported() -> None:
    code = (
        "import harness.wire\nfrom harness.matrix.selection import build_case\n"
        "from harness import Outcome, _EXPORTS\nfrom harness.strategies import cases\n"
    )
    assert private_imports(code) == ["harness.wire", "harness.matrix.selection", "harness._EXPORTS"]
