"""Where a library raised (issue 43, point 4): the innermost frame of an installed package that is
not the harness, as `file:line` below its site-packages folder, carried on the last line of an
adapter's error (in process and over stdio alike) and grouped on as one root cause."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness import Selection, run_matrix
from harness.accumulators.client import raised_error
from harness.matrix.selection import build_case
from harness.oracle.raise_site import raise_site, site_of, with_site
from harness.oracle.verdict import root_cause, signature

_LIBRARY = """\
def deltas(blocks, index):
    return blocks[index]  # a delta for a block never started


def stream(blocks, index):
    return deltas(blocks, index)
"""


@pytest.fixture
def installed(tmp_path: Path) -> Iterator[object]:
    """`fakelib.streaming`, installed under a site-packages folder of its own."""
    site = tmp_path / "venv" / "lib" / "python3.12" / "site-packages"
    (site / "fakelib").mkdir(parents=True)
    (site / "fakelib" / "__init__.py").write_text("")
    (site / "fakelib" / "streaming.py").write_text(_LIBRARY)
    sys.path.insert(0, str(site))
    try:
        yield importlib.import_module("fakelib.streaming")
    finally:
        sys.path.remove(str(site))
        for name in ("fakelib.streaming", "fakelib"):
            sys.modules.pop(name, None)


def _raise(module: object) -> BaseException:
    try:
        module.stream([], 3)  # type: ignore[attr-defined]
    except IndexError as exc:
        return exc
    raise AssertionError("no raise")


def test_the_site_is_the_innermost_installed_frame_relative_to_site_packages(
    installed: object, tmp_path: Path
) -> None:
    exc = _raise(installed)
    assert raise_site(exc) == "fakelib/streaming.py:2"
    error = raised_error(exc)
    assert error == "IndexError: list index out of range\nraised at fakelib/streaming.py:2"
    assert str(tmp_path) not in error  # no path of this machine
    assert site_of(error) == "fakelib/streaming.py:2"


def test_a_raise_outside_any_installed_package_has_no_site() -> None:
    try:
        [].pop()  # the interpreter's own raise, in this test module (not installed)
    except IndexError as exc:
        assert raise_site(exc) is None
        assert with_site("IndexError: pop from empty list", exc) == "IndexError: pop from empty list"
    assert site_of("ValueError: x\nnot a site") is None
    assert site_of(None) is None


def _failing(diff: list[str], error: str | None, state: str = "error") -> dict[str, object]:
    actual = {"tool_calls": [], "text": "", "finish_reason": None, "state": state, "error": error}
    return {"verdict": "fail", "diff": diff, "error": None, "actual": actual}


def test_failures_raised_at_one_site_are_one_root_cause_whatever_their_first_difference() -> None:
    site = "\nraised at anthropic/lib/streaming/_messages.py:496"
    shifted = _failing(
        ["call 0: name 'a' expected, got 'b'", "state: complete expected, got error (IndexError: x)"],
        "IndexError: x" + site,
    )
    state = "state: complete expected, got error (IndexError: x)"
    missing = _failing(
        ["tool_calls: 2 expected, got 1", "call 1: expected, missing", state], "IndexError: x" + site
    )
    assert signature(shifted) != signature(missing)
    assert root_cause(shifted) == root_cause(missing) == "raised at anthropic/lib/streaming/_messages.py:496"
    # An error verdict carries its site in the result's error.
    error = {"verdict": "error", "diff": [], "error": "KeyError: 'parameters'\nraised at lib/tools.py:9"}
    assert root_cause(error) == "raised at lib/tools.py:9"


def test_an_expected_error_state_is_not_grouped_by_its_raise() -> None:
    # The stream ended in an error event the library raised on, as it should: the bug is the call.
    case = _failing(
        ["tool_calls: 1 expected, got 0", "call 0: expected, missing"], "APIError: x\nraised at a.py:1"
    )
    assert root_cause(case) == "missing call"


@pytest.mark.slow
def test_the_sdk_adapter_carries_the_site_in_process_and_over_stdio() -> None:
    anthropic = pytest.importorskip("anthropic")
    case_id = "anthropic/interleaved-thinking::C4-reasoning-shifts-index::s0"
    served = f"cmd:{sys.executable} -m harness serve-accumulator anthropic-sdk"
    in_process, over_stdio = (
        r.results[0] for r in run_matrix(["anthropic-sdk", served], Selection(cases=(case_id,)))
    )
    assert in_process.actual is not None and over_stdio.actual is not None
    site = site_of(in_process.actual.error)
    assert site is not None and site.startswith("anthropic/lib/streaming/_messages.py:"), (
        in_process.actual.error
    )
    assert Path(anthropic.__file__).parent.joinpath(site.split(":")[0].removeprefix("anthropic/")).exists()
    assert over_stdio.actual.error == in_process.actual.error
    assert root_cause(in_process) == root_cause(over_stdio) == f"raised at {site}"
    assert build_case(case_id).id == case_id
