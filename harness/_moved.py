"""Old module paths kept for one release: each is a shim that warns and hands over to the new home.

A shim is two lines, `from harness._moved import moved` and `moved(__name__, "harness.new.path")`.
The new home is named as a string, so the import graph (`tests/structure/test_layers.py`) has no arrow from
a shim; the layers test fails any module of `harness/` that imports one. A moved module is its
new module (`sys.modules` holds the same object under both names, so a patch through either name
is seen by both); a module split in two, or a package, forwards attribute look-ups in order.
"""

from __future__ import annotations

import importlib
import runpy
import sys
import warnings
from types import ModuleType
from typing import Any

__all__ = ["moved"]

REMOVED_IN = "0.2.0"


def moved(old: str, *new: str) -> None:
    """Make module `old` (the caller, a shim) stand for `new`, warning once per import."""
    if old == "__main__":  # `python -m harness.matrix.catalog`: run the new module as the program
        runpy.run_module(new[0], run_name="__main__", alter_sys=True)
        return
    shim = sys.modules[old]
    warnings.warn(
        f"{old} has moved to {' and '.join(new)}; import it from there "
        f"(the old path goes in toolstream-harness {REMOVED_IN})",
        DeprecationWarning,
        stacklevel=3,  # the line that imported the shim (warnings skips the import machinery's frames)
    )
    targets = [importlib.import_module(name) for name in new]
    if len(targets) == 1 and not hasattr(shim, "__path__"):
        sys.modules[old] = targets[0]  # the import statement binds what sys.modules holds
        return
    _forward(shim, targets)


def _forward(shim: ModuleType, targets: list[ModuleType]) -> None:
    """Attribute look-ups on `shim` (a package, or a module split in two) go to `targets` in order."""

    def __getattr__(name: str) -> Any:
        for target in targets:
            if hasattr(target, name):
                return getattr(target, name)
        raise AttributeError(f"module {shim.__name__!r} has no attribute {name!r}")

    names = sorted({n for t in targets for n in getattr(t, "__all__", ())})
    shim.__getattr__ = __getattr__  # type: ignore[method-assign]
    shim.__all__ = names  # type: ignore[attr-defined]
