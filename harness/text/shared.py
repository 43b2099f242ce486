"""How files are named in what is written to be shared: never by this machine's paths.

Reproductions (repro scripts, explore's and compare's shrunk cassettes and their provenance),
HTML reports and the report card travel to other machines. A bundled cassette is named there by
its corpus name (`openai-chat/groq-whole-calls.yaml`), a user's file by its path relative to the
folder the command ran in; `without_machine_paths` takes this machine's folders (the checkout,
the current folder, the toolstream cache and this Python's environment, the temporary folder, the
home folder) out of free text such as an error.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from harness import cache
from harness.cassettes import corpus
from harness.errors import UsageError

__all__ = ["shared_name", "shared_values", "without_machine_paths"]


def _bundled_folders() -> Iterator[Path]:
    for kind in ("cassettes", "scenarios"):
        try:
            yield corpus.bundled(kind).resolve()
        except UsageError:
            continue


def shared_name(path: str | Path) -> str:
    """`path` as a shared file names it: below the bundled corpus by its corpus name, below the
    current folder relative to it, else by its folder and name (never an absolute path)."""
    resolved = Path(path).resolve()
    for base in (*_bundled_folders(), Path.cwd().resolve()):
        if resolved.is_relative_to(base):
            return resolved.relative_to(base).as_posix() or "."
    return "/".join(resolved.parts[-2:])


def _machine_folders() -> tuple[re.Pattern[str], dict[str, str]]:
    """One pattern matching any of this machine's folders (longest first), and the name a shared
    text gives each."""
    harness_parent = Path(__file__).resolve().parents[2]
    checkout = "<checkout>" if (harness_parent / "pyproject.toml").is_file() else "<install>"
    found: dict[str, str] = {str(p): p.name for p in _bundled_folders()}
    for folder, said in (
        (str(cache.home()), "<toolstream cache>"),
        (str(cache.home().resolve()), "<toolstream cache>"),
        (str(Path(sys.prefix)), "<python>"),
        (str(Path.cwd().resolve()), "."),
        (os.getcwd(), "."),
        (str(harness_parent), checkout),
        (str(Path(tempfile.gettempdir()).resolve()), "<tmp>"),
        (tempfile.gettempdir(), "<tmp>"),
        (str(Path.home()), "~"),
    ):
        if len(folder) > 1:
            found.setdefault(folder, said)
    ordered = sorted(found, key=len, reverse=True)
    # A folder ends where a path component does: `/home/ann` is not replaced in `/home/anna`.
    pattern = "|".join(re.escape(folder) for folder in ordered)
    return re.compile(f"(?:{pattern})" + r"(?![^/\\\s'\"`),;:\]])"), found


def without_machine_paths(text: str) -> str:
    """`text` with this machine's folders replaced by what a reader elsewhere can follow: the
    corpus folders by their names, the current folder by `.`, the checkout, the toolstream cache,
    this Python's environment, the temporary folder and the home folder by `<checkout>`,
    `<toolstream cache>`, `<python>`, `<tmp>` and `~`."""
    pattern, said = _machine_folders()
    return pattern.sub(lambda m: said[m[0]], text)


def shared_values(data: Any) -> Any:
    """Plain data (a report, a card) with `without_machine_paths` applied to every string."""
    pattern, said = _machine_folders()

    def walk(value: Any) -> Any:
        if isinstance(value, str):
            return pattern.sub(lambda m: said[m[0]], value)
        if isinstance(value, Mapping):
            return {key: walk(item) for key, item in value.items()}
        if isinstance(value, list | tuple):
            return [walk(item) for item in value]
        return value

    return walk(data)
