"""The examples a user copies import only `harness`'s public names (its `__all__`)."""

from __future__ import annotations

import ast
from pathlib import Path

import harness

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_examples_import_only_the_public_names_of_harness() -> None:
    found = []
    for path in sorted(EXAMPLES.rglob("*.py")):  # table.py, the project's own tool, too
        if "node_modules" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            where = f"{path.relative_to(EXAMPLES)}:{getattr(node, 'lineno', 0)}"
            if isinstance(node, ast.Import):
                found += [f"{where} {a.name}" for a in node.names if a.name.startswith("harness.")]
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("harness"):
                if node.module != "harness":
                    found.append(f"{where} {node.module}")
                else:
                    found += [f"{where} {a.name}" for a in node.names if a.name not in harness.__all__]
    assert found == []
