"""The `toolstream` fixture: one test's cassette, recorded or replayed through its transport.

Settings, highest first: `--toolstream-record-mode` on the command line (the record mode only),
the `@pytest.mark.toolstream(...)` marker, the `toolstream_config` fixture (override it in a
conftest, as pytest-recording's `vcr_config`), the ini keys (`toolstream_match_on`, ...), the
defaults. A cassette that cannot be read fails its own test with one line, never the session;
a vcrpy / pytest-recording cassette is recognised and the `toolstream import` command printed.
Registered by `harness.plugin.hooks` (its `pytest_plugins`); the handle and the transports
behind it (`harness.plugin.handle`) are imported when a test first asks for the fixture.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import pytest

from harness.errors import HarnessError, UsageError
from harness.plugin.options import RecordOptions, Settings, cassette_path

if TYPE_CHECKING:
    from harness.plugin.handle import CassetteHandle

__all__ = ["resolve_options"]

_STATE = pytest.StashKey["_Session"]()
_HANDLE = pytest.StashKey["CassetteHandle"]()
_LIST_KEYS: Final = ("match_on", "ignore_fields", "redact_headers", "redact_body")
UNUSED_SECTION: Final = "toolstream unused interactions"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "toolstream(cassette=None, record_mode=None, match_on=None, ignore_fields=None, "
        "redact_headers=None, redact_body=None, record_timing=None): how the `toolstream` fixture "
        "records and replays",
    )
    try:
        config.stash[_STATE] = _Session(Settings.from_config(config), _ini_options(config))
    except HarnessError as exc:
        raise pytest.UsageError(str(exc)) from None


class _Session:
    def __init__(self, settings: Settings, ini: dict[str, Any]) -> None:
        self.settings = settings
        self.ini = ini


def _ini_options(config: pytest.Config) -> dict[str, Any]:
    """The ini keys as marker arguments, each checked (a bad one is a usage error naming its key)."""
    out: dict[str, Any] = {}
    for name in _LIST_KEYS:
        value = config.getini(f"toolstream_{name}")
        if value:
            RecordOptions.from_marker({name: list(value)}, where=f"ini key toolstream_{name}")
            out[name] = list(value)
    if config.getini("toolstream_record_timing"):
        out["record_timing"] = True
    return out


def resolve_options(ini: Mapping[str, Any], configured: Any, marked: Mapping[str, Any]) -> RecordOptions:
    """marker > `toolstream_config` fixture > ini; each layer checked on its own so an error names it."""
    if not isinstance(configured, Mapping):
        raise UsageError(f"toolstream_config fixture: must return a dict, not {type(configured).__name__}")
    layers = (
        (ini, "ini"),
        (configured, "toolstream_config fixture"),
        (marked, "@pytest.mark.toolstream"),
    )
    merged: dict[str, Any] = {}
    for layer, where in layers:
        RecordOptions.from_marker(layer, where=where)
        merged.update({key: value for key, value in layer.items() if value is not None})
    return RecordOptions.from_marker(merged)


# ---------------------------------------------------------------------------------------------
# Fixtures and hooks


@pytest.fixture
def toolstream_config() -> dict[str, Any]:
    """Project-wide `toolstream` marker arguments (`match_on`, `ignore_fields`, `record_mode`, ...):
    override this fixture in a conftest; a test's marker still wins."""
    return {}


@pytest.fixture
def toolstream(request: pytest.FixtureRequest, toolstream_config: Any) -> Iterator[CassetteHandle]:
    """A transport and clients that record to, or replay from, this test's cassette."""
    from harness.plugin.handle import CassetteHandle

    state = request.config.stash[_STATE]
    marker = request.node.get_closest_marker("toolstream")
    problem: str | None = None
    try:
        options = resolve_options(state.ini, toolstream_config, marker.kwargs if marker is not None else {})
        mode, note = state.settings.record_mode_for(options.record_mode)
        path = cassette_path(Path(request.node.path), request.node.name, state.settings, options)
        handle = CassetteHandle(path, mode, options, note, default_place=options.cassette is None)
        handle.open()
    except HarnessError as exc:
        problem = f"{request.node.nodeid}: {exc}"
    if problem is not None:  # failed outside the `except`: no "during handling" chain is printed
        pytest.fail(problem, pytrace=False)
    request.node.stash[_HANDLE] = handle
    yield handle
    handle.close()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    handle = item.stash.get(_HANDLE, None)
    if handle is not None and call.when == "call":
        problems = handle.problems()
        if handle.note:
            report.sections.append(("toolstream", handle.note))
        if handle.unused_summary:
            report.sections.append((UNUSED_SECTION, handle.unused_summary))
        if problems and report.passed:
            report.outcome = "failed"
            report.longrepr = "\n".join(problems)
        elif problems:
            report.sections.append(("toolstream", "\n".join(problems)))
    return report


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """One line per test that left recorded interactions unused (from xdist workers too)."""
    lines = []
    for reports in terminalreporter.stats.values():
        for report in reports:
            for title, text in getattr(report, "sections", ()):
                if title == UNUSED_SECTION:
                    lines.append(f"{report.nodeid}: {text}")
    if lines:
        terminalreporter.section("toolstream: unused interactions")
        for line in lines:
            terminalreporter.write_line(line)
