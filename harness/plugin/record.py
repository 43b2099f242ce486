"""The `toolstream` fixture: one test's cassette, recorded or replayed through its transport.

Settings, highest first: `--toolstream-record-mode` on the command line (the record mode only),
the `@pytest.mark.toolstream(...)` marker, the `toolstream_config` fixture (override it in a
conftest, as pytest-recording's `vcr_config`), the ini keys (`toolstream_match_on`, ...), the
defaults. A cassette that cannot be read fails its own test with one line, never the session;
a vcrpy / pytest-recording cassette is recognised and the `toolstream import` command printed.
Registered by `harness.plugin.hooks` (its `pytest_plugins`).
"""

from __future__ import annotations

import contextlib
import os
import warnings
from collections.abc import Generator, Iterator, Mapping
from pathlib import Path
from typing import Any, Final

import pytest

from harness.cassettes.format import CassetteError, Interaction
from harness.errors import HarnessError, UsageError
from harness.plugin.options import RecordOptions, Settings, cassette_path, legacy_cassette_path
from harness.record.importer import default_output, recognise_foreign
from harness.transports import RecordingTransport
from harness.transports._library import TransportBase
from harness.transports.matching import MATCH_NAMES
from harness.transports.modes import RecordMode

__all__ = ["CassetteHandle", "ToolstreamDeprecationWarning", "resolve_options"]

_STATE = pytest.StashKey["_Session"]()
_HANDLE = pytest.StashKey["CassetteHandle"]()
_LIST_KEYS: Final = ("match_on", "ignore_fields", "redact_headers", "redact_body")
_SHOWN_UNUSED: Final = 5
UNUSED_SECTION: Final = "toolstream unused interactions"


class ToolstreamDeprecationWarning(DeprecationWarning):
    """Something toolstream still reads but will stop reading (a cassette at an old place)."""


def pytest_addoption(parser: pytest.Parser) -> None:
    names = ", ".join(MATCH_NAMES)
    keys: list[tuple[str, str, str, Any]] = [
        ("match_on", f"what the toolstream fixture matches on: {names}, body.<field>", "args", []),
        ("ignore_fields", "request fields matching ignores: url.port, body.user, ...", "args", []),
        ("redact_headers", "headers redacted besides the defaults", "args", []),
        ("redact_body", "JSON body paths redacted (a.b, a[*].b)", "args", []),
        ("record_timing", "keep each read's offset_ms when recording", "bool", False),
    ]
    for name, help_text, kind, default in keys:
        parser.addini(f"toolstream_{name}", help_text, type=kind, default=default)  # type: ignore[arg-type]


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


# ---------------------------------------------------------------------------------------------
# The handle


class _Watched(TransportBase):
    """The test's transport: forwards to the recording transport and notes every unmatched request."""

    def __init__(self, handle: CassetteHandle) -> None:
        self._handle = handle

    def handle_request(self, request: Any) -> Any:
        """Replay or record one request of a sync client."""
        try:
            return self._handle.inner().handle_request(request)
        except HarnessError as exc:
            self._handle.unmatched.append(str(exc))
            raise

    async def handle_async_request(self, request: Any) -> Any:
        """Replay or record one request of an async client."""
        try:
            return await self._handle.inner().handle_async_request(request)
        except HarnessError as exc:
            self._handle.unmatched.append(str(exc))
            raise

    def close(self) -> None:
        """Closed by the handle at teardown, not by each client."""

    async def aclose(self) -> None:
        """Closed by the handle at teardown, not by each client."""


class CassetteHandle:
    """The `toolstream` fixture's handle on the test's cassette at `path`: its `transport`
    (httpx and httpx2, sync and async), clients built on it, and what went wrong.

    `open()` reads the cassette when there is one (a broken or foreign file raises one
    `HarnessError`). In record mode `none` without a cassette file, a request fails with a message
    saying how to record one. After the test, `problems()` lists unmatched requests and unused
    interactions, each unused one by number with how the closest request sent differs.
    """

    def __init__(
        self,
        path: Path,
        mode: RecordMode,
        options: RecordOptions,
        note: str | None = None,
        *,
        default_place: bool = False,
    ) -> None:
        self.path = path
        self.mode = mode
        self.options = options
        self.note = note
        self.default_place = default_place  # the path is the default one, not the marker's `cassette=`
        self.unmatched: list[str] = []
        self.unused_summary: str | None = None
        self.transport = _Watched(self)
        self._inner: RecordingTransport | None = None
        self._clients: list[Any] = []

    def open(self) -> None:
        """Find and read the test's cassette: at its path, else at the pre-suffix default place
        (read with a deprecation warning); a foreign or broken file raises `HarnessError`."""
        legacy = legacy_cassette_path(self.path) if self.default_place else None
        if not self.path.exists() and legacy is not None and legacy.exists():
            if recognise_foreign(legacy) is None:
                warnings.warn(
                    ToolstreamDeprecationWarning(
                        f"{_shown(legacy)}: a toolstream cassette at the old default place; "
                        f"read for now, rename it: git mv {_shown(legacy)} {_shown(self.path)}"
                    ),
                    stacklevel=1,
                )
                self.path = legacy
            elif self.mode is RecordMode.NONE:
                raise _foreign(legacy, self.path)
            else:
                self._add_note(f"left the pytest-recording cassette {_shown(legacy)} alone")
        if self.path.exists():
            self.inner()

    def inner(self) -> RecordingTransport:
        """The recording transport, made at the first request (the cassette may not exist before)."""
        if self._inner is None:
            if self.mode is RecordMode.NONE and not self.path.exists():
                raise UsageError(
                    f"no cassette at {self.path}; record it with --toolstream-record-mode once"
                    + (f" ({self.note})" if self.note else "")
                )
            try:
                self._inner = RecordingTransport(
                    path=self.path,
                    mode=self.mode,
                    match_on=self.options.match_on,
                    ignore_fields=self.options.ignore_fields,
                    redact=self.options.redaction(),
                    timing=self.options.record_timing,
                )
            except CassetteError as exc:
                if recognise_foreign(self.path) is not None:
                    raise _foreign(self.path, None) from None
                raise UsageError(f"cannot read the cassette: {exc}") from None
        return self._inner

    def httpx_client(self, **kwargs: Any) -> Any:
        """An `httpx.Client` on the test's transport (closed after the test)."""
        import httpx

        return self._keep(httpx.Client(transport=self.transport, **kwargs))

    def async_httpx_client(self, **kwargs: Any) -> Any:
        """An `httpx.AsyncClient` on the test's transport (close it with `async with`)."""
        import httpx

        return httpx.AsyncClient(transport=self.transport, **kwargs)

    def httpx2_client(self, **kwargs: Any) -> Any:
        """An `httpx2.Client` on the test's transport (closed after the test)."""
        import httpx2

        return self._keep(httpx2.Client(transport=self.transport, **kwargs))

    def async_httpx2_client(self, **kwargs: Any) -> Any:
        """An `httpx2.AsyncClient` on the test's transport (close it with `async with`)."""
        import httpx2

        return httpx2.AsyncClient(transport=self.transport, **kwargs)

    def openai_client(self, **kwargs: Any) -> Any:
        """An `openai.OpenAI` client recording through the test's transport."""
        openai = _require("openai")
        kwargs.setdefault("api_key", os.environ.get("OPENAI_API_KEY") or "sk-toolstream-replay")
        return self._keep(openai.OpenAI(http_client=self.httpx2_client(), **kwargs))

    def async_openai_client(self, **kwargs: Any) -> Any:
        """An `openai.AsyncOpenAI` client recording through the test's transport."""
        openai = _require("openai")
        kwargs.setdefault("api_key", os.environ.get("OPENAI_API_KEY") or "sk-toolstream-replay")
        return openai.AsyncOpenAI(http_client=self.async_httpx2_client(), **kwargs)

    def anthropic_client(self, **kwargs: Any) -> Any:
        """An `anthropic.Anthropic` client recording through the test's transport."""
        anthropic = _require("anthropic")
        kwargs.setdefault("api_key", os.environ.get("ANTHROPIC_API_KEY") or "sk-ant-toolstream-replay")
        return self._keep(anthropic.Anthropic(http_client=self.httpx2_client(), **kwargs))

    def async_anthropic_client(self, **kwargs: Any) -> Any:
        """An `anthropic.AsyncAnthropic` client recording through the test's transport."""
        anthropic = _require("anthropic")
        kwargs.setdefault("api_key", os.environ.get("ANTHROPIC_API_KEY") or "sk-ant-toolstream-replay")
        return anthropic.AsyncAnthropic(http_client=self.async_httpx2_client(), **kwargs)

    def problems(self) -> list[str]:
        """What makes the test fail after it ran: unmatched requests, then unused interactions."""
        out = [f"toolstream: unmatched request: {text}" for text in self.unmatched]
        if self._inner is None and self.path.exists():
            try:
                self.inner()  # a test that asked nothing of its cassette left every interaction unused
            except HarnessError as exc:
                return [*out, f"toolstream: {exc}"]
        if self._inner is None or not self._inner.policy.replay or self.unmatched:
            return out
        playlist = self._inner.playlist
        unused = playlist.unused_numbered()
        if not unused:
            return out
        listed = "; ".join(
            _unused_line(n, item, playlist.why_unused(item)) for n, item in unused[:_SHOWN_UNUSED]
        )
        more = f"; and {len(unused) - _SHOWN_UNUSED} more" if len(unused) > _SHOWN_UNUSED else ""
        hint = "re-record with --toolstream-record-mode rewrite to drop them"
        if self.mode is RecordMode.NEW_EPISODES:
            head = (
                f"toolstream: new_episodes only appends: {len(unused)} stale interaction(s) of "
                f"{self.path} kept, never requested"
            )
            hint = "new_episodes never removes one: " + hint
        else:
            head = f"toolstream: {len(unused)} recorded interaction(s) of {self.path} never requested"
        self.unused_summary = f"{len(unused)} unused in {_shown(self.path)} ({self.mode}); {hint}"
        out.append(f"{head}: {listed}{more}; {hint}")
        return out

    def close(self) -> None:
        """Close the clients made for the test and the transport."""
        for client in self._clients:
            with contextlib.suppress(Exception):
                client.close()
        if self._inner is not None:
            self._inner.close()

    def _keep(self, client: Any) -> Any:
        self._clients.append(client)
        return client

    def _add_note(self, text: str) -> None:
        self.note = f"{self.note}; {text}" if self.note else text


def _unused_line(n: int, item: Interaction, why: str | None) -> str:
    request = item.request
    text = f"#{n} {request.method} {request.url}"
    return f"{text} (closest request sent differs in {why})" if why else text


def _foreign(path: Path, target: Path | None) -> UsageError:
    """The one-line error for a vcrpy / pytest-recording cassette where ours was expected."""
    out = target if target is not None else default_output(path)
    then = "" if target is not None else f", then point cassette= at {_shown(out)}"
    return UsageError(
        f"{_shown(path)} is a vcrpy / pytest-recording cassette, not a toolstream one; "
        f"convert it: toolstream import {_shown(path)} -o {_shown(out)}{then}"
    )


def _shown(path: Path) -> str:
    """`path` relative to the working directory when under it (the printed command runs there)."""
    with contextlib.suppress(ValueError):
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    return str(path)


def _require(module: str) -> Any:
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise UsageError(f"{module} is not installed: pip install 'toolstream-harness[{module}]'") from None
