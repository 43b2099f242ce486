"""The bundled corpus: where it lives and how to list its cassettes (a cassette synthesized from a
dialect's events is `harness.wire.synthesis`, a stage up)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from harness.cassettes.model import Cassette, Declared
from harness.errors import UsageError

_PACKAGE = Path(__file__).resolve().parent.parent  # harness/


def bundled(kind: str = "cassettes") -> Path:
    """The bundled `cassettes` or `scenarios` folder, in a checkout or an installed wheel."""
    for candidate in (_PACKAGE.parent / kind, _PACKAGE / "_bundled" / kind):
        if candidate.is_dir():
            return candidate
    raise UsageError(f"no bundled {kind} folder found next to the harness package")


def cassette_paths(paths: Iterable[str | Path] | None = None) -> list[Path]:
    """Expand files and folders into cassette files (`*.yaml`, `*.yml`), sorted; default: bundled.
    Each is a path or a cassette's name in case ids (`located`)."""
    roots = [located(p) for p in paths] if paths else [bundled("cassettes")]
    out: list[Path] = []
    for root in roots:
        if root.is_dir():
            out.extend(sorted(p for p in root.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file()))
        elif root.is_file():
            out.append(root)
        else:
            raise UsageError(
                f"{root}: no such cassette file or folder, nor a bundled cassette of that name "
                "(toolstream cassettes lists them)"
            )
    return out


_SUFFIXES = (".yaml", ".yml")


def located(given: str | Path) -> Path:
    """A cassette file or folder given by its path, else by its name in case ids: the path
    without its suffix (`tests/cassettes/chat`), or a bundled cassette or folder
    (`openai-chat/parallel-2`, `openai-chat`); `given` as is when none exists. A name that climbs
    out of the bundled corpus (`..`, absolute, a symlink out) names nothing in it."""
    path = Path(given)
    if path.exists():
        return path
    text = str(given)
    for suffix in _SUFFIXES:
        if Path(text + suffix).is_file():
            return Path(text + suffix)
    try:
        root = bundled("cassettes").resolve()
    except UsageError:
        return path
    if not text or path.is_absolute() or ".." in path.parts or "\\" in text:
        return path
    for candidate in (root / text, *(root / (text + suffix) for suffix in _SUFFIXES)):
        if candidate.exists() and candidate.resolve().is_relative_to(root):
            return candidate
    return path


def declare(cassette: Cassette, case_class: str, reason: str) -> Cassette:
    """The cassette with each interaction declaring the class of its expectation
    (`expected_class`): a recording that is itself a documented deviation says `quirk` and which."""
    for interaction in cassette.interactions:
        interaction.declared = Declared(case_class, reason)
    return cassette
