"""Mount a cassette (optionally mutated by a scenario) as respx routes, for tests already on respx.

    def test_weather(respx_mock):
        mounted = mount(respx_mock, "cassettes/openai-chat/parallel-2.yaml", scenario="rechunk-random")
        ... run the code under test with an httpx client ...
        assert my_outcome == mounted.expected[0]

Each route answers with the recorded chunks one read at a time (a cut recording ends in
`httpx.ReadError`), sync or async. respx patches httpx only: clients of the `httpx2` fork (the
current openai and anthropic SDKs) are not intercepted; give those `ReplayTransport` instead.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

from harness.cassettes.format import Cassette, Request, Response, load
from harness.cassettes.outcome import Outcome
from harness.errors import NotApplicable, UsageError
from harness.mutate import Stream
from harness.mutate.scenario import Scenario, find_scenario, run_pipeline
from harness.transports.replay import served_headers
from harness.wire import dialects

__all__ = ["Mounted", "mount"]


@dataclass
class Mounted:
    """What `mount` added: the respx routes, and the outcome a correct client reaches per interaction."""

    routes: list[Any] = field(default_factory=list)
    expected: list[Outcome] = field(default_factory=list)


class _Chunks(httpx.SyncByteStream, httpx.AsyncByteStream):
    """A recorded body, one read per chunk, for sync and async clients."""

    def __init__(self, response: Response) -> None:
        self._response = response

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self._response.chunks:
            yield chunk.data
        self._end()

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self._response.chunks:
            yield chunk.data
        self._end()

    def _end(self) -> None:
        if not self._response.complete:
            raise httpx.ReadError(self._response.error or "the recorded stream was cut here")


def _answer(responses: Sequence[Response]) -> Any:
    served = 0

    def side_effect(request: httpx.Request) -> httpx.Response:
        nonlocal served
        response = responses[min(served, len(responses) - 1)]  # then the last one again
        served += 1
        return httpx.Response(
            response.status, headers=served_headers(response.headers), stream=_Chunks(response)
        )

    return side_effect


def _mutated(
    request: Request, response: Response, cassette: Cassette, scenario: Scenario | None, seed: int
) -> tuple[Response, Outcome | None]:
    name = cassette.dialect or dialects.detect(request)
    if name is None:
        if scenario is not None:
            raise UsageError(f"cassette {cassette.name!r}: cannot tell its dialect, so no scenario applies")
        return response, None
    dialect = dialects.get(name)
    expected = dialects.reference_outcome(response, dialect)
    if scenario is None:
        return response, expected
    if not scenario.applies_to(dialect.name):
        raise UsageError(f"scenario {scenario.name!r} does not apply to dialect {dialect.name}")
    try:
        (_, mutated), *_ = run_pipeline(scenario.steps, Stream.of(response, dialect, expected, request), seed)
    except NotApplicable as exc:
        raise UsageError(
            f"scenario {scenario.name!r} does not apply to cassette {cassette.name!r}: {exc}"
        ) from None
    return mutated.response(response), mutated.expected


def mount(
    respx_mock: Any,
    cassette_or_path: Cassette | str | os.PathLike[str],
    scenario: Scenario | str | None = None,
    seed: int = 0,
) -> Mounted:
    """Add one respx route per recorded method and URL path (query ignored), answering with the
    recorded responses in order (the last one repeats), mutated by `scenario` with `seed`."""
    cassette = (
        cassette_or_path
        if isinstance(cassette_or_path, Cassette)
        else load(Path(os.fspath(cassette_or_path)))
    )
    chosen = find_scenario(scenario) if isinstance(scenario, str) else scenario
    by_route: dict[tuple[str, str, str, str], list[Response]] = {}
    mounted = Mounted()
    for interaction in cassette.interactions:
        response, expected = _mutated(interaction.request, interaction.response, cassette, chosen, seed)
        if expected is not None:
            mounted.expected.append(expected)
        url = urlsplit(interaction.request.url)
        key = (interaction.request.method.upper(), url.scheme, url.netloc, url.path or "/")
        by_route.setdefault(key, []).append(response)
    for (method, scheme, netloc, path), responses in by_route.items():
        parts = urlsplit(f"//{netloc}")
        pattern: dict[str, Any] = {"method": method, "scheme": scheme, "host": parts.hostname, "path": path}
        if parts.port is not None:
            pattern["port"] = parts.port
        route = respx_mock.route(**pattern)
        route.side_effect = _answer(responses)
        mounted.routes.append(route)
    return mounted
