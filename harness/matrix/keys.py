"""What case ids and built cases are keyed by: the bytes of the code that makes them, a cassette
file's bytes and name, a scenario's steps and seeds. Below both stores (the catalog of ids and
the built-case store) and the selection that uses them."""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from harness import bounded
from harness._version import __version__
from harness.bounded import yaml as safe_yaml

if TYPE_CHECKING:
    from harness.mutate.scenario import Scenario

__all__ = ["code_digest", "file_key", "scenario_key"]

_ID_CODE: Final = ("mutate", "wire", "cassettes", "bounded", "matrix/selection.py", "errors.py")


@functools.cache
def code_digest() -> str:
    """A digest of the bytes of every module case ids depend on (content, not modification
    times, so a fresh clone of the same commit agrees), registered mutations included."""
    from harness.mutate import registry

    root = Path(__file__).resolve().parent.parent  # harness/
    files: set[Path] = set()
    for part in _ID_CODE:
        found = root / part
        files |= set(found.rglob("*.py")) if found.is_dir() else {found}
    files |= {Path(f) for cls in registry().values() if (f := inspect.getsourcefile(cls))}
    digest = hashlib.sha256(__version__.encode())
    for path in sorted(files):
        name = path.relative_to(root).as_posix() if path.is_relative_to(root) else str(path)
        digest.update(name.encode("utf-8", "surrogatepass") + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def file_key(cassette_name: str, dialects: tuple[str, ...], path: Path) -> str:
    """The key of one cassette file's ids: the code, the file's bytes, its name in case ids and
    the dialect filter (not its location, so any checkout of the same corpus shares it)."""
    digest = hashlib.sha256(code_digest().encode())
    digest.update(cassette_name.encode("utf-8", "surrogatepass") + b"\0")
    digest.update(repr(dialects).encode() + b"\0")
    digest.update(hashlib.sha256(bounded.read(path, safe_yaml.MAX_CHARS)).digest())
    return digest.hexdigest()[:32]


def scenario_key(scenario: Scenario, seeds: Any) -> str:
    """The key of one scenario's ids within a file's: its steps and the seeds it runs."""
    text = json.dumps([scenario.to_data(), list(seeds)], sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
