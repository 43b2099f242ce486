"""`run_gateway`: every case of one dialect served as a gateway's upstream, the same question
asked of the gateway in another dialect, each answer judged (`harness.gateway.judging`).

One gateway process serves one case at a time (its upstream is one fixed prefix of the replay
server), so `jobs` gateways are started, each with an upstream of its own.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import urlsplit

from harness.errors import UsageError
from harness.gateway.hop import ask, serve_upstream, upstream_of
from harness.gateway.judging import judge_translation
from harness.gateway.process import FAKE_KEY, START_TIMEOUT, started
from harness.mutate.case import Case
from harness.oracle.verdict import Report, Result, Verdict, copy_result, unjudged
from harness.serve import ReplayServer
from harness.wire.dialects.translation import asked_again, requesting

__all__ = ["GATEWAY_MODEL", "PREFIX", "run_gateway"]

PREFIX = "gateway:"  # how a report names the gateway it judged: `gateway:A->B:CMD`
GATEWAY_MODEL = "toolstream-upstream"  # the model a gateway is asked for (what it passes upstream)


def run_gateway(
    cases: Sequence[Case],
    gateway: str,
    *,
    source: str,
    target: str,
    timeout: float = 30.0,
    jobs: int = 1,
    model: str = GATEWAY_MODEL,
    scenarios: dict[str, Any] | None = None,
    upstream_port: int = 0,
    start_timeout: float = START_TIMEOUT,
) -> Report:
    """Judge `gateway` (a URL, or a command template: `harness.gateway.process`) translating
    `source` cases into `target` answers."""
    if jobs < 1:
        raise UsageError(f"jobs: must be at least 1, not {jobs}")
    if timeout <= 0:
        raise UsageError(f"timeout: must be more than 0 seconds, not {timeout:g}")
    if gateway.startswith(("http://", "https://")) and jobs > 1:
        raise UsageError("--gateway URL: one gateway serves one case at a time, so -j must be 1")
    asking = requesting(target)
    requesting(source)
    others = sorted({case.dialect for case in cases} - {source})
    if others:
        raise UsageError(
            f"--from {source}: the selection holds {others[0]} cases too (add --dialect {source})"
        )
    label = f"{PREFIX}{source}->{target}:{gateway}"
    by_name = scenarios or {}
    headers = asking.auth_headers(FAKE_KEY) | {"accept": "text/event-stream"}
    root = urlsplit(asking.api_root or "").path.rstrip("/")  # `/v1` of OpenAI's root, below the gateway's
    start = time.perf_counter()
    slots = [f"gateway-{n}" for n in range(min(jobs, max(len(cases), 1)))]

    def one(server: ReplayServer, url: str, slot: str, case: Case) -> Result:
        scenario = by_name.get(case.scenario)
        try:
            path, body = asked_again(case.request.body if case.request else None, source, target, model)
        except UsageError as exc:
            return copy_result(
                unjudged(case, label, scenario), verdict=Verdict.SKIPPED, error=str(exc), source=None
            )
        serve_upstream(server, case, slot)
        began = time.monotonic()
        answer = ask(url + root + path, body, timeout=timeout, headers=headers)
        return judge_translation(
            case, answer, source=source, target=target, asked=body, spec=label, scenario=scenario,
            seconds=time.monotonic() - began,
        )  # fmt: skip

    with contextlib.ExitStack() as stack:
        server = stack.enter_context(ReplayServer([], port=upstream_port).running())
        urls = [
            stack.enter_context(
                started(gateway, upstream_of(server, source, slot), start_timeout=start_timeout)
            )
            for slot in slots
        ]
        if len(slots) == 1:
            results = [one(server, urls[0], slots[0], case) for case in cases]
        else:
            with ThreadPoolExecutor(max_workers=len(slots)) as pool:
                batches = [cases[n :: len(slots)] for n in range(len(slots))]
                done = pool.map(
                    lambda n: [one(server, urls[n], slots[n], case) for case in batches[n]], range(len(slots))
                )
                by_id = {result.id: result for batch in done for result in batch}
                results = [by_id[case.id] for case in cases]
    return Report(label, results, seconds=time.perf_counter() - start)
