"""The README's Layout table matches the tree: every path it names exists, every stage package is named."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _layout_paths() -> set[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Layout\n", 1)[1].split("\n## ", 1)[0]
    rows = [row for row in section.splitlines() if row.startswith("| ")]
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
    # A package is named itself (`harness/check/`) or through its sub-packages (`harness/wire/codecs/`).
    assert sorted(p for p in packages if not any(n == p or n.startswith(p + "/") for n in named)) == []
