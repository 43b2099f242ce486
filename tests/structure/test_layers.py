"""The layers contract: `harness/` is cut by pipeline stage, and every import runs down.

Each stage is a folder of `harness/` (or a few top-level modules), written below from the top of
the pipeline to its bottom. A module may import its own stage and any stage below it; stages on
one line are independent (neither imports the other). Every import counts: at module level, in a
function, and under `if TYPE_CHECKING:` (a type is a dependency too; counting them keeps a
circle from hiding behind a lazy import). No module is only an old path: nothing was released, so
nobody holds one. In the spirit of import-linter's layers contract, with `ast` alone.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "harness"

# Top to bottom. A stage names folders (`cli`) or top-level modules (`errors.py`) of harness/.
# `|` puts independent stages on one layer.
LAYERS: tuple[str, ...] = (
    "__main__.py",  # `python -m harness`
    "cli | plugin",  # the shells: one thin module per command; the pytest plugin
    "__init__.py",  # the public names (a lazy table)
    # `toolstream report-card`: libraries graded, side environments, grading, rendering; the
    # hypothesis strategies over the matrix (`harness.strategies`, hypothesis an optional extra)
    "card | strategies.py",
    "report",  # what the user sees: JSON, terminal, HTML, decoded cassettes
    "search",  # explore, compare, shrink, repro
    # selection, the case store, the catalog of ids, the pool, the runner, judge; gateways judged
    # as translators, producers probed
    "matrix | gateway",
    "accumulators",  # the interface, the resolver, event / client level, stdio, programs, adapters
    "serve",  # the replay server a program is pointed at, and the follow-up oracle
    "oracle",  # expectations and their classes, severities, the verdict model
    "record",  # getting bytes: the record flow, imports, a fake provider
    "transports",  # RecordingTransport, ReplayTransport, matching, redaction
    "mutate",  # mutations, scenarios, cases
    "wire",  # codecs, dialects: everything a provider's API is
    "text",  # how values are shown: escapers, terminal lines and tables, shared file names
    "cassettes",  # the cassette model and storage, the outcome model, the bundled corpus
    "processes",  # starting, watching and ending programs: the subreaper, capture, warm starts
    "bounded | files.py",  # foundations: what we read from strangers within bounds; every file we write
    "_version.py | cache.py | collector.py | errors.py | registry.py",  # foundations any stage may use
)


@dataclass(frozen=True)
class Import:
    """One import of one harness module by another: where it is, and what it names."""

    module: str
    path: str
    line: int
    target: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line} -> {self.target}"


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(root: Path) -> tuple[set[str], list[Import]]:
    """Every module of `root/harness` and every import of a harness module in them."""
    modules = {
        module_name(p, root): p for p in sorted((root / "harness").rglob("*.py")) if "_bundled" not in p.parts
    }

    def known(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    found: set[Import] = set()
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    parts = parts[: len(parts) - node.level + 1]
                    base = ".".join([*parts, *([node.module] if node.module else [])])
                # `from harness.x import y` names module `harness.x.y` when there is one.
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            for target in targets:
                if target == "harness" or target.startswith("harness."):
                    resolved = known(target)
                    if resolved is not None and resolved != name:
                        rel = str(path.relative_to(root))
                        found.add(Import(name, rel, node.lineno, resolved))
    return set(modules), sorted(found, key=str)


def only_an_old_path(path: Path) -> bool:
    """A module that only imports, names `__all__` and calls: another module's old path, handing
    over to its new home (a package's `__init__` and a `__main__` may do just that)."""
    body = ast.parse(path.read_text(encoding="utf-8")).body
    imports = [n for n in body if isinstance(n, ast.Import | ast.ImportFrom)]
    exported = [n for n in body if isinstance(n, ast.Assign) and ast.unparse(n.targets[0]) == "__all__"]
    plain = all(isinstance(n, ast.Import | ast.ImportFrom | ast.Expr) or n in exported for n in body)
    return path.name not in ("__init__.py", "__main__.py") and bool(imports) and plain


def stage_ranks(layers: Iterable[str]) -> dict[str, tuple[int, str]]:
    """Stage name -> (rank, stage): the bottom layer is 0; stages on one layer share a rank."""
    ranks: dict[str, tuple[int, str]] = {}
    rows = list(layers)
    for rank, row in enumerate(reversed(rows)):
        for stage in row.split("|"):
            ranks[stage.strip()] = (rank, stage.strip())
    return ranks


def stage_of(module: str, ranks: Mapping[str, tuple[int, str]]) -> str | None:
    """The stage a module belongs to: its folder under harness/, or its own file at the top."""
    parts = module.split(".")
    if module == "harness":
        return "__init__.py"
    key = parts[1] if len(parts) > 2 or f"{parts[1]}.py" not in ranks else f"{parts[1]}.py"
    return key if key in ranks else None


def violations(modules: set[str], found: Iterable[Import], layers: Iterable[str]) -> list[str]:
    """Each import that runs up a layer or across one; each module with no stage."""
    ranks = stage_ranks(layers)
    problems = [
        f"{m}: in no stage of LAYERS"
        for m in sorted(modules)
        if stage_of(m, ranks) is None and not m.startswith("harness._bundled")
    ]
    for imp in found:
        source, target = stage_of(imp.module, ranks), stage_of(imp.target, ranks)
        if source is None or target is None or source == target:
            continue
        if ranks[target][0] > ranks[source][0]:
            problems.append(f"{imp}: {source} may not import {target} (a higher stage)")
        elif ranks[target][0] == ranks[source][0]:
            problems.append(f"{imp}: {source} and {target} are independent")
    return problems


def circles(modules: set[str], found: Iterable[Import]) -> list[list[str]]:
    """Module-level import circles (strongly connected components of more than one module)."""
    edges: dict[str, set[str]] = {m: set() for m in modules}
    for imp in found:
        edges[imp.module].add(imp.target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found_circles: list[list[str]] = []

    def visit(start: str) -> None:  # Tarjan's algorithm, iterative (no recursion limit)
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found_circles.append(sorted(component))

    for module in sorted(edges):
        if module not in index:
            visit(module)
    return found_circles


def test_every_import_runs_down_the_layers() -> None:
    modules, found = imports_of(ROOT)
    assert violations(modules, found, LAYERS) == []


def test_no_import_circle() -> None:
    modules, found = imports_of(ROOT)
    assert circles(modules, found) == []


def test_a_back_import_is_caught(tmp_path: Path) -> None:
    """A copy of the tree with one import running up (a wire module importing the CLI) fails."""
    copy = tmp_path / "harness"
    for path in PACKAGE.rglob("*.py"):
        if "_bundled" not in path.parts:
            (copy / path.relative_to(PACKAGE)).parent.mkdir(parents=True, exist_ok=True)
            (copy / path.relative_to(PACKAGE)).write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
    codec = copy / "wire" / "codecs" / "sse.py"
    codec.write_text(codec.read_text(encoding="utf-8") + "\nfrom harness.cli import main\n", encoding="utf-8")
    modules, found = imports_of(tmp_path)
    problems = violations(modules, found, LAYERS)
    assert len(problems) == 1
    assert problems[0].startswith("harness/wire/codecs/sse.py:")
    assert problems[0].endswith("-> harness.cli: wire may not import cli (a higher stage)")


@pytest.mark.parametrize(
    ("source", "target", "problem"),
    [
        ("harness.wire.x", "harness.cassettes.y", None),
        ("harness.cassettes.y", "harness.wire.x", "cassettes may not import wire (a higher stage)"),
        ("harness.cli.x", "harness.plugin.y", "cli and plugin are independent"),
        ("harness.mutate.x", "harness.errors", None),
        ("harness.errors", "harness.mutate.x", "errors.py may not import mutate (a higher stage)"),
    ],
)
def test_the_checker_on_a_made_up_graph(source: str, target: str, problem: str | None) -> None:
    found = [Import(source, "x.py", 1, target)]
    problems = violations({source, target}, found, LAYERS)
    assert [p.split(": ", 1)[1] for p in problems] == ([] if problem is None else [problem])


def test_a_circle_is_found() -> None:
    found = [Import("harness.a", "a.py", 1, "harness.b"), Import("harness.b", "b.py", 1, "harness.a")]
    assert circles({"harness.a", "harness.b", "harness.c"}, found) == [["harness.a", "harness.b"]]


def test_no_module_is_only_an_old_path() -> None:
    modules = sorted(str(p.relative_to(ROOT)) for p in PACKAGE.rglob("*.py") if only_an_old_path(p))
    assert modules == []


def test_an_old_path_is_recognised(tmp_path: Path) -> None:
    shim = tmp_path / "old.py"
    shim.write_text('"""Moved."""\nfrom harness.bounded import read\n\n__all__ = ["read"]\n')
    warned = tmp_path / "warned.py"
    warned.write_text("from harness._moved import moved\nmoved(__name__, 'harness.bounded')\n")
    real = tmp_path / "real.py"
    real.write_text("import sys\n\nLIMIT = sys.maxsize\n")
    assert only_an_old_path(shim) and only_an_old_path(warned) and not only_an_old_path(real)
