"""respx: a cassette (optionally mutated) mounted as routes; httpx only, not the httpx2 fork."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import httpx
import pytest

from harness.cassettes.format import Chunk, load
from harness.cassettes.outcome import Outcome
from harness.errors import UsageError
from harness.plugin.respx_mount import mount
from harness.record.fake_provider import FakeProvider
from harness.wire import dialects

respx = pytest.importorskip("respx")

PARALLEL = Path(__file__).resolve().parents[2] / "cassettes" / "openai-chat" / "parallel-2.yaml"


@pytest.fixture
def router() -> Iterator[respx.MockRouter]:
    with respx.mock(assert_all_called=False) as mock:
        yield mock


def outcome_of(body: bytes) -> Outcome:
    """The reference outcome of a body received in one piece."""
    response = load(PARALLEL).interactions[0].response
    return dialects.reference_outcome(replace(response, chunks=[Chunk(body)]), "openai-chat")


def test_mounted_cassette_streams_its_reads_to_httpx(router: respx.MockRouter) -> None:
    cassette = load(PARALLEL)
    mounted = mount(router, PARALLEL)
    request = cassette.interactions[0].request
    reads = []
    with httpx.Client() as client, client.stream(request.method, request.url, json=request.body) as response:
        reads = list(response.iter_raw())
    assert len(reads) == len(cassette.interactions[0].response.chunks)  # one read per recorded read
    assert outcome_of(b"".join(reads)) == mounted.expected[0]
    assert mounted.routes[0].called


def test_scenario_mutates_the_stream_and_its_expectation(router: respx.MockRouter) -> None:
    mounted = mount(router, PARALLEL, scenario="parallel-calls-share-index-0", seed=0)
    request = load(PARALLEL).interactions[0].request

    async def go() -> bytes:
        async with httpx.AsyncClient() as client:
            response = await client.post(request.url, json=request.body)
            return response.content

    body = asyncio.run(go())
    assert b'"index":0' in body.replace(b" ", b"") and b'"index":1' not in body.replace(b" ", b"")
    assert outcome_of(body) == mounted.expected[0]


def test_httpx2_is_not_intercepted_by_respx(router: respx.MockRouter) -> None:
    httpx2 = pytest.importorskip("httpx2")
    with FakeProvider() as fake:  # a respx route for the fake's URL; httpx2 goes past it to the server
        router.get(fake.url + "/probe").respond(200, text="mocked")
        assert httpx.get(fake.url + "/probe").text == "mocked"
        assert httpx2.get(fake.url + "/probe").status_code == 404


def test_a_scenario_that_does_not_apply_is_a_usage_error(router: respx.MockRouter) -> None:
    single = PARALLEL.with_name("single-call.yaml")
    with pytest.raises(UsageError, match="does not apply to cassette 'single-call': interleaving needs two"):
        mount(router, single, scenario="C1-interleaved-fragments")
