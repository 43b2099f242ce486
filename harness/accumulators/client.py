"""Client level: run a real client (an SDK, a framework) end to end over a replay of the case.

    def run_my_client(transport, case):                  # (transport, case) -> Outcome
        client = openai.OpenAI(api_key="test", http_client=httpx2.Client(transport=transport))
        ...
        return Outcome(...)

    ClientLevel(run_my_client, "mine").run(case)

The transport is a `ReplayTransport` over a one-interaction cassette made of the case's recorded
request and its (mutated) response, matched on the method only: whatever URL and body the client
builds, its first request gets the case's stream, read by read, and a cut stream ends with the
recorded transport error. A second request raises `NoMatchError` (clients here must not retry).
"""

from __future__ import annotations

import importlib
import os
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from harness.accumulators import warmup
from harness.cassettes.model import Cassette, Interaction, Request, Source
from harness.cassettes.outcome import Outcome, State
from harness.errors import AccumulatorProtocolError, HarnessError, NotApplicable, UsageError
from harness.oracle.raise_site import with_site
from harness.serve.attempts import first_attempt
from harness.transports.replay import ReplayTransport
from harness.wire import dialects

if TYPE_CHECKING:
    from harness.mutate.case import Case

__all__ = [
    "REFUSED",
    "ClientLevel",
    "base_url",
    "in_message_order",
    "raised",
    "raised_error",
    "recorded_request",
    "refused",
    "replay_transport",
    "request_body",
    "require",
    "require_dialect",
]

# The smallest body each SDK accepts, for a case with no recorded request (one rebuilt from the
# stdio protocol): it goes to the dialect's default endpoint, and the replay answers whatever is sent.
_PLACEHOLDER_BODIES: dict[str, dict[str, Any]] = {
    "openai-chat": {"model": "toolstream", "messages": [{"role": "user", "content": "toolstream"}]},
    "openai-responses": {"model": "toolstream", "input": "toolstream"},
    "anthropic": {
        "model": "toolstream",
        "max_tokens": 1024,
        "messages": [{"role": "user", "content": "toolstream"}],
    },
}


class ClientLevel:
    """An accumulator that is a callable `fn(transport, case) -> Outcome` running a real client."""

    def __init__(
        self, fn: Callable[[Any, Case], Outcome], name: str, *, dialects: Sequence[str] | None = None
    ) -> None:
        self.fn = fn
        self.name = name
        self.dialects = dialects  # the dialects it reads, for the warm-up; None: any

    def prepare(self, timeout: float | None = warmup.DEFAULT_TIMEOUT) -> None:
        """Run the client once per dialect over a small stream, so its lazy imports and first
        client are not paid inside a case's time."""
        warmup.warm_up(self.run, self.dialects, timeout)

    def run(self, case: Case) -> Outcome:
        """Replay the case to `fn` and return its outcome. A raise of the library before its
        request reached the transport (building the client, binding the request's tools) is
        `NotApplicable`: this release cannot accept the case's request (`refused`)."""
        transport = replay_transport(case)
        try:
            outcome = self.fn(transport, case)
        except HarnessError:
            raise
        except Exception as exc:
            if transport.unused() and not _raised_here(exc):
                raise refused(self.name, raised_error(exc)) from exc
            raise
        if not isinstance(outcome, Outcome):
            raise AccumulatorProtocolError(
                f"{self.name}: returned {type(outcome).__name__}, not a harness.Outcome"
            )
        if outcome.state is State.ERROR and transport.unused():
            raise refused(self.name, outcome.error or "an error")
        return outcome

    def shutdown(self) -> None:
        """Nothing is held across cases."""


@dataclass(frozen=True)
class Adapter:
    """A library adapter's preamble as data, its module's `accumulator` factory: the adapter's
    `name`, the `dialects` it reads (a case of another is `NotApplicable`), the modules it `needs`
    with the pip extra of each, the SDK whose HTTP library its client is built on (`http`: SDK
    module, extra), and `environment` defaults set before the library is first imported. Calling
    it checks all that and gives the client-level accumulator over `run`."""

    name: str
    dialects: tuple[str, ...]
    run: Callable[[Any, Case], Outcome]
    needs: tuple[tuple[str, str], ...] = ()
    http: tuple[str, str] | None = None
    environment: Mapping[str, str] = field(default_factory=dict)

    def __call__(self) -> ClientLevel:
        for key, value in self.environment.items():
            os.environ.setdefault(key, value)
        for module, extra in self.needs:
            require(module, extra)
        if self.http is not None:
            sdk_http(*self.http)
        return ClientLevel(self.run_case, self.name, dialects=self.dialects)

    def run_case(self, transport: Any, case: Case) -> Outcome:
        """`run` on a case of one of the adapter's dialects."""
        require_dialect(case, self.name, self.dialects)
        # The library's own warnings (a model name it deprecates, its serializer's complaint about
        # object arguments) say nothing the verdict does not, and over `serve-accumulator` they end
        # in the server's captured stderr: in process they do not reach the user's terminal either.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return self.run(transport, case)


_HARNESS = Path(__file__).resolve().parents[1]  # the `harness` package


def in_message_order(announced: list[tuple[Any, Any]]) -> list[Any]:
    """Items an SDK announced done, each with its place in the message (block index,
    output_index), in the message's order: the final message lists them so, whatever order they
    ended in. A place that is not a number (a gateway's null index) keeps its item where it ended."""
    placed = sorted((p, n, item) for n, (p, item) in enumerate(announced) if isinstance(p, int))
    rest = [item for p, item in announced if not isinstance(p, int)]
    return [item for _, _, item in placed] + rest


def sdk_http(sdk: str, extra: str) -> Any:
    """The HTTP library the installed `openai` or `anthropic` SDK is built on, to hand it a client
    of that library over the replay transport: httpx2 for current releases, httpx for older ones
    (which refuse an httpx2 client). Read from the SDK's own base client module."""
    require(sdk, extra)
    base = require(f"{sdk}._base_client", extra)
    library = getattr(base, "httpx2", None) or getattr(base, "httpx", None)
    return library if library is not None else require("httpx2", extra)


REFUSED = "the library refused the request before reading the stream"  # what a refusal's skip says


def refused(adapter: str, error: str) -> NotApplicable:
    """A case the library cannot accept: it raised (`error`) before any byte of the stream was
    read, so its stream handling was never exercised. Skipped with the reason, never an `error`
    verdict: the request asks for what this release cannot do (a server-side tool an older
    release cannot bind), which says nothing about how it reads a stream."""
    return NotApplicable(f"{adapter}: {REFUSED}: {error}")


def _raised_here(exc: BaseException) -> bool:
    """Whether `exc` was raised in the harness's own code (the innermost frame of its traceback)."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb is None or Path(tb.tb_frame.f_code.co_filename).resolve().is_relative_to(_HARNESS)


def raised(exc: BaseException, cut: tuple[type[BaseException], ...] = ()) -> State:
    """The state of a case whose library raised `exc` while streaming: CUT for the transport's
    errors (`cut`), ERROR for anything else the library raised. Raised in the harness's own code
    (an adapter that builds a library's objects badly, the replay refusing a retry), it is ours:
    re-raised, so it is reported as the adapter's error, never as the library's behaviour."""
    if isinstance(exc, cut):
        return State.CUT
    if _raised_here(exc):
        raise exc
    return State.ERROR


def raised_error(exc: BaseException) -> str:
    """What a raise says, as the outcome's `error`: its type and message, and on a last line of
    its own where in the library it was raised (`raise_site.with_site`: root causes group by it)."""
    text = str(exc).strip()
    return with_site(f"{type(exc).__name__}: {text}" if text else type(exc).__name__, exc)


def recorded_request(case: Case) -> Request:
    """The case's recorded request, or a placeholder for its dialect when it has none."""
    if isinstance(case.request, Request):
        return case.request
    url = dialects.get(case.dialect).default_url
    body = dict(_PLACEHOLDER_BODIES.get(case.dialect, {}))
    return Request(method="POST", url=url, headers={"content-type": "application/json"}, body=body)


def replay_transport(case: Case) -> ReplayTransport:
    """A transport serving the case's response to the first request of any client; a retry case
    with a fault before the stream (`harness.serve.attempts`) gets the fault first, then the
    stream, as the replay server serves it."""
    interactions = [Interaction(recorded_request(case), case.response)]
    first = first_attempt(case)
    if first is not None and first.fault:
        interactions.insert(0, Interaction(recorded_request(case), first.response))
    cassette = Cassette(
        name=case.id,
        source=Source("synthesized", f"case {case.id}"),
        interactions=interactions,
        dialect=case.dialect,
    )
    return ReplayTransport(cassette, match_on=("method",))


def base_url(request: Request, endpoint: str) -> str:
    """Scheme, host and path prefix of a recorded URL: `https://h/v1` for `https://h/v1/chat/completions`."""
    parts = urlsplit(request.url)
    path = parts.path.rstrip("/")
    prefix = path[: -len(endpoint)] if endpoint and path.endswith(endpoint) else ""
    return f"{parts.scheme or 'https'}://{parts.netloc or 'toolstream.invalid'}{prefix}"


def request_body(case: Case) -> dict[str, Any]:
    """The recorded JSON body as keyword arguments, without `stream` (the SDK call sets it); what
    an SDK requires and the recording lacks (Azure puts the model in the URL) filled with placeholders."""
    body = recorded_request(case).body
    merged = {**_PLACEHOLDER_BODIES.get(case.dialect, {}), **(body if isinstance(body, dict) else {})}
    return {key: value for key, value in merged.items() if key != "stream"}


def require(module: str, extra: str) -> ModuleType:
    """Import a library an adapter needs, or say which extra installs it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise UsageError(f"{module} is not installed: pip install 'toolstream-harness[{extra}]'") from None


def require_dialect(case: Case, adapter: str, dialects: tuple[str, ...]) -> None:
    """Raise `NotApplicable` for a case of a dialect the adapter does not speak."""
    if case.dialect not in dialects:
        raise NotApplicable(f"{adapter} reads {' and '.join(dialects)} streams, not {case.dialect}")
