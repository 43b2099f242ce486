"""`run_gateway`: every case of one dialect served as a gateway's upstream, the same question
asked of the gateway in another dialect, each answer judged (`harness.gateway.judging`).

One gateway process serves one case at a time (its upstream is one fixed prefix of the replay
server), so `jobs` gateways are started, each with an upstream of its own. `GatewayRun` is one of
them, started once and asked case after case: what the runner, `compare` and the pytest plugin
(`--toolstream-gateway`) share.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import urlsplit

import httpx

from harness.cassettes.outcome import CUSTOM, FUNCTION
from harness.errors import UsageError
from harness.gateway.hop import SLOT, ask, serve_upstream, upstream_of
from harness.gateway.judging import judge_translation
from harness.gateway.process import FAKE_KEY, START_TIMEOUT, started
from harness.mutate.case import Case
from harness.oracle.verdict import Report, Result, Verdict, copy_result, unjudged
from harness.serve import ReplayServer
from harness.wire.dialects.translation import asked_again, requesting

__all__ = ["GATEWAY_MODEL", "PREFIX", "GatewayRun", "label_of", "run_gateway"]

PREFIX = "gateway:"  # how a report names the gateway it judged: `gateway:A->B:CMD`
GATEWAY_MODEL = "toolstream-upstream"  # the model a gateway is asked for (what it passes upstream)


def label_of(gateway: str, source: str, target: str) -> str:
    """How a report names a gateway translating `source` into `target` (its replay line reads it)."""
    return f"{PREFIX}{source}->{target}:{gateway}"


class GatewayRun:
    """One gateway (a URL, or a command template: `harness.gateway.process`) translating `source`
    into `target`, started on `start()` with its upstream at `slot` of the replay server (one of
    its own unless `server` is given), judging case after case until `close()`. `name`: what its
    results call it (default: `gateway` itself; the card gives a name without a machine's paths)."""

    def __init__(
        self,
        gateway: str,
        *,
        source: str,
        target: str,
        timeout: float = 30.0,
        model: str = GATEWAY_MODEL,
        server: ReplayServer | None = None,
        slot: str = SLOT,
        upstream_port: int = 0,
        start_timeout: float = START_TIMEOUT,
        name: str | None = None,
    ) -> None:
        if timeout <= 0:
            raise UsageError(f"timeout: must be more than 0 seconds, not {timeout:g}")
        self.asking = requesting(target)
        requesting(source)
        self.gateway, self.source, self.target, self.timeout, self.model = (
            gateway,
            source,
            target,
            timeout,
            model,
        )
        self.label = label_of(name or gateway, source, target)
        self.server, self.slot, self.upstream_port, self.start_timeout = (
            server,
            slot,
            upstream_port,
            start_timeout,
        )
        self.headers = self.asking.auth_headers(FAKE_KEY) | {"accept": "text/event-stream"}
        self.root = urlsplit(self.asking.api_root or "").path.rstrip("/")  # OpenAI's `/v1`, below the gateway
        self.url: str | None = None
        self.client: httpx.Client | None = None
        self._stack: contextlib.ExitStack | None = None

    def start(self) -> GatewayRun:
        if self._stack is None:
            stack = contextlib.ExitStack()
            try:
                if self.server is None:
                    self.server = stack.enter_context(ReplayServer([], port=self.upstream_port).running())
                upstream = upstream_of(self.server, self.source, self.slot)
                self.url = stack.enter_context(
                    started(self.gateway, upstream, start_timeout=self.start_timeout)
                )
                # One client for every case, each case on a connection of its own: a gateway may
                # close one after its answer, and a request sent on it again would be lost.
                keep_none = httpx.Limits(max_keepalive_connections=0)
                self.client = stack.enter_context(httpx.Client(trust_env=False, limits=keep_none))
            except BaseException:
                stack.close()
                raise
            self._stack = stack
        return self

    def judge(self, case: Case, scenario: Any = None) -> Result:
        """The verdict on the gateway's answer to `case` served as its upstream."""
        if case.dialect != self.source:
            raise UsageError(f"--from {self.source}: case {case.id} is of {case.dialect}")
        self.start()
        assert self.server is not None and self.url is not None
        try:
            path, body = asked_again(
                case.request.body if case.request else None, self.source, self.target, self.model
            )
            _asked_for(case, self.target)
        except UsageError as exc:
            skipped = unjudged(case, self.label, scenario)
            return copy_result(skipped, verdict=Verdict.SKIPPED, error=str(exc), source=None)
        serve_upstream(self.server, case, self.slot)
        began = time.monotonic()
        url = self.url + self.root + path
        answer = ask(url, body, timeout=self.timeout, headers=self.headers, client=self.client)
        return judge_translation(
            case, answer, source=self.source, target=self.target, asked=body, spec=self.label,
            scenario=scenario, seconds=time.monotonic() - began,
        )  # fmt: skip

    def close(self) -> None:
        if self._stack is not None:
            self._stack.close()
        self._stack = self.url = self.client = None

    def __enter__(self) -> GatewayRun:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


def _asked_for(case: Case, target: str) -> None:
    """`UsageError` when the case's stream calls anything but a function: a custom (freeform) tool
    or a client-run Responses item (`apply_patch_call`, `shell_call`). The question is asked again
    with its function tools only (`asked_again`), and no provider streams such a call for a request
    that offers no such tool, whatever the gateway does with it."""
    other = next((c for c in case.expected.tool_calls if c.kind != FUNCTION), None)
    if other is None:
        return
    what = f"the custom (freeform) tool {other.name!r}" if other.kind == CUSTOM else f"a `{other.kind}` item"
    raise UsageError(
        f"the stream calls {what}: the question asked again in {target}'s words offers function tools only"
    )


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
    """Judge `gateway` translating `source` cases into `target` answers (`jobs` gateways at once)."""
    if jobs < 1:
        raise UsageError(f"jobs: must be at least 1, not {jobs}")
    if gateway.startswith(("http://", "https://")) and jobs > 1:
        raise UsageError("--gateway URL: one gateway serves one case at a time, so -j must be 1")
    others = sorted({case.dialect for case in cases} - {source})
    if others:
        raise UsageError(
            f"--from {source}: the selection holds {others[0]} cases too (select --dialect {source})"
        )
    by_name = scenarios or {}
    start = time.perf_counter()
    count = min(jobs, max(len(cases), 1))
    with contextlib.ExitStack() as stack:
        server = stack.enter_context(ReplayServer([], port=upstream_port).running())
        runs = [
            stack.enter_context(
                GatewayRun(gateway, source=source, target=target, timeout=timeout, model=model, server=server,
                           slot=f"gateway-{n}", start_timeout=start_timeout)
            )
            for n in range(count)
        ]  # fmt: skip

        def batch(n: int) -> list[Result]:
            return [runs[n].judge(case, by_name.get(case.scenario)) for case in cases[n::count]]

        if count == 1:
            results = batch(0)
        else:
            with ThreadPoolExecutor(max_workers=count) as pool:
                by_id = {result.id: result for done in pool.map(batch, range(count)) for result in done}
            results = [by_id[case.id] for case in cases]
    return Report(label_of(gateway, source, target), results, seconds=time.perf_counter() - start)
