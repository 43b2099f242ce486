"""The old module paths (shims, `harness._moved`): each warns, naming its new home, and hands over
the same objects; nothing of `harness/` imports one (`tests/structure/test_layers.py`)."""

from __future__ import annotations

import importlib
import subprocess
import sys
import warnings

import pytest
from test_layers import ROOT, shims

import harness.accumulators.stdio_process
import harness.matrix.selection
import harness.oracle.verdict
from harness.matrix.judging import judge

OLD_PATHS = sorted(shims(ROOT) - {"harness.check"})


def _fresh_import(name: str) -> tuple[object, list[warnings.WarningMessage]]:
    sys.modules.pop(name, None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        module = importlib.import_module(name)
    return module, [w for w in caught if issubclass(w.category, DeprecationWarning)]


@pytest.mark.parametrize("old", OLD_PATHS)
def test_an_old_path_warns_and_hands_over(old: str) -> None:
    module, caught = _fresh_import(old)
    assert caught, f"{old} did not warn"
    message = str(caught[0].message)
    assert message.startswith(f"{old} has moved to harness.")
    new = message.split(" has moved to ", 1)[1].split(";")[0].split(" and ")[0]
    home = importlib.import_module(new)
    for name in getattr(home, "__all__", ()):
        assert getattr(module, name) is getattr(home, name)


def test_a_split_module_forwards_to_each_new_home() -> None:
    from harness.check import verdict  # type: ignore[attr-defined]

    assert verdict.judge is judge and verdict.Result is harness.oracle.verdict.Result
    stdio, _ = _fresh_import("harness.check.accumulators.stdio")
    assert stdio.Stdio is harness.accumulators.stdio_process.Stdio  # type: ignore[attr-defined]


def test_a_moved_module_is_its_new_module() -> None:
    old, _ = _fresh_import("harness.check.selection")
    assert old is harness.matrix.selection


def test_the_warning_points_at_the_importing_line() -> None:
    code = "import warnings; warnings.simplefilter('always')\nimport harness.check.runner\n"
    err = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stderr
    moved = "harness.check.runner has moved to harness.matrix.runner;"
    assert err.startswith(f"<string>:2: DeprecationWarning: {moved}")


def test_serve_forwards_run_clients_with_a_warning() -> None:
    import harness.serve
    from harness.accumulators.program import run_clients

    with pytest.warns(DeprecationWarning, match="harness.accumulators.program.run_clients"):
        assert harness.serve.run_clients is run_clients  # type: ignore[attr-defined]
