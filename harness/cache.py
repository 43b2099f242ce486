"""Where the harness keeps what it can rebuild: `$TOOLSTREAM_CACHE`, else
`$XDG_CACHE_HOME/toolstream`, else `~/.cache/toolstream`. One folder per kind below it: `cases/`
(the built-case store, `harness.matrix.casecache`), `report-card/` (side environments)."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["ENV", "home"]

ENV = "TOOLSTREAM_CACHE"


def home() -> Path:
    """The cache folder (an empty `TOOLSTREAM_CACHE` counts as unset)."""
    chosen = os.environ.get(ENV, "").strip()
    if chosen:
        return Path(chosen).expanduser()
    base = os.environ.get("XDG_CACHE_HOME", "").strip() or str(Path("~/.cache").expanduser())
    return Path(base) / "toolstream"
