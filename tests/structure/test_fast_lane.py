"""The fast lane (`pytest -m "not slow"`) covers every test module: each has a test not marked slow.

Read from the source (no collection, which would build the whole matrix): a module is covered
when some `test_*` function lacks `@pytest.mark.slow` and the module has no `pytestmark` naming slow.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
MODULES = sorted(TESTS.rglob("test_*.py"))


def is_slow(node: ast.expr) -> bool:
    """`pytest.mark.slow` (or a call of it), alone or in a list."""
    if isinstance(node, ast.Call):
        return is_slow(node.func)
    if isinstance(node, ast.List | ast.Tuple):
        return any(is_slow(item) for item in node.elts)
    return (
        isinstance(node, ast.Attribute) and node.attr == "slow" and ast.unparse(node.value).endswith("mark")
    )


def fast_tests(tree: ast.Module) -> list[str]:
    for statement in tree.body:
        targets = statement.targets if isinstance(statement, ast.Assign) else []
        if any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in targets) and is_slow(
            statement.value
        ):  # type: ignore[union-attr]
            return []
    tests = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test")
    ]
    return [test.name for test in tests if not any(is_slow(d) for d in test.decorator_list)]


@pytest.mark.parametrize("path", MODULES, ids=[str(p.relative_to(TESTS)) for p in MODULES])
def test_every_module_has_a_test_in_the_fast_lane(path: Path) -> None:
    assert fast_tests(ast.parse(path.read_text())), f"{path.name}: every test is marked slow"


def test_the_check_sees_slow_marks() -> None:
    marked = ast.parse("import pytest\n@pytest.mark.slow\ndef test_a(): pass\n")
    module_wide = ast.parse("import pytest\npytestmark = [pytest.mark.slow]\ndef test_a(): pass\n")
    fast = ast.parse("import pytest\n@pytest.mark.slow\ndef test_a(): pass\ndef test_b(): pass\n")
    assert fast_tests(marked) == [] and fast_tests(module_wide) == [] and fast_tests(fast) == ["test_b"]
