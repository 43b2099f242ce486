"""The wire layer (codecs, dialects and what a provider takes) imports nothing above it."""

from __future__ import annotations

import ast
from pathlib import Path

from test_layers import LAYERS

WIRE = Path(__file__).resolve().parents[2] / "harness" / "wire"
# Every stage above wire in the layers test's list.
ABOVE = tuple(name for layer in LAYERS[: LAYERS.index("wire")] for name in layer.split(" | "))
ABOVE = tuple(name.removesuffix(".py") for name in ABOVE if name != "__init__.py")
STILL_ALLOWED: tuple[str, ...] = ()  # the outcome model now sits below wire, in cassettes


def imported(path: Path) -> list[str]:
    """Every module `path` imports, at run time or for type checking."""
    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return names


def test_nothing_under_harness_wire_imports_a_layer_above_it() -> None:
    above = tuple(f"harness.{name}" for name in ABOVE)
    found = sorted(
        f"{path.relative_to(WIRE.parent)}: {name}"
        for path in WIRE.rglob("*.py")
        for name in imported(path)
        if name.startswith(above) and name not in STILL_ALLOWED
    )
    assert found == []
