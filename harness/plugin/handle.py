"""The `toolstream` fixture's value: a handle on one test's cassette, its transport and clients.

Imported by the fixture when a test first asks for it (`harness.plugin.record`), so a pytest
session that records nothing never imports the transports.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from harness.cassettes.format import CassetteError, Interaction
from harness.errors import HarnessError, UsageError
from harness.plugin.options import RecordOptions, pytest_recording_path
from harness.record.importer import default_output, recognise_foreign
from harness.transports._library import TransportBase
from harness.transports.modes import RecordMode
from harness.transports.recording import RecordingTransport

__all__ = ["CassetteHandle"]

_SHOWN_UNUSED: Final = 5


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
        """Find and read the test's cassette; where it has none, a pytest-recording cassette at
        that library's place beside it is named with the command that converts it (replaying) or
        left alone (recording); a broken file raises `HarnessError`."""
        theirs = pytest_recording_path(self.path) if self.default_place else None
        if (
            not self.path.exists()
            and theirs is not None
            and theirs.exists()
            and recognise_foreign(theirs) is not None
        ):
            if self.mode is RecordMode.NONE:
                raise _foreign(theirs, self.path)
            self._add_note(f"left the pytest-recording cassette {_shown(theirs)} alone")
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
        return self._keep(_sdk_client("openai", "OpenAI", self.httpx2_client, kwargs))

    def async_openai_client(self, **kwargs: Any) -> Any:
        """An `openai.AsyncOpenAI` client recording through the test's transport."""
        return _sdk_client("openai", "AsyncOpenAI", self.async_httpx2_client, kwargs)

    def anthropic_client(self, **kwargs: Any) -> Any:
        """An `anthropic.Anthropic` client recording through the test's transport."""
        return self._keep(_sdk_client("anthropic", "Anthropic", self.httpx2_client, kwargs))

    def async_anthropic_client(self, **kwargs: Any) -> Any:
        """An `anthropic.AsyncAnthropic` client recording through the test's transport."""
        return _sdk_client("anthropic", "AsyncAnthropic", self.async_httpx2_client, kwargs)

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


# Per SDK: the environment variable its key comes from, and the stand-in used on replay without one.
_API_KEYS: Final = {
    "openai": ("OPENAI_API_KEY", "sk-toolstream-replay"),
    "anthropic": ("ANTHROPIC_API_KEY", "sk-ant-toolstream-replay"),
}


def _sdk_client(module: str, name: str, http_client: Callable[[], Any], kwargs: dict[str, Any]) -> Any:
    """The SDK's client class `name` on a client `http_client()` makes (once the SDK is found to
    be installed), its key from the environment or a stand-in."""
    sdk = _require(module)
    variable, stand_in = _API_KEYS[module]
    kwargs.setdefault("api_key", os.environ.get(variable) or stand_in)
    return getattr(sdk, name)(http_client=http_client(), **kwargs)


def _require(module: str) -> Any:
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise UsageError(f"{module} is not installed: pip install 'toolstream-harness[{module}]'") from None
