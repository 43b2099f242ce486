"""The httpx-like library a request belongs to (`httpx` or its fork `httpx2`), found at run time.

Neither library is imported until a request of it arrives, so the transports work wherever only
one of them is installed. Each lookup is cached per request class.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any, Self

from harness.errors import UsageError

_NEEDED = ("Response", "SyncByteStream", "AsyncByteStream", "ReadError", "RequestError")


if TYPE_CHECKING:
    import httpx
    import httpx2

    class TransportBase(
        httpx.BaseTransport, httpx.AsyncBaseTransport, httpx2.BaseTransport, httpx2.AsyncBaseTransport
    ):
        """For type checkers only: our transports fit both libraries' clients, sync and async."""

        def handle_request(self, request: Any) -> Any: ...

        async def handle_async_request(self, request: Any) -> Any: ...

else:

    class TransportBase:
        """At run time neither library is imported: the context-manager half of their base classes."""

        def __enter__(self) -> Self:
            return self

        def __exit__(self, *exc_info: object) -> None:
            self.close()

        async def __aenter__(self) -> Self:
            return self

        async def __aexit__(self, *exc_info: object) -> None:
            await self.aclose()


class _SyncChunks:
    """Yields `chunks`; `close` closes them and then runs `on_close` (mixed into the library's stream)."""

    def __init__(self, chunks: Iterator[bytes], on_close: Callable[[], None] | None = None) -> None:
        self._chunks = chunks
        self._on_close = on_close

    def __iter__(self) -> Iterator[bytes]:
        return self._chunks

    def close(self) -> None:
        close = getattr(self._chunks, "close", None)
        if close is not None:
            close()
        if self._on_close is not None:
            on_close, self._on_close = self._on_close, None
            on_close()


class _AsyncChunks:
    """The async twin of `_SyncChunks`."""

    def __init__(
        self, chunks: AsyncIterator[bytes], on_close: Callable[[], Awaitable[None]] | None = None
    ) -> None:
        self._chunks = chunks
        self._on_close = on_close

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self._chunks

    async def aclose(self) -> None:
        aclose = getattr(self._chunks, "aclose", None)
        if aclose is not None:
            await aclose()
        if self._on_close is not None:
            on_close, self._on_close = self._on_close, None
            await on_close()


@dataclass(frozen=True, slots=True)
class Library:
    """One httpx-like module and the pieces of it the transports build responses from."""

    module: ModuleType
    sync_stream: type[_SyncChunks]
    async_stream: type[_AsyncChunks]

    @property
    def name(self) -> str:
        return self.module.__name__

    def response(
        self, status: int, headers: Mapping[str, str] | Any, stream: Any, extensions: Any = None
    ) -> Any:
        """A `Response` of this library over `stream`."""
        return self.module.Response(status_code=status, headers=headers, stream=stream, extensions=extensions)

    def error(self, error_type: str | None, message: str, request: Any) -> Exception:
        """This library's request exception named `error_type` (else `ReadError`), with `message`."""
        cls = getattr(self.module, error_type, None) if error_type else None
        # RequestError subclasses all take (message, request=...); anything else is not a stream error.
        if not (isinstance(cls, type) and issubclass(cls, self.module.RequestError)):
            cls = self.module.ReadError
        error: Exception = cls(message, request=request)
        return error

    def transport(self, *, asynchronous: bool) -> Any:
        """A fresh real network transport of this library."""
        return self.module.AsyncHTTPTransport() if asynchronous else self.module.HTTPTransport()


_BY_CLASS: dict[type, Library] = {}
_BY_MODULE: dict[str, Library] = {}


def library_of(request: object) -> Library:
    """The library whose `Request` this is; a request of anything else raises `UsageError`."""
    cls = type(request)
    found = _BY_CLASS.get(cls)
    if found is None:
        found = library_named(cls.__module__.partition(".")[0])
        _BY_CLASS[cls] = found
    return found


def library_named(name: str) -> Library:
    """The library imported as `name` (`httpx`, `httpx2`): the module imported now, so a library
    imported again (dropped from `sys.modules`, as pytester's in-process runs do) is not served
    transports of its old classes."""
    found = _BY_MODULE.get(name)
    if found is not None and sys.modules.get(name) is found.module:
        return found
    try:
        module = importlib.import_module(name)
    except ImportError:
        module = None
    if module is None or not all(hasattr(module, attr) for attr in _NEEDED):
        raise UsageError(
            f"{name!r} is not an httpx-like library; the transports serve httpx and httpx2 clients"
        )
    found = Library(
        module=module,
        sync_stream=type("SyncChunks", (_SyncChunks, module.SyncByteStream), {}),
        async_stream=type("AsyncChunks", (_AsyncChunks, module.AsyncByteStream), {}),
    )
    _BY_MODULE[name] = found
    return found
