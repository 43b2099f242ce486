"""The Layout table of docs/layout.md matches the tree: every path it names exists, every stage package is
named; the wheel bundles the corpus folders."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _layout_paths() -> set[str]:
    page = (ROOT / "docs" / "layout.md").read_text(encoding="utf-8")
    rows = [row for row in page.splitlines() if row.startswith("| ")]
    return {path for row in rows for path in re.findall(r"`(harness/[^`]+)`", row)}


def test_every_path_in_the_layout_table_exists() -> None:
    missing = sorted(p for p in _layout_paths() if not (ROOT / p).exists())
    assert not missing


def test_every_package_of_harness_is_in_the_layout_table() -> None:
    named = {p.rstrip("/") for p in _layout_paths()}
    packages = {
        str(init.parent.relative_to(ROOT))
        for init in (ROOT / "harness").rglob("__init__.py")
        if init.parent != ROOT / "harness" and "_bundled" not in init.parts
    }
    # A package is named itself (`harness/oracle/`) or through its sub-packages (`harness/wire/codecs/`).
    assert sorted(p for p in packages if not any(n == p or n.startswith(p + "/") for n in named)) == []


def test_the_wheel_bundles_every_corpus_folder_and_no_script() -> None:
    """Each folder of cassettes/ holding YAML is force-included; cassettes/synthesize is not (its
    scripts, named after SDKs, would make pytest rewrite those SDKs in an editable install)."""
    wheel = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["hatch"]["build"]["targets"]["wheel"]
    bundled = set(wheel["force-include"])
    corpus = {f"cassettes/{p.name}" for p in (ROOT / "cassettes").iterdir() if any(p.glob("*.yaml"))}
    assert corpus <= bundled
    assert not any(key.startswith("cassettes/synthesize") or key == "cassettes" for key in bundled)


def test_the_layout_table_lists_the_stages_bottom_first_as_the_layers_test_does() -> None:
    """The table reads up the pipeline in the order of `tests/structure/test_layers.py`'s LAYERS."""
    from test_layers import LAYERS, stage_ranks

    ranks = stage_ranks(LAYERS)
    page = (ROOT / "docs" / "layout.md").read_text(encoding="utf-8")
    rows = [row for row in page.splitlines() if row.startswith("| ")]
    order = []
    for row in rows:
        for path in re.findall(r"`harness/([^`/.]+)/[^`]*`", row):
            rank = ranks.get(path)
            if rank is not None:
                order.append(rank[0])
    assert order and order == sorted(order)
    folders = {name for name, (rank, _) in ranks.items() if not name.endswith(".py")}
    assert folders <= {p.split("/")[1] for p in _layout_paths()}


def test_the_tests_mirror_the_stages() -> None:
    """Each test module sits in a folder named for a stage of LAYERS (foundations/ for the top-level
    modules at the bottom), or in e2e/, docs/ or structure/."""
    from test_layers import LAYERS, stage_ranks

    stages = {name.removesuffix(".py") for name in stage_ranks(LAYERS)}
    allowed = stages | {"foundations", "e2e", "docs", "structure"}
    tests = ROOT / "tests"
    misplaced = sorted(
        str(path.relative_to(tests)) for path in tests.rglob("test_*.py") if path.parent.name not in allowed
    )
    assert misplaced == []
