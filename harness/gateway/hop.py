"""One hop through a gateway, the reusable core of translation mode: a case served as the
gateway's upstream by the replay server, a request sent to the gateway, and its streamed answer
collected read by read, as a recorded response (`harness.cassettes.model.Response`).

    with ReplayServer([]).running() as server:
        upstream = upstream_of(server, case.dialect)
        with started(command, upstream) as url:
            log = serve_upstream(server, case)
            answer = ask(url + path, body, timeout=30)

`serve_upstream` puts a case under one fixed prefix (`SLOT`), so a gateway configured once talks
to whatever case is served there now; one gateway serves one case at a time.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import replace
from typing import Any

import httpx

from harness.cassettes.model import Chunk, Response
from harness.gateway.process import Upstream
from harness.mutate.case import Case
from harness.serve import CaseLog, ReplayServer, base_urls, client_environment

__all__ = ["MAX_ANSWER", "SLOT", "ask", "serve_upstream", "upstream_of"]

SLOT = "gateway-0"  # the case id the served case takes: the upstream's fixed prefix
MAX_ANSWER = 64 * 1024 * 1024  # bytes of a gateway's answer read at most


def upstream_of(server: ReplayServer, dialect: str, slot: str = SLOT) -> Upstream:
    """Where a gateway finds its upstream of `dialect` at `server`: the base URL that dialect's
    SDK takes, and the variables SDKs read (every key a fake one)."""
    return Upstream(base_urls(server.url, slot)[dialect], client_environment(server.url, slot))


def serve_upstream(server: ReplayServer, case: Case, slot: str = SLOT) -> CaseLog:
    """Serve `case` at `slot` from the next request on; its log, cleared (what the gateway asked)."""
    log = server.add(replace(case, id=slot))
    log.clear()
    return log


def ask(
    url: str,
    body: Any,
    *,
    timeout: float,
    headers: dict[str, str] | None = None,
    client: httpx.Client | None = None,
) -> Response:
    """POST `body` as JSON to `url` and read the answer as it streams: each read a chunk with its
    time; a connection that breaks mid-body (or an answer over `MAX_ANSWER`) is a cut response,
    one that never answered a cut response of status 0. `client`: one kept across hops, else a
    client of its own."""
    chunks: list[Chunk] = []
    response: Response | None = None
    start = time.monotonic()
    limits = httpx.Timeout(timeout, connect=min(timeout, 10.0))
    try:
        with contextlib.ExitStack() as stack:
            if client is None:
                client = stack.enter_context(httpx.Client(trust_env=False))
            answer = stack.enter_context(
                client.stream("POST", url, json=body, headers=headers or {}, timeout=limits)
            )
            response = Response(answer.status_code, dict(answer.headers))
            size = 0
            for data in answer.iter_raw():
                if time.monotonic() - start > timeout:
                    return _cut(response, chunks, f"no end within {timeout:g} s")
                size += len(data)
                if size > MAX_ANSWER:
                    return _cut(response, chunks, f"the answer passed {MAX_ANSWER // (1 << 20)} MiB")
                chunks.append(Chunk(data, round((time.monotonic() - start) * 1000, 1)))
    except httpx.HTTPError as exc:
        said = f"{type(exc).__name__}: {exc}"
        return _cut(response or Response(0, {}), chunks, said)
    return replace(response, chunks=chunks)


def _cut(response: Response, chunks: list[Chunk], error: str) -> Response:
    return replace(response, chunks=chunks, complete=False, error=error)
